//! The group's decision core: which member serves, when each member is checked, and
//! what the group announces. Socket-free and thread-free: it takes inputs stamped
//! with a time and returns actions; the group's supervisor thread owns it, feeds it
//! what the members report, and carries out what it decides (see
//! `docs/failover.md`, "How the group decides").
//!
//! Owns: every piece of decision state of a group (active member, override, health
//! and failback standing, provisional serving, check schedules). Must never: do IO,
//! read a clock, or look at anything it was not told.

#[cfg(test)]
mod distance_tests;
mod latency;
mod member;
mod select;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use member::{failback_due, MemberState};
pub(crate) use member::{CheckKind, MemberView};
use select::{select, Candidate};

use super::events::ChangeReason;
use super::target::ProbeResult;

/// A member's identity inside one group.
pub(crate) type MemberId = u64;

/// How long `Group::connect` lets members that are still connecting catch up with the
/// first one that is up, so the initial choice is made among all that answer promptly
/// (no flapping at start), without waiting on a member that hangs.
pub(crate) const START_GRACE: Duration = Duration::from_millis(500);

/// The settings the core decides with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// How long a member must have been free of failures before it comes back by itself.
    pub failback_delay: Duration,
    /// In-flight calls with no reply byte for this long get their member checked out
    /// of turn.
    pub stall_threshold: Duration,
}

/// What the core is told about a member when it joins.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemberSpec {
    pub id: MemberId,
    pub weight: u32,
    /// Time between its health checks.
    pub health_interval: Duration,
    /// Time between its failback checks; `None` when it has no failback check.
    pub failback_interval: Option<Duration>,
    /// How long it may be down while failing over inside itself before traffic moves
    /// (`None`: at once).
    pub local_failover: Option<Duration>,
}

/// Something that happened, as the core is told it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Input {
    /// A member joined (its client exists; it connects on its own).
    Added(MemberSpec),
    /// A member left.
    Removed(MemberId),
    /// A member's connection went up or down, or a first attempt finished (`up:
    /// false` then means it could not connect).
    Connection { id: MemberId, up: bool },
    /// A health check finished. `connection_lost`: it failed and the member's
    /// connection was down when it did.
    Health {
        id: MemberId,
        result: ProbeResult,
        latency: Option<Duration>,
        connection_lost: bool,
    },
    /// A failback check started in `epoch` finished.
    Failback {
        id: MemberId,
        epoch: u64,
        result: ProbeResult,
    },
    /// A circuit breaker tripped on one of the member's connections.
    BreakerTripped(MemberId),
    /// The member's oldest in-flight call has seen no reply byte for `stalled`.
    Stalled { id: MemberId, stalled: Duration },
    /// `try_failover_to(Some(id))` or `try_failover_to(None)`.
    Override(Option<MemberId>),
    /// `member.reset_unhealthy()`.
    ResetUnhealthy(MemberId),
    /// `member.set_weight(weight)`.
    Weight { id: MemberId, weight: u32 },
    /// Time passed: start the checks that are due.
    Tick,
}

/// Something the core decided; the supervisor carries it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Run one check of the member on a probe thread and report its verdict.
    StartCheck { id: MemberId, kind: CheckKind },
    /// The member failed a check while its calls were stalled: close those of its
    /// connections that still have calls in flight with no reply byte for the stall
    /// threshold, so their callers fail over instead of waiting out their timeout, and
    /// replace the other connections to those servers (subscriptions above all), which
    /// carry no calls that would show them hung: the member's subscribers must hear it
    /// again before traffic can fail back to it.
    AbandonStalled(MemberId),
    /// Announce an event.
    Announce(Announcement),
}

/// An event, by member id (the supervisor turns ids into `Member`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Announcement {
    /// The active member changed.
    Active {
        previous: Option<MemberId>,
        current: Option<MemberId>,
        reason: ChangeReason,
    },
    /// A member was taken out of rotation or put back.
    Health { id: MemberId, healthy: bool },
    /// A failback check reached a different verdict.
    Failback { id: MemberId, result: ProbeResult },
    /// A member started or stopped serving provisionally.
    Provisional { id: MemberId, provisional: bool },
}

