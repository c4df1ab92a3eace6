//! Retries by command safety, against the fake and across a real group failover.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resilient_redis::availability::{
    Group, GroupOptions, HealthCheck, Member, RetryDecision, RetryPolicy,
};
use resilient_redis::clock::{Clock, ManualClock};
use resilient_redis::prelude::*;
use resilient_redis::testkit::FakeServer;
use resilient_redis::{CommandFlags, ErrorKind};
use support::optin::opt_in;
use support::{wait_until, RedisServer};

fn quick() -> RetryPolicy {
    RetryPolicy::default()
        .retry_delay(Duration::from_millis(50))
        .jitter_max(Duration::ZERO)
}

fn client(server: &FakeServer) -> Client {
    Client::connect(opt_in(
        format!(
            "{}?syncTimeout=2000&reconnectMin=10&reconnectMax=50",
            server.url()
        )
        .as_str(),
    ))
    .unwrap()
}

/// Clears the injected failure once the server has seen `n` of `command`.
fn clear_after(server: &FakeServer, command: &'static str, n: u64) {
    assert!(server.wait_for(
        |s| s.commands_received(command) >= n,
        Duration::from_secs(5)
    ));
    server.clear_failures();
}

#[test]
fn loading_then_success_is_retried() {
    let server = FakeServer::start().unwrap();
    let db = client(&server).database();
    db.set("k", "v").unwrap();
    let retrying = db.with_retry(quick()).unwrap();
    server.fail_command("GET", "LOADING Redis is loading the dataset in memory");
    std::thread::scope(|s| {
        s.spawn(|| clear_after(&server, "GET", 1));
        assert_eq!(retrying.get::<String>("k").unwrap(), "v");
    });
    // Without the wrapper the same fault surfaces.
    server.fail_command("GET", "LOADING Redis is loading the dataset in memory");
    assert_eq!(
        db.get::<String>("k").unwrap_err().kind(),
        ErrorKind::Loading
    );
}

#[test]
fn application_errors_are_never_retried() {
    let server = FakeServer::start().unwrap();
    let db = client(&server).database().with_retry(quick()).unwrap();
    db.cmd("LPUSH").arg("list").arg("x").exec().unwrap();
    let before = server.commands_received("GET");
    assert_eq!(
        db.get::<String>("list").unwrap_err().kind(),
        ErrorKind::WrongType
    );
    assert_eq!(server.commands_received("GET"), before + 1);
    let before = server.commands_received("NOSUCH");
    let err = db
        .cmd("NOSUCH")
        .flags(CommandFlags::RETRY_ALWAYS)
        .exec()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownCommand);
    assert_eq!(server.commands_received("NOSUCH"), before + 1);
}

#[test]
fn an_incr_after_a_dropped_connection_is_not_replayed_but_a_set_is() {
    let server = FakeServer::start().unwrap();
    let db = client(&server).database().with_retry(quick()).unwrap();
    db.set("n", 0).unwrap();
    // The next command on the connection is dropped unanswered: ambiguous.
    server.close_after_commands(Some(0));
    let err = std::thread::scope(|s| {
        s.spawn(|| {
            assert!(server.wait_for(|s| s.connections_open() == 0, Duration::from_secs(5)));
            server.close_after_commands(None);
        });
        db.incr("n", 1).unwrap_err()
    });
    assert!(err.is_transient(), "{err}");
    // Received once (then dropped unanswered), never sent again.
    assert_eq!(
        server.commands_received("INCRBY"),
        1,
        "the INCR was sent again"
    );
    assert!(wait_until(Duration::from_secs(5), || db
        .get::<i64>("n")
        .is_ok()));
    server.close_after_commands(Some(0));
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(server.wait_for(|s| s.connections_open() == 0, Duration::from_secs(5)));
            server.close_after_commands(None);
        });
        db.set("n", 5).unwrap();
    });
    assert_eq!(db.get::<i64>("n").unwrap(), 5);
}

#[test]
fn cmd_is_never_retried_unless_its_category_is_stated() {
    let server = FakeServer::start().unwrap();
    let db = client(&server).database().with_retry(quick()).unwrap();
    server.fail_command("GET", "LOADING loading");
    let err = db
        .cmd("GET")
        .arg("k")
        .query::<Option<String>>()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Loading);
    assert_eq!(server.commands_received("GET"), 1);
    std::thread::scope(|s| {
        s.spawn(|| clear_after(&server, "GET", 2));
        let v = db
            .cmd("GET")
            .arg("k")
            .flags(CommandFlags::RETRY_READ_ONLY)
            .query::<Option<String>>()
            .unwrap();
        assert_eq!(v, None);
    });
}

