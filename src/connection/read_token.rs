//! Who reads a connection's replies: the reader thread, one caller, or nobody (the
//! thread stood down and the next caller may take it). Changed only under the
//! connection's `pending` lock; the decoder and read half it grants are in
//! `reader::ReadState`, behind the `reading` lock.

/// Who holds the read token.
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

/// The read token's place.
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

    /// A caller takes the token if nobody holds it.
    pub(crate) fn take_free(&mut self) -> bool {
        if self.holder != Holder::Nobody {
            return false;
        }
        self.give_to_caller();
        true
    }

    /// Its holder hands it to a caller (which was offered it and will read).
    pub(crate) fn give_to_caller(&mut self) {
        self.holder = Holder::Caller;
        self.caller_turns += 1;
    }

    /// A caller done reading leaves it with nobody, or the thread stands down.
    pub(crate) fn release(&mut self) {
        self.holder = Holder::Nobody;
    }

    /// The reader thread takes it (replies are owed that no caller will read).
    pub(crate) fn give_to_thread(&mut self) {
        self.holder = Holder::Thread;
    }

    /// The stood-down thread's tick ended: it takes the token back when nobody holds
    /// it and no caller was given it since `seen` turns.
    pub(crate) fn reclaim_unused(&mut self, seen: u64) -> bool {
        if self.holder == Holder::Nobody && self.caller_turns == seen {
            self.holder = Holder::Thread;
            return true;
        }
        false
    }
}

/// How long the stood-down thread waits before it looks whether callers still use
/// the token: short at first, so a connection left idle gets its reader back (pushes,
/// the close) within milliseconds; twice as long after every tick the callers used,
/// up to [`ReclaimTick::LONGEST`], so a connection in steady use wakes its thread a
/// few times a second, not hundreds: each such wake-up costs what a call costs.
#[derive(Debug)]
pub(crate) struct ReclaimTick(std::time::Duration);

impl ReclaimTick {
    /// The first tick after the thread stands down.
    pub(crate) const FIRST: std::time::Duration = std::time::Duration::from_millis(2);
    /// The longest: the thread takes an idle connection back at most about twice
    /// this after its last caller (`look_before_sending` covers a close meanwhile).
    pub(crate) const LONGEST: std::time::Duration = std::time::Duration::from_millis(256);

    pub(crate) fn new() -> ReclaimTick {
        ReclaimTick(Self::FIRST)
    }

    /// The tick to wait now.
    pub(crate) fn current(&self) -> std::time::Duration {
        self.0
    }

    /// A tick ended with the token used by callers: wait longer next time.
    pub(crate) fn used(&mut self) {
        self.0 = (self.0 * 2).min(Self::LONGEST);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reclaim_tick_doubles_while_callers_use_the_token_up_to_the_longest() {
        let ms = std::time::Duration::from_millis;
        let mut tick = ReclaimTick::new();
        for expected in [2, 4, 8, 16, 32, 64, 128, 256, 256] {
            assert_eq!(tick.current(), ms(expected));
            tick.used();
        }
        assert_eq!(ReclaimTick::new().current(), ReclaimTick::FIRST);
    }

    /// One move, and what it returns (moves that cannot be refused return `true`).
    #[derive(Clone, Copy)]
    enum Move {
        TakeFree,
        Release,
        ToCaller,
        ToThread,
        Reclaim(u64),
    }

    fn apply(token: &mut ReadToken, m: Move) -> bool {
        match m {
            Move::TakeFree => return token.take_free(),
            Move::Release => token.release(),
            Move::ToCaller => token.give_to_caller(),
            Move::ToThread => token.give_to_thread(),
            Move::Reclaim(seen) => return token.reclaim_unused(seen),
        }
        true
    }

    #[test]
    fn the_token_moves_as_the_connection_decides() {
        use Holder::{Caller, Nobody, Thread};
        use Move::*;
        // (what, move, returns, holder after, caller turns after)
        let table = [
            (
                "a caller cannot take what the thread holds",
                TakeFree,
                false,
                Thread,
                0,
            ),
            ("the thread stands down", Release, true, Nobody, 0),
            ("a lone caller takes it", TakeFree, true, Caller, 1),
            ("nobody else can take it", TakeFree, false, Caller, 1),
            ("it goes to the next caller", ToCaller, true, Caller, 2),
            ("that caller leaves it free", Release, true, Nobody, 2),
            (
                "a tick in which a caller took it",
                Reclaim(1),
                false,
                Nobody,
                2,
            ),
            (
                "an unused tick: back to the thread",
                Reclaim(2),
                true,
                Thread,
                2,
            ),
            ("the thread hands it to a caller", ToCaller, true, Caller, 3),
            (
                "replies no caller reads: the thread",
                ToThread,
                true,
                Thread,
                3,
            ),
        ];
        let mut token = ReadToken::new();
        for (what, m, returns, holder, turns) in table {
            assert_eq!(apply(&mut token, m), returns, "{what}");
            assert_eq!(
                (token.holder(), token.caller_turns()),
                (holder, turns),
                "{what}"
            );
            assert_eq!(token.is_free(), holder == Nobody, "{what}");
        }
    }

    #[test]
    fn a_held_token_is_never_reclaimed() {
        let mut token = ReadToken::new();
        assert!(!token.reclaim_unused(0), "the thread already holds it");
        token.release();
        assert!(token.take_free());
        let seen = token.caller_turns();
        assert!(!token.reclaim_unused(seen), "a caller holds it");
        assert_eq!(token.holder(), Holder::Caller);
    }
}
