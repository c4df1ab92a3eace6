//! The multiplexed client against a real redis-server: sharing, timeouts, recovery,
//! authentication.

use crate::support;

use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::config::Protocol;
use resilient_redis::prelude::*;
use resilient_redis::{ClientEvent, ErrorKind, FailureKind};
use support::credentials::{
    acl, assert_served_throughout, client_with, issue_user, wait_for_round, Writers,
};
use support::optin::opt_in;
use support::{wait_until, RedisServer};

fn options(server: &RedisServer, protocol: Protocol) -> Options {
    Options::default()
        .endpoint(&server.addr())
        .protocol(protocol)
}

#[test]
fn thirty_two_threads_share_one_client_and_every_reply_reaches_its_caller() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        let client = Client::connect(opt_in(options(&server, protocol))).unwrap();
        let db = client.database();
        let threads: Vec<_> = (0..32)
            .map(|t| {
                let db = db.clone();
                thread::spawn(move || {
                    for i in 0..300 {
                        // The value encodes its key: a reply that reached the wrong
                        // caller cannot match.
                        let key = format!("mt:{protocol:?}:{t}:{i}");
                        let value = format!("value-of-{key}");
                        db.set(&key, &value).unwrap();
                        let got: Option<String> = db.get(&key).unwrap();
                        assert_eq!(got.as_deref(), Some(value.as_str()));
                        let n: i64 = db.incr(format!("mt:{protocol:?}:ctr:{t}"), 1).unwrap();
                        assert_eq!(n, i as i64 + 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}

#[test]
fn a_reply_that_arrives_after_its_caller_timed_out_never_reaches_the_next_caller() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let db = client.database();
    db.set("late:k", "mine").unwrap();
    // BLPOP on the shared connection (not marked blocking, on purpose) holds the reply
    // for 500 ms; our caller gives up after 100 ms.
    let err = db
        .with_timeout(Duration::from_millis(100))
        .cmd("BLPOP")
        .arg("late:empty")
        .arg("0.5")
        .query::<Option<Vec<String>>>()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(err.command(), Some("BLPOP"));
    // The next caller's reply is its own, not the nil that BLPOP eventually sends.
    let v: Option<String> = db.get("late:k").unwrap();
    assert_eq!(v.as_deref(), Some("mine"));
    for i in 0..50 {
        let v: String = db.cmd("ECHO").arg(i.to_string()).query().unwrap();
        assert_eq!(v, i.to_string());
    }
}

#[test]
fn the_client_recovers_by_itself_after_the_server_is_killed_and_restarted() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .reconnect_delay(Duration::from_millis(20), Duration::from_millis(200))
            .command_timeout(Duration::from_millis(500)),
    ))
    .unwrap();
    let events = client.events();
    let db = client.database();
    db.set("r:k", "1").unwrap();
    server.kill();
    let failed = events
        .recv_timeout(Duration::from_secs(5))
        .expect("a ConnectionFailed event");
    match failed {
        ClientEvent::ConnectionFailed { failure, .. } => {
            assert!(matches!(
                failure,
                FailureKind::SocketClosed | FailureKind::SocketFailure
            ))
        }
        other => panic!("expected ConnectionFailed, got {other:?}"),
    }
    // While it is down, commands fail within their timeout (classified), never hang.
    let started = Instant::now();
    let err = db.ping().unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    server.restart();
    assert!(
        wait_until(Duration::from_secs(10), || db.ping().is_ok()),
        "the client did not reconnect"
    );
    let restored = wait_until(Duration::from_secs(5), || {
        events
            .try_iter()
            .any(|e| matches!(e, ClientEvent::ConnectionRestored { .. }))
    });
    assert!(restored, "no ConnectionRestored event");
    assert!(client.is_connected());
}

#[test]
fn commands_issued_while_disconnected_wait_in_the_backlog_and_complete() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .reconnect_delay(Duration::from_millis(20), Duration::from_millis(100)),
    ))
    .unwrap();
    let db = client.database();
    server.kill();
    assert!(wait_until(Duration::from_secs(5), || !client.is_connected()));
    let waiter = {
        let db = db.with_timeout(Duration::from_secs(10));
        thread::spawn(move || db.set("backlog:k", "v"))
    };
    server.restart();
    waiter.join().unwrap().unwrap();
    let v: Option<String> = db.get("backlog:k").unwrap();
    assert_eq!(v.as_deref(), Some("v"));
}