#[test]
fn exhaustion_says_how_many_attempts_and_why_and_delays_use_the_injected_clock() {
    let server = FakeServer::start().unwrap();
    let clock = ManualClock::new();
    let start = clock.now();
    let policy = RetryPolicy::default()
        .max_attempts(4)
        .retry_delay(Duration::from_secs(2))
        .jitter_max(Duration::from_millis(500))
        .clock(Arc::new(clock.clone()));
    let db = client(&server).database().with_retry(policy).unwrap();
    server.fail_command("GET", "BUSY a script is running");
    let err = db.get::<Option<String>>("k").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy);
    assert!(
        err.to_string()
            .contains("gave up after 4 attempts (Busy, Busy, Busy, Busy)"),
        "{err}"
    );
    assert_eq!(server.commands_received("GET"), 4);
    // Three pauses of 2 s plus at most 0.5 s of jitter each, on the manual clock.
    let waited = clock.now() - start;
    assert!(
        waited >= Duration::from_secs(6) && waited <= Duration::from_millis(7500),
        "{waited:?}"
    );
}

#[test]
fn batches_transactions_and_double_wrapping_are_refused() {
    let server = FakeServer::start().unwrap();
    let db = client(&server).database().with_retry(quick()).unwrap();
    assert_eq!(
        db.with_retry(quick()).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let batch = db.batch();
    batch.set("a", 1);
    assert_eq!(batch.execute().unwrap_err().kind(), ErrorKind::InvalidInput);
    let tx = db.transaction();
    tx.set("a", 1);
    assert_eq!(tx.execute().unwrap_err().kind(), ErrorKind::InvalidInput);
    // The optimistic helper retries conflicts by rebuilding from fresh reads.
    let other = client(&server).database();
    db.set("c", 1).unwrap();
    let tries = AtomicU64::new(0);
    let committed = db
        .watch("c", |conn| {
            let v: i64 = conn.get("c")?;
            if tries.fetch_add(1, Ordering::SeqCst) == 0 {
                other.set("c", 100)?; // a conflict on the first try only
            }
            let tx = conn.transaction();
            tx.set("c", v + 1);
            Ok(tx)
        })
        .unwrap();
    assert!(committed);
    assert_eq!(tries.load(Ordering::SeqCst), 2);
    assert_eq!(db.get::<i64>("c").unwrap(), 101);
}

#[test]
fn a_retry_spanning_a_group_failover_lands_on_the_new_member() {
    let servers = [FakeServer::start().unwrap(), FakeServer::start().unwrap()];
    for (i, s) in servers.iter().enumerate() {
        client(s).database().set("who", format!("m{i}")).unwrap();
    }
    let members = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Member::new(opt_in(format!("{}?syncTimeout=200", s.url())))
                .with_name(format!("m{i}"))
                .with_weight(10 - i as u32)
        })
        .collect();
    let group = Group::connect(
        members,
        GroupOptions::default().health_check(
            HealthCheck::default()
                .interval(Duration::from_millis(100))
                .probe_count(1)
                .probe_timeout(Duration::from_millis(100)),
        ),
    )
    .unwrap();
    let db = group
        .database()
        .with_retry(quick().failover_delay(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(db.get::<String>("who").unwrap(), "m0");
    // Only a failover can rescue this read: the first member keeps timing out.
    servers[0].hang(true);
    assert_eq!(db.get::<String>("who").unwrap(), "m1");
    // A policy that only retries elsewhere gives up where there is nowhere to go.
    let single = client(&servers[1])
        .database()
        .with_retry(quick().with_decision(|_, _| RetryDecision::FailoverServer))
        .unwrap();
    servers[1].fail_command("GET", "LOADING loading");
    assert_eq!(
        single.get::<String>("who").unwrap_err().kind(),
        ErrorKind::Loading
    );
}

#[test]
fn a_get_loop_sees_no_errors_across_a_real_sigkill_failover() {
    let Some(mut servers) = (|| {
        Some([
            RedisServer::start()?,
            RedisServer::start()?,
            RedisServer::start()?,
        ])
    })() else {
        return;
    };
    let members: Vec<Member> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Member::new(opt_in(format!(
                "{},syncTimeout=500,connectTimeout=500,reconnectMax=200",
                s.addr()
            )))
            .with_name(format!("m{i}"))
            .with_weight(30 - 10 * i as u32)
        })
        .collect();
    let group = Group::connect(members, GroupOptions::default()).unwrap();
    let db = group.database().with_retry(RetryPolicy::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let reader = {
        let (db, stop, ok, failed) = (db.clone(), stop.clone(), ok.clone(), failed.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match db.get::<Option<String>>("k") {
                    Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        eprintln!("GET failed: {e}");
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        })
    };
    assert!(wait_until(Duration::from_secs(5), || ok
        .load(Ordering::Relaxed)
        > 100));
    servers[0].kill();
    assert!(wait_until(Duration::from_secs(10), || group
        .active()
        .is_some_and(|m| m.name() == "m1")));
    let seen = ok.load(Ordering::Relaxed);
    assert!(wait_until(Duration::from_secs(10), || ok
        .load(Ordering::Relaxed)
        > seen + 100));
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert_eq!(failed.load(Ordering::Relaxed), 0);
}
