//! Failback checks: before traffic moves *to* a member, ask whether it is fit to take
//! it, not only whether it is alive (lag-aware failback).
//!
//! A region that comes back is reachable long before it has caught up; failing back at
//! once serves stale data. So a member that is not active is eligible only while its
//! latest failback verdict is `Healthy` (`Inconclusive`, "could not ask", is not
//! enough). The check never evicts the active member: liveness stays with the ordinary
//! health check.
//!
//! The liveness fallback: when no live member is eligible (in a partition every region
//! is behind at once; measured, the lag check fails on both sides about a minute after
//! the link breaks), the group still serves from the best live member, *provisionally*:
//! it leaves that member for an eligible one as soon as one exists, whatever the
//! weights, and the member becomes ordinary once it passes its own check. Without it,
//! a partition would be an outage. One refinement: a provisional member is kept until
//! its own first verdict is in (see [`kept`]), so that at start, when nobody has been
//! asked yet, traffic does not go to whichever member answers first and come back.
//!
//! Owns: the verdicts and the provisional flag of each member, and running the checks
//! on probe threads. Must never: run a check on the supervisor loop or a connection's
//! threads, or cost anything when no failback check is configured.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver};

use super::events::GroupEvent;
use super::group::{GroupInner, GroupOptions};
use super::health::{HealthCheck, ProbeResult};
use super::member::Member;

const NONE: u8 = 0;
const HEALTHY: u8 = 1;
const UNHEALTHY: u8 = 2;
const INCONCLUSIVE: u8 = 3;

fn encode(r: ProbeResult) -> u8 {
    match r {
        ProbeResult::Healthy => HEALTHY,
        ProbeResult::Unhealthy => UNHEALTHY,
        ProbeResult::Inconclusive => INCONCLUSIVE,
    }
}

fn decode(v: u8) -> Option<ProbeResult> {
    match v {
        HEALTHY => Some(ProbeResult::Healthy),
        UNHEALTHY => Some(ProbeResult::Unhealthy),
        INCONCLUSIVE => Some(ProbeResult::Inconclusive),
        _ => None,
    }
}

/// A member's failback standing.
#[derive(Debug, Default)]
pub(crate) struct FailbackState {
    /// The latest verdict in the current epoch (`NONE`: not asked since).
    result: AtomicU8,
    /// Serving as active only through the liveness fallback.
    provisional: AtomicBool,
    /// Moves on whenever earlier verdicts stop counting (the member left the active
    /// role, or stopped being live), so a check started before cannot make it eligible.
    epoch: AtomicU64,
}

impl FailbackState {
    pub(crate) fn result(&self) -> Option<ProbeResult> {
        decode(self.result.load(Ordering::Acquire))
    }

    pub(crate) fn eligible(&self) -> bool {
        self.result.load(Ordering::Acquire) == HEALTHY
    }

