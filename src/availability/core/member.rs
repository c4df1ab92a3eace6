//! One member's standing as the core keeps it: connection, health, latency, failback
//! verdicts and check schedules.

use std::time::{Duration, Instant};

use super::latency::Latency;
use super::{MemberId, MemberSpec};
use crate::availability::target::ProbeResult;

/// Which check to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CheckKind {
    /// The liveness check (`HealthCheck` of the member or the group).
    Health,
    /// The failback check, started in `epoch`: its verdict counts only while the
    /// epoch is still current.
    Failback { epoch: u64 },
}

/// What the group shows of a member: the core's published view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemberView {
    /// Its first connection attempt has finished (up or not).
    pub settled: bool,
    pub connected: bool,
    pub unhealthy: bool,
    pub provisional: bool,
    pub latency: Option<Duration>,
    pub failback_result: Option<ProbeResult>,
}

#[derive(Debug)]
pub(super) struct FailbackStanding {
    interval: Duration,
    /// The latest verdict in the current epoch (`None`: not asked since).
    verdict: Option<ProbeResult>,
    /// Moves on whenever earlier verdicts stop counting (the member left the active
    /// role, or stopped being live), so a check started before cannot make it eligible.
    epoch: u64,
    /// The epoch of the check under way.
    running: Option<u64>,
    /// The epoch the last check was started in: a new epoch runs one at once.
    last_epoch: Option<u64>,
    next_at: Option<Instant>,
}

#[derive(Debug)]
pub(super) struct MemberState {
    pub id: MemberId,
    pub weight: u32,
    pub connected: bool,
    /// Its first connection attempt has finished (up or not).
    pub settled: bool,
    pub unhealthy: bool,
    pub last_failure: Option<Instant>,
    /// Its latest failure was a tripped breaker: its traffic failed while its
    /// connection looked fine, so a reconnect alone does not earn it a check at once
    /// (it waits for its next interval, or it would flap straight back).
    pub tripped: bool,
    latency: Latency,
    pub provisional: bool,
    health_interval: Duration,
    pub health_running: bool,
    health_next: Option<Instant>,
    /// Counts connection changes, so a check that started on an earlier connection
    /// cannot fail the member on its current one.
    pub connection_changes: u64,
    health_started_on: u64,
    /// Counts failures, so a check that started before the latest one (and passed,
    /// its probe having run before the trouble) cannot put the member back.
    pub failures: u64,
    health_started_after: u64,
    pub failback: Option<FailbackStanding>,
    /// How long it may be down while it fails over inside itself (a Sentinel or
    /// cluster member promoting a replica) before the group moves traffic.
    local_failover: Option<Duration>,
    /// Down, but held as live until then: its own failover may bring it back.
    pub holding: Option<Instant>,
}

impl MemberState {
    pub(super) fn new(spec: MemberSpec) -> MemberState {
        MemberState {
            id: spec.id,
            weight: spec.weight,
            connected: false,
            settled: false,
            unhealthy: false,
            last_failure: None,
            tripped: false,
            latency: Latency::default(),
            provisional: false,
            health_interval: spec.health_interval,
            health_running: false,
            health_next: None,
            connection_changes: 0,
            health_started_on: 0,
            failures: 0,
            health_started_after: 0,
            local_failover: spec.local_failover,
            holding: None,
            failback: spec.failback_interval.map(|interval| FailbackStanding {
                interval,
                verdict: None,
                epoch: 0,
                running: None,
                last_epoch: None,
                next_at: None,
            }),
        }
    }

    pub(super) fn view(&self) -> MemberView {
        MemberView {
            settled: self.settled,
            connected: self.connected,
            unhealthy: self.unhealthy,
            provisional: self.provisional,
            latency: self.latency(),
            failback_result: self.failback_verdict(),
        }
    }

    /// Connected (or held while it fails over inside itself) and not flagged
    /// unhealthy.
    pub(super) fn is_live(&self) -> bool {
        (self.connected || self.holding.is_some()) && !self.unhealthy
    }

    /// Starts holding it after its connection was lost, if it fails over inside
    /// itself; whether it is held.
    pub(super) fn hold(&mut self, now: Instant) -> bool {
        match self.local_failover {
            Some(grace) => {
                self.holding = Some(now.checked_add(grace).unwrap_or(now));
                true
            }
            None => false,
        }
    }

    /// Eligible by its failback check: none configured, or its verdict is Healthy.
    pub(super) fn eligible(&self) -> bool {
        self.failback
            .as_ref()
            .is_none_or(|f| f.verdict == Some(ProbeResult::Healthy))
    }

    pub(super) fn failback_verdict(&self) -> Option<ProbeResult> {
        self.failback.as_ref().and_then(|f| f.verdict)
    }

