//! Who writes: the outgoing buffer, a caller writing it from its own thread, and a
//! frame held for the callers answered with it (see the module documentation of
//! `connection`).

use std::sync::atomic::Ordering;

use super::shared::Shared;
use super::waiting::{self, Gauges};
use super::{Connection, FailureKind};

/// The largest frame a caller alone writes from its own thread: what a fresh
/// connection's socket buffers take at once (16 KiB of send buffer before autotuning),
/// so that write never waits for the server to read. A larger one goes to the writer
/// thread and its caller waits for the reply under its own deadline (measured: an
/// 8 MiB `SET` written by its caller to a server that stopped reading returned 1.48 s
/// after its 500 ms timeout).
pub(super) const DIRECT_WRITE_MAX: usize = 16 * 1024;

/// The bytes waiting to be written, and whether someone is writing.
pub(super) struct Outgoing {
    pub(super) buf: Vec<u8>,
    pub(super) spare: Vec<u8>,
    pub(super) busy: bool,
    pub(super) closed: bool,
    /// No new requests (a handoff drains this connection before closing it): they
    /// come back unsent and go to the connection that replaced it.
    pub(super) refusing: bool,
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
                plan => waiter.snooze(plan),
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
            // A large frame joined it: the writer thread sends those (see submit).
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
        let mut batch = std::mem::replace(&mut out.buf, spare);
        self.flushed.fetch_add(1, Ordering::AcqRel);
        drop(out);
        let result = self.socket.lock().write_all(&batch);
        batch.clear();
        self.out.lock().spare = batch;
        self.finish_write(result);
    }

    /// Ends a write turn; hands anything queued meanwhile to the writer thread.
    pub(super) fn finish_write(&self, result: std::io::Result<()>) {
        self.last_write_ms.store(self.now_ms(), Ordering::Relaxed);
        let mut out = self.out.lock();
        out.busy = false;
        let more = !out.buf.is_empty();
        drop(out);
        match result {
            Ok(()) if more => {
                self.writer_wake.notify_one();
            }
            Ok(()) => {}
            Err(e) => self.fail(FailureKind::SocketFailure, e.into()),
        }
    }
}
