//! The whole keyspace of a real cluster, with the options a user gets by default:
//! `scan_iter` and `KEYS` return every key, `DBSIZE` sums the masters and `FLUSHDB`
//! empties them all, `SCRIPT LOAD` reaches every master, a key passed with `.arg()` is
//! routed by the command table, commands go to chosen nodes, keyspace notifications
//! come from every master, and a walk misses no key through a slot migration, a
//! graceful failover and a master kill (with `cluster-require-full-coverage yes`).
//!
//! Each test starts one cluster and runs its checks in order on it (a cluster takes
//! seconds to start; the checks take less).

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use resilient_redis::cluster::key_slot;
use resilient_redis::prelude::*;
use resilient_redis::{ErrorKind, MessageKind, NodeRole, ScanOptions};
use support::cluster::{tags_owned_by, ClusterSpec, RedisCluster};
use support::optin::opt_in;
use support::wait_until;

const KEYS: usize = 3000;

fn connect(cluster: &RedisCluster) -> Client {
    let client = Client::connect(opt_in(cluster.nodes[0].url().as_str())).unwrap();
    assert!(client.is_cluster());
    client
}

/// `k:0` ... `k:2999`, written in one batch.
fn write_keys(db: &Database) {
    let batch = db.batch();
    for i in 0..KEYS {
        batch.set(format!("k:{i}"), i);
    }
    batch.execute().unwrap();
}

fn all_keys() -> BTreeSet<String> {
    (0..KEYS).map(|i| format!("k:{i}")).collect()
}

/// Reads `iter` to its end; the distinct keys, and how many came in all.
fn drain(iter: impl Iterator<Item = resilient_redis::Result<String>>) -> (BTreeSet<String>, usize) {
    let mut seen = BTreeSet::new();
    let mut n = 0;
    for key in iter {
        seen.insert(key.unwrap());
        n += 1;
    }
    (seen, n)
}

#[test]
fn keyless_commands_reach_every_master_and_the_walk_returns_every_key() {
    let Some(cluster) = RedisCluster::start(3) else {
        return;
    };
    let client = connect(&cluster);
    let db = client.database();
    write_keys(&db);

    // The walk and KEYS: every key, from every master.
    let (seen, _) = drain(db.scan_iter::<String>(ScanOptions::default().count(100)));
    assert_eq!(seen, all_keys());
    let (few, _) = drain(db.scan_iter::<String>(ScanOptions::default().pattern("k:1??")));
    assert_eq!(few.len(), 100, "{few:?}");
    db.hset("h:typed", "f", "v").unwrap();
    let (hashes, _) = drain(db.scan_iter::<String>(ScanOptions::default().key_type("hash")));
    assert_eq!(hashes, BTreeSet::from(["h:typed".to_string()]));
    let mut keys: Vec<String> = db.keys("k:*").unwrap();
    keys.sort();
    assert_eq!(keys.len(), KEYS);
    // A raw cursor would read one node: refused, naming the iterator.
    let err = db.scan::<String>(0, None, Some(100)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("scan_iter"), "{err}");

    // A key's own iterators.
    for i in 0..300 {
        db.hset("h:big", format!("f{i}"), i).unwrap();
        db.sadd("s:big", format!("m{i}")).unwrap();
        db.zadd("z:big", format!("m{i}"), i as f64).unwrap();
    }
    let fields: Vec<(String, i64)> = db
        .hscan_iter("h:big", ScanOptions::default().count(20))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        fields.iter().map(|f| &f.0).collect::<BTreeSet<_>>().len(),
        300
    );
    let members: BTreeSet<String> = db
        .sscan_iter("s:big", ScanOptions::default().pattern("m1*"))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(members.len(), 111, "m1, m10-m19, m100-m199");
    let scored: Vec<(String, f64)> = db
        .zscan_iter("z:big", ScanOptions::default())
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(scored.iter().any(|(m, s)| m == "m299" && *s == 299.0));

    // DBSIZE is the sum over the masters, each read where it lives.
    let per_master: Vec<i64> = client
        .for_each_master(|node| node.dbsize())
        .into_iter()
        .map(|(_, n)| n.unwrap())
        .collect();
    assert_eq!(per_master.len(), 3);
    assert!(per_master.iter().all(|n| *n > 0), "{per_master:?}");
    assert_eq!(db.dbsize().unwrap(), per_master.iter().sum::<i64>());
    assert_eq!(db.dbsize().unwrap(), KEYS as i64 + 4);

    // The nodes, their roles and slots; INFO where it is meant.
    let nodes = client.nodes();
    let masters: Vec<_> = nodes
        .iter()
        .filter(|n| n.role == NodeRole::Master)
        .collect();
    assert_eq!(masters.len(), 3, "{nodes:?}");
    let slots: usize = masters.iter().flat_map(|n| &n.slots).map(|r| r.len()).sum();
    assert_eq!(slots, 16384);
    for node in &masters {
        let info = client
            .on_node(&node.endpoint)
            .unwrap()
            .info(Some("server"))
            .unwrap();
        assert!(
            info.contains(&format!("tcp_port:{}", node.endpoint.port)),
            "{info}"
        );
    }
    let err = db.info(None).unwrap_err();
    assert!(err.to_string().contains("for_each_master"), "{err}");

    // A key given with `.arg()` goes to its owner: no MOVED.
    let moved = client.cluster_stats().unwrap().moved;
    for i in 0..30 {
        let n: i64 = db
            .cmd("INCRBY")
            .arg(format!("counter{i}"))
            .arg(5)
            .query()
            .unwrap();
        assert_eq!(n, 5);
    }
    assert_eq!(client.cluster_stats().unwrap().moved, moved);

    // SCRIPT LOAD reaches every master: EVALSHA then runs on any slot.
    let sha = db.script_load("return redis.call('GET', KEYS[1])").unwrap();
    for (node, loaded) in client.for_each_master(|node| node.script_exists(sha.as_str())) {
        assert_eq!(loaded.unwrap(), vec![true], "{node}");
    }
    assert_eq!(db.script_exists(sha.as_str()).unwrap(), vec![true]);
    for master in &masters {
        let tag = &tags_owned_by(&cluster, master.endpoint.port, 1)[0];
        let key = format!("{{{tag}}}:e");
        db.set(&key, "x").unwrap();
        let v: String = db.evalsha(&sha, key.as_str(), ()).unwrap();
        assert_eq!(v, "x");
    }

    // FLUSHDB empties every master.
    db.flushdb().unwrap();
    assert_eq!(db.dbsize().unwrap(), 0);
    for (node, n) in client.for_each_master(|node| node.dbsize()) {
        assert_eq!(n.unwrap(), 0, "{node}");
    }
}

