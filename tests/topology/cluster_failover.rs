//! Redis Cluster failovers with the options a user gets by default (default timeouts,
//! `RetryPolicy::default()`): a graceful `CLUSTER FAILOVER` and a master SIGKILLed and
//! replaced by its replica, under load, on a real 3-master, 3-replica cluster
//! (`cluster-node-timeout 2000`, `cluster-require-full-coverage no`); and, against the
//! fake cluster, a call, a batch and a transaction waiting for a dead owner re-routed
//! when another node takes its slots.
//!
//! Bounds are loose (a busy 2-core machine); the figures are in
//! `benches/cluster_failover.rs` and `docs/failover.md`.

use crate::support;

use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::RetryPolicy;
use resilient_redis::prelude::*;
use resilient_redis::testkit::{key_slot, FakeCluster};
use resilient_redis::ErrorKind;
use support::cluster::{tags_owned_by, ClusterSpec, Load, Record, RedisCluster};
use support::optin::opt_in;
use support::wait_until;

fn failover_cluster() -> Option<RedisCluster> {
    RedisCluster::start_spec(
        ClusterSpec::new(3, 1)
            .node_timeout_ms(2000)
            .full_coverage(false),
    )
}

/// A client with default options, and one that reads from replicas.
fn clients(cluster: &RedisCluster) -> (Client, Client) {
    let plain = Client::connect(opt_in(cluster.nodes[0].url().as_str())).unwrap();
    let url = format!("{}?replicaReads=true", cluster.nodes[0].url());
    let replica_reads = Client::connect(opt_in(url.as_str())).unwrap();
    assert!(plain.is_cluster() && replica_reads.is_cluster());
    (plain, replica_reads)
}

/// Three tags per shard, shard order as `cluster.shards()` lists them.
fn shard_tags(cluster: &RedisCluster, shards: &[(u16, Option<u16>)]) -> Vec<Vec<String>> {
    shards
        .iter()
        .map(|(master, _)| tags_owned_by(cluster, *master, 3))
        .collect()
}

fn failed_kinds(record: &Record, shard: usize) -> Vec<ErrorKind> {
    record.shards[shard]
        .iter()
        .filter_map(|c| c.error)
        .collect()
}

fn attempt_kinds(record: &Record) -> Vec<ErrorKind> {
    record
        .attempts
        .iter()
        .flatten()
        .filter_map(|c| c.error)
        .collect()
}

#[test]
fn a_graceful_failover_under_load_fails_no_call_and_the_shard_is_served_at_once() {
    let Some(cluster) = failover_cluster() else {
        return;
    };
    let (plain, replica_reads) = clients(&cluster);
    let shards = cluster.shards();
    assert_eq!(shards.len(), 3, "{shards:?}");
    let tags = shard_tags(&cluster, &shards);
    let policy = RetryPolicy::default();
    let load = Load::start(&plain.database(), &tags, 2, Some(policy.clone()));
    let reads = Load::start(&replica_reads.database(), &tags, 1, Some(policy));
    assert!(load.wait_served(0, 100, Duration::from_secs(20)));
    assert!(reads.wait_served(0, 100, Duration::from_secs(20)));

    let replica = shards[0].1.expect("shard 0 has a replica");
    let failover_at = Instant::now();
    cluster.graceful_failover(replica);
    let promoted = RedisCluster::wait_promoted(replica, Duration::from_secs(20))
        .expect("the replica was promoted");
    // Served by the new master, for a while, on both clients.
    assert!(load.wait_served(0, 300, Duration::from_secs(20)));
    assert!(reads.wait_served(0, 100, Duration::from_secs(20)));
    let end = Instant::now();
    let (record, reads) = (load.finish(), reads.finish());
    plain.close();
    replica_reads.close();

    for shard in 0..3 {
        assert_eq!(failed_kinds(&record, shard), vec![], "shard {shard}");
        assert_eq!(
            failed_kinds(&reads, shard),
            vec![],
            "shard {shard}, replica reads"
        );
    }
    // The shard waits for the server's own pause (until the promotion) and no more
    // than a moment after it: no retry pause (1 s and more), no wait for a refresh.
    let pause = promoted - failover_at;
    let gap = record.max_gap(0, failover_at, end);
    assert!(
        gap < pause + Duration::from_secs(1),
        "{gap:?} without a success; the promotion took {pause:?}"
    );
    let attempts = attempt_kinds(&record);
    assert!(attempts.is_empty(), "retried: {attempts:?}");
    let attempts = attempt_kinds(&reads);
    assert!(
        !attempts.contains(&ErrorKind::ReadOnly),
        "replica reads saw READONLY: {attempts:?}"
    );
}

