//! Differential test against redis-rs: the same seeded random command sequences run
//! through our client and through redis-rs, each against a fresh `redis-server` of its
//! own, over RESP2 and RESP3. Every raw reply must be the same, and so must every
//! conversion of it (to `i64`, `f64`, `bool`, `String`, `Vec<..>`, `Option<..>`,
//! pairs) by our `FromValue` and redis-rs's `FromRedisValue`, except where a
//! divergence is listed below with its reason.
//!
//! Bounded: a few hundred commands per seed and protocol, about a second in all.
//! `RR_DIFFERENTIAL_SEED=<n>` runs one other seed (to explore; a failure prints its
//! seed and the command that diverged).

use crate::support;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use redis::FromRedisValue;
use resilient_redis::config::Protocol;
use resilient_redis::resp::Value;
use resilient_redis::{Client, Database, Endpoint, FromValue, Options};
use support::optin::opt_in;
use support::RedisServer;

/// Fixed seeds: the suite is deterministic; a new seed is explored with the variable.
const SEEDS: [u64; 3] = [0x5eed_0001, 0xdead_beef, 18];
const COMMANDS_PER_RUN: usize = 300;

/// SplitMix64: a few lines, no dependency, the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const KEYS: [&str; 6] = ["d:k0", "d:k1", "d:k2", "d:k3", "d:k4", "d:k5"];
const FIELDS: [&str; 4] = ["f0", "f1", "f2", "f3"];
/// Values chosen at the edges of the conversions: numbers with whitespace, signs,
/// leading zeros, exponents, infinities, out-of-range integers, booleans spelled
/// otherwise, empty, non-ASCII and invalid UTF-8 (written as bytes below).
const VALUES: [&str; 27] = [
    "1",
    "0",
    "687",
    " 1",
    "1 ",
    "1.5",
    "-3",
    "inf",
    "-inf",
    "",
    "OK",
    "yes",
    "true",
    "9223372036854775807",
    "9223372036854775808",
    "-0",
    "+1",
    "01",
    "1e3",
    "nan",
    "é",
    "a,b",
    "3.0",
    "0.1",
    " ",
    "-9223372036854775808",
    "\u{0}x",
];
const INCREMENTS: [&str; 6] = ["1", "-2", "5", "0", "100", "-1"];
const FLOATS: [&str; 6] = ["1.5", "-0.25", "3", "1e2", "0", "-7"];
const SCORES: [&str; 8] = ["1", "1.5", "-3", "inf", "-inf", "0", "2.25", "1e3"];

fn value(rng: &mut Rng) -> Vec<u8> {
    // One value in 20 is invalid UTF-8: conversions to `String` must refuse it alike.
    if rng.below(20) == 0 {
        return vec![0xff, b'1', 0xfe];
    }
    rng.pick(&VALUES).as_bytes().to_vec()
}

