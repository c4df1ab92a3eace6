//! `Member`: one deployment in a group, with its name, weight, health state and
//! measured latency.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::failback::FailbackState;
use super::health::{HealthCheck, ProbeResult};
use crate::client::Client;
use crate::commands::Database;
use crate::config::Options;
use crate::error::Result;

/// How a member's deployment is given.
#[derive(Clone, Debug)]
enum Spec {
    Text(String),
    Options(Box<Options>),
}

static NEXT_MEMBER: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Inner {
    pub(crate) id: u64,
    spec: Spec,
    name: String,
    weight: AtomicU32,
    pub(crate) health_check: Option<HealthCheck>,
    pub(crate) failback_check: Option<HealthCheck>,
    pub(crate) failback: FailbackState,
    pub(crate) client: OnceLock<Client>,
    pub(crate) database: OnceLock<Database>,
    unhealthy: AtomicBool,
    last_failure: Mutex<Option<Instant>>,
    latency_ns: AtomicU64,
}

/// One deployment of a group (a region): built from a URL, an option string or
/// `Options`, with a name and a weight that can change at run time.
///
/// Builder methods are `with_*` because the plain names are the getters (`name()`,
/// `weight()`), which Rust cannot overload.
///
/// ```
/// use resilient_redis::availability::Member;
/// let east = Member::new("us-east.example:6379").with_name("US East").with_weight(10);
/// assert_eq!(east.name(), "US East");
/// east.set_weight(3);
/// assert_eq!(east.weight(), 3);
/// ```
#[derive(Clone)]
pub struct Member {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.inner.name)
            .field("weight", &self.weight())
            .field("unhealthy", &self.is_unhealthy())
            .field("provisional", &self.is_provisional())
            .finish()
    }
}

impl PartialEq for Member {
    fn eq(&self, other: &Member) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Member {}

impl Member {
    /// A member from a `redis://` URL or an option string (parsed when it joins).
    pub fn new(spec: impl Into<String>) -> Member {
        let spec = spec.into();
        let name = default_name(&spec);
        Member::build(Spec::Text(spec), name)
    }

    /// A member from `Options`.
    pub fn from_options(options: Options) -> Member {
        let name = options
            .endpoints
            .first()
            .map_or_else(|| "member".to_string(), ToString::to_string);
        Member::build(Spec::Options(Box::new(options)), name)
    }

    fn build(spec: Spec, name: String) -> Member {
        Member {
            inner: Arc::new(Inner {
                id: NEXT_MEMBER.fetch_add(1, Ordering::Relaxed),
                spec,
                name,
                weight: AtomicU32::new(1),
                health_check: None,
                failback_check: None,
                failback: FailbackState::default(),
                client: OnceLock::new(),
                database: OnceLock::new(),
                unhealthy: AtomicBool::new(false),
                last_failure: Mutex::new(None),
                latency_ns: AtomicU64::new(0),
            }),
        }
    }

    fn configure(mut self, f: impl FnOnce(&mut Inner)) -> Member {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => log::warn!(
                "member {} is shared already; setting ignored",
                self.inner.name
            ),
        }
        self
    }

    /// Sets the name shown in events and logs.
    pub fn with_name(self, name: impl Into<String>) -> Member {
        let name = name.into();
        self.configure(|i| i.name = name)
    }

    /// Sets the starting weight (higher is preferred; default 1).
    pub fn with_weight(self, weight: u32) -> Member {
        self.configure(|i| i.weight = AtomicU32::new(weight))
    }

    /// Overrides the group's health check for this member.
    pub fn with_health_check(self, check: HealthCheck) -> Member {
        self.configure(|i| i.health_check = Some(check))
    }

    /// Sets this member's failback check (overriding the group's): asked before traffic
    /// moves *to* it, never of it while it serves. Only `Healthy` makes it eligible.
    ///
    /// ```
    /// use resilient_redis::availability::{HealthCheck, LagAwareOptions, Member, RestCredentials};
    /// let east = Member::new("redis-12000.cluster-east.example:12000").with_failback_check(
    ///     HealthCheck::lag_aware(LagAwareOptions::new(|| {
    ///         Some(RestCredentials::new("monitor@example.com", "secret"))
    ///     })),
    /// );
    /// assert!(!east.is_provisional());
    /// ```
    pub fn with_failback_check(self, check: HealthCheck) -> Member {
        self.configure(|i| i.failback_check = Some(check))
    }

    /// Whether it is active only through the liveness fallback: no live member passed
    /// its failback check, so the group serves from the best live one and leaves it for
    /// an eligible member as soon as one exists.
    pub fn is_provisional(&self) -> bool {
        self.inner.failback.is_provisional()
    }