    /// Folds one latency sample in, taken on its current connection.
    pub(super) fn record_latency(&mut self, sample: Duration) {
        self.latency.record(sample, self.connection_changes);
    }

    /// Its distance as selection ranks it (see `latency.rs`); `None` until measured.
    pub(super) fn latency(&self) -> Option<Duration> {
        self.latency.estimate()
    }

    /// Asks for a health check at the next opportunity.
    pub(super) fn check_now(&mut self, now: Instant) {
        self.health_next = Some(now);
    }

    /// Calls are stalled: a check now unless one is under way (its verdict answers).
    pub(super) fn check_out_of_turn(&mut self, now: Instant) {
        if !self.health_running {
            self.check_now(now);
        }
    }

    /// Whether a health check starts now; if so, it is marked under way.
    pub(super) fn health_due(&mut self, now: Instant) -> bool {
        // Not before its first connection attempt is over: a check then would find it
        // down and start its failback delay for nothing.
        if !self.settled || self.health_running || self.health_next.is_some_and(|at| now < at) {
            return false;
        }
        self.health_running = true;
        self.health_started_on = self.connection_changes;
        self.health_started_after = self.failures;
        self.health_next = Some(now.checked_add(self.health_interval).unwrap_or(now));
        true
    }

    /// Whether the check that just finished ran on the member's current connection.
    pub(super) fn check_is_current(&self) -> bool {
        self.health_started_on == self.connection_changes
    }

    /// Whether the check that just finished started after the member's latest failure,
    /// so that its pass says something about the member since then.
    pub(super) fn check_is_after_failure(&self) -> bool {
        self.health_started_after == self.failures
    }

    /// When its next check is due: health always, failback when `wants_failback`;
    /// and when a hold ends.
    pub(super) fn next_due(&self, wants_failback: bool) -> Vec<Instant> {
        let mut due = Vec::with_capacity(3);
        due.extend(self.holding);
        if self.settled && !self.health_running {
            if let Some(at) = self.health_next {
                due.push(at);
            }
        }
        if let Some(f) = self.failback.as_ref().filter(|_| wants_failback) {
            if f.running.is_none() {
                match f.next_at {
                    Some(at) if f.last_epoch == Some(f.epoch) => due.push(at),
                    // A new epoch asks at once.
                    _ => {}
                }
            }
        }
        due
    }

    /// The epoch of a failback check that starts now, if one is due.
    pub(super) fn failback_due(&mut self, now: Instant, wanted: bool) -> Option<u64> {
        let f = self.failback.as_mut()?;
        if !wanted || f.running.is_some() {
            return None;
        }
        if f.last_epoch == Some(f.epoch) && f.next_at.is_some_and(|at| now < at) {
            return None;
        }
        f.last_epoch = Some(f.epoch);
        f.next_at = Some(now.checked_add(f.interval).unwrap_or(now));
        f.running = Some(f.epoch);
        Some(f.epoch)
    }

    /// Records a failback verdict from a check started in `epoch`; whether the
    /// verdict in force changed.
    pub(super) fn record_failback(&mut self, epoch: u64, result: ProbeResult) -> bool {
        let Some(f) = self.failback.as_mut() else {
            return false;
        };
        if f.running == Some(epoch) {
            f.running = None;
        }
        if f.epoch != epoch {
            return false;
        }
        f.verdict.replace(result) != Some(result)
    }

    #[cfg(test)]
    pub(super) fn epoch_for_tests(&self) -> u64 {
        self.failback.as_ref().map_or(0, |f| f.epoch)
    }

    /// Earlier verdicts, and checks already under way, no longer count: the member
    /// must pass a check started from now on before it takes traffic.
    pub(super) fn forget_failback(&mut self) {
        if let Some(f) = self.failback.as_mut() {
            if f.verdict.is_some() || f.running == Some(f.epoch) || f.last_epoch == Some(f.epoch) {
                f.verdict = None;
                f.epoch += 1;
            }
        }
    }

    /// An operator chose this member (`try_failover_to`): it counts as passed.
    pub(super) fn vouch(&mut self) {
        if let Some(f) = self.failback.as_mut() {
            f.verdict = Some(ProbeResult::Healthy);
        }
    }
}

/// Whether a member whose last failure was at `last` may come back at `now`:
/// inclusive, so a zero delay clears on the same clock tick; a delay too long to add
/// (`Duration::MAX`) never clears by itself: failback is then manual only.
pub(super) fn failback_due(last: Option<Instant>, now: Instant, delay: Duration) -> bool {
    match last {
        None => true,
        Some(t) => t.checked_add(delay).is_some_and(|due| now >= due),
    }
}
