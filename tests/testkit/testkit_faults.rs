//! Faults on demand, each with a control: hang, close all, refuse, delay, jitter,
//! injected errors, close after N commands; and the counters tests assert with.

use crate::support;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::FakeServer;
use resilient_redis::ErrorKind;
use support::optin::opt_in;
use support::raw::{b, frame, Raw};

fn connect(server: &FakeServer, query: &str) -> (Client, Database) {
    let client = Client::connect(opt_in(format!("{}?{query}", server.url()).as_str())).unwrap();
    let db = client.database();
    (client, db)
}

#[test]
fn hang_makes_a_call_time_out_and_releases_held_replies_after() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = connect(&server, "syncTimeout=200");
    db.set("k", "v").unwrap(); // control: answered while not hung
    let mut raw = Raw::connect(server.addr());

    server.hang(true);
    let started = Instant::now();
    let e = db.get::<Option<String>>("k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    raw.send(&["PING"]);
    assert!(
        raw.read_within(Duration::from_millis(100)).is_none(),
        "nothing answered"
    );
    assert_eq!(server.connections_open(), 2, "sockets stay open while hung");

    server.hang(false);
    assert_eq!(
        raw.read(),
        Value::SimpleString("PONG".into()),
        "released, not dropped"
    );
    assert_eq!(db.get::<Option<String>>("k").unwrap().as_deref(), Some("v"));
}

#[test]
fn fail_command_answers_with_the_chosen_error() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = connect(&server, "syncTimeout=2000");
    db.set("k", "v").unwrap();
    server.fail_command("GET", "-LOADING Redis is loading the dataset in memory");
    let e = db.get::<Option<String>>("k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Loading, "{e}");
    assert!(e.is_transient());
    server.fail_command(
        "set",
        "READONLY You can't write against a read only replica.",
    );
    assert_eq!(db.set("k", "w").unwrap_err().kind(), ErrorKind::ReadOnly);
    server.fail_command(
        "INCRBY",
        "-TRYAGAIN Multiple keys request during rehashing of slot",
    );
    assert_eq!(db.incr("n", 1).unwrap_err().kind(), ErrorKind::TryAgain);
    server.clear_failures();
    // A rule on the name a user thinks of fires for what the typed method sends.
    server.fail_command("INCR", "-LOADING Redis is loading the dataset in memory");
    assert_eq!(db.incr("n", 1).unwrap_err().kind(), ErrorKind::Loading);
    assert_eq!(db.decr("n", 1).unwrap(), -1, "DECR has its own rule");
    server.fail_command("PING", "-BUSY Redis is busy running a script.");
    assert_eq!(db.ping().unwrap_err().kind(), ErrorKind::Busy);
    server.clear_failures();
    assert_eq!(db.get::<Option<String>>("k").unwrap().as_deref(), Some("v"));
}

#[test]
fn close_after_commands_drops_the_connection_unanswered() {
    let server = FakeServer::start().unwrap();
    server.close_after_commands(Some(2));
    let mut r = Raw::connect(server.addr());
    assert_eq!(r.cmd(&["PING"]), Value::SimpleString("PONG".into()));
    assert_eq!(r.cmd(&["ECHO", "x"]), b("x"));
    r.send(&["PING"]);
    assert!(
        r.closed_within(Duration::from_secs(5)),
        "third command not answered"
    );
    // Every new connection gets the same budget.
    let mut r = Raw::connect(server.addr());
    r.cmd(&["PING"]);
    r.cmd(&["PING"]);
    r.send(&["PING"]);
    assert!(r.closed_within(Duration::from_secs(5)));
    server.close_after_commands(None);
    let mut r = Raw::connect(server.addr());
    for _ in 0..5 {
        assert_eq!(r.cmd(&["PING"]), Value::SimpleString("PONG".into()));
    }
}