/// One random command, as its arguments.
fn command(rng: &mut Rng) -> Vec<Vec<u8>> {
    let k = |rng: &mut Rng| rng.pick(&KEYS).as_bytes().to_vec();
    let f = |rng: &mut Rng| rng.pick(&FIELDS).as_bytes().to_vec();
    let t = |s: &str| s.as_bytes().to_vec();
    match rng.below(52) {
        0..=3 => vec![t("SET"), k(rng), value(rng)],
        4 => vec![t("SET"), k(rng), value(rng), t("NX")],
        5 => vec![t("SET"), k(rng), value(rng), t("XX"), t("GET")],
        6..=9 => vec![t("GET"), k(rng)],
        10 => vec![t("GETDEL"), k(rng)],
        11 => vec![t("MGET"), k(rng), k(rng), k(rng)],
        12 => vec![t("MSET"), k(rng), value(rng), k(rng), value(rng)],
        13 => vec![t("SETNX"), k(rng), value(rng)],
        14 => vec![t("APPEND"), k(rng), value(rng)],
        15 => vec![t("STRLEN"), k(rng)],
        16 => vec![t("GETRANGE"), k(rng), t("0"), t("2")],
        17 => vec![t("INCR"), k(rng)],
        18 => vec![t("INCRBY"), k(rng), t(rng.pick(&INCREMENTS))],
        19 => vec![t("DECR"), k(rng)],
        20 => vec![t("INCRBYFLOAT"), k(rng), t(rng.pick(&FLOATS))],
        21 => vec![t("DEL"), k(rng)],
        22 => vec![t("EXISTS"), k(rng), k(rng)],
        23 => vec![t("TYPE"), k(rng)],
        24 => vec![t("LPUSH"), k(rng), value(rng)],
        25 => vec![t("RPUSH"), k(rng), value(rng), value(rng)],
        26 => vec![t("LPOP"), k(rng)],
        27 => vec![t("RPOP"), k(rng), t("2")],
        28 => vec![t("LRANGE"), k(rng), t("0"), t("-1")],
        29 => vec![t("LLEN"), k(rng)],
        30 => vec![t("LINDEX"), k(rng), t("0")],
        31 => vec![t("SADD"), k(rng), value(rng), value(rng)],
        32 => vec![t("SREM"), k(rng), value(rng)],
        33 => vec![t("SCARD"), k(rng)],
        34 => vec![t("SISMEMBER"), k(rng), value(rng)],
        35 => vec![t("SMISMEMBER"), k(rng), value(rng), value(rng)],
        36 => vec![t("SMEMBERS"), k(rng)],
        37 => vec![t("HSET"), k(rng), f(rng), value(rng)],
        38 => vec![t("HGET"), k(rng), f(rng)],
        39 => vec![t("HDEL"), k(rng), f(rng)],
        40 => vec![t("HEXISTS"), k(rng), f(rng)],
        41 => vec![t("HGETALL"), k(rng)],
        42 => vec![t("HINCRBY"), k(rng), f(rng), t(rng.pick(&INCREMENTS))],
        43 => vec![t("HINCRBYFLOAT"), k(rng), f(rng), t(rng.pick(&FLOATS))],
        44 => vec![t("HMGET"), k(rng), f(rng), f(rng)],
        45 => vec![t("ZADD"), k(rng), t(rng.pick(&SCORES)), value(rng)],
        46 => vec![t("ZINCRBY"), k(rng), t(rng.pick(&FLOATS)), value(rng)],
        47 => vec![t("ZSCORE"), k(rng), value(rng)],
        48 => vec![t("ZRANGE"), k(rng), t("0"), t("-1"), t("WITHSCORES")],
        49 => vec![t("ZMSCORE"), k(rng), value(rng), value(rng)],
        50 => vec![t("ZPOPMIN"), k(rng)],
        _ => vec![t("ECHO"), value(rng)],
    }
}

/// Replies whose order depends on the server's hash seed (sets in a hash table).
fn unordered(args: &[Vec<u8>]) -> bool {
    args[0] == b"SMEMBERS"
}

/// redis-rs's reply in our `Value` form (`Okay` is the status `OK`).
fn ours_from_theirs(v: redis::Value) -> Value {
    use redis::Value as R;
    let many = |items: Vec<R>| items.into_iter().map(ours_from_theirs).collect();
    let pairs = |items: Vec<(R, R)>| {
        items
            .into_iter()
            .map(|(k, v)| (ours_from_theirs(k), ours_from_theirs(v)))
            .collect()
    };
    match v {
        R::Nil => Value::Nil,
        R::Int(i) => Value::Int(i),
        R::BulkString(b) => Value::BulkString(b),
        R::Array(items) => Value::Array(many(items)),
        R::SimpleString(s) => Value::SimpleString(s),
        R::Okay => Value::SimpleString("OK".to_string()),
        R::Map(items) => Value::Map(pairs(items)),
        R::Attribute { data, attributes } => Value::Attribute {
            data: Box::new(ours_from_theirs(*data)),
            attributes: pairs(attributes),
        },
        R::Set(items) => Value::Set(many(items)),
        R::Double(d) => Value::Double(d),
        R::Boolean(b) => Value::Boolean(b),
        R::VerbatimString { format, text } => Value::VerbatimString {
            format: format.to_string(),
            text: text.into_bytes(),
        },
        R::BigNumber(digits) => Value::BigNumber(String::from_utf8_lossy(&digits).into_owned()),
        R::Push { data, .. } => Value::Push(many(data)),
        R::ServerError(e) => Value::Error(format!("{} {}", e.code(), e.details().unwrap_or(""))),
        other => panic!("a redis-rs value this test does not know: {other:?}"),
    }
}

