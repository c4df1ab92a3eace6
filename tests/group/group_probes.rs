//! The built-in probes and the probe policy contract, in a group against fakes:
//! `IsConnected` sends nothing; a write probe is Inconclusive on a replica that
//! answers `READONLY`, and in a cluster writes a key the probed node owns; a policy
//! that answers Inconclusive while probes remain gets another probe.

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilient_redis::availability::{
    Group, GroupEvent, GroupOptions, HealthCheck, IsConnected, KeyWrite, Member, Probe,
    ProbeCounts, ProbePolicy, ProbeResult, ProbeTarget, StringSet,
};
use resilient_redis::testkit::{FakeCluster, FakeServer};
use resilient_redis::Cmd;
use support::optin::opt_in;
use support::wait_until;

const WAIT: Duration = Duration::from_secs(10);

fn member(url: &str, name: &str, weight: u32) -> Member {
    Member::new(opt_in(format!(
        "{url}?syncTimeout=1000&reconnectMin=20&reconnectMax=100"
    )))
    .with_name(name)
    .with_weight(weight)
}

/// Every 100 ms, one probe of at most 300 ms.
fn check() -> HealthCheck {
    HealthCheck::default()
        .interval(Duration::from_millis(100))
        .probe_count(1)
        .probe_timeout(Duration::from_millis(300))
}

fn active(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

/// The first verdict of the failback check of the member `name` (bounded wait).
fn first_verdict(group: &Group, name: &str) -> Option<ProbeResult> {
    let member = group.member(name)?;
    assert!(
        wait_until(WAIT, || member.failback_result().is_some()),
        "{}",
        group.status()
    );
    member.failback_result()
}

/// `IsConnected` only looks at the connection: a server that answers `PING` with an
/// error passes it, where `Ping` fails it at its first check. (A server that stops
/// answering passes it too, until the client finds its connection unresponsive: the
/// latency sample after a passed check times `PING`s, and a request left unanswered
/// past its timeout sets the connection aside.)
#[test]
fn is_connected_sends_no_command_so_a_server_failing_ping_passes() {
    let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
    let group = Group::connect(
        vec![
            member(&a.url(), "a", 2).with_health_check(check().probe(Arc::new(IsConnected))),
            member(&b.url(), "b", 1),
        ],
        GroupOptions::default().health_check(check()),
    )
    .unwrap();
    assert!(wait_until(WAIT, || active(&group) == "a"));
    let events = group.events();
    a.fail_command("PING", "ERR not today");
    let failed_pings = |n| a.wait_for(|s| s.commands_received("PING") >= n, WAIT);
    a.reset_counters();
    // Ten checks at least: each passed one is followed by the latency sample's first
    // timed PING, which fails here (and ends the sample); the probe sends none.
    assert!(failed_pings(10), "the checks stopped");
    let health: Vec<GroupEvent> = events
        .try_iter()
        .filter(|e| matches!(e, GroupEvent::MemberHealthChanged { .. }))
        .collect();
    assert!(health.is_empty(), "{health:?}\n{}", group.status());
    assert!(!group.members()[0].is_unhealthy());
    assert_eq!(active(&group), "a");
}

/// A standby that is a replica refuses `StringSet`'s write with `READONLY`: its
/// failback check could not tell (Inconclusive), neither passed nor failed.
#[test]
fn a_write_probe_on_a_replica_that_answers_readonly_is_inconclusive() {
    let primary = FakeServer::start().unwrap();
    let replica = FakeServer::builder().role_replica().start().unwrap();
    let group = Group::connect(
        vec![
            member(&primary.url(), "primary", 2),
            member(&replica.url(), "replica", 1)
                .with_failback_check(check().probe(Arc::new(StringSet::default()))),
        ],
        GroupOptions::default().health_check(check()),
    )
    .unwrap();
    let replica_member = group.member("replica").unwrap();
    assert_eq!(
        first_verdict(&group, "replica"),
        Some(ProbeResult::Inconclusive)
    );
    assert!(replica.commands_received("SET") >= 1, "the write was tried");
    assert!(!replica_member.is_unhealthy());
}

/// In a cluster the check probes every master, and the key a write probe invents for
/// each lands on that master (any other key could hash to another node, and the
/// probe would check the wrong server, or meet `MOVED`).
#[test]
fn in_a_cluster_each_master_is_probed_with_a_key_it_owns() {
    let cluster = FakeCluster::start(3).unwrap();
    let seen: Arc<Mutex<Vec<(u16, String)>>> = Arc::default();
    let record = seen.clone();
    let probe = KeyWrite::new("__health", move |target, key, timeout| {
        record
            .lock()
            .unwrap()
            .push((target.endpoint().port, key.to_string()));
        let set = Cmd::new("SET").key(key).arg("1").arg("EX").arg(60);
        target.command::<()>(&set, timeout)?;
        Ok(true)
    });
    let group = Group::connect(
        vec![member(&cluster.url(), "cluster", 1)],
        GroupOptions::default().health_check(check().probe(Arc::new(probe))),
    )
    .unwrap();
    let probed = || {
        let mut ports: Vec<u16> = seen.lock().unwrap().iter().map(|(p, _)| *p).collect();
        ports.sort_unstable();
        ports.dedup();
        ports.len()
    };
    assert!(wait_until(WAIT, || probed() == 3), "{:?}", seen.lock());
    for (port, key) in seen.lock().unwrap().iter() {
        let owner = cluster
            .owner_of_key(key.as_bytes())
            .map(|i| cluster.node(i).port());
        assert_eq!(owner, Some(*port), "{key} was written to another node");
    }
    // And the checks pass. Waited for: the member can be flagged for a moment at start
    // (its other masters are dialled once its slot map is read, and until they are up
    // the member counts as down), and the verdict that clears it comes after the probes
    // recorded above (seen on a loaded machine, 1 run in 40).
    assert!(
        wait_until(WAIT, || !group.members()[0].is_unhealthy()),
        "{}",
        group.status()
    );
}

/// The reference guide's `AtLeastPolicy`: Inconclusive until `n` probes passed, while
/// probes remain.
#[derive(Debug)]
struct AtLeast(u32);

impl ProbePolicy for AtLeast {
    fn decide(&self, c: ProbeCounts) -> ProbeResult {
        if c.success >= self.0 {
            ProbeResult::Healthy
        } else if c.remaining == 0 {
            ProbeResult::Unhealthy
        } else {
            ProbeResult::Inconclusive
        }
    }
}

/// Always passes, counting its probes.
#[derive(Debug, Default)]
struct Counted(AtomicU32);

impl Probe for Counted {
    fn probe(&self, _target: &ProbeTarget<'_>, _timeout: Duration) -> ProbeResult {
        self.0.fetch_add(1, Ordering::SeqCst);
        ProbeResult::Healthy
    }
}

/// A policy answering Inconclusive while probes remain asks for another probe: two
/// passes make the verdict Healthy, where one probe alone would leave it Inconclusive.
#[test]
fn a_policy_that_answers_inconclusive_gets_another_probe() {
    let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
    let probe = Arc::new(Counted::default());
    let at_least_two = check()
        .probe_count(5)
        .probe(probe.clone())
        .policy(Arc::new(AtLeast(2)));
    let group = Group::connect(
        vec![
            member(&a.url(), "a", 2),
            member(&b.url(), "b", 1).with_failback_check(at_least_two),
        ],
        GroupOptions::default().health_check(check()),
    )
    .unwrap();
    assert_eq!(first_verdict(&group, "b"), Some(ProbeResult::Healthy));
    assert!(probe.0.load(Ordering::SeqCst) >= 2);
}