/// What one input led to.
#[derive(Debug, Default)]
pub(crate) struct Step {
    pub actions: Vec<Action>,
    /// For `Override` and `Removed`: whether it took effect (`try_failover_to` and
    /// `remove` return it).
    pub accepted: bool,
}

/// The decision state of one group.
#[derive(Debug)]
pub(crate) struct Core {
    settings: Settings,
    /// In the group's order (selection breaks no tie by it, but events and tests read
    /// better in a fixed order).
    members: Vec<MemberState>,
    active: Option<MemberId>,
    preferred: Option<MemberId>,
    /// Until this time (set when the first member comes up), the first choice waits
    /// for members still connecting; `None` once the first choice is made.
    starting: Option<Option<Instant>>,
}

impl Core {
    /// A core for a group being connected: the first choice waits (bounded by
    /// [`START_GRACE`]) for every member's first connection attempt.
    pub(crate) fn new(settings: Settings) -> Core {
        Core {
            settings,
            members: Vec::new(),
            active: None,
            preferred: None,
            starting: Some(None),
        }
    }

    /// The member serving now.
    pub(crate) fn active(&self) -> Option<MemberId> {
        self.active
    }

    /// What the group shows of a member (for `status()` and `Member`'s getters).
    pub(crate) fn view(&self, id: MemberId) -> Option<MemberView> {
        self.find(id).map(MemberState::view)
    }

    /// When the core next has timed work (a check due, the start grace ending).
    pub(crate) fn next_due(&self) -> Option<Instant> {
        let checks = self
            .members
            .iter()
            .flat_map(|m| m.next_due(self.wants_failback(m)));
        let start = self.starting.flatten();
        checks.chain(start).min()
    }

    /// Takes one input at `now`; returns what to do.
    pub(crate) fn handle(&mut self, now: Instant, input: Input) -> Step {
        let mut step = Step {
            accepted: true,
            ..Step::default()
        };
        let reason = match input {
            Input::Added(spec) => {
                if self.find(spec.id).is_some() {
                    step.accepted = false;
                    None
                } else {
                    self.members.push(MemberState::new(spec));
                    Some(ChangeReason::MemberAdded)
                }
            }
            Input::Removed(id) => {
                let before = self.members.len();
                self.members.retain(|m| m.id != id);
                step.accepted = self.members.len() != before;
                if self.preferred == Some(id) {
                    self.preferred = None;
                }
                step.accepted.then_some(ChangeReason::MemberRemoved)
            }
            Input::Connection { id, up } => self.connection(now, id, up, &mut step),
            Input::Health {
                id,
                result,
                latency,
                connection_lost,
            } => self.health(now, id, result, latency, connection_lost, &mut step),
            Input::Failback { id, epoch, result } => {
                let changed = self
                    .find_mut(id)
                    .is_some_and(|m| m.record_failback(epoch, result));
                if changed {
                    step.announce(Announcement::Failback { id, result });
                }
                changed.then_some(ChangeReason::FailbackCheck)
            }
            Input::BreakerTripped(id) => {
                self.fail(now, id, &mut step);
                if let Some(m) = self.find_mut(id) {
                    m.tripped = true;
                }
                Some(ChangeReason::CircuitBreaker)
            }
            Input::Stalled { id, stalled } => {
                if stalled >= self.settings.stall_threshold {
                    if let Some(m) = self.find_mut(id) {
                        m.check_out_of_turn(now);
                    }
                }
                None
            }
            Input::Override(target) => self.override_to(target, &mut step),
            Input::ResetUnhealthy(id) => {
                if let Some(m) = self.find_mut(id) {
                    m.tripped = false;
                    if std::mem::take(&mut m.unhealthy) {
                        step.announce(Announcement::Health { id, healthy: true });
                    }
                }
                Some(ChangeReason::Failback)
            }
            Input::Weight { id, weight } => {
                if let Some(m) = self.find_mut(id) {
                    m.weight = weight;
                }
                Some(ChangeReason::Rebalance)
            }
            Input::Tick => Some(ChangeReason::Rebalance),
        };
        self.end_start_if_due(now);
        let reason = self.end_holds(now, &mut step).or(reason);
        if let Some(reason) = reason {
            self.reselect(reason, &mut step);
        }
        self.start_due_checks(now, &mut step);
        step
    }

