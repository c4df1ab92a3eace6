//! Who reads, turn by turn: the reader thread's loop, a caller reading its own reply,
//! and the moves of the read token between them (see `read_token` for the drawing).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::read_token::{Holder, Move};
use super::reader::{self, Read, ReadMode, ReadState};
use super::reply_slot::ReplySlot;
use super::shared::{PendingQueue, Shared};
use super::waiting::{self, Plan, Wait, Waiter};
use crate::error::{Error, ErrorKind, FailureKind};

/// Lone requests in a row before the reader thread stands down.
const LONE_STREAK: u32 = 2;

/// The reader thread: reads while it holds the token; stands down when a caller
/// alone on the connection is about to read its own reply; takes the token back when
/// asked, or when nobody used it for a tick.
pub(super) fn run(shared: Arc<Shared>) {
    loop {
        {
            let mut rs = shared.reading.lock();
            // The thread blocks until bytes come (a caller may have set a timeout).
            if !shared.read_timeout(&mut rs, None) {
                shared.fail(
                    FailureKind::SocketFailure,
                    Error::new(ErrorKind::Io, "cannot clear the socket's read timeout"),
                );
                return;
            }
            loop {
                if !reader::drain(&shared, &mut rs) {
                    return;
                }
                if shared.stand_down(&mut rs) || promote(&shared) {
                    break;
                }
                if let Read::Failed = reader::read_once(&shared, &mut rs, ReadMode::Block) {
                    return;
                }
            }
        }
        if !shared.wait_stood_down() {
            return;
        }
    }
}

/// A caller holding the token reads until its own slot is done (completing anything
/// else that arrives first, in order) or `deadline()` passes, then hands the token on
/// (see `pass_on`).
///
/// While the waiting policy says the reply is near, it polls the socket instead of
/// blocking in `recv`, yielding between looks (without the read state, so a caller
/// waiting next to it that runs first reads what arrived meanwhile, see `help_read`):
/// a thread that never slept needs no wake-up, nor leaves its core to halt. Then, or
/// at once when the server is far, it blocks in `recv` until bytes come or its
/// deadline passes.
pub(super) fn direct(shared: &Shared, mine: &ReplySlot, mut deadline: impl FnMut() -> Instant) {
    let mut rs = shared.reading.lock();
    let mut waiter = Waiter::new(Wait::Bytes);
    loop {
        if !reader::drain(shared, &mut rs) || Instant::now() >= deadline() || mine.is_done() {
            break;
        }
        let plan = if rs.read.can_poll() {
            waiter.next(shared)
        } else {
            Plan::Park
        };
        let mode = match plan {
            Plan::Park => ReadMode::Block,
            Plan::Spin | Plan::Yield => ReadMode::Poll,
        };
        // A blocking read wakes by the call's deadline at the latest (which a relaxed
        // window may move later: it then blocks again).
        if mode == ReadMode::Block && !shared.read_timeout(&mut rs, Some(time_left(deadline()))) {
            break;
        }
        match reader::read_once(shared, &mut rs, mode) {
            Read::Failed => break,
            Read::Idle if plan == Plan::Yield => {
                parking_lot::MutexGuard::unlocked(&mut rs, || waiter.snooze(plan, shared));
            }
            Read::Idle if plan == Plan::Spin => waiter.snooze(plan, shared),
            Read::Idle | Read::Progress => {}
        }
    }
    pass_on(shared, &rs);
    drop(rs);
}

/// What is left until `deadline`, as a socket read timeout: coarse while far off
/// (whole 100 ms, rounded down, so successive calls set the same value and the socket
/// is not asked again), exact near the end; at least a millisecond.
fn time_left(deadline: Instant) -> Duration {
    const STEP: Duration = Duration::from_millis(100);
    // A call that waits without end (a blocking command's `0`) looks every hour.
    const LONGEST: Duration = Duration::from_secs(3600);
    let left = deadline
        .saturating_duration_since(Instant::now())
        .min(LONGEST);
    let coarse = if left > 2 * STEP {
        STEP * (left.as_millis() / STEP.as_millis()) as u32
    } else {
        left
    };
    coarse.max(Duration::from_millis(1))
}

