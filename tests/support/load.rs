//! Load and observation shared by the tests of credentials that change: eight writing
//! threads that keep the errors of failed calls, and waiting for a re-authentication
//! round to be reported.

use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::ClientEvent;

/// Waits for `ClientEvent::Reauthenticated` at `generation` or later; its connection
/// count.
pub fn wait_for_round(
    events: &crossbeam_channel::Receiver<ClientEvent>,
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
