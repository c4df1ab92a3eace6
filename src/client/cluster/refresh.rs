//! When the topology is read again: the decision, free of sockets and of the clock (the
//! supervisor passes `now`), so its rules are tested as a table.
//!
//! - A request (`-MOVED`, `-CLUSTERDOWN`, `-READONLY`, a connection lost or restored) is
//!   served by one refresh however many arrive before it starts, and refreshes asked for
//!   this way start at most every [`MIN_SPACING`] (a burst of redirects is one refresh).
//! - While the map is *unsettled* (a slot's owner has no live connection, or a slot has
//!   no owner), the topology is re-read with a short back-off: [`UNSETTLED_FIRST`]
//!   doubling up to [`UNSETTLED_MAX`], and after [`SLOW_AFTER`] of it every
//!   [`SLOW_INTERVAL`]. A dead master stays the owner in every node's view until the
//!   cluster promotes its replica (node timeout plus an election: seconds), and nothing
//!   but re-reading shows the promotion; polling ends when the owner changes or the
//!   node answers again.
//! - Otherwise every [`PERIODIC`], and an `SMIGRATED`'s jittered refresh when its time
//!   comes.

use std::time::{Duration, Instant};

/// How often the topology is re-read when nothing else asks for it.
pub(crate) const PERIODIC: Duration = Duration::from_secs(30);
/// The least time between two refreshes asked for by replies or connection events.
pub(crate) const MIN_SPACING: Duration = Duration::from_millis(50);
/// The first re-read after the map became unsettled.
pub(crate) const UNSETTLED_FIRST: Duration = Duration::from_millis(100);
/// The longest pause between re-reads while the map is unsettled (a promotion is seen
/// within this much of happening).
pub(crate) const UNSETTLED_MAX: Duration = Duration::from_millis(250);
/// After this long unsettled (a master with no replica to promote), re-reads slow down.
pub(crate) const SLOW_AFTER: Duration = Duration::from_secs(30);
/// The pause between re-reads once they slowed down.
pub(crate) const SLOW_INTERVAL: Duration = Duration::from_secs(1);
/// A node that has just become a slot owner is dialled at once instead of after its
/// reconnect back-off, at most this often.
pub(crate) const HURRY_SPACING: Duration = Duration::from_secs(1);

/// What the decision remembers between passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RefreshPlan {
    /// When the last refresh started (`None`: never, so one is due).
    last: Option<Instant>,
    /// Since when the map has been unsettled, and how many refreshes started since.
    unsettled: Option<(Instant, u32)>,
}

impl RefreshPlan {
    /// Records whether the map is unsettled now; returns `Some(unsettled)` when that
    /// changed (polling starts, or ends).
    pub(crate) fn observe(&mut self, now: Instant, unsettled: bool) -> Option<bool> {
        match (unsettled, self.unsettled) {
            (true, None) => self.unsettled = Some((now, 0)),
            (false, Some(_)) => self.unsettled = None,
            _ => return None,
        }
        Some(unsettled)
    }

    /// Records that a refresh started.
    pub(crate) fn started(&mut self, now: Instant) {
        self.last = Some(now);
        if let Some((_, n)) = &mut self.unsettled {
            *n = n.saturating_add(1);
        }
    }

    /// When the next refresh is due (at or before `now`: due now), given whether one
    /// was requested and when an `SMIGRATED`'s refresh is scheduled.
    pub(crate) fn next_due(
        &self,
        now: Instant,
        requested: bool,
        migration_at: Option<Instant>,
    ) -> Instant {
        let Some(last) = self.last else {
            return now;
        };
        let mut due = last + PERIODIC;
        if requested {
            due = due.min(last + MIN_SPACING);
        }
        if let Some(at) = migration_at {
            due = due.min(at);
        }
        if let Some((since, refreshes)) = self.unsettled {
            due =
                due.min(last + unsettled_interval(now.saturating_duration_since(since), refreshes));
        }
        due
    }
}

/// The pause between re-reads of an unsettled map: `UNSETTLED_FIRST` doubling per
/// refresh up to `UNSETTLED_MAX`, then `SLOW_INTERVAL` once unsettled for `SLOW_AFTER`.
pub(crate) fn unsettled_interval(unsettled_for: Duration, refreshes: u32) -> Duration {
    if unsettled_for >= SLOW_AFTER {
        return SLOW_INTERVAL;
    }
    UNSETTLED_FIRST
        .saturating_mul(1u32 << refreshes.min(8))
        .min(UNSETTLED_MAX)
}