/// Sorts the items of an aggregate (both sides alike) where order is not meaningful.
fn sorted_ours(v: Value) -> Value {
    let key = |v: &Value| format!("{v:?}");
    match v {
        Value::Array(mut items) => {
            items.sort_by_key(key);
            Value::Array(items)
        }
        Value::Set(mut items) => {
            items.sort_by_key(key);
            Value::Set(items)
        }
        v => v,
    }
}

fn sorted_theirs(v: redis::Value) -> redis::Value {
    let key = |v: &redis::Value| format!("{:?}", ours_from_theirs(v.clone()));
    match v {
        redis::Value::Array(mut items) => {
            items.sort_by_key(key);
            redis::Value::Array(items)
        }
        redis::Value::Set(mut items) => {
            items.sort_by_key(key);
            redis::Value::Set(items)
        }
        v => v,
    }
}

/// `Debug` equality: NaN equals NaN, and every type compared has a `Debug`.
fn same(a: &impl Debug, b: &impl Debug) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// Divergences on purpose, each with why; anything else is a failure. `raw` is the
/// reply, `ours_ok` whether our conversion succeeded (redis-rs's did the opposite).
fn allowed(target: &str, raw: &Value, ours_ok: bool) -> Option<&'static str> {
    let raw = match raw {
        Value::Attribute { data, .. } => data,
        v => v,
    };
    let integer = matches!(target, "i64" | "Option<i64>" | "Vec<i64>");
    let has_double = |v: &Value| match v {
        Value::Double(_) => true,
        Value::Array(items) | Value::Set(items) => {
            items.iter().any(|i| matches!(i, Value::Double(_)))
        }
        _ => false,
    };
    let string_like = matches!(
        raw,
        Value::SimpleString(_)
            | Value::Int(_)
            | Value::Double(_)
            | Value::BigNumber(_)
            | Value::VerbatimString { .. }
    );
    let aggregate_or_nil = matches!(
        raw,
        Value::Nil | Value::Array(_) | Value::Set(_) | Value::Map(_)
    );
    let list_of_items = target.starts_with("Vec<") && target != "Vec<u8>";
    match (target, ours_ok) {
        // redis-rs casts a double to an integer with `as` (2.5 -> 2, inf -> i64::MAX);
        // we refuse: a lossy number is a wrong number (RESP3 ZSCORE, ZMSCORE, ...).
        _ if integer && !ours_ok && has_double(raw) => {
            Some("an integer from a double is refused, not truncated")
        }
        // Our `Vec<u8>` is the bytes of any string-like reply, as `String` reads its
        // text; redis-rs takes bulk strings only.
        ("Vec<u8>", true) if string_like => Some("Vec<u8> reads every string-like reply"),
        // ... and refuses nil and aggregates, as `String` does (both libraries): a
        // missing key is not an empty value (`Option<Vec<u8>>` says which); redis-rs
        // gives an empty vector for nil and reads an array's integers as bytes.
        ("Vec<u8>", false) if aggregate_or_nil => Some("Vec<u8> of nil or an aggregate"),
        // redis-rs wraps a bulk string (and only a bulk string, not an integer or a
        // status) as a one-item list; we refuse every scalar as a list alike.
        (_, false) if list_of_items && matches!(raw, Value::BulkString(_)) => {
            Some("a bulk string is not a one-item list")
        }
        _ => None,
    }
}

