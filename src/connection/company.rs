//! How many callers of one client wait for a reply right now, on any of its
//! connections (shared with every connection the client opens).
//!
//! The count tells a node whether every caller can be alone on a connection
//! (`client::lane_rule`), and a connection whether few callers are in flight, so that
//! they write and read for each other (`Shared::few_in_flight`).

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

impl Drop for Present<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}