/// Whether a node that just became an owner may be dialled now, given when that was
/// last done for it.
pub(crate) fn may_hurry(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|at| now.saturating_duration_since(at) >= HURRY_SPACING)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_unsettled_interval_backs_off_quickly_and_slows_after_a_long_outage() {
        let table = [
            // (unsettled for, refreshes since, interval)
            (ms(0), 0, ms(100)),
            (ms(100), 1, ms(200)),
            (ms(300), 2, ms(250)),
            (ms(5_000), 20, ms(250)),
            (ms(29_999), 100, ms(250)),
            (ms(30_000), 120, ms(1_000)),
            (ms(600_000), u32::MAX, ms(1_000)),
        ];
        for (since, refreshes, want) in table {
            assert_eq!(
                unsettled_interval(since, refreshes),
                want,
                "{since:?} {refreshes}"
            );
        }
    }

    #[test]
    fn the_refresh_plan_as_a_table() {
        let t0 = Instant::now();
        let at = |n: u64| t0 + ms(n);
        struct Row {
            what: &'static str,
            plan: RefreshPlan,
            now: u64,
            requested: bool,
            migration: Option<u64>,
            due: u64,
        }
        let settled = |last: u64| RefreshPlan {
            last: Some(at(last)),
            unsettled: None,
        };
        let unsettled = |last: u64, since: u64, n: u32| RefreshPlan {
            last: Some(at(last)),
            unsettled: Some((at(since), n)),
        };
        let rows = [
            Row {
                what: "never refreshed: due at once",
                plan: RefreshPlan::default(),
                now: 5,
                requested: false,
                migration: None,
                due: 5,
            },
            Row {
                what: "quiet: the periodic one",
                plan: settled(0),
                now: 10,
                requested: false,
                migration: None,
                due: 30_000,
            },
            Row {
                what: "requested right after one started: spaced",
                plan: settled(1_000),
                now: 1_010,
                requested: true,
                migration: None,
                due: 1_050,
            },
            Row {
                what: "requested long after: at once",
                plan: settled(1_000),
                now: 9_000,
                requested: true,
                migration: None,
                due: 1_050,
            },
            Row {
                what: "an SMIGRATED's jittered refresh",
                plan: settled(1_000),
                now: 1_100,
                requested: false,
                migration: Some(1_700),
                due: 1_700,
            },
            Row {
                what: "unsettled, first re-read",
                plan: unsettled(1_000, 1_000, 0),
                now: 1_000,
                requested: false,
                migration: None,
                due: 1_100,
            },
            Row {
                what: "unsettled, third re-read onwards: 250 ms",
                plan: unsettled(4_000, 1_000, 3),
                now: 4_000,
                requested: false,
                migration: None,
                due: 4_250,
            },
            Row {
                what: "unsettled and requested: the sooner",
                plan: unsettled(4_000, 1_000, 3),
                now: 4_010,
                requested: true,
                migration: None,
                due: 4_050,
            },
            Row {
                what: "unsettled for long: every second",
                plan: unsettled(40_000, 1_000, 200),
                now: 40_100,
                requested: false,
                migration: None,
                due: 41_000,
            },
        ];
        for row in rows {
            let due = row
                .plan
                .next_due(at(row.now), row.requested, row.migration.map(at));
            assert_eq!(due, at(row.due), "{}", row.what);
        }
    }

    #[test]
    fn observing_starts_and_ends_polling_and_refreshes_count_while_unsettled() {
        let t0 = Instant::now();
        let mut plan = RefreshPlan::default();
        plan.started(t0);
        assert_eq!(plan.observe(t0, false), None);
        assert_eq!(plan.next_due(t0, false, None), t0 + PERIODIC);
        // The owner's connection is lost.
        assert_eq!(plan.observe(t0 + ms(10), true), Some(true));
        assert_eq!(plan.observe(t0 + ms(20), true), None);
        assert_eq!(plan.next_due(t0 + ms(20), false, None), t0 + ms(100));
        plan.started(t0 + ms(100));
        assert_eq!(plan.observe(t0 + ms(100), true), None);
        assert_eq!(plan.next_due(t0 + ms(100), false, None), t0 + ms(300));
        plan.started(t0 + ms(300));
        assert_eq!(plan.next_due(t0 + ms(300), false, None), t0 + ms(550));
        // The promotion was read: settled, back to the periodic refresh.
        assert_eq!(plan.observe(t0 + ms(560), false), Some(false));
        assert_eq!(
            plan.next_due(t0 + ms(560), false, None),
            t0 + ms(300) + PERIODIC
        );
        // Unsettled again later: the back-off starts over.
        assert_eq!(plan.observe(t0 + ms(9_000), true), Some(true));
        assert_eq!(plan.next_due(t0 + ms(9_000), false, None), t0 + ms(400));
    }

    #[test]
    fn hurrying_a_new_owner_is_rate_limited() {
        let t0 = Instant::now();
        assert!(may_hurry(None, t0));
        assert!(!may_hurry(Some(t0), t0 + ms(999)));
        assert!(may_hurry(Some(t0), t0 + ms(1_000)));
        // A clock that seems to go back never panics and never hurries.
        assert!(!may_hurry(Some(t0 + ms(10)), t0));
    }
}
