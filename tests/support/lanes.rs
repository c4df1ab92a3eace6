//! Two callers in flight together: what opens a lane beside the shared connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;

/// Two threads calling (`SET lane:<t>:<n>` then `GET`) until `done` says so or 10 s
/// pass, each checking that every reply is its own (the value encodes the key);
/// returns how many calls they made.
pub fn two_callers(db: &Database, done: impl Fn() -> bool + Sync) -> usize {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let (db, done, stop) = (db.clone(), &done, &stop);
                s.spawn(move || {
                    let mut calls = 0;
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while !stop.load(Ordering::Acquire) && Instant::now() < deadline {
                        let key = format!("lane:{t}:{calls}");
                        db.set(&key, format!("value-of-{key}")).unwrap();
                        let got: Option<String> = db.get(&key).unwrap();
                        assert_eq!(got, Some(format!("value-of-{key}")));
                        calls += 2;
                        if done() {
                            stop.store(true, Ordering::Release);
                        }
                    }
                    calls
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    })
}