#[test]
fn failfast_backlog_fails_at_once_while_disconnected() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .backlog(resilient_redis::config::BacklogPolicy::FailFast)
            .reconnect_delay(Duration::from_secs(5), Duration::from_secs(5)),
    ))
    .unwrap();
    let db = client.database();
    server.kill();
    assert!(wait_until(Duration::from_secs(5), || !client.is_connected()));
    let started = Instant::now();
    let err = db.ping().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed);
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[test]
fn acl_users_authenticate_and_a_wrong_password_is_a_classified_error_without_the_secret() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let admin = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    admin
        .cmd("ACL")
        .arg(["SETUSER", "alice", "on", ">s3cret-pw", "~*", "+@all"])
        .exec()
        .unwrap();
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        let ok = Client::connect(opt_in(
            Options::default()
                .endpoint(&server.addr())
                .user("alice")
                .password("s3cret-pw")
                .protocol(protocol),
        ))
        .unwrap();
        let who: String = ok.database().cmd("ACL").arg("WHOAMI").query().unwrap();
        assert_eq!(who, "alice");
        let err = Client::connect(opt_in(
            Options::default()
                .endpoint(&server.addr())
                .user("alice")
                .password("wrong-pw-xyz")
                .protocol(protocol),
        ))
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
        let shown = format!("{err} {err:?}");
        assert!(
            !shown.contains("wrong-pw-xyz") && !shown.contains("s3cret"),
            "{shown}"
        );
    }
}

#[test]
fn select_and_client_name_are_applied_by_the_handshake_and_after_reconnect() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .database(3)
            .client_name("rr-test")
            .reconnect_delay(Duration::from_millis(20), Duration::from_millis(100)),
    ))
    .unwrap();
    let db = client.database();
    let check = |db: &Database| {
        let name: String = db.cmd("CLIENT").arg("GETNAME").query().unwrap();
        assert_eq!(name, "rr-test");
        let info: String = db.cmd("CLIENT").arg("INFO").query().unwrap();
        assert!(info.contains(" db=3 "), "{info}");
    };
    check(&db);
    server.restart();
    assert!(wait_until(Duration::from_secs(10), || db.ping().is_ok()));
    check(&db);
}

#[test]
fn a_batch_and_a_transaction_answer_in_order() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let db = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let batch = db.batch();
    let handles: Vec<_> = (0..1000)
        .map(|i| {
            batch.set(format!("b:{i}"), i);
            batch.get::<i64>(format!("b:{i}"))
        })
        .collect();
    batch.execute().unwrap();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.wait().unwrap(), i as i64);
    }
    let tx = db.transaction();
    tx.watch("t:k");
    let a = tx.incr("t:k", 2);
    let b = tx.get::<String>("t:k");
    assert!(tx.execute().unwrap());
    assert_eq!(a.wait().unwrap(), 2);
    assert_eq!(b.wait().unwrap(), "2");
}

#[test]
fn errors_name_the_command_and_endpoint_but_not_the_arguments() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let db = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    db.cmd("LPUSH")
        .arg("wt:list")
        .arg("secret-arg")
        .exec()
        .unwrap();
    let err = db.get::<String>("wt:list").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongType);
    assert_eq!(err.command(), Some("GET"));
    let err = db.cmd("NOSUCHCMD").arg("secret-arg").exec().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownCommand);
    // The server echoes arguments of unknown commands; we must not pass them on.
    assert!(!format!("{err} {err:?}").contains("secret-arg"), "{err}");
}

#[test]
fn a_server_that_stops_answering_is_detected_and_the_connection_replaced() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .command_timeout(Duration::from_millis(300))
            .connect_timeout(Duration::from_millis(500))
            .reconnect_delay(Duration::from_millis(50), Duration::from_millis(200)),
    ))
    .unwrap();
    let events = client.events();
    let db = client.database();
    db.ping().unwrap();
    server.pause();
    let started = Instant::now();
    let err = db.ping().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    // The socket is open but silent: the supervisor must call it dead by itself.
    let dead = wait_until(Duration::from_secs(5), || {
        events.try_iter().any(|e| {
            matches!(
                e,
                ClientEvent::ConnectionFailed {
                    failure: FailureKind::Timeout,
                    ..
                }
            )
        })
    });
    assert!(dead, "the silent connection was not declared dead");
    server.resume();
    assert!(wait_until(Duration::from_secs(10), || db.ping().is_ok()));
}

#[test]
fn idle_connections_get_heartbeats() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .keep_alive(Duration::from_millis(100)),
    ))
    .unwrap();
    let observer = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let pings = || -> u64 {
        let stats: String = observer.cmd("INFO").arg("commandstats").query().unwrap();
        stats
            .lines()
            .find_map(|l| l.strip_prefix("cmdstat_ping:calls="))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert!(
        wait_until(Duration::from_secs(5), || pings() >= 3),
        "no heartbeats seen"
    );
    drop(client);
}

