//! Availability: groups of deployments (Active-Active), members, selection, health
//! checks, circuit breakers, failback (with failback checks such as the lag-aware
//! Redis Enterprise probe), manual failover, and the faults they decide on.
//!
//! Owns: which member serves. Must never: block a caller or another member's checks on
//! one member's probe, or let a slow event consumer delay selection.

mod builtin_probes;
mod checks;
mod core;
mod events;
mod group;
mod group_router;
mod group_supervisor;
mod health;
mod inbox;
#[cfg(feature = "lag-aware")]
pub mod lag_aware;
mod member;
mod options;
mod pubsub;
mod shared;
mod status;
mod target;

// The breaker, retry and fault policies live in `policy`, below `connection`; their
// public path stays here.
pub use crate::policy::{
    Accumulator, BreakerPolicy, CircuitBreaker, FaultContext, RetryDecision, RetryPolicy,
};

pub use builtin_probes::{IsConnected, KeyWrite, Ping, StringSet};
pub use events::{ChangeReason, GroupEvent};
pub use group::Group;
pub use health::{
    AllSuccess, AnySuccess, HealthCheck, MajoritySuccess, ProbeCounts, ProbePolicy, ProbeScope,
};
#[cfg(feature = "lag-aware")]
pub use lag_aware::{
    CertificatePins, ClientCertificate, LagAware, LagAwareOptions, LagCheckMode, LagOutcome,
    RestCredentials, RestTrust,
};
pub use member::{GroupMember, Member};
pub use options::GroupOptions;
pub use pubsub::{GroupCallbackSubscription, GroupSubscriber, GroupSubscription};
pub use status::{GroupStatus, MemberStatus};
pub use target::{Probe, ProbeResult, ProbeTarget};
