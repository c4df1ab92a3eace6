//! The real client against the fake: pub/sub on a standalone fake, and a fake cluster
//! discovered, routed, migrated under the client's feet, with sharded pub/sub that
//! follows its slot.

mod testkit_common;

use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::{key_slot, FakeCluster, FakeServer};
use testkit_common::Raw;

#[test]
fn client_pubsub_against_the_fake() {
    let server = FakeServer::start().unwrap();
    let client = Client::connect(server.url().as_str()).unwrap();
    let sub = client.subscriber();
    let plain = sub.subscribe("news").unwrap();
    let sharded = sub.ssubscribe("orders").unwrap();
    assert!(server.wait_for(
        |s| s.connections().iter().any(|c| c.subscriptions == 2),
        Duration::from_secs(5)
    ));
    assert_eq!(sub.publish("news", "hi").unwrap(), 1);
    assert_eq!(sub.spublish("orders", "o1").unwrap(), 1);
    let m = plain.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m.payload_str(), "hi");
    let m = sharded.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(m.payload_str(), "o1");
}

fn cluster_client(cluster: &FakeCluster) -> (Client, Database) {
    let client = Client::connect(format!("{}?syncTimeout=5000", cluster.url()).as_str()).unwrap();
    assert!(client.is_cluster());
    let db = client.database();
    (client, db)
}

fn dbsize(server: &FakeServer) -> i64 {
    match Raw::connect(server.addr()).cmd(&["DBSIZE"]) {
        Value::Int(n) => n,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_client_discovers_routes_and_follows_a_migration() {
    let cluster = FakeCluster::start(3).unwrap();
    let (client, db) = cluster_client(&cluster);
    let deadline = Instant::now() + Duration::from_secs(5);
    while client.nodes().len() < 3 {
        assert!(Instant::now() < deadline, "{:?}", client.nodes());
        std::thread::sleep(Duration::from_millis(10));
    }
    for i in 0..100 {
        db.set(format!("k{i}"), i).unwrap();
    }
    let per_node: Vec<i64> = cluster.nodes().iter().map(dbsize).collect();
    assert_eq!(per_node.iter().sum::<i64>(), 100, "{per_node:?}");
    assert!(per_node.iter().all(|&n| n > 0), "keys spread: {per_node:?}");

    // Move the slot of k0 while reading it through the client.
    let slot = key_slot(b"k0");
    let from = cluster.slot_owner(slot).unwrap();
    let to = (from + 1) % 3;
    cluster
        .begin_migration(slot..=slot, from, to, false)
        .unwrap();
    assert_eq!(db.get::<i64>("k0").unwrap(), 0, "served by the source");
    cluster.move_keys(usize::MAX);
    assert_eq!(db.get::<i64>("k0").unwrap(), 0, "ASK followed");
    cluster.finish_migration().unwrap();
    assert_eq!(db.get::<i64>("k0").unwrap(), 0, "MOVED followed");
    db.set("k0", 42).unwrap();
    assert_eq!(db.get::<i64>("k0").unwrap(), 42);
    assert!(cluster.node(to).commands_received("ASKING") >= 1);
}

#[test]
fn sharded_subscription_resumes_after_an_announced_migration() {
    let cluster = FakeCluster::start(2).unwrap();
    let (client, _db) = cluster_client(&cluster);
    let channel = "{ch}events";
    let slot = key_slot(channel.as_bytes());
    let from = cluster.slot_owner(slot).unwrap();
    let to = 1 - from;
    let sub = client.subscriber();
    let s = sub.ssubscribe(channel).unwrap();
    // Control: delivery with no migration at all.
    assert_eq!(sub.spublish(channel, "before").unwrap(), 1);
    assert_eq!(
        s.recv_timeout(Duration::from_secs(5))
            .unwrap()
            .payload_str(),
        "before"
    );

    cluster.migrate(slot..=slot, from, to, true).unwrap();
    // Pub/sub is fire and forget: publish until delivery resumes (it must).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "delivery never resumed");
        let _ = sub.spublish(channel, "after");
        if let Ok(m) = s.recv_timeout(Duration::from_millis(100)) {
            assert_eq!(m.payload_str(), "after");
            break;
        }
    }
    assert!(cluster
        .node(to)
        .connections()
        .iter()
        .any(|c| c.subscriptions == 1));
}
