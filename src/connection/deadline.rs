//! A call's deadline: fixed once, when the call starts, and handed down through every
//! layer the call passes (group, router, node backlog, connection), so that each bounds
//! the call by the same instant.
//!
//! Why not a `Duration` per layer: a layer that passes on what is left of the
//! caller's timeout lets the next one relax that remainder again from its own start
//! (`effective(left)` is at least the relaxed timeout), so a call that waited in a
//! backlog could take the wait plus a whole relaxed timeout (measured: 3.2 s for a
//! call whose timeout, relaxed, was 2 s). Here relaxation always counts from the
//! call's start: `start + max(timeout, relaxed)`, read whenever a layer checks, so a
//! window that opens while the call waits still extends it (maintenance.md, 3).
//!
//! Owns: the arithmetic of one call's deadline. Must never: read a server's state
//! other than through the `ServerTimeouts` it is given.

use std::time::{Duration, Instant};

use crate::clock::deadline_after;
use crate::maintenance::timeouts::ServerTimeouts;

/// When one call must be over: its start and its unrelaxed timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadline {
    start: Instant,
    timeout: Duration,
}

impl Deadline {
    /// A call that started at `start` with `timeout`.
    pub(crate) fn new(start: Instant, timeout: Duration) -> Deadline {
        Deadline { start, timeout }
    }

    /// A call starting now.
    pub(crate) fn after(timeout: Duration) -> Deadline {
        Deadline::new(Instant::now(), timeout)
    }

    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// The timeout as the caller gave it (unrelaxed).
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The deadline with no maintenance relaxation.
    pub(crate) fn unrelaxed(&self) -> Instant {
        deadline_after(self.start, self.timeout)
    }

    /// The deadline as it applies on a server now: relaxed from the call's start while
    /// a maintenance window is in force there (never lowered by it).
    pub(crate) fn on(&self, timeouts: &ServerTimeouts) -> Instant {
        deadline_after(self.start, timeouts.effective(self.timeout))
    }

    /// The same call given `more` time (a blocking command's block time); `None`
    /// waits without end (`BLPOP … 0`).
    pub(crate) fn extended(&self, more: Option<Duration>) -> Deadline {
        Deadline {
            start: self.start,
            timeout: more.map_or(Duration::MAX, |m| self.timeout.saturating_add(m)),
        }
    }
}

/// What a `Database` knows of a call's deadline before it reaches a router: when it
/// started, and the caller's timeout if one was set (else the serving deployment's
/// command timeout applies, which only the router knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallTimeout {
    pub started: Instant,
    pub timeout: Option<Duration>,
}

impl CallTimeout {
    /// A call starting now.
    pub(crate) fn starting_now(timeout: Option<Duration>) -> CallTimeout {
        CallTimeout {
            started: Instant::now(),
            timeout,
        }
    }

    /// The call's deadline, `default` standing in for a timeout the caller left unset.
    pub(crate) fn deadline(self, default: Duration) -> Deadline {
        Deadline::new(self.started, self.timeout.unwrap_or(default))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::error::MaintenanceKind;
    use crate::maintenance::timeouts::Relaxation;

    const SEC: Duration = Duration::from_secs(1);

    fn relaxed(clock: &ManualClock, to: Duration) -> ServerTimeouts {
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        t.relax(Relaxation {
            until: clock.now() + 30 * SEC,
            timeout: to,
            kind: MaintenanceKind::Migrating,
        });
        t
    }

    #[test]
    fn relaxation_counts_from_the_start_of_the_call_not_from_a_later_layer() {
        let clock = ManualClock::new();
        let start = Instant::now();
        let d = Deadline::new(start, Duration::from_millis(500));
        let plain = ServerTimeouts::new(Arc::new(clock.clone()));
        assert_eq!(d.on(&plain), start + Duration::from_millis(500));
        assert_eq!(d.unrelaxed(), start + Duration::from_millis(500));
        // Relaxed to 2 s: two seconds from the start, however long the call has
        // already waited (a backlog, a redirect) when a layer asks.
        let t = relaxed(&clock, 2 * SEC);
        assert_eq!(d.on(&t), start + 2 * SEC);
        // A relaxed timeout never lowers a longer one.
        let long = Deadline::new(start, 5 * SEC);
        assert_eq!(long.on(&t), start + 5 * SEC);
    }

    #[test]
    fn a_window_that_closes_stops_extending_the_call() {
        let clock = ManualClock::new();
        let start = Instant::now();
        let d = Deadline::new(start, SEC);
        let t = relaxed(&clock, 10 * SEC);
        assert_eq!(d.on(&t), start + 10 * SEC);
        clock.advance(30 * SEC);
        assert_eq!(d.on(&t), start + SEC);
    }

    #[test]
    fn a_block_time_extends_from_the_same_start_and_zero_waits_without_end() {
        let start = Instant::now();
        let d = Deadline::new(start, SEC);
        let e = d.extended(Some(2 * SEC));
        assert_eq!((e.start(), e.timeout()), (start, 3 * SEC));
        let forever = d.extended(None);
        assert_eq!(forever.timeout(), Duration::MAX);
        // Saturates rather than overflowing `Instant`.
        assert!(forever.unrelaxed() > start + 365 * 24 * 3600 * SEC);
    }

    #[test]
    fn an_unset_timeout_takes_the_routers_default_from_the_same_start() {
        let call = CallTimeout::starting_now(None);
        let d = call.deadline(5 * SEC);
        assert_eq!((d.start(), d.timeout()), (call.started, 5 * SEC));
        let set = CallTimeout {
            timeout: Some(SEC),
            ..call
        };
        assert_eq!(set.deadline(5 * SEC).timeout(), SEC);
    }
}
