//! The group supervisor: the one thread that runs a group's timed work: every member
//! client's heartbeats and reconnects, health checks, latency samples, and
//! re-selection when anything changes.
//!
//! Probes run on short-lived probe threads, one check per member at a time, so a
//! slow or hung member never delays another member's checks, and never a caller.

use std::collections::HashMap;
use std::sync::Weak;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};

use super::events::ChangeReason;
use super::failback;
use super::group::GroupInner;
use super::health::{HealthCheck, ProbeResult};
use super::member::Member;
use super::probes::{run_check, ProbeTarget};
use crate::client::supervisor::{handle_wake, next_wait, tick, Heartbeats, Wake};
use crate::commands::{Cmd, RetryCategory};

/// What one finished check reports.
struct CheckReport {
    result: ProbeResult,
    latency: Option<Duration>,
}

#[derive(Default)]
struct MemberState {
    heartbeats: Heartbeats,
    next_check: Option<Instant>,
    running: Option<Receiver<CheckReport>>,
    connected: bool,
    failback: failback::Runner,
}

pub(crate) fn run(group: Weak<GroupInner>, wake: Receiver<Wake>) {
    let mut states: HashMap<u64, MemberState> = HashMap::new();
    loop {
        let wait = {
            let Some(group) = group.upgrade() else { return };
            if group.closed.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            pass(&group, &mut states)
        };
        match wake.recv_timeout(wait) {
            Ok(Wake::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(w) => {
                let Some(group) = group.upgrade() else { return };
                for m in group.members.read().iter() {
                    if let Some(c) = m.client() {
                        handle_wake(c.deployment(), &w);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// One pass over every member; returns how long to wait before the next.
fn pass(group: &GroupInner, states: &mut HashMap<u64, MemberState>) -> Duration {
    let members = group.members.read().clone();
    states.retain(|id, _| members.iter().any(|m| m.inner.id == *id));
    let mut wait = Duration::from_millis(250);
    let mut reason = None;
    let now = group.options.clock.now();
    for member in &members {
        let Some(client) = member.client() else {
            continue;
        };
        let state = states.entry(member.inner.id).or_default();
        tick(client.deployment(), &mut state.heartbeats);
        wait = wait.min(next_wait(client.deployment()));
        let connected = member.is_connected();
        if connected != state.connected {
            state.connected = connected;
            group.bump();
            let was_active = group.active().as_ref() == Some(member);
            if !connected {
                // Losing the connection is a failure: it starts the failback delay, so
                // a member that keeps dropping does not get traffic back at every
                // reconnect.
                group.member_failed(member, ChangeReason::HealthCheck);
            }
            if !connected && was_active {
                reason = Some(ChangeReason::HealthCheck);
            } else if reason.is_none() {
                reason = Some(ChangeReason::Failback);
            }
        }
        collect(group, member, state);
        let check = member
            .inner
            .health_check
            .clone()
            .unwrap_or_else(|| group.options.health_check.clone());
        if state.running.is_none() && state.next_check.is_none_or(|at| now >= at) {
            state.next_check = crate::connection::deadline_after(now, check.interval).into();
            state.running = start_check(member, check);
        }
        if let Some(at) = state.next_check {
            wait = wait.min(
                at.saturating_duration_since(now)
                    .max(Duration::from_millis(1)),
            );
        }
        let (changed, next) = failback::step(group, member, &mut state.failback, now);
        if changed && reason != Some(ChangeReason::HealthCheck) {
            // A failback verdict is a more specific cause than a member (re)connecting
            // in the same pass; losing the active member stays the headline.
            reason = Some(ChangeReason::FailbackCheck);
        }
        if let Some(next) = next {
            wait = wait.min(next.max(Duration::from_millis(1)));
        }
    }
    group.reselect(reason.unwrap_or(ChangeReason::Rebalance));
    wait
}

/// Applies a finished check's verdict.
fn collect(group: &GroupInner, member: &Member, state: &mut MemberState) {
    let Some(rx) = &state.running else { return };
    match rx.try_recv() {
        Ok(report) => {
            state.running = None;
            if let Some(l) = report.latency {
                member.record_latency(l);
            }
            match report.result {
                ProbeResult::Unhealthy => group.member_failed(member, ChangeReason::HealthCheck),
                ProbeResult::Healthy => group.member_passed(member),
                ProbeResult::Inconclusive => {}
            }
        }
        Err(crossbeam_channel::TryRecvError::Empty) => {}
        Err(crossbeam_channel::TryRecvError::Disconnected) => state.running = None,
    }
}

/// Runs one check on a probe thread; its report comes back on the returned channel.
fn start_check(member: &Member, check: HealthCheck) -> Option<Receiver<CheckReport>> {
    let client = member.client()?.clone();
    let name = member.name().to_string();
    let (tx, rx) = bounded(1);
    let spawned = std::thread::Builder::new()
        .name(format!("rr-probe {name}"))
        .spawn(move || {
            let deployment = client.deployment().clone();
            let Some(node) = deployment.primary() else {
                return;
            };
            let target = ProbeTarget {
                member: &name,
                node,
                deployment: deployment.clone(),
            };
            let Some(result) = run_check(&check, &name, &deployment) else {
                return;
            };
            // A latency sample (one PING, timed) only from a member that answers, so a
            // silent member's verdict is not held back by another probe timeout.
            let latency = (result == ProbeResult::Healthy)
                .then(|| {
                    let started = Instant::now();
                    let ping = Cmd::typed("PING", RetryCategory::Always);
                    target
                        .command::<String>(&ping, check.probe_timeout)
                        .ok()
                        .map(|_| started.elapsed())
                })
                .flatten();
            let _ = tx.send(CheckReport { result, latency });
        });
    match spawned {
        Ok(_) => Some(rx),
        Err(e) => {
            log::warn!("cannot start a probe thread: {e}");
            None
        }
    }
}
