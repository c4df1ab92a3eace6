//! The fake's data commands, through the real client (and raw sockets where two
//! connections must interleave): strings, expiry, hashes, lists with real blocking,
//! sets, sorted sets, MULTI/EXEC/WATCH.

use crate::support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::FakeServer;
use resilient_redis::ErrorKind;
use support::optin::opt_in;
use support::raw::{b, err_text, ok, Raw};

fn client(server: &FakeServer) -> (Client, Database) {
    let client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let db = client.database();
    (client, db)
}

#[test]
fn strings_through_the_client() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = client(&server);
    db.set("k", "v").unwrap();
    assert_eq!(db.get::<Option<String>>("k").unwrap().as_deref(), Some("v"));
    assert_eq!(db.incr("n", 5).unwrap(), 5);
    assert_eq!(db.cmd("DECRBY").arg("n").arg(2).query::<i64>().unwrap(), 3);
    assert_eq!(
        db.cmd("INCRBYFLOAT")
            .arg("f")
            .arg("1.5")
            .query::<String>()
            .unwrap(),
        "1.5"
    );
    assert_eq!(
        db.cmd("APPEND").arg("k").arg("w").query::<i64>().unwrap(),
        2
    );
    assert_eq!(db.cmd("STRLEN").arg("k").query::<i64>().unwrap(), 2);
    assert_eq!(
        db.cmd("SET")
            .arg("k")
            .arg("x")
            .arg("NX")
            .query::<Option<String>>()
            .unwrap(),
        None
    );
    assert_eq!(
        db.cmd("SET")
            .arg("k")
            .arg("x")
            .arg("XX")
            .arg("GET")
            .query::<Option<String>>()
            .unwrap()
            .as_deref(),
        Some("vw")
    );
    assert_eq!(
        db.cmd("GETSET")
            .arg("k")
            .arg("y")
            .query::<String>()
            .unwrap(),
        "x"
    );
    assert_eq!(db.cmd("GETDEL").arg("k").query::<String>().unwrap(), "y");
    assert_eq!(db.cmd("SETNX").arg("k").arg("z").query::<i64>().unwrap(), 1);
    db.cmd("MSET")
        .arg("a")
        .arg("1")
        .arg("b")
        .arg("2")
        .exec()
        .unwrap();
    let got: Vec<Option<String>> = db
        .cmd("MGET")
        .arg("a")
        .arg("nope")
        .arg("b")
        .query()
        .unwrap();
    assert_eq!(got, [Some("1".into()), None, Some("2".into())]);
    let e = db.cmd("LPUSH").arg("a").arg("x").exec().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongType);
    let e = db.cmd("NOSUCH").exec().unwrap_err();
    assert!(e.to_string().contains("unknown command"), "{e}");
}

#[test]
fn keys_and_lazy_expiry() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = client(&server);
    db.cmd("SET")
        .arg("k")
        .arg("v")
        .arg("PX")
        .arg(150)
        .exec()
        .unwrap();
    let pttl: i64 = db.cmd("PTTL").arg("k").query().unwrap();
    assert!((1..=150).contains(&pttl), "{pttl}");
    assert_eq!(db.cmd("TTL").arg("nope").query::<i64>().unwrap(), -2);
    db.set("p", "v").unwrap();
    assert_eq!(db.cmd("TTL").arg("p").query::<i64>().unwrap(), -1);
    assert_eq!(
        db.cmd("EXPIRE").arg("p").arg(100).query::<i64>().unwrap(),
        1
    );
    assert_eq!(db.cmd("TTL").arg("p").query::<i64>().unwrap(), 100);
    assert_eq!(db.cmd("PERSIST").arg("p").query::<i64>().unwrap(), 1);
    assert_eq!(db.cmd("TYPE").arg("p").query::<String>().unwrap(), "string");
    // Expired on access, no sleep needed beyond the TTL itself.
    let deadline = Instant::now() + Duration::from_secs(5);
    while db.cmd("EXISTS").arg("k").query::<i64>().unwrap() == 1 {
        assert!(Instant::now() < deadline, "never expired");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(db.get::<Option<String>>("k").unwrap(), None);
    db.cmd("RENAME").arg("p").arg("q").exec().unwrap();
    let keys: Vec<String> = db.cmd("KEYS").arg("*").query().unwrap();
    assert_eq!(keys, ["q"]);
    assert_eq!(db.cmd("DBSIZE").query::<i64>().unwrap(), 1);
    assert_eq!(db.del(("q", "nope")).unwrap(), 1);
    db.cmd("SELECT").arg(3).exec().unwrap();
    db.cmd("FLUSHALL").exec().unwrap();
}