#[test]
fn keyspace_events_come_from_every_master_and_a_walk_misses_nothing_through_a_migration() {
    let Some(cluster) = RedisCluster::start(3) else {
        return;
    };
    let client = connect(&cluster);
    let db = client.database();
    // CONFIG SET goes to every node.
    db.config_set("notify-keyspace-events", "KEA").unwrap();
    let sub = client.subscriber();
    let events = sub.psubscribe("__keyspace@0__:ev:*").unwrap();
    let masters: Vec<u16> = cluster.shards().iter().map(|s| s.0).collect();
    assert_eq!(masters.len(), 3);
    for port in &masters {
        let tag = &tags_owned_by(&cluster, *port, 1)[0];
        db.set(format!("ev:{{{tag}}}"), 1).unwrap();
    }
    let mut from = BTreeSet::new();
    while from.len() < 3 {
        let m = events
            .recv_timeout(Duration::from_secs(5))
            .expect("an event per master");
        assert_eq!(m.kind, MessageKind::Pattern);
        assert_eq!(m.payload, b"set");
        from.insert(String::from_utf8_lossy(&m.channel).into_owned());
    }

    // A walk while a slot (and its keys) moves between masters, half-way through its
    // first node: every key that existed throughout comes back.
    write_keys(&db);
    let tag = "{mig}";
    let moving: Vec<String> = (0..200).map(|i| format!("{tag}:{i}")).collect();
    for k in &moving {
        db.set(k, 1).unwrap();
    }
    let slot = key_slot(tag.as_bytes());
    let from = cluster.owner_of(slot);
    let to = masters.iter().copied().find(|p| *p != from).unwrap();
    let mut walk = db.scan_iter::<String>(ScanOptions::default().count(10));
    let mut seen = BTreeSet::new();
    for key in walk.by_ref().take(500) {
        seen.insert(key.unwrap());
    }
    cluster.migrate_slot(slot, from, to, || {
        for key in walk.by_ref().take(300) {
            seen.insert(key.unwrap());
        }
    });
    for key in walk {
        seen.insert(key.unwrap());
    }
    let expected: BTreeSet<String> = all_keys().into_iter().chain(moving).collect();
    let missing: Vec<&String> = expected.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "{} keys missed: {missing:?}",
        missing.len()
    );
}

