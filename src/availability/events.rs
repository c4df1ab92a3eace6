//! Group events.

use super::member::GroupMember;
use super::target::ProbeResult;

/// Why the active member changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeReason {
    /// The first selection.
    Initial,
    /// A health check failed (or the active member disconnected).
    HealthCheck,
    /// A circuit breaker tripped.
    CircuitBreaker,
    /// A better member came back (failback).
    Failback,
    /// `try_failover_to`.
    Manual,
    /// A member was added.
    MemberAdded,
    /// The active member was removed.
    MemberRemoved,
    /// Weights or latencies changed.
    Rebalance,
    /// A failback check passed or stopped passing: traffic moves to a member that became
    /// eligible, or off a provisional member for an eligible one.
    FailbackCheck,
}

impl ChangeReason {
    /// The variant's name (`HealthCheck`, `CircuitBreaker`, ...), as metrics label it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeReason::Initial => "Initial",
            ChangeReason::HealthCheck => "HealthCheck",
            ChangeReason::CircuitBreaker => "CircuitBreaker",
            ChangeReason::Failback => "Failback",
            ChangeReason::Manual => "Manual",
            ChangeReason::MemberAdded => "MemberAdded",
            ChangeReason::MemberRemoved => "MemberRemoved",
            ChangeReason::Rebalance => "Rebalance",
            ChangeReason::FailbackCheck => "FailbackCheck",
        }
    }
}

/// Something that happened in a group.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GroupEvent {
    /// Traffic moved.
    ActiveChanged {
        /// The member that served before (none at the start).
        previous: Option<GroupMember>,
        /// The member that serves now (none when no member is available).
        current: Option<GroupMember>,
        /// Why.
        reason: ChangeReason,
    },
    /// A member was taken out of rotation or put back.
    MemberHealthChanged {
        /// The member.
        member: GroupMember,
        /// Whether it is healthy now.
        healthy: bool,
    },
    /// A member's failback check reached a different verdict: only `Healthy` makes a
    /// member that is not active eligible to take traffic.
    FailbackCheckChanged {
        /// The member.
        member: GroupMember,
        /// The new verdict.
        result: ProbeResult,
    },
    /// The active member started or stopped serving provisionally: chosen by the
    /// liveness fallback because no live member was eligible by its failback check.
    /// It is left for an eligible member as soon as one exists, and becomes ordinary
    /// (`provisional: false`) once it passes its own failback check.
    ProvisionalChanged {
        /// The member.
        member: GroupMember,
        /// Whether it serves provisionally now.
        provisional: bool,
    },
    /// A member joined.
    MemberAdded(GroupMember),
    /// A member left.
    MemberRemoved(GroupMember),
}
