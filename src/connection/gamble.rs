//! Bets on timing that pay on a quiet machine and cost on a busy one: a caller
//! polling its socket for a reply instead of blocking, a caller holding its frame for
//! the callers answered with it so they all go in one write, callers yielding for
//! their replies instead of sleeping. Each is tried while it pays and paused for a
//! while after misses in a row.

use std::sync::atomic::{AtomicU32, Ordering};

/// Whether a bet pays on this connection now: it does while it keeps being won; after
/// `MISSES_TO_STOP` misses in a row (the server or the machine is busy, or the
/// callers went elsewhere) it is not made for the next `SKIP_AFTER_MISSES` chances,
/// then tried again. Shared by the callers of a connection: a race between two of
/// them only moves a count by one.
#[derive(Default)]
pub(crate) struct Gamble {
    misses: AtomicU32,
    skip: AtomicU32,
}

const MISSES_TO_STOP: u32 = 3;
const SKIP_AFTER_MISSES: u32 = 64;

impl Gamble {
    /// Whether to bet this time (counts down a pause).
    pub(crate) fn allows(&self) -> bool {
        self.skip.load(Ordering::Relaxed) == 0
            || self
                .skip
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1))
                .is_err()
    }

    /// Whether the bet was won.
    pub(crate) fn record(&self, won: bool) {
        if won {
            // Looked at first: most bets are won, and a store would make every
            // winner write the shared line.
            if self.misses.load(Ordering::Relaxed) != 0 {
                self.misses.store(0, Ordering::Relaxed);
            }
            return;
        }
        if self.misses.fetch_add(1, Ordering::Relaxed) + 1 >= MISSES_TO_STOP {
            self.misses.store(0, Ordering::Relaxed);
            self.skip.store(SKIP_AFTER_MISSES, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bets_stop_after_misses_in_a_row_and_are_tried_again_later() {
        let gate = Gamble::default();
        // (won, bets next time)
        let table = [(false, true), (true, true), (false, true), (false, true)];
        for (won, bets_next) in table {
            assert!(gate.allows());
            gate.record(won);
            assert_eq!(gate.skip.load(Ordering::Relaxed) == 0, bets_next);
        }
        assert!(gate.allows());
        gate.record(false); // the third miss in a row
        for _ in 0..SKIP_AFTER_MISSES {
            assert!(!gate.allows(), "bets while paused");
        }
        assert!(gate.allows(), "tried again after the pause");
    }
}