#[test]
fn a_killed_masters_promoted_replica_serves_at_once_and_no_call_fails_after() {
    let Some(mut cluster) = failover_cluster() else {
        return;
    };
    let (plain, replica_reads) = clients(&cluster);
    let shards = cluster.shards();
    assert_eq!(shards.len(), 3, "{shards:?}");
    let tags = shard_tags(&cluster, &shards);
    let policy = RetryPolicy::default();
    let load = Load::start(&plain.database(), &tags, 2, Some(policy.clone()));
    let reads = Load::start(&replica_reads.database(), &tags, 1, Some(policy));
    assert!(load.wait_served(1, 100, Duration::from_secs(20)));
    assert!(reads.wait_served(1, 100, Duration::from_secs(20)));

    let (master, replica) = (shards[1].0, shards[1].1.expect("shard 1 has a replica"));
    cluster.node_mut(master).kill();
    let promoted = RedisCluster::wait_promoted(replica, Duration::from_secs(60))
        .expect("the cluster promoted the replica");
    assert!(
        load.wait_served(1, 300, Duration::from_secs(20)),
        "the shard was not served again after the promotion"
    );
    assert!(reads.wait_served(1, 100, Duration::from_secs(20)));
    let (record, reads) = (load.finish(), reads.finish());
    plain.close();
    replica_reads.close();

    let served = record
        .served_after(1, promoted)
        .expect("served after the promotion");
    assert!(
        served < Duration::from_secs(3),
        "served {served:?} after the promotion"
    );
    for shard in 0..3 {
        let failed = record.failures_after(shard, promoted);
        assert!(failed.is_empty(), "shard {shard}: {failed:?}");
        let failed = reads.failures_after(shard, promoted);
        assert!(
            failed.is_empty(),
            "shard {shard}, replica reads: {failed:?}"
        );
    }
    // The other shards never noticed.
    assert_eq!(failed_kinds(&record, 0), vec![]);
    assert_eq!(failed_kinds(&record, 2), vec![]);
    let attempts = attempt_kinds(&reads);
    assert!(
        !attempts.contains(&ErrorKind::ReadOnly),
        "replica reads saw READONLY: {attempts:?}"
    );
}

#[test]
fn a_call_waiting_for_a_dead_owner_goes_to_the_node_that_takes_its_slots() {
    waiting_for_a_dead_owner(|db, key, _| db.get::<String>(key).unwrap());
}

#[test]
fn a_batch_waiting_for_a_dead_owner_goes_to_the_node_that_takes_its_slots() {
    waiting_for_a_dead_owner(|db, key, elsewhere| {
        let batch = db.batch();
        let on_dead = batch.get::<String>(key);
        let on_live = batch.get::<String>(elsewhere);
        batch.execute().unwrap();
        format!("{} {}", on_dead.wait().unwrap(), on_live.wait().unwrap())
    });
}

#[test]
fn a_transaction_waiting_for_a_dead_owner_goes_to_the_node_that_takes_its_slots() {
    waiting_for_a_dead_owner(|db, key, _| {
        let tx = db.transaction();
        let v = tx.get::<String>(key);
        tx.set(format!("{{{key}}}:seen"), 1);
        assert!(tx.execute().unwrap());
        v.wait().unwrap()
    });
}

/// `op` runs while the owner of `key` is dead (its reply is checked to hold "v"); the
/// cluster then hands that node's slots to the other node, as a promotion does, and
/// `op` must finish there. `elsewhere` is a key of the live node.
fn waiting_for_a_dead_owner(op: impl Fn(&Database, &str, &str) -> String + Sync) {
    let cluster = FakeCluster::start(2).unwrap();
    // Default options: the call would wait 5 s for the dead node and then fail.
    let client = Client::connect(opt_in(cluster.url().as_str())).unwrap();
    let db = client.database();
    let key = "promoted";
    db.set(key, "v").unwrap();
    let owner = cluster.owner_of_key(key.as_bytes()).unwrap();
    let other = 1 - owner;
    let elsewhere = (0..10_000)
        .map(|i| format!("live{i}"))
        .find(|k| cluster.owner_of_key(k.as_bytes()) == Some(other))
        .unwrap();
    db.set(&elsewhere, "v").unwrap();
    let dead = cluster.node(owner);
    dead.refuse_connections(true);
    dead.close_all_connections();
    let dead_port = dead.port();
    let waiting = |client: &Client| {
        client
            .status()
            .nodes
            .iter()
            .any(|n| n.endpoint.port == dead_port && n.backlog > 0)
    };
    // The call starts once the client has seen the connection go: started before, it
    // would be written on the dying connection and fail with it (sent, so not resent
    // without a retry policy), which is not what this test is about. Seen on a loaded
    // machine, where the reader thread noticed the close late.
    assert!(
        wait_until(Duration::from_secs(10), || client
            .status()
            .nodes
            .iter()
            .any(|n| n.endpoint.port == dead_port && !n.connected)),
        "the client never saw the node's connection close"
    );
    thread::scope(|s| {
        let call = s.spawn(|| op(&db, key, &elsewhere));
        assert!(
            wait_until(Duration::from_secs(10), || waiting(&client)),
            "the call is not waiting for the dead node"
        );
        // The cluster hands the dead node's slots (and keys) to the other node, as a
        // promotion does.
        let owned: Vec<u16> = (0..16384u16)
            .filter(|s| cluster.slot_owner(*s) == Some(owner))
            .collect();
        assert!(owned.contains(&key_slot(key.as_bytes())));
        let (first, last) = (owned[0], owned[owned.len() - 1]);
        cluster.migrate(first..=last, owner, other, false).unwrap();
        let reply = call.join().unwrap();
        assert!(reply == "v" || reply == "v v", "{reply}");
    });
    client.close();
}
