//! Typed commands queued in batches and transactions against a real redis-server.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use resilient_redis::config::Protocol;
use resilient_redis::prelude::*;
use resilient_redis::{Cmd, ErrorKind};
use support::commands::{connect, each_protocol, server};
use support::optin::opt_in;

#[test]
fn a_batch_of_a_thousand_commands() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let counter = format!("{p}counter");
        let batch = db.batch();
        let incrs: Vec<_> = (0..500).map(|_| batch.incr(&counter, 1)).collect();
        let sets: Vec<_> = (0..250).map(|i| batch.set(format!("{p}k{i}"), i)).collect();
        let gets: Vec<_> = (0..250)
            .map(|i| batch.get::<i64>(format!("{p}k{i}")))
            .collect();
        assert_eq!(batch.len(), 1000);
        batch.execute().unwrap();
        for (i, h) in incrs.into_iter().enumerate() {
            assert_eq!(h.wait().unwrap(), i as i64 + 1);
        }
        for h in sets {
            h.wait().unwrap();
        }
        for (i, h) in gets.into_iter().enumerate() {
            assert_eq!(h.wait().unwrap(), i as i64);
        }
    });
}

#[test]
fn errors_in_a_batch_stay_with_their_command() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}str");
        let batch = db.batch();
        let set = batch.set(&k, "v");
        let bad = batch.hgetall::<std::collections::HashMap<String, String>>(&k);
        let get = batch.get::<String>(&k);
        batch.execute().unwrap();
        set.wait().unwrap();
        let e = bad.wait().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongType);
        assert_eq!(e.command(), Some("HGETALL"));
        assert_eq!(get.wait().unwrap(), "v");
    });
}

#[test]
fn a_committed_transaction_gives_each_command_its_reply() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let (k, h, z) = (format!("{p}tx:k"), format!("{p}tx:h"), format!("{p}tx:z"));
        let tx = db.transaction();
        tx.watch(&k);
        let set = tx.set(&k, 10);
        let incr = tx.incr(&k, 5);
        let hset = tx.hset(&h, "f", "v");
        let all = tx.hgetall::<std::collections::HashMap<String, String>>(&h);
        let zadd = tx.zadd_multiple(&z, [(1.0, "a"), (2.0, "b")]);
        let scored = tx.zrange_withscores::<String>(&z, 0, -1);
        assert!(tx.execute().unwrap(), "committed");
        set.wait().unwrap();
        assert_eq!(incr.wait().unwrap(), 15);
        assert_eq!(hset.wait().unwrap(), 1);
        assert_eq!(all.wait().unwrap()["f"], "v");
        assert_eq!(zadd.wait().unwrap(), 2);
        assert_eq!(
            scored.wait().unwrap(),
            [("a".to_string(), 1.0), ("b".to_string(), 2.0)]
        );
    });
}

#[test]
fn a_command_refused_at_queue_time_aborts_the_transaction() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}abort");
        let tx = db.transaction();
        let set = tx.set(&k, 1);
        // Wrong arity: the server refuses to queue it, so EXEC answers EXECABORT.
        let _bad = tx.add::<()>(Cmd::new("SET").key(&k));
        let e = tx.execute().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ExecAbort, "{e}");
        assert_eq!(set.wait().unwrap_err().kind(), ErrorKind::ExecAbort);
        assert_eq!(db.exists(&k).unwrap(), 0, "nothing ran");
    });
}

/// `WATCH`, `MULTI`, the body and `EXEC` go out in one write, so another client can
/// only change the watched key while the server is still reading that write. The
/// server reads a client's input 16 KiB at a time and serves other clients in
/// between, so a body of ~2 MB queued against a client hammering the watched key
/// leaves it many chances; a few attempts make a miss vanishingly unlikely.
#[test]
fn a_watched_key_changed_meanwhile_aborts_with_false() {
    let Some(server) = server() else { return };
    let client = connect(&server, Protocol::Resp3);
    let db = client.database().with_timeout(Duration::from_secs(30));
    let hammer_client = connect(&server, Protocol::Resp3);
    let hammer_db = hammer_client.database();
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = stop.clone();
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                hammer_db.incr("watched", 1).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut aborted = false;
    let mut committed = 0;
    for _attempt in 0..5 {
        let tx = db.transaction();
        tx.watch("watched");
        let handles: Vec<_> = (0..40_000)
            .map(|i| tx.set(format!("body:{}", i % 100), i))
            .collect();
        if !tx.execute().unwrap() {
            aborted = true;
            let e = handles.into_iter().next().unwrap().wait().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            break;
        }
        committed += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let increments = hammer.join().unwrap();
    assert!(increments > 0);
    assert!(
        aborted,
        "no attempt saw the watched key change ({increments} increments)"
    );
    if committed == 0 {
        assert_eq!(
            db.exists("body:0").unwrap(),
            0,
            "an aborted transaction wrote nothing"
        );
    }
}

#[test]
fn a_blocking_command_in_a_batch_is_refused_before_anything_is_sent() {
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let db = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let batch = db.batch();
    let set = batch.set("bb:k", "v");
    let _popped = batch.blpop::<Option<(String, String)>>("bb:list", Duration::from_secs(1));
    let err = batch.execute().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(set.wait().is_err());
    assert_eq!(
        db.get::<Option<String>>("bb:k").unwrap(),
        None,
        "nothing was sent"
    );
}
