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

use super::waiting::{Gauges, Plan, Wait, Waiter};
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

    /// Waits until completed or until `deadline()` passes, actively while the
    /// connection's waiting policy says so (see `waiting`), then parked. The deadline
    /// is re-read on every look so a relaxed timeout that starts while we wait extends
    /// the wait. Before each yield, `look()` runs: a caller's look at its connection's
    /// socket (`reader::help_read`), which may complete this slot.
    pub(crate) fn wait(
        &self,
        gauges: &impl Gauges,
        mut deadline: impl FnMut() -> Instant,
        mut look: impl FnMut(),
    ) -> Waited {
        let mut waiter = Waiter::new(Wait::Reply);
        loop {
            if let Some(w) = self.settled(&mut deadline) {
                return w;
            }
            if Instant::now() >= deadline() {
                break;
            }
            match waiter.next(gauges) {
                Plan::Park => break,
                Plan::Yield => {
                    look();
                    if let Some(w) = self.settled(&mut deadline) {
                        return w;
                    }
                    waiter.snooze(Plan::Yield, gauges);
                }
                spin => waiter.snooze(spin, gauges),
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::waiting::policy::TURNS;
    use std::sync::Arc;
    use std::time::Duration;

    /// A connection as the waiting policy sees it: how far its server is, and how
    /// many callers are in flight.
    struct Seen {
        floor: Duration,
        in_flight: usize,
    }

    impl Gauges for Seen {
        fn floor(&self) -> Duration {
            self.floor
        }
        fn in_flight(&self) -> usize {
            self.in_flight
        }
        fn turn(&self) -> Duration {
            Duration::from_micros(1)
        }
        fn record_turn(&self, _: Duration) {}
    }

    const NEAR_ALONE: Seen = Seen {
        floor: Duration::from_micros(30),
        in_flight: 1,
    };
    const NEAR_AMONG_MANY: Seen = Seen {
        floor: Duration::from_micros(30),
        in_flight: 64,
    };
    const FAR: Seen = Seen {
        floor: Duration::from_millis(1),
        in_flight: 4,
    };

    /// Completes `slot` once its waiter has stopped looking (it sleeps), or after a
    /// while.
    fn complete_once_asleep(
        slot: &Arc<ReplySlot>,
        looks: &Arc<std::sync::atomic::AtomicU32>,
    ) -> thread::JoinHandle<()> {
        let (slot, looks) = (slot.clone(), looks.clone());
        thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(5);
            let mut last = u32::MAX;
            loop {
                let now = looks.load(Ordering::SeqCst);
                if now == last || Instant::now() > until {
                    break;
                }
                last = now;
                thread::sleep(Duration::from_millis(20));
            }
            slot.complete(Outcome::One(Value::Int(9)));
        })
    }

    #[test]
    fn completion_wakes_the_waiter() {
        for seen in [NEAR_ALONE, NEAR_AMONG_MANY, FAR] {
            let slot = Arc::new(ReplySlot::for_current_thread());
            let s2 = slot.clone();
            let t = thread::spawn(move || s2.complete(Outcome::One(Value::Int(7))));
            let deadline = Instant::now() + Duration::from_secs(10);
            match slot.wait(&seen, || deadline, || {}) {
                Waited::Ready(Outcome::One(Value::Int(7))) => {}
                _ => panic!("expected the reply"),
            }
            t.join().unwrap();
        }
    }

    #[test]
    fn a_waiter_among_many_yields_a_bounded_number_of_times_then_sleeps_until_its_reply() {
        let slot = Arc::new(ReplySlot::for_current_thread());
        let looks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let t = complete_once_asleep(&slot, &looks);
        let deadline = Instant::now() + Duration::from_secs(10);
        let waited = slot.wait(
            &NEAR_AMONG_MANY,
            || deadline,
            || {
                looks.fetch_add(1, Ordering::SeqCst);
            },
        );
        assert!(matches!(waited, Waited::Ready(Outcome::One(Value::Int(9)))));
        let made = looks.load(Ordering::SeqCst);
        assert!(made > 0, "never took a turn");
        assert!(made <= TURNS, "yielded past its turns");
        t.join().unwrap();
    }

    #[test]
    fn a_waiter_for_a_far_server_sleeps_without_a_look() {
        let slot = Arc::new(ReplySlot::for_current_thread());
        let looks = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let t = complete_once_asleep(&slot, &looks);
        let deadline = Instant::now() + Duration::from_secs(10);
        let waited = slot.wait(
            &FAR,
            || deadline,
            || {
                looks.fetch_add(1, Ordering::SeqCst);
            },
        );
        assert!(matches!(waited, Waited::Ready(Outcome::One(Value::Int(9)))));
        assert_eq!(looks.load(Ordering::SeqCst), 0, "yielded for a far reply");
        t.join().unwrap();
    }

    #[test]
    fn a_reply_after_abandon_is_dropped() {
        let slot = ReplySlot::for_current_thread();
        let past = Instant::now();
        assert!(matches!(
            slot.wait(&NEAR_ALONE, || past, || {}),
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
        assert!(matches!(slot.wait(&FAR, || deadline, || {}), Waited::Lead));
        assert!(t.join().unwrap(), "offered to a waiter");
        assert!(slot.take_lead());
        assert!(!slot.lead_pending(), "taken once");
    }

    #[test]
    fn the_token_is_not_handed_to_a_waiter_that_gave_up_or_was_answered() {
        let gave_up = ReplySlot::for_current_thread();
        let past = Instant::now();
        assert!(matches!(
            gave_up.wait(&FAR, || past, || {}),
            Waited::TimedOut
        ));
        assert!(!gave_up.offer_lead());
        let answered = ReplySlot::for_current_thread();
        answered.complete(Outcome::One(Value::Int(1)));
        assert!(!answered.offer_lead());
        assert!(!answered.lead_pending());
    }
}
