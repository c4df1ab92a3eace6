//! Maintenance notifications from the fake, as measured on Redis Enterprise: who gets
//! them, their exact bytes, one sequence counter, MOVING's window and close, the
//! re-sent MOVING, and the replay of the retained completion right after `+OK`.

use crate::support;

use std::io::Read;
use std::time::{Duration, Instant};

use resilient_redis::resp::Value;
use resilient_redis::testkit::{FakeServer, Notification};
use support::raw::{b, frame, ok, push_items, Raw};

fn pong() -> Value {
    Value::SimpleString("PONG".into())
}

/// Reads exactly `expected.len()` bytes and compares them.
fn expect_bytes(r: &mut Raw, expected: &[u8]) {
    r.stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = vec![0u8; expected.len()];
    r.stream.read_exact(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected)
    );
}

#[test]
fn a_broadcast_reaches_every_opted_in_connection_and_no_other() {
    let server = FakeServer::start().unwrap();
    let mut opted: Vec<Raw> = (0..3).map(|_| Raw::opted_in(server.addr())).collect();
    let mut plain3 = Raw::resp3(server.addr());
    let mut plain2 = Raw::connect(server.addr());
    // Opted in over RESP2: recorded, but notifications are RESP3 push frames only.
    let mut resp2_opted = Raw::connect(server.addr());
    assert_eq!(
        resp2_opted.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]),
        ok()
    );
    assert_eq!(
        server.connections().iter().filter(|c| c.opted_in).count(),
        4
    );

    let id = server.notify(Notification::migrating(2, &["27"]));
    assert_eq!(id, 0);
    for r in &mut opted {
        let f = r.read();
        assert_eq!(
            f,
            Value::Push(vec![
                b("MIGRATING"),
                Value::Int(0),
                Value::Int(2),
                b("[\"27\"]")
            ])
        );
    }
    // Had anything been sent to these, it would arrive before the PONG.
    assert_eq!(plain3.cmd(&["PING"]), pong());
    assert_eq!(plain2.cmd(&["PING"]), pong());
    assert_eq!(resp2_opted.cmd(&["PING"]), pong());
}

#[test]
fn frames_are_byte_for_byte_the_captured_shapes_with_one_shared_counter() {
    let server = FakeServer::start().unwrap();
    server.set_moving_slack(Duration::from_secs(60));
    let mut r = Raw::opted_in(server.addr());
    assert_eq!(server.notify(Notification::migrating(2, &["27"])), 0);
    expect_bytes(
        &mut r,
        b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n",
    );
    assert_eq!(server.notify(Notification::migrated(&["27"])), 1);
    expect_bytes(&mut r, b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(server.notify(Notification::failing_over(2, &["21"])), 2);
    expect_bytes(
        &mut r,
        b">4\r\n$12\r\nFAILING_OVER\r\n:2\r\n:2\r\n$6\r\n[\"21\"]\r\n",
    );
    assert_eq!(server.notify(Notification::failed_over(&["21"])), 3);
    expect_bytes(
        &mut r,
        b">3\r\n$11\r\nFAILED_OVER\r\n:3\r\n$6\r\n[\"21\"]\r\n",
    );
    let slots = Notification::SMigrating {
        slots: "8892-8991".into(),
    };
    assert_eq!(server.notify(slots), 4);
    expect_bytes(
        &mut r,
        b">3\r\n$10\r\nSMIGRATING\r\n:4\r\n$9\r\n8892-8991\r\n",
    );
    let done = Notification::SMigrated {
        triplets: vec![(
            // Of the captured lengths: a 20-byte source and an 18-byte target.
            "10.100.200.214:12345".into(),
            "10.0.101.214:12346".into(),
            "8892-8991".into(),
        )],
    };
    assert_eq!(server.notify(done), 5);
    expect_bytes(
        &mut r,
        b">3\r\n$9\r\nSMIGRATED\r\n:5\r\n*1\r\n*3\r\n$20\r\n10.100.200.214:12345\r\n$18\r\n10.0.101.214:12346\r\n$9\r\n8892-8991\r\n",
    );
    assert_eq!(server.notify(Notification::moving(15)), 6);
    expect_bytes(&mut r, b">4\r\n$6\r\nMOVING\r\n:6\r\n:15\r\n_\r\n");
    let named = Notification::Moving {
        seconds: 15,
        endpoint: Some("10.0.0.9:6379".into()),
    };
    assert_eq!(server.notify(named), 7);
    expect_bytes(
        &mut r,
        b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n$13\r\n10.0.0.9:6379\r\n",
    );
}

#[test]
fn moving_closes_every_connection_after_the_window_plus_slack() {
    let server = FakeServer::start().unwrap();
    server.set_moving_slack(Duration::from_millis(200));
    let mut opted = Raw::opted_in(server.addr());
    let mut plain = Raw::connect(server.addr());
    assert_eq!(plain.cmd(&["PING"]), pong());
    let sent = Instant::now();
    let id = server.notify(Notification::moving(1));
    assert_eq!(
        opted.read(),
        Value::Push(vec![
            b("MOVING"),
            Value::Int(id as i64),
            Value::Int(1),
            Value::Nil
        ])
    );
    assert!(server.moving_window_open());
    // Still served during the window.
    assert_eq!(plain.cmd(&["PING"]), pong());
    assert!(opted.closed_within(Duration::from_secs(5)));
    assert!(plain.closed_within(Duration::from_secs(5)));
    let took = sent.elapsed();
    assert!(
        took >= Duration::from_millis(1150),
        "closed early: {took:?}"
    );
    assert!(server.wait_for(|s| s.connections_open() == 0, Duration::from_secs(2)));
    assert!(!server.moving_window_open());
    // New connections are accepted after the close.
    let mut again = Raw::connect(server.addr());
    assert_eq!(again.cmd(&["PING"]), pong());
}

#[test]
fn moving_is_re_sent_with_the_same_id_to_connections_that_opt_in_during_the_window() {
    let server = FakeServer::start().unwrap();
    server.set_moving_slack(Duration::from_millis(100));
    let id = server.notify(Notification::moving(2));
    let mut late = Raw::resp3(server.addr());
    late.send(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]);
    let chunk = late.read_one_chunk();
    assert_eq!(chunk[0], ok());
    let items = push_items(&chunk[1]);
    assert_eq!(items[0], b("MOVING"));
    assert_eq!(items[1], Value::Int(id as i64), "same event, same id");
    assert_eq!(items[3], Value::Nil);
    assert!(late.closed_within(Duration::from_secs(5)));
    // After the window: no MOVING on opt-in.
    let mut after = Raw::resp3(server.addr());
    assert_eq!(after.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]), ok());
    assert_eq!(after.cmd(&["PING"]), pong());
}

