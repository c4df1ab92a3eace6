//! Who writes: the outgoing buffer, a caller writing it from its own thread, and a
//! frame held for the callers answered with it (see the module documentation of
//! `connection`).

use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::shared::Shared;
use super::waiting::{self, Gauges};
use super::{Connection, FailureKind};
use crate::error::{Error, ErrorKind, Result};

/// The largest frame that goes through the outgoing buffer: what a fresh connection's
/// socket buffers take at once (16 KiB of send buffer before autotuning). A larger one
/// is a large frame: never copied, its caller writes it from its own buffer under a
/// send timeout that ends with its call (see `write_large`).
pub(super) const DIRECT_WRITE_MAX: usize = 16 * 1024;

/// The most a connection keeps of a buffer it wrote, for reuse. Only small frames
/// pass through it, so it stays below this unless a burst of them did; a larger one
/// is given back rather than kept for the connection's life.
const KEEP_AT_MOST: usize = 64 * 1024;

/// A fresh outgoing buffer.
pub(super) fn fresh_buffer() -> Vec<u8> {
    Vec::with_capacity(DIRECT_WRITE_MAX)
}

/// A written buffer, emptied for reuse (or replaced by a fresh one when it grew past
/// [`KEEP_AT_MOST`]).
pub(super) fn reuse(mut written: Vec<u8>) -> Vec<u8> {
    if written.capacity() > KEEP_AT_MOST {
        return fresh_buffer();
    }
    written.clear();
    written
}

/// The bytes waiting to be written, and whether someone is writing.
pub(super) struct Outgoing {
    pub(super) buf: Vec<u8>,
    pub(super) spare: Vec<u8>,
    pub(super) busy: bool,
    pub(super) closed: bool,
    /// No new requests (a handoff drains this connection before closing it): they
    /// come back unsent and go to the connection that replaced it.
    pub(super) refusing: bool,
    /// Callers waiting for the socket to write a large frame (see `write_done`).
    pub(super) large_waiting: usize,
    /// The writer thread waits for frames (it sends nothing until woken).
    pub(super) writer_waiting: bool,
    /// The write count a caller holding frames waits to see pass (see
    /// `Connection::await_flush`): frames held into the buffer while it waits are
    /// covered by its wait.
    pub(super) guarded: Option<u64>,
}

impl Connection {
    /// A frame held for callers answered together with ours: waits briefly for the
    /// last of them to send it (as the waiting policy allows), then sends it ourselves.
    pub(super) fn await_flush(&self, seen: u64) {
        let shared = &self.shared;
        let mut waiter = waiting::Waiter::new(waiting::Wait::Cohort);
        loop {
            if shared.flushed.load(Ordering::Acquire) > seen {
                return;
            }
            match waiter.next(&**shared) {
                waiting::Plan::Park => break,
                plan => waiter.snooze(plan, &**shared),
            }
        }
        let out = shared.out.lock();
        if shared.flushed.load(Ordering::Acquire) > seen {
            return;
        }
        shared.returning.store(0, Ordering::Relaxed);
        if out.busy || out.buf.is_empty() || out.closed {
            return;
        }
        if out.buf.len() > DIRECT_WRITE_MAX {
            // Many small frames joined it: the writer thread sends those (see submit).
            drop(out);
            shared.writer_wake.notify_one();
            return;
        }
        shared.write_out(out);
    }
}

impl Shared {
    /// Whether few enough callers are in flight that each is worth serving from its
    /// own thread (writing its frame, holding it for its cohort, reading when handed
    /// the token) rather than through the reader and writer threads.
    ///
    /// Counted on the connection and client-wide: with 64 callers the connection's
    /// own count dips below the bar each time a read answers most of them, and the
    /// first callers back would then write, hold and wait as if alone, taking the
    /// cores the others' replies need.
    pub(super) fn few_in_flight(&self) -> bool {
        waiting::policy::is_few(self.in_flight()) && waiting::policy::is_few(self.company.waiting())
    }

    /// Whether callers answered with us are still to send (counts us back in).
    pub(super) fn others_returning(&self) -> bool {
        self.returning
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .is_ok_and(|before| before > 1)
    }

    /// Writes everything buffered from this thread.
    pub(super) fn write_out(&self, mut out: parking_lot::MutexGuard<'_, Outgoing>) {
        out.busy = true;
        let spare = std::mem::take(&mut out.spare);
        let batch = std::mem::replace(&mut out.buf, spare);
        self.begin_write();
        drop(out);
        let result = self.socket.lock().write_all(&batch);
        self.out.lock().spare = reuse(batch);
        self.finish_write(result);
    }

    /// Waits until nobody is writing, so a large frame can be written from its
    /// caller's buffer (see `write_large`), for as long as its call has; nothing is
    /// queued meanwhile, so a caller out of time leaves with its request unsent.
    pub(super) fn turn_to_write<'a>(
        &self,
        mut out: MutexGuard<'a, Outgoing>,
        until: Instant,
    ) -> Result<MutexGuard<'a, Outgoing>> {
        while out.busy && !out.closed {
            out.large_waiting += 1;
            let timed_out = self.write_done.wait_until(&mut out, until).timed_out();
            out.large_waiting -= 1;
            if timed_out && out.busy {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    "no turn to write a large request within the call's time",
                )
                .with_endpoint(self.endpoint_text.clone()));
            }
        }
        Ok(out)
    }

    /// Writes what is buffered, then a large frame straight from its caller's buffer:
    /// never copied into a buffer of the connection's (one that would grow to the
    /// frame's size, and that the allocator keeps resident after it is freed). The
    /// send is bounded by `until`, the call's deadline: a server that stops reading
    /// does not hold the caller past it. A write cut short leaves the server part of a
    /// frame, so it fails the connection (its callers are told; the owner reconnects).
    ///
    /// Whether the write ran out of time (its caller is then told of a timeout).
    pub(super) fn write_large(
        &self,
        mut out: MutexGuard<'_, Outgoing>,
        frame: &[u8],
        until: Instant,
    ) -> bool {
        out.busy = true;
        let spare = std::mem::take(&mut out.spare);
        let earlier = std::mem::replace(&mut out.buf, spare);
        self.begin_write();
        drop(out);
        let result = {
            let mut socket = self.socket.lock();
            socket
                .write_all_by(&earlier, Some(until))
                .and_then(|()| socket.write_all_by(frame, Some(until)))
        };
        self.out.lock().spare = reuse(earlier);
        let timed_out = result
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::TimedOut);
        self.finish_write(result);
        timed_out
    }

    /// Ends a write turn; hands anything queued meanwhile to the writer thread.
    pub(super) fn finish_write(&self, result: std::io::Result<()>) {
        self.last_write_ms.store(self.now_ms(), Ordering::Relaxed);
        let mut out = self.out.lock();
        out.busy = false;
        let more = !out.buf.is_empty();
        let large = out.large_waiting > 0;
        drop(out);
        if large {
            self.write_done.notify_all();
        }
        match result {
            Ok(()) if more => {
                self.writer_wake.notify_one();
            }
            Ok(()) => {}
            Err(e) => self.fail(FailureKind::SocketFailure, e.into()),
        }
    }
}
