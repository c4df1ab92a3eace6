//! A group of two fake clusters: a keyspace-notification subscription made through the
//! group is held on every master of every member, and delivers the events of every
//! master of the active member only, through a change of member (as other
//! subscriptions of a group do).

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use resilient_redis::availability::{Group, GroupOptions, Member};
use resilient_redis::prelude::*;
use resilient_redis::testkit::FakeCluster;
use support::optin::opt_in;
use support::wait_until;

const WAIT: Duration = Duration::from_secs(10);

/// A key of each node of `cluster`.
fn key_per_node(cluster: &FakeCluster, prefix: &str) -> Vec<String> {
    (0..cluster.nodes().len())
        .map(|node| {
            (0..10_000)
                .map(|i| format!("{prefix}{i}"))
                .find(|k| cluster.owner_of_key(k.as_bytes()) == Some(node))
                .unwrap()
        })
        .collect()
}

/// Sets every key through a client of `cluster` of its own (not the group's).
fn write_directly(cluster: &FakeCluster, keys: &[String]) {
    let db = Client::connect(cluster.url().as_str()).unwrap().database();
    for k in keys {
        db.set(k, 1).unwrap();
    }
}

#[test]
fn keyspace_events_come_from_every_master_of_the_active_member_through_a_change() {
    let clusters = [
        FakeCluster::start(2).unwrap(),
        FakeCluster::start(2).unwrap(),
    ];
    let member = |i: usize, name: &str, weight: u32| {
        Member::new(opt_in(clusters[i].url().as_str()))
            .with_name(name)
            .with_weight(weight)
    };
    let group = Group::connect(
        vec![member(0, "a", 2), member(1, "b", 1)],
        GroupOptions::default(),
    )
    .unwrap();
    let active = || group.active().map(|m| m.name().to_string());
    assert!(wait_until(WAIT, || active().as_deref() == Some("a")
        && group.members().iter().all(|m| m.is_connected())));
    group
        .database()
        .config_set("notify-keyspace-events", "KEA")
        .unwrap();
    Client::connect(clusters[1].url().as_str())
        .unwrap()
        .database()
        .config_set("notify-keyspace-events", "KEA")
        .unwrap();
    let sub = group.subscriber();
    let events = sub.psubscribe("__keyevent@0__:set").unwrap();
    // Held on both masters of both members (b's confirmed in the background).
    assert!(wait_until(WAIT, || clusters.iter().all(|c| c
        .nodes()
        .iter()
        .all(|n| n.connections().iter().any(|s| s.subscriptions == 1)))));

    let received = |want: &[String]| {
        let want: BTreeSet<String> = want.iter().cloned().collect();
        let mut got = BTreeSet::new();
        while got.len() < want.len() {
            let m = events.recv_timeout(WAIT).expect("an event per master");
            got.insert(m.payload_str().to_string());
        }
        assert_eq!(got, want);
    };
    let on_a = key_per_node(&clusters[0], "a");
    write_directly(&clusters[0], &on_a);
    received(&on_a);
    // The passive member's events are not delivered.
    write_directly(&clusters[1], &key_per_node(&clusters[1], "stray"));

    let b = group.member("b").unwrap();
    assert!(group.try_failover_to(Some(&b)));
    assert!(wait_until(WAIT, || active().as_deref() == Some("b")));
    let on_b = key_per_node(&clusters[1], "b");
    write_directly(&clusters[1], &on_b);
    received(&on_b);
    assert!(events.try_recv().is_none(), "a stray event was delivered");
}
