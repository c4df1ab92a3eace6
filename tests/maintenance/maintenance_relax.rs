//! Relaxed timeouts against the fake: a command delayed past the normal timeout but
//! inside the relaxed one succeeds while a window is open (also when it was already
//! waiting), and times out again once the window and its tail are over; the backstop
//! ends a window nothing closes, without a tail; and a server that dies inside an
//! absurdly long window is still reported promptly. Each over plain TCP and over TLS
//! (`scenario::tcp`, `scenario::tls`), verification on.

use crate::over_both_transports;
use crate::support;

use std::time::{Duration, Instant};

use resilient_redis::availability::FaultContext;
use resilient_redis::maintenance::NotificationKind;
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeServer, Notification};
use resilient_redis::{ClientEvent, ErrorKind, FailureKind, MaintenanceKind};
use support::maintenance::*;
use support::transport::Transport;

over_both_transports!(
    a_window_relaxes_then_its_tail_then_nothing,
    a_caller_already_waiting_extends_its_wait,
    the_backstop_ends_a_window_nothing_closes_without_a_tail,
    moving_relaxes_an_idle_connection_and_a_killed_one_is_reported_promptly,
    a_hung_server_is_found_by_the_heartbeat_which_is_never_relaxed,
    a_window_also_covers_the_wait_for_the_reconnect,
);

fn connect(t: &Transport, server: &FakeServer, keys: &str) -> Client {
    let url = format!("{}?maintNotifications=enabled&{keys}", server.url());
    Client::connect(t.options(&url)).unwrap()
}

fn expect_event(client_events: &crossbeam_channel::Receiver<ClientEvent>, kind: NotificationKind) {
    let e = next_maintenance(client_events, SOON).expect("a maintenance event");
    assert_eq!(e.kind, kind);
}

fn a_window_relaxes_then_its_tail_then_nothing(t: Transport) {
    let server = t.server();
    // Seconds for the maint* keys, milliseconds for syncTimeout.
    let client = connect(
        &t,
        &server,
        "syncTimeout=400&maintRelaxedTimeout=2&maintPostEventRelaxed=2&maintRelaxedWindowMax=60",
    );
    let events = client.events();
    let db = client.database();
    db.set("k", "v").unwrap();
    server.delay_replies(Some(Duration::from_millis(700)));
    // (Not timed out first: its late reply, held past the dead-connection check on a
    // loaded machine, would close the connection the notification is sent to.)
    server.notify(Notification::migrating(2, &["27"]));
    expect_event(&events, NotificationKind::Migrating);
    assert_eq!(status(&client).in_force, MaintenanceKind::Migrating);
    let started = Instant::now();
    assert_eq!(db.get::<String>("k").unwrap(), "v", "relaxed to 2 s");
    assert!(started.elapsed() >= Duration::from_millis(600));

    server.notify(Notification::migrated(&["27"]));
    expect_event(&events, NotificationKind::Migrated);
    assert_eq!(status(&client).in_force, MaintenanceKind::Settling);
    assert_eq!(
        db.get::<String>("k").unwrap(),
        "v",
        "still relaxed in the tail"
    );

    assert!(wait_in_force(&client, MaintenanceKind::None, SOON));
    let e = db.get::<String>("k").unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::Timeout,
        "the configured 400 ms again: {e}"
    );
    assert_eq!(e.maintenance(), MaintenanceKind::None);
}

fn a_caller_already_waiting_extends_its_wait(t: Transport) {
    let server = t.server();
    let client = connect(&t, &server, "syncTimeout=500&maintRelaxedTimeout=5");
    let events = client.events();
    let db = client.database();
    db.set("k", "v").unwrap();
    // The subscription connection opts in too; the notification reaches it at once,
    // while the interactive one holds it behind the delayed reply (a push never
    // overtakes a reply). One server, one relaxation: the waiting caller sees it.
    let sub = client.subscriber();
    let _s = sub.subscribe("news").unwrap();
    assert!(server.wait_for(
        |s| s.connections().iter().filter(|c| c.opted_in).count() == 2,
        SOON
    ));
    server.delay_replies(Some(Duration::from_millis(1500)));
    let waiting = {
        let db = db.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            (db.get::<String>("k"), started.elapsed())
        })
    };
    assert!(server.wait_for(|s| s.commands_received("GET") >= 1, SOON));
    server.notify(Notification::failing_over(2, &["21"]));
    let (got, took) = waiting.join().unwrap();
    assert_eq!(got.unwrap(), "v");
    assert!(took >= Duration::from_millis(1400), "{took:?}");
    expect_event(&events, NotificationKind::FailingOver);
    // The interactive connection's copy came later: acted on once, raised once.
    server.delay_replies(None);
    db.ping().unwrap();
    assert!(drain_maintenance(&events).is_empty());
}

