//! Active health checks: probes, three-valued results, and the policies that turn a
//! run of probe results into a verdict.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::builtin_probes::Ping;
use super::target::{Probe, ProbeResult, ProbeTarget};
use crate::client::{Deployment, Node};
use crate::config::Endpoint;

/// Probe results so far in one check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeCounts {
    /// Healthy results.
    pub success: u32,
    /// Unhealthy results.
    pub failure: u32,
    /// Inconclusive results.
    pub inconclusive: u32,
    /// Probes still allowed.
    pub remaining: u32,
}

/// Turns probe results into a verdict. Returning `Inconclusive` while probes remain
/// asks for another probe; once none remain, the answer is final.
pub trait ProbePolicy: Send + Sync + fmt::Debug {
    /// The verdict so far.
    fn decide(&self, counts: ProbeCounts) -> ProbeResult;
}

/// Healthy when every decisive probe succeeded; one failure is enough to fail.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllSuccess;

/// Healthy as soon as one probe succeeds; unhealthy only when none did and one failed.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnySuccess;

/// Healthy when a majority of the probes succeeded, unhealthy when a majority failed,
/// else Inconclusive.
#[derive(Clone, Copy, Debug, Default)]
pub struct MajoritySuccess;

impl ProbePolicy for AllSuccess {
    fn decide(&self, c: ProbeCounts) -> ProbeResult {
        if c.failure > 0 {
            ProbeResult::Unhealthy
        } else if c.remaining > 0 || c.success == 0 {
            // Nothing but inconclusive results stays inconclusive, never Healthy.
            ProbeResult::Inconclusive
        } else {
            ProbeResult::Healthy
        }
    }
}

impl ProbePolicy for AnySuccess {
    fn decide(&self, c: ProbeCounts) -> ProbeResult {
        if c.success > 0 {
            ProbeResult::Healthy
        } else if c.remaining > 0 || c.failure == 0 {
            // Nothing but inconclusive results stays inconclusive, never Unhealthy.
            ProbeResult::Inconclusive
        } else {
            ProbeResult::Unhealthy
        }
    }
}

impl ProbePolicy for MajoritySuccess {
    /// A majority of all the probes (those still to run included) decides, as soon as
    /// it is reached; without one (1 success and 2 Inconclusive, say) the check is
    /// Inconclusive, never a pass.
    fn decide(&self, c: ProbeCounts) -> ProbeResult {
        let total = c.success + c.failure + c.inconclusive + c.remaining;
        if c.success * 2 > total {
            ProbeResult::Healthy
        } else if c.failure * 2 > total {
            ProbeResult::Unhealthy
        } else {
            ProbeResult::Inconclusive
        }
    }
}

/// Where a check's probe runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProbeScope {
    /// Once per server the member serves from (the one server of a standalone
    /// deployment, every slot-owning master of a cluster); the member fails when any
    /// of them fails, and passes when at least one passes and none fails (a server
    /// that cannot tell, such as a replica under `StringSet`, does not hold it back).
    #[default]
    Endpoint,
    /// Once per member, against the endpoint it was configured with: for probes that
    /// ask about the whole deployment (the Redis Enterprise availability API), where
    /// asking per server would repeat the same question, or ask it of a name the
    /// management plane does not know.
    Member,
}

/// How a member is checked: every `interval`, up to `probe_count` probes of at most
/// `probe_timeout` each, `probe_interval` apart after a failed one, judged by `policy`.
///
/// The defaults are the values other clients converged on: 5 s, 3 probes, 3 s,
/// 500 ms, `Ping`, `AllSuccess`, per endpoint. Tuned with consuming setters, like every
/// configuration value of the crate:
///
/// ```
/// use resilient_redis::availability::{HealthCheck, MajoritySuccess};
/// use std::sync::Arc;
/// use std::time::Duration;
/// let check = HealthCheck::default()
///     .interval(Duration::from_secs(1))
///     .probe_count(5)
///     .policy(Arc::new(MajoritySuccess));
/// assert_eq!(check.probe_count, 5);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HealthCheck {
    /// Time between checks.
    pub interval: Duration,
    /// Probes at most per check.
    pub probe_count: u32,
    /// Time one probe may take.
    pub probe_timeout: Duration,
    /// Pause after a failed probe before the next.
    pub probe_interval: Duration,
    /// What a probe does.
    pub probe: Arc<dyn Probe>,
    /// How results become a verdict.
    pub policy: Arc<dyn ProbePolicy>,
    /// Once per server or once per member.
    pub scope: ProbeScope,
}

