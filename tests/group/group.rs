//! Availability groups against three real `redis-server`s: kill, stop, restart the
//! active member under load; failback after the delay; manual failover; dynamic
//! members and weights; pub/sub that follows the active member.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::{
    ChangeReason, Group, GroupEvent, GroupOptions, HealthCheck, Member,
};
use resilient_redis::prelude::*;
use support::optin::opt_in;
use support::{events_until, wait_until, RedisServer};

const WAIT: Duration = Duration::from_secs(15);

fn member(server: &RedisServer, name: &str, weight: u32) -> Member {
    Member::new(opt_in(format!(
        "{},syncTimeout=500,connectTimeout=500,reconnectMin=20,reconnectMax=200",
        server.addr()
    )))
    .with_name(name)
    .with_weight(weight)
}

/// Frequent checks; the probe timeout stays generous so a loaded CI machine does not
/// fail a healthy member (which would move traffic the test does not expect).
fn fast_checks() -> HealthCheck {
    HealthCheck::default()
        .interval(Duration::from_millis(200))
        .probe_count(1)
        .probe_timeout(Duration::from_millis(1000))
        .probe_interval(Duration::from_millis(50))
}

fn three() -> Option<[RedisServer; 3]> {
    Some([
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

/// The name of the server that answered, written in each server under a fixed key.
fn label(servers: &[RedisServer; 3]) {
    for (i, s) in servers.iter().enumerate() {
        let db = Client::connect(opt_in(s.url().as_str()))
            .unwrap()
            .database();
        db.set("whoami", format!("m{i}")).unwrap();
    }
}

/// Waits until every member is connected and healthy: `Group::connect` returns once
/// one member serves, and the others may come up a moment later on a loaded machine.
fn all_up(group: &Group) {
    assert!(
        wait_until(WAIT, || group
            .members()
            .iter()
            .all(|m| m.is_connected() && !m.is_unhealthy())),
        "{}",
        group.status()
    );
}

#[test]
fn the_heaviest_member_serves_and_a_killed_one_is_replaced_under_load() {
    let Some(mut servers) = three() else { return };
    label(&servers);
    let group = Group::connect(
        vec![
            member(&servers[0], "m0", 30),
            member(&servers[1], "m1", 20),
            member(&servers[2], "m2", 10),
        ],
        GroupOptions::default().health_check(fast_checks()),
    )
    .unwrap();
    all_up(&group);
    let db = group.database();
    assert!(wait_until(WAIT, || active_name(&group) == "m0"));
    assert_eq!(db.get::<String>("whoami").unwrap(), "m0");
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed, slow) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let (db, stop, ok, failed, slow) = (
                db.clone(),
                stop.clone(),
                ok.clone(),
                failed.clone(),
                slow.clone(),
            );
            thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    match db.set(format!("load:{t}:{i}"), i) {
                        Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                    // syncTimeout is 500 ms: no caller may wait much longer.
                    if started.elapsed() > Duration::from_millis(2500) {
                        slow.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
        .collect();
    assert!(wait_until(WAIT, || ok.load(Ordering::Relaxed) > 100));
    servers[0].kill();
    assert!(
        wait_until(WAIT, || active_name(&group) == "m1"),
        "active: {}",
        active_name(&group)
    );
    let before = ok.load(Ordering::Relaxed);
    assert!(wait_until(WAIT, || ok.load(Ordering::Relaxed) > before + 100));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(
        slow.load(Ordering::Relaxed),
        0,
        "a caller waited past its timeout"
    );
    assert_eq!(db.get::<String>("whoami").unwrap(), "m1");
    // Restarted (empty: label it again), it reconnects, passes its checks and takes
    // the traffic back.
    servers[0].restart();
    Client::connect(opt_in(servers[0].url().as_str()))
        .unwrap()
        .database()
        .set("whoami", "m0")
        .unwrap();
    assert!(
        wait_until(WAIT, || active_name(&group) == "m0"),
        "no failback after restart"
    );
    assert_eq!(db.get::<String>("whoami").unwrap(), "m0");
}

#[test]
fn a_stopped_member_is_left_and_failback_waits_for_the_delay() {
    let Some(servers) = three() else { return };
    label(&servers);
    let delay = Duration::from_millis(1500);
    let group = Group::connect(
        vec![
            member(&servers[0], "m0", 30),
            member(&servers[1], "m1", 20),
            member(&servers[2], "m2", 10),
        ],
        GroupOptions::default()
            .health_check(fast_checks())
            .failback_delay(delay),
    )
    .unwrap();
    all_up(&group);
    let events = group.events();
    let paused_at = Instant::now();
    servers[0].pause();
    assert!(wait_until(WAIT, || active_name(&group) == "m1"));
    assert!(group.members()[0].is_unhealthy());
    servers[0].resume();
    assert!(
        wait_until(WAIT, || active_name(&group) == "m0"),
        "no failback"
    );
    // Its last failure came after the pause, so failback cannot come sooner than the
    // delay after the pause.
    assert!(paused_at.elapsed() >= delay);
    let reasons: Vec<ChangeReason> = events_until(&events, WAIT, |e| {
        matches!(
            e,
            GroupEvent::ActiveChanged {
                reason: ChangeReason::Failback,
                ..
            }
        )
    })
    .into_iter()
    .filter_map(|e| match e {
        GroupEvent::ActiveChanged { reason, .. } => Some(reason),
        _ => None,
    })
    .collect();
    assert_eq!(
        reasons,
        vec![ChangeReason::HealthCheck, ChangeReason::Failback],
        "{reasons:?}"
    );
    assert_eq!(group.database().get::<String>("whoami").unwrap(), "m0");
}

#[test]
fn manual_failover_weights_and_dynamic_members() {
    let Some(servers) = three() else { return };
    label(&servers);
    let (m0, m1) = (member(&servers[0], "m0", 30), member(&servers[1], "m1", 20));
    let group = Group::connect(
        vec![m0, m1],
        GroupOptions::default().health_check(fast_checks()),
    )
    .unwrap();
    all_up(&group);
    let m1 = group.member("m1").unwrap();
    let db = group.database();
    // `connect` returns once one member serves: m1 (a manual failover refuses a
    // member that is not connected) and m0 (the heavier) may come up a moment later
    // on a loaded machine (seen once in a fresh-clone run).
    assert!(wait_until(WAIT, || m1.is_connected() && active_name(&group) == "m0"));
    assert!(group.try_failover_to(Some(&m1)));
    assert_eq!(db.get::<String>("whoami").unwrap(), "m1");
    assert!(group.try_failover_to(None));
    assert!(!group.try_failover_to(None));
    assert_eq!(active_name(&group), "m0");
    // A weight change at run time moves traffic.
    m1.set_weight(50);
    assert!(wait_until(WAIT, || active_name(&group) == "m1"));
    // Added at run time, heavier: it takes over; removed: traffic goes back.
    let m2 = member(&servers[2], "m2", 100);
    let m2 = group.add(m2).unwrap();
    assert!(wait_until(WAIT, || active_name(&group) == "m2"));
    assert_eq!(db.get::<String>("whoami").unwrap(), "m2");
    assert!(group.remove(&m2));
    assert!(!group.remove(&m2));
    assert_eq!(active_name(&group), "m1");
    assert_eq!(group.members().len(), 2);
    // Not in the group: refused.
    assert!(!group.try_failover_to(Some(&m2)));
}

#[test]
fn pubsub_follows_the_active_member_through_a_failover() {
    let Some(mut servers) = three() else { return };
    // Lenient checks: a probe that times out on a loaded machine would move traffic
    // while the stray message is published and make it legitimately deliverable. The
    // kill below is seen as a disconnect, without probes.
    let lenient = fast_checks()
        .probe_timeout(Duration::from_secs(3))
        .policy(Arc::new(resilient_redis::availability::AnySuccess));
    let group = Group::connect(
        vec![member(&servers[0], "m0", 30), member(&servers[1], "m1", 20)],
        GroupOptions::default().health_check(lenient),
    )
    .unwrap();
    all_up(&group);
    let events = group.events();
    let sub = group.subscriber();
    let news = sub.subscribe("news").unwrap();
    assert_eq!(sub.publish("news", "one").unwrap(), 1);
    assert_eq!(news.recv_timeout(WAIT).unwrap().payload, b"one");
    // A message published on the passive member directly is not delivered.
    let passive = Client::connect(opt_in(servers[1].url().as_str())).unwrap();
    assert!(wait_until(WAIT, || passive
        .subscriber()
        .publish("news", "stray")
        .unwrap()
        == 1));
    // Received (and set aside) while m1 was passive. Without this wait a loaded
    // machine's reader thread read it after the failover below, when m1 was active:
    // the cut is the client's receipt, so it was delivered (fresh-clone run, load 7).
    assert!(
        wait_until(WAIT, || {
            assert!(news.try_recv().is_none(), "a message was delivered");
            news.from_passive() >= 1
        }),
        "the stray message never arrived"
    );
    assert!(
        events
            .try_iter()
            .all(|e| !matches!(e, GroupEvent::ActiveChanged { .. })),
        "traffic moved while the stray message was published: the test is void"
    );
    servers[0].kill();
    assert!(wait_until(WAIT, || active_name(&group) == "m1"));
    assert!(wait_until(WAIT, || sub
        .publish("news", "two")
        .is_ok_and(|n| n >= 1)));
    let got = news.recv_timeout(WAIT).unwrap();
    assert_eq!(
        got.payload, b"two",
        "the stray message from the then-passive member leaked"
    );
    let _ = &mut servers;
}

/// A member whose TLS files are wrong is refused by `Group::connect` and `Group::add`
/// with the cause, before any dial: its dial runs on its own thread, where the error
/// used to be dropped and the member never came up, silently.
#[test]
fn a_member_whose_ca_file_is_missing_is_refused_with_the_cause() {
    let missing = std::env::temp_dir().join("rr-test-no-such-ca.pem");
    let member = |name: &str| {
        Member::new(format!(
            "127.0.0.1:1,ssl=true,sslCaFile={}",
            missing.display()
        ))
        .with_name(name)
    };
    let e = Group::connect(vec![member("eu")], GroupOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.to_string().contains("rr-test-no-such-ca.pem"), "{e}");

    let Some(server) = RedisServer::start() else {
        return;
    };
    let group = Group::connect(
        vec![Member::new(opt_in(server.addr())).with_name("us")],
        GroupOptions::default(),
    )
    .unwrap();
    let e = group.add(member("eu")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert_eq!(group.members().len(), 1, "the refused member is not listed");
}
