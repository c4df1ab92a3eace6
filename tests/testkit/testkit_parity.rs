//! The testkit's fake against a real redis-server: every typed method of the crate runs
//! on both, over RESP2 and RESP3, and must give the same result in the same shape
//! (`Debug` of what the typed call returns, errors included), so a user's test on the
//! fake means what it would on a server. One test per command family, one for raw
//! replies (options and errors the typed API never sends), one for blocking commands
//! woken by another client, and one that fails when a typed method has no step here.
//!
//! What the fake does not do, it says (Lua: `scripting` asserts the refusal); see
//! `docs/testing.md`, "What the fake speaks".

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::RedisServer;
use resilient_redis::config::Protocol;
use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::FakeServer;
use resilient_redis::{Endpoint, ErrorKind, Result, Script, SetOptions};

/// Records one step: the expression and what it returned.
macro_rules! step {
    ($t:ident, $e:expr) => {
        $t.push(format!("{} => {}", stringify!($e), Show::show(&$e)))
    };
}

/// A step's outcome as compared: an error by its kind and text only (its `Display`
/// names the server's address, which differs).
trait Show {
    fn show(&self) -> String;
}

impl<T: std::fmt::Debug> Show for Result<T> {
    fn show(&self) -> String {
        match self {
            Ok(v) => format!("Ok({v:?})"),
            Err(e) => format!("Err({:?}: {})", e.kind(), e.detail()),
        }
    }
}

impl Show for bool {
    fn show(&self) -> String {
        self.to_string()
    }
}

fn connect(port: u16, protocol: Protocol) -> Client {
    let mut options = Options::default();
    options.endpoints = vec![Endpoint::new("127.0.0.1", port)];
    options.protocol = Some(protocol);
    options.command_timeout = Duration::from_secs(5);
    Client::connect(crate::support::optin::opt_in(options)).expect("connect")
}

/// Runs `transcript` on a fresh real server and a fresh fake, over both protocols, and
/// asserts the same lines in the same order.
fn same_on_both(transcript: impl Fn(&Database) -> Vec<String>) {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let fake = FakeServer::start().unwrap();
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        let lines = [server.port, fake.port()].map(|port| {
            let client = connect(port, protocol);
            let db = client.database();
            db.flushall().unwrap();
            let lines = transcript(&db);
            client.close();
            lines
        });
        let [real, fake] = &lines;
        for (r, f) in real.iter().zip(fake) {
            assert_eq!(
                f, r,
                "{protocol:?}: the fake (left) differs from the server"
            );
        }
        assert_eq!(real.len(), fake.len(), "{protocol:?}");
    }
}

fn sorted<T: Ord>(r: Result<Vec<T>>) -> Result<Vec<T>> {
    r.map(|mut v| {
        v.sort();
        v
    })
}

/// Whether a reply is an automatically made stream id (`<ms>-<seq>`).
fn is_id(r: &Result<String>) -> bool {
    r.as_ref().is_ok_and(|id| {
        let (ms, seq) = id.split_once('-').unwrap_or(("", "x"));
        ms.parse::<u64>().is_ok() && seq.parse::<u64>().is_ok()
    })
}

/// Whether a time left is in a window wide enough for a loaded machine (the two
/// servers run the steps at different moments).
fn within(r: Result<i64>, low: i64, high: i64) -> Result<bool> {
    r.map(|v| (low..=high).contains(&v))
}

