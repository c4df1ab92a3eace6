//! Retry decisions in a group, against fakes: a retry decided "same server" goes to the
//! member the failed attempt was made on, even once the group serves from another.

use crate::support;

use std::time::Duration;

use resilient_redis::availability::{
    Group, GroupOptions, HealthCheck, Member, RetryDecision, RetryPolicy,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::FakeServer;
use support::optin::opt_in;
use support::wait_until;

const WAIT: Duration = Duration::from_secs(10);

fn member(server: &FakeServer, name: &str, weight: u32) -> Member {
    Member::new(opt_in(server.url()))
        .with_name(name)
        .with_weight(weight)
}

#[test]
fn a_same_server_retry_stays_on_its_member_after_the_group_moved() {
    let servers = [FakeServer::start().unwrap(), FakeServer::start().unwrap()];
    for (s, name) in servers.iter().zip(["a", "b"]) {
        let db = Client::connect(opt_in(s.url())).unwrap().database();
        db.set("whoami", name).unwrap();
    }
    // Checks far apart: only the manual failover below moves the group.
    let group = Group::connect(
        vec![member(&servers[0], "a", 2), member(&servers[1], "b", 1)],
        GroupOptions::default()
            .health_check(HealthCheck::default().interval(Duration::from_secs(60))),
    )
    .unwrap();
    let b = group.member("b").unwrap();
    assert!(wait_until(WAIT, || group
        .active()
        .is_some_and(|m| m.name() == "a")
        && b.is_connected()));
    let same_server = RetryPolicy::default()
        .jitter_max(Duration::ZERO)
        .with_decision(|policy, fault| match policy.default_decision(fault) {
            RetryDecision::None => RetryDecision::None,
            _ => RetryDecision::SameServer,
        });
    let db = group.database().with_retry(same_server).unwrap();
    servers[0].fail_command("GET", "LOADING Redis is loading the dataset in memory");
    servers[0].reset_counters();
    servers[1].reset_counters();
    let call = std::thread::spawn(move || db.get::<String>("whoami"));
    // The first attempt failed on a; during the retry delay (1 s) the group moves to
    // b and a recovers.
    assert!(servers[0].wait_for(|s| s.commands_received("GET") >= 1, WAIT));
    assert!(group.try_failover_to(Some(&b)));
    servers[0].clear_failures();
    let answered = call.join().unwrap().unwrap();
    assert_eq!(answered, "a", "the retry followed the group to b");
    assert!(servers[0].commands_received("GET") >= 2);
    assert_eq!(servers[1].commands_received("GET"), 0);
    assert_eq!(group.active().map(|m| m.name().to_string()).unwrap(), "b");
}