#[test]
fn refused_connections_fail_fast_and_come_back_on_the_same_port() {
    let server = FakeServer::start().unwrap();
    let port = server.port();
    server.refuse_connections(true);
    let started = Instant::now();
    let e = TcpStream::connect(server.addr()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    let e = Client::connect(opt_in(
        format!("{}?connectTimeout=2000", server.url()).as_str(),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "fast, not a timeout"
    );
    server.refuse_connections(false);
    assert_eq!(server.port(), port);
    let (_c, db) = connect(&server, "syncTimeout=2000");
    db.ping().unwrap();
}

#[test]
fn close_all_connections_and_the_client_reconnects() {
    let server = FakeServer::start().unwrap();
    let (client, db) = connect(&server, "syncTimeout=5000");
    db.set("k", "v").unwrap();
    assert_eq!(server.connections_open(), 1);
    let first = server.connections()[0].id;
    server.close_all_connections();
    // The client notices the close and reconnects by itself (often before we look).
    assert!(server.wait_for(
        |s| s.connections().iter().any(|c| c.id != first) && s.connections_open() == 1,
        Duration::from_secs(5)
    ));
    assert_eq!(db.get::<Option<String>>("k").unwrap().as_deref(), Some("v"));
    assert!(client.is_connected());
}

#[test]
fn delay_is_latency_per_reply_and_never_blocks_other_connections() {
    let server = FakeServer::start().unwrap();
    let mut a = Raw::connect(server.addr());
    let mut other = Raw::connect(server.addr());
    server.delay_replies(Some(Duration::from_millis(300)));
    let started = Instant::now();
    // A pipeline of 10 is answered ~300 ms later, not 3 s.
    let mut batch = Vec::new();
    for i in 0..10 {
        batch.extend(frame(&["ECHO", &i.to_string()]));
    }
    a.send_bytes(&batch);
    other.send(&["PING"]);
    assert_eq!(other.read(), Value::SimpleString("PONG".into()));
    for i in 0..10 {
        assert_eq!(a.read(), b(&i.to_string()));
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(290), "{took:?}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    server.delay_replies(None);
    let started = Instant::now();
    a.cmd(&["PING"]);
    assert!(started.elapsed() < Duration::from_millis(200));
}

#[test]
fn jitter_keeps_replies_in_order() {
    let server = FakeServer::start().unwrap();
    let mut a = Raw::connect(server.addr());
    server.jitter(Duration::from_millis(20));
    let mut batch = Vec::new();
    for i in 0..100 {
        batch.extend(frame(&["ECHO", &i.to_string()]));
    }
    a.send_bytes(&batch);
    for i in 0..100 {
        assert_eq!(a.read(), b(&i.to_string()));
    }
    // Through the client, from several threads at once.
    let (_c, db) = connect(&server, "syncTimeout=5000");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let v = format!("{t}-{i}");
                    let got: String = db.cmd("ECHO").arg(v.as_str()).query().unwrap();
                    assert_eq!(got, v);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    server.jitter(Duration::ZERO);
}

#[test]
fn counters_and_snapshots() {
    let server = FakeServer::start().unwrap();
    let (_c, db) = connect(&server, "syncTimeout=2000&name=app");
    db.set("a", "1").unwrap();
    db.get::<Option<String>>("a").unwrap();
    db.get::<Option<String>>("a").unwrap();
    assert_eq!(server.commands_received("GET"), 2);
    assert_eq!(server.commands_received("get"), 2);
    assert!(server.commands_received("HELLO") >= 1);
    assert!(server.total_commands() >= 4);
    let snap = &server.connections()[0];
    assert_eq!(snap.protocol, 3);
    // Opted in only in the opted-in run (`RR_TEST_MAINT=on`).
    assert_eq!(snap.opted_in, support::optin::on());
    assert_eq!(snap.last_command, "get");
    server.reset_counters();
    assert_eq!(server.total_commands(), 0);
}

#[test]
fn shutdown_joins_every_fake_thread() {
    let server = FakeServer::start().unwrap();
    let mut conns: Vec<Raw> = (0..3).map(|_| Raw::connect(server.addr())).collect();
    for c in &mut conns {
        c.cmd(&["PING"]);
    }
    conns[0].send(&["BLPOP", "never", "0"]);
    assert!(server.wait_for(
        |s| s.commands_received("BLPOP") == 1,
        Duration::from_secs(5)
    ));
    let prefix = format!("fake-{}-", server.port());
    let mine = || support::threads_named(&prefix);
    assert!(mine().len() >= 4, "{:?}", mine());
    drop(server);
    let left = support::threads_left_after_join(&prefix);
    assert!(left.is_empty(), "{left:?}");
    assert!(conns[1].closed_within(Duration::from_secs(1)));
}
