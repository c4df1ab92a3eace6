//! Bets on timing that pay on a quiet machine and cost on a busy one: a caller
//! polling its socket for a reply instead of blocking, a caller holding its frame for
//! the callers answered with it so they all go in one write. Each is tried while it
//! pays and paused for a while after misses in a row.

/// Whether a bet pays on this connection now: it does while it keeps being won; after
/// `MISSES_TO_STOP` misses in a row (the server or the machine is busy, or the
/// callers went elsewhere) it is not made for the next `SKIP_AFTER_MISSES` chances,
/// then tried again.
#[derive(Default)]
pub(crate) struct Gamble {
    misses: u32,
    skip: u32,
}

const MISSES_TO_STOP: u32 = 3;
const SKIP_AFTER_MISSES: u32 = 64;

impl Gamble {
    /// Whether to bet this time (counts down a pause).
    pub(crate) fn allows(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    /// Whether the bet was won.
    pub(crate) fn record(&mut self, won: bool) {
        if won {
            self.misses = 0;
            return;
        }
        self.misses += 1;
        if self.misses >= MISSES_TO_STOP {
            self.misses = 0;
            self.skip = SKIP_AFTER_MISSES;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bets_stop_after_misses_in_a_row_and_are_tried_again_later() {
        let mut gate = Gamble::default();
        // (won, bets next time)
        let table = [(false, true), (true, true), (false, true), (false, true)];
        for (won, bets_next) in table {
            assert!(gate.allows());
            gate.record(won);
            assert_eq!(gate.skip == 0, bets_next);
        }
        assert!(gate.allows());
        gate.record(false); // the third miss in a row
        for _ in 0..SKIP_AFTER_MISSES {
            assert!(!gate.allows(), "bets while paused");
        }
        assert!(gate.allows(), "tried again after the pause");
    }
}
