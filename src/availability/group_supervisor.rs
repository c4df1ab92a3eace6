//! The group supervisor: the one thread that owns the group's decision core. It feeds
//! the core what members report (connections, check verdicts, breaker trips, stalls,
//! the user's overrides and weights), publishes what it decided (the active member,
//! each member's view), announces events, and starts checks on probe threads.
//!
//! It never dials, resolves, probes or waits on a member: each member client has its
//! own supervisor for its connections, and checks run on their own threads, so one
//! hung member never delays another member's failover.

use std::sync::Weak;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::checks;
use super::core::{Action, Announcement, Core, Input, MemberId, Step};
use super::events::GroupEvent;
use super::inbox::Message;
use super::member::GroupMember;
use super::shared::GroupShared;
use crate::client::MemberSignal;
use crate::metrics;

/// How often members' connections and stalls are looked at when nothing reports.
const POLL: Duration = Duration::from_millis(100);

pub(crate) fn run(shared: Weak<GroupShared>, inbox: Receiver<Message>, mut core: Core) {
    let mut last_poll = Instant::now();
    let mut seen_down = Vec::new();
    loop {
        let Some(group) = shared.upgrade() else {
            return;
        };
        if group.is_closed() {
            return;
        }
        let now = group.options.clock.now();
        let mut wait = POLL.saturating_sub(last_poll.elapsed());
        if let Some(due) = core.next_due() {
            wait = wait.min(due.saturating_duration_since(now));
        }
        drop(group);
        let message = match inbox.recv_timeout(wait) {
            Ok(Message::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
        };
        let Some(group) = shared.upgrade() else {
            return;
        };
        if let Some(message) = message {
            handle(&group, &mut core, message);
        }
        // Polled even when messages keep coming, so a stall is never starved.
        if last_poll.elapsed() >= POLL
            || core
                .next_due()
                .is_some_and(|d| d <= group.options.clock.now())
        {
            last_poll = Instant::now();
            seen_down = poll(&group, &mut core, &seen_down);
        }
    }
}

fn handle(group: &GroupShared, core: &mut Core, message: Message) {
    match message {
        Message::Input(input) => {
            feed(group, core, input);
        }
        Message::Ask(input, reply) => {
            let accepted = feed(group, core, input);
            let _ = reply.send(accepted);
        }
        Message::Signal(id, MemberSignal::BreakerTripped) => {
            feed(group, core, Input::BreakerTripped(id));
        }
        // A connection that came up before `join` stored the member's client (its dial
        // won the race) is left to the next poll, which reports it once the client is
        // there: the checks its report starts at once would find nothing to probe and
        // say Inconclusive, and a failback check's first verdict would be lost for an
        // interval (seen under load: 1 run in 30 of the probe tests).
        Message::Signal(id, MemberSignal::Connection { up: true }) if !has_client(group, id) => {}
        Message::Signal(id, MemberSignal::Connection { up }) => {
            feed(group, core, Input::Connection { id, up });
        }
        Message::Shutdown => {}
    }
}

/// Whether the member's client is in place (its `join` has stored it).
fn has_client(group: &GroupShared, id: MemberId) -> bool {
    group
        .members
        .read()
        .iter()
        .any(|m| m.id() == id && m.client().is_some())
}

/// What the poll does about a member's connection as it finds it.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// As the core knows it (or a first attempt still under way, which reports itself).
    Known,
    /// A change no signal reported: feed it.
    Report,
    /// Down, not yet reported: the signal that says why (a breaker trip, which the core
    /// must announce as such) may be on its way, so only the next poll reports it.
    DownOnce,
}

fn seen(settled: bool, known_up: bool, up: bool, down_at_last_poll: bool) -> Seen {
    if (!settled && !up) || known_up == up {
        Seen::Known
    } else if up || down_at_last_poll {
        Seen::Report
    } else {
        Seen::DownOnce
    }
}

/// Looks at every member: connection changes no signal reported, stalled calls; and
/// lets time-driven work run. Returns the members found down and not yet reported,
/// for the next poll.
fn poll(group: &GroupShared, core: &mut Core, down_at_last_poll: &[MemberId]) -> Vec<MemberId> {
    let members = group.members.read().clone();
    let mut down_now = Vec::new();
    for m in &members {
        let Some(client) = m.client() else { continue };
        let up = client.is_connected();
        if let Some(view) = core.view(m.id()) {
            let before = down_at_last_poll.contains(&m.id());
            match seen(view.settled, view.connected, up, before) {
                Seen::Known => {}
                Seen::Report => {
                    feed(group, core, Input::Connection { id: m.id(), up });
                }
                Seen::DownOnce => down_now.push(m.id()),
            }
        }
        let stalled = client.stalled_for();
        if stalled >= group.options.stall_threshold {
            feed(
                group,
                core,
                Input::Stalled {
                    id: m.id(),
                    stalled,
                },
            );
        }
    }
    feed(group, core, Input::Tick);
    down_now
}

