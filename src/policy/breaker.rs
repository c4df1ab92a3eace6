//! Circuit breakers: passive health from the outcome of real traffic, one accumulator
//! per physical connection. A trip closes that connection with
//! `FailureKind::CircuitBreaker`; in a group the member is flagged unhealthy at once.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::fault::FaultContext;
use crate::clock::{self, Clock};

/// The state of one connection's breaker. `observe` runs on the hot path (after every
/// caller request): keep it cheap and thread-safe.
pub trait Accumulator: Send + Sync {
    /// Records one outcome (use `is_failure` to classify it).
    fn observe(&self, fault: &FaultContext);
    /// `false` trips the breaker.
    fn is_healthy(&self) -> bool;
    /// Starts afresh.
    fn reset(&self);
    /// What counts as a failure: transient and connection-level faults and timeouts;
    /// application errors count as successes.
    fn is_failure(&self, fault: &FaultContext) -> bool {
        fault.is_transient()
    }
}

/// Makes one accumulator per physical connection.
pub trait BreakerPolicy: Send + Sync + fmt::Debug {
    /// A fresh accumulator for a new connection.
    fn create_accumulator(&self) -> Box<dyn Accumulator>;
}

/// A circuit breaker setting: the default rolling window, a custom policy, or none.
/// Tuned like every configuration value of the crate, with consuming setters:
///
/// ```
/// use resilient_redis::availability::CircuitBreaker;
/// use std::time::Duration;
/// let strict = CircuitBreaker::default()
///     .failure_rate_threshold(25.0)
///     .minimum_number_of_failures(100)
///     .metrics_window(Duration::from_secs(5));
/// let off = CircuitBreaker::none();
/// # let _ = (strict, off);
/// ```
#[derive(Clone, Debug)]
pub struct CircuitBreaker(Kind);

#[derive(Clone, Debug)]
enum Kind {
    Off,
    RollingWindow(WindowSettings),
    Custom(Arc<dyn BreakerPolicy>),
}

/// The default breaker's thresholds.
#[derive(Clone, Debug)]
struct WindowSettings {
    failure_rate_threshold: f64,
    minimum_number_of_failures: u64,
    metrics_window: Duration,
    clock: Arc<dyn Clock>,
}

impl Default for WindowSettings {
    fn default() -> WindowSettings {
        WindowSettings {
            failure_rate_threshold: 10.0,
            minimum_number_of_failures: 1000,
            metrics_window: Duration::from_secs(2),
            clock: clock::system(),
        }
    }
}

impl Default for CircuitBreaker {
    /// 10 % failures, at least 1000 of them, in a 2 s rolling window.
    fn default() -> CircuitBreaker {
        CircuitBreaker(Kind::RollingWindow(WindowSettings::default()))
    }
}

impl CircuitBreaker {
    /// No breaker at all.
    pub fn none() -> CircuitBreaker {
        CircuitBreaker(Kind::Off)
    }

    /// A user policy.
    pub fn custom(policy: Arc<dyn BreakerPolicy>) -> CircuitBreaker {
        CircuitBreaker(Kind::Custom(policy))
    }

    /// Trip above this failure rate, in percent (10).
    ///
    /// This setter and the three after it tune the default rolling-window breaker;
    /// on [`none`](Self::none) or [`custom`](Self::custom) they start from the default
    /// rolling window.
    pub fn failure_rate_threshold(self, percent: f64) -> Self {
        self.tune(|w| w.failure_rate_threshold = percent)
    }

    /// ...but only once this many failures were seen in the window (1000).
    pub fn minimum_number_of_failures(self, n: u64) -> Self {
        self.tune(|w| w.minimum_number_of_failures = n)
    }

    /// The rolling window (2 s).
    pub fn metrics_window(self, window: Duration) -> Self {
        self.tune(|w| w.metrics_window = window)
    }

    /// The clock the window is measured with (tests use a `ManualClock`).
    pub fn clock(self, clock: Arc<dyn Clock>) -> Self {
        self.tune(|w| w.clock = clock)
    }

    fn tune(self, f: impl FnOnce(&mut WindowSettings)) -> Self {
        let mut settings = match self.0 {
            Kind::RollingWindow(settings) => settings,
            Kind::Off | Kind::Custom(_) => WindowSettings::default(),
        };
        f(&mut settings);
        CircuitBreaker(Kind::RollingWindow(settings))
    }

    /// The factory of per-connection accumulators, none when the breaker is off.
    pub(crate) fn policy(&self) -> Option<Arc<dyn BreakerPolicy>> {
        match &self.0 {
            Kind::Off => None,
            Kind::RollingWindow(settings) => Some(Arc::new(RollingWindowPolicy(settings.clone()))),
            Kind::Custom(policy) => Some(policy.clone()),
        }
    }
}

#[derive(Debug)]
struct RollingWindowPolicy(WindowSettings);