fn the_backstop_ends_a_window_nothing_closes_without_a_tail(t: Transport) {
    let server = t.server();
    let client = connect(
        &t,
        &server,
        "syncTimeout=300&maintRelaxedTimeout=1&maintRelaxedWindowMax=1.5&maintPostEventRelaxed=30",
    );
    let events = client.events();
    server.notify(Notification::migrating(2, &["27"]));
    expect_event(&events, NotificationKind::Migrating);
    let opened = Instant::now();
    let mut seen = Vec::new();
    assert!(support::wait_until(SOON, || {
        let now = status(&client).in_force;
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        now == MaintenanceKind::None
    }));
    assert!(
        opened.elapsed() >= Duration::from_millis(1300),
        "{:?}",
        opened.elapsed()
    );
    assert_eq!(
        seen,
        vec![MaintenanceKind::Migrating, MaintenanceKind::None],
        "no tail"
    );
    // A late closing notification finds nothing to stand down.
    server.notify(Notification::migrated(&["27"]));
    expect_event(&events, NotificationKind::Migrated);
    assert_eq!(status(&client).in_force, MaintenanceKind::None);
}

fn moving_relaxes_an_idle_connection_and_a_killed_one_is_reported_promptly(t: Transport) {
    let server = t.server();
    // connectTimeout short: the reconnect's handshake meets the delayed replies.
    let client = connect(
        &t,
        &server,
        "syncTimeout=300&connectTimeout=500&maintRelaxedTimeout=3600",
    );
    let events = client.events();
    let db = client.database();
    server.notify(Notification::moving(3600));
    expect_event(&events, NotificationKind::Moving);
    // Relaxed with nothing in flight.
    assert_eq!(status(&client).in_force, MaintenanceKind::Moving);

    server.delay_replies(Some(Duration::from_secs(60)));
    let waiting = {
        let db = db.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            (db.get::<String>("k"), started.elapsed())
        })
    };
    assert!(server.wait_for(|s| s.commands_received("GET") >= 1, SOON));
    server.close_all_connections();
    let (got, took) = waiting.join().unwrap();
    server.delay_replies(None);
    let e = got.unwrap_err();
    assert!(
        took < Duration::from_secs(5),
        "reported promptly, not after the window: {took:?}"
    );
    assert_eq!(e.kind(), ErrorKind::ConnectionClosed, "{e}");
    assert_eq!(e.maintenance(), MaintenanceKind::Moving, "{e}");
    assert_eq!(
        FaultContext::from_error(&e).maintenance,
        MaintenanceKind::Moving
    );
    let failed = (0..20).find_map(|_| match events.recv_timeout(SOON) {
        Ok(ClientEvent::ConnectionFailed { error, .. }) => Some(error),
        _ => None,
    });
    assert_eq!(
        failed.expect("a failure event").maintenance(),
        MaintenanceKind::Moving
    );
    server.delay_replies(None);
}

fn a_hung_server_is_found_by_the_heartbeat_which_is_never_relaxed(t: Transport) {
    let server = t.server();
    let client = connect(
        &t,
        &server,
        "syncTimeout=300&keepAlive=200&connectTimeout=500&maintRelaxedTimeout=3600",
    );
    let events = client.events();
    server.notify(Notification::migrating(3600, &["27"]));
    expect_event(&events, NotificationKind::Migrating);
    let hung = Instant::now();
    server.hang(true);
    let failed = (0..20).find_map(|_| match events.recv_timeout(SOON) {
        Ok(ClientEvent::ConnectionFailed { failure, error, .. }) => Some((failure, error)),
        _ => None,
    });
    let (failure, error) = failed.expect("the heartbeat found the hung server");
    assert!(
        hung.elapsed() < Duration::from_secs(5),
        "{:?}",
        hung.elapsed()
    );
    assert_eq!(failure, FailureKind::Timeout);
    assert_eq!(error.maintenance(), MaintenanceKind::Migrating);
    server.hang(false);
}

fn a_window_also_covers_the_wait_for_the_reconnect(t: Transport) {
    let server = t.server();
    let client = connect(
        &t,
        &server,
        "syncTimeout=300&maintRelaxedTimeout=5&reconnectMin=50&reconnectMax=100",
    );
    let events = client.events();
    let db = client.database();
    db.set("k", "v").unwrap();
    server.notify(Notification::migrating(2, &["27"]));
    expect_event(&events, NotificationKind::Migrating);
    server.refuse_connections(true);
    server.close_all_connections();
    assert!(support::wait_until(SOON, || !client.is_connected()));
    let started = Instant::now();
    let waiting = {
        let db = db.clone();
        std::thread::spawn(move || db.get::<String>("k"))
    };
    // Down for longer than the configured timeout: the backlog waits the relaxed one.
    assert!(support::wait_until(SOON, || started.elapsed() >= Duration::from_millis(800)));
    server.refuse_connections(false);
    assert_eq!(waiting.join().unwrap().unwrap(), "v");
    assert!(started.elapsed() >= Duration::from_millis(800));
    // The window belongs to the server, not the connection: still in force.
    assert_eq!(status(&client).in_force, MaintenanceKind::Migrating);
}
