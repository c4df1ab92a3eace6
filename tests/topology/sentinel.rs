//! Redis Sentinel against real processes: a primary, a replica and three sentinels on
//! loopback ports. Under load from several threads, with the default options and the
//! default retry policy: the primary killed, a graceful `SENTINEL FAILOVER`, the old
//! primary back as a replica.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use resilient_redis::availability::RetryPolicy;
use resilient_redis::prelude::*;
use resilient_redis::Endpoint;
use support::optin::opt_in;
use support::sentinel::{client_names, replica_pair, role, SentinelSetup, SwitchWatch};
use support::wait_until;

/// Writers on several threads, each counting successes and failures and noting when
/// each write succeeded.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    successes: Arc<Mutex<Vec<Instant>>>,
    errors: Arc<Mutex<Vec<String>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    fn start(db: &Database, writers: usize, prefix: &'static str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let successes = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..writers)
            .map(|t| {
                let (db, stop, ok, failed) = (db.clone(), stop.clone(), ok.clone(), failed.clone());
                let (successes, errors) = (successes.clone(), errors.clone());
                thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        match db.set(format!("{prefix}:{t}:{i}"), i) {
                            Ok(()) => {
                                ok.fetch_add(1, Ordering::Relaxed);
                                successes.lock().unwrap().push(Instant::now());
                            }
                            Err(e) => {
                                failed.fetch_add(1, Ordering::Relaxed);
                                errors.lock().unwrap().push(e.to_string());
                            }
                        }
                        thread::sleep(Duration::from_millis(5));
                    }
                })
            })
            .collect();
        Load {
            stop,
            ok,
            failed,
            successes,
            errors,
            threads,
        }
    }

    fn ok(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    /// The first success at or after `t`.
    fn first_success_after(&self, t: Instant) -> Option<Instant> {
        self.successes
            .lock()
            .unwrap()
            .iter()
            .copied()
            .filter(|s| *s >= t)
            .min()
    }

    fn finish(mut self) -> (u64, u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
        let errors = std::mem::take(&mut *self.errors.lock().unwrap());
        (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            errors,
        )
    }
}

fn connect(setup: &SentinelSetup, name: &str) -> Client {
    let client = Client::connect(opt_in(format!(
        "{},name={name}",
        sentinel_option_string(setup)
    )))
    .expect("connect through the sentinels");
    assert!(client.is_connected());
    assert!(!client.is_cluster());
    client
}

fn sentinel_option_string(setup: &SentinelSetup) -> String {
    format!("{},serviceName=mymaster", setup.sentinel_list())
}

#[test]
fn the_url_form_connects_to_the_primary_the_sentinels_name() {
    let Some(setup) = SentinelSetup::start() else {
        return;
    };
    let client = Client::connect(opt_in(format!("{}?name=rr-url", setup.url()))).unwrap();
    let db = client.database();
    db.set("via-url", "yes").unwrap();
    assert_eq!(
        db.get::<Option<String>>("via-url").unwrap().as_deref(),
        Some("yes")
    );
    assert_eq!(
        support::endpoints(&client),
        vec![Endpoint::new("127.0.0.1", setup.primary.port)]
    );
    // The write went to the primary (a replica would have refused it).
    assert!(client_names(setup.primary.port).contains(&"rr-url".to_string()));
    client.close();
}

