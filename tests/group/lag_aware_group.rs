//! Lag-aware failback in a group, with fake Redis members and fake REST APIs: a member
//! alive but behind is held off and taken back once caught up; when every member is
//! behind the group serves provisionally and leaves for an eligible member whatever
//! the weights; a management plane that is down fails nothing over.
//!
//! Each over plain TCP and over TLS (`scenario::tcp`, `scenario::tls`): over TLS the
//! whole group is, the members' data side (fakes under one issuer the clients trust)
//! as the REST API (HTTPS, its own certificate, trusted by the lag-aware probe).

use crate::over_both_transports;
use crate::support;

use std::time::Duration;

use crossbeam_channel::Receiver;
use resilient_redis::availability::{
    ChangeReason, Group, GroupEvent, GroupMember, GroupOptions, HealthCheck, LagAwareOptions,
    Member, Probe, ProbeResult, ProbeScope, ProbeTarget, RestCredentials,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeRestApi, FakeServer};
use support::optin::opt_in;
use support::transport::Transport;
use support::{events_until, wait_until};

const WAIT: Duration = Duration::from_secs(10);

over_both_transports!(
    a_preferred_member_alive_but_lagging_is_held_off_and_taken_back_once_caught_up,
    a_member_that_comes_back_behind_after_an_outage_is_held_off_until_it_catches_up,
    in_a_partition_the_group_serves_provisionally_and_leaves_for_an_eligible_member_whatever_the_weights,
    a_provisional_member_becomes_ordinary_once_it_passes_its_own_check,
    a_management_plane_that_is_down_fails_nothing_over,
    without_a_failback_check_nothing_changes_and_no_failback_probe_runs,
    at_start_a_lighter_member_answering_first_does_not_pull_traffic_off_the_best_one,
    a_manual_failover_stands_in_for_a_passed_failback_check,
    a_probe_runs_once_per_serving_master_or_once_per_member_as_its_scope_says,
);

/// A region: its Redis and its cluster's REST API, which knows the database.
struct Region {
    server: FakeServer,
    api: FakeRestApi,
    uid: u64,
}

fn region(t: &Transport) -> Region {
    let server = t.server();
    let api = FakeRestApi::start().unwrap();
    let uid = api.add_database_for(server.addr());
    Region { server, api, uid }
}

fn lag_check(api: &FakeRestApi) -> HealthCheck {
    let (user, password) = api.credentials();
    let options =
        LagAwareOptions::new(move || Some(RestCredentials::new(user.clone(), password.clone())))
            .rest_endpoint(api.url())
            .trust_issuer_pem(api.certificate_pem().as_bytes())
            .unwrap();
    HealthCheck::lag_aware(options)
        .interval(Duration::from_millis(100))
        // Generous: a REST answer slowed by a loaded machine must not read as
        // "could not ask" (Inconclusive), which would make the member ineligible.
        .probe_timeout(Duration::from_millis(3000))
}

fn plain(t: &Transport, server: &FakeServer, name: &str, weight: u32) -> Member {
    Member::from_options(opt_in(t.options(&format!(
        "{}?syncTimeout=1000&connectTimeout=1000&reconnectMin=20&reconnectMax=100",
        server.url()
    ))))
    .with_name(name)
    .with_weight(weight)
}

fn member(t: &Transport, r: &Region, name: &str, weight: u32) -> Member {
    plain(t, &r.server, name, weight).with_failback_check(lag_check(&r.api))
}

/// Frequent liveness checks with a generous probe timeout: on a loaded CI machine a
/// short one fails healthy members and moves traffic the scenarios do not expect.
fn options() -> GroupOptions {
    GroupOptions::default().health_check(
        HealthCheck::default()
            .interval(Duration::from_millis(100))
            .probe_count(1)
            .probe_timeout(Duration::from_millis(1000))
            .probe_interval(Duration::from_millis(20)),
    )
}

