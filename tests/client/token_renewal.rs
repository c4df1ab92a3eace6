//! Short-lived tokens against a real server: `TokenCredentials` renewing 2 s tokens,
//! each an ACL user a fake identity service creates, under eight writing threads; and
//! an identity service that goes down while the token in use is still valid.
//!
//! `TOKEN_SOAK_SECONDS` sets how long the first test runs: 8 s by default, to keep
//! the suite short; issue 22 asks for 30 (`TOKEN_SOAK_SECONDS=30 cargo test --test
//! token_renewal`).

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use resilient_redis::config::{
    Credentials, CredentialsProvider, Protocol, Token, TokenCredentials,
};
use resilient_redis::prelude::*;
use resilient_redis::ClientEvent;
use support::credentials::{assert_served_throughout, client_with, Writers};
use support::RedisServer;

fn soak_seconds() -> u64 {
    std::env::var("TOKEN_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// A fake identity service: token `n` is the ACL user `<prefix>-<n>`, created on the
/// server when issued, so the provider's generation `n` is user `n` (a failed fetch
/// issues nothing). While `down` is set it cannot be reached.
struct Identity {
    admin: Database,
    prefix: &'static str,
    life: Duration,
    issued: Arc<AtomicU64>,
    /// When each token was issued, by number.
    issued_at: Arc<Mutex<Vec<Instant>>>,
    down: Arc<AtomicBool>,
}

impl Identity {
    fn new(server: &RedisServer, prefix: &'static str, life: Duration) -> Identity {
        Identity {
            admin: Client::connect(server.url().as_str()).unwrap().database(),
            prefix,
            life,
            issued: Arc::default(),
            issued_at: Arc::default(),
            down: Arc::default(),
        }
    }

    /// The token source: a closure, as an application would write one.
    fn source(&self) -> impl FnMut() -> resilient_redis::Result<Token> + Send + 'static {
        let (admin, prefix, life) = (self.admin.clone(), self.prefix, self.life);
        let (issued, down) = (self.issued.clone(), self.down.clone());
        let issued_at = self.issued_at.clone();
        move || {
            if down.load(Ordering::SeqCst) {
                return Err(Error::new(
                    ErrorKind::Connect,
                    "identity service unreachable",
                ));
            }
            let n = issued.load(Ordering::SeqCst);
            let (user, secret) = (format!("{prefix}-{n}"), format!("{prefix}-secret-{n}"));
            let password = format!(">{secret}");
            let rules: [&str; 7] = ["SETUSER", &user, "on", &password, "~*", "&*", "+@all"];
            admin.cmd("ACL").arg(rules).exec()?;
            issued_at.lock().unwrap().push(Instant::now());
            issued.store(n + 1, Ordering::SeqCst);
            Ok(Token::new(Credentials::user(user, secret), life))
        }
    }

    /// Revokes token `n` (the server closes connections still using it).
    fn revoke(&self, n: u64) {
        let user = format!("{}-{n}", self.prefix);
        let args: [&str; 2] = ["DELUSER", &user];
        self.admin.cmd("ACL").arg(args).exec().unwrap();
    }
}

/// The generation of the next `Reauthenticated` above `after`.
fn next_round(events: &Receiver<ClientEvent>, after: u64, within: Duration) -> Option<u64> {
    let deadline = Instant::now() + within;
    while let Ok(event) = events.recv_deadline(deadline) {
        if let ClientEvent::Reauthenticated { generation, .. } = event {
            if generation > after {
                return Some(generation);
            }
        }
    }
    None
}

/// Issue 22: 2 s tokens renewed by the provider itself (at 1.5 s), every connection
/// re-authenticated in place, each old token revoked as soon as the client reports
/// that none of its connections uses it; eight threads writing all along.
#[test]
fn two_second_tokens_renewed_by_the_provider_fail_no_call_and_close_no_connection() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let seconds = soak_seconds();
    let identity = Identity::new(&server, "tok", Duration::from_secs(2));
    let tokens = TokenCredentials::builder(identity.source())
        .start()
        .unwrap();
    let client = client_with(&server.addr(), Arc::new(tokens.clone()), Protocol::Resp3);
    let events = client.events();
    let rounds = client.events();
    let sub = client.subscriber();
    let news = sub.subscribe("news").unwrap();
    let db = client.database();
    let writers = Writers::start(&db, "tok");
    let started = Instant::now();
    let mut revoked = 0;
    // From a token's issue to the report that every connection uses it (or a newer
    // one): the old token must not be needed beyond its end, 0.5 s after the renewal.
    let mut slowest_round = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(seconds) {
        // A renewal every 1.5 s, each followed by a round.
        let generation = next_round(&rounds, revoked, Duration::from_secs(5));
        let Some(generation) = generation else {
            panic!("no round after generation {revoked} within 5 s: {tokens:?}");
        };
        let issued = identity.issued_at.lock().unwrap()[generation as usize];
        slowest_round = slowest_round.max(issued.elapsed());
        for n in revoked..generation {
            identity.revoke(n);
        }
        revoked = generation;
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{:.1} s: {revoked} tokens renewed and revoked, slowest round {} ms after its \
         token was issued",
        elapsed.as_secs_f64(),
        slowest_round.as_millis()
    );
    // The subscription connection (RESP3) re-authenticated each time and still delivers.
    let calls = assert_served_throughout(Some(writers), &events, true, Some((&sub, &news)));
    eprintln!("{calls} calls, none failed");
    assert!(calls > 1_000, "{calls} calls");
    // One renewal every 1.5 s (one short, for a busy machine).
    let expected = seconds * 2 / 3;
    assert!(revoked + 1 >= expected, "{revoked} renewals in {seconds} s");
}

