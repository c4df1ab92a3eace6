//! A caller's completion slot: where the reader thread leaves the reply (or the error)
//! and wakes the one thread waiting for it.
//!
//! A slot queued on a connection sleeps on the connection's wake board, so one read's
//! replies wake their callers together (see `wake_board`); elsewhere, and for slots
//! nobody blocks on, waking is `Thread::unpark`. A caller that gave up (timed out)
//! marks the slot abandoned and the reader drops the reply when it comes, so a late
//! reply can never reach another caller.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::Instant;

use parking_lot::Mutex;

use super::gamble::Gamble;
use super::wake_board::{self, Place, WakeBoard};
use crate::error::Error;
use crate::resp::Value;

const WAITING: u8 = 0;
const DONE: u8 = 1;
const ABANDONED: u8 = 2;

/// What a slot receives: one reply, several (a batch), or the error that ended them.
pub(crate) enum Outcome {
    One(Value),
    Many(Vec<Value>),
    Failed(Error),
}

impl Outcome {
    /// The replies of a pipelined request, in order.
    pub(crate) fn into_values(self) -> Result<Vec<Value>, Error> {
        match self {
            Outcome::Many(v) => Ok(v),
            Outcome::One(v) => Ok(vec![v]),
            Outcome::Failed(e) => Err(e),
        }
    }
}

pub(crate) struct ReplySlot {
    state: AtomicU8,
    /// The read token was handed to this slot's waiter (see `reader::pass_on`).
    lead: std::sync::atomic::AtomicBool,
    outcome: Mutex<Option<Outcome>>,
    waiter: Thread,
    /// Where the waiter sleeps once queued (`NO_PLACE` before): its connection's
    /// board, at its place in the FIFO.
    board: Option<Arc<WakeBoard>>,
    place: AtomicU64,
}

const NO_PLACE: u64 = u64::MAX;

/// How a caller waits for its slot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// Few callers in flight: spins, then yields for about two round trips, then
    /// parks.
    SpinFirst,
    /// Many callers in flight: yields up to `TURNS` times (for at most `TURNS_FOR`),
    /// then parks. Each yield hands the core to another caller's work, so a wait
    /// spans many of their turns but only a few of its own, and costs no wake-up.
    /// The count bounds what a wait burns when nobody else wants the core (a slow
    /// server), as `YIELD_FOR` does for `SpinFirst`, and the connection's bet stops
    /// the turns while waits keep outlasting them (see `wait`).
    YieldTurns,
    /// Parks at once.
    Park,
}

/// How a wait ended.
pub(crate) enum Waited {
    Ready(Outcome),
    TimedOut,
    /// The read token was handed over: read on.
    Lead,
}

impl ReplySlot {
    /// A slot for the calling thread to wait on.
    pub(crate) fn for_current_thread() -> ReplySlot {
        ReplySlot {
            state: AtomicU8::new(WAITING),
            lead: std::sync::atomic::AtomicBool::new(false),
            outcome: Mutex::new(None),
            waiter: thread::current(),
            board: None,
            place: AtomicU64::new(NO_PLACE),
        }
    }

    /// A slot for the calling thread that sleeps on its connection's `board` once
    /// queued (where boards are supported; it parks elsewhere).
    pub(crate) fn on_board(board: Arc<WakeBoard>) -> ReplySlot {
        ReplySlot {
            board: wake_board::SUPPORTED.then_some(board),
            ..ReplySlot::for_current_thread()
        }
    }

    /// Its place in the FIFO (set once, under the connection's `pending` lock).
    pub(crate) fn set_place(&self, place: Place) {
        self.place.store(u64::from(place.0), Ordering::Release);
    }

    fn placed(&self) -> Option<(&WakeBoard, Place)> {
        let board = self.board.as_deref()?;
        let p = self.place.load(Ordering::Acquire);
        (p != NO_PLACE).then_some((board, Place(p as u32)))
    }

    /// Delivers the outcome, leaving a waiter on a board to be woken with the others
    /// answered by the same read: returns its place (`None`: nobody to wake on a
    /// board, or a parked waiter already unparked). Dropped silently when the caller
    /// already gave up.
    pub(crate) fn complete_deferred(&self, outcome: Outcome) -> Option<Place> {
        if self.state.load(Ordering::Acquire) != WAITING {
            return None;
        }
        *self.outcome.lock() = Some(outcome);
        if self
            .state
            .compare_exchange(WAITING, DONE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            match self.placed() {
                Some((_, place)) => return Some(place),
                None => self.waiter.unpark(),
            }
        } else {
            // Abandoned between the two checks: nobody will read it.
            self.outcome.lock().take();
        }
        None
    }

    fn wake(&self) {
        match self.placed() {
            Some((board, place)) => board.wake_one(place),
            None => self.waiter.unpark(),
        }
    }

    /// Delivers the outcome and wakes the waiter; dropped silently when the caller
    /// already gave up.
    pub(crate) fn complete(&self, outcome: Outcome) {
        if let Some(place) = self.complete_deferred(outcome) {
            if let Some(board) = &self.board {
                board.wake_one(place);
            }
        }
    }