#[test]
fn a_killed_primary_is_followed_to_the_promoted_replica_and_the_old_one_gets_no_write() {
    let Some(mut setup) = SentinelSetup::start() else {
        return;
    };
    let (old_port, new_port) = (setup.primary.port, setup.replica.port);
    let watch = SwitchWatch::start(setup.sentinels[0].port);
    let client = connect(&setup, "rr-kill");
    let db = client
        .database()
        .with_retry(RetryPolicy::default())
        .unwrap();
    let load = Load::start(&db, 4, "kill");
    assert!(wait_until(Duration::from_secs(5), || load.ok() > 50));

    let killed_at = Instant::now();
    setup.primary.kill();
    assert!(
        wait_until(Duration::from_secs(20), || watch.first().is_some()),
        "the sentinels never announced a new primary"
    );
    let (announced_at, line) = watch.first().unwrap();
    assert!(line.ends_with(&format!("127.0.0.1 {new_port}")), "{line}");
    assert!(
        wait_until(Duration::from_secs(10), || load
            .first_success_after(announced_at)
            .is_some()),
        "no write succeeded after the switch"
    );
    let first = load.first_success_after(announced_at).unwrap();
    let after_announce = first.saturating_duration_since(announced_at);
    let after_kill = first.saturating_duration_since(killed_at);
    eprintln!(
        "MEASURED kill: sentinels announced after {:?}; first write on the new primary {:?} after the announcement ({:?} after the kill)",
        announced_at - killed_at,
        after_announce,
        after_kill
    );
    // ~1 s is the goal; loose for a busy 2-core machine.
    assert!(
        after_announce < Duration::from_secs(3),
        "{after_announce:?}"
    );
    assert_eq!(role(new_port), "master");

    // The old primary comes back, empty and claiming to be a master until the
    // sentinels reconfigure it (they wait ~8 s of its reports before they do): the
    // client never connects to it, so it never receives a write.
    setup.primary.restart();
    assert!(wait_until(Duration::from_secs(10), || !role(old_port).is_empty()));
    let before = load.ok();
    let back = Instant::now();
    let mut moved_back = false;
    while back.elapsed() < Duration::from_secs(3) {
        if client_names(old_port).contains(&"rr-kill".to_string()) {
            // Correct only when the sentinels themselves made it the primary again
            // (seen once on a heavily loaded machine: a second failover 2.2 s after
            // the first, to the restarted node): the client follows their word.
            let back_to_old = format!("127.0.0.1 {old_port}");
            let switches = watch.announced.lock().unwrap().clone();
            let named_now = setup.sentinels.iter().any(|s| {
                support::sentinel::sentinel_cli(
                    s.port,
                    &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"],
                )
                .is_some_and(|out| out.lines().last() == Some(&old_port.to_string()))
            });
            if named_now || switches.iter().any(|(_, l)| l.ends_with(&back_to_old)) {
                eprintln!(
                    "MEASURED kill: the sentinels promoted the old primary again: {switches:?}"
                );
                moved_back = true;
                break;
            }
            let list = support::sentinel::client_list(old_port);
            let logs: Vec<String> = setup.sentinels.iter().map(|s| s.log()).collect();
            panic!(
                "the client connected to the old primary {:?} after its restart, though no \
                 sentinel announced it: {list}\nannounced: {switches:?}\nsentinel logs:\n{}",
                back.elapsed(),
                logs.join("\n-----\n")
            );
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert!(
        load.ok() > before,
        "writes stopped while the old primary was back"
    );
    let (ok, failed, errors) = load.finish();
    eprintln!("MEASURED kill: {ok} writes ok, {failed} failed: {errors:?}");
    let primary_port = if moved_back { old_port } else { new_port };
    assert!(client_names(primary_port).contains(&"rr-kill".to_string()));
    assert_eq!(
        support::endpoints(&client),
        vec![Endpoint::new("127.0.0.1", primary_port)],
        "only the primary is dialed (no replica reads asked)"
    );
    client.close();
}

#[test]
fn a_graceful_sentinel_failover_costs_no_failed_call() {
    let Some(setup) = SentinelSetup::start() else {
        return;
    };
    let new_port = setup.replica.port;
    let watch = SwitchWatch::start(setup.sentinels[1].port);
    let client = connect(&setup, "rr-graceful");
    let db = client
        .database()
        .with_retry(RetryPolicy::default())
        .unwrap();
    let load = Load::start(&db, 4, "graceful");
    assert!(wait_until(Duration::from_secs(5), || load.ok() > 50));

    let started = Instant::now();
    let out = support::sentinel::sentinel_cli(
        setup.sentinels[0].port,
        &["SENTINEL", "FAILOVER", "mymaster"],
    );
    assert_eq!(out.as_deref(), Some("OK"));
    assert!(
        wait_until(Duration::from_secs(20), || watch.first().is_some()),
        "the sentinels never announced the switch"
    );
    let (announced_at, _) = watch.first().unwrap();
    assert!(wait_until(Duration::from_secs(10), || load
        .first_success_after(announced_at)
        .is_some()));
    let first = load.first_success_after(announced_at).unwrap();
    // Keep writing a while on the new primary (the old one is reconfigured as its
    // replica meanwhile).
    let before = load.ok();
    assert!(wait_until(Duration::from_secs(10), || load.ok() > before + 100));
    let (ok, failed, errors) = load.finish();
    eprintln!(
        "MEASURED graceful: announced {:?} after SENTINEL FAILOVER; first write after it {:?} later; {ok} ok, {failed} failed",
        announced_at - started,
        first.saturating_duration_since(announced_at)
    );
    assert_eq!(failed, 0, "failed calls: {errors:?}");
    assert!(client_names(new_port).contains(&"rr-graceful".to_string()));
    client.close();
}

// ---- Several endpoints of one primary/replica deployment, no sentinel ----

#[test]
fn several_endpoints_route_writes_to_the_primary_whatever_their_order() {
    let Some((primary, replica)) = replica_pair() else {
        return;
    };
    // The replica first: a client pinned to the first that answers would meet
    // -READONLY on every write.
    let client = Client::connect(opt_in(format!(
        "{},{},name=rr-order",
        replica.addr(),
        primary.addr()
    )))
    .unwrap();
    let db = client.database();
    for i in 0..20 {
        db.set(format!("order:{i}"), i).unwrap();
    }
    assert!(client_names(primary.port).contains(&"rr-order".to_string()));
    assert!(client.is_connected());
    client.close();
}

#[test]
fn a_promotion_by_replicaof_no_one_is_followed_without_failed_calls() {
    let Some((primary, replica)) = replica_pair() else {
        return;
    };
    let client = Client::connect(opt_in(format!("{},{}", primary.addr(), replica.addr()))).unwrap();
    let db = client
        .database()
        .with_retry(RetryPolicy::default())
        .unwrap();
    let load = Load::start(&db, 4, "promote");
    assert!(wait_until(Duration::from_secs(5), || load.ok() > 50));
    // A manual switch: the replica promoted, then the old primary made its replica.
    let switched = Instant::now();
    support::cluster::cli(replica.port, &["REPLICAOF", "NO", "ONE"]);
    let new_port = replica.port.to_string();
    support::cluster::cli(primary.port, &["REPLICAOF", "127.0.0.1", &new_port]);
    let before = load.ok();
    assert!(wait_until(Duration::from_secs(10), || load.ok() > before + 100));
    let (ok, failed, errors) = load.finish();
    eprintln!(
        "MEASURED promotion: {ok} ok, {failed} failed, {:?} for 100 writes after the switch",
        switched.elapsed()
    );
    assert_eq!(failed, 0, "{errors:?}");
    // A write now lands on the new primary (a replica would have refused it).
    client.database().set("after-switch", "yes").unwrap();
    assert_eq!(role(replica.port), "master");
    assert_eq!(
        support::cluster::cli(replica.port, &["GET", "after-switch"]),
        "yes"
    );
    client.close();
}

#[test]
fn a_killed_primary_is_left_for_the_replica_an_operator_promotes() {
    let Some((mut primary, replica)) = replica_pair() else {
        return;
    };
    let client = Client::connect(opt_in(format!("{},{}", primary.addr(), replica.addr()))).unwrap();
    let db = client.database();
    db.set("before", 1).unwrap();
    primary.kill();
    // A write sent before the loss is noticed would fail (it may have been sent).
    assert!(wait_until(Duration::from_secs(5), || !client.is_connected()));
    // Nobody is primary now: writes wait (their timeout) for one.
    let waiter = {
        let db = db.clone();
        thread::spawn(move || db.set("during", 2))
    };
    thread::sleep(Duration::from_millis(300));
    let promoted = Instant::now();
    support::cluster::cli(replica.port, &["REPLICAOF", "NO", "ONE"]);
    waiter
        .join()
        .unwrap()
        .expect("the waiting write lands on the promoted replica");
    eprintln!(
        "MEASURED manual promotion followed in {:?}",
        promoted.elapsed()
    );
    assert_eq!(support::cluster::cli(replica.port, &["GET", "during"]), "2");
    client.close();
}

// ---- A Sentinel service as a member of a group ----

#[test]
fn a_sentinel_member_of_a_group_fails_over_inside_itself() {
    use resilient_redis::availability::{Group, GroupOptions, Member};
    let Some(mut setup) = SentinelSetup::start() else {
        return;
    };
    let new_port = setup.replica.port;
    let watch = SwitchWatch::start(setup.sentinels[2].port);
    let group = Group::connect(
        vec![Member::new(opt_in(format!("{}?name=rr-member", setup.url()))).with_name("region")],
        GroupOptions::default(),
    )
    .expect("the group connects its sentinel member");
    let db = group.database().with_retry(RetryPolicy::default()).unwrap();
    assert!(wait_until(Duration::from_secs(10), || db
        .set("m", 1)
        .is_ok()));
    let load = Load::start(&db, 2, "member");
    assert!(wait_until(Duration::from_secs(5), || load.ok() > 20));
    setup.primary.kill();
    assert!(wait_until(Duration::from_secs(20), || watch
        .first()
        .is_some()));
    let (announced_at, _) = watch.first().unwrap();
    assert!(
        wait_until(Duration::from_secs(15), || load
            .first_success_after(announced_at)
            .is_some()),
        "the group's writes never reached the promoted replica"
    );
    let first = load.first_success_after(announced_at).unwrap();
    eprintln!(
        "MEASURED group member: first write {:?} after the announcement",
        first.saturating_duration_since(announced_at)
    );
    let (ok, failed, _) = load.finish();
    eprintln!("MEASURED group member: {ok} ok, {failed} failed");
    assert!(client_names(new_port).contains(&"rr-member".to_string()));
    group.close();
}

/// A region that fails over inside itself first: the group holds its Sentinel member
/// for its local-failover grace instead of moving traffic to the other region, and
/// writes reach the promoted replica with no failed call and no change of member.
#[test]
fn a_sentinel_member_is_held_while_its_region_fails_over_and_the_group_stays() {
    use resilient_redis::availability::{Group, GroupEvent, GroupOptions, Member};
    let Some(mut setup) = SentinelSetup::start() else {
        return;
    };
    let Some(other) = support::RedisServer::start() else {
        return;
    };
    let watch = SwitchWatch::start(setup.sentinels[2].port);
    let group = Group::connect(
        vec![
            Member::new(opt_in(setup.url()))
                .with_name("region")
                .with_weight(10)
                .with_local_failover(Duration::from_secs(15)),
            Member::new(opt_in(other.addr()))
                .with_name("elsewhere")
                .with_weight(1),
        ],
        GroupOptions::default(),
    )
    .expect("the group connects");
    assert_eq!(
        group.active().map(|m| m.name().to_string()).as_deref(),
        Some("region")
    );
    let events = group.events();
    let db = group.database().with_retry(RetryPolicy::default()).unwrap();
    let load = Load::start(&db, 2, "held");
    assert!(wait_until(Duration::from_secs(5), || load.ok() > 20));
    setup.primary.kill();
    assert!(wait_until(Duration::from_secs(20), || watch
        .first()
        .is_some()));
    let (announced_at, _) = watch.first().unwrap();
    assert!(
        wait_until(Duration::from_secs(15), || load
            .first_success_after(announced_at)
            .is_some()),
        "writes never reached the promoted replica"
    );
    let (_, failed, errors) = load.finish();
    assert_eq!(failed, 0, "{errors:?}");
    let moved: Vec<GroupEvent> = events
        .try_iter()
        .filter(|e| matches!(e, GroupEvent::ActiveChanged { .. }))
        .collect();
    assert!(moved.is_empty(), "traffic left the region: {moved:?}");
    group.close();
}

// ---- Against the testkit's fake sentinel (no processes) ----

mod fake {
    use super::*;
    use resilient_redis::testkit::{FakeSentinel, FakeServer};
    use resilient_redis::ErrorKind;

    fn opts(sentinels: &[&FakeSentinel], service: &str, extra: &str) -> String {
        let list: Vec<String> = sentinels.iter().map(|s| s.addr().to_string()).collect();
        format!("{},serviceName={service}{extra}", list.join(","))
    }

    /// Writes until one lands on `server` (or the deadline); how long it took.
    fn until_writes_reach(db: &Database, server: &FakeServer) -> Option<Duration> {
        let start = Instant::now();
        wait_until(Duration::from_secs(10), || {
            let _ = db.set("k", "v");
            server.commands_received("SET") > 0
        })
        .then(|| start.elapsed())
    }

    #[test]
    fn a_switch_master_announcement_is_followed_at_once() {
        let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
        let s = FakeSentinel::start("svc", a.addr()).unwrap();
        let client = Client::connect(opt_in(opts(&[&s], "svc", ""))).unwrap();
        let db = client.database();
        db.set("k", "v").unwrap();
        assert_eq!(a.commands_received("SET"), 1);
        assert!(wait_until(Duration::from_secs(5), || s.subscribers() == 1));
        s.switch_master(b.addr());
        let took = until_writes_reach(&db, &b).expect("the client followed the switch");
        eprintln!("MEASURED fake: writes on the new primary {took:?} after +switch-master");
        assert!(took < Duration::from_secs(2), "{took:?}");
        // The old primary's node is dropped at the next check.
        let only_b = vec![Endpoint::new("127.0.0.1", b.port())];
        assert!(wait_until(Duration::from_secs(5), || support::endpoints(
            &client
        ) == only_b));
        let on_a = a.commands_received("SET");
        for _ in 0..10 {
            db.set("k", "v").unwrap();
        }
        assert_eq!(
            a.commands_received("SET"),
            on_a,
            "a write went to the old primary"
        );
        client.close();
    }

    #[test]
    fn a_sentinel_down_wrong_or_ignorant_is_skipped() {
        let a = FakeServer::start().unwrap();
        let down = FakeSentinel::start("svc", a.addr()).unwrap();
        let down_addr = down.addr();
        down.shutdown();
        let broken = FakeSentinel::start("svc", a.addr()).unwrap();
        broken.break_answers(true);
        let ignorant = FakeSentinel::start("svc", a.addr()).unwrap();
        ignorant.forget_service(true);
        let good = FakeSentinel::start("svc", a.addr()).unwrap();
        let client = Client::connect(opt_in(format!(
            "{down_addr},{},{},{},serviceName=svc",
            broken.addr(),
            ignorant.addr(),
            good.addr()
        )))
        .unwrap();
        client.database().set("k", "v").unwrap();
        assert_eq!(a.commands_received("SET"), 1);
        assert!(broken.queries() > 0 && ignorant.queries() > 0 && good.queries() > 0);
        client.close();

        // No sentinel can name the primary: a classified error, not a panic.
        let e = Client::connect(opt_in(opts(
            &[&broken, &ignorant],
            "svc",
            ",connectTimeout=500",
        )))
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        assert!(e.to_string().contains("sentinel"), "{e}");
    }

    #[test]
    fn a_readonly_reply_asks_the_sentinels_again_when_the_announcement_was_missed() {
        let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
        let s = FakeSentinel::start("svc", a.addr()).unwrap();
        let client = Client::connect(opt_in(opts(&[&s], "svc", ""))).unwrap();
        let db = client.database();
        db.set("k", "v").unwrap();
        // The switch happened, but no announcement reached the client: the old primary
        // (now a replica) refuses writes.
        s.set_primary(b.addr());
        a.fail_command(
            "SET",
            "READONLY You can't write against a read only replica.",
        );
        let start = Instant::now();
        db.set("k", "v")
            .expect("re-routed after -READONLY, not failed");
        eprintln!(
            "MEASURED fake: -READONLY re-routed in {:?}",
            start.elapsed()
        );
        assert_eq!(b.commands_received("SET"), 1);
        client.close();
    }

    #[test]
    fn readonly_from_every_node_is_not_a_loop() {
        let a = FakeServer::builder().role_replica().start().unwrap();
        let s = FakeSentinel::start("svc", a.addr()).unwrap();
        let client = Client::connect(opt_in(opts(&[&s], "svc", ""))).unwrap();
        let db = client.database();
        let before = s.queries();
        let start = Instant::now();
        let e = db.set("k", "v").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
        // Bounded: a few re-routes with back-off, then the reply goes to the caller.
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        assert!(
            a.commands_received("SET") <= 4,
            "{}",
            a.commands_received("SET")
        );
        assert!(
            s.queries() - before < 50,
            "{} queries",
            s.queries() - before
        );
        client.close();
    }

    #[test]
    fn the_sentinel_list_is_kept_current_and_the_subscription_moves() {
        let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
        let s1 = FakeSentinel::start("svc", a.addr()).unwrap();
        let s2 = FakeSentinel::start("svc", a.addr()).unwrap();
        // Only s1 is configured; it names s2.
        s1.set_sentinels(vec![s2.addr()]);
        let client = Client::connect(opt_in(opts(&[&s1], "svc", ""))).unwrap();
        let db = client.database();
        db.set("k", "v").unwrap();
        assert!(wait_until(Duration::from_secs(5), || s1.subscribers() == 1));
        s1.shutdown();
        assert!(
            wait_until(Duration::from_secs(5), || s2.subscribers() == 1),
            "the subscription did not move to the sentinel s1 named"
        );
        s2.switch_master(b.addr());
        assert!(until_writes_reach(&db, &b).is_some());
        client.close();
    }

    #[test]
    fn replicas_serve_reads_when_asked() {
        let (a, r) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
        let s = FakeSentinel::start("svc", a.addr()).unwrap();
        s.set_replicas(vec![r.addr()]);
        let client = Client::connect(opt_in(opts(&[&s], "svc", ",replicaReads=true"))).unwrap();
        let db = client.database();
        db.set("k", "v").unwrap();
        assert!(wait_until(Duration::from_secs(5), || {
            let _ = db.get::<Option<String>>("k");
            r.commands_received("GET") > 0
        }));
        assert_eq!(r.commands_received("SET"), 0, "a write reached the replica");
        client.close();
    }

    #[test]
    fn sentinel_credentials_are_sent_and_never_shown() {
        const SECRET: &str = "Sentinel-S3cret-777";
        let a = FakeServer::start().unwrap();
        let s = FakeSentinel::start_with("svc", a.addr(), Some(SECRET)).unwrap();
        let client = Client::connect(opt_in(opts(
            &[&s],
            "svc",
            &format!(",sentinelPassword={SECRET}"),
        )))
        .unwrap();
        client.database().set("k", "v").unwrap();
        assert!(!format!("{client:?}").contains(SECRET));
        assert!(!client.options().to_string().contains(SECRET));
        client.close();
        let e = Client::connect(opt_in(opts(&[&s], "svc", ",sentinelPassword=wrong-Pl0ver")))
            .unwrap_err();
        assert!(!e.to_string().contains("Pl0ver") && !format!("{e:?}").contains("Pl0ver"));
    }

    #[test]
    fn close_ends_the_sentinel_worker_and_its_connections() {
        let a = FakeServer::start().unwrap();
        let s = FakeSentinel::start("leak", a.addr()).unwrap();
        let client = Client::connect(opt_in(opts(&[&s], "leak", ""))).unwrap();
        client.database().set("k", "v").unwrap();
        assert!(wait_until(Duration::from_secs(5), || s.subscribers() == 1));
        assert_eq!(support::threads_named("rr-sentinel lea").len(), 1);
        drop(client);
        assert!(
            wait_until(Duration::from_secs(5), || support::threads_named(
                "rr-sentinel lea"
            )
            .is_empty()),
            "the rr-sentinel worker outlived the client"
        );
        // Its subscription was closed too (the fake sees the socket end).
        s.switch_master(a.addr());
        assert!(wait_until(Duration::from_secs(5), || {
            s.switch_master(a.addr());
            s.subscribers() == 0
        }));
    }

    #[test]
    fn several_servers_without_role_keep_working_on_the_first() {
        // Proxies and test doubles have no ROLE: the client stays on the first that
        // answered, as it did before it read roles.
        let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
        let client = Client::connect(opt_in(format!("{},{}", a.addr(), b.addr()))).unwrap();
        let db = client.database();
        for _ in 0..5 {
            db.set("k", "v").unwrap();
        }
        assert_eq!(
            (a.commands_received("SET"), b.commands_received("SET")),
            (5, 0)
        );
        client.close();
    }

    #[test]
    fn readonly_everywhere_without_sentinel_is_not_a_loop_either() {
        let a = FakeServer::builder().role_replica().start().unwrap();
        let b = FakeServer::builder().role_replica().start().unwrap();
        let client = Client::connect(opt_in(format!("{},{}", a.addr(), b.addr()))).unwrap();
        let db = client.database();
        let start = Instant::now();
        let e = db.set("k", "v").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
        let sets = a.commands_received("SET") + b.commands_received("SET");
        assert!(sets <= 4, "{sets} attempts");
        client.close();
    }
}