#[test]
fn strings() {
    same_on_both(|db| {
        let mut t = Vec::new();
        let secs = Duration::from_secs;
        step!(t, db.set("s", "hello"));
        step!(t, db.get::<Option<String>>("s"));
        step!(t, db.get::<Value>("nope"));
        step!(t, db.set_nx("s", "x"));
        step!(t, db.set_nx("n", "x"));
        step!(t, db.setnx("n", "y"));
        step!(t, db.set_ex("e", "v", secs(10)));
        step!(t, within(db.pttl("e"), 5_000, 10_000));
        let opts = SetOptions::new().xx().get().keep_ttl();
        step!(t, db.set_options::<Option<String>>("e", "w", &opts));
        step!(t, within(db.pttl("e"), 5_000, 10_000));
        let opts = SetOptions::new().nx().ttl(secs(10));
        step!(t, db.set_options::<bool>("e", "w", &opts));
        let at = SystemTime::now() + secs(100);
        step!(
            t,
            db.set_options::<Value>("at", "1", &SetOptions::new().expire_at(at))
        );
        step!(t, within(db.ttl("at"), 90, 100));
        step!(t, db.get_set::<Option<String>>("s", "world"));
        step!(t, db.get_del::<Option<String>>("s"));
        step!(t, db.get_del::<Value>("s"));
        step!(t, db.get_ex::<Option<String>>("n", Some(secs(30))));
        step!(t, within(db.ttl("n"), 20, 30));
        step!(t, db.get_ex::<Option<String>>("n", None));
        step!(t, db.ttl("n"));
        step!(t, db.get_ex::<Value>("nope", None));
        step!(t, db.mset(&[("a", "1"), ("b", "2")]));
        step!(t, db.mget::<String>(["a", "nope", "b"]));
        step!(t, db.incr("a", 5));
        step!(t, db.decr("a", 7));
        step!(t, db.incr("n", 1));
        step!(t, db.incr_by_float("f", 1.5));
        step!(t, db.incr_by_float("f", -0.25));
        step!(t, db.append("b", "xyz"));
        step!(t, db.strlen("b"));
        step!(t, db.strlen("nope"));
        step!(t, db.getrange::<String>("b", 1, -1));
        step!(t, db.getrange::<String>("b", 0, -100));
        step!(t, db.getrange::<String>("b", -1, -5));
        step!(t, db.getrange::<Value>("nope", 0, -1));
        step!(t, db.setrange("b", 6, "!"));
        step!(t, db.get::<Vec<u8>>("b"));
        step!(t, db.setrange("fresh", 0, ""));
        step!(t, db.exists("fresh"));
        step!(t, db.rpush("l", "x"));
        step!(t, db.get::<Option<String>>("l"));
        step!(t, db.append("l", "x"));
        t
    });
}

#[test]
fn keys() {
    same_on_both(|db| {
        let mut t = Vec::new();
        let secs = Duration::from_secs;
        step!(t, db.mset(&[("a", "1"), ("b", "2"), ("c", "3")]));
        step!(t, db.hset("h", "f", "v"));
        step!(t, db.xadd("x", "1-1", ("f", "v")));
        for k in ["a", "h", "x", "nope"] {
            step!(t, db.key_type(k));
        }
        step!(t, db.exists(["a", "a", "nope"]));
        step!(t, db.touch(["a", "b", "nope"]));
        step!(t, db.expire("a", secs(100)));
        step!(t, within(db.ttl("a"), 90, 100));
        step!(t, within(db.pttl("a"), 90_000, 100_000));
        step!(t, db.pexpire("b", Duration::from_millis(50_200)));
        step!(t, within(db.ttl("b"), 45, 51));
        step!(t, db.expire("nope", secs(1)));
        step!(t, db.persist("a"));
        step!(t, db.persist("a"));
        step!(t, db.ttl("a"));
        step!(t, db.ttl("nope"));
        let later = SystemTime::now() + secs(200);
        step!(t, db.expire_at("c", later));
        step!(t, within(db.ttl("c"), 190, 200));
        step!(t, db.pexpire_at("c", later + secs(100)));
        step!(t, within(db.ttl("c"), 290, 300));
        step!(t, db.expire_at("c", UNIX_EPOCH + secs(1)));
        step!(t, db.exists("c"));
        step!(t, db.pexpire_at("nope", later));
        step!(t, db.rename("a", "a2"));
        step!(t, db.rename("nope", "x2"));
        step!(t, db.rename_nx("a2", "b"));
        step!(t, db.rename_nx("a2", "a3"));
        step!(t, db.rename_nx("nope", "a4"));
        step!(t, db.copy("a3", "a5", false));
        step!(t, db.copy("a3", "a5", false));
        step!(t, db.copy("h", "a5", true));
        step!(t, db.key_type("a5"));
        step!(t, db.copy("a3", "a3", true));
        step!(t, db.copy("nope", "a6", false));
        step!(t, sorted(db.keys::<String>("*")));
        step!(t, sorted(db.keys::<String>("a?")));
        for i in 0..30 {
            db.set(format!("k{i}"), i).unwrap();
        }
        step!(t, scan_all(db, None, Some(7)));
        step!(t, scan_all(db, Some("k1*"), None));
        step!(t, db.del(["k1", "k2", "nope"]));
        step!(t, db.unlink(["k3", "nope"]));
        step!(t, db.dbsize());
        t
    });
}

