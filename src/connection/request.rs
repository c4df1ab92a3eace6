//! A caller's request: queued (and written when few are in flight), waited for as the
//! waiting policy says, read by the caller itself when it holds the read token, and
//! fed to the circuit breaker.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::read_token::Move;
use super::reply_slot::{Outcome, ReplySlot, Waited};
use super::shared::Pending;
use super::waiting::{self, Gauges};
use super::writing::DIRECT_WRITE_MAX;
use super::{read_turns, reader, wake_board, Connection, Deadline, RequestError, Traffic};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::policy::FaultContext;

impl Connection {
    /// Sends one encoded request expecting `replies` replies and waits for them, up to
    /// the call's `deadline` (relaxed from the call's start while a maintenance window
    /// is in force, never from this send: the caller may have waited in a backlog).
    /// `Unsent` means nothing reached the wire (the connection was already closed), so
    /// the request may be sent elsewhere without risk of running twice.
    pub(crate) fn request(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
    ) -> std::result::Result<Outcome, RequestError> {
        let slot = Arc::new(ReplySlot::on_board(self.shared.board.clone()));
        // Counted among the client's waiting callers until the call ends (the lane
        // rule and `few_in_flight` read the count).
        let _company = traffic.is_caller().then(|| self.shared.company.join());
        self.shared.look_before_sending();
        let submitted = self
            .submit(frame, replies, deadline, traffic, slot.clone())
            .map_err(RequestError::Unsent)?;
        if let Some(seen) = submitted.held {
            self.await_flush(seen);
        }
        let timeouts = &self.shared.timeouts;
        let deadline_at = || deadline.on(timeouts);
        // With the token free: read our own reply, as a dedicated connection would,
        // saving the hop from the reader thread. Otherwise: read when the token is
        // handed to us (our reply is the next one owed), or take the reply from
        // whoever reads.
        let mut read = submitted.direct;
        // A caller waits as the connection's waiting policy says (see `waiting`):
        // actively while its server is near, so one found runnable when its reply
        // lands needs no wake-up, and between its yields it reads for the others when
        // nobody is (see `reader::help_read`); parked at once when the server is far.
        let may_help = traffic.can_lead() && self.shared.direct_ok;
        let look = || {
            if may_help {
                reader::help_read(&self.shared);
            }
        };
        let waited = loop {
            if read {
                read_turns::direct(&self.shared, &slot, deadline_at);
            }
            match slot.wait(&*self.shared, deadline_at, look) {
                Waited::Lead => read = slot.take_lead(),
                other => break other,
            }
        };
        // Handed the token as we gave up (or as the connection failed): pass it on.
        // Looked at under `pending`, the lock the hand-over is made under, so a token
        // handed over just as we abandoned is never left with nobody.
        if !matches!(waited, Waited::Ready(_)) || slot.lead_pending() {
            let led = {
                let _order = self.shared.pending.lock();
                slot.take_lead()
            };
            if led {
                let rs = self.shared.reading.lock();
                read_turns::pass_on(&self.shared, &rs);
            }
        }
        let result = match waited {
            // Its own frame could not be written in time: a timeout to its caller,
            // whatever the connection's failure told the others.
            Waited::Ready(Outcome::Failed(_)) if submitted.write_timed_out => {
                Err(self.timed_out(deadline))
            }
            Waited::Ready(outcome) => Ok(outcome),
            // `Lead` never leaves the loop above.
            Waited::Lead | Waited::TimedOut => Err(self.timed_out(deadline)),
        };
        if traffic.is_caller() {
            self.observe(&result);
        }
        result
    }

    /// A caller's timeout, counted from its call's start.
    fn timed_out(&self, deadline: Deadline) -> RequestError {
        let waited = Instant::now().saturating_duration_since(deadline.start());
        RequestError::Failed(
            Error::new(
                ErrorKind::Timeout,
                format!("no reply within {} ms", waited.as_millis()),
            )
            .with_endpoint(self.shared.endpoint_text.clone())
            .with_maintenance(self.shared.timeouts.maintenance()),
        )
    }

    /// Feeds the outcome of caller traffic to the circuit breaker; a trip closes the
    /// connection (the owner reconnects, a group moves traffic away).
    pub(crate) fn observe(&self, result: &std::result::Result<Outcome, RequestError>) {
        let Some(breaker) = &self.shared.breaker else {
            return;
        };
        let fault = match result {
            Ok(Outcome::One(v)) => match v.error_message() {
                Some(m) => FaultContext::from_kind(Error::from_server_reply(m).kind()),
                None => FaultContext::success(),
            },
            Ok(Outcome::Many(_)) => FaultContext::success(),
            Ok(Outcome::Failed(e)) | Err(RequestError::Failed(e)) => FaultContext::from_error(e),
            Err(RequestError::Unsent(_)) => return,
        };
        // Classified before the accumulator sees it: an application error (WRONGTYPE,
        // a script error) is a success that carries its kind aside.
        let fault = if fault.is_fault() && !breaker.is_failure(&fault) {
            fault.as_application_error()
        } else {
            fault
        };
        breaker.observe(&fault);
        if !breaker.is_healthy() {
            log::warn!("{}: circuit breaker tripped", self.shared.endpoint_text);
            self.close(FailureKind::CircuitBreaker);
        }
    }

