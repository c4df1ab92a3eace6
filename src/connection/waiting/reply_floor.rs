//! The connection's reply floor: how soon, at best, a reply's first byte follows the
//! write that carried its request. It tells how far away the server is, apart from the
//! queueing of the moment: with 64 callers on a loopback server, a request waits in
//! the outgoing buffer and its reply behind the others' for hundreds of microseconds,
//! but from the write to the first byte back is the network and the server, and the
//! waits stay active; a server 250 µs away never gets a floor under 250 µs, and its
//! waiters park. (Timed from the request's queueing instead, 64 callers on loopback
//! look far away, and park where taking turns is what serves them.)
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

/// How long a yield lasts on a connection: the time until the yielding thread ran
/// again, smoothed (each yield moves it an eighth of the way). About a microsecond when
/// nothing else wants the core; tens of microseconds and more when other callers, the
/// reader or the server run meanwhile, which is when yielding is worth its cost.
#[derive(Debug, Default)]
pub(crate) struct TurnTime {
    nanos: AtomicU64,
}

impl TurnTime {
    /// The turn time now.
    pub(crate) fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// A yield lasted `took`. (Two at once may lose one sample: it is a smoothed
    /// estimate, not a count.)
    pub(crate) fn record(&self, took: Duration) {
        let turn = self.nanos.load(Ordering::Relaxed) as i64;
        let took = i64::try_from(nanos(took)).unwrap_or(i64::MAX);
        let next = turn + (took - turn) / 8;
        self.nanos.store(next.max(0) as u64, Ordering::Relaxed);
    }
}

/// When each of the latest writes on a connection began, by its number (writes are
/// numbered from 1 as they take the outgoing buffer), so a reply can be timed from the
/// write that carried its request. Each entry holds its write's number beside its
/// time; one overwritten by a later write is not taken for it.
#[derive(Debug)]
pub(crate) struct WriteTimes {
    slots: [(AtomicU64, AtomicU64); WRITES_KEPT],
}

/// Writes remembered: a request answered after more writes than this went out is not
/// timed (its time would be a queue's, not the server's).
const WRITES_KEPT: usize = 32;

impl Default for WriteTimes {
    fn default() -> WriteTimes {
        WriteTimes {
            slots: std::array::from_fn(|_| (AtomicU64::new(0), AtomicU64::new(0))),
        }
    }
}

impl WriteTimes {
    /// Write `number` began `at` (in the connection's nanoseconds).
    pub(crate) fn began(&self, number: u64, at: u64) {
        let (n, t) = &self.slots[slot(number)];
        // Invalidated first, so a reader never pairs the new time with the old number.
        n.store(0, Ordering::Release);
        t.store(at, Ordering::Release);
        n.store(number, Ordering::Release);
    }

    /// When write `number` began, if it is still remembered.
    pub(crate) fn of(&self, number: u64) -> Option<u64> {
        let (n, t) = &self.slots[slot(number)];
        if n.load(Ordering::Acquire) != number {
            return None;
        }
        let at = t.load(Ordering::Acquire);
        (n.load(Ordering::Acquire) == number).then_some(at)
    }
}

fn slot(number: u64) -> usize {
    (number % WRITES_KEPT as u64) as usize
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
    fn the_turn_time_moves_an_eighth_of_the_way_to_each_yield() {
        let turn = TurnTime::default();
        // (a yield lasting µs, turn time after in ns)
        let table = [(80, 10_000), (80, 18_750), (1, 16_532), (1, 14_591)];
        for (took, expected) in table {
            turn.record(us(took));
            assert_eq!(turn.get().as_nanos(), expected, "after a {took} µs yield");
        }
    }

    #[test]
    fn a_write_is_remembered_until_later_writes_take_its_place() {
        let times = WriteTimes::default();
        // (write begun, at; then asked: write, answer)
        times.began(1, 100);
        times.began(2, 250);
        assert_eq!(times.of(1), Some(100));
        assert_eq!(times.of(2), Some(250));
        assert_eq!(times.of(3), None, "not begun");
        times.began(1 + WRITES_KEPT as u64, 900);
        assert_eq!(times.of(1), None, "overwritten by a later write");
        assert_eq!(times.of(1 + WRITES_KEPT as u64), Some(900));
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
