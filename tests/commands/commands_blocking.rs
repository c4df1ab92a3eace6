//! Blocking commands against a real redis-server: they time out with nil (not an
//! error), wake up for a value pushed meanwhile, run on a dedicated connection (the
//! shared one keeps answering), and get the caller's timeout *plus* their block time.
//! Also `WAIT`, which must not run on a dedicated connection (see `ServerCommands::wait`).

use crate::support;

use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::config::Protocol;
use resilient_redis::prelude::*;
use support::commands::{blocked_clients, connect, connect_with, each_protocol, server};
use support::{wait_until, RedisServer};

#[test]
fn blpop_times_out_with_nil_after_its_block_time() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let start = Instant::now();
        let got: Option<(String, String)> = db
            .blpop(
                [format!("{p}empty1"), format!("{p}empty2")],
                Duration::from_millis(300),
            )
            .unwrap();
        let waited = start.elapsed();
        assert_eq!(got, None);
        assert!(waited >= Duration::from_millis(290), "{waited:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
        let got: Option<(String, String)> = db
            .brpop(format!("{p}empty"), Duration::from_millis(50))
            .unwrap();
        assert_eq!(got, None);
    });
}

#[test]
fn blpop_wakes_up_for_a_value_pushed_from_another_thread() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let key = format!("{p}queue");
        let pusher = db.clone();
        let k = key.clone();
        let observer = db.clone();
        let t = thread::spawn(move || {
            assert!(wait_until(Duration::from_secs(5), || blocked_clients(
                &observer
            ) == 1));
            pusher.rpush(&k, "job-1").unwrap();
        });
        let start = Instant::now();
        let got: Option<(String, String)> = db.blpop(&key, Duration::from_secs(10)).unwrap();
        assert_eq!(got, Some((key.clone(), "job-1".to_string())));
        assert!(start.elapsed() < Duration::from_secs(5));
        t.join().unwrap();

        // Forever (Duration::ZERO) is not a client-side timeout of zero either.
        let pusher = db.clone();
        let observer = db.clone();
        let k = key.clone();
        let t = thread::spawn(move || {
            assert!(wait_until(Duration::from_secs(5), || blocked_clients(
                &observer
            ) == 1));
            thread::sleep(Duration::from_millis(100));
            pusher.lpush(&k, "job-2").unwrap();
        });
        let got: Option<(String, String)> = db.brpop(&key, Duration::ZERO).unwrap();
        assert_eq!(got.map(|(_, v)| v).as_deref(), Some("job-2"));
        t.join().unwrap();
    });
}

#[test]
fn a_blocked_command_does_not_stall_the_shared_connection() {
    let Some(server) = server() else { return };
    let client = connect(&server, Protocol::Resp3);
    let db = client.database();
    let blocker = db.clone();
    let t = thread::spawn(move || {
        let start = Instant::now();
        let got: Option<(String, String)> = blocker
            .blpop("stall:never", Duration::from_secs(2))
            .unwrap();
        (got, start.elapsed())
    });
    assert!(wait_until(Duration::from_secs(5), || blocked_clients(&db) == 1));
    let start = Instant::now();
    for i in 0..50 {
        db.set(format!("stall:{i}"), i).unwrap();
        assert_eq!(db.get::<i64>(format!("stall:{i}")).unwrap(), i);
    }
    let busy = start.elapsed();
    // 100 round trips on loopback: milliseconds. Had they queued behind the BLPOP they
    // would have taken the rest of its 2 s.
    assert!(busy < Duration::from_millis(1000), "{busy:?}");
    assert_eq!(
        blocked_clients(&db),
        1,
        "the BLPOP is still blocked meanwhile"
    );
    let (got, blocked) = t.join().unwrap();
    assert_eq!(got, None);
    assert!(blocked >= Duration::from_millis(1900), "{blocked:?}");
}

#[test]
fn the_client_timeout_of_a_blocking_command_is_the_callers_plus_its_block() {
    let Some(server) = server() else { return };
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        // A caller timeout much shorter than the block: a fixed response timeout
        // would fail at 500 ms; ours allows 500 ms + 2 s, and the server answers nil
        // at 2 s (the margin keeps it true on a loaded machine).
        let client = connect_with(&server, protocol, Duration::from_millis(500));
        let db = client.database();
        let start = Instant::now();
        let got: Option<(String, String)> = db.blpop("tmo:empty", Duration::from_secs(2)).unwrap();
        assert_eq!(got, None);
        assert!(start.elapsed() >= Duration::from_millis(1950));
        // Control: the short timeout is in force for a plain command. With every
        // client paused for 1.5 s, a GET gives up after its 500 ms.
        db.cmd("CLIENT")
            .arg("PAUSE")
            .arg(1500)
            .arg("ALL")
            .exec()
            .unwrap();
        // The GET would succeed once the pause ends, so a timeout proves the short
        // timeout fired (no wall-clock bound: it would only hold on a quiet machine).
        let e = db.get::<Option<String>>("tmo:k").unwrap_err();
        assert_eq!(e.kind(), resilient_redis::ErrorKind::Timeout, "{e}");
        assert!(support::wait_until(Duration::from_secs(5), || db
            .ping()
            .is_ok()));
    }
}