    /// Writes a frame that gets no reply of its own (SUBSCRIBE and friends, whose
    /// confirmations arrive as push frames).
    pub(crate) fn send_oneway(&self, frame: &[u8]) -> Result<()> {
        let shared = &self.shared;
        let mut out = shared.out.lock();
        if out.closed || out.refusing {
            return Err(shared.closed_error());
        }
        out.buf.extend_from_slice(frame);
        let wake = !out.busy;
        drop(out);
        if wake {
            shared.writer_wake.notify_one();
        }
        Ok(())
    }

    /// Queues a request whose reply nobody waits for by blocking (heartbeats): the slot
    /// can be polled, and the dead-connection check watches it with its own timeout,
    /// never relaxed.
    pub(crate) fn request_detached(
        &self,
        frame: &[u8],
        timeout: Duration,
    ) -> Result<Arc<ReplySlot>> {
        let slot = Arc::new(ReplySlot::for_current_thread());
        self.submit(
            frame,
            1,
            Deadline::after(timeout),
            Traffic::Heartbeat,
            slot.clone(),
        )?;
        Ok(slot)
    }

    /// Queues a request (see [`Submitted`]).
    pub(super) fn submit(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
        slot: Arc<ReplySlot>,
    ) -> Result<Submitted> {
        let shared = &self.shared;
        let can_lead = traffic.can_lead();
        let mut pending = Pending {
            slot,
            expected: replies.max(1),
            write: 0,
            sent_ms: shared.now_ms(),
            deadline,
            traffic,
            lone: false,
        };
        // A large frame's caller writes it itself, when nobody else is writing,
        // within its call's time (see `write_large`).
        let large = (frame.len() > DIRECT_WRITE_MAX).then(|| {
            if traffic.relaxable() {
                deadline.on(&shared.timeouts)
            } else {
                deadline.unrelaxed()
            }
        });
        let mut out = shared.out.lock();
        if let Some(until) = large {
            out = shared.turn_to_write(out, until)?;
        }
        if out.closed || out.refusing {
            return Err(shared.closed_error());
        }
        // The next write takes everything buffered, this frame included (writes take
        // the buffer under `out`, which we hold).
        pending.write = shared.flushed.load(Ordering::Acquire) + 1;
        if traffic.is_caller() {
            shared.caller_inflight.fetch_add(1, Ordering::Relaxed);
        }
        // Registered before the bytes can go out, under the same lock that orders the
        // bytes, so the FIFO of waiters is exactly the order of requests on the wire.
        let submitted = {
            let mut q = shared.pending.lock();
            let alone = q.queue.is_empty();
            // Caller work only: heartbeats and probes never read for themselves.
            pending.lone = alone && can_lead;
            let direct = can_lead && q.token.apply(Move::TakeFree);
            pending.slot.set_place(wake_board::Place(q.next_place));
            q.next_place = q.next_place.wrapping_add(1);
            q.queue.push_back(pending);
            // Nobody is reading, and this caller will not: the reader thread does.
            if !direct && q.token.apply(Move::Summon) {
                shared.reader_wake.notify_one();
            }
            Submitted {
                alone,
                direct,
                held: None,
                write_timed_out: false,
            }
        };
        if let Some(until) = large {
            let mut submitted = submitted;
            submitted.write_timed_out = shared.write_large(out, frame, until);
            return Ok(submitted);
        }
        let alone = submitted.alone;
        if out.busy {
            // Whoever is writing looks at the buffer again when it finishes.
            out.buf.extend_from_slice(frame);
            return Ok(submitted);
        }
        if !(alone || shared.few_in_flight()) || out.buf.len() + frame.len() > DIRECT_WRITE_MAX {
            // Others are in flight: queue for the writer thread, which sends everything
            // queued in one write (a few writes for dozens of frames, where callers
            // writing for themselves made nearly one each).
            out.buf.extend_from_slice(frame);
            drop(out);
            shared.writer_wake.notify_one();
            return Ok(submitted);
        }
        out.buf.extend_from_slice(frame);
        if can_lead
            && waiting::policy::holds_for_cohort(shared.in_flight())
            && shared.others_returning()
        {
            // Callers answered with us are about to send too: the last of them sends
            // all the frames in one write, which the server reads and answers at once.
            // The first to hold a frame into this buffer waits for that write (and
            // sends it if it does not come); the others go on to wait for their
            // replies: one of them waiting is enough.
            let seen = shared.flushed.load(Ordering::Acquire);
            let mut submitted = submitted;
            if out.guarded != Some(seen) {
                out.guarded = Some(seen);
                submitted.held = Some(seen);
            }
            return Ok(submitted);
        }
        // Few in flight: write from this thread, saving the writer's wake-up.
        shared.write_out(out);
        Ok(submitted)
    }
}

/// How a request was queued.
pub(super) struct Submitted {
    /// No other request was in flight.
    pub(super) alone: bool,
    /// The caller reads its own reply (it holds the right to take the read token).
    pub(super) direct: bool,
    /// The frame waits in the buffer for callers answered with this one, and this
    /// caller waits for that write to pass (the write count it waits to see pass).
    pub(super) held: Option<u64>,
    /// A large frame's write ran out of the call's time (the connection is failed).
    pub(super) write_timed_out: bool,
}
