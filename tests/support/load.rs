//! Load on a group: a few threads writing and reading through the default retry
//! policy, counting the calls that failed, for the failover tests that assert "no
//! failed call".

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use resilient_redis::availability::{Group, RetryPolicy};
use resilient_redis::prelude::*;

use super::wait_until;

/// Four threads writing and reading through the default retry policy, counting the
/// calls that failed.
pub struct Load {
    stop: Arc<AtomicBool>,
    failed: Arc<Mutex<Vec<String>>>,
    calls: Arc<AtomicU64>,
    workers: Vec<thread::JoinHandle<()>>,
}

impl Load {
    pub fn start(group: &Group) -> Load {
        let db = group.database().with_retry(RetryPolicy::default()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(AtomicU64::new(0));
        let workers = (0..4)
            .map(|t| {
                let (db, stop) = (db.clone(), stop.clone());
                let (failed, calls) = (failed.clone(), calls.clone());
                thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let result = if i % 2 == 0 {
                            db.set(format!("load:{t}"), i).map(|_| ())
                        } else {
                            db.get::<Option<u64>>(format!("load:{t}")).map(|_| ())
                        };
                        match result {
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
        Load {
            stop,
            failed,
            calls,
            workers,
        }
    }

    /// Waits for `n` more successful calls (bounded).
    pub fn served(&self, n: u64, within: Duration) -> bool {
        let from = self.calls.load(Ordering::Relaxed);
        wait_until(within, || self.calls.load(Ordering::Relaxed) >= from + n)
    }

    /// The calls that failed so far.
    pub fn failures(&self) -> Vec<String> {
        self.failed.lock().unwrap().clone()
    }

    /// Stops the load; the calls that failed.
    pub fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers {
            let _ = w.join();
        }
        let failed = self.failed.lock().unwrap().clone();
        failed
    }
}
