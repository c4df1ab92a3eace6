//! The handoff worker of one node (`rr-handoff <endpoint>`): started by the supervisor
//! when the node's inbox has a `MOVING` or `MIGRATED`, it does the waiting (jitter, DNS
//! polls, the drain) and the recycle, then ends. Never a reader or writer thread, and
//! never the supervisor's own, so no node's heartbeats wait for another node's DNS.
//!
//! The recycle is make-before-break: the replacement connection is opened and
//! installed first, the old one takes no new requests (they go to the replacement),
//! caller work already sent on it is drained, bounded by what is left of the window
//! (the server closes it at the end regardless, so draining strictly dominates), and
//! only then is it closed, reported as `FailureKind::MaintenanceHandoff`. The
//! subscription connection is closed the same way and re-opened by the supervisor,
//! which re-subscribes and resolves again (the retiring address tried last).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Task;
use crate::client::cluster::ClusterState;
use crate::client::events::{ClientEvent, EventBus};
use crate::client::supervisor::jitter_fraction;
use crate::client::Node;
use crate::clock::{self, deadline_after};
use crate::config::Options;
use crate::connection::Connection;
use crate::error::{FailureKind, Result};
use crate::maintenance::handoff::{decide_handoff, jitter, poll_interval};
use crate::maintenance::timeouts::RelaxSettings;
use crate::maintenance::{
    AdvertisedAddressProbe, HandoffDecision, HandoffOutcome, HandoffReport, NotificationKind,
};
use crate::metrics;
use crate::resolve;

/// How long after its window an address a `MOVING` retired is still tried last: the
/// server closes at +0.7 to +4.1 s past the window and DNS was once seen moving 3 s
/// after the close.
const RETIRING_GRACE: Duration = Duration::from_secs(10);
/// The drain bound when no window gives one (`MIGRATED`: the silent close was measured
/// ~13 s after the address left DNS); the same bound as a retiring cluster node.
const DRAIN_WITHOUT_WINDOW: Duration = Duration::from_secs(5);
/// The least drain a late decision still gets: the server was measured closing 0.7 s
/// or more after the window, and closing with requests in flight fails them for sure.
const DRAIN_FLOOR: Duration = Duration::from_millis(500);
/// How often the drain looks at the caller work left (on this worker, never a reader).
const DRAIN_POLL: Duration = Duration::from_millis(2);

/// What a worker needs of its deployment.
pub(crate) struct Ctx {
    pub options: Arc<Options>,
    pub events: Arc<EventBus<ClientEvent>>,
    pub cluster: Option<Arc<ClusterState>>,
}

/// Starts the worker of `node` (the supervisor calls this once `claim_worker` agreed).
pub(crate) fn spawn(node: Arc<Node>, ctx: Ctx) {
    let name = format!("rr-handoff {}", node.endpoint);
    let n = node.clone();
    if let Err(e) = std::thread::Builder::new()
        .name(name)
        .spawn(move || run(&n, &ctx))
    {
        log::warn!("{}: cannot start the handoff worker: {e}", node.endpoint);
        node.maintenance.worker_failed();
    }
}

fn run(node: &Node, ctx: &Ctx) {
    while let Some((task, generation)) = node.maintenance.next_task() {
        let report = match task {
            Task::Moving {
                sequence,
                window,
                new_endpoint,
                received,
                peer,
            } => {
                let mut report = report(node, NotificationKind::Moving, sequence, peer);
                moving(
                    node,
                    ctx,
                    &mut report,
                    (window, received),
                    new_endpoint,
                    generation,
                );
                report.took = received.elapsed();
                report
            }
            Task::Migrated {
                trigger,
                sequence,
                received,
            } => {
                let mut report = report(node, trigger, sequence, None);
                migrated(node, ctx, &mut report, generation);
                report.took = received.elapsed();
                report
            }
        };
        log::info!("maintenance handoff: {report}");
        metrics::handoff_finished(
            &report.endpoint.host,
            report.endpoint.port,
            report.trigger.as_str(),
            report.outcome.as_str(),
            report.recycle_label(),
            report.took,
        );
        node.maintenance.finish(&report);
        ctx.events.publish(ClientEvent::Handoff(report));
    }
}

fn report(
    node: &Node,
    trigger: NotificationKind,
    sequence: Option<u64>,
    peer: Option<SocketAddr>,
) -> HandoffReport {
    HandoffReport {
        endpoint: node.endpoint.clone(),
        trigger,
        sequence,
        from: node.current().and_then(|c| c.info().peer).or(peer),
        to: None,
        outcome: HandoffOutcome::Cancelled,
        recycled: false,
        error: None,
        took: Duration::ZERO,
    }
}

fn probe(ctx: &Ctx, interval: Duration) -> AdvertisedAddressProbe {
    let resolver = ctx.options.resolver.clone().unwrap_or_else(resolve::system);
    AdvertisedAddressProbe::new(resolver, clock::system(), interval)
}