    /// Hands the read token to the waiter, if it still waits; called under the
    /// connection's `pending` lock, which `take_lead` also takes after an abandon.
    pub(crate) fn offer_lead(&self) -> bool {
        if self.state.load(Ordering::Acquire) != WAITING {
            return false;
        }
        self.lead.store(true, Ordering::Release);
        self.wake();
        true
    }

    /// Whether the read token was handed to this waiter and not yet taken.
    pub(crate) fn lead_pending(&self) -> bool {
        self.lead.load(Ordering::Acquire)
    }

    /// Whether the read token was handed to this waiter (clears it).
    pub(crate) fn take_lead(&self) -> bool {
        self.lead.swap(false, Ordering::AcqRel)
    }

    /// Whether the outcome has been delivered (a direct reader's stop condition).
    pub(crate) fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Whether an outcome is ready (non-blocking; used for asynchronous heartbeats).
    pub(crate) fn try_take(&self) -> Option<Outcome> {
        if self.state.load(Ordering::Acquire) == DONE {
            self.outcome.lock().take()
        } else {
            None
        }
    }

    /// Gives up on the slot: a reply arriving later is discarded.
    pub(crate) fn abandon(&self) -> Option<Outcome> {
        match self
            .state
            .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => None,
            // Completed just before we gave up: take it rather than lose it.
            Err(_) => self.outcome.lock().take(),
        }
    }

    /// Waits until completed or until `deadline()` passes. The deadline is re-read on
    /// every wake-up so a relaxed timeout that starts while we wait extends the wait.
    /// While yielding, `look()` runs between two looks at the slot: a caller's look at
    /// its connection's socket (`reader::help_read`), which may complete this slot.
    /// `yielding` is the connection's bet that taking turns pays (`YieldTurns`): when
    /// it is paused the waiter parks at once, and each wait that took turns records
    /// whether its reply came before it had to park. A slow server or network makes
    /// every wait a miss, and yielding then only burns the cores: with replies 1 ms
    /// late at 64 threads (the testkit's fake), 50.6 µs of CPU per call against 20.2
    /// µs parking at once, 29.6 µs with the bet.
    pub(crate) fn wait(
        &self,
        how: Waiting,
        mut deadline: impl FnMut() -> Instant,
        mut look: impl FnMut(),
        yielding: Option<&Gamble>,
    ) -> Waited {
        match how {
            Waiting::SpinFirst => {
                // A short spin catches a reply that is already on its way without
                // paying for a park/unpark pair.
                for _ in 0..SPIN_ROUNDS {
                    if let Some(w) = self.settled(&mut deadline) {
                        return w;
                    }
                    std::hint::spin_loop();
                }
                // Then yield for a round trip's worth of time: the core goes to the
                // reader (and the server) instead of being burnt, and a reply found
                // here costs no park/unpark pair. No bet here: with few in flight a
                // parked waiter's wake-up costs a halted core's, and the window
                // already bounds the burn.
                let until = Instant::now() + YIELD_FOR;
                if let Some(w) = self.yield_until(until, u32::MAX, &mut deadline, &mut look) {
                    return w;
                }
            }
            Waiting::YieldTurns if yielding.is_none_or(Gamble::allows) => {
                let until = Instant::now() + TURNS_FOR;
                let settled = self.yield_until(until, TURNS, &mut deadline, &mut look);
                if let Some(gate) = yielding {
                    gate.record(settled.is_some());
                }
                if let Some(w) = settled {
                    return w;
                }
            }
            Waiting::YieldTurns | Waiting::Park => {}
        }
        loop {
            if self.state.load(Ordering::Acquire) == DONE {
                return self.take_ready();
            }
            let now = Instant::now();
            let until = deadline();
            // Before the token: a caller out of time gives up rather than read again.
            if now >= until {
                return match self.abandon() {
                    Some(outcome) => Waited::Ready(outcome),
                    None => Waited::TimedOut,
                };
            }
            if self.lead.load(Ordering::Acquire) {
                return Waited::Lead;
            }
            match self.placed() {
                Some((board, place)) => board.sleep(place, until, || {
                    self.state.load(Ordering::Acquire) != WAITING
                        || self.lead.load(Ordering::Acquire)
                }),
                None => thread::park_timeout(until - now),
            }
        }
    }

    /// Yields until settled, `until` passes or `turns` yields were made, running
    /// `look()` between looks at the slot; `None` when it is time to park.
    fn yield_until(
        &self,
        until: Instant,
        turns: u32,
        deadline: &mut impl FnMut() -> Instant,
        look: &mut impl FnMut(),
    ) -> Option<Waited> {
        let mut made = 0;
        while made < turns && Instant::now() < until {
            if let Some(w) = self.settled(deadline) {
                return Some(w);
            }
            look();
            if let Some(w) = self.settled(deadline) {
                return Some(w);
            }
            std::thread::yield_now();
            made += 1;
        }
        None
    }

    /// The outcome when delivered, or `Lead` when the read token was handed over and
    /// there is still time to read (out of time, the park loop gives up instead).
    fn settled(&self, deadline: &mut impl FnMut() -> Instant) -> Option<Waited> {
        if self.state.load(Ordering::Acquire) == DONE {
            return Some(self.take_ready());
        }
        (self.lead.load(Ordering::Acquire) && Instant::now() < deadline()).then_some(Waited::Lead)
    }

    fn take_ready(&self) -> Waited {
        match self.outcome.lock().take() {
            Some(outcome) => Waited::Ready(outcome),
            None => Waited::TimedOut,
        }
    }
}

