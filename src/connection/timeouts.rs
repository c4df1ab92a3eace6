//! Server-scoped timeout state: the relaxation a maintenance notification puts in
//! force for one server, read whenever a timeout is checked (so it also covers commands
//! already in flight and callers already waiting).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::clock::Clock;
use crate::error::MaintenanceKind;

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

// relax/clear/clock are driven by maintenance notifications.
#[allow(dead_code)]
impl ServerTimeouts {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> ServerTimeouts {
        ServerTimeouts {
            clock,
            active: AtomicBool::new(false),
            window: Mutex::new(None),
        }
    }

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

    /// Puts a relaxed window in force (replacing any other).
    pub(crate) fn relax(&self, relaxation: Relaxation) {
        *self.window.lock() = Some(relaxation);
        self.active.store(true, Ordering::Release);
    }

    /// Ends relaxation at once.
    pub(crate) fn clear(&self) {
        *self.window.lock() = None;
        self.active.store(false, Ordering::Release);
    }
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
}