    /// The latest verdict of its failback check since it last stopped being active or
    /// live (`None`: not asked since, or no failback check).
    pub fn failback_result(&self) -> Option<ProbeResult> {
        self.inner.failback.result()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The weight now.
    pub fn weight(&self) -> u32 {
        self.inner.weight.load(Ordering::Relaxed)
    }

    /// Changes the weight; the group re-selects at its next pass.
    pub fn set_weight(&self, weight: u32) {
        self.inner.weight.store(weight, Ordering::Relaxed);
    }

    /// Whether its connection is up.
    pub fn is_connected(&self) -> bool {
        self.inner.client.get().is_some_and(Client::is_connected)
    }

    /// Whether a failed health check or a tripped breaker took it out of rotation.
    pub fn is_unhealthy(&self) -> bool {
        self.inner.unhealthy.load(Ordering::Acquire)
    }

    /// The measured round-trip time (smoothed), once measured.
    pub fn latency(&self) -> Option<Duration> {
        match self.inner.latency_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// Puts it back in rotation now, whatever the failback delay.
    pub fn reset_unhealthy(&self) {
        self.inner.unhealthy.store(false, Ordering::Release);
    }

    /// The member's own client (once it has joined a group).
    pub fn client(&self) -> Option<&Client> {
        self.inner.client.get()
    }

    pub(crate) fn options(&self) -> Result<Options> {
        match &self.inner.spec {
            Spec::Text(s) => Options::parse(s),
            Spec::Options(o) => Ok((**o).clone()),
        }
    }

    /// Flags it unhealthy and records the failure time (every re-mark moves it on).
    pub(crate) fn mark_unhealthy(&self, now: Instant) -> bool {
        *self.inner.last_failure.lock() = Some(now);
        !self.inner.unhealthy.swap(true, Ordering::AcqRel)
    }

    /// Clears the flag after a passing check, when the last failure is old enough.
    pub(crate) fn try_clear(&self, now: Instant, failback_delay: Duration) -> bool {
        if !self.is_unhealthy() {
            return false;
        }
        let last = *self.inner.last_failure.lock();
        if failback_due(last, now, failback_delay) {
            self.inner.unhealthy.store(false, Ordering::Release);
            return true;
        }
        false
    }

    /// Folds one latency sample in (weighted moving average, 1/4 new).
    pub(crate) fn record_latency(&self, sample: Duration) {
        let new = u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX).max(1);
        let old = self.inner.latency_ns.load(Ordering::Relaxed);
        let value = if old == 0 {
            new
        } else {
            old - old / 4 + new / 4
        };
        self.inner.latency_ns.store(value.max(1), Ordering::Relaxed);
    }
}

/// Whether a member whose last failure was at `last` may come back at `now`:
/// inclusive, so a zero delay clears on the same clock tick; a delay too long to add
/// (`Duration::MAX`) never clears by itself: failback is then manual only.
pub(crate) fn failback_due(last: Option<Instant>, now: Instant, delay: Duration) -> bool {
    match last {
        None => true,
        Some(t) => t.checked_add(delay).is_some_and(|due| now >= due),
    }
}

/// The first endpoint of the parsed spec. Never a piece of the raw text: its first
/// item may be `password=...`, and the name shows in events, logs and `status()`.
fn default_name(spec: &str) -> String {
    Options::parse(spec)
        .ok()
        .and_then(|o| o.endpoints.first().map(ToString::to_string))
        .unwrap_or_else(|| "member".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failback_is_inclusive_and_max_means_manual() {
        let t0 = Instant::now();
        assert!(
            failback_due(Some(t0), t0, Duration::ZERO),
            "zero delay: same tick"
        );
        let d = Duration::from_secs(60);
        assert!(!failback_due(Some(t0), t0 + d - Duration::from_nanos(1), d));
        assert!(failback_due(Some(t0), t0 + d, d), "exactly the delay");
        assert!(!failback_due(
            Some(t0),
            t0 + Duration::from_secs(1 << 40),
            Duration::MAX
        ));
        assert!(failback_due(None, t0, Duration::MAX));
    }

    #[test]
    fn re_marking_moves_the_failure_time() {
        let m = Member::new("redis://:secret@h1:6379/0");
        assert_eq!(m.name(), "h1:6379");
        let t0 = Instant::now();
        assert!(m.mark_unhealthy(t0));
        assert!(!m.mark_unhealthy(t0 + Duration::from_secs(50)));
        let delay = Duration::from_secs(60);
        assert!(!m.try_clear(t0 + Duration::from_secs(61), delay));
        assert!(m.try_clear(t0 + Duration::from_secs(110), delay));
        assert!(!m.is_unhealthy());
    }

    #[test]
    fn latency_is_smoothed() {
        let m = Member::new("h:1");
        assert_eq!(m.latency(), None);
        m.record_latency(Duration::from_millis(100));
        m.record_latency(Duration::from_millis(20));
        assert_eq!(m.latency(), Some(Duration::from_millis(80)));
    }
}
