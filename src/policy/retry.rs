//! Automatic retries by command safety: which faults are retried (transient ones, by
//! the same classification circuit breakers use), which commands (those whose replay
//! is safe enough: their retry category at or below the policy's maximum), where (the
//! same server, or the member a group failed over to), and when.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::fault::FaultContext;
use crate::clock::{self, Clock};
use crate::command::RetryCategory;

/// Where a retry may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryDecision {
    /// Give up.
    None,
    /// Retry on the same server (after the retry delay).
    SameServer,
    /// Retry only once traffic has moved to another member (groups).
    FailoverServer,
    /// Either: the same server, or another member if the group fails over meanwhile.
    Both,
}

type Decider = Arc<dyn Fn(&RetryPolicy, &FaultContext) -> RetryDecision + Send + Sync>;

/// How `Database::with_retry` re-issues failed operations.
///
/// Defaults: 3 attempts counting the first, fail over after 1, 1 s between attempts
/// plus up to 0.5 s of jitter, wait up to 5 s for a failover, retry commands up to
/// `WriteLastWins` (an `INCR` after an ambiguous failure is never replayed).
///
/// ```
/// use resilient_redis::availability::RetryPolicy;
/// use resilient_redis::RetryCategory;
/// use std::time::Duration;
/// let policy = RetryPolicy::default()
///     .max_attempts(5)
///     .retry_delay(Duration::from_millis(200))
///     .max_retry_category(RetryCategory::ReadOnly);
/// # let _ = policy;
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) max_attempts_before_failover: u32,
    pub(crate) retry_delay: Duration,
    pub(crate) jitter_max: Duration,
    pub(crate) failover_delay: Duration,
    pub(crate) max_retry_category: RetryCategory,
    pub(crate) max_attempts_on_watch_conflict: u32,
    pub(crate) clock: Arc<dyn Clock>,
    decider: Option<Decider>,
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field(
                "max_attempts_before_failover",
                &self.max_attempts_before_failover,
            )
            .field("retry_delay", &self.retry_delay)
            .field("jitter_max", &self.jitter_max)
            .field("failover_delay", &self.failover_delay)
            .field("max_retry_category", &self.max_retry_category)
            .field(
                "max_attempts_on_watch_conflict",
                &self.max_attempts_on_watch_conflict,
            )
            .field("custom_decision", &self.decider.is_some())
            .finish()
    }
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            max_attempts_before_failover: 1,
            retry_delay: Duration::from_secs(1),
            jitter_max: Duration::from_millis(500),
            failover_delay: Duration::from_secs(5),
            max_retry_category: RetryCategory::WriteLastWins,
            max_attempts_on_watch_conflict: 3,
            clock: clock::system(),
            decider: None,
        }
    }
}

impl RetryPolicy {
    /// Attempts in all, counting the first (3).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }
    /// Attempts on the same member before a retry waits for a failover (1).
    pub fn max_attempts_before_failover(mut self, n: u32) -> Self {
        self.max_attempts_before_failover = n;
        self
    }
    /// Pause between attempts on the same server (1 s).
    pub fn retry_delay(mut self, d: Duration) -> Self {
        self.retry_delay = d;
        self
    }
    /// Up to this much random extra pause (0.5 s), so clients do not retry in step.
    pub fn jitter_max(mut self, d: Duration) -> Self {
        self.jitter_max = d;
        self
    }
    /// How long a retry waits for a group to fail over (5 s).
    pub fn failover_delay(mut self, d: Duration) -> Self {
        self.failover_delay = d;
        self
    }
    /// The least safe category retried (`WriteLastWins`).
    pub fn max_retry_category(mut self, c: RetryCategory) -> Self {
        self.max_retry_category = c;
        self
    }
    /// Attempts of an optimistic transaction (`Database::watch`) whose watched keys
    /// changed (3): the closure rebuilds it from fresh reads each time.
    pub fn max_attempts_on_watch_conflict(mut self, n: u32) -> Self {
        self.max_attempts_on_watch_conflict = n.max(1);
        self
    }
    /// The clock delays are measured and waited with (tests use a `ManualClock`).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    /// Replaces the retry decision (`default_decision` stays callable from it).
    pub fn with_decision(
        mut self,
        decide: impl Fn(&RetryPolicy, &FaultContext) -> RetryDecision + Send + Sync + 'static,
    ) -> Self {
        self.decider = Some(Arc::new(decide));
        self
    }

    /// The decision for one failed attempt.
    pub fn can_retry(&self, fault: &FaultContext) -> RetryDecision {
        match &self.decider {
            Some(decide) => decide(self, fault),
            None => self.default_decision(fault),
        }
    }

    /// Transient faults of commands at or below the maximum category: anywhere.
    pub fn default_decision(&self, fault: &FaultContext) -> RetryDecision {
        let category = fault.category.unwrap_or(RetryCategory::Never);
        if !fault.is_transient() || category > self.max_retry_category {
            return RetryDecision::None;
        }
        RetryDecision::Both
    }

    /// The pause before the next attempt on the same server.
    pub(crate) fn pause(&self, jitter_fraction: f64) -> Duration {
        self.retry_delay + self.jitter_max.mul_f64(jitter_fraction.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn fault(kind: ErrorKind, category: RetryCategory) -> FaultContext {
        FaultContext {
            category: Some(category),
            ..FaultContext::from_kind(kind)
        }
    }

    #[test]
    fn only_transient_faults_of_safe_enough_commands_are_retried() {
        let p = RetryPolicy::default();
        use RetryCategory::*;
        assert_eq!(
            p.can_retry(&fault(ErrorKind::Loading, ReadOnly)),
            RetryDecision::Both
        );
        assert_eq!(
            p.can_retry(&fault(ErrorKind::ConnectionClosed, WriteLastWins)),
            RetryDecision::Both
        );
        assert_eq!(
            p.can_retry(&fault(ErrorKind::ConnectionClosed, WriteAccumulating)),
            RetryDecision::None
        );
        assert_eq!(
            p.can_retry(&fault(ErrorKind::WrongType, ReadOnly)),
            RetryDecision::None
        );
        assert_eq!(
            p.can_retry(&fault(ErrorKind::UnknownCommand, Always)),
            RetryDecision::None
        );
        assert_eq!(
            p.can_retry(&fault(ErrorKind::Timeout, Never)),
            RetryDecision::None
        );
        let bold = p.clone().max_retry_category(WriteAccumulating);
        assert_eq!(
            bold.can_retry(&fault(ErrorKind::Timeout, WriteAccumulating)),
            RetryDecision::Both
        );
    }

    #[test]
    fn the_decision_can_be_replaced() {
        let p = RetryPolicy::default().with_decision(|p, f| match f.error_kind {
            Some(ErrorKind::Busy) => RetryDecision::FailoverServer,
            _ => p.default_decision(f),
        });
        assert_eq!(
            p.can_retry(&fault(ErrorKind::Busy, RetryCategory::ReadOnly)),
            RetryDecision::FailoverServer
        );
        assert_eq!(
            p.can_retry(&fault(ErrorKind::Loading, RetryCategory::ReadOnly)),
            RetryDecision::Both
        );
    }

    #[test]
    fn pause_is_delay_plus_bounded_jitter() {
        let p = RetryPolicy::default();
        assert_eq!(p.pause(0.0), Duration::from_secs(1));
        assert_eq!(p.pause(1.0), Duration::from_millis(1500));
        assert_eq!(p.pause(7.0), Duration::from_millis(1500));
    }
}