#[test]
fn blocking_sorted_set_pops() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let z = format!("{p}bz");
        db.zadd_multiple(&z, [(1.5, "low"), (9.0, "high")]).unwrap();
        let got: Option<(String, String, f64)> = db.bzpopmin(&z, Duration::from_secs(1)).unwrap();
        assert_eq!(got, Some((z.clone(), "low".into(), 1.5)));
        let got: Option<(String, String, f64)> = db.bzpopmax(&z, Duration::from_secs(1)).unwrap();
        assert_eq!(got, Some((z.clone(), "high".into(), 9.0)));
        let start = Instant::now();
        let got: Option<(String, String, f64)> =
            db.bzpopmin(&z, Duration::from_millis(200)).unwrap();
        assert_eq!(got, None);
        assert!(start.elapsed() >= Duration::from_millis(190));
    });
}

#[test]
fn blocking_moves() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let (src, dst) = (format!("{p}src"), format!("{p}dst"));
        db.rpush(&src, ["a", "b"]).unwrap();
        let got: Option<String> = db
            .blmove(
                &src,
                &dst,
                ListEnd::Right,
                ListEnd::Left,
                Duration::from_secs(1),
            )
            .unwrap();
        assert_eq!(got.as_deref(), Some("b"));
        let got: Option<String> = db.brpoplpush(&src, &dst, Duration::from_secs(1)).unwrap();
        assert_eq!(got.as_deref(), Some("a"));
        assert_eq!(db.lrange::<String>(&dst, 0, -1).unwrap(), ["a", "b"]);
        let got: Option<String> = db
            .blmove(
                &src,
                &dst,
                ListEnd::Left,
                ListEnd::Left,
                Duration::from_millis(100),
            )
            .unwrap();
        assert_eq!(got, None);
    });
}

/// `WAIT` counts acknowledgements up to the replication offset of the connection it
/// runs on, as of that connection's last command. Every caller's writes go through
/// the shared connection, so that is where `wait` must run. Measured on 7.0.15: a
/// pooled dedicated connection last used before a write reports a paused replica as
/// having acknowledged it; the shared connection correctly reports 0.
#[test]
fn wait_counts_the_writes_of_the_shared_connection() {
    // Diskless sync waits 5 s by default for more replicas to join; one is enough.
    let Some(master) = RedisServer::start_with(&["--repl-diskless-sync-delay", "0"]) else {
        return;
    };
    let port = master.port.to_string();
    let Some(replica) = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port]) else {
        return;
    };
    let client = connect(&master, Protocol::Resp3);
    let db = client.database();
    let online = wait_until(Duration::from_secs(10), || {
        db.info(Some("replication"))
            .unwrap()
            .contains("state=online")
    });
    assert!(online, "the replica never came online");

    db.set("wait:k", 1).unwrap();
    assert_eq!(db.wait(1, Duration::from_secs(4)).unwrap(), 1);
    // Leaves an idle dedicated connection in the pool, last used before the write below.
    let warm: Option<(String, String)> = db.blpop("wait:warm", Duration::from_millis(10)).unwrap();
    assert_eq!(warm, None);
    // Pause only once the replica has acknowledged everything so far (WAIT's own
    // REPLCONF GETACK included), so what it acknowledged is exactly "before the write".
    let caught_up = wait_until(Duration::from_secs(10), || replica_caught_up(&db));
    assert!(caught_up, "the replica never acknowledged the whole stream");

    replica.pause();
    db.set("wait:k", 2).unwrap();
    let start = Instant::now();
    assert_eq!(db.wait(1, Duration::from_millis(300)).unwrap(), 0);
    assert!(start.elapsed() >= Duration::from_millis(290));

    // What WAIT says on that dedicated connection: the paused replica "has" the write.
    let dedicated: i64 = db
        .cmd("WAIT")
        .arg(1)
        .arg(300)
        .blocking(Duration::from_millis(300))
        .query()
        .unwrap();
    assert_eq!(
        dedicated, 1,
        "the dedicated connection's offset predates the write"
    );
    replica.resume();
}

/// Whether the replica acknowledged the master's whole replication stream.
fn replica_caught_up(db: &Database) -> bool {
    let info = db.info(Some("replication")).unwrap();
    let acked: Option<i64> = info
        .lines()
        .find_map(|l| l.strip_prefix("slave0:"))
        .and_then(|l| l.split(',').find_map(|kv| kv.strip_prefix("offset=")))
        .and_then(|v| v.trim().parse().ok());
    let master: Option<i64> = info
        .lines()
        .find_map(|l| l.strip_prefix("master_repl_offset:"))
        .and_then(|v| v.trim().parse().ok());
    acked.is_some() && acked == master
}

#[test]
fn a_blocking_connection_left_idle_for_a_heartbeat_interval_is_closed_and_opened_again_on_its_next_lease(
) {
    use resilient_redis::testkit::FakeServer;
    const SOON: Duration = Duration::from_secs(10);
    let server = FakeServer::start().unwrap();
    // Default options but a short heartbeat interval: nothing keeps an idle blocking
    // connection's flow alive, so it is closed rather than left for a NAT to forget.
    let url = format!("{}?keepAlive=300", server.url());
    let client = Client::connect(support::optin::opt_in(url.as_str())).unwrap();
    let db = client.database();
    let blocking_idle = || client.status().nodes[0].blocking_idle;
    let none: Option<(String, String)> = db.blpop("idle:queue", Duration::from_millis(50)).unwrap();
    assert_eq!(none, None);
    assert_eq!(blocking_idle(), 1);
    assert!(wait_until(SOON, || blocking_idle() == 0));
    assert!(wait_until(SOON, || server.connections_open() == 1));
    db.rpush("idle:queue", "job").unwrap();
    let got: Option<(String, String)> = db.blpop("idle:queue", SOON).unwrap();
    assert_eq!(got.map(|(_, v)| v).as_deref(), Some("job"));
    assert_eq!(blocking_idle(), 1, "dialled afresh for the next lease");
    client.close();
}