#[test]
fn hashes_lists_sets_sorted_sets() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = client(&server);
    assert_eq!(
        db.cmd("HSET")
            .arg("h")
            .arg("a")
            .arg(1)
            .arg("b")
            .arg(2)
            .query::<i64>()
            .unwrap(),
        2
    );
    let all: HashMap<String, String> = db.cmd("HGETALL").arg("h").query().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        db.cmd("HINCRBY")
            .arg("h")
            .arg("a")
            .arg(10)
            .query::<i64>()
            .unwrap(),
        11
    );
    assert_eq!(db.cmd("HLEN").arg("h").query::<i64>().unwrap(), 2);
    assert_eq!(
        db.cmd("HDEL")
            .arg("h")
            .arg("a")
            .arg("b")
            .query::<i64>()
            .unwrap(),
        2
    );
    assert_eq!(
        db.cmd("EXISTS").arg("h").query::<i64>().unwrap(),
        0,
        "empty hash removed"
    );

    db.cmd("RPUSH")
        .arg("l")
        .arg("a")
        .arg("b")
        .arg("c")
        .exec()
        .unwrap();
    let all: Vec<String> = db.cmd("LRANGE").arg("l").arg(0).arg(-1).query().unwrap();
    assert_eq!(all, ["a", "b", "c"]);
    assert_eq!(
        db.cmd("LINDEX").arg("l").arg(-1).query::<String>().unwrap(),
        "c"
    );
    assert_eq!(db.cmd("LPOP").arg("l").query::<String>().unwrap(), "a");
    let two: Vec<String> = db.cmd("RPOP").arg("l").arg(2).query().unwrap();
    assert_eq!(two, ["c", "b"]);
    assert_eq!(db.cmd("LLEN").arg("l").query::<i64>().unwrap(), 0);

    assert_eq!(
        db.cmd("SADD")
            .arg("s")
            .arg("x")
            .arg("y")
            .arg("x")
            .query::<i64>()
            .unwrap(),
        2
    );
    assert_eq!(
        db.cmd("SISMEMBER")
            .arg("s")
            .arg("y")
            .query::<i64>()
            .unwrap(),
        1
    );
    assert_eq!(db.cmd("SREM").arg("s").arg("y").query::<i64>().unwrap(), 1);
    assert_eq!(db.cmd("SCARD").arg("s").query::<i64>().unwrap(), 1);

    db.cmd("ZADD")
        .arg("z")
        .arg(2)
        .arg("b")
        .arg(1)
        .arg("a")
        .exec()
        .unwrap();
    assert_eq!(
        db.cmd("ZINCRBY")
            .arg("z")
            .arg(5)
            .arg("a")
            .query::<f64>()
            .unwrap(),
        6.0
    );
    assert_eq!(db.cmd("ZRANK").arg("z").arg("a").query::<i64>().unwrap(), 1);
    let order: Vec<String> = db
        .cmd("ZRANGE")
        .arg("z")
        .arg(0)
        .arg(-1)
        .arg("REV")
        .query()
        .unwrap();
    assert_eq!(order, ["a", "b"]);
    let by_score: Vec<String> = db
        .cmd("ZRANGE")
        .arg("z")
        .arg("(2")
        .arg("+inf")
        .arg("BYSCORE")
        .query()
        .unwrap();
    assert_eq!(by_score, ["a"]);
    assert_eq!(db.cmd("ZCARD").arg("z").query::<i64>().unwrap(), 2);
}

