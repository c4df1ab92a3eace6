//! Availability: groups of deployments (Active-Active), members, selection, health
//! checks, circuit breakers, failback (with failback checks such as the lag-aware
//! Redis Enterprise probe), manual failover, and the faults they decide on.
//!
//! Owns: which member serves. Must never: block a caller or another member's checks on
//! one member's probe, or let a slow event consumer delay selection.

mod breaker;
mod events;
mod failback;
mod fault;
mod group;
mod health;
pub mod lag_aware;
mod member;
mod probes;
mod pubsub;
mod retry;
mod router;
mod selection;
mod status;
mod supervisor;

pub use breaker::{Accumulator, BreakerPolicy, CircuitBreaker, CircuitBreakerBuilder};
pub use events::{ChangeReason, GroupEvent};
pub use fault::FaultContext;
pub use group::{Group, GroupOptions};
pub use health::{
    AllSuccess, AnySuccess, HealthCheck, MajoritySuccess, Probe, ProbeCounts, ProbePolicy,
    ProbeResult, ProbeScope,
};
pub use lag_aware::{
    CertificatePins, ClientCertificate, LagAware, LagAwareOptions, LagCheckMode, LagOutcome,
    RestCredentials, RestTrust,
};
pub use member::Member;
pub use probes::{IsConnected, Ping, ProbeTarget, StringSet};
pub use pubsub::{GroupSubscriber, GroupSubscription};
pub use retry::{RetryDecision, RetryPolicy};
pub use status::{GroupStatus, MemberStatus};
