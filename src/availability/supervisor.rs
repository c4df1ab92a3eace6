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
            poll(&group, &mut core);
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
        Message::Signal(id, MemberSignal::Connection { up }) => {
            feed(group, core, Input::Connection { id, up });
        }
        Message::Shutdown => {}
    }
}

/// Looks at every member: connection changes no signal reported, stalled calls; and
/// lets time-driven work run.
fn poll(group: &GroupShared, core: &mut Core) {
    let members = group.members.read().clone();
    for m in &members {
        let Some(client) = m.client() else { continue };
        let up = client.is_connected();
        // Not while a first attempt is under way (its own report settles it).
        if core
            .view(m.id())
            .is_some_and(|v| (v.settled || up) && v.connected != up)
        {
            feed(group, core, Input::Connection { id: m.id(), up });
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