#[test]
fn the_retained_completion_is_replayed_right_after_ok_in_the_same_read() {
    let server = FakeServer::start().unwrap();
    // Nobody is connected: the notification is only retained.
    server.notify(Notification::migrating(2, &["27"]));
    let migrated = server.notify(Notification::migrated(&["27"]));
    let mut r = Raw::resp3(server.addr());
    r.send(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]);
    let chunk = r.read_one_chunk();
    assert_eq!(
        chunk,
        vec![
            ok(),
            Value::Push(vec![
                b("MIGRATED"),
                Value::Int(migrated as i64),
                b("[\"27\"]")
            ])
        ],
        "+OK and the replay in one read"
    );
    // Most recent replaces: FAILED_OVER now; opening kinds are never replayed.
    server.notify(Notification::failing_over(2, &["21"]));
    let failed_over = server.notify(Notification::failed_over(&["21"]));
    server.notify(Notification::SMigrating {
        slots: "1-2".into(),
    });
    let mut r = Raw::resp3(server.addr());
    // Pipelined with HELLO, as the client's handshake does.
    let mut both = frame(&["PING"]);
    both.extend(frame(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]));
    r.send_bytes(&both);
    assert_eq!(r.read(), pong());
    assert_eq!(r.read(), ok());
    assert_eq!(
        r.read(),
        Value::Push(vec![
            b("FAILED_OVER"),
            Value::Int(failed_over as i64),
            b("[\"21\"]")
        ])
    );
    assert_eq!(r.cmd(&["PING"]), pong(), "exactly one replay");
    server.clear_retained();
    let mut r = Raw::resp3(server.addr());
    assert_eq!(r.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]), ok());
    assert_eq!(r.cmd(&["PING"]), pong());
}

#[test]
fn raw_and_malformed_frames_go_to_opted_in_connections_as_is() {
    let server = FakeServer::start().unwrap();
    let mut r = Raw::opted_in(server.addr());
    let n = server.notify_raw(Value::Push(vec![b("MOVING")]));
    assert_eq!(n, 1);
    assert_eq!(r.read(), Value::Push(vec![b("MOVING")]));
    server.notify_with_id(Notification::migrated(&["1"]), 42);
    assert_eq!(push_items(&r.read())[1], Value::Int(42));
    assert_eq!(server.notify_raw_bytes(b">2\r\n+MIGRATED\r\n:7\r\n"), 1);
    assert_eq!(
        r.read(),
        Value::Push(vec![Value::SimpleString("MIGRATED".into()), Value::Int(7)])
    );
    // The connection is still in step.
    assert_eq!(r.cmd(&["ECHO", "x"]), b("x"));
}

#[test]
fn retention_can_be_switched_off_and_on() {
    let server = FakeServer::start().unwrap();
    server.notify(Notification::migrated(&["27"]));
    server.set_retain_completions(false);
    // Off forgets what was retained and retains nothing more.
    server.notify(Notification::failed_over(&["21"]));
    let mut r = Raw::resp3(server.addr());
    assert_eq!(r.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]), ok());
    assert_eq!(r.cmd(&["PING"]), pong(), "nothing replayed");
    server.set_retain_completions(true);
    let id = server.notify(Notification::failed_over(&["21"]));
    let mut r = Raw::resp3(server.addr());
    r.send(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]);
    let chunk = r.read_one_chunk();
    assert_eq!(chunk[0], ok());
    assert_eq!(push_items(&chunk[1])[1], Value::Int(id as i64));
}
