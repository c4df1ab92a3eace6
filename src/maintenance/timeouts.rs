//! Server-scoped timeout state: the relaxation a maintenance notification puts in
//! force for one server, read whenever a timeout is checked (so it also covers commands
//! already in flight and callers already waiting).
//!
//! The window's life: an opening notification opens it (or re-opens it, replacing a
//! tail) for at most `window_max` (the backstop: a closing notification that never
//! arrives must not leave timeouts relaxed for good); a closing notification turns an
//! open window into the post-event tail (`Settling`); the window then simply expires.
//! A backstop expiry gets no tail: nothing told us the event finished, and a tail
//! would defeat the backstop. Why state read at check time rather than a timeout
//! stamped per request: a notification must reach requests already in flight, and
//! stop covering them when the window closes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::clock::Clock;
use crate::config::Options;
use crate::error::MaintenanceKind;

/// The three relaxation settings, resolved from `Options`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RelaxSettings {
    /// What command timeouts are relaxed to, as a floor (`maintRelaxedTimeout`).
    pub relaxed: Duration,
    /// Backstop of a window no closing notification ends (`maintRelaxedWindowMax`).
    pub window_max: Duration,
    /// Tail after a closing notification (`maintPostEventRelaxed`).
    pub tail: Duration,
}

impl RelaxSettings {
    /// Defaults derive from the relaxed timeout in force (3x and 2x, as go-redis), so
    /// raising the relaxed timeout cannot leave the backstop below it.
    pub(crate) fn from_options(o: &Options) -> RelaxSettings {
        let relaxed = o.maint_relaxed_timeout;
        RelaxSettings {
            relaxed,
            window_max: o
                .maint_relaxed_window_max
                .unwrap_or_else(|| relaxed.saturating_mul(3)),
            tail: o
                .maint_post_event_relaxed
                .unwrap_or_else(|| relaxed.saturating_mul(2)),
        }
    }
}

/// One relaxed window.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Relaxation {
    pub until: Instant,
    pub timeout: Duration,
    pub kind: MaintenanceKind,
}

/// Timeout state of one server, shared by all its connections across reconnects.
#[derive(Debug)]
pub(crate) struct ServerTimeouts {
    clock: Arc<dyn Clock>,
    // Fast path: callers read one atomic when nothing is relaxed.
    active: AtomicBool,
    window: Mutex<Option<Relaxation>>,
}

impl ServerTimeouts {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> ServerTimeouts {
        ServerTimeouts {
            clock,
            active: AtomicBool::new(false),
            window: Mutex::new(None),
        }
    }

    #[allow(dead_code)] // for handoffs (part 2), which time their own work by it
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The relaxation in force now, clearing an expired one.
    pub(crate) fn current(&self) -> Option<Relaxation> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let mut w = self.window.lock();
        match *w {
            Some(r) if self.clock.now() < r.until => Some(r),
            Some(_) => {
                *w = None;
                self.active.store(false, Ordering::Release);
                None
            }
            None => None,
        }
    }

    /// A command timeout as it applies now: a relaxed timeout never lowers it.
    pub(crate) fn effective(&self, base: Duration) -> Duration {
        match self.current() {
            Some(r) => base.max(r.timeout),
            None => base,
        }
    }

    /// The announced maintenance in force now.
    pub(crate) fn maintenance(&self) -> MaintenanceKind {
        self.current().map_or(MaintenanceKind::None, |r| r.kind)
    }

    /// Puts a relaxed window in force (replacing any other); returns the one it
    /// replaced, expired or not.
    pub(crate) fn relax(&self, relaxation: Relaxation) -> Option<Relaxation> {
        let mut w = self.window.lock();
        let replaced = w.replace(relaxation);
        self.active.store(true, Ordering::Release);
        replaced
    }

    /// An opening notification: relaxes (or keeps relaxing, re-arming the backstop)
    /// with `kind` in force, even while no command is in flight. Returns the kind that
    /// was in force before (`None` when nothing was), for metrics.
    pub(crate) fn open_window(&self, kind: MaintenanceKind, s: &RelaxSettings) -> MaintenanceKind {
        let now = self.clock.now();
        let before = self.relax(Relaxation {
            until: deadline(now, s.window_max),
            timeout: s.relaxed,
            kind,
        });
        match before {
            Some(r) if now < r.until => r.kind,
            _ => MaintenanceKind::None,
        }
    }

    /// A closing notification: an open window (or tail) becomes the post-event tail.
    /// With nothing open there is nothing to stand down (a completion replayed on
    /// opt-in reports a disruption that ended long ago). Returns whether it did.
    pub(crate) fn close_window(&self, s: &RelaxSettings) -> bool {
        // Under the lock: the interactive and subscription connections' readers may
        // handle notifications for this server at the same moment.
        let now = self.clock.now();
        let mut w = self.window.lock();
        match *w {
            Some(open) if now < open.until => {
                *w = Some(Relaxation {
                    until: deadline(now, s.tail),
                    timeout: open.timeout,
                    kind: MaintenanceKind::Settling,
                });
                self.active.store(true, Ordering::Release);
                true
            }
            _ => false,
        }
    }

    /// Ends relaxation at once.
    #[allow(dead_code)] // for handoffs (part 2)
    pub(crate) fn clear(&self) {
        let mut w = self.window.lock();
        *w = None;
        self.active.store(false, Ordering::Release);
    }
}