    fn find(&self, id: MemberId) -> Option<&MemberState> {
        self.members.iter().find(|m| m.id == id)
    }

    fn find_mut(&mut self, id: MemberId) -> Option<&mut MemberState> {
        self.members.iter_mut().find(|m| m.id == id)
    }

    fn connection(
        &mut self,
        now: Instant,
        id: MemberId,
        up: bool,
        step: &mut Step,
    ) -> Option<ChangeReason> {
        let m = self.find_mut(id)?;
        let first = !m.settled;
        m.settled = true;
        if m.connected == up {
            // A first attempt that failed settles the member for the start; nothing else.
            return first.then_some(ChangeReason::Initial);
        }
        m.connected = up;
        m.connection_changes += 1;
        if up {
            m.holding = None;
            // Checked at once, so a member that was failed comes back as soon as it
            // answers (and its failback delay allows), not at its next interval.
            if !m.tripped {
                m.check_now(now);
            }
            if self.starting.is_some_and(|s| s.is_none()) {
                self.starting = Some(Some(now + START_GRACE));
            }
            return Some(ChangeReason::Failback);
        }
        // A member that fails over inside itself is held as live for its grace: its
        // callers wait for its new primary rather than move to another region.
        if m.holding.is_none() && m.hold(now) {
            return Some(ChangeReason::Rebalance);
        }
        if m.holding.is_some() {
            return None;
        }
        // Losing the connection is a failure: it starts the failback delay, so a
        // member that keeps dropping does not get traffic back at every reconnect.
        self.fail(now, id, step);
        Some(ChangeReason::HealthCheck)
    }

    /// Members whose hold ran out without their connection coming back fail now.
    fn end_holds(&mut self, now: Instant, step: &mut Step) -> Option<ChangeReason> {
        let expired: Vec<MemberId> = self
            .members
            .iter_mut()
            .filter(|m| m.holding.is_some_and(|until| now >= until))
            .map(|m| {
                m.holding = None;
                m.id
            })
            .collect();
        for id in &expired {
            self.fail(now, *id, step);
        }
        (!expired.is_empty()).then_some(ChangeReason::HealthCheck)
    }

    fn health(
        &mut self,
        now: Instant,
        id: MemberId,
        result: ProbeResult,
        latency: Option<Duration>,
        connection_lost: bool,
        step: &mut Step,
    ) -> Option<ChangeReason> {
        let delay = self.settings.failback_delay;
        let m = self.find_mut(id)?;
        m.health_running = false;
        if let Some(l) = latency {
            m.record_latency(l);
        }
        match result {
            // Measured on a connection that has since been replaced: the check that
            // its reconnect asked for answers for the new one.
            ProbeResult::Unhealthy if !m.check_is_current() && m.connected => {
                Some(ChangeReason::Rebalance)
            }
            // Failed because the connection went away, which the member has not reported
            // yet: its report decides, with the cause (a tripped breaker must be
            // announced as such, not as a failed check).
            ProbeResult::Unhealthy if connection_lost && m.connected => {
                Some(ChangeReason::Rebalance)
            }
            // Down while failing over inside itself: the hold decides, not the probe.
            ProbeResult::Unhealthy if m.holding.is_some() => Some(ChangeReason::Rebalance),
            ProbeResult::Unhealthy => {
                self.fail(now, id, step);
                step.actions.push(Action::AbandonStalled(id));
                Some(ChangeReason::HealthCheck)
            }
            // "Could not tell" is no failure: for liveness it counts like a pass (only
            // the failback check demands Healthy).
            // A pass from a check that started before the latest failure (a breaker that
            // tripped, a connection lost while the probe ran) is stale: the member stays
            // out. After a lost connection its reconnect asked for a check, which this
            // stale one held back: that one starts now. A tripped member waits for its
            // next interval, as after any trip.
            ProbeResult::Healthy | ProbeResult::Inconclusive
                if m.unhealthy && !m.check_is_after_failure() =>
            {
                if !m.tripped && m.connected {
                    m.check_now(now);
                }
                Some(ChangeReason::Rebalance)
            }
            ProbeResult::Healthy | ProbeResult::Inconclusive => {
                if m.unhealthy && failback_due(m.last_failure, now, delay) {
                    m.unhealthy = false;
                    m.tripped = false;
                    step.announce(Announcement::Health { id, healthy: true });
                    Some(ChangeReason::Failback)
                } else {
                    Some(ChangeReason::Rebalance)
                }
            }
        }
    }

