//! Reading replies: decodes frames as they arrive, hands push frames to the push
//! handler, and completes waiters in FIFO order. A frame that belongs to no waiter
//! means the stream is out of step: the connection is failed rather than guessed at.
//!
//! Whoever holds the read token ([`ReadState`]) reads: normally the reader thread, but
//! a caller alone on the connection reads its own reply when the reader thread has
//! stood down (see `direct`). Both run the same code here, so a caller reading for
//! itself also completes other callers' replies and dispatches push frames in order.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::slot::Outcome;
use super::transport::{Polling, ReadHalf};
use super::Shared;
use crate::error::{Error, ErrorKind, FailureKind};
use crate::resp::{Decoder, Value};

/// The read token: the decoder, the socket's read half and a pipelined request's
/// replies collected so far. Held by exactly one reader at a time.
pub(crate) struct ReadState {
    pub(super) decoder: Decoder,
    pub(super) read: ReadHalf,
    partial: Vec<Value>,
    /// Requests in a row completed that were sent by a caller alone on the connection:
    /// the sign that the next one will be too, so the thread stands down.
    pub(super) lone_streak: u32,
    /// Whether the socket has the short read timeout direct readers need.
    pub(super) ticking: bool,
}

impl ReadState {
    pub(super) fn new(decoder: Decoder, read: ReadHalf) -> ReadState {
        ReadState {
            decoder,
            read,
            partial: Vec::new(),
            lone_streak: 0,
            ticking: false,
        }
    }

    /// Between frames: nothing received that a later read would complete.
    pub(super) fn between_frames(&self) -> bool {
        self.decoder.buffered() == 0 && self.partial.is_empty()
    }
}

/// RESP2 delivers pub/sub messages and confirmations as plain arrays whose first
/// element names the kind; a subscribed RESP2 `PING` answers `["pong", ""]`, which is
/// a reply, not a message.
fn is_pubsub_array(frame: &Value) -> bool {
    let Value::Array(items) = frame else {
        return false;
    };
    let Some(kind) = items.first().and_then(Value::as_bytes) else {
        return false;
    };
    matches!(
        kind,
        b"message"
            | b"pmessage"
            | b"smessage"
            | b"subscribe"
            | b"psubscribe"
            | b"ssubscribe"
            | b"unsubscribe"
            | b"punsubscribe"
            | b"sunsubscribe"
    )
}

/// Handles every complete frame already buffered; `false` when the connection failed.
pub(super) fn drain(shared: &Shared, rs: &mut ReadState) -> bool {
    loop {
        match rs.decoder.decode() {
            Ok(Some(frame)) => {
                if !handle(shared, rs, frame) {
                    return false;
                }
            }
            Ok(None) => return true,
            Err(e) => {
                shared.fail(FailureKind::ProtocolFailure, e);
                return false;
            }
        }
    }
}

/// How one socket read ended.
pub(super) enum Read {
    /// Bytes arrived (or the read timed out: a direct reader's tick).
    Progress,
    /// The connection failed; every waiter has been told.
    Failed,
}

/// Reads once from the socket into the decoder; with `poll`, without blocking (a
/// `WouldBlock` is `Progress` with nothing read).
pub(super) fn read_once(shared: &Shared, rs: &mut ReadState, poll: bool) -> Read {
    let result = if poll {
        rs.decoder.read_from(&mut Polling(&mut rs.read))
    } else {
        rs.decoder.read_from(&mut rs.read)
    };
    match result {
        Ok(0) => {
            let e = Error::new(
                ErrorKind::ConnectionClosed,
                "the server closed the connection",
            );
            shared.fail(FailureKind::SocketClosed, e);
            Read::Failed
        }
        Ok(_) => {
            shared
                .last_read_ms
                .store(shared.now_ms(), Ordering::Relaxed);
            Read::Progress
        }
        // The short read timeout a direct reader uses to look at its deadline.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Read::Progress
        }
        Err(e) => {
            shared.fail(FailureKind::SocketFailure, e.into());
            Read::Failed
        }
    }
}

