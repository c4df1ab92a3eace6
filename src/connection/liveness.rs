//! Whether a connection still answers: idle and stalled times, the dead-connection
//! check the supervisor runs, the drain before a connection set aside is closed, and a
//! look at a quiet socket before a request goes out on it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::shared::Shared;
use super::{millis, ms, reader, Connection};
use crate::clock::deadline_after;

/// How long a connection goes without traffic before a caller that finds the token
/// free looks at the socket before sending (see `Shared::look_before_sending`).
const QUIET_MS: u64 = 1;
impl Connection {
    /// Time since anything was read or written.
    pub(crate) fn idle_for(&self) -> Duration {
        let s = &self.shared;
        let last = s
            .last_read_ms
            .load(Ordering::Relaxed)
            .max(s.last_write_ms.load(Ordering::Relaxed));
        ms(s.now_ms().saturating_sub(last))
    }

    pub(crate) fn has_pending(&self) -> bool {
        !self.shared.pending.lock().queue.is_empty()
    }

    /// How long the oldest request in flight has gone without a reply byte: the time
    /// since it was sent or since anything was last read, whichever is later; zero
    /// when nothing is in flight. A group checks a member out of turn on this.
    pub(crate) fn stalled_for(&self) -> Duration {
        let s = &self.shared;
        let Some(sent) = s.pending.lock().queue.front().map(|p| p.sent_ms) else {
            return Duration::ZERO;
        };
        let since = sent.max(s.last_read_ms.load(Ordering::Relaxed));
        ms(s.now_ms().saturating_sub(since))
    }

    /// Whether the connection stopped answering: the oldest request's timeout, counted
    /// from its send (as it applies now, relaxed or not; a heartbeat's never relaxed),
    /// has passed, plus `grace`, with nothing read since it was sent. The owner then
    /// stops sending on it and dials a replacement, but lets it drain (see
    /// [`Connection::drained`]): a neighbour's deadline never fails a request whose own
    /// has not passed.
    pub(crate) fn is_unresponsive(&self, grace: Duration) -> bool {
        let s = &self.shared;
        let pending = s.pending.lock();
        let Some(oldest) = pending.queue.front() else {
            return false;
        };
        let now = s.now_ms();
        s.last_read_ms.load(Ordering::Relaxed) <= oldest.sent_ms
            && now > s.silent_limit_ms(oldest).saturating_add(millis(grace))
    }

    /// Whether a connection set aside as unresponsive may be closed now: nothing is
    /// in flight any more, or every request in flight is past its own deadline plus
    /// `grace` (their callers have been told; only abandoned slots remain).
    pub(crate) fn drained(&self, grace: Duration) -> bool {
        let s = &self.shared;
        let now = Instant::now();
        s.pending
            .lock()
            .queue
            .iter()
            .all(|p| now > deadline_after(s.due(p), grace))
    }
}

impl Shared {
    /// On a connection quiet for a while whose token nobody holds (the reader thread
    /// stood down and looks only once per tick), looks at the socket before sending:
    /// a close the server made meanwhile fails the connection now, so the request
    /// comes back unsent and goes to a fresh one, instead of being written into a
    /// closed connection and failing as "may have run".
    pub(super) fn look_before_sending(&self) {
        let now = self.now_ms();
        let last = self
            .last_read_ms
            .load(Ordering::Relaxed)
            .max(self.last_write_ms.load(Ordering::Relaxed));
        if now.saturating_sub(last) < QUIET_MS {
            return;
        }
        let Some(mut rs) = self.reading.try_lock() else {
            return; // someone is reading: it sees the close
        };
        let free = {
            let q = self.pending.lock();
            q.token.is_free()
        };
        if free && rs.read.can_poll() {
            reader::look(self, &mut rs);
        }
    }
}