fn active(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

fn by_name(group: &Group, name: &str) -> GroupMember {
    group.member(name).unwrap()
}

/// Availability questions `api` was asked about database `uid`.
fn questions(api: &FakeRestApi, uid: u64) -> usize {
    let path = format!("/v1/bdbs/{uid}/availability");
    api.requests().iter().filter(|r| r.contains(&path)).count()
}

/// Waits until `api` has answered `n` more questions about `uid`, checking `holds` at
/// every poll: how a test says "for several checks" without sleeping.
fn for_checks(api: &FakeRestApi, uid: u64, n: usize, mut holds: impl FnMut() -> bool) {
    let start = questions(api, uid);
    assert!(wait_until(WAIT, || {
        assert!(holds(), "the invariant broke while checks ran");
        questions(api, uid) >= start + n
    }));
}

/// Why traffic last moved to `name`, among the events received so far.
fn moved_to(
    events: &Receiver<GroupEvent>,
    seen: &mut Vec<GroupEvent>,
    name: &str,
) -> Option<ChangeReason> {
    // The active member is published before the event that announces it.
    let find = |seen: &Vec<GroupEvent>| {
        seen.iter().rev().find_map(|e| match e {
            GroupEvent::ActiveChanged {
                current: Some(m),
                reason,
                ..
            } if m.name() == name => Some(*reason),
            _ => None,
        })
    };
    wait_until(WAIT, || {
        seen.extend(events.try_iter());
        find(seen).is_some()
    });
    find(seen)
}

fn a_preferred_member_alive_but_lagging_is_held_off_and_taken_back_once_caught_up(t: Transport) {
    let (a, b) = (t.server(), t.server());
    // One cluster API for both databases, one failback check for the whole group.
    let api = FakeRestApi::start().unwrap();
    let (uid_a, _) = (
        api.add_database_for(a.addr()),
        api.add_database_for(b.addr()),
    );
    api.set_lagging(uid_a, true);
    let group = Group::connect(
        vec![plain(&t, &a, "a", 2), plain(&t, &b, "b", 1)],
        options().failback_check(lag_check(&api)),
    )
    .unwrap();
    let events = group.events();
    let mut seen = Vec::new();
    let member_a = by_name(&group, "a");
    assert!(wait_until(WAIT, || active(&group) == "b"
        && member_a.failback_result() == Some(ProbeResult::Unhealthy)));
    // Held off while alive and connected, for many checks; writes go to b.
    for_checks(&api, uid_a, 5, || {
        active(&group) == "b" && member_a.is_connected() && !member_a.is_unhealthy()
    });
    group.database().set("k", "written-while-a-lagged").unwrap();
    let direct_b = Client::connect(opt_in(t.options(&b.url())))
        .unwrap()
        .database();
    assert_eq!(
        direct_b.get::<String>("k").unwrap(),
        "written-while-a-lagged"
    );
    assert!(!by_name(&group, "b").is_provisional());
    api.set_lagging(uid_a, false);
    assert!(wait_until(WAIT, || active(&group) == "a"));
    assert_eq!(
        moved_to(&events, &mut seen, "a"),
        Some(ChangeReason::FailbackCheck)
    );
    assert!(!member_a.is_provisional());
    assert!(api.unfiltered_reads().is_empty());
}

fn a_member_that_comes_back_behind_after_an_outage_is_held_off_until_it_catches_up(t: Transport) {
    let (ra, rb) = (region(&t), region(&t));
    let group = Group::connect(
        vec![member(&t, &ra, "a", 2), member(&t, &rb, "b", 1)],
        options(),
    )
    .unwrap();
    let a = by_name(&group, "a");
    assert!(wait_until(WAIT, || active(&group) == "a" && !a.is_provisional()));
    // Outage: a stops answering, b takes over.
    ra.server.hang(true);
    assert!(wait_until(WAIT, || active(&group) == "b"));
    // a's region comes back reachable but behind.
    ra.api.set_lagging(ra.uid, true);
    ra.server.hang(false);
    assert!(wait_until(WAIT, || a.is_connected()
        && !a.is_unhealthy()
        && a.failback_result() == Some(ProbeResult::Unhealthy)));
    for_checks(&ra.api, ra.uid, 5, || active(&group) == "b");
    ra.api.set_lagging(ra.uid, false);
    assert!(wait_until(WAIT, || active(&group) == "a"));
}

fn in_a_partition_the_group_serves_provisionally_and_leaves_for_an_eligible_member_whatever_the_weights(
    t: Transport,
) {
    let (ra, rb, rc) = (region(&t), region(&t), region(&t));
    let group = Group::connect(
        vec![
            member(&t, &ra, "a", 3),
            member(&t, &rb, "b", 2),
            member(&t, &rc, "c", 1),
        ],
        options(),
    )
    .unwrap();
    let events = group.events();
    let mut seen = Vec::new();
    let [a, b, c] = ["a", "b", "c"].map(|n| by_name(&group, n));
    assert!(wait_until(WAIT, || active(&group) == "a" && !a.is_provisional()));
    // The partition: every region falls behind. The active member is never evicted.
    for r in [&ra, &rb, &rc] {
        r.api.set_lagging(r.uid, true);
    }
    for_checks(&rb.api, rb.uid, 3, || {
        active(&group) == "a" && !a.is_provisional()
    });
    // Then a dies: nobody is eligible, so the best live member serves, provisionally.
    ra.server.hang(true);
    assert!(wait_until(WAIT, || active(&group) == "b" && b.is_provisional()));
    group
        .database()
        .set("k", "served-in-the-partition")
        .unwrap();
    // State is published before the events that announce it: wait for the event.
    assert!(wait_until(WAIT, || {
        seen.extend(events.try_iter());
        seen.iter().any(|e| {
            matches!(e,
            GroupEvent::ProvisionalChanged { member, provisional: true } if member.name() == "b")
        })
    }));
    // The lightest member catches up first: traffic goes there at once.
    rc.api.set_lagging(rc.uid, false);
    assert!(wait_until(WAIT, || active(&group) == "c"));
    assert_eq!(
        moved_to(&events, &mut seen, "c"),
        Some(ChangeReason::FailbackCheck)
    );
    assert!(!c.is_provisional() && !b.is_provisional());
    assert!(wait_until(WAIT, || {
        seen.extend(events.try_iter());
        seen.iter().any(|e| {
            matches!(e,
            GroupEvent::ProvisionalChanged { member, provisional: false } if member.name() == "b")
        })
    }));
}

fn a_provisional_member_becomes_ordinary_once_it_passes_its_own_check(t: Transport) {
    let (ra, rb) = (region(&t), region(&t));
    ra.api.set_lagging(ra.uid, true);
    rb.api.set_lagging(rb.uid, true);
    let group = Group::connect(
        vec![member(&t, &ra, "a", 2), member(&t, &rb, "b", 1)],
        options(),
    )
    .unwrap();
    let a = by_name(&group, "a");
    let b = by_name(&group, "b");
    assert!(wait_until(WAIT, || a.failback_result()
        == Some(ProbeResult::Unhealthy)
        && b.failback_result() == Some(ProbeResult::Unhealthy)));
    assert_eq!(active(&group), "a");
    assert!(a.is_provisional(), "served, but provisionally");
    let events = group.events();
    ra.api.set_lagging(ra.uid, false);
    assert!(wait_until(WAIT, || !a.is_provisional()));
    assert_eq!(active(&group), "a", "no move: it was already the best");
    assert!(events_until(&events, WAIT, |e| matches!(e,
        GroupEvent::ProvisionalChanged { member, provisional: false } if member.name() == "a"))
    .iter()
    .any(|e| matches!(e,
        GroupEvent::ProvisionalChanged { member, provisional: false } if member.name() == "a")));
    // Ordinary now: falling behind again does not evict it.
    ra.api.set_lagging(ra.uid, true);
    rb.api.set_lagging(rb.uid, false);
    for_checks(&rb.api, rb.uid, 3, || active(&group) == "a");
}

fn a_management_plane_that_is_down_fails_nothing_over(t: Transport) {
    let (ra, rb) = (region(&t), region(&t));
    let group = Group::connect(
        vec![member(&t, &ra, "a", 2), member(&t, &rb, "b", 1)],
        options(),
    )
    .unwrap();
    let (a, b) = (by_name(&group, "a"), by_name(&group, "b"));
    assert!(wait_until(WAIT, || active(&group) == "a" && !a.is_provisional()));
    let events = group.events();
    // b's cluster refuses the credentials; a's answers too slowly; then a's goes away.
    rb.api.set_auth_failure(Some(401));
    ra.api.set_delay(Duration::from_secs(5));
    ra.api.shutdown();
    let asked = rb.api.requests().len();
    assert!(wait_until(WAIT, || rb.api.requests().len() >= asked + 5
        && b.failback_result() == Some(ProbeResult::Inconclusive)));
    assert_eq!(active(&group), "a");
    assert!(
        !a.is_unhealthy() && !b.is_unhealthy(),
        "liveness is untouched"
    );
    assert!(
        !events.try_iter().any(|e| matches!(
            e,
            GroupEvent::ActiveChanged { .. } | GroupEvent::MemberHealthChanged { .. }
        )),
        "nothing moved"
    );
    group.database().set("k", "v").unwrap();
}

fn without_a_failback_check_nothing_changes_and_no_failback_probe_runs(t: Transport) {
    let (ra, rb) = (region(&t), region(&t));
    let group = Group::connect(
        vec![plain(&t, &ra.server, "a", 2), plain(&t, &rb.server, "b", 1)],
        options(),
    )
    .unwrap();
    let a = by_name(&group, "a");
    assert!(wait_until(WAIT, || ra.server.commands_received("PING")
        >= 5
        && rb.server.commands_received("PING") >= 5));
    assert_eq!(active(&group), "a");
    assert!(!a.is_provisional() && a.failback_result().is_none());
    assert!(ra.api.requests().is_empty() && rb.api.requests().is_empty());
}

fn at_start_a_lighter_member_answering_first_does_not_pull_traffic_off_the_best_one(t: Transport) {
    let (ra, rb) = (region(&t), region(&t));
    // a's cluster answers slowly (its three first questions well within the probe
    // timeout), b's at once.
    ra.api.set_delay(Duration::from_millis(150));
    let group = Group::connect(
        vec![member(&t, &ra, "a", 2), member(&t, &rb, "b", 1)],
        options(),
    )
    .unwrap();
    let events = group.events();
    let (a, b) = (by_name(&group, "a"), by_name(&group, "b"));
    assert!(wait_until(WAIT, || b.failback_result() == Some(ProbeResult::Healthy)));
    assert_eq!(
        active(&group),
        "a",
        "kept while its own first verdict is under way"
    );
    assert!(a.is_provisional());
    assert!(wait_until(WAIT, || a.failback_result().is_some()));
    assert_eq!(a.failback_result(), Some(ProbeResult::Healthy));
    // The verdict is recorded first; the re-selection that follows clears the flag.
    assert!(wait_until(WAIT, || !a.is_provisional()));
    assert_eq!(active(&group), "a");
    assert!(!events
        .try_iter()
        .any(|e| matches!(e, GroupEvent::ActiveChanged { .. })));
}

fn a_manual_failover_stands_in_for_a_passed_failback_check(t: Transport) {
    let (ra, rb) = (region(&t), region(&t));
    rb.api.set_lagging(rb.uid, true);
    let group = Group::connect(
        vec![member(&t, &ra, "a", 2), member(&t, &rb, "b", 1)],
        options(),
    )
    .unwrap();
    let (a, b) = (by_name(&group, "a"), by_name(&group, "b"));
    assert!(wait_until(WAIT, || !a.is_provisional()
        && b.failback_result() == Some(ProbeResult::Unhealthy)));
    assert!(group.try_failover_to(Some(&b)));
    assert_eq!(active(&group), "b");
    assert!(
        !b.is_provisional(),
        "the operator's choice is not provisional"
    );
    assert!(group.try_failover_to(None));
    assert!(wait_until(WAIT, || active(&group) == "a"));
}

/// Records which server each probe was aimed at.
#[derive(Debug, Default)]
struct Recording(parking_lot::Mutex<Vec<u16>>);

impl Probe for Recording {
    fn probe(&self, target: &ProbeTarget<'_>, _: Duration) -> ProbeResult {
        self.0.lock().push(target.endpoint().port);
        ProbeResult::Healthy
    }
}

fn a_probe_runs_once_per_serving_master_or_once_per_member_as_its_scope_says(t: Transport) {
    let cluster = t.cluster(3);
    let ports: Vec<u16> = cluster.nodes().iter().map(FakeServer::port).collect();
    let seed = ports[0];
    for (scope, expect_all) in [(ProbeScope::Endpoint, true), (ProbeScope::Member, false)] {
        let seen = std::sync::Arc::new(Recording::default());
        let check = HealthCheck::default()
            .interval(Duration::from_millis(50))
            .probe_count(1)
            .probe(seen.clone())
            .scope(scope);
        let member = Member::from_options(opt_in(
            t.options(&format!("{}?syncTimeout=500", cluster.url())),
        ))
        .with_health_check(check);
        let group = Group::connect(vec![member], GroupOptions::default()).unwrap();
        assert!(wait_until(WAIT, || {
            let s = seen.0.lock();
            s.len() >= 9 && (!expect_all || ports.iter().all(|p| s.contains(p)))
        }));
        if !expect_all {
            assert!(
                seen.0.lock().iter().all(|p| *p == seed),
                "{scope:?}: the seed only"
            );
        }
        group.close();
    }
}
