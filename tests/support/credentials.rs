//! Set-up, load and observation shared by the tests of credentials that change: a
//! client authenticated through a provider, ACL users issued as tokens, eight writing
//! threads that keep the errors of failed calls, the events that mean a connection was
//! lost, and waiting for a re-authentication round to be reported.

use std::sync::Arc;
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

/// The events that mean a connection was lost or re-authentication failed, and (when
/// asked) that the provider could not deliver credentials.
pub fn trouble(events: &Receiver<ClientEvent>, unavailable_too: bool) -> Vec<ClientEvent> {
    events
        .try_iter()
        .filter(|e| match e {
            ClientEvent::ConnectionFailed { .. } | ClientEvent::ReauthenticationFailed { .. } => {
                true
            }
            ClientEvent::CredentialsUnavailable { .. } => unavailable_too,
            _ => false,
        })
        .collect()
}

/// The subscription to `news` still delivers what is published through `sub`.
pub fn assert_still_delivers(sub: &Subscriber, news: &Subscription) {
    assert!(super::wait_until(Duration::from_secs(5), || sub
        .publish("news", "still here")
        .is_ok_and(|n| n == 1)));
    assert_eq!(
        news.recv_timeout(Duration::from_secs(5)).unwrap().payload,
        b"still here"
    );
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
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub calls: std::sync::Arc<std::sync::atomic::AtomicU64>,
    failed: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    workers: Vec<thread::JoinHandle<()>>,
}

impl Writers {
    pub fn start(db: &Database, prefix: &'static str) -> Writers {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let failed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
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

    /// Stops them; the errors of the calls that failed.
    pub fn stop(self) -> Vec<String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in self.workers {
            w.join().unwrap();
        }
        let failed = self.failed.lock().unwrap().clone();
        failed
    }
}