/// `now + d`, saturating instead of overflowing (an absurd setting must not panic).
fn deadline(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn relaxation_never_lowers_and_expires() {
        let clock = ManualClock::new();
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        let base = Duration::from_secs(5);
        assert_eq!(t.effective(base), base);
        t.relax(Relaxation {
            until: clock.now() + Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            kind: MaintenanceKind::Moving,
        });
        assert_eq!(t.effective(base), Duration::from_secs(10));
        assert_eq!(
            t.effective(Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        assert_eq!(t.maintenance(), MaintenanceKind::Moving);
        clock.advance(Duration::from_secs(30));
        assert_eq!(t.effective(base), base);
        assert_eq!(t.maintenance(), MaintenanceKind::None);
    }

    fn settings() -> RelaxSettings {
        RelaxSettings {
            relaxed: Duration::from_secs(10),
            window_max: Duration::from_secs(30),
            tail: Duration::from_secs(20),
        }
    }

    #[test]
    fn defaults_derive_from_the_relaxed_timeout_and_explicit_values_win() {
        let mut o = Options::default();
        assert_eq!(RelaxSettings::from_options(&o), settings());
        o.maint_relaxed_timeout = Duration::from_secs(60);
        let s = RelaxSettings::from_options(&o);
        assert_eq!(
            (s.window_max, s.tail),
            (Duration::from_secs(180), Duration::from_secs(120))
        );
        assert!(
            s.window_max > s.relaxed,
            "the backstop is never below the relaxed timeout"
        );
        o.maint_relaxed_window_max = Some(Duration::from_secs(5));
        o.maint_post_event_relaxed = Some(Duration::from_millis(1500));
        let s = RelaxSettings::from_options(&o);
        assert_eq!(
            (s.window_max, s.tail),
            (Duration::from_secs(5), Duration::from_millis(1500))
        );
    }

    #[test]
    fn open_then_close_gives_the_tail_then_nothing() {
        let clock = ManualClock::new();
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        let s = settings();
        let base = Duration::from_secs(1);
        assert!(!t.close_window(&s), "nothing open: nothing to stand down");
        assert_eq!(t.maintenance(), MaintenanceKind::None);
        t.open_window(MaintenanceKind::Migrating, &s);
        assert_eq!(t.effective(base), Duration::from_secs(10));
        clock.advance(Duration::from_secs(25));
        assert!(t.close_window(&s));
        assert_eq!(t.maintenance(), MaintenanceKind::Settling);
        // The tail runs from the close, past the backstop of the opening.
        clock.advance(Duration::from_secs(19));
        assert_eq!(t.effective(base), Duration::from_secs(10));
        clock.advance(Duration::from_secs(1));
        assert_eq!(t.effective(base), base);
        assert_eq!(t.maintenance(), MaintenanceKind::None);
    }

    #[test]
    fn the_backstop_expires_a_window_without_a_tail() {
        let clock = ManualClock::new();
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        let s = settings();
        t.open_window(MaintenanceKind::Moving, &s);
        clock.advance(Duration::from_secs(29));
        assert_eq!(t.maintenance(), MaintenanceKind::Moving);
        clock.advance(Duration::from_secs(1));
        assert_eq!(t.maintenance(), MaintenanceKind::None);
        // A late closing notification finds nothing to turn into a tail.
        assert!(!t.close_window(&s));
        assert_eq!(t.effective(Duration::from_secs(1)), Duration::from_secs(1));
    }

    #[test]
    fn an_opening_during_the_tail_reopens_the_full_window() {
        let clock = ManualClock::new();
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        let s = settings();
        t.open_window(MaintenanceKind::Migrating, &s);
        assert!(t.close_window(&s));
        clock.advance(Duration::from_secs(5));
        t.open_window(MaintenanceKind::FailingOver, &s);
        assert_eq!(t.maintenance(), MaintenanceKind::FailingOver);
        clock.advance(Duration::from_secs(29));
        assert_eq!(t.maintenance(), MaintenanceKind::FailingOver);
    }

    #[test]
    fn opening_says_what_was_in_force_before() {
        let clock = ManualClock::new();
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        let s = settings();
        let m = MaintenanceKind::Migrating;
        assert_eq!(t.open_window(m, &s), MaintenanceKind::None);
        assert_eq!(t.open_window(m, &s), m, "a repeat re-arms the same window");
        assert!(t.close_window(&s));
        assert_eq!(t.open_window(m, &s), MaintenanceKind::Settling);
        clock.advance(Duration::from_secs(30));
        assert_eq!(t.open_window(m, &s), MaintenanceKind::None, "expired");
    }

    #[test]
    fn absurd_settings_saturate() {
        let clock = ManualClock::new();
        let t = ServerTimeouts::new(Arc::new(clock.clone()));
        let s = RelaxSettings {
            relaxed: Duration::MAX,
            window_max: Duration::MAX,
            tail: Duration::MAX,
        };
        t.open_window(MaintenanceKind::Moving, &s);
        assert_eq!(t.effective(Duration::from_secs(1)), Duration::MAX);
        assert!(t.close_window(&s));
    }
}
