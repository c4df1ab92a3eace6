//! De-duplication, at two scopes.
//!
//! - Per server and kind (`SeenIds`): an id already acted on is ignored: a completion
//!   the server replays when a reconnecting connection opts in, a `MOVING` re-sent to a
//!   connection that opts in while its window is open, the copy that arrives on the
//!   subscription connection. Zero is a valid id (measured: ids start at 0 on a fresh
//!   database), so "seen one" is a bit of its own. The key is per kind although the
//!   counter is shared across kinds: within a kind ids are still monotonic, and a
//!   per-kind key cannot mistake one node's earlier event for a replay of a later one.
//! - Per client (`EventRing`): every node broadcasts one event with the same id, so a
//!   three-proxy deployment delivers it three times. A fixed ring of the last 8
//!   (kind, id) pairs raises the public event for the first arrival only. Matched on
//!   equality, not `<=`, so a lagging node's older event that was never seen is still
//!   raised; expired by eviction, since the copies arrive milliseconds apart.

use parking_lot::Mutex;

use super::event::NotificationKind;

#[derive(Clone, Copy, Default)]
struct Seen {
    seen: bool,
    id: u64,
}

/// The last id acted on per kind, for one server.
#[derive(Default)]
pub(crate) struct SeenIds {
    last: Mutex<[Seen; 7]>,
}

impl SeenIds {
    /// Whether `(kind, id)` is new for this server; records it. A frame without an id
    /// is always new (it cannot be told apart from another).
    pub(crate) fn claim(&self, kind: NotificationKind, id: Option<u64>) -> bool {
        let Some(id) = id else { return true };
        let mut last = self.last.lock();
        let slot = &mut last[kind.index()];
        if slot.seen && slot.id == id {
            return false;
        }
        *slot = Seen { seen: true, id };
        true
    }
}

/// How many (kind, id) pairs a client remembers to raise each event once.
pub(crate) const RING_SLOTS: usize = 8;

/// The per-client ring of recently raised events.
#[derive(Default)]
pub(crate) struct EventRing {
    inner: Mutex<Ring>,
}

#[derive(Default)]
struct Ring {
    slots: [Option<(NotificationKind, u64)>; RING_SLOTS],
    next: usize,
}

impl EventRing {
    pub(crate) fn new() -> EventRing {
        EventRing::default()
    }

    /// Whether the public event for `(kind, id)` should be raised (first arrival);
    /// records it, evicting the oldest. A frame without an id is always raised.
    pub(crate) fn claim(&self, kind: NotificationKind, id: Option<u64>) -> bool {
        let Some(id) = id else { return true };
        let mut ring = self.inner.lock();
        if ring.slots.contains(&Some((kind, id))) {
            return false;
        }
        let at = ring.next;
        ring.slots[at] = Some((kind, id));
        ring.next = (at + 1) % RING_SLOTS;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use NotificationKind::*;

    #[test]
    fn per_server_zero_is_a_valid_id_and_kinds_are_separate() {
        let seen = SeenIds::default();
        assert!(seen.claim(Moving, Some(0)));
        assert!(!seen.claim(Moving, Some(0)), "zero is de-duplicated");
        assert!(seen.claim(Migrating, Some(0)), "another kind, its own key");
        assert!(seen.claim(Moving, Some(1)));
        // Only the last id is remembered: nothing else is inferred.
        assert!(seen.claim(Moving, Some(0)));
        assert!(seen.claim(Moving, None));
        assert!(seen.claim(Moving, None));
    }

    #[test]
    fn the_ring_raises_once_matches_on_equality_and_evicts_the_oldest() {
        let ring = EventRing::new();
        assert!(ring.claim(Migrating, Some(5)));
        assert!(!ring.claim(Migrating, Some(5)));
        assert!(!ring.claim(Migrating, Some(5)));
        assert!(ring.claim(Migrated, Some(5)), "same id, other kind");
        // A lagging node's older, unseen id is raised.
        assert!(ring.claim(Migrating, Some(3)));
        assert!(ring.claim(Moving, Some(0)));
        assert!(!ring.claim(Moving, Some(0)));
        for id in 100..(100 + RING_SLOTS as u64) {
            assert!(ring.claim(FailingOver, Some(id)));
        }
        assert!(
            ring.claim(Migrating, Some(5)),
            "evicted after 8 newer events"
        );
        assert!(ring.claim(SMigrated, None));
        assert!(ring.claim(SMigrated, None));
    }
}
