//! Lanes: with two callers in flight, the second takes a connection of its own beside
//! the shared one; it is covered like the shared one (timeouts, close, breaker).

use crate::support;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use resilient_redis::prelude::*;
use resilient_redis::testkit::FakeServer;
use resilient_redis::ErrorKind;
use support::lanes::two_callers;
use support::optin::opt_in;
use support::wait_until;

const SOON: Duration = Duration::from_secs(10);

/// Default options, but for `extra` (a lane's behaviour under defaults is the point).
fn client(server: &FakeServer, extra: &str) -> Client {
    Client::connect(opt_in(format!("{}?{extra}", server.url()).as_str())).unwrap()
}

fn lanes_open(client: &Client) -> usize {
    client.status().nodes[0].lanes_open
}

/// A fake answering 2 ms late (so two callers are in flight together) and a client
/// with `extra` options whose lane two callers have opened.
fn with_a_lane(extra: &str) -> (FakeServer, Client, Database) {
    let server = FakeServer::start().unwrap();
    server.delay_replies(Some(Duration::from_millis(2)));
    let client = client(&server, extra);
    let db = client.database();
    let probe = client.clone();
    two_callers(&db, move || lanes_open(&probe) == 1);
    (server, client, db)
}

#[test]
fn a_second_caller_in_flight_takes_a_lane_and_every_reply_reaches_its_caller() {
    let server = FakeServer::start().unwrap();
    // Replies 2 ms late: the two callers are in flight together.
    server.delay_replies(Some(Duration::from_millis(2)));
    let client = client(&server, "");
    let db = client.database();
    assert_eq!(lanes_open(&client), 0, "opened only when first wanted");
    let probe = client.clone();
    // Until the lane is open and has carried calls.
    let mut calls = 0;
    while calls < 400 {
        let probe = probe.clone();
        calls += two_callers(&db, move || lanes_open(&probe) == 1);
    }
    assert_eq!(lanes_open(&client), 1);
    assert_eq!(
        server.connections_open(),
        2,
        "the shared connection and one lane"
    );
    let in_flight = client.status().nodes[0].in_flight;
    assert_eq!(in_flight, 0, "nothing counted in flight after the calls");
    client.close();
    assert!(wait_until(SOON, || server.connections_open() == 0));
}

#[test]
fn lanes_zero_keeps_one_connection_per_server() {
    let server = FakeServer::start().unwrap();
    server.delay_replies(Some(Duration::from_millis(2)));
    let client = client(&server, "lanes=0");
    let db = client.database();
    let mut calls = 0;
    while calls < 400 {
        calls += two_callers(&db, || true);
    }
    assert_eq!(lanes_open(&client), 0);
    assert_eq!(server.connections_open(), 1);
    client.close();
}

#[test]
fn a_call_that_times_out_on_a_lane_closes_that_lane_and_nothing_else() {
    let (server, client, db) = with_a_lane("");
    assert!(wait_until(SOON, || server.connections_open() == 2));

    // One caller holds the shared connection with a slow reply while a second one,
    // on the lane, gives up on its own.
    server.delay_replies(Some(Duration::from_millis(600)));
    let slow = {
        let db = db.with_timeout(Duration::from_secs(5));
        thread::spawn(move || db.get::<Option<String>>("lane:0:0"))
    };
    assert!(wait_until(SOON, || client.status().nodes[0].in_flight == 1));
    let hasty = db.with_timeout(Duration::from_millis(100));
    let err = hasty.get::<Option<String>>("lane:1:0").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    // The lane is closed (its late reply must never reach a next caller); the shared
    // connection and its caller are untouched.
    assert!(wait_until(SOON, || lanes_open(&client) == 0));
    assert_eq!(
        slow.join().unwrap().unwrap().as_deref(),
        Some("value-of-lane:0:0")
    );
    server.delay_replies(None);
    assert!(wait_until(SOON, || server.connections_open() == 1));
    assert_eq!(
        db.get::<Option<String>>("lane:1:0").unwrap().as_deref(),
        Some("value-of-lane:1:0")
    );
    client.close();
}

#[test]
fn a_lane_left_idle_for_a_heartbeat_interval_is_closed_and_opened_again_when_wanted() {
    let (server, client, db) = with_a_lane("keepAlive=300");
    // No heartbeat keeps an idle lane's flow alive: it is closed instead.
    assert!(wait_until(SOON, || lanes_open(&client) == 0));
    assert!(wait_until(SOON, || server.connections_open() == 1));
    db.ping().unwrap();
    let probe = client.clone();
    two_callers(&db, move || lanes_open(&probe) == 1);
    assert_eq!(lanes_open(&client), 1);
    client.close();
}

#[test]
fn new_credentials_close_a_lane_on_the_old_ones_and_the_next_lane_uses_the_new() {
    use resilient_redis::config::{Credentials, Protocol, RotatingCredentials};
    use support::credentials::{acl, client_with};
    let Some(server) = support::RedisServer::start() else {
        return;
    };
    let admin = Client::connect(server.url().as_str()).unwrap().database();
    acl(
        &admin,
        &["SETUSER", "app", "on", ">first-pw", "~*", "+@all"],
    );
    let current = RotatingCredentials::new(Credentials::user("app", "first-pw"));
    let client = client_with(&server.addr(), Arc::new(current.clone()), Protocol::Resp3);
    let db = client.database();
    let probe = client.clone();
    two_callers(&db, move || lanes_open(&probe) == 1);

    acl(&admin, &["SETUSER", "app", ">second-pw"]);
    current.set(Credentials::user("app", "second-pw"));
    // Re-authentication reaches the idle lane by closing it.
    assert!(wait_until(SOON, || lanes_open(&client) == 0));
    acl(&admin, &["SETUSER", "app", "<first-pw"]);
    // A lane opened now authenticates with the new password (the old one is gone).
    let probe = client.clone();
    two_callers(&db, move || lanes_open(&probe) == 1);
    assert_eq!(lanes_open(&client), 1);
    client.close();
}

#[test]
fn a_command_blocked_on_the_server_does_not_keep_two_callers_from_a_lane_each() {
    let server = FakeServer::start().unwrap();
    server.delay_replies(Some(Duration::from_millis(2)));
    let client = client(&server, "");
    let db = client.database();
    // A BLPOP waits on its own dedicated connection for as long as the server blocks.
    let blocked = {
        let db = db.clone();
        thread::spawn(move || db.blpop::<Option<(String, String)>>("lane:queue", SOON))
    };
    assert!(wait_until(SOON, || server.connections_open() == 2));
    let probe = client.clone();
    two_callers(&db, move || lanes_open(&probe) == 1);
    assert_eq!(lanes_open(&client), 1);
    db.rpush("lane:queue", "x").unwrap();
    let popped = blocked.join().unwrap().unwrap();
    assert_eq!(popped, Some(("lane:queue".to_string(), "x".to_string())));
    client.close();
}