/// A caller done reading hands the token on: to nobody when nothing is owed, to the
/// caller whose reply comes next when it waits and may read (it was going to be woken
/// for its reply anyway), to the reader thread otherwise.
pub(super) fn pass_on(shared: &Shared, rs: &ReadState) {
    let mut pending = shared.pending.lock();
    if pending.queue.is_empty() && rs.between_frames() {
        pending.token.apply(Move::Release);
        return;
    }
    // A reader out of time leaves its own request at the front: `offer_front` never
    // hands the token to a caller out of time, so it goes to the thread.
    if offer_front(shared, &mut pending, Move::PassToCaller) {
        return;
    }
    // Replies are still owed (or a frame is half read): the thread reads them.
    if pending.token.apply(Move::PassToThread) {
        shared.reader_wake.notify_one();
    }
}

/// Hands the token to the caller of the oldest request with `to_caller` (a pass or a
/// promotion), when that caller waits and may read.
fn offer_front(shared: &Shared, pending: &mut PendingQueue, to_caller: Move) -> bool {
    if shared.closed.load(Ordering::Acquire) {
        return false;
    }
    let Some(front) = pending.queue.front() else {
        return false;
    };
    // Not to a caller out of time: it is about to give up, not to read.
    if !front.traffic.can_lead() || Instant::now() >= shared.due(front) || !front.slot.offer_lead()
    {
        return false;
    }
    pending.token.apply(to_caller)
}

/// The reader thread hands the token to the caller whose reply comes next, so the
/// reply wakes that caller directly instead of this thread and then the caller.
fn promote(shared: &Shared) -> bool {
    if !shared.direct_ok {
        return false;
    }
    // Many in flight: the thread reads batches and wakes each caller as cheaply.
    if !shared.few_in_flight() {
        return false;
    }
    if !shared
        .pending
        .lock()
        .queue
        .front()
        .is_some_and(|p| p.traffic.can_lead())
    {
        return false;
    }
    let mut pending = shared.pending.lock();
    offer_front(shared, &mut pending, Move::Promote)
}

impl Shared {
    /// Stands the reader thread down when the callers it last answered were alone and
    /// nothing else is owed: the next request is likely to come alone too, and its
    /// caller then reads its own reply. Two in a row, not one: with many threads a
    /// queue that empties once in a while would otherwise send the thread back and
    /// forth.
    pub(super) fn stand_down(&self, rs: &mut reader::ReadState) -> bool {
        if !self.direct_ok || rs.lone_streak < LONE_STREAK || !rs.between_frames() {
            return false;
        }
        let mut q = self.pending.lock();
        if !q.queue.is_empty() || self.closed.load(Ordering::Acquire) {
            return false;
        }
        q.token.apply(Move::StandDown);
        rs.lone_streak = 0;
        true
    }

    /// The stood-down reader thread waits to be asked back, or for a tick in which
    /// nobody read directly (an idle connection must still see pushes and the close).
    /// This is a hand-over wait, not a sleep: it ends at once when a request needs it.
    /// `false` when the connection closed.
    pub(super) fn wait_stood_down(&self) -> bool {
        let mut q = self.pending.lock();
        let mut seen = q.token.caller_turns();
        let mut tick = waiting::policy::ReclaimTick::new();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            if q.token.holder() == Holder::Thread {
                return true;
            }
            if self
                .reader_wake
                .wait_for(&mut q, tick.current())
                .timed_out()
            {
                if q.token.apply(Move::Reclaim { seen }) {
                    return true;
                }
                tick.used();
            }
            seen = q.token.caller_turns();
        }
    }

    /// Sets the socket's read timeout, when it differs from the one set: `None` for
    /// the reader thread, which blocks until bytes come; a caller blocking in `recv`
    /// sets what is left of its call (see `reader::direct`). `false` if the socket
    /// refused it.
    pub(super) fn read_timeout(
        &self,
        rs: &mut reader::ReadState,
        timeout: Option<Duration>,
    ) -> bool {
        if rs.read_timeout == timeout {
            return true;
        }
        if self.shutdown.set_read_timeout(timeout).is_err() {
            return false;
        }
        rs.read_timeout = timeout;
        true
    }
}
