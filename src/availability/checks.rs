//! Running checks: each on a short-lived probe thread of its own, under the check's
//! own timeouts, its verdict sent back to the supervisor's inbox. The supervisor never
//! waits on one.

use std::time::{Duration, Instant};

use super::core::{CheckKind, Input};
use super::health::{run_check, HealthCheck};
use super::inbox::{Inbox, Message};
use super::member::GroupMember;
use super::options::GroupOptions;
use super::target::{ProbeResult, ProbeTarget};
use crate::commands::{Cmd, RetryCategory};
use crate::metrics;

/// The health check that applies to `member`: its own, else the group's.
pub(crate) fn health_check(options: &GroupOptions, member: &GroupMember) -> HealthCheck {
    member
        .inner
        .health_check
        .clone()
        .unwrap_or_else(|| options.health_check.clone())
}

/// The failback check that applies to `member`: its own, else the group's.
pub(crate) fn failback_check<'a>(
    options: &'a GroupOptions,
    member: &'a GroupMember,
) -> Option<&'a HealthCheck> {
    member
        .inner
        .failback_check
        .as_ref()
        .or(options.failback_check.as_ref())
}

/// Starts one check of `member` on a probe thread. A verdict always comes back (a
/// member with nothing to probe yet is Inconclusive), so the core never waits for a
/// check that will not report.
pub(crate) fn start(options: &GroupOptions, member: &GroupMember, kind: CheckKind, inbox: Inbox) {
    let (check, label) = match kind {
        CheckKind::Health => (health_check(options, member), "rr-probe"),
        CheckKind::Failback { .. } => match failback_check(options, member) {
            Some(c) => (c.clone(), "rr-failback"),
            None => return,
        },
    };
    let id = member.id();
    let client = member.client().cloned();
    let name = member.name().to_string();
    let report = inbox.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("{label} {name}"))
        .spawn(move || {
            let deployment = client.as_ref().map(|c| c.deployment().clone());
            let result = deployment
                .as_ref()
                .and_then(|d| run_check(&check, &name, d))
                .unwrap_or(ProbeResult::Inconclusive);
            metrics::check_completed(&name, check_label(kind), result.as_str());
            // A failure with the connection down is the connection's to report (with its
            // cause); the core waits for that report.
            let connection_lost = result == ProbeResult::Unhealthy
                && client.as_ref().is_some_and(|c| !c.is_connected());
            let input = match kind {
                CheckKind::Health => Input::Health {
                    id,
                    result,
                    latency: deployment
                        .filter(|_| result == ProbeResult::Healthy)
                        .and_then(|d| sample_latency(&name, &d, check.probe_timeout)),
                    connection_lost,
                },
                CheckKind::Failback { epoch } => Input::Failback { id, epoch, result },
            };
            let _ = report.send(Message::Input(input));
        });
    if let Err(e) = spawned {
        log::warn!("cannot start a probe thread: {e}");
        let verdict = ProbeResult::Inconclusive;
        metrics::check_completed(member.name(), check_label(kind), verdict.as_str());
        // Reported as could-not-tell, so the check can run again.
        let input = match kind {
            CheckKind::Health => Input::Health {
                id,
                result: ProbeResult::Inconclusive,
                latency: None,
                connection_lost: false,
            },
            CheckKind::Failback { epoch } => Input::Failback {
                id,
                epoch,
                result: ProbeResult::Inconclusive,
            },
        };
        let _ = inbox.try_send(Message::Input(input));
    }
}

/// The `check` label of a check's metric.
fn check_label(kind: CheckKind) -> &'static str {
    match kind {
        CheckKind::Health => "health",
        CheckKind::Failback { .. } => "failback",
    }
}

/// Timed `PING`s per latency sample.
const PINGS_PER_SAMPLE: usize = 3;

/// A latency sample: the fastest of a few timed `PING`s, taken only from a member that
/// answers, so a silent member's verdict is not held back by another probe timeout.
/// The fastest, because delays only ever add to a round trip (a reply queued behind
/// callers' traffic, a probe thread scheduled late): the issue 39 run measured a
/// member 1 ms away at 1.3-2.3 ms one `PING` at a time, its nearer rival at
/// 0.5-0.9 ms, close enough to blur which is nearer.
fn sample_latency(
    name: &str,
    deployment: &std::sync::Arc<crate::client::Deployment>,
    timeout: Duration,
) -> Option<Duration> {
    let node = deployment.primary()?;
    let target = ProbeTarget {
        member: name,
        node,
        deployment: deployment.clone(),
    };
    let ping = Cmd::typed("PING", RetryCategory::Always);
    let mut fastest: Option<Duration> = None;
    for _ in 0..PINGS_PER_SAMPLE {
        let started = Instant::now();
        target.command::<String>(&ping, timeout).ok()?;
        let took = started.elapsed();
        fastest = Some(fastest.map_or(took, |f| f.min(took)));
    }
    fastest
}