/// Gives the core one input and carries out the step; returns whether it was accepted.
fn feed(group: &GroupShared, core: &mut Core, input: Input) -> bool {
    let now = group.options.clock.now();
    let step = core.handle(now, input);
    apply(group, core, &step);
    step.accepted
}

fn apply(group: &GroupShared, core: &Core, step: &Step) {
    let members = group.members.read().clone();
    // Published first, so what events announce is already what callers see.
    let mut connections_changed = false;
    for m in &members {
        if let Some(view) = core.view(m.id()) {
            let mut published = m.inner.view.write();
            connections_changed |= published.connected != view.connected;
            *published = view;
        }
    }
    let active = group.active().map(|m| m.id());
    if active != core.active() {
        let next = core
            .active()
            .and_then(|id| members.iter().find(|m| m.id() == id).cloned());
        group.set_active(next);
    }
    if active != core.active() || connections_changed {
        group.bump();
    }
    for action in &step.actions {
        match action {
            Action::Announce(a) => announce(group, &members, *a),
            Action::StartCheck { id, kind } => {
                if let Some(m) = find(&members, *id) {
                    checks::start(&group.options, m, *kind, group.inbox.clone());
                }
            }
            Action::AbandonStalled(id) => {
                if let Some(client) = find(&members, *id).and_then(GroupMember::client) {
                    client.abandon_stalled(group.options.stall_threshold);
                }
            }
        }
    }
}

fn find(members: &[GroupMember], id: MemberId) -> Option<&GroupMember> {
    members.iter().find(|m| m.id() == id)
}

fn announce(group: &GroupShared, members: &[GroupMember], a: Announcement) {
    let name = |id: Option<MemberId>| {
        id.and_then(|id| find(members, id))
            .map_or("none", |m| m.name())
            .to_string()
    };
    let event = match a {
        Announcement::Active {
            previous,
            current,
            reason,
        } => {
            log::info!(
                "active member: {} -> {} ({reason:?})",
                name(previous),
                name(current)
            );
            let member_name = |id: Option<MemberId>| id.and_then(|id| find(members, id));
            metrics::active_member_changed(
                member_name(previous).map(GroupMember::name),
                member_name(current).map(GroupMember::name),
                reason.as_str(),
            );
            GroupEvent::ActiveChanged {
                previous: previous.and_then(|id| find(members, id)).cloned(),
                current: current.and_then(|id| find(members, id)).cloned(),
                reason,
            }
        }
        Announcement::Health { id, healthy } => {
            let Some(m) = find(members, id) else { return };
            metrics::member_health_changed(m.name(), healthy);
            if healthy {
                log::info!("member {} is healthy again", m.name());
            } else {
                log::warn!("member {} is unhealthy", m.name());
            }
            GroupEvent::MemberHealthChanged {
                member: m.clone(),
                healthy,
            }
        }
        Announcement::Failback { id, result } => {
            let Some(m) = find(members, id) else { return };
            log::info!("member {}: failback check {result:?}", m.name());
            GroupEvent::FailbackCheckChanged {
                member: m.clone(),
                result,
            }
        }
        Announcement::Provisional { id, provisional } => {
            let Some(m) = find(members, id) else { return };
            if provisional {
                log::warn!(
                    "no live member passes its failback check: {} serves provisionally",
                    m.name()
                );
            } else {
                log::info!("{} is no longer provisional", m.name());
            }
            GroupEvent::ProvisionalChanged {
                member: m.clone(),
                provisional,
            }
        }
    };
    group.events.publish(event);
}

#[cfg(test)]
mod tests {
    use super::{seen, Seen};

    /// A connection the poll finds down is reported at the next poll only, so the
    /// member's own signal (which says whether a breaker tripped) comes first: the
    /// race that announced a breaker's failover as `HealthCheck`.
    #[test]
    fn a_down_connection_is_left_one_poll_to_its_signal() {
        // (settled, known up, up now, down at the last poll) -> what the poll does
        let table = [
            ((false, false, false, false), Seen::Known), // first attempt under way
            ((false, false, true, false), Seen::Report), // first attempt up, unreported
            ((true, true, true, false), Seen::Known),
            ((true, false, false, true), Seen::Known), // the signal came in between
            ((true, true, false, false), Seen::DownOnce),
            ((true, true, false, true), Seen::Report), // no signal came: report it
            ((true, false, true, false), Seen::Report), // back up: at once
        ];
        for ((settled, known_up, up, before), want) in table {
            assert_eq!(
                seen(settled, known_up, up, before),
                want,
                "{settled} {known_up} {up} {before}"
            );
        }
    }
}
