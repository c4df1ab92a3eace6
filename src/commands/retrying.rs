//! The retry loop behind `Database::with_retry`.
//!
//! A failed attempt is retried only when the fault is transient (the classification
//! circuit breakers use), the command's retry category is within the policy, and the
//! policy's decision allows it; in a group, after `max_attempts_before_failover` on
//! one member, a retry waits (up to `failover_delay`) for traffic to move and goes to
//! the new member.

use std::sync::Arc;
use std::time::Duration;

use super::Cmd;
use crate::client::Router;
use crate::clock::jitter_fraction;
use crate::connection::CallTimeout;
use crate::error::{Error, ErrorKind, Result};
use crate::policy::{FaultContext, RetryDecision, RetryPolicy};
use crate::resp::Value;

/// How often a retry looks whether the group has failed over yet.
const FAILOVER_POLL: Duration = Duration::from_millis(10);

pub(crate) fn send(
    router: &dyn Router,
    cmd: &Cmd,
    timeout: Option<Duration>,
    policy: &RetryPolicy,
) -> Result<Value> {
    let mut kinds: Vec<ErrorKind> = Vec::new();
    let mut on_this_member = 0;
    // Set when the decision was "same server": the next attempt goes to the member the
    // last one was made on, even if the group has failed over meanwhile.
    let mut pinned: Option<((u64, String), Arc<dyn Router>)> = None;
    for attempt in 1..=policy.max_attempts {
        let (member, target): (Option<(u64, String)>, &dyn Router) = match &pinned {
            Some((m, r)) => (Some(m.clone()), &**r),
            None => (router.active_member(), router),
        };
        // Each attempt is a call of its own, with the whole timeout.
        let error = match target.send(cmd, CallTimeout::starting_now(timeout)) {
            Ok(reply) => match reply.error_message() {
                // An error reply is final unless it is transient (LOADING, BUSY, ...).
                Some(m) if Error::from_server_reply(m).is_transient() => {
                    Error::from_server_reply(m).with_command(cmd.name())
                }
                _ => return Ok(reply),
            },
            Err(e) => e,
        };
        kinds.push(error.kind());
        on_this_member += 1;
        let fault = FaultContext {
            category: Some(cmd.retry_category()),
            attempt,
            member: member.as_ref().map(|m| m.1.clone()),
            ..FaultContext::from_error(&error)
        };
        let decision = policy.can_retry(&fault);
        if decision == RetryDecision::None {
            return Err(error);
        }
        if attempt == policy.max_attempts {
            return Err(exhausted(error, &kinds));
        }
        pinned = match (&member, decision) {
            (Some(m), RetryDecision::SameServer) => {
                router.member_router(m.0).map(|r| (m.clone(), r))
            }
            _ => None,
        };
        let may_fail_over = matches!(
            decision,
            RetryDecision::FailoverServer | RetryDecision::Both
        );
        if let Some((id, _)) = &member {
            if may_fail_over && on_this_member >= policy.max_attempts_before_failover {
                if wait_for_failover(router, *id, policy) {
                    on_this_member = 0;
                    continue;
                }
                if decision == RetryDecision::FailoverServer {
                    return Err(exhausted(error, &kinds));
                }
            }
        } else if decision == RetryDecision::FailoverServer {
            // Not in a group: there is nowhere else to go.
            return Err(error);
        }
        policy.clock.sleep(policy.pause(jitter_fraction()));
    }
    Err(Error::new(ErrorKind::InvalidInput, "no attempt was made"))
}

/// Runs `attempt` until it succeeds, its fault is not one `policy` retries for a
/// command of `category`, or the attempts run out; the pause between attempts is the
/// policy's. For what carries its own state across attempts (a keyspace walk's page,
/// which re-reads the slot map itself): no group failover is waited for here.
pub(crate) fn attempts<T>(
    policy: &RetryPolicy,
    category: crate::command::RetryCategory,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut kinds = Vec::new();
    for n in 1..=policy.max_attempts {
        let error = match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        kinds.push(error.kind());
        let fault = FaultContext {
            category: Some(category),
            attempt: n,
            ..FaultContext::from_error(&error)
        };
        if policy.can_retry(&fault) == RetryDecision::None {
            return Err(error);
        }
        if n == policy.max_attempts {
            return Err(exhausted(error, &kinds));
        }
        policy.clock.sleep(policy.pause(jitter_fraction()));
    }
    Err(Error::new(ErrorKind::InvalidInput, "no attempt was made"))
}

/// Waits (bounded by `failover_delay`) for the active member to be another one.
fn wait_for_failover(router: &dyn Router, from: u64, policy: &RetryPolicy) -> bool {
    let clock = &policy.clock;
    let deadline = crate::clock::deadline_after(clock.now(), policy.failover_delay);
    loop {
        let seen = router.change_generation();
        if router.active_member().is_some_and(|(id, _)| id != from) {
            return true;
        }
        let before = clock.now();
        if before >= deadline {
            return false;
        }
        // A group wakes us when it changes; the poll (on the policy's clock, which a
        // test may drive by hand) bounds the wait either way.
        match seen {
            // A clock that did not move while we waited is driven by hand: move it.
            Some(g) if !router.wait_change(g, FAILOVER_POLL) && clock.now() == before => {
                clock.sleep(FAILOVER_POLL)
            }
            Some(_) => {}
            None => clock.sleep(FAILOVER_POLL),
        }
    }
}

/// The last error, saying how many attempts were made and why each failed.
fn exhausted(last: Error, kinds: &[ErrorKind]) -> Error {
    let detail = format!(
        "gave up after {} attempts ({}); last: {}",
        kinds.len(),
        kinds
            .iter()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        last.detail()
    );
    last.with_detail(detail)
}
