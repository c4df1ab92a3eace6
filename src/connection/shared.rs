//! What a connection's threads and callers share: the FIFO of waiters, the outgoing
//! buffer, the read state and what the connection measures; and the failure that ends
//! them all at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::reply_slot::{Outcome, ReplySlot};
use super::transport::{ShutdownHandle, WriteHalf};
use super::writing::Outgoing;
use super::{
    census, company, millis, read_token, reader, waiting, wake_board, ConnectionInfo, Deadline,
    FailureHandler, PushHandler, Traffic,
};
use crate::error::{Error, ErrorKind, FailureKind};
use crate::maintenance::timeouts::ServerTimeouts;
use crate::policy::Accumulator;
use crate::resp::Value;

/// A request waiting for its replies.
pub(crate) struct Pending {
    pub(super) slot: Arc<ReplySlot>,
    pub(super) expected: usize,
    /// The number of the write that carries it: the reply floor is timed from when
    /// that write began.
    pub(super) write: u64,
    pub(super) sent_ms: u64,
    /// The call's deadline, counted from the call's start (before any backlog wait),
    /// not from the send.
    pub(super) deadline: Deadline,
    pub(super) traffic: Traffic,
    /// Sent by a caller alone on the connection (see `ReadState::lone_streak`).
    pub(super) lone: bool,
}

/// The FIFO of waiters, and who is reading their replies.
pub(super) struct PendingQueue {
    pub(super) queue: VecDeque<Pending>,
    /// Who reads the replies.
    pub(super) token: read_token::ReadToken,
    /// The next request's place (see `wake_board`).
    pub(super) next_place: u32,
}

pub(crate) struct Shared {
    pub(super) info: ConnectionInfo,
    pub(super) endpoint_text: String,
    pub(super) out: Mutex<Outgoing>,
    pub(super) writer_wake: Condvar,
    /// Wakes callers waiting to write a large frame (used with `out`).
    pub(super) write_done: Condvar,
    pub(super) socket: Mutex<WriteHalf>,
    pub(super) pending: Mutex<PendingQueue>,
    /// The read token (see `reader`).
    pub(super) reading: Mutex<reader::ReadState>,
    /// Where callers sleep for their replies.
    pub(super) board: Arc<wake_board::WakeBoard>,
    /// Wakes a stood-down reader thread (used with `pending`).
    pub(super) reader_wake: Condvar,
    /// Whether a lone caller may read its own reply: not on a subscription connection,
    /// whose pushes are its traffic and belong on the reader thread.
    pub(super) direct_ok: bool,
    pub(super) closed: AtomicBool,
    pub(super) failure: Mutex<Option<FailureKind>>,
    pub(super) shutdown: ShutdownHandle,
    pub(super) epoch: Instant,
    pub(super) last_read_ms: AtomicU64,
    pub(super) last_write_ms: AtomicU64,
    pub(super) caller_inflight: AtomicUsize,
    /// Callers answered and not yet back with their next request.
    pub(super) returning: AtomicUsize,
    /// Buffers taken for writing so far.
    pub(super) flushed: AtomicU64,
    /// When the latest writes began (the reply floor is timed from them).
    pub(super) write_times: waiting::WriteTimes,
    /// How long a yield lasts on this connection now (see `waiting`).
    pub(super) turn: waiting::TurnTime,
    /// How soon replies come at best: how far away the server is (see `waiting`).
    pub(super) floor: waiting::ReplyFloor,
    pub(super) timeouts: Arc<ServerTimeouts>,
    pub(super) company: Arc<company::Company>,
    pub(super) on_push: Option<PushHandler>,
    pub(super) on_failure: Option<FailureHandler>,
    pub(super) subscriber: bool,
    pub(super) breaker: Option<Box<dyn Accumulator>>,
    /// The credentials generation it is on (see `census`).
    pub(super) auth: Option<census::Enrolled>,
}

