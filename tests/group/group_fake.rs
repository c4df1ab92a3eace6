//! Availability groups against in-process fakes: hang, close, refuse and error storms
//! move the group and it comes back; the breaker's fast path; pub/sub through a
//! failover. Each over plain TCP and over TLS (both members' certificates from one
//! issuer the group's clients trust, verification on): `scenario::tcp`, `scenario::tls`.

use crate::over_both_transports;
use crate::support;

use std::time::Duration;

use resilient_redis::availability::{
    ChangeReason, CircuitBreaker, Group, GroupEvent, GroupOptions, HealthCheck, Member,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::FakeServer;
use support::optin::opt_in;
use support::transport::Transport;
use support::{events_until, wait_until};

const WAIT: Duration = Duration::from_secs(10);

over_both_transports!(
    a_hung_member_is_left_and_taken_back_when_it_answers_again,
    closed_and_refused_connections_move_the_group_and_it_comes_back,
    an_error_storm_trips_the_breaker_and_the_member_is_flagged_at_once,
    application_errors_do_not_trip_the_breaker,
    pubsub_delivers_from_the_active_member_only_through_a_failover,
    a_subscription_follows_the_guides_migration_add_the_new_region_then_remove_the_old,
    closing_the_group_ends_subscription_iterators_and_callbacks,
);

fn fakes(t: &Transport) -> [FakeServer; 2] {
    [t.server(), t.server()]
}

fn member(t: &Transport, server: &FakeServer, name: &str, weight: u32) -> Member {
    Member::from_options(opt_in(t.options(&format!(
        "{}?syncTimeout=300&connectTimeout=300&reconnectMin=20&reconnectMax=100",
        server.url()
    ))))
    .with_name(name)
    .with_weight(weight)
}

fn options() -> GroupOptions {
    GroupOptions::default().health_check(
        HealthCheck::default()
            .interval(Duration::from_millis(100))
            .probe_count(1)
            .probe_timeout(Duration::from_millis(200))
            .probe_interval(Duration::from_millis(20)),
    )
}

fn active(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

fn group_of(t: &Transport, servers: &[FakeServer; 2], options: GroupOptions) -> Group {
    let g = Group::connect(
        vec![
            member(t, &servers[0], "a", 2),
            member(t, &servers[1], "b", 1),
        ],
        options,
    )
    .unwrap();
    // The first choice when a is up in time; on a loaded machine (a TLS handshake in a
    // debug build is not free) a can come up after connect's grace and take over then.
    assert!(wait_until(WAIT, || active(&g) == "a"), "{}", g.status());
    // And b ready to take over: connect returns once one member serves, and a test
    // that fails a over before b is up sees the group stay on a (nowhere to go) and
    // move only when b comes up, for that reason.
    assert!(
        wait_until(WAIT, || g
            .members()
            .iter()
            .all(|m| m.is_connected() && !m.is_unhealthy())),
        "{}",
        g.status()
    );
    g
}

fn a_hung_member_is_left_and_taken_back_when_it_answers_again(t: Transport) {
    let servers = fakes(&t);
    let group = group_of(&t, &servers, options());
    servers[0].hang(true);
    assert!(wait_until(WAIT, || active(&group) == "b"));
    group.database().set("k", "on-b").unwrap();
    servers[0].hang(false);
    assert!(wait_until(WAIT, || active(&group) == "a"));
}

fn closed_and_refused_connections_move_the_group_and_it_comes_back(t: Transport) {
    let servers = fakes(&t);
    let group = group_of(&t, &servers, options());
    servers[0].refuse_connections(true);
    servers[0].close_all_connections();
    assert!(wait_until(WAIT, || active(&group) == "b"));
    assert!(!group.members()[0].is_connected());
    servers[0].refuse_connections(false);
    assert!(wait_until(WAIT, || active(&group) == "a"));
}

fn an_error_storm_trips_the_breaker_and_the_member_is_flagged_at_once(t: Transport) {
    let servers = fakes(&t);
    let breaker = CircuitBreaker::default()
        .minimum_number_of_failures(20)
        .failure_rate_threshold(10.0);
    // Health checks far apart: only the breaker can move the group this fast.
    let slow_checks = GroupOptions::default()
        .health_check(HealthCheck::default().interval(Duration::from_secs(60)))
        .circuit_breaker(breaker);
    let group = group_of(&t, &servers, slow_checks);
    let events = group.events();
    servers[0].fail_command("SET", "LOADING Redis is loading the dataset in memory");
    let db = group.database();
    let outcomes: Vec<String> = (0..20)
        .map(|_| match db.set("k", "v") {
            Ok(()) => "ok".to_string(),
            Err(e) => e.to_string(),
        })
        .collect();
    assert!(
        wait_until(WAIT, || active(&group) == "b"),
        "{}\n{outcomes:?}\n{:#?}",
        group.status(),
        events.try_iter().collect::<Vec<_>>()
    );
    let seen = events_until(&events, WAIT, |e| {
        matches!(e, GroupEvent::ActiveChanged { .. })
    });
    let reasons: Vec<ChangeReason> = seen
        .clone()
        .into_iter()
        .filter_map(|e| match e {
            GroupEvent::ActiveChanged { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasons.first(),
        Some(&ChangeReason::CircuitBreaker),
        "{seen:#?}"
    );
    assert!(group.members()[0].is_unhealthy());
    db.set("k", "v").unwrap();
}

fn application_errors_do_not_trip_the_breaker(t: Transport) {
    let servers = fakes(&t);
    let breaker = CircuitBreaker::default().minimum_number_of_failures(5);
    let group = group_of(&t, &servers, options().circuit_breaker(breaker));
    let db = group.database();
    db.cmd("LPUSH").arg("list").arg("x").exec().unwrap();
    for _ in 0..50 {
        assert!(db.get::<String>("list").is_err());
    }
    assert_eq!(active(&group), "a");
    assert!(!group.members()[0].is_unhealthy());
}

fn pubsub_delivers_from_the_active_member_only_through_a_failover(t: Transport) {
    let servers = fakes(&t);
    let group = group_of(&t, &servers, options());
    let sub = group.subscriber();
    let s = sub.subscribe("news").unwrap();
    sub.publish("news", "from-a").unwrap();
    assert_eq!(s.recv_timeout(WAIT).unwrap().payload, b"from-a");
    // Straight to the passive member: must not be delivered, now or later.
    let direct_b = Client::connect(opt_in(t.options(&servers[1].url())))
        .unwrap()
        .subscriber();
    assert!(wait_until(WAIT, || direct_b
        .publish("news", "stray")
        .unwrap()
        == 1));
    servers[0].hang(true);
    assert!(wait_until(WAIT, || active(&group) == "b"));
    sub.publish("news", "from-b").unwrap();
    assert_eq!(s.recv_timeout(WAIT).unwrap().payload, b"from-b");
}

fn a_subscription_follows_the_guides_migration_add_the_new_region_then_remove_the_old(
    t: Transport,
) {
    let servers = fakes(&t);
    let old = member(&t, &servers[0], "old", 1);
    let group = Group::connect(vec![old], options()).unwrap();
    let old = group.member("old").unwrap();
    let sub = group.subscriber();
    let s = sub.subscribe("news").unwrap();
    let p = sub.psubscribe("weather.*").unwrap();
    let sharded = sub.ssubscribe("orders").unwrap();
    let new = member(&t, &servers[1], "new", 5);
    group.add(new).unwrap();
    assert!(wait_until(WAIT, || active(&group) == "new"));
    assert!(group.remove(&old));
    // The new member's SUBSCRIBE is confirmed in the background: publish until the
    // subscription there counts (PUBLISH answers the number of receivers).
    assert!(wait_until(WAIT, || sub.publish("news", "after").unwrap() == 1));
    assert_eq!(s.recv_timeout(WAIT).unwrap().payload, b"after");
    assert_eq!(s.kind(), resilient_redis::pubsub::MessageKind::Channel);
    // Patterns and sharded channels were made on the new member too.
    assert!(wait_until(WAIT, || sub
        .publish("weather.paris", "rain")
        .unwrap()
        == 1));
    let m = p.recv_timeout(WAIT).unwrap();
    assert_eq!(
        (m.channel.as_slice(), m.payload.as_slice()),
        (&b"weather.paris"[..], &b"rain"[..])
    );
    assert_eq!(p.kind(), resilient_redis::pubsub::MessageKind::Pattern);
    assert!(wait_until(WAIT, || sub.spublish("orders", "o-1").unwrap() == 1));
    assert_eq!(sharded.recv_timeout(WAIT).unwrap().payload, b"o-1");
    assert_eq!(
        sharded.kind(),
        resilient_redis::pubsub::MessageKind::Sharded
    );
}

fn closing_the_group_ends_subscription_iterators_and_callbacks(t: Transport) {
    let servers = fakes(&t);
    let group = group_of(&t, &servers, options());
    let sub = group.subscriber();
    let s = sub.subscribe("news").unwrap();
    let got = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = got.clone();
    let guard = sub
        .subscribe_with(
            resilient_redis::pubsub::MessageKind::Channel,
            "news",
            move |_| {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            },
        )
        .unwrap();
    sub.publish("news", "one").unwrap();
    assert!(wait_until(WAIT, || got
        .load(std::sync::atomic::Ordering::Relaxed)
        == 1));
    let watcher = std::thread::spawn(move || s.iter().count());
    group.close();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(watcher.join());
    });
    // Messages still queued at the close may be dropped; the iterator must end.
    let ended = rx.recv_timeout(WAIT).expect("the iterator ended on close");
    assert!(ended.is_ok());
    drop(guard);
}