/// Every key SCAN returns from cursor 0 until it says 0 again, sorted.
fn scan_all(db: &Database, pattern: Option<&str>, count: Option<usize>) -> Result<Vec<String>> {
    let (mut cursor, mut all) = (0, Vec::new());
    loop {
        let (next, page): (u64, Vec<String>) = db.scan(cursor, pattern, count)?;
        all.extend(page);
        if next == 0 {
            all.sort();
            all.dedup();
            return Ok(all);
        }
        cursor = next;
    }
}

#[test]
fn hashes() {
    same_on_both(|db| {
        let mut t = Vec::new();
        step!(t, db.hset("h", "name", "ada"));
        step!(t, db.hset("h", "name", "Ada"));
        step!(t, db.hset_multiple("h", [("year", "1815"), ("f", "1.5")]));
        step!(t, db.hsetnx("h", "name", "x"));
        step!(t, db.hsetnx("h", "new", "x"));
        step!(t, db.hget::<Option<String>>("h", "name"));
        step!(t, db.hget::<Value>("h", "nope"));
        step!(t, db.hmget::<String>("h", ["year", "nope"]));
        step!(t, db.hgetall::<Value>("h"));
        step!(t, db.hgetall::<BTreeMap<String, String>>("nope"));
        step!(t, db.hexists("h", "year"));
        step!(t, db.hexists("h", "nope"));
        step!(t, db.hincr("h", "year", 10));
        step!(t, db.hincr("h", "name", 1));
        step!(t, db.hincr_by_float("h", "f", 0.25));
        step!(t, db.hincr_by_float("h", "g", 2.0));
        step!(t, db.hincr_by_float("h", "name", 1.0));
        step!(t, db.hkeys::<String>("h"));
        step!(t, db.hvals::<String>("h"));
        step!(t, db.hlen("h"));
        step!(t, db.hstrlen("h", "name"));
        step!(t, db.hstrlen("h", "nope"));
        step!(t, db.hdel("h", ["name", "nope"]));
        step!(t, db.hdel("h", ["year", "f", "new", "g"]));
        step!(t, db.exists("h"));
        step!(t, db.set("s", "v"));
        step!(t, db.hget::<Option<String>>("s", "f"));
        t
    });
}

#[test]
fn lists() {
    same_on_both(|db| {
        let mut t = Vec::new();
        let short = Duration::from_millis(100);
        step!(t, db.lpushx("l", "x"));
        step!(t, db.rpush("l", ["a", "b", "c", "a"]));
        step!(t, db.lpush("l", "z"));
        step!(t, db.lpushx("l", "y"));
        step!(t, db.rpushx("l", ["q", "r"]));
        step!(t, db.lrange::<String>("l", 0, -1));
        step!(t, db.llen("l"));
        step!(t, db.lindex::<Option<String>>("l", -1));
        step!(t, db.lindex::<Value>("l", 99));
        step!(t, db.lset("l", 0, "Y"));
        step!(t, db.lset("l", 99, "x"));
        step!(t, db.lset("nope", 0, "x"));
        step!(t, db.lpos("l", "a"));
        step!(t, db.lpos("l", "nope"));
        step!(t, db.lrem("l", -1, "a"));
        step!(t, db.lrem("l", 0, "nope"));
        step!(t, db.linsert_before("l", "b", "B"));
        step!(t, db.linsert_after("l", "b", "b2"));
        step!(t, db.linsert_after("l", "nope", "x"));
        step!(t, db.linsert_before("nope", "a", "x"));
        step!(t, db.ltrim("l", 1, -2));
        step!(t, db.lrange::<String>("l", 0, -1));
        step!(t, db.lpop::<Option<String>>("l", None));
        step!(t, db.rpop::<Value>("l", Some(2)));
        step!(t, db.lpop::<Value>("nope", Some(2)));
        step!(t, db.lpop::<Value>("nope", None));
        step!(
            t,
            db.lmove::<Option<String>>("l", "m", ListEnd::Left, ListEnd::Right)
        );
        step!(
            t,
            db.lmove::<Value>("nope", "m", ListEnd::Left, ListEnd::Left)
        );
        step!(
            t,
            db.lmove::<String>("l", "l", ListEnd::Right, ListEnd::Left)
        );
        step!(
            t,
            db.blpop::<Option<(String, String)>>(["nope", "l"], short)
        );
        step!(t, db.brpop::<Option<(String, String)>>("m", short));
        step!(t, db.blpop::<Value>("nope", short));
        step!(t, db.rpush("src", ["1", "2", "3"]));
        step!(
            t,
            db.blmove::<Option<String>>("src", "dst", ListEnd::Right, ListEnd::Left, short)
        );
        step!(t, db.brpoplpush::<Option<String>>("src", "dst", short));
        step!(t, db.brpoplpush::<Value>("nope", "dst", short));
        step!(
            t,
            db.blmove::<Value>("nope", "dst", ListEnd::Left, ListEnd::Left, short)
        );
        step!(t, db.lrange::<String>("dst", 0, -1));
        step!(t, db.ltrim("dst", 5, 1));
        step!(t, db.exists("dst"));
        step!(t, db.set("s", "v"));
        step!(t, db.lpush("s", "x"));
        step!(
            t,
            db.lmove::<Value>("src", "s", ListEnd::Left, ListEnd::Left)
        );
        t
    });
}

