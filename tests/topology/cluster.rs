//! Redis Cluster against real `redis-server` processes: discovery, routing, splitting,
//! a live slot migration under load, retirement, sharded pub/sub across a move.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use resilient_redis::cluster::key_slot;
use resilient_redis::prelude::*;
use resilient_redis::{Cmd, ErrorKind};
use support::cluster::RedisCluster;
use support::optin::opt_in;
use support::wait_until;

fn connect(cluster: &RedisCluster) -> Client {
    let client = Client::connect(opt_in(cluster.nodes[0].url().as_str())).unwrap();
    assert!(client.is_cluster());
    client
}

#[test]
fn routes_by_slot_splits_multi_key_commands_and_keeps_transactions_on_one_slot() {
    let Some(cluster) = RedisCluster::start(3) else {
        return;
    };
    let client = connect(&cluster);
    let db = client.database();
    assert!(wait_until(Duration::from_secs(10), || client.nodes().len() == 3));
    for i in 0..300 {
        db.set(format!("k{i}"), i).unwrap();
    }
    for i in 0..300 {
        assert_eq!(db.get::<i64>(format!("k{i}")).unwrap(), i);
    }
    // MGET across slots comes back in the caller's order.
    let keys: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
    let values: Vec<Option<i64>> = db.cmd("MGET").key(&keys).query().unwrap();
    assert_eq!(values, (0..50).map(Some).collect::<Vec<_>>());
    let deleted: i64 = db.cmd("DEL").key(&keys[..10]).query().unwrap();
    assert_eq!(deleted, 10);
    // Keys passed as plain arguments are found by the command table and split too.
    db.cmd("MSET")
        .arg(["a", "1", "b", "2", "c", "3"])
        .exec()
        .unwrap();
    assert_eq!(db.get::<String>("b").unwrap(), "2");
    let mset = Cmd::new("MSET")
        .key("a")
        .arg("1")
        .key("b")
        .arg("2")
        .key("c")
        .arg("4");
    db.query::<()>(&mset).unwrap();
    assert_eq!(db.get::<String>("c").unwrap(), "4");
    // MSETNX split would set some slots' keys and not others': refused.
    let err = db
        .cmd("MSETNX")
        .arg(["a", "1", "b", "2"])
        .exec()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CrossSlot);

    // A batch spanning nodes answers in order.
    let batch = db.batch();
    let handles: Vec<_> = (0..100)
        .map(|i| batch.get::<i64>(format!("k{}", 100 + i)))
        .collect();
    batch.execute().unwrap();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.wait().unwrap(), 100 + i as i64);
    }

    // Transactions within one slot work; across slots they are refused before sending.
    let tx = db.transaction();
    tx.watch("{user1}:a");
    tx.set("{user1}:a", 1);
    let n = tx.incr("{user1}:b", 5);
    assert!(tx.execute().unwrap());
    assert_eq!(n.wait().unwrap(), 5);
    let tx = db.transaction();
    tx.set("x1", 1);
    tx.set("x2", 2);
    assert_ne!(key_slot(b"x1"), key_slot(b"x2"));
    assert_eq!(tx.execute().unwrap_err().kind(), ErrorKind::CrossSlot);
    // A typed multi-key command that cannot be split is refused before sending.
    let err = db.cmd("RENAME").key("x1").key("x2").exec().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CrossSlot);
}

