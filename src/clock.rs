//! Time as a dependency: timing logic (back-off, heartbeats, relaxed windows, failback
//! delay) asks a `Clock`, so tests can move time by hand instead of sleeping.
//!
//! Public on purpose: [`GroupOptions::clock`](crate::availability::GroupOptions::clock),
//! [`RetryPolicy::clock`](crate::availability::RetryPolicy::clock) and the circuit
//! breaker's builder take a clock, so an application can test its own failback and
//! retry timing with a [`ManualClock`] instead of sleeping.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A source of `Instant`s, and of waiting.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant.
    fn now(&self) -> Instant;

    /// Waits `d` (a manual clock just moves forward, so tests do not sleep).
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// The real monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that only moves when told to: for tests of timing arithmetic.
///
/// ```
/// use resilient_redis::clock::{Clock, ManualClock};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now() - t0, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<Instant>>);

impl ManualClock {
    /// A manual clock starting now.
    pub fn new() -> ManualClock {
        ManualClock(Arc::new(Mutex::new(Instant::now())))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        *self.0.lock() += by;
    }
}

impl Default for ManualClock {
    fn default() -> ManualClock {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock()
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
    }
}

/// The clock used when none is given.
pub fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A fraction in [0, 1) that differs from call to call and process to process (std's
/// per-process random hash keys over the time): for jitter that keeps a fleet of
/// clients from acting in step. Not for anything that needs real randomness.
pub(crate) fn jitter_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// `start + d`, saturating far in the future instead of overflowing (`BLPOP 0` waits
/// "forever", which `Instant` cannot represent).
pub(crate) fn deadline_after(start: Instant, d: Duration) -> Instant {
    start
        .checked_add(d)
        .unwrap_or_else(|| start + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// Unit tests' way to wait for a condition: polls `cond` every millisecond until it
/// holds or `within` has passed, and says which.
#[cfg(test)]
pub(crate) fn poll_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