impl Default for HealthCheck {
    fn default() -> HealthCheck {
        HealthCheck {
            interval: Duration::from_secs(5),
            probe_count: 3,
            probe_timeout: Duration::from_secs(3),
            probe_interval: Duration::from_millis(500),
            probe: Arc::new(Ping),
            policy: Arc::new(AllSuccess),
            scope: ProbeScope::Endpoint,
        }
    }
}

impl HealthCheck {
    /// Time between checks (5 s).
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Probes at most per check (3).
    pub fn probe_count(mut self, count: u32) -> Self {
        self.probe_count = count;
        self
    }

    /// Time one probe may take (3 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Pause after a failed probe before the next (500 ms).
    pub fn probe_interval(mut self, interval: Duration) -> Self {
        self.probe_interval = interval;
        self
    }

    /// What a probe does ([`Ping`]).
    pub fn probe(mut self, probe: Arc<dyn Probe>) -> Self {
        self.probe = probe;
        self
    }

    /// How results become a verdict ([`AllSuccess`]).
    pub fn policy(mut self, policy: Arc<dyn ProbePolicy>) -> Self {
        self.policy = policy;
        self
    }

    /// Once per server or once per member ([`ProbeScope::Endpoint`]).
    pub fn scope(mut self, scope: ProbeScope) -> Self {
        self.scope = scope;
        self
    }

    /// Runs one check against `target` (on the calling probe thread).
    pub fn run(&self, target: &ProbeTarget<'_>) -> ProbeResult {
        let total = self.probe_count.max(1);
        let mut counts = ProbeCounts {
            remaining: total,
            ..ProbeCounts::default()
        };
        loop {
            let result = self.probe.probe(target, self.probe_timeout);
            counts.remaining -= 1;
            match result {
                ProbeResult::Healthy => counts.success += 1,
                ProbeResult::Unhealthy => counts.failure += 1,
                ProbeResult::Inconclusive => counts.inconclusive += 1,
            }
            let verdict = self.policy.decide(counts);
            if verdict != ProbeResult::Inconclusive || counts.remaining == 0 {
                return verdict;
            }
            if result != ProbeResult::Healthy {
                std::thread::sleep(self.probe_interval);
            }
        }
    }
}

/// One verdict for a member from its servers' verdicts (see [`ProbeScope::Endpoint`]):
/// any failure fails it, else any pass passes it, else (no server, or none could tell)
/// it is Inconclusive.
pub(crate) fn collate(results: impl IntoIterator<Item = ProbeResult>) -> ProbeResult {
    let mut verdict = ProbeResult::Inconclusive;
    for r in results {
        match r {
            ProbeResult::Unhealthy => return ProbeResult::Unhealthy,
            ProbeResult::Healthy => verdict = ProbeResult::Healthy,
            ProbeResult::Inconclusive => {}
        }
    }
    verdict
}