    /// Flags a member unhealthy and records the failure time (every re-mark moves it on).
    fn fail(&mut self, now: Instant, id: MemberId, step: &mut Step) {
        if let Some(m) = self.find_mut(id) {
            m.last_failure = Some(now);
            m.failures += 1;
            if !std::mem::replace(&mut m.unhealthy, true) {
                step.announce(Announcement::Health { id, healthy: false });
            }
        }
    }

    fn override_to(&mut self, target: Option<MemberId>, step: &mut Step) -> Option<ChangeReason> {
        match target {
            None => step.accepted = self.preferred.take().is_some(),
            Some(id) => {
                let Some(m) = self.find_mut(id).filter(|m| m.connected) else {
                    step.accepted = false;
                    return None;
                };
                m.tripped = false;
                if std::mem::take(&mut m.unhealthy) {
                    step.announce(Announcement::Health { id, healthy: true });
                }
                // The operator's choice stands in for a passed failback check.
                m.vouch();
                self.preferred = Some(id);
            }
        }
        Some(ChangeReason::Manual)
    }

    fn end_start_if_due(&mut self, now: Instant) {
        let Some(deadline) = self.starting else {
            return;
        };
        let all_settled = self.members.iter().all(|m| m.settled);
        let grace_over = deadline.is_some_and(|d| now >= d);
        if all_settled || grace_over {
            self.starting = None;
        }
    }