#[test]
fn sets() {
    same_on_both(|db| {
        let mut t = Vec::new();
        step!(t, db.sadd("a", ["x", "y", "z"]));
        step!(t, db.sadd("b", ["y", "z", "w"]));
        step!(t, db.sadd("n", ["3", "10", "-1", "2"]));
        step!(t, db.smembers::<Value>("n"));
        step!(t, sorted(db.smembers::<Vec<String>>("a")));
        step!(t, db.sismember("a", "x"));
        step!(t, db.smismember("a", ["x", "nope"]));
        step!(t, db.smismember("nope", "x"));
        step!(t, db.scard("a"));
        step!(t, db.srem("a", ["x", "nope"]));
        step!(t, sorted(db.sinter::<Vec<String>>(["a", "b"])));
        step!(t, sorted(db.sunion::<Vec<String>>(["a", "b", "nope"])));
        step!(t, sorted(db.sdiff::<Vec<String>>(["b", "a"])));
        step!(t, db.sinter::<Value>(["a", "nope"]));
        step!(t, db.sinterstore("i", ["a", "b"]));
        step!(t, db.sunionstore("u", ["a", "b"]));
        step!(t, db.sdiffstore("d", ["b", "a"]));
        step!(t, db.sdiffstore("u", ["a", "a"]));
        step!(t, db.exists(["i", "u", "d"]));
        step!(t, db.smove("b", "c", "w"));
        step!(t, db.smove("b", "c", "nope"));
        step!(t, db.smove("nope", "c", "w"));
        step!(t, db.smembers::<Vec<String>>("c"));
        step!(t, db.sadd("one", "m"));
        step!(t, db.srandmember::<Option<String>>("one", None));
        step!(t, db.srandmember::<Vec<String>>("one", Some(-3)));
        step!(t, sorted(db.srandmember::<Vec<String>>("a", Some(5))));
        step!(t, db.srandmember::<Value>("nope", Some(2)));
        step!(t, db.srandmember::<Value>("nope", None));
        step!(t, db.spop::<Option<String>>("one", None));
        step!(t, db.exists("one"));
        step!(t, db.spop::<Value>("nope", None));
        step!(t, db.spop::<Value>("nope", Some(2)));
        step!(t, sorted(db.spop::<Vec<String>>("a", Some(5))));
        step!(t, db.exists("a"));
        step!(t, db.set("s", "v"));
        step!(t, db.sinter::<Value>(["nope", "s"]));
        step!(t, db.smove("c", "s", "w"));
        t
    });
}

#[test]
fn sorted_sets() {
    same_on_both(|db| {
        let mut t = Vec::new();
        let short = Duration::from_millis(100);
        step!(t, db.zadd("z", "a", 1.0));
        step!(
            t,
            db.zadd_multiple("z", [(2.0, "b"), (3.5, "c"), (4.0, "d"), (5.0, "e")])
        );
        step!(t, db.zscore("z", "c"));
        step!(t, db.zscore("z", "nope"));
        step!(t, db.zincr("z", "a", 0.5));
        step!(t, db.zcard("z"));
        step!(t, db.zcount("z", 2, "(4"));
        step!(t, db.zcount("z", f64::NEG_INFINITY, "+inf"));
        step!(t, db.zrange::<Value>("z", 0, -1));
        step!(t, db.zrange_withscores::<String>("z", 1, 2));
        step!(t, db.zrevrange::<String>("z", 0, 1));
        step!(t, db.zrevrange_withscores::<String>("z", 0, 1));
        step!(t, db.zrangebyscore::<String>("z", "(1.5", 4));
        step!(t, db.zrank("z", "c"));
        step!(t, db.zrevrank("z", "c"));
        step!(t, db.zrank("z", "nope"));
        step!(t, db.zpopmin::<String>("z", 1));
        step!(t, db.zpopmax::<String>("z", 2));
        step!(t, db.zadd_multiple("z", [(7.0, "f"), (8.0, "g")]));
        step!(t, db.zrem_range_by_rank("z", 0, 0));
        step!(t, db.zrem_range_by_score("z", 7, "(8"));
        step!(t, db.zrem("z", ["g", "nope"]));
        step!(t, db.bzpopmin::<Option<(String, String, f64)>>("z", short));
        step!(t, db.zadd("z", "h", 9.0));
        step!(t, db.bzpopmax::<Option<(String, String, f64)>>("z", short));
        step!(t, db.bzpopmax::<Value>(["z", "nope"], short));
        step!(t, db.zcard("z"));
        t
    });
}