#[test]
fn a_live_slot_migration_under_load_fails_no_command_and_both_redirects_are_followed() {
    let Some(cluster) = RedisCluster::start(3) else {
        return;
    };
    let client = connect(&cluster);
    let db = client.database();
    // Keys that all live in one slot, so the migration moves all of them.
    let slot = key_slot(b"{mig}");
    let from = cluster.owner_of(slot);
    let to = cluster
        .nodes
        .iter()
        .map(|n| n.port)
        .find(|p| *p != from)
        .unwrap();
    for i in 0..200 {
        db.set(format!("{{mig}}:{i}"), i).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let (db, stop, ok) = (db.clone(), stop.clone(), ok.clone());
            thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("{{mig}}:{}", (i * 7 + t) % 200);
                    let v: i64 = db.get(&key).unwrap_or_else(|e| panic!("GET {key}: {e}"));
                    assert!(v >= 0);
                    let w = format!("{{mig}}:w{t}");
                    db.set(&w, i).unwrap_or_else(|e| panic!("SET {w}: {e}"));
                    ok.fetch_add(2, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    cluster.migrate_slot(slot, from, to, || {
        // Half the keys have moved: reads of moved keys are ASK-redirected.
        for i in 0..200 {
            let v: i64 = db.get(format!("{{mig}}:{i}")).unwrap();
            assert_eq!(v, i);
        }
    });
    for i in 0..200 {
        assert_eq!(db.get::<i64>(format!("{{mig}}:{i}")).unwrap(), i);
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("a worker saw a failed command");
    }
    let stats = client.cluster_stats().unwrap();
    assert!(stats.ask > 0, "{stats:?}");
    assert!(stats.moved > 0, "{stats:?}");
    assert!(ok.load(Ordering::Relaxed) > 100);
}

#[test]
fn a_node_that_left_the_cluster_is_retired_and_an_empty_one_is_kept() {
    let Some(mut cluster) = RedisCluster::start(3) else {
        return;
    };
    let client = connect(&cluster);
    let empty = cluster.add_empty_master();
    client.refresh_topology().unwrap();
    let has = |port: u16| client.nodes().iter().any(|n| n.endpoint.port == port);
    assert!(wait_until(Duration::from_secs(10), || {
        client.refresh_topology().unwrap();
        has(empty)
    }));
    // Listed but owning no slots: kept, however many refreshes.
    for _ in 0..4 {
        client.refresh_topology().unwrap();
    }
    assert!(has(empty));
    // Forgotten by every other node: absent from the topology, so retired.
    let id = support::cluster::node_id(empty);
    for n in cluster.nodes.iter().filter(|n| n.port != empty) {
        support::cluster::cli(n.port, &["CLUSTER", "FORGET", &id]);
    }
    let retired = wait_until(Duration::from_secs(10), || {
        client.refresh_topology().unwrap();
        !has(empty)
    });
    assert!(retired, "{:?}", client.nodes());
    assert_eq!(client.cluster_stats().unwrap().retired, 1);
    client.database().set("after", 1).unwrap();
}

#[test]
fn sharded_pubsub_delivers_and_resumes_after_its_slot_moves() {
    let Some(cluster) = RedisCluster::start(3) else {
        return;
    };
    let client = connect(&cluster);
    let sub = client.subscriber();
    let channel = "orders:{shard7}";
    let s = sub.ssubscribe(channel).unwrap();
    assert_eq!(sub.spublish(channel, "before").unwrap(), 1);
    assert_eq!(
        s.recv_timeout(Duration::from_secs(5)).unwrap().payload,
        b"before"
    );
    // Plain pub/sub reaches across the cluster too.
    let plain = sub.subscribe("news").unwrap();
    sub.publish("news", "n").unwrap();
    assert_eq!(
        plain.recv_timeout(Duration::from_secs(5)).unwrap().payload,
        b"n"
    );

    let slot = key_slot(channel.as_bytes());
    let from = cluster.owner_of(slot);
    let to = cluster
        .nodes
        .iter()
        .map(|n| n.port)
        .find(|p| *p != from)
        .unwrap();
    cluster.migrate_slot(slot, from, to, || {});
    // The server drops our subscription (SUNSUBSCRIBE); we re-subscribe on the new
    // owner. Messages published during the move may be lost; delivery must resume.
    let resumed = wait_until(Duration::from_secs(15), || {
        sub.spublish(channel, "after").is_ok_and(|n| n == 1)
    });
    assert!(resumed, "sharded subscription not re-established");
    let got = (0..50).find_map(|_| s.recv_timeout(Duration::from_millis(200)).ok());
    assert_eq!(got.map(|m| m.payload), Some(b"after".to_vec()));
}

#[test]
fn replica_reads_go_to_replicas_when_asked_and_writes_to_masters() {
    let Some(cluster) = RedisCluster::start_with_replicas(3, 1) else {
        return;
    };
    let url = format!("{}?replicaReads=true", cluster.nodes[0].url());
    let client = Client::connect(opt_in(url.as_str())).unwrap();
    let db = client.database();
    for i in 0..100 {
        db.set(format!("r{i}"), i).unwrap();
    }
    let replica_gets = || -> u64 {
        cluster
            .nodes
            .iter()
            .filter(|n| support::cluster::cli(n.port, &["ROLE"]).starts_with("slave"))
            .map(|n| {
                let stats = support::cluster::cli(n.port, &["INFO", "commandstats"]);
                stats
                    .lines()
                    .find_map(|l| l.strip_prefix("cmdstat_get:calls="))
                    .and_then(|rest| rest.split(',').next())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            })
            .sum()
    };
    // Replicas are listed once the cluster's gossip has settled and they are in sync
    // (CLUSTER SHARDS health "online"), and replication is asynchronous: re-read the
    // topology and read until replicas serve the reads, with the written values.
    let served = wait_until(Duration::from_secs(30), || {
        client.refresh_topology().unwrap();
        let all_there =
            (0..100).all(|i| db.get::<Option<i64>>(format!("r{i}")).unwrap() == Some(i));
        all_there && replica_gets() >= 100
    });
    assert!(
        served,
        "replicas served {} GETs; {:?}",
        replica_gets(),
        client.cluster_stats()
    );
    // Writes still go to masters (a replica would answer MOVED, counted here).
    db.set("r-final", 1).unwrap();
    assert_eq!(client.cluster_stats().unwrap().moved, 0);
}