    pub(crate) fn is_provisional(&self) -> bool {
        self.provisional.load(Ordering::Acquire)
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Earlier verdicts, and checks already under way, no longer count: the member
    /// must pass a check started from now on before it takes traffic (and the new
    /// epoch makes the supervisor start one at once when the member is live).
    fn forget(&self) {
        self.result.store(NONE, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Records a verdict from a check started in `epoch`; whether it changed anything.
    fn record(&self, epoch: u64, result: ProbeResult) -> bool {
        if self.epoch() != epoch {
            return false;
        }
        self.result.swap(encode(result), Ordering::AcqRel) != encode(result)
    }

    /// An operator chose this member (`try_failover_to`): it counts as passed.
    pub(crate) fn vouch(&self) {
        self.result.store(HEALTHY, Ordering::Release);
    }

    fn set_provisional(&self, on: bool) -> bool {
        self.provisional.swap(on, Ordering::AcqRel) != on
    }
}

/// The failback check that applies to `member`: its own, else the group's.
pub(crate) fn check_for<'a>(
    options: &'a GroupOptions,
    member: &'a Member,
) -> Option<&'a HealthCheck> {
    member
        .inner
        .failback_check
        .as_ref()
        .or(options.failback_check.as_ref())
}

/// Whether any member is gated by a failback check; when none is, selection is
/// exactly what it was without the feature.
pub(crate) fn any_check(options: &GroupOptions, members: &[Member]) -> bool {
    options.failback_check.is_some() || members.iter().any(|m| m.inner.failback_check.is_some())
}

/// The active member when it counts as eligible whatever its verdict: an ordinary one
/// (the check never evicts it), or a provisional one whose first verdict since it
/// started serving is still under way (bounded by the check's probe timeout).
///
/// The second is the one refinement of "leave a provisional member as soon as an
/// eligible one exists": at start nobody has been asked, the best live member serves
/// provisionally, and verdicts arrive in any order; without it the group moved to a
/// lighter member that answered first and back 0.4 s later (seen in the example).
/// Once its own verdict is in and is not Healthy, an eligible member takes over at once.
pub(crate) fn kept(current: Option<&Member>) -> Option<&Member> {
    current.filter(|c| !c.is_provisional() || c.failback_result().is_none())
}

/// Whether the kept member is kept only while its first verdict is pending.
pub(crate) fn pending(kept: Option<&Member>) -> bool {
    kept.is_some_and(Member::is_provisional)
}

/// Whether `member` may take traffic by its failback check (see [`kept`]).
pub(crate) fn eligible(options: &GroupOptions, member: &Member, kept: Option<&Member>) -> bool {
    check_for(options, member).is_none() || kept == Some(member) || member.inner.failback.eligible()
}

/// After a selection: verdicts that no longer count are forgotten and the provisional
/// flags follow the choice. Returns the events to announce after `ActiveChanged`.
///
/// `provisional` says `next` was chosen by the liveness fallback; `decided` is false
/// when nobody was live and `next` is the previous member kept by default.
pub(crate) fn settle(
    options: &GroupOptions,
    members: &[Member],
    previous: Option<&Member>,
    next: Option<&Member>,
    provisional: bool,
    decided: bool,
) -> Vec<GroupEvent> {
    let mut events = Vec::new();
    for m in members {
        if check_for(options, m).is_some() && (!m.is_connected() || m.is_unhealthy()) {
            // A member that went away may come back behind: it must pass again.
            m.inner.failback.forget();
        }
    }
    if let Some(p) = previous.filter(|p| Some(*p) != next) {
        p.inner.failback.forget();
        if p.inner.failback.set_provisional(false) {
            events.push(GroupEvent::ProvisionalChanged {
                member: p.clone(),
                provisional: false,
            });
        }
    }
    if let Some(n) = next.filter(|_| decided) {
        if n.inner.failback.set_provisional(provisional) {
            if provisional {
                log::warn!(
                    "no live member passes its failback check: {} serves provisionally",
                    n.name()
                );
            } else {
                log::info!(
                    "{} passed its failback check: no longer provisional",
                    n.name()
                );
            }
            events.push(GroupEvent::ProvisionalChanged {
                member: n.clone(),
                provisional,
            });
        }
    }
    events
}

/// The supervisor's record of one member's failback checks.
#[derive(Default)]
pub(crate) struct Runner {
    /// The epoch the last check was started in: a new epoch runs one at once.
    last_epoch: Option<u64>,
    next: Option<Instant>,
    running: Option<(u64, Receiver<ProbeResult>)>,
}

/// One supervisor pass for one member: collects a finished check, starts one when due.
/// Returns whether a verdict changed (the group then re-selects) and how soon the
/// supervisor should look again.
pub(crate) fn step(
    group: &GroupInner,
    member: &Member,
    runner: &mut Runner,
    now: Instant,
) -> (bool, Option<Duration>) {
    let Some(check) = check_for(&group.options, member) else {
        return (false, None);
    };
    let mut changed = false;
    if let Some((epoch, rx)) = &runner.running {
        match rx.try_recv() {
            Ok(result) => {
                let epoch = *epoch;
                runner.running = None;
                if member.inner.failback.record(epoch, result) {
                    changed = true;
                    log::info!("member {}: failback check {result:?}", member.name());
                    group.events.publish(GroupEvent::FailbackCheckChanged {
                        member: member.clone(),
                        result,
                    });
                }
            }
            Err(crossbeam_channel::TryRecvError::Empty) => {}
            Err(crossbeam_channel::TryRecvError::Disconnected) => runner.running = None,
        }
    }
    let live = member.is_connected() && !member.is_unhealthy();
    let active = group.active();
    // The ordinary active member is never evicted by its check, so asking is waste.
    let wanted = live && (active.as_ref() != Some(member) || member.is_provisional());
    if !wanted || runner.running.is_some() {
        return (changed, None);
    }
    let epoch = member.inner.failback.epoch();
    if runner.last_epoch == Some(epoch) && runner.next.is_some_and(|at| now < at) {
        return (changed, runner.next.map(|at| at - now));
    }
    runner.last_epoch = Some(epoch);
    runner.next = crate::connection::deadline_after(now, check.interval).into();
    runner.running = start(member, check.clone(), epoch);
    (changed, Some(check.interval))
}

/// Runs one failback check on its own probe thread.
fn start(member: &Member, check: HealthCheck, epoch: u64) -> Option<(u64, Receiver<ProbeResult>)> {
    let client = member.client()?.clone();
    let name = member.name().to_string();
    let (tx, rx) = bounded(1);
    let spawned = std::thread::Builder::new()
        .name(format!("rr-failback {name}"))
        .spawn(move || {
            let deployment = client.deployment().clone();
            let result = super::probes::run_check(&check, &name, &deployment)
                .unwrap_or(ProbeResult::Inconclusive);
            let _ = tx.send(result);
        });
    match spawned {
        Ok(_) => Some((epoch, rx)),
        Err(e) => {
            log::warn!("cannot start a failback probe thread: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_from_an_earlier_epoch_does_not_count() {
        let s = FailbackState::default();
        assert_eq!(s.result(), None);
        assert!(s.record(0, ProbeResult::Healthy));
        assert!(s.eligible());
        assert!(!s.record(0, ProbeResult::Healthy), "unchanged");
        s.forget();
        assert!(!s.eligible());
        assert!(
            !s.record(0, ProbeResult::Healthy),
            "started before the member left"
        );
        assert!(s.record(1, ProbeResult::Inconclusive));
        assert!(!s.eligible(), "could not ask is not a pass");
        s.forget();
        assert!(s.record(2, ProbeResult::Healthy));
    }
}