#[test]
fn streams() {
    same_on_both(|db| {
        let mut t = Vec::new();
        let short = Duration::from_millis(100);
        step!(t, db.xadd("s", "1-1", [("f", "v"), ("g", "w")]));
        step!(t, db.xadd("s", "1-1", ("f", "v")));
        step!(t, db.xadd("s", "0-0", ("f", "v")));
        step!(t, db.xadd("s", "1-*", ("f", "v")));
        step!(t, db.xadd("s", "5", ("f", "v")));
        step!(t, db.xadd("s", "bad", ("f", "v")));
        step!(t, is_id(&db.xadd("s", "*", ("f", "v"))));
        step!(t, db.xlen("s"));
        step!(t, db.xlen("nope"));
        step!(t, db.xrange::<Value>("s", "-", "5", None));
        step!(t, db.xrange::<Vec<StreamEntry>>("s", "(1-1", "+", Some(2)));
        step!(t, db.xrange::<Value>("s", "-", "+", Some(0)));
        step!(t, db.xrange::<Value>("nope", "-", "+", None));
        step!(t, db.xrange::<Value>("s", "x", "+", None));
        step!(t, db.xdel("s", ["1-2", "9-9"]));
        step!(t, db.xdel("nope", "1-1"));
        step!(t, db.xread::<Value>(["s", "nope"], ["1-1", "0"], Some(1)));
        step!(
            t,
            db.xread::<Option<Vec<(String, Vec<StreamEntry>)>>>("s", "5-0", None)
                .map(|r| r.map(|v| v.len()))
        );
        step!(t, db.xread::<Value>("s", "$", None));
        step!(t, db.xread_block::<Value>("s", "$", short, None));
        step!(
            t,
            db.xread_block::<Value>(["nope", "s"], ["0", "0"], short, Some(1))
        );
        step!(t, db.xtrim_maxlen("s", 2, true));
        step!(t, db.xtrim_maxlen("s", 1, false));
        step!(
            t,
            db.xrange::<Vec<StreamEntry>>("s", "-", "+", None)
                .map(|v| v.len())
        );
        step!(t, db.xtrim_maxlen("s", 0, false));
        step!(t, db.key_type("s"));
        step!(t, db.xadd("s", "5-0", ("f", "v")));
        for i in 1..=250 {
            db.xadd("big", &format!("{i}-1"), ("f", i)).unwrap();
        }
        step!(t, db.xtrim_maxlen("big", 120, true));
        step!(t, db.xtrim_maxlen("big", 120, true));
        step!(t, db.xtrim_maxlen("big", 120, false));
        step!(t, db.xrange::<Vec<StreamEntry>>("big", "-", "+", Some(1)));
        step!(t, db.set("str", "v"));
        step!(t, db.xadd("str", "*", ("f", "v")));
        step!(t, db.xread::<Value>("str", "0", None));
        t
    });
}