#[test]
fn blpop_blocks_until_a_push_and_times_out_with_a_null_array() {
    let server = FakeServer::start().unwrap();
    let mut waiter = Raw::connect(server.addr());
    let mut pusher = Raw::connect(server.addr());
    let started = Instant::now();
    assert_eq!(
        waiter.cmd(&["BLPOP", "q", "0.2"]),
        Value::Nil,
        "null array on timeout"
    );
    assert!(started.elapsed() >= Duration::from_millis(190));

    waiter.send(&["BLPOP", "q", "0"]);
    assert!(
        waiter.read_within(Duration::from_millis(100)).is_none(),
        "must block"
    );
    // Other connections are served while one is blocked.
    assert_eq!(pusher.cmd(&["RPUSH", "q", "job"]), Value::Int(1));
    assert_eq!(waiter.read(), Value::Array(vec![b("q"), b("job")]));
    assert_eq!(pusher.cmd(&["LLEN", "q"]), Value::Int(0));

    // Through the client's blocking pool as well.
    let client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let db = client.database();
    let t = std::thread::spawn(move || {
        db.cmd("BRPOP")
            .arg("q2")
            .arg(5)
            .blocking(Duration::from_secs(5))
            .query::<Vec<String>>()
    });
    assert!(server.wait_for(
        |s| s.commands_received("BRPOP") == 1,
        Duration::from_secs(5)
    ));
    pusher.cmd(&["LPUSH", "q2", "x"]);
    assert_eq!(t.join().unwrap().unwrap(), ["q2", "x"]);
}

#[test]
fn watch_aborts_exec_when_another_connection_writes() {
    let server = FakeServer::start().unwrap();
    let mut a = Raw::connect(server.addr());
    let mut other = Raw::connect(server.addr());
    a.cmd(&["SET", "k", "1"]);
    assert_eq!(a.cmd(&["WATCH", "k"]), ok());
    assert_eq!(a.cmd(&["MULTI"]), ok());
    assert_eq!(a.cmd(&["INCR", "k"]), Value::SimpleString("QUEUED".into()));
    assert_eq!(other.cmd(&["SET", "k", "10"]), ok());
    // RESP2 null array: the transaction did not run.
    a.send(&["EXEC"]);
    a.stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut raw = [0u8; 5];
    std::io::Read::read_exact(&mut a.stream, &mut raw).unwrap();
    assert_eq!(&raw, b"*-1\r\n");
    assert_eq!(a.cmd(&["GET", "k"]), b("10"));

    // Unwatched, it runs; results come back as one array.
    a.cmd(&["WATCH", "k"]);
    a.cmd(&["MULTI"]);
    a.cmd(&["INCR", "k"]);
    a.cmd(&["GET", "k"]);
    assert_eq!(
        a.cmd(&["EXEC"]),
        Value::Array(vec![Value::Int(11), b("11")])
    );

    // A deleted watched key aborts too.
    a.cmd(&["WATCH", "k"]);
    other.cmd(&["DEL", "k"]);
    a.cmd(&["MULTI"]);
    a.cmd(&["SET", "k", "x"]);
    assert_eq!(a.cmd(&["EXEC"]), Value::Nil);
}

#[test]
fn queued_syntax_errors_abort_exec() {
    let server = FakeServer::start().unwrap();
    let mut a = Raw::connect(server.addr());
    a.cmd(&["MULTI"]);
    a.cmd(&["SET", "k", "v"]);
    assert!(err_text(&a.cmd(&["GET"])).starts_with("ERR wrong number of arguments"));
    assert_eq!(
        err_text(&a.cmd(&["EXEC"])),
        "EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(a.cmd(&["GET", "k"]), Value::Nil, "nothing ran");
    assert_eq!(err_text(&a.cmd(&["EXEC"])), "ERR EXEC without MULTI");
    a.cmd(&["MULTI"]);
    assert_eq!(
        err_text(&a.cmd(&["MULTI"])),
        "ERR MULTI calls can not be nested"
    );
    assert_eq!(a.cmd(&["DISCARD"]), ok());
}

#[test]
fn transactions_through_the_client() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = client(&server);
    db.set("k", "1").unwrap();
    let tx = db.transaction();
    tx.watch("k");
    let n = tx.incr("k", 2);
    assert!(tx.execute().unwrap(), "not aborted");
    assert_eq!(n.wait().unwrap(), 3);

    // The client sends WATCH, MULTI, the commands and EXEC in one write, so no other
    // connection can write in between here; the abort path is covered over raw sockets
    // by `watch_aborts_exec_when_another_connection_writes`.
    assert_eq!(db.get::<String>("k").unwrap(), "3");
}
