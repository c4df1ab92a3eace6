//! The whole keyspace against the fake cluster, which keeps a store and a `SCAN`
//! cursor per node, publishes `COMMAND`'s tips, and publishes keyspace events per
//! node: the walk covers every node (and keeps its guarantee through a migration whose
//! target takes a higher config epoch), keyless commands reach every node, keys passed
//! as arguments are routed by the command table, and a keyspace subscription follows
//! a node that joins the cluster.

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use resilient_redis::prelude::*;
use resilient_redis::testkit::{key_slot, FakeCluster};
use resilient_redis::{ErrorKind, ScanOptions};
use support::optin::opt_in;
use support::wait_until;

fn connect(cluster: &FakeCluster) -> Client {
    let client = Client::connect(opt_in(cluster.url().as_str())).unwrap();
    assert!(client.is_cluster());
    client
}

fn keys(n: usize) -> BTreeSet<String> {
    (0..n).map(|i| format!("k:{i}")).collect()
}

#[test]
fn the_walk_and_keyless_commands_cover_every_node_of_the_fake() {
    let cluster = FakeCluster::start(3).unwrap();
    let client = connect(&cluster);
    let db = client.database();
    for k in keys(600) {
        db.set(&k, 1).unwrap();
    }
    // The fake's COMMAND was read: its tips route DBSIZE, KEYS, FLUSHDB.
    assert_eq!(db.dbsize().unwrap(), 600);
    for node in cluster.nodes() {
        assert_eq!(node.commands_received("DBSIZE"), 1, "{}", node.port());
    }
    let all: BTreeSet<String> = db.keys::<String>("k:*").unwrap().into_iter().collect();
    assert_eq!(all, keys(600));
    let walked: BTreeSet<String> = db
        .scan_iter::<String>(ScanOptions::default().count(25))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(walked, keys(600));
    assert_eq!(
        db.scan::<String>(0, None, None).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // One node's keys, through a handle bound to it.
    let first = client.nodes()[0].endpoint.clone();
    let own: Vec<String> = client
        .on_node(&first)
        .unwrap()
        .scan_iter::<String>(ScanOptions::default())
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!own.is_empty() && own.len() < 600, "{}", own.len());

    // Keys passed with `.arg()`: no MOVED.
    for i in 0..30 {
        let _: i64 = db
            .cmd("INCRBY")
            .arg(format!("c{i}"))
            .arg(1)
            .query()
            .unwrap();
    }
    assert_eq!(client.cluster_stats().unwrap().moved, 0);

    db.flushdb().unwrap();
    for node in cluster.nodes() {
        assert_eq!(node.commands_received("FLUSHDB"), 1, "{}", node.port());
    }
    assert_eq!(db.dbsize().unwrap(), 0);
}

#[test]
fn a_walk_through_migrations_misses_nothing() {
    let cluster = FakeCluster::start(3).unwrap();
    let client = connect(&cluster);
    let db = client.database();
    for k in keys(900) {
        db.set(&k, 1).unwrap();
    }
    let slots_of = |node: usize| -> Vec<u16> {
        let mut slots: Vec<u16> = (0..900)
            .map(|i| key_slot(format!("k:{i}").as_bytes()))
            .filter(|s| cluster.slot_owner(*s) == Some(node))
            .collect();
        slots.dedup();
        slots
    };
    let on_first = (0..900)
        .filter(|i| cluster.owner_of_key(format!("k:{i}").as_bytes()) == Some(0))
        .count();
    let mut walk = db.scan_iter::<String>(ScanOptions::default().count(10));
    // Node 0 (slots 0-5460) is walked first. Its keys of one slot move to node 2
    // while node 0's run is under way (node 2 takes a higher config epoch): the run
    // cannot vouch for that slot, which is walked again where it went.
    let mut seen: BTreeSet<String> = walk.by_ref().take(50).map(Result::unwrap).collect();
    let slot = slots_of(0)[0];
    cluster.migrate(slot..=slot, 0, 2, false).unwrap();
    // Once node 0's run is complete and node 1's under way, keys of node 2 (not
    // walked yet) move to node 0 (walked already): a walk that read each node once
    // would never see them.
    seen.extend(walk.by_ref().take(on_first + 20).map(Result::unwrap));
    let slot = slots_of(2)[0];
    cluster.migrate(slot..=slot, 2, 0, false).unwrap();
    for key in walk {
        seen.insert(key.unwrap());
    }
    let missing: Vec<String> = keys(900).difference(&seen).cloned().collect();
    assert!(
        missing.is_empty(),
        "{} keys missed: {missing:?}",
        missing.len()
    );
}

#[test]
fn keyspace_events_come_from_every_node_and_from_one_that_joins() {
    let mut cluster = FakeCluster::start(2).unwrap();
    let client = connect(&cluster);
    let db = client.database();
    db.config_set("notify-keyspace-events", "KEA").unwrap();
    let sub = client.subscriber();
    let events = sub.psubscribe("__keyevent@0__:set").unwrap();
    // Held on both nodes.
    for node in cluster.nodes() {
        assert!(node.connections().iter().any(|c| c.subscriptions == 1));
    }
    let on = |node: usize| {
        (0..10_000)
            .map(|i| format!("ev{i}"))
            .find(|k| cluster.owner_of_key(k.as_bytes()) == Some(node))
            .unwrap()
    };
    let (a, b) = (on(0), on(1));
    db.set(&a, 1).unwrap();
    db.set(&b, 1).unwrap();
    let mut got = BTreeSet::new();
    while got.len() < 2 {
        let m = events
            .recv_timeout(Duration::from_secs(5))
            .expect("an event per node");
        got.insert(String::from_utf8_lossy(&m.payload).into_owned());
    }
    assert_eq!(got, BTreeSet::from([a.clone(), b.clone()]));

    // A node joins and takes a slot: the next refresh subscribes there too.
    cluster.add_node().unwrap();
    let slot = key_slot(a.as_bytes());
    cluster.migrate(slot..=slot, 0, 2, false).unwrap();
    client.refresh_topology().unwrap();
    let joined = wait_until(Duration::from_secs(5), || {
        cluster
            .node(2)
            .connections()
            .iter()
            .any(|c| c.subscriptions == 1)
    });
    assert!(joined, "the new node did not get the keyspace subscription");
    db.config_set("notify-keyspace-events", "KEA").unwrap();
    db.set(&a, 2).unwrap();
    let m = events
        .recv_timeout(Duration::from_secs(5))
        .expect("the event from the new node");
    assert_eq!(m.payload, a.as_bytes());
}