#[test]
fn server() {
    same_on_both(|db| {
        let mut t = Vec::new();
        step!(t, db.ping());
        step!(t, db.echo::<String>("hi"));
        step!(t, db.echo::<Value>(""));
        step!(t, db.set("k", "v"));
        let info = db.info(None).unwrap();
        step!(
            t,
            info.contains("# Server") && info.contains("redis_version:")
        );
        let replication = db.info(Some("replication")).unwrap();
        step!(t, replication.contains("role:master"));
        step!(
            t,
            db.info(Some("keyspace")).map(|i| i.contains("db0:keys=1,"))
        );
        step!(
            t,
            db.info(Some("clients"))
                .map(|i| i.contains("blocked_clients:0"))
        );
        step!(t, db.dbsize());
        step!(t, db.flushdb());
        step!(t, db.dbsize());
        step!(t, db.set("k", "v"));
        step!(t, db.flushall());
        step!(t, db.dbsize());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let time: Result<(u64, u64)> = db.time();
        step!(
            t,
            time.map(|(s, us)| s.abs_diff(now) <= 5 && us < 1_000_000)
        );
        step!(t, db.wait(0, Duration::from_millis(10)));
        step!(t, db.wait(1, Duration::from_millis(50)));
        step!(t, db.client_id().map(|id| id > 0));
        step!(t, db.client_setname("parity"));
        step!(t, db.client_getname());
        step!(t, db.client_setname("no spaces"));
        step!(t, db.config_get::<BTreeMap<String, String>>("maxmemory"));
        step!(t, db.config_set("maxmemory", "10mb"));
        step!(t, db.config_get::<BTreeMap<String, String>>("maxmemory*"));
        step!(t, db.config_set("maxmemory", "0"));
        step!(t, db.config_set("maxmemory", "lots"));
        step!(t, db.config_set("nosuch", "1"));
        step!(t, db.config_get::<BTreeMap<String, String>>("nosuch"));
        step!(
            t,
            db.config_get::<BTreeMap<String, String>>("stream-node-max-entries")
        );
        t
    });
}

/// Scripting's non-Lua parts are the same on both; Lua itself the fake refuses, with
/// an error that says so (`docs/testing.md`).
#[test]
fn scripting() {
    const SHA: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    same_on_both(|db| {
        let mut t = Vec::new();
        let none: [&str; 0] = [];
        step!(t, db.script_flush());
        step!(t, db.script_exists([SHA, "ffff"]));
        step!(t, db.evalsha::<Value>(SHA, none, ()));
        step!(t, db.script_load("return 1"));
        step!(t, db.script_exists([SHA, "ffff"]));
        step!(t, Script::new("return 1").load(db));
        step!(t, db.script_flush());
        step!(t, db.script_exists(SHA));
        t
    });
    let fake = FakeServer::start().unwrap();
    let db = connect(fake.port(), Protocol::Resp3).database();
    let refused = |r: Result<Value>| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Server, "{e}");
        assert!(e.detail().contains("does not run Lua scripts"), "{e}");
    };
    refused(db.eval("return 1", "k", "a"));
    db.script_load("return 1").unwrap();
    refused(db.evalsha(SHA, (), ()));
    let script = Script::new("return redis.call('GET', KEYS[1])");
    refused(script.invoke(&db, "k", ()));
    let e = db.evalsha::<Value>(script.sha1(), (), ()).unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::NoScript,
        "not cached by a refused EVAL"
    );
}

/// `Subscriber::publish` and `spublish` count receivers the same way.
#[test]
fn publish() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let fake = FakeServer::start().unwrap();
    for port in [server.port, fake.port()] {
        for protocol in [Protocol::Resp2, Protocol::Resp3] {
            let client = connect(port, protocol);
            let sub = client.subscriber();
            let news = sub.subscribe("news").unwrap();
            assert_eq!(sub.publish("news", "hi").unwrap(), 1, "{port} {protocol:?}");
            assert_eq!(sub.publish("none", "hi").unwrap(), 0);
            assert_eq!(sub.spublish("shard", "hi").unwrap(), 0);
            let msg = news.recv_timeout(Duration::from_secs(5)).unwrap();
            assert_eq!(msg.payload_str(), "hi");
        }
    }
}