#[test]
fn watch_guards_a_read_modify_write_on_a_dedicated_connection() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let db = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let other = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    db.set("acct", 100).unwrap();
    // Unchanged between the read and EXEC: committed.
    let committed = db
        .watch("acct", |conn| {
            let v: i64 = conn.get("acct")?;
            let tx = conn.transaction();
            tx.set("acct", v + 10);
            Ok(tx)
        })
        .unwrap();
    assert!(committed);
    assert_eq!(db.get::<i64>("acct").unwrap(), 110);
    // Changed by someone else after our read: aborted, nothing written.
    let committed = db
        .watch("acct", |conn| {
            let v: i64 = conn.get("acct")?;
            other.set("acct", 0)?;
            let tx = conn.transaction();
            tx.set("acct", v + 10);
            Ok(tx)
        })
        .unwrap();
    assert!(!committed);
    assert_eq!(db.get::<i64>("acct").unwrap(), 0);
    // A transaction from another handle would not be guarded: refused.
    let err = db.watch("acct", |_conn| Ok(db.transaction())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    // A failing build leaves the dedicated connection clean for the next one.
    let err = db
        .watch("acct", |_conn| {
            Err(resilient_redis::Error::new(ErrorKind::InvalidInput, "no"))
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let committed = db
        .watch("acct", |conn| {
            let tx = conn.transaction();
            tx.incr("acct", 1);
            Ok(tx)
        })
        .unwrap();
    assert!(committed);
    assert_eq!(db.get::<i64>("acct").unwrap(), 1);
}

/// A password rotated while 8 threads run: connections already authenticated keep
/// working, and every reconnect (here forced by killing the user's connections) asks
/// the credentials provider and uses the new password: 0 failed calls with the default
/// retry policy, default options otherwise.
#[test]
fn a_rotated_password_is_used_by_every_reconnect_without_a_restart() {
    use resilient_redis::availability::RetryPolicy;
    use resilient_redis::config::{Credentials, RotatingCredentials};
    use std::sync::Arc;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let admin = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    acl(
        &admin,
        &["SETUSER", "app", "on", ">first-pw", "~*", "+@all"],
    );
    let current = RotatingCredentials::new(Credentials::user("app", "first-pw"));
    let client = client_with(&server.addr(), Arc::new(current.clone()), Protocol::Resp3);
    let db = client
        .database()
        .with_retry(RetryPolicy::default())
        .unwrap();
    let writers = Writers::start(&db, "rot");
    writers.wait_for(200);
    // The rotation: the new password is added, the provider switched, the old removed.
    acl(&admin, &["SETUSER", "app", ">second-pw"]);
    current.set(Credentials::user("app", "second-pw"));
    acl(&admin, &["SETUSER", "app", "<first-pw"]);
    writers.wait_for(200); // the live connection is still authenticated
    let killed: i64 = admin
        .cmd("CLIENT")
        .arg(["KILL", "USER", "app"])
        .query()
        .unwrap();
    assert!(killed >= 1);
    writers.wait_for(200); // reconnected with the new password
    writers.stop();
    let who: String = client.database().cmd("ACL").arg("WHOAMI").query().unwrap();
    assert_eq!(who, "app");
}

/// Short-lived tokens: every 2 s a new token (here an ACL user of its own) is issued,
/// the provider hands it out, and the previous one is deleted, which makes the server
/// drop any connection still authenticated with it. Live connections re-authenticate
/// in place before that: 0 failed calls and not one connection closed. The old token
/// is deleted only once the client says every connection is past it
/// (`ClientEvent::Reauthenticated`), as a user revoking tokens would do.
#[test]
fn renewed_tokens_re_authenticate_live_connections_without_closing_them() {
    use resilient_redis::config::RotatingCredentials;
    use std::sync::Arc;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let admin = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let tokens = RotatingCredentials::new(issue_user(&admin, "tok", 0));
    let client = client_with(&server.addr(), Arc::new(tokens.clone()), Protocol::Resp3);
    let events = client.events();
    let rounds = client.events();
    let sub = client.subscriber();
    let news = sub.subscribe("news").unwrap();
    let db = client.database();
    let writers = Writers::start(&db, "tok");
    assert_eq!(client.credentials_generation(), Some(0));
    for n in 1..=4u32 {
        thread::sleep(Duration::from_secs(2)); // the token's life
        tokens.set(issue_user(&admin, "tok", u64::from(n)));
        // Renewed ahead of the old one's end: revoked once no connection uses it.
        let done = wait_for_round(&rounds, u64::from(n), Duration::from_secs(5));
        assert!(done.is_some(), "round {n} not reported");
        assert!(done.is_some_and(|connections| connections >= 2), "{done:?}");
        assert_eq!(client.credentials_generation(), Some(u64::from(n)));
        let old = format!("tok-{}", n - 1);
        acl(&admin, &["DELUSER", &old]); // the server drops connections still using it
    }
    // The subscription connection (RESP3) re-authenticated too and still delivers.
    assert_served_throughout(Some(writers), &events, false, Some((&sub, &news)));
}

/// RESP2: the subscription connection cannot take `AUTH` while subscribed, so the
/// round replaces it (opened with the new token first); a blocking call in progress
/// keeps its dedicated connection, and the round waits for it to come back. Deleting
/// the old token once the round is reported closes nothing.
#[test]
fn a_round_covers_resp2_subscriptions_and_blocking_connections_before_it_is_reported() {
    use resilient_redis::config::RotatingCredentials;
    use std::sync::Arc;
    let Some(server) = RedisServer::start() else {
        return;
    };
    let admin = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let tokens = RotatingCredentials::new(issue_user(&admin, "r2", 0));
    let client = client_with(&server.addr(), Arc::new(tokens.clone()), Protocol::Resp2);
    let events = client.events();
    let rounds = client.events();
    let sub = client.subscriber();
    let news = sub.subscribe("news").unwrap();
    let db = client.database();
    // A blocking call in progress on a dedicated connection authenticated with token 0.
    let blocked = {
        let db = db.clone();
        thread::spawn(move || {
            db.blpop::<Option<(String, String)>>("r2-list", Duration::from_secs(3))
        })
    };
    assert!(wait_until(Duration::from_secs(5), || admin
        .cmd("CLIENT")
        .arg(["LIST", "TYPE", "normal"])
        .query::<String>()
        .is_ok_and(|list| list.contains("cmd=blpop"))));
    tokens.set(issue_user(&admin, "r2", 1));
    // The interactive and subscription connections move at once; the blocked one
    // holds the round until its call returns (3 s).
    let on_old = || who_uses(&admin, "r2-0");
    assert!(wait_until(Duration::from_secs(5), || on_old() == 1));
    assert_eq!(client.credentials_generation(), Some(0));
    assert_eq!(blocked.join().unwrap().unwrap(), None);
    let done = wait_for_round(&rounds, 1, Duration::from_secs(5));
    assert!(
        done.is_some(),
        "the round is reported once the call returned"
    );
    assert!(wait_until(Duration::from_secs(5), || on_old() == 0));
    acl(&admin, &["DELUSER", "r2-0"]);
    db.set("r2-k", "v").unwrap();
    let popped = db.blpop::<Option<(String, String)>>("r2-list", Duration::from_millis(100));
    assert_eq!(popped.unwrap(), None);
    assert_served_throughout(None, &events, false, Some((&sub, &news)));
}

/// How many connections the server has authenticated as `user`.
fn who_uses(admin: &Database, user: &str) -> usize {
    let list: String = admin
        .cmd("CLIENT")
        .arg(["LIST"])
        .query()
        .unwrap_or_default();
    let needle = format!(" user={user} ");
    list.lines().filter(|l| l.contains(&needle)).count()
}

/// A subscription the server refuses says why at once (`NOPERM` for a user without
/// channel permissions), instead of "not confirmed" after the timeout.
#[test]
fn a_refused_subscription_names_the_servers_reason() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let admin = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    admin
        .cmd("ACL")
        .arg([
            "SETUSER",
            "nochan",
            "on",
            ">pw",
            "~*",
            "resetchannels",
            "+@all",
        ])
        .exec()
        .unwrap();
    let client = Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .user("nochan")
            .password("pw"),
    ))
    .unwrap();
    let started = Instant::now();
    let e = client.subscriber().subscribe("news").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert_eq!(e.command(), Some("SUBSCRIBE"));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "answered, not timed out"
    );
}

/// The opted-in run (`RR_TEST_MAINT=on`) against a real server: Redis 7 refuses
/// `CLIENT MAINT_NOTIFICATIONS`, so the switch uses `auto` there; the opt-in must still
/// be sent in the first round and its refusal absorbed, or that run tests nothing new.
#[test]
fn the_opted_in_run_sends_the_opt_in_to_real_servers() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let client = Client::connect(opt_in(server.url())).unwrap();
    let db = client.database();
    db.set("k", "v").unwrap();
    let stats = db.info(Some("errorstats")).unwrap();
    // The only error a fresh server can have answered is the refused opt-in.
    let refused = stats.contains("errorstat_ERR:count=1");
    assert_eq!(refused, support::optin::on(), "{stats}");
    let status = client.maintenance_status().remove(0);
    assert!(status.connected && !status.opted_in, "{status:?}");
}