/// Converts `raw` with both libraries into `T` and compares; returns the divergence.
fn compare_as<T, U>(target: &str, ours_raw: &Value, theirs_raw: &redis::Value) -> Option<String>
where
    T: FromValue + Debug,
    U: FromRedisValue + Debug,
{
    let ours = T::from_value(ours_raw.clone());
    let theirs = redis::from_redis_value::<U>(theirs_raw.clone());
    let agree = match (&ours, &theirs) {
        (Ok(a), Ok(b)) => same(a, b),
        (Err(_), Err(_)) => true,
        _ => false,
    };
    if agree || allowed(target, ours_raw, ours.is_ok()).is_some() {
        return None;
    }
    Some(format!(
        "as {target}: ours {:?}, redis-rs {:?}",
        ours.map_err(|e| format!("{:?}: {}", e.kind(), e.detail())),
        theirs.map_err(|e| e.to_string())
    ))
}

/// Every conversion the test checks, of one reply.
fn compare_conversions(ours: &Value, theirs: &redis::Value) -> Vec<String> {
    [
        compare_as::<i64, i64>("i64", ours, theirs),
        compare_as::<f64, f64>("f64", ours, theirs),
        compare_as::<bool, bool>("bool", ours, theirs),
        compare_as::<String, String>("String", ours, theirs),
        compare_as::<Vec<u8>, Vec<u8>>("Vec<u8>", ours, theirs),
        compare_as::<Option<String>, Option<String>>("Option<String>", ours, theirs),
        compare_as::<Option<i64>, Option<i64>>("Option<i64>", ours, theirs),
        compare_as::<Option<f64>, Option<f64>>("Option<f64>", ours, theirs),
        compare_as::<Vec<String>, Vec<String>>("Vec<String>", ours, theirs),
        compare_as::<Vec<i64>, Vec<i64>>("Vec<i64>", ours, theirs),
        compare_as::<Vec<Option<String>>, Vec<Option<String>>>("Vec<Option<String>>", ours, theirs),
        compare_as::<Vec<bool>, Vec<bool>>("Vec<bool>", ours, theirs),
        compare_as::<Vec<(String, f64)>, Vec<(String, f64)>>("Vec<(String, f64)>", ours, theirs),
        compare_as::<BTreeMap<String, String>, BTreeMap<String, String>>(
            "BTreeMap<String, String>",
            ours,
            theirs,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn our_client(server: &RedisServer, protocol: Protocol) -> Client {
    let mut options = Options::default();
    options.endpoints = vec![Endpoint::new("127.0.0.1", server.port)];
    options.protocol = Some(protocol);
    Client::connect(opt_in(options)).expect("connect our client")
}

fn their_connection(server: &RedisServer, protocol: Protocol) -> redis::Connection {
    let version = match protocol {
        Protocol::Resp2 => "resp2",
        Protocol::Resp3 => "resp3",
    };
    let url = format!("redis://127.0.0.1:{}/?protocol={version}", server.port);
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connect redis-rs")
}

fn ours_query(db: &Database, args: &[Vec<u8>]) -> Result<Value, String> {
    let name = String::from_utf8_lossy(&args[0]).into_owned();
    let mut cmd = db.cmd(&name);
    for a in &args[1..] {
        cmd = cmd.arg(a.as_slice());
    }
    // A server error keeps its code, the first word of its detail.
    cmd.query::<Value>()
        .map_err(|e| e.detail().split(' ').next().unwrap_or("").to_string())
}

fn theirs_query(con: &mut redis::Connection, args: &[Vec<u8>]) -> Result<redis::Value, String> {
    let mut cmd = redis::cmd(&String::from_utf8_lossy(&args[0]));
    for a in &args[1..] {
        cmd.arg(a.as_slice());
    }
    cmd.query::<redis::Value>(con)
        .map_err(|e| e.code().unwrap_or("").to_string())
}

/// One seed over one protocol: every reply and every conversion must agree.
fn run(
    seed: u64,
    protocol: Protocol,
    ours_server: &RedisServer,
    theirs_server: &RedisServer,
    failures: &mut Vec<String>,
) {
    let client = our_client(ours_server, protocol);
    let db = client.database();
    let mut con = their_connection(theirs_server, protocol);
    // Fresh data for each run, on both.
    ours_query(&db, &[b"FLUSHALL".to_vec()]).expect("FLUSHALL ours");
    theirs_query(&mut con, &[b"FLUSHALL".to_vec()]).expect("FLUSHALL theirs");
    let mut rng = Rng(seed);
    for step in 0..COMMANDS_PER_RUN {
        let args = command(&mut rng);
        let shown: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let context = format!("seed {seed:#x}, {protocol:?}, command {step}: {shown:?}");
        let ours = ours_query(&db, &args);
        let theirs = theirs_query(&mut con, &args);
        let (ours, theirs) = match (ours, theirs) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(a), Err(b)) => {
                assert_eq!(a, b, "{context}: different error codes");
                continue;
            }
            (a, b) => panic!("{context}: ours {a:?}, redis-rs {b:?}"),
        };
        let (ours, theirs) = if unordered(&args) {
            (sorted_ours(ours), sorted_theirs(theirs))
        } else {
            (ours, theirs)
        };
        assert!(
            same(&ours, &ours_from_theirs(theirs.clone())),
            "{context}: different replies: ours {ours:?}, redis-rs {theirs:?}"
        );
        for d in compare_conversions(&ours, &theirs) {
            failures.push(format!("{context}: reply {ours:?}: {d}"));
        }
    }
    client.close();
}

#[test]
fn random_command_sequences_match_redis_rs_reply_for_reply_in_both_protocols() {
    let Some(ours) = RedisServer::start() else {
        return;
    };
    let Some(theirs) = RedisServer::start() else {
        return;
    };
    // Control: two servers, not one seen twice (the data must not be shared).
    assert_ne!(ours.port, theirs.port);
    assert_ne!(ours.pid(), theirs.pid());
    let seeds: Vec<u64> = match std::env::var("RR_DIFFERENTIAL_SEED") {
        Ok(seed) => vec![seed.parse().expect("RR_DIFFERENTIAL_SEED is a number")],
        Err(_) => SEEDS.to_vec(),
    };
    let started = Instant::now();
    let mut failures = Vec::new();
    for seed in seeds {
        for protocol in [Protocol::Resp2, Protocol::Resp3] {
            run(seed, protocol, &ours, &theirs, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} conversions diverged from redis-rs; the first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    // Bounded: a couple of seconds even on a loaded 2-core machine.
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// The conversions the issue reported, on replies built by hand (no server): what
/// redis-rs does, we do.
#[test]
fn the_reported_conversions_agree_with_redis_rs() {
    let bulk = |s: &str| {
        (
            Value::BulkString(s.into()),
            redis::Value::BulkString(s.into()),
        )
    };
    for text in [
        "687", "1", "0", " 1", "1 ", "OK", "yes", "", "1.5", " 1.5", "-inf", "01",
    ] {
        let (ours, theirs) = bulk(text);
        let diverged = compare_conversions(&ours, &theirs);
        assert!(diverged.is_empty(), "{text:?}: {}", diverged.join("; "));
    }
    // The integer reply 687 is true for both; the string "687" is an error for both.
    assert!(bool::from_value(Value::Int(687)).unwrap());
    assert!(bool::from_value(Value::BulkString(b"687".to_vec())).is_err());
}

/// The race the suite once lost: a port found free was taken by another test's server
/// before ours bound it, and the readiness check saw the other server. Our start must
/// not take a port that answers for someone else for its own server.
#[test]
fn a_port_that_answers_for_another_process_is_not_taken_for_our_server() {
    if support::skipped() {
        return;
    }
    // Something else listens: the kernel completes TCP handshakes on its behalf, which
    // is all a "does the port answer" check saw.
    let other = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = other.local_addr().expect("addr").port();
    let started = Instant::now();
    assert!(RedisServer::try_start_on(port, &[]).is_err());
    // Another redis-server on the port.
    let Some(first) = RedisServer::start() else {
        return;
    };
    assert!(RedisServer::try_start_on(first.port, &[]).is_err());
    // Told apart by our child's early exit, not by waiting out the 10 s readiness limit.
    assert!(started.elapsed() < Duration::from_secs(8));
    // And a start that succeeds is on a port of its own.
    let Some(second) = RedisServer::start() else {
        return;
    };
    assert_ne!(first.port, second.port);
}