/// Blocking commands are woken by another client's write, on the fake too (whose store
/// is unlocked while a command waits), and answer the same.
#[test]
fn blocking_commands_wake_on_another_clients_write() {
    type Block = fn(&Database) -> String;
    type Write = fn(&Database);
    const LONG: Duration = Duration::from_secs(10);
    let cases: [(Block, Write); 7] = [
        (
            |db| {
                db.blpop::<Option<(String, String)>>(["a1", "a2"], LONG)
                    .show()
            },
            |db| drop(db.rpush("a2", ["x", "y"])),
        ),
        (
            |db| db.brpop::<Option<(String, String)>>("b", LONG).show(),
            |db| drop(db.lpush("b", ["x", "y"])),
        ),
        (
            |db| {
                db.blmove::<Value>("c", "d", ListEnd::Left, ListEnd::Right, LONG)
                    .show()
            },
            |db| drop(db.rpush("c", "x")),
        ),
        (
            |db| db.brpoplpush::<Value>("e", "d", LONG).show(),
            |db| drop(db.rpush("e", "x")),
        ),
        (
            |db| {
                db.bzpopmin::<Option<(String, String, f64)>>("z1", LONG)
                    .show()
            },
            |db| drop(db.zadd_multiple("z1", [(2.0, "b"), (1.0, "a")])),
        ),
        (
            |db| db.bzpopmax::<Value>(["z2", "z3"], LONG).show(),
            |db| drop(db.zadd("z3", "c", 3.0)),
        ),
        (
            |db| {
                db.xread_block::<Value>(["s", "t"], ["$", "0"], LONG, None)
                    .show()
            },
            |db| drop(db.xadd("t", "1-1", ("f", "v"))),
        ),
    ];
    same_on_both(|db| {
        let mut t = Vec::new();
        for (block, write) in cases {
            std::thread::scope(|s| {
                let waiter = s.spawn(|| block(db));
                let blocked =
                    crate::support::wait_until(Duration::from_secs(5), || blocked_clients(db) == 1);
                assert!(blocked, "the blocking command never blocked");
                write(db);
                t.push(waiter.join().unwrap());
                t.push(db.dbsize().show());
            });
        }
        t
    });
}

fn blocked_clients(db: &Database) -> i64 {
    let info = db.info(Some("clients")).unwrap_or_default();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"));
    line.and_then(|v| v.trim().parse().ok()).unwrap_or(-1)
}

/// Raw commands, as values: options the typed API never sends, and the server's
/// errors for bad input (the same error, never a panic or a silent success).
#[test]
fn raw_replies() {
    same_on_both(|db| {
        RAW.iter()
            .map(|line| {
                let mut words = line.split(' ').map(|w| if w == "\"\"" { "" } else { w });
                let mut cmd = db.cmd(words.next().unwrap_or_default());
                for w in words {
                    cmd = cmd.arg(w);
                }
                format!("{line} => {}", cmd.query::<Value>().show())
            })
            .collect()
    });
}