impl waiting::Gauges for Shared {
    fn floor(&self) -> Duration {
        self.floor.get()
    }

    fn in_flight(&self) -> usize {
        self.caller_inflight.load(Ordering::Relaxed)
    }

    fn turn(&self) -> Duration {
        self.turn.get()
    }

    fn record_turn(&self, took: Duration) {
        self.turn.record(took);
    }
}

impl Shared {
    /// Takes the outgoing buffer for a write: the next write's number, and when it
    /// began (called under `out`, where the buffer is swapped).
    pub(super) fn begin_write(&self) {
        let number = self.flushed.fetch_add(1, Ordering::AcqRel) + 1;
        self.write_times.began(number, self.now_ns());
    }

    /// This connection's nanoseconds (since it opened).
    pub(super) fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    pub(super) fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// How long after its send a request may go unanswered before the connection is
    /// taken for dead, in this connection's milliseconds: its timeout as it applies
    /// now (a relaxable one follows the maintenance window in force), counted from the
    /// send, not from the call's start. A caller that waited out most of its timeout in
    /// a backlog must not make a fresh connection look dead a moment after it sent.
    pub(super) fn silent_limit_ms(&self, p: &Pending) -> u64 {
        let timeout = if p.traffic.relaxable() {
            self.timeouts.effective(p.deadline.timeout())
        } else {
            p.deadline.timeout()
        };
        p.sent_ms.saturating_add(millis(timeout))
    }

    /// When a request's call runs out of time, as it applies now (a relaxable one
    /// follows the maintenance window in force): the instant its caller is told.
    pub(super) fn due(&self, p: &Pending) -> Instant {
        if p.traffic.relaxable() {
            p.deadline.on(&self.timeouts)
        } else {
            p.deadline.unrelaxed()
        }
    }

    pub(super) fn closed_error(&self) -> Error {
        let failure = (*self.failure.lock()).unwrap_or(FailureKind::SocketClosed);
        Error::new(ErrorKind::ConnectionClosed, "the connection is closed")
            .with_endpoint(self.endpoint_text.clone())
            .with_failure(failure)
            .with_maintenance(self.timeouts.maintenance())
    }

    pub(super) fn dispatch_push(&self, push: Value) {
        match &self.on_push {
            Some(handler) => handler(&self.info, push),
            None => log::trace!("push frame on {} with no handler", self.endpoint_text),
        }
    }

    /// Fails the connection once: refuses new requests, wakes both threads, tells the
    /// owner, and fails every waiter. Later calls are no-ops (the first reason wins).
    pub(super) fn fail(&self, kind: FailureKind, error: Error) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        *self.failure.lock() = Some(kind);
        self.out.lock().closed = true;
        self.writer_wake.notify_all();
        self.write_done.notify_all();
        self.shutdown.shutdown();
        // The socket is shut: the server no longer sees these credentials in use.
        if let Some(auth) = &self.auth {
            auth.leave();
        }
        let error = error
            .with_endpoint(self.endpoint_text.clone())
            .with_failure(kind)
            .with_maintenance(self.timeouts.maintenance());
        // The owner hears why before any waiter is failed: a waiter may be a group's
        // health probe, whose failed verdict must not reach the group before the
        // cause (a tripped breaker) does.
        if let Some(handler) = &self.on_failure {
            handler(&self.info, kind, &error);
        }
        let drained = {
            let mut q = self.pending.lock();
            self.reader_wake.notify_all();
            std::mem::take(&mut q.queue)
        };
        for p in drained {
            if p.traffic.is_caller() {
                self.caller_inflight.fetch_sub(1, Ordering::Relaxed);
            }
            p.slot.complete(Outcome::Failed(error.clone()));
        }
        match kind {
            FailureKind::ClosedByClient => log::debug!("{}: closed", self.endpoint_text),
            _ => log::warn!(
                "{}: connection failed ({kind:?}): {error}",
                self.endpoint_text
            ),
        }
    }
}