    /// Chooses the active member again and announces a change.
    fn reselect(&mut self, reason: ChangeReason, step: &mut Step) {
        if self.starting.is_some() {
            return;
        }
        // An override ends when its member disconnects (automatic fallback).
        if self
            .preferred
            .is_some_and(|p| self.find(p).is_none_or(|m| !m.connected))
        {
            self.preferred = None;
        }
        let index_of = |id: Option<MemberId>| id.and_then(|id| self.index(id));
        let (cur, pref) = (index_of(self.active), index_of(self.preferred));
        // Only when some member has a failback check does eligibility enter in.
        let gated = self.members.iter().any(|m| m.failback.is_some());
        // The active member is kept eligible whatever its verdict: an ordinary one (the
        // check never evicts it), or a provisional one whose first verdict since it
        // started serving is still under way. Without the second, at start traffic went
        // to a lighter member that answered first and came back 0.4 s later.
        let kept = cur.filter(|&i| {
            let m = &self.members[i];
            !m.provisional || m.failback_verdict().is_none()
        });
        // At the first choice nobody is active yet, so every live member whose first
        // verdict is still under way competes as the kept one would: otherwise a
        // lighter member whose REST answered before the heavier one connected took
        // the start, and traffic moved back once the heavier one passed.
        let first_choice = cur.is_none();
        let pending = |m: &MemberState| first_choice && m.failback_verdict().is_none();
        let mut candidates: Vec<Candidate> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| Candidate {
                available: m.is_live() && (!gated || kept == Some(i) || m.eligible() || pending(m)),
                weight: m.weight,
                latency: m.latency(),
            })
            .collect();
        let mut chosen = select(&candidates, cur, pref);
        // Serving before its own verdict: provisional, and it leaves at once if that
        // verdict is not Healthy.
        let mut provisional = chosen.is_some_and(|i| {
            let m = &self.members[i];
            (chosen == cur && kept == Some(i) && m.provisional) || (pending(m) && !m.eligible())
        });
        if chosen.is_none() && gated {
            // The liveness fallback: nobody eligible, serve from the best live member.
            for (c, m) in candidates.iter_mut().zip(&self.members) {
                c.available = m.is_live();
            }
            chosen = select(&candidates, cur, pref);
            provisional = chosen.is_some();
        }
        let next = match chosen {
            Some(i) => Some(i),
            None => self.fallback(cur, &mut candidates),
        };
        let next = next.map(|i| self.members[i].id);
        let previous = self.active;
        let flags = if gated {
            self.settle(previous, next, provisional, chosen.is_some())
        } else {
            Vec::new()
        };
        if next != previous {
            self.active = next;
            let reason = if previous.is_none() && reason != ChangeReason::MemberRemoved {
                ChangeReason::Initial
            } else {
                reason
            };
            step.announce(Announcement::Active {
                previous,
                current: next,
                reason,
            });
        }
        // After ActiveChanged: the provisional flags follow the change.
        for a in flags {
            step.announce(a);
        }
    }

    /// Nobody is available: keep the current member while it is connected (its
    /// backlog may yet save a call); else the best connected member, unhealthy or
    /// not; else the current member if still in the group.
    fn fallback(&self, cur: Option<usize>, candidates: &mut [Candidate]) -> Option<usize> {
        if cur.is_some_and(|i| self.members[i].connected) {
            return cur;
        }
        for (c, m) in candidates.iter_mut().zip(&self.members) {
            c.available = m.connected;
        }
        select(candidates, None, None).or(cur)
    }

    /// After a selection: verdicts that no longer count are forgotten and the
    /// provisional flags follow the choice; returns the flag changes to announce.
    fn settle(
        &mut self,
        previous: Option<MemberId>,
        next: Option<MemberId>,
        provisional: bool,
        decided: bool,
    ) -> Vec<Announcement> {
        let mut flags = Vec::new();
        for m in &mut self.members {
            if !m.is_live() {
                // A member that went away may come back behind: it must pass again.
                m.forget_failback();
            }
        }
        if let Some(p) = previous.filter(|p| Some(*p) != next) {
            if let Some(m) = self.find_mut(p) {
                m.forget_failback();
                if std::mem::take(&mut m.provisional) {
                    flags.push(Announcement::Provisional {
                        id: p,
                        provisional: false,
                    });
                }
            }
        }
        if let Some(n) = next.filter(|_| decided) {
            if let Some(m) = self.find_mut(n) {
                if std::mem::replace(&mut m.provisional, provisional) != provisional {
                    flags.push(Announcement::Provisional { id: n, provisional });
                }
            }
        }
        flags
    }

    fn index(&self, id: MemberId) -> Option<usize> {
        self.members.iter().position(|m| m.id == id)
    }

    /// Whether a member's failback check should be asked now: it is live and not the
    /// ordinary active member (whom the check never evicts, so asking is waste).
    fn wants_failback(&self, m: &MemberState) -> bool {
        m.is_live() && (self.active != Some(m.id) || m.provisional)
    }

    fn start_due_checks(&mut self, now: Instant, step: &mut Step) {
        for i in 0..self.members.len() {
            let wants = self.wants_failback(&self.members[i]);
            let m = &mut self.members[i];
            if m.health_due(now) {
                step.actions.push(Action::StartCheck {
                    id: m.id,
                    kind: CheckKind::Health,
                });
            }
            if let Some(epoch) = m.failback_due(now, wants) {
                step.actions.push(Action::StartCheck {
                    id: m.id,
                    kind: CheckKind::Failback { epoch },
                });
            }
        }
    }
}

impl Step {
    fn announce(&mut self, a: Announcement) {
        self.actions.push(Action::Announce(a));
    }
}