const RAW: &[&str] = &[
    "SET s hello",
    "GETEX s PX 10 PERSIST",
    "GETEX s FOO",
    "GETEX s EX 0",
    "GETEX nope EX 0",
    "GETEX s EXAT 1",
    "EXISTS s",
    "GETRANGE s a 1",
    "SETRANGE s -1 x",
    "SETRANGE s 536870912 x",
    "EXPIRE nope 10 FOO",
    "EXPIREAT nope x",
    "EXPIREAT nope 99999999999999999",
    "COPY nope x DB 99",
    "COPY nope x DB x",
    "COPY nope x FOO",
    "SCAN x",
    "SCAN 0 COUNT 0",
    "SCAN 0 FOO 1",
    "SCAN 0 TYPE nosuch",
    "HSET h f x",
    "HINCRBYFLOAT h f 1",
    "HINCRBYFLOAT h g x",
    "HINCRBYFLOAT h g inf",
    "RPUSH l a b c a",
    "LPOS l a RANK -1 COUNT 0 MAXLEN 0",
    "LPOS l a RANK 0",
    "LPOS l a COUNT -1",
    "LPOS l a MAXLEN -1",
    "LPOS l a FOO 1",
    "LPOS l a COUNT",
    "LPOS nope a COUNT 2",
    "LINSERT l MIDDLE a x",
    "LMOVE l m UP LEFT",
    "RPOPLPUSH l m",
    "BLMOVE l m LEFT LEFT -1",
    "BLMOVE l m LEFT LEFT x",
    "BLPOP k inf",
    "BLPOP k 1e20",
    "BLPOP k nan",
    "LREM l x a",
    "LPOS l a COUNT x",
    "LPOS l a MAXLEN x",
    "LPOP l 1 2",
    "LINDEX h x",
    "LINDEX nope x",
    "LSET nope x y",
    "LSET h x y",
    "INCRBYFLOAT h x",
    "DECRBY n -9223372036854775808",
    "ZCOUNT h x 1",
    "ZRANGE h x 1",
    "ZRANGEBYSCORE h 1 x",
    "ZREMRANGEBYSCORE nope ( (",
    "ZCOUNT nope \"\" 1",
    "ZPOPMIN h x y",
    "SADD a 1 2",
    "SPOP a -1",
    "SPOP a x",
    "SPOP a 1 2",
    "SRANDMEMBER a 1 2",
    "SRANDMEMBER a x",
    "SRANDMEMBER nope -9223372036854775808",
    "SINTERSTORE a nope",
    "EXISTS a",
    "XADD x 5 f v",
    "XADD x 5 f v",
    "XADD x 5-* f",
    "XADD x NOMKSTREAM MAXLEN ~ 10 LIMIT 5 6-1 f v",
    "XADD x MAXLEN 1 LIMIT 5 7-1 f v",
    "XADD x MAXLEN -1 7-1 f v",
    "XADD x MAXLEN 1 MINID 0 7-1 f v",
    "XADD x MINID bad 7-1 f v",
    "XADD x MAXLEN = 1 7-1 f v",
    "XADD nope NOMKSTREAM * f v",
    "XADD x 18446744073709551615-18446744073709551615 f v",
    "XADD x * f v",
    "XADD x 18446744073709551616 f v",
    "XRANGE x - + COUNT",
    "XRANGE x - + COUNT x",
    "XRANGE x - + FOO 1",
    "XRANGE x (- +",
    "XRANGE x - (+",
    "XRANGE x (18446744073709551615-18446744073709551615 +",
    "XRANGE x - (0-0",
    "XREVRANGE x + - COUNT 1",
    "XREVRANGE x 5 5",
    "XTRIM x FOO 1",
    "XTRIM nope MAXLEN 1",
    "XTRIM x",
    "XTRIM x MAXLEN 0 LIMIT 1",
    "XTRIM x MINID 18446744073709551615",
    "XTRIM x MAXLEN ~ 0 LIMIT 0",
    "XLEN x",
    "XDEL x bad",
    "XDEL nope bad",
    "XREAD",
    "XREAD STREAMS x",
    "XREAD STREAMS x y 0",
    "XREAD COUNT x STREAMS x 0",
    "XREAD BLOCK 1.5 STREAMS x 0",
    "XREAD BLOCK -1 STREAMS x 0",
    "XREAD FOO STREAMS x 0",
    "XREAD STREAMS x >",
    "XREAD STREAMS x +",
    "XREAD STREAMS s 0",
    "CONFIG GET",
    "CONFIG SET timeout",
    "CONFIG SET timeout 5 hz",
    "CONFIG SET timeout x",
    "CONFIG SET timeout -1",
    "CONFIG SET timeout 1 timeout 2",
    "CONFIG SET appendonly maybe",
    "CONFIG SET databases 2",
    "CONFIG SET maxmemory-policy nope",
    "CONFIG SET notify-keyspace-events KEA",
    "CONFIG GET notify-keyspace-events",
    "CONFIG SET notify-keyspace-events Q",
    "CONFIG SET notify-keyspace-events \"\"",
    "CONFIG GET TIMEOUT",
    "CONFIG FOO",
    "WAIT x 1",
    "WAIT 1 x",
    "WAIT 1 -1",
    "SCRIPT LOAD",
    "SCRIPT EXISTS",
    "SCRIPT FLUSH FOO",
    "SCRIPT FOO",
    "EVAL x y",
    "EVAL x -1",
    "EVAL x 2 a",
    "EVALSHA 0000 0",
    "EVALSHA 0000 x",
];

/// Every typed method of the crate (each `fn` of a `pub trait ...: Commands` under
/// `src/`) must be called as `db.<name>(` or `db.<name>::<` somewhere in this file, so
/// a new typed method without a parity step fails here.
#[test]
fn every_typed_method_has_a_parity_step() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let this = std::fs::read_to_string(root.join(file!())).expect("read this test");
    let mut methods = Vec::new();
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                methods.extend(typed_methods(&text));
            }
        }
    }
    assert!(
        methods.len() > 100,
        "found only {methods:?}: is the parser stale?"
    );
    let missing: Vec<&String> = methods
        .iter()
        .filter(|m| !this.contains(&format!("db.{m}(")) && !this.contains(&format!("db.{m}::<")))
        .collect();
    assert!(
        missing.is_empty(),
        "typed methods without a parity step: {missing:?}"
    );
}

/// The methods of each `pub trait <Name>: Commands {` block: `fn <name>` at the trait's
/// own indentation, up to the line that closes the trait.
fn typed_methods(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in source.lines() {
        if line.starts_with("pub trait ") && line.trim_end().ends_with(": Commands {") {
            inside = true;
        } else if inside && line.starts_with('}') {
            inside = false;
        } else if let Some(rest) = line.strip_prefix("    fn ").filter(|_| inside) {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}