/// §6: jitter, decide, then recycle when the decision names somewhere to go.
fn moving(
    node: &Node,
    ctx: &Ctx,
    report: &mut HandoffReport,
    (window, received): (Duration, Instant),
    new_endpoint: Option<crate::config::Endpoint>,
    generation: u64,
) {
    let mut pause = |d: Duration| node.maintenance.pause(d, generation);
    let window_end = deadline_after(received, window);
    // The whole fleet was told at once: spread the lookups and the reconnects.
    if !pause(jitter(window, jitter_fraction())) {
        return;
    }
    let left = window_end.saturating_duration_since(Instant::now());
    let decision = decide_handoff(
        &node.endpoint,
        report.from,
        new_endpoint.as_ref(),
        left,
        &probe(ctx, poll_interval(window)),
        &mut pause,
    );
    log::info!(
        "{}: MOVING seq={:?}: {decision}",
        node.endpoint,
        report.sequence
    );
    report.outcome = HandoffOutcome::Decided(decision.clone());
    let target = match &decision {
        HandoffDecision::StepSideways(a) | HandoffDecision::RecordMoved { to: a, .. } => Some(*a),
        HandoffDecision::ConnectTo(e) => {
            // The node keeps its name; its connections dial the named endpoint, and a
            // cluster re-reads its topology to learn the rest of the change.
            node.interactive.config.dial.redirect(e.clone());
            if let Some(state) = &ctx.cluster {
                state.request_refresh();
            }
            None
        }
        _ => return,
    };
    if let Some(from) = report.from {
        node.interactive
            .config
            .dial
            .retire(from, deadline_after(window_end, RETIRING_GRACE));
    }
    let drain_until = window_end.max(deadline_after(Instant::now(), DRAIN_FLOOR));
    recycle(node, ctx, report, target, drain_until);
}

/// §6 advertised-address check: after a `MIGRATED`, watch (for the post-event tail)
/// whether the record still names our address; when it stops, move before the server
/// closes the socket without a word. "Cannot tell" never moves anything.
fn migrated(node: &Node, ctx: &Ctx, report: &mut HandoffReport, generation: u64) {
    // The post-event tail: how long the event is still settling (measured: DNS drops
    // the node ~5 s after MIGRATED, the silent close follows ~13 s later).
    let budget = RelaxSettings::from_options(&ctx.options).tail;
    let interval = poll_interval(budget);
    let probe = probe(ctx, interval);
    let until = deadline_after(Instant::now(), budget);
    loop {
        let Some(current) = node.current().and_then(|c| c.info().peer) else {
            report.outcome = HandoffOutcome::StillAdvertised;
            return;
        };
        report.from = Some(current);
        if probe.still_advertised(&node.endpoint, current) == Some(false) {
            let replacement = probe
                .lookup(&node.endpoint)
                .ok()
                .and_then(|a| a.into_iter().find(|a| *a != current));
            if let Some(to) = replacement {
                log::info!(
                    "{}: {current} is no longer advertised; moving to {to}",
                    node.endpoint
                );
                report.outcome = HandoffOutcome::NoLongerAdvertised(to);
                let spread = jitter(Duration::from_secs(10), jitter_fraction());
                if !node.maintenance.pause(spread, generation) {
                    report.outcome = HandoffOutcome::Cancelled;
                    return;
                }
                node.interactive
                    .config
                    .dial
                    .retire(current, deadline_after(Instant::now(), RETIRING_GRACE));
                let drain = deadline_after(Instant::now(), DRAIN_WITHOUT_WINDOW);
                recycle(node, ctx, report, Some(to), drain);
                return;
            }
        }
        if Instant::now() >= until {
            report.outcome = HandoffOutcome::StillAdvertised;
            return;
        }
        if !node.maintenance.pause(interval, generation) {
            return;
        }
    }
}

/// Moves the node's connections: to `to`, or wherever the name (or a redirect) now
/// resolves to. A failure to open the replacement keeps the old connection (it still
/// works until the server closes it) and is recorded in the report.
fn recycle(
    node: &Node,
    ctx: &Ctx,
    report: &mut HandoffReport,
    to: Option<SocketAddr>,
    drain_until: Instant,
) {
    if node.maintenance.is_cancelled() {
        return;
    }
    // A reconnect got there first (the server closed the old connection while we
    // waited for DNS): that connection already resolved afresh; leave it be.
    let current = node.current().and_then(|c| c.info().peer);
    if report.from.is_some() && current.is_some() && current != report.from {
        log::info!(
            "{}: already reconnected to {current:?}; nothing to recycle",
            node.endpoint
        );
        report.to = current;
        return;
    }
    match replace_interactive(node, ctx, to, drain_until) {
        Ok(peer) => {
            report.recycled = true;
            report.to = peer;
        }
        Err(e) => {
            log::warn!("{}: handoff could not connect: {e}", node.endpoint);
            report.error = Some(e.to_string());
            return;
        }
    }
    // The subscription connection re-resolves on the supervisor's reconnect, which
    // re-subscribes everything it carries.
    if let Some(sub) = node.pubsub.current() {
        sub.close(FailureKind::MaintenanceHandoff);
    }
    // Dedicated connections (blocking ones and lanes) dial afresh when next wanted
    // (the dial already avoids the retiring address); a call on one now finishes
    // there, and the connection is closed when it ends.
    let idle = node.blocking.recycle() + node.lanes.recycle();
    if idle > 0 {
        log::debug!(
            "{}: closed {idle} idle dedicated connections",
            node.endpoint
        );
    }
}

fn replace_interactive(
    node: &Node,
    ctx: &Ctx,
    to: Option<SocketAddr>,
    drain_until: Instant,
) -> Result<Option<SocketAddr>> {
    let config = &node.interactive.config;
    let conn = match to {
        Some(addr) => Connection::open_to(config, addr)?,
        None => Connection::open(config)?,
    };
    let peer = conn.info().peer;
    if let Some(old) = node.swap_interactive(conn) {
        old.stop_accepting();
        while old.caller_inflight() > 0
            && !old.is_closed()
            && !node.maintenance.is_cancelled()
            && Instant::now() < drain_until
        {
            std::thread::sleep(DRAIN_POLL);
        }
        let left = old.caller_inflight();
        if left > 0 {
            log::info!(
                "{}: {left} requests still in flight when the window ended",
                node.endpoint
            );
        }
        old.close(FailureKind::MaintenanceHandoff);
        old.join();
    }
    ctx.events.publish(ClientEvent::ConnectionRestored {
        endpoint: node.endpoint.clone(),
    });
    Ok(peer)
}