/// Runs `check` for a member on the calling probe thread, once per member or once per
/// serving server as its scope says; `None` when there is nothing to probe yet. A
/// primary/replica member is checked on its primary only: while it knows none (its
/// primary died, no replica promoted yet) the check fails without a probe, since a
/// replica that answers says nothing of whether the member can take a write.
pub(crate) fn run_check(
    check: &HealthCheck,
    member: &str,
    deployment: &Arc<Deployment>,
) -> Option<ProbeResult> {
    if deployment.knows_no_primary() {
        log::debug!("{member}: no primary known: the check fails");
        return Some(ProbeResult::Unhealthy);
    }
    let primary = deployment.primary()?;
    let nodes = match (check.scope, deployment.cluster()) {
        (ProbeScope::Endpoint, Some(state)) => {
            // The serving masters, read off the slot map on this probe thread (16384
            // lookups, well under a millisecond, once per check).
            let mut masters: Vec<Endpoint> = Vec::new();
            for slot in 0..crate::client::cluster::SLOT_COUNT {
                if let Some(m) = state.master_for(slot) {
                    if !masters.contains(&m) {
                        masters.push(m);
                    }
                }
            }
            let nodes: Vec<Arc<Node>> = masters.iter().filter_map(|e| deployment.find(e)).collect();
            // Before the slot map is known, the seed is all there is to ask.
            if nodes.is_empty() {
                vec![primary]
            } else {
                nodes
            }
        }
        _ => vec![primary],
    };
    Some(collate(nodes.into_iter().map(|node| {
        check.run(&ProbeTarget {
            member,
            node,
            deployment: deployment.clone(),
        })
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_verdicts_collate_failure_first_and_inconclusive_never_passes() {
        use ProbeResult::*;
        assert_eq!(collate([Healthy, Unhealthy, Healthy]), Unhealthy);
        assert_eq!(collate([Healthy, Inconclusive]), Healthy);
        assert_eq!(collate([Inconclusive, Inconclusive]), Inconclusive);
        assert_eq!(collate([]), Inconclusive);
    }

    fn c(success: u32, failure: u32, inconclusive: u32, remaining: u32) -> ProbeCounts {
        ProbeCounts {
            success,
            failure,
            inconclusive,
            remaining,
        }
    }

    #[test]
    fn all_inconclusive_is_inconclusive_under_every_built_in_policy() {
        let policies: [&dyn ProbePolicy; 3] = [&AllSuccess, &AnySuccess, &MajoritySuccess];
        for p in policies {
            assert_eq!(p.decide(c(0, 0, 3, 0)), ProbeResult::Inconclusive, "{p:?}");
            assert_eq!(p.decide(c(0, 0, 1, 2)), ProbeResult::Inconclusive, "{p:?}");
        }
    }

    #[test]
    fn all_success_fails_fast_and_needs_every_decisive_probe() {
        assert_eq!(AllSuccess.decide(c(0, 1, 0, 2)), ProbeResult::Unhealthy);
        assert_eq!(AllSuccess.decide(c(1, 0, 0, 2)), ProbeResult::Inconclusive);
        assert_eq!(AllSuccess.decide(c(3, 0, 0, 0)), ProbeResult::Healthy);
        assert_eq!(AllSuccess.decide(c(2, 0, 1, 0)), ProbeResult::Healthy);
    }

    #[test]
    fn any_success_succeeds_fast_and_fails_only_at_the_end() {
        assert_eq!(AnySuccess.decide(c(1, 0, 0, 2)), ProbeResult::Healthy);
        assert_eq!(AnySuccess.decide(c(0, 1, 0, 2)), ProbeResult::Inconclusive);
        assert_eq!(AnySuccess.decide(c(0, 3, 0, 0)), ProbeResult::Unhealthy);
        assert_eq!(AnySuccess.decide(c(0, 1, 2, 0)), ProbeResult::Unhealthy);
    }

    #[test]
    fn majority_decides_as_soon_as_it_can() {
        assert_eq!(MajoritySuccess.decide(c(2, 0, 0, 1)), ProbeResult::Healthy);
        assert_eq!(
            MajoritySuccess.decide(c(0, 2, 0, 1)),
            ProbeResult::Unhealthy
        );
        assert_eq!(
            MajoritySuccess.decide(c(1, 1, 0, 1)),
            ProbeResult::Inconclusive
        );
        assert_eq!(
            MajoritySuccess.decide(c(1, 1, 1, 0)),
            ProbeResult::Inconclusive
        );
        assert_eq!(
            MajoritySuccess.decide(c(1, 0, 2, 0)),
            ProbeResult::Inconclusive,
            "1 success of 3 is no majority"
        );
        assert_eq!(MajoritySuccess.decide(c(2, 1, 0, 0)), ProbeResult::Healthy);
        assert_eq!(
            MajoritySuccess.decide(c(1, 2, 0, 0)),
            ProbeResult::Unhealthy
        );
    }
}
