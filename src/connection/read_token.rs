//! Who reads a connection's replies: the read token, a state machine of three places
//! and eight moves. It changes only under the connection's `pending` lock; the decoder
//! and read half it grants are in `reader::ReadState`, behind the `reading` lock.
//!
//! ```text
//!                          stand down
//!               ┌────────┐ ──────────▶ ┌────────┐
//!               │ Thread │             │ Nobody │
//!               └────────┘ ◀────────── └────────┘
//!                 │    ▲    summon,       │   ▲
//!                 │    │    reclaim       │   │
//!         promote │    │                  │   │ release
//!                 │    │ pass to    take  │   │
//!                 │    │ thread     free  │   │
//!                 ▼    │                  ▼   │
//!               ┌──────┴──────────────────────┴┐
//!               │            Caller            │ ⟲ pass to caller
//!               └──────────────────────────────┘
//! ```
//!
//! - **stand down** (the reader thread): the callers it last answered were alone on
//!   the connection and nothing is owed; the next caller reads its own reply.
//! - **take free** (a caller, as it queues its request): nobody holds the token, so it
//!   reads its own reply, as a dedicated connection would.
//! - **release** (a caller done reading): nothing is owed.
//! - **pass to caller** (a caller done reading, or **promote**: the reader thread with
//!   few callers in flight): to the caller whose reply comes next, when it waits and
//!   may read; it was going to be woken for its reply anyway.
//! - **pass to thread** (a caller done reading): replies are owed that the next caller
//!   cannot read (a probe, a heartbeat, a caller out of time), or a frame is half read.
//! - **summon** (a caller queueing a request it will not read itself, while nobody
//!   holds the token) and **reclaim** (the stood-down thread, after a tick in which no
//!   caller took the token): the thread reads again, so pushes and the close of an
//!   idle connection are still seen.

/// Where the read token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    /// The reader thread reads (blocking, no read timeout).
    Thread,
    /// A caller reads, for itself and for whoever's replies come first.
    Caller,
    /// Nobody: the thread stood down; the next caller may take it, and the thread
    /// takes it back after a tick in which nobody did.
    Nobody,
}

/// A move of the token (see the module documentation for when each is made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// Thread → Nobody.
    StandDown,
    /// Thread → Caller.
    Promote,
    /// Nobody → Caller.
    TakeFree,
    /// Nobody → Thread.
    Summon,
    /// Nobody → Thread, when no caller took the token since the thread saw `seen`
    /// caller turns.
    Reclaim { seen: u64 },
    /// Caller → Caller.
    PassToCaller,
    /// Caller → Thread.
    PassToThread,
    /// Caller → Nobody.
    Release,
}

/// The read token.
#[derive(Debug)]
pub(crate) struct ReadToken {
    holder: Holder,
    /// Times a caller was given the token, so the stood-down thread can tell a tick
    /// went unused.
    caller_turns: u64,
}

impl ReadToken {
    /// A new connection's: the reader thread reads.
    pub(crate) fn new() -> ReadToken {
        ReadToken {
            holder: Holder::Thread,
            caller_turns: 0,
        }
    }

    pub(crate) fn holder(&self) -> Holder {
        self.holder
    }

    pub(crate) fn is_free(&self) -> bool {
        self.holder == Holder::Nobody
    }

    /// Times a caller was given the token so far.
    pub(crate) fn caller_turns(&self) -> u64 {
        self.caller_turns
    }

    /// Makes the move when the token is where the move starts (and, for a reclaim,
    /// no caller took it since); whether it was made.
    pub(crate) fn apply(&mut self, m: Move) -> bool {
        use Holder::{Caller, Nobody, Thread};
        let to = match (self.holder, m) {
            (Thread, Move::StandDown) => Nobody,
            (Thread, Move::Promote) => Caller,
            (Nobody, Move::TakeFree) => Caller,
            (Nobody, Move::Summon) => Thread,
            (Nobody, Move::Reclaim { seen }) if seen == self.caller_turns => Thread,
            (Caller, Move::PassToCaller) => Caller,
            (Caller, Move::PassToThread) => Thread,
            (Caller, Move::Release) => Nobody,
            _ => return false,
        };
        if to == Caller {
            self.caller_turns += 1;
        }
        self.holder = to;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_move_goes_where_the_drawing_says_and_only_from_where_it_starts() {
        use Holder::{Caller, Nobody, Thread};
        // (move, from, to): the arrows of the module's drawing. From any other place
        // the move is refused and the token stays.
        let arrows = [
            (Move::StandDown, Thread, Nobody),
            (Move::Promote, Thread, Caller),
            (Move::TakeFree, Nobody, Caller),
            (Move::Summon, Nobody, Thread),
            (Move::Reclaim { seen: 0 }, Nobody, Thread),
            (Move::PassToCaller, Caller, Caller),
            (Move::PassToThread, Caller, Thread),
            (Move::Release, Caller, Nobody),
        ];
        let at = |holder: Holder| {
            let mut token = ReadToken::new();
            let path: &[Move] = match holder {
                Thread => &[],
                Nobody => &[Move::StandDown],
                Caller => &[Move::Promote],
            };
            for m in path {
                assert!(token.apply(*m));
            }
            // Reclaims below compare with the turns seen so far.
            token.caller_turns = 0;
            token
        };
        for (m, from, to) in arrows {
            for start in [Thread, Nobody, Caller] {
                let mut token = at(start);
                let made = token.apply(m);
                if start == from {
                    assert!(made, "{m:?} from {start:?}");
                    assert_eq!(token.holder(), to, "{m:?} from {start:?}");
                    assert_eq!(token.caller_turns(), u64::from(to == Caller), "{m:?}");
                } else {
                    assert!(!made, "{m:?} made from {start:?}");
                    assert_eq!(token.holder(), start, "{m:?} moved it from {start:?}");
                }
                assert_eq!(token.is_free(), token.holder() == Nobody);
            }
        }
    }

    #[test]
    fn a_reclaim_waits_for_a_tick_in_which_no_caller_took_the_token() {
        // (what, move, made, holder after, caller turns after)
        let table = [
            (
                "the thread stands down",
                Move::StandDown,
                true,
                Holder::Nobody,
                0,
            ),
            (
                "a lone caller takes it",
                Move::TakeFree,
                true,
                Holder::Caller,
                1,
            ),
            ("and leaves it free", Move::Release, true, Holder::Nobody, 1),
            (
                "a tick in which a caller took it",
                Move::Reclaim { seen: 0 },
                false,
                Holder::Nobody,
                1,
            ),
            (
                "an unused tick: back to the thread",
                Move::Reclaim { seen: 1 },
                true,
                Holder::Thread,
                1,
            ),
        ];
        let mut token = ReadToken::new();
        for (what, m, made, holder, turns) in table {
            assert_eq!(token.apply(m), made, "{what}");
            assert_eq!(
                (token.holder(), token.caller_turns()),
                (holder, turns),
                "{what}"
            );
        }
    }
}
