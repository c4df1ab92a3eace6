//! Availability groups of three real `redis-server`s with the **default options** a
//! user gets (5 s timeouts, the default health check, breaker and retry policy):
//! a tuned timeout can hide a stall. Each test is one row of the failover table in
//! `docs/failover.md`; the timings asserted here are loose bounds for a busy machine
//! (`cargo bench --bench failover` measures the real figures).

use crate::support;

use std::time::{Duration, Instant};

use resilient_redis::availability::{Group, GroupOptions, Member};
use resilient_redis::prelude::*;
use support::load::Load;
use support::optin::opt_in;
use support::{wait_until, RedisServer};

/// m0 (weight 30), m1 (20), m2 (10): every option at its default.
fn members(servers: &[RedisServer]) -> Vec<Member> {
    servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Member::new(opt_in(s.addr()))
                .with_name(format!("m{i}"))
                .with_weight(30 - 10 * i as u32)
        })
        .collect()
}

fn three() -> Option<Vec<RedisServer>> {
    Some(vec![
        RedisServer::start()?,
        RedisServer::start()?,
        RedisServer::start()?,
    ])
}

fn active_name(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

/// Writes each server's name into it, so a read says who answered.
fn label(servers: &[RedisServer]) {
    for (i, s) in servers.iter().enumerate() {
        let db = Client::connect(opt_in(s.url().as_str()))
            .unwrap()
            .database();
        db.set("whoami", format!("m{i}")).unwrap();
    }
}

#[test]
fn a_killed_active_member_is_replaced_at_once_while_a_standby_hangs() {
    let Some(mut servers) = three() else { return };
    label(&servers);
    // m1 hangs from the start: its first dial is stuck in the handshake for its whole
    // 5 s connect timeout, on its own thread.
    servers[1].pause();
    let group = Group::connect(members(&servers), GroupOptions::default()).unwrap();
    // `connect` returns once one member serves; the heavier may follow a moment later.
    assert!(wait_until(Duration::from_secs(10), || active_name(&group) == "m0"));
    let load = Load::start(&group);
    assert!(load.served(100, Duration::from_secs(5)));
    let killed = Instant::now();
    servers[0].kill();
    assert!(
        wait_until(Duration::from_secs(2), || active_name(&group) == "m2"),
        "traffic did not move to m2 while m1 hangs: active {}",
        active_name(&group)
    );
    assert!(load.served(100, Duration::from_secs(5)));
    let moved_in = killed.elapsed();
    let failed = load.stop();
    assert!(failed.is_empty(), "failed calls: {failed:?}");
    let db = group.database();
    assert_eq!(db.get::<String>("whoami").unwrap(), "m2");
    // Loose: the benchmark measures milliseconds; this only catches a stall of the
    // kind a hung member's dial on the deciding thread caused (seconds).
    assert!(moved_in < Duration::from_secs(4), "{moved_in:?}");
}

#[test]
fn a_heaviest_member_hung_at_connect_does_not_hold_up_the_first_write() {
    let Some(servers) = three() else { return };
    label(&servers);
    servers[0].pause();
    let started = Instant::now();
    let group = Group::connect(members(&servers), GroupOptions::default()).unwrap();
    let db = group.database();
    db.set("first", "write").unwrap();
    let first_write = started.elapsed();
    // m1 serves once it is up (m2, lighter, may have served the first write).
    assert!(wait_until(Duration::from_secs(10), || active_name(&group) == "m1"));
    assert_eq!(db.get::<String>("whoami").unwrap(), "m1");
    // Default connect timeout 5 s: the old sequential connect took all of it.
    assert!(first_write < Duration::from_secs(3), "{first_write:?}");
    // Once it answers, it takes traffic by weight, as usual.
    servers[0].resume();
    assert!(
        wait_until(Duration::from_secs(20), || active_name(&group) == "m0"),
        "the heaviest member did not take traffic once up"
    );
    assert_eq!(db.get::<String>("whoami").unwrap(), "m0");
}

#[test]
fn a_hung_active_member_is_left_within_the_probe_timeout_and_no_call_fails() {
    let Some(servers) = three() else { return };
    label(&servers);
    let group = Group::connect(members(&servers), GroupOptions::default()).unwrap();
    let load = Load::start(&group);
    assert!(load.served(100, Duration::from_secs(5)));
    let stopped = Instant::now();
    servers[0].pause();
    assert!(
        wait_until(Duration::from_secs(15), || active_name(&group) == "m1"),
        "the hung member was not left"
    );
    let moved_in = stopped.elapsed();
    assert!(load.served(100, Duration::from_secs(10)));
    let failed = load.stop();
    assert!(failed.is_empty(), "failed calls: {failed:?}");
    assert!(group.members()[0].is_unhealthy());
    // The default probe timeout is 3 s; without the out-of-turn check this waited for
    // the next interval (5 s) or a dead-connection rule (timeout + 0.5 s).
    assert!(moved_in < Duration::from_secs(8), "{moved_in:?}");
    servers[0].resume();
    assert!(
        wait_until(Duration::from_secs(20), || active_name(&group) == "m0"),
        "it did not come back once it answered"
    );
}

#[test]
fn two_members_failing_one_after_the_other_leave_the_last_one_serving() {
    let Some(mut servers) = three() else { return };
    label(&servers);
    let group = Group::connect(members(&servers), GroupOptions::default()).unwrap();
    let load = Load::start(&group);
    assert!(load.served(100, Duration::from_secs(5)));
    servers[0].kill();
    assert!(wait_until(Duration::from_secs(5), || active_name(&group) == "m1"));
    assert!(load.served(100, Duration::from_secs(5)));
    servers[1].kill();
    assert!(wait_until(Duration::from_secs(5), || active_name(&group) == "m2"));
    assert!(load.served(100, Duration::from_secs(5)));
    let failed = load.stop();
    assert!(failed.is_empty(), "failed calls: {failed:?}");
    assert_eq!(group.database().get::<String>("whoami").unwrap(), "m2");
    // The first comes back: traffic returns to it (failback delay 0 by default).
    servers[0].restart();
    assert!(
        wait_until(Duration::from_secs(20), || active_name(&group) == "m0"),
        "no failback to the restarted member"
    );
}