/// The identity service goes down when a renewal is due, while the token in use has
/// half of its life left: the provider retries with back-off, every client raises
/// `CredentialsUnavailable`, no call fails; when the service is back the next attempt
/// renews, and the round follows.
#[test]
fn an_identity_service_down_while_the_token_serves_fails_no_call_and_recovers() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    // 8 s: the half left when the renewal falls due (4 s) must outlast two failed
    // attempts and their events on a loaded machine (with 4 s tokens it once did not).
    let lifetime = Duration::from_secs(8);
    let identity = Identity::new(&server, "down", lifetime);
    let tokens = TokenCredentials::builder(identity.source())
        .renew_after(0.5)
        .retry_delays(Duration::from_millis(100), Duration::from_secs(1))
        .start()
        .unwrap();
    let client = client_with(&server.addr(), Arc::new(tokens.clone()), Protocol::Resp3);
    let events = client.events();
    let watch = client.events();
    let rounds = client.events();
    let db = client.database();
    let writers = Writers::start(&db, "down");
    identity.down.store(true, Ordering::SeqCst);
    // The renewal is due after 4 s; it fails, and is tried again.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut unavailable = Vec::new();
    while unavailable.len() < 2 {
        match watch.recv_deadline(deadline) {
            Ok(ClientEvent::CredentialsUnavailable { error, attempt }) => {
                unavailable.push((error, attempt))
            }
            Ok(_) => {}
            Err(e) => panic!("{e}: {unavailable:?} {tokens:?}"),
        }
    }
    let (error, attempt) = &unavailable[1];
    assert!(*attempt >= 2, "{unavailable:?}");
    assert_eq!(error.kind(), ErrorKind::Connect, "the source's own kind");
    assert!(
        error.detail().contains("identity service unreachable"),
        "{error}"
    );
    assert!(error.detail().contains("valid for"), "{error}");
    assert!(!error.to_string().contains("secret"), "{error}");
    assert!(tokens.valid_for().is_some(), "still valid: {tokens:?}");
    assert_eq!(client.credentials_generation(), Some(0));
    identity.down.store(false, Ordering::SeqCst);
    let generation = next_round(&rounds, 0, Duration::from_secs(5));
    assert_eq!(generation, Some(1), "{tokens:?}");
    let last = tokens.renewal_failure().unwrap();
    assert!(
        last.valid_for.is_some(),
        "every failure while the token served: {last:?}"
    );
    let issued = identity.issued_at.lock().unwrap().clone();
    assert!(
        issued[1] < issued[0] + lifetime,
        "renewed before the token in use ended: {:?} after it was issued",
        issued[1] - issued[0]
    );
    identity.revoke(0);
    assert_served_throughout(Some(writers), &events, false, None);
    assert_eq!(tokens.credentials().unwrap().user_name(), Some("down-1"));
}
