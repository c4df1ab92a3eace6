//! `GroupOptions`: the settings of a group.

use std::sync::Arc;
use std::time::Duration;

use super::health::HealthCheck;
use crate::clock::{self, Clock};
use crate::policy::CircuitBreaker;

/// Settings of a group.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GroupOptions {
    /// The health check of every member (a member may override it).
    pub health_check: HealthCheck,
    /// The circuit breaker on every member connection.
    pub circuit_breaker: CircuitBreaker,
    /// How long a member must have been free of failures before it is put back in
    /// rotation automatically (0: at once; `Duration::MAX`: only by hand).
    pub failback_delay: Duration,
    /// The failback check of every member (a member may override it): asked of members
    /// that are not active, only `Healthy` makes them eligible. `None` (the default):
    /// every member is eligible and selection is exactly as without the feature.
    pub failback_check: Option<HealthCheck>,
    /// When a member's oldest call in flight has gone this long without a reply byte,
    /// the member gets a health check at once instead of at its next interval (500 ms).
    /// A hung member is then found within this plus one probe timeout (3.5 s with the
    /// defaults), and the calls stuck on it are released to the member serving next.
    /// A slow reply alone never fails anything: only the check's verdict does.
    pub stall_threshold: Duration,
    /// The clock health and failback timing use.
    pub clock: Arc<dyn Clock>,
}

impl Default for GroupOptions {
    fn default() -> GroupOptions {
        GroupOptions {
            health_check: HealthCheck::default(),
            circuit_breaker: CircuitBreaker::default(),
            failback_delay: Duration::ZERO,
            failback_check: None,
            stall_threshold: Duration::from_millis(500),
            clock: clock::system(),
        }
    }
}

impl GroupOptions {
    /// Sets the health check.
    pub fn health_check(mut self, check: HealthCheck) -> Self {
        self.health_check = check;
        self
    }
    /// Sets the circuit breaker.
    pub fn circuit_breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.circuit_breaker = breaker;
        self
    }
    /// Sets the failback delay.
    pub fn failback_delay(mut self, delay: Duration) -> Self {
        self.failback_delay = delay;
        self
    }
    /// Sets the failback check of every member (e.g. [`HealthCheck::lag_aware`]).
    pub fn failback_check(mut self, check: HealthCheck) -> Self {
        self.failback_check = Some(check);
        self
    }
    /// Sets the stall threshold (see [`GroupOptions::stall_threshold`]).
    pub fn stall_threshold(mut self, threshold: Duration) -> Self {
        self.stall_threshold = threshold;
        self
    }
    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}
