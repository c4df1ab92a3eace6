//! How many callers of one client wait for a reply right now, on any of its
//! connections (shared with every connection the client opens).
//!
//! A caller alone on its connection polls its socket rather than block only when no
//! other caller of the client waits: with two callers each alone on a connection
//! (the shared one and a lane), two pollers and the server on two cores take each
//! other's time (measured: 3.6 `recv` per call and 0.6× the throughput of blocking
//! reads, `docs/performance.md`). The same count tells a node whether every caller can
//! be alone on a connection (`client::lane_rule`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The callers of one client waiting for a reply.
#[derive(Debug, Default)]
pub(crate) struct Company {
    waiting: AtomicUsize,
}

impl Company {
    /// Callers waiting now (one about to join not counted yet).
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Counts one caller while it waits; uncounted when the guard drops.
    pub(super) fn join(&self) -> Present<'_> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Present(self)
    }
}

/// One caller counted in its [`Company`].
pub(super) struct Present<'a>(&'a Company);

impl Present<'_> {
    /// Whether this caller is the only one of its client waiting.
    pub(super) fn alone(&self) -> bool {
        self.0.waiting() == 1
    }
}

impl Drop for Present<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}
