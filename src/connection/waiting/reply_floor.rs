//! The connection's reply floor: how soon, at best, a reply's first byte follows its
//! request. It tells how far away the server is, apart from the queueing of the moment:
//! with 64 callers on a loopback server, replies wait behind each other for hundreds
//! of microseconds, but the floor stays where the network and the server put it, and
//! the waits stay active; a server 250 µs away never gets a floor under 250 µs, and its
//! waiters park.
//!
//! Measured on every read that answers a request (by whoever reads), never only when a
//! wait went wrong. It falls at once to any faster reply, and rises a sixteenth of the
//! way toward each slower one: one slow reply (a large value, a pause) barely moves it,
//! a server that became slow (or a connection now routed farther) moves it within
//! a few replies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How far a slower reply pulls the floor up: a sixteenth of the gap.
const RISE_SHIFT: u32 = 4;

/// The floor, in nanoseconds. One writer at a time (whoever holds the read state),
/// read by every waiter.
#[derive(Debug)]
pub(crate) struct ReplyFloor {
    nanos: AtomicU64,
}

impl ReplyFloor {
    /// A floor that starts at `seed` (the handshake's round trip).
    pub(crate) fn new(seed: Duration) -> ReplyFloor {
        ReplyFloor {
            nanos: AtomicU64::new(nanos(seed)),
        }
    }

    /// The floor now.
    pub(crate) fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// A reply's first byte came `sample` after its request was sent.
    pub(crate) fn record(&self, sample: Duration) {
        let floor = self.nanos.load(Ordering::Relaxed);
        let sample = nanos(sample);
        let next = if sample <= floor {
            sample
        } else {
            floor + ((sample - floor) >> RISE_SHIFT)
        };
        if next != floor {
            self.nanos.store(next, Ordering::Relaxed);
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_floor_falls_at_once_and_rises_a_sixteenth_of_the_way() {
        let floor = ReplyFloor::new(us(200));
        // (sample µs, floor after, in µs)
        let table = [
            (30, 30),     // a faster reply: the floor is there at once
            (190, 40),    // one slow reply moves it a sixteenth of the gap
            (40, 40),     // equal: unchanged
            (1_000, 100), // a very slow one (a large value) is absorbed
            (1_000, 156), // the server became slow: the floor follows
            (1_000, 208), //
            (35, 35),     // and falls back with the first fast reply
        ];
        for (sample, expected) in table {
            floor.record(us(sample));
            assert_eq!(
                floor.get().as_micros(),
                expected,
                "after a {sample} µs reply"
            );
        }
    }

    #[test]
    fn a_slow_server_is_far_within_a_few_replies() {
        // Replies 1 ms late on a connection whose handshake was quick.
        let floor = ReplyFloor::new(us(30));
        let replies = (1..=20)
            .find(|_| {
                floor.record(us(1_000));
                !super::super::policy::is_near(floor.get())
            })
            .unwrap_or(u32::MAX);
        assert!(replies <= 2, "far after {replies} replies");
    }
}