/// One decoded frame: a push goes to the handler, a reply to the oldest waiter.
fn handle(shared: &Shared, rs: &mut ReadState, frame: Value) -> bool {
    if matches!(frame, Value::Push(_)) || (shared.subscriber && is_pubsub_array(&frame)) {
        shared.dispatch_push(frame);
        return true;
    }
    let mut pending = shared.pending.lock();
    let Some(front) = pending.queue.front() else {
        drop(pending);
        if shared.subscriber && frame.is_error() {
            shared.dispatch_push(frame);
            return true;
        }
        let e = Error::new(
            ErrorKind::Protocol,
            "a reply arrived with no request waiting for it",
        );
        shared.fail(FailureKind::ProtocolFailure, e);
        return false;
    };
    let outcome = if front.expected == 1 && rs.partial.is_empty() {
        Outcome::One(frame)
    } else {
        rs.partial.push(frame);
        if rs.partial.len() < front.expected {
            return true;
        }
        Outcome::Many(std::mem::take(&mut rs.partial))
    };
    let Some(done) = pending.queue.pop_front() else {
        return true;
    };
    drop(pending);
    rs.lone_streak = if done.lone {
        rs.lone_streak.saturating_add(1)
    } else {
        0
    };
    if done.caller_work {
        shared.caller_inflight.fetch_sub(1, Ordering::Relaxed);
    }
    done.slot.complete(outcome);
    true
}

/// How long a direct reader polls before blocking: about two loopback round trips.
const POLL_FOR: std::time::Duration = std::time::Duration::from_micros(40);

/// The reader thread: reads while it holds the token; stands down when a caller
/// alone on the connection is about to read its own reply; takes the token back when
/// asked, or when nobody used it for a tick.
pub(super) fn run(shared: Arc<Shared>) {
    loop {
        {
            let mut rs = shared.reading.lock();
            if rs.ticking && shared.set_read_tick(false).is_ok() {
                rs.ticking = false;
            }
            loop {
                if !drain(&shared, &mut rs) {
                    return;
                }
                if shared.stand_down(&mut rs) {
                    break;
                }
                if let Read::Failed = read_once(&shared, &mut rs, false) {
                    return;
                }
            }
        }
        if !shared.wait_stood_down() {
            return;
        }
    }
}

/// A caller alone on the connection reads until its own slot is done (completing
/// anything else that arrives first, in order) or `deadline()` passes, then hands
/// the token back: to nobody when no request is left, to the reader thread otherwise.
///
/// For the first `POLL_FOR` it polls the socket instead of blocking in `recv`: a
/// loopback reply comes back within that on a quiet machine, and a thread that never
/// slept needs no wake-up. Measured (P1, median GET latency against redis-rs): the
/// reader thread waking the caller 0.96x quiet, 1.25x with both cores busy; reading
/// directly with a blocking `recv` 1.02x quiet; polling first 0.75x quiet, 1.04x busy.
pub(super) fn direct(
    shared: &Shared,
    done: &dyn Fn() -> bool,
    mut deadline: impl FnMut() -> Instant,
) {
    let mut rs = shared.reading.lock();
    let poll_until = rs.read.can_poll().then(|| Instant::now() + POLL_FOR);
    loop {
        let now = Instant::now();
        if !drain(shared, &mut rs) || done() || now >= deadline() {
            break;
        }
        let poll = poll_until.is_some_and(|until| now < until);
        if let Read::Failed = read_once(shared, &mut rs, poll) {
            break;
        }
    }
    let mut pending = shared.pending.lock();
    pending.direct_active = false;
    if !pending.queue.is_empty() || !rs.between_frames() {
        // Replies are still owed (or a frame is half read): the thread reads them.
        pending.reader_out = false;
        shared.reader_wake.notify_one();
    }
    drop(pending);
    drop(rs);
}