impl BreakerPolicy for RollingWindowPolicy {
    fn create_accumulator(&self) -> Box<dyn Accumulator> {
        Box::new(RollingWindow {
            settings: self.0.clone(),
            state: Mutex::new(Buckets::new(self.0.clock.now())),
        })
    }
}

/// The window is cut into this many buckets that age out one by one.
const BUCKETS: usize = 10;

struct Buckets {
    /// (successes, failures) per bucket; `start` is when bucket `head` began.
    counts: [(u64, u64); BUCKETS],
    head: usize,
    start: Instant,
}

impl Buckets {
    fn new(now: Instant) -> Buckets {
        Buckets {
            counts: [(0, 0); BUCKETS],
            head: 0,
            start: now,
        }
    }

    /// Moves the head forward to the bucket `now` falls in, clearing aged-out ones.
    fn advance(&mut self, now: Instant, bucket: Duration) {
        let elapsed = now.saturating_duration_since(self.start);
        let steps =
            (elapsed.as_nanos() / bucket.as_nanos().max(1)).min(BUCKETS as u128 + 1) as usize;
        if steps == 0 {
            return;
        }
        for _ in 0..steps.min(BUCKETS) {
            self.head = (self.head + 1) % BUCKETS;
            self.counts[self.head] = (0, 0);
        }
        self.start = if steps > BUCKETS {
            now
        } else {
            self.start + bucket * steps as u32
        };
    }

    fn totals(&self) -> (u64, u64) {
        self.counts
            .iter()
            .fold((0, 0), |(s, f), (bs, bf)| (s + bs, f + bf))
    }
}

struct RollingWindow {
    settings: WindowSettings,
    state: Mutex<Buckets>,
}

impl RollingWindow {
    fn bucket(&self) -> Duration {
        (self.settings.metrics_window / BUCKETS as u32).max(Duration::from_millis(1))
    }
}

impl Accumulator for RollingWindow {
    fn observe(&self, fault: &FaultContext) {
        let failed = self.is_failure(fault);
        let now = self.settings.clock.now();
        let mut st = self.state.lock();
        st.advance(now, self.bucket());
        let head = st.head;
        if failed {
            st.counts[head].1 += 1;
        } else {
            st.counts[head].0 += 1;
        }
    }

    fn is_healthy(&self) -> bool {
        let now = self.settings.clock.now();
        let mut st = self.state.lock();
        st.advance(now, self.bucket());
        let (ok, failed) = st.totals();
        let total = ok + failed;
        if failed < self.settings.minimum_number_of_failures || total == 0 {
            return true;
        }
        (failed as f64 * 100.0 / total as f64) <= self.settings.failure_rate_threshold
    }

    fn reset(&self) {
        *self.state.lock() = Buckets::new(self.settings.clock.now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::error::ErrorKind;

    fn breaker(clock: &ManualClock, min: u64) -> Box<dyn Accumulator> {
        let b = CircuitBreaker::default()
            .minimum_number_of_failures(min)
            .clock(Arc::new(clock.clone()));
        b.policy().unwrap().create_accumulator()
    }

    #[test]
    fn trips_on_rate_and_count_together() {
        let clock = ManualClock::new();
        let acc = breaker(&clock, 10);
        for _ in 0..9 {
            acc.observe(&FaultContext::from_kind(ErrorKind::Timeout));
        }
        assert!(acc.is_healthy(), "9 failures are under the minimum");
        acc.observe(&FaultContext::from_kind(ErrorKind::Timeout));
        assert!(!acc.is_healthy(), "10 failures at 100 %");
        acc.reset();
        assert!(acc.is_healthy());
        // 10 failures among 200 successes is 4.8 %: under the 10 % threshold.
        for _ in 0..200 {
            acc.observe(&FaultContext::success());
        }
        for _ in 0..10 {
            acc.observe(&FaultContext::from_kind(ErrorKind::ConnectionClosed));
        }
        assert!(acc.is_healthy());
    }

    #[test]
    fn application_errors_count_as_successes() {
        let clock = ManualClock::new();
        let acc = breaker(&clock, 1);
        for _ in 0..100 {
            acc.observe(&FaultContext::from_kind(ErrorKind::WrongType));
        }
        assert!(acc.is_healthy());
    }

    #[test]
    fn failures_age_out_of_the_window() {
        let clock = ManualClock::new();
        let acc = breaker(&clock, 5);
        for _ in 0..4 {
            acc.observe(&FaultContext::from_kind(ErrorKind::Timeout));
        }
        clock.advance(Duration::from_millis(2500));
        for _ in 0..4 {
            acc.observe(&FaultContext::from_kind(ErrorKind::Timeout));
        }
        assert!(acc.is_healthy(), "the first four left the 2 s window");
        acc.observe(&FaultContext::from_kind(ErrorKind::Timeout));
        assert!(!acc.is_healthy());
    }
}
