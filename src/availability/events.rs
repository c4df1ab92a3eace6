//! Group events.

use super::member::Member;

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
}

/// Something that happened in a group.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum GroupEvent {
    /// Traffic moved.
    ActiveChanged {
        /// The member that served before (none at the start).
        previous: Option<Member>,
        /// The member that serves now (none when no member is available).
        current: Option<Member>,
        /// Why.
        reason: ChangeReason,
    },
    /// A member was taken out of rotation or put back.
    MemberHealthChanged {
        /// The member.
        member: Member,
        /// Whether it is healthy now.
        healthy: bool,
    },
    /// A member joined.
    MemberAdded(Member),
    /// A member left.
    MemberRemoved(Member),
}