#[test]
fn a_walk_keyspace_events_and_a_batch_ride_through_a_failover_and_a_master_kill() {
    // Full coverage: while a master is down, the whole cluster answers CLUSTERDOWN.
    // A short node timeout: the promotion after the kill well within the default 5 s
    // command timeout on a busy machine (about 2.5 s, where 2000 ms takes about 4 s).
    let spec = ClusterSpec::new(3, 1)
        .node_timeout_ms(1000)
        .full_coverage(true);
    let Some(mut cluster) = RedisCluster::start_spec(spec) else {
        return;
    };
    let client = connect(&cluster);
    let db = client.database();
    write_keys(&db);
    db.config_set("notify-keyspace-events", "KEA").unwrap();
    // Every node has it, the replicas too (they will be promoted below).
    for n in &cluster.nodes {
        let set = support::cluster::cli(n.port, &["CONFIG", "GET", "notify-keyspace-events"]);
        assert!(set.ends_with("AKE"), "{}: {set}", n.port);
    }
    let sub = client.subscriber();
    let events = sub.psubscribe("__keyevent@0__:*").unwrap();
    let shards = cluster.shards();
    assert_eq!(shards.len(), 3, "{shards:?}");
    let first = cluster.owner_of(0);
    let (first_replica, last) = {
        let s = shards.iter().find(|s| s.0 == first).unwrap();
        let last = cluster.owner_of(16383);
        (s.1.expect("a replica"), last)
    };
    let last_replica = shards
        .iter()
        .find(|s| s.0 == last)
        .unwrap()
        .1
        .expect("a replica");

    // One tag per shard, for the batch below.
    let tags: Vec<String> = shards
        .iter()
        .map(|s| tags_owned_by(&cluster, s.0, 1).remove(0))
        .collect();

    let mut walk = db.scan_iter::<String>(ScanOptions::default().count(20));
    let mut seen = BTreeSet::new();
    // Part-way through the first master: a graceful failover of it.
    for key in walk.by_ref().take(300) {
        seen.insert(key.unwrap());
    }
    cluster.graceful_failover(first_replica);
    RedisCluster::wait_promoted(first_replica, Duration::from_secs(30)).expect("promoted");
    for key in walk.by_ref().take(1500) {
        seen.insert(key.unwrap());
    }

    // Then the last master dies. A batch over all three shards sent at once waits for
    // the dead one only until its replica is promoted, then goes there (default
    // options: within the 5 s command timeout); meanwhile the other shards answer
    // CLUSTERDOWN (full coverage), which is waited out.
    cluster.node_mut(last).kill();
    let batch = db.batch();
    let replies: Vec<_> = tags
        .iter()
        .map(|t| batch.incr(format!("b:{{{t}}}"), 1))
        .collect();
    batch.execute().unwrap();
    for r in replies {
        assert_eq!(r.wait().unwrap(), 1);
    }

    // The walk goes on to the promoted replica of the dead master.
    for key in walk {
        seen.insert(key.unwrap());
    }
    let missing: Vec<String> = all_keys().difference(&seen).cloned().collect();
    assert!(
        missing.is_empty(),
        "{} keys missed: {missing:?}",
        missing.len()
    );
    RedisCluster::wait_promoted(last_replica, Duration::from_secs(30)).expect("promoted");

    // Keyspace events from every master, the promoted ones included.
    let wanted: BTreeSet<String> = tags.iter().map(|t| format!("after:{{{t}}}")).collect();
    for k in &wanted {
        db.set(k, 1).unwrap();
    }
    let mut keys = BTreeSet::new();
    let got = wait_until(Duration::from_secs(10), || {
        while let Some(m) = events.try_recv() {
            keys.insert(String::from_utf8_lossy(&m.payload).into_owned());
        }
        wanted.iter().all(|k| keys.contains(k))
    });
    assert!(
        got,
        "keyevent notifications missing: {wanted:?} not all in {keys:?}"
    );
}
