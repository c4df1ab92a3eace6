//! Reading replies: decodes frames as they arrive, hands push frames to the push
//! handler, and completes waiters in FIFO order. A frame that belongs to no waiter
//! means the stream is out of step: the connection is failed rather than guessed at.
//!
//! Whoever holds the read token ([`ReadState`]) reads: normally the reader thread, but
//! a caller alone on the connection reads its own reply when the reader thread has
//! stood down (see `read_turns::direct`). Both run the same code here, so a caller reading for
//! itself also completes other callers' replies and dispatches push frames in order.
//! The token says who must read; whoever holds the `reading` lock may: a caller
//! waiting next to the token's holder reads what has arrived when the holder is not
//! reading at that moment (`help_read`).

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::reply_slot::Outcome;
use super::transport::{Polling, ReadHalf};
use super::waiting::{Plan, Wait, Waiter};
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
    /// The read timeout set on the socket (`None`: a blocking read waits for bytes).
    pub(super) read_timeout: Option<Duration>,
    /// When the latest read that brought bytes began a frame (nothing was left half
    /// read before it): the reply floor is sampled from it, once per such read.
    frame_read_at: Option<Instant>,
    /// Socket reads that brought bytes, and the one whose answered callers
    /// `Shared::returning` counts.
    reads: u64,
    counted_read: u64,
    /// Callers answered by this read, woken together when it is handled.
    wakes: super::wake_board::Wakes,
}

impl ReadState {
    pub(super) fn new(decoder: Decoder, read: ReadHalf) -> ReadState {
        ReadState {
            decoder,
            read,
            partial: Vec::new(),
            lone_streak: 0,
            read_timeout: None,
            frame_read_at: None,
            reads: 0,
            counted_read: 0,
            wakes: Default::default(),
        }
    }

    /// Counts a caller just answered as about to send again (`Shared::returning`).
    /// Only the callers answered by the latest read that answered any are expected
    /// back: one answered by an earlier read may have sent its next request on
    /// another connection (a lane) or past the holding path, and counting it would
    /// make the next caller hold its frame for nobody, a whole cohort window.
    fn count_returning(&mut self, returning: &AtomicUsize) {
        if self.counted_read != self.reads {
            self.counted_read = self.reads;
            returning.store(0, Ordering::Relaxed);
        }
        returning.fetch_add(1, Ordering::Relaxed);
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

/// Handles every complete frame already buffered, then wakes the callers it answered
/// together (see `wake_board`); `false` when the connection failed.
pub(super) fn drain(shared: &Shared, rs: &mut ReadState) -> bool {
    let ok = drain_frames(shared, rs);
    shared.board.wake(&mut rs.wakes);
    ok
}

fn drain_frames(shared: &Shared, rs: &mut ReadState) -> bool {
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
    /// Bytes arrived.
    Progress,
    /// Nothing yet: a poll found nothing, or the read timed out (a direct reader's
    /// tick).
    Idle,
    /// The connection failed; every waiter has been told.
    Failed,
}

/// How a read waits for bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ReadMode {
    /// Looks without waiting: nothing there is `Read::Idle`.
    Poll,
    /// Waits for bytes, up to the socket's read timeout (none for the reader thread,
    /// a tick for a caller).
    Block,
}

/// Reads once from the socket into the decoder.
pub(super) fn read_once(shared: &Shared, rs: &mut ReadState, mode: ReadMode) -> Read {
    let began_frame = rs.decoder.buffered() == 0;
    let result = match mode {
        // Even without waiting for bytes, a `recv` sleeps on the socket's lock while
        // a send holds it (see `let_the_send_return`): nothing yet, look again.
        ReadMode::Poll if shared.socket.is_locked() => return Read::Idle,
        ReadMode::Poll => rs.decoder.read_from(&mut Polling(&mut rs.read)),
        ReadMode::Block => {
            let_the_send_return(shared);
            rs.decoder.read_from(&mut rs.read)
        }
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
            if began_frame {
                rs.frame_read_at = Some(Instant::now());
            }
            rs.reads = rs.reads.wrapping_add(1);
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
            Read::Idle
        }
        Err(e) => {
            shared.fail(FailureKind::SocketFailure, e.into());
            Read::Failed
        }
    }
}

/// Waits, as the waiting policy allows, for a send in progress on this socket to
/// return. The kernel holds a TCP socket's lock for a whole send (on loopback that
/// includes delivering to the server), and a `recv` entered meanwhile sleeps on that
/// lock: a context switch, a wake-up, and the core left to halt when nothing else runs
/// there.
fn let_the_send_return(shared: &Shared) {
    let mut waiter = Waiter::new(Wait::SendReturns);
    while shared.socket.is_locked() {
        match waiter.next(shared) {
            Plan::Park => return,
            plan => waiter.snooze(plan, shared),
        }
    }
}

/// Reads what is there without waiting (a push, the close) and handles it.
pub(super) fn look(shared: &Shared, rs: &mut ReadState) {
    if let Read::Progress = read_once(shared, rs, ReadMode::Poll) {
        drain(shared, rs);
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
    if rs.partial.is_empty() {
        if let Some(read_at) = rs.frame_read_at.take() {
            if let Some(began) = shared.write_times.of(front.write) {
                let read_at =
                    u64::try_from(read_at.saturating_duration_since(shared.epoch).as_nanos())
                        .unwrap_or(u64::MAX);
                shared.floor.record(std::time::Duration::from_nanos(
                    read_at.saturating_sub(began),
                ));
            }
        }
    }
    let outcome = if front.expected == 1 && rs.partial.is_empty() {
        Outcome::One(frame)
    } else {
        if rs.partial.is_empty() {
            // The count is ours (the commands we sent): one allocation for a batch.
            rs.partial.reserve_exact(front.expected);
        }
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
    if done.traffic.is_caller() {
        shared.caller_inflight.fetch_sub(1, Ordering::Relaxed);
    }
    if done.traffic.can_lead() {
        rs.count_returning(&shared.returning);
    }
    if let Some(place) = done.slot.complete_deferred(outcome) {
        rs.wakes.add(place);
    }
    true
}

/// A caller waiting for its reply, between two of its yields: when nobody is
/// reading at this moment, reads what has arrived (without waiting) and hands it
/// out, as the token's holder would. The holder stays responsible for reading (it
/// may be yielding, or not yet running); this only saves the replies the wait for
/// the holder's turn on a core, where several callers yield next to it.
pub(super) fn help_read(shared: &Shared) {
    let Some(mut rs) = shared.reading.try_lock() else {
        return;
    };
    if !rs.read.can_poll() {
        return;
    }
    if let Read::Progress = read_once(shared, &mut rs, ReadMode::Poll) {
        drain(shared, &mut rs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::transport::ReadHalf;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn only_the_callers_answered_by_the_latest_read_count_as_returning() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let stream = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let mut rs = ReadState::new(Decoder::new(), ReadHalf::Plain(stream));
        let returning = AtomicUsize::new(0);
        // (reads so far, callers answered, expected count): three answered by one
        // read count three; one answered by the next read counts one, whether or not
        // the three came back (they may have gone to another connection).
        let table = [(1, 3, 3), (2, 1, 1), (2, 1, 2), (5, 1, 1)];
        for (reads, answered, expected) in table {
            rs.reads = reads;
            for _ in 0..answered {
                rs.count_returning(&returning);
            }
            assert_eq!(
                returning.load(Ordering::Relaxed),
                expected,
                "after read {reads}"
            );
        }
    }
}