const SPIN_ROUNDS: u32 = 64;
/// About two loopback round trips.
const YIELD_FOR: std::time::Duration = std::time::Duration::from_micros(100);
/// Yields a waiter among many makes before it parks. At 64 threads a wait took 1.3
/// yields on average, and 16, 32, 64 and 128 measured alike (docs/performance.md,
/// "Many in flight take turns"): the smallest that never cut a wait short there
/// bounds the burn best.
const TURNS: u32 = 32;
/// The longest a waiter among many yields before it parks.
const TURNS_FOR: std::time::Duration = std::time::Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn completion_wakes_the_waiter() {
        let slot = Arc::new(ReplySlot::for_current_thread());
        let s2 = slot.clone();
        let t = thread::spawn(move || s2.complete(Outcome::One(Value::Int(7))));
        let deadline = Instant::now() + Duration::from_secs(10);
        match slot.wait(Waiting::SpinFirst, || deadline, || {}, None) {
            Waited::Ready(Outcome::One(Value::Int(7))) => {}
            _ => panic!("expected the reply"),
        }
        t.join().unwrap();
    }

    #[test]
    fn a_waiter_among_many_yields_a_bounded_number_of_times_then_sleeps_until_its_reply() {
        let slot = Arc::new(ReplySlot::for_current_thread());
        let looks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let (s2, l2) = (slot.clone(), looks.clone());
        // Completes once the waiter has stopped looking (it sleeps), or after a while.
        let t = thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(5);
            let mut last = u32::MAX;
            loop {
                let now = l2.load(Ordering::SeqCst);
                if (now > 0 && now == last) || Instant::now() > until {
                    break;
                }
                last = now;
                thread::sleep(Duration::from_millis(20));
            }
            s2.complete(Outcome::One(Value::Int(9)));
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let waited = slot.wait(
            Waiting::YieldTurns,
            || deadline,
            || {
                looks.fetch_add(1, Ordering::SeqCst);
            },
            None,
        );
        assert!(matches!(waited, Waited::Ready(Outcome::One(Value::Int(9)))));
        assert!(
            looks.load(Ordering::SeqCst) <= TURNS,
            "yielded past its turns"
        );
        t.join().unwrap();
    }

    #[test]
    fn waits_that_outlast_their_yields_stop_yielding_for_a_while() {
        // A slow server: every reply comes after the waiter had to park. After three
        // such waits in a row the connection's callers park at once.
        let gate = Gamble::default();
        let looks = std::cell::Cell::new(0);
        let wait_once = || {
            let slot = ReplySlot::for_current_thread();
            let past = Instant::now();
            let waited = slot.wait(
                Waiting::YieldTurns,
                || past,
                || looks.set(looks.get() + 1),
                Some(&gate),
            );
            assert!(matches!(waited, Waited::TimedOut));
        };
        for _ in 0..3 {
            wait_once();
        }
        assert!(looks.get() > 0, "yielded while the bet paid");
        let before = looks.get();
        wait_once();
        assert_eq!(looks.get(), before, "yielded after three misses in a row");
    }

    #[test]
    fn a_reply_after_abandon_is_dropped() {
        let slot = ReplySlot::for_current_thread();
        let past = Instant::now();
        assert!(matches!(
            slot.wait(Waiting::SpinFirst, || past, || {}, None),
            Waited::TimedOut
        ));
        slot.complete(Outcome::One(Value::Int(1)));
        assert!(slot.try_take().is_none());
    }

    #[test]
    fn the_read_token_handed_to_a_waiter_wakes_it_to_read() {
        let slot = Arc::new(ReplySlot::for_current_thread());
        let s2 = slot.clone();
        let t = thread::spawn(move || s2.offer_lead());
        let deadline = Instant::now() + Duration::from_secs(10);
        assert!(matches!(
            slot.wait(Waiting::Park, || deadline, || {}, None),
            Waited::Lead
        ));
        assert!(t.join().unwrap(), "offered to a waiter");
        assert!(slot.take_lead());
        assert!(!slot.lead_pending(), "taken once");
    }

    #[test]
    fn the_token_is_not_handed_to_a_waiter_that_gave_up_or_was_answered() {
        let gave_up = ReplySlot::for_current_thread();
        let past = Instant::now();
        assert!(matches!(
            gave_up.wait(Waiting::Park, || past, || {}, None),
            Waited::TimedOut
        ));
        assert!(!gave_up.offer_lead());
        let answered = ReplySlot::for_current_thread();
        answered.complete(Outcome::One(Value::Int(1)));
        assert!(!answered.offer_lead());
        assert!(!answered.lead_pending());
    }
}
