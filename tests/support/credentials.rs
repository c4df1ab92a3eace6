//! Set-up, load and observation shared by the tests of credentials that change: a
//! client authenticated through a provider, ACL users issued as tokens, eight writing
//! threads that keep the errors of failed calls, the events that mean a connection was
//! lost, and waiting for a re-authentication round to be reported.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use resilient_redis::config::{Credentials, CredentialsProvider, Protocol};
use resilient_redis::prelude::*;
use resilient_redis::{ClientEvent, Subscription};

use super::optin::opt_in;

/// A client of the server at `addr` that authenticates through `provider`.
pub fn client_with(
    addr: &str,
    provider: Arc<dyn CredentialsProvider>,
    protocol: Protocol,
) -> Client {
    Client::connect(opt_in(
        Options::default()
            .endpoint(addr)
            .protocol(protocol)
            .credentials(provider),
    ))
    .unwrap()
}

/// Runs `ACL <args>` through `admin`.
pub fn acl(admin: &Database, args: &[&str]) {
    admin.cmd("ACL").arg(args).exec().unwrap();
}

/// Creates the ACL user `<prefix>-<n>` with password `secret-<n>` and every right; its
/// credentials, as an identity service would issue token `n`.
pub fn issue_user(admin: &Database, prefix: &str, n: u64) -> Credentials {
    let (user, secret) = (format!("{prefix}-{n}"), format!("secret-{n}"));
    let password = format!(">{secret}");
    acl(
        admin,
        &["SETUSER", &user, "on", &password, "~*", "&*", "+@all"],
    );
    Credentials::user(user, secret)
}

/// How a test of changing credentials ends: the writers (when any) still make
/// progress, then stop with no failed call; the subscription (when given) still
/// delivers; and no connection was lost and no re-authentication failed (nor, with
/// `unavailable_too`, were credentials unavailable). The writers' successful calls.
pub fn assert_served_throughout(
    writers: Option<Writers>,
    events: &Receiver<ClientEvent>,
    unavailable_too: bool,
    subscription: Option<(&Subscriber, &Subscription)>,
) -> u64 {
    let calls = writers.map_or(0, |writers| {
        let before = writers.calls();
        assert!(
            super::wait_until(Duration::from_secs(5), || writers.calls() > before + 100),
            "the writers stalled at {before} calls"
        );
        writers.stop()
    });
    if let Some((sub, news)) = subscription {
        assert!(super::wait_until(Duration::from_secs(5), || sub
            .publish("news", "still here")
            .is_ok_and(|n| n == 1)));
        assert_eq!(
            news.recv_timeout(Duration::from_secs(5)).unwrap().payload,
            b"still here"
        );
    }
    let trouble: Vec<ClientEvent> = events
        .try_iter()
        .filter(|e| match e {
            ClientEvent::ConnectionFailed { .. } | ClientEvent::ReauthenticationFailed { .. } => {
                true
            }
            ClientEvent::CredentialsUnavailable { .. } => unavailable_too,
            _ => false,
        })
        .collect();
    assert!(trouble.is_empty(), "{trouble:?}");
    calls
}

/// Waits for `ClientEvent::Reauthenticated` at `generation` or later; its connection
/// count.
pub fn wait_for_round(
    events: &Receiver<ClientEvent>,
    generation: u64,
    within: Duration,
) -> Option<usize> {
    let deadline = Instant::now() + within;
    while let Ok(event) = events.recv_deadline(deadline) {
        if let ClientEvent::Reauthenticated {
            generation: g,
            connections,
        } = event
        {
            if g >= generation {
                return Some(connections);
            }
        }
    }
    None
}

/// Eight threads writing through `db` until stopped, counting successes and keeping
/// the errors of the calls that failed.
pub struct Writers {
    stop: Arc<AtomicBool>,
    calls: Arc<AtomicU64>,
    failed: Arc<Mutex<Vec<String>>>,
    workers: Vec<thread::JoinHandle<()>>,
}

impl Writers {
    pub fn start(db: &Database, prefix: &'static str) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(Mutex::new(Vec::new()));
        let workers = (0..8)
            .map(|t| {
                let (db, stop, calls, failed) =
                    (db.clone(), stop.clone(), calls.clone(), failed.clone());
                thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        match db.set(format!("{prefix}:{t}"), i) {
                            Ok(()) => {
                                calls.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => failed.lock().unwrap().push(e.to_string()),
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        Writers {
            stop,
            calls,
            failed,
            workers,
        }
    }

    /// The calls that succeeded so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Waits until `n` more calls have succeeded (10 s at most).
    pub fn wait_for(&self, n: u64) {
        let from = self.calls();
        assert!(
            super::wait_until(Duration::from_secs(10), || self.calls() >= from + n),
            "{n} calls after {from} not served"
        );
    }

    /// Stops them and asserts that no call failed; the calls that succeeded.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers {
            w.join().unwrap();
        }
        let failed = self.failed.lock().unwrap().clone();
        assert!(failed.is_empty(), "failed calls: {failed:?}");
        self.calls.load(Ordering::Relaxed)
    }
}
