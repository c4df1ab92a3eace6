//! The fake's cluster side against real redis-server: `COMMAND INFO` (arity, key
//! positions, the request and response policy tips a cluster client routes by), the
//! keyspace events writes publish, and one transcript of cluster-wide operations run
//! on a fake cluster and on a real one (the walk, `KEYS`, `DBSIZE`, `FLUSHDB`,
//! commands per master, keyspace events from every master).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::cluster::RedisCluster;
use crate::support::RedisServer;
use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::{FakeCluster, FakeServer};
use resilient_redis::ScanOptions;

/// Commands whose table entries a cluster client depends on.
const COMMANDS: &[&str] = &[
    "get", "set", "incrby", "mget", "mset", "del", "unlink", "exists", "touch", "dbsize", "keys",
    "scan", "flushdb", "flushall", "info", "ping", "wait", "rename", "xread", "hset", "lpush",
    "zadd", "publish", "spublish",
];

/// What a client reads of one `COMMAND INFO` entry: name, arity, first/last/step, and
/// the policy tips.
fn entry_summary(v: &Value) -> String {
    let Value::Array(fields) = v else {
        return format!("not an entry: {v:?}");
    };
    let text = |v: &Value| {
        v.as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let tips: Vec<String> = match fields.get(7) {
        Some(Value::Array(t) | Value::Set(t)) => t
            .iter()
            .filter_map(text)
            .filter(|t| t.contains("_policy:"))
            .collect(),
        _ => Vec::new(),
    };
    format!(
        "{:?} arity {:?} keys {:?}/{:?}/{:?} tips {tips:?}",
        fields.first().and_then(text),
        fields.get(1),
        fields.get(3),
        fields.get(4),
        fields.get(5),
    )
}

/// A client of the standalone server on `port`.
fn client(port: u16) -> Client {
    Client::connect(format!("redis://127.0.0.1:{port}").as_str()).unwrap()
}

#[test]
fn command_info_tips_and_key_positions_match_the_server() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let fake = FakeServer::start().unwrap();
    let [real, fake] = [server.port, fake.port()].map(|port| {
        let db = client(port).database();
        let mut cmd = db.cmd("COMMAND").arg("INFO");
        for c in COMMANDS {
            cmd = cmd.arg(*c);
        }
        let Value::Array(entries) = cmd.query::<Value>().unwrap() else {
            panic!("COMMAND INFO is not an array")
        };
        entries.iter().map(entry_summary).collect::<Vec<_>>()
    });
    for (r, f) in real.iter().zip(&fake) {
        assert_eq!(f, r, "the fake (left) differs from the server");
    }
    assert_eq!(real.len(), COMMANDS.len());
}

#[test]
fn keyspace_events_match_the_server() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let fake = FakeServer::start().unwrap();
    let [real, fake] = [server.port, fake.port()].map(|port| {
        let client = client(port);
        let db = client.database();
        db.config_set("notify-keyspace-events", "KEA").unwrap();
        let sub = client.subscriber();
        let events = sub.psubscribe("__key*__:*").unwrap();
        db.set("a", 1).unwrap();
        db.incr("a", 2).unwrap();
        db.mset(&[("b", "1"), ("c", "2")]).unwrap();
        db.hset("h", "f", "v").unwrap();
        db.expire("h", Duration::from_secs(100)).unwrap();
        db.del(["a", "nope"]).unwrap();
        db.del("nope").unwrap();
        db.set("end", 1).unwrap();
        let mut seen = Vec::new();
        loop {
            let m = events
                .recv_timeout(Duration::from_secs(5))
                .expect("an event");
            let line = format!("{} {}", m.channel_str(), m.payload_str());
            let last = line == "__keyevent@0__:set end";
            seen.push(line);
            if last {
                return seen;
            }
        }
    });
    assert_eq!(fake, real, "the fake (left) differs from the server");
}

/// One transcript of cluster-wide operations.
fn cluster_transcript(client: &Client) -> Vec<String> {
    let db = client.database();
    let mut t = Vec::new();
    for i in 0..500 {
        db.set(format!("k:{i}"), i).unwrap();
    }
    let walked: BTreeSet<String> = db
        .scan_iter::<String>(ScanOptions::default().count(50))
        .collect::<Result<_, _>>()
        .unwrap();
    t.push(format!("walk: {} keys", walked.len()));
    let mut keys: Vec<String> = db.keys("k:1*").unwrap();
    keys.sort();
    t.push(format!("KEYS k:1*: {keys:?}"));
    t.push(format!("DBSIZE: {:?}", db.dbsize()));
    let per_master: i64 = client
        .for_each_master(|m| m.dbsize())
        .into_iter()
        .map(|(_, n)| n.unwrap())
        .sum();
    t.push(format!("DBSIZE per master, summed: {per_master}"));
    t.push(format!(
        "SCAN with a cursor: {:?}",
        db.scan::<String>(0, None, None).map_err(|e| e.kind())
    ));
    db.config_set("notify-keyspace-events", "KEA").unwrap();
    let sub = client.subscriber();
    let events = sub.psubscribe("__keyevent@0__:del").unwrap();
    t.push(format!(
        "DEL: {:?}",
        db.del(["k:1", "k:2", "k:3", "k:4", "k:5"])
    ));
    let mut deleted = BTreeSet::new();
    while deleted.len() < 5 {
        let m = events
            .recv_timeout(Duration::from_secs(5))
            .expect("a del event");
        deleted.insert(m.payload_str().to_string());
    }
    t.push(format!("del events: {deleted:?}"));
    t.push(format!("FLUSHDB: {:?}", db.flushdb()));
    t.push(format!("DBSIZE: {:?}", db.dbsize()));
    t
}

#[test]
fn a_fake_cluster_answers_cluster_wide_operations_as_a_real_one() {
    let Some(real) = RedisCluster::start(3) else {
        return;
    };
    let fake = FakeCluster::start(3).unwrap();
    let [real, fake] = [real.nodes[0].url(), fake.url()].map(|url| {
        let client = Client::connect(url.as_str()).unwrap();
        assert!(client.is_cluster());
        cluster_transcript(&client)
    });
    for (r, f) in real.iter().zip(&fake) {
        assert_eq!(f, r, "the fake cluster (left) differs from the real one");
    }
    assert_eq!(real.len(), fake.len());
}
