//! Opting in to maintenance notifications: `auto` connects to every server that cannot
//! give them (and says so once per endpoint, at debug level), `enabled` refuses each
//! with an error that says why, the opt-in is re-armed on every reconnect, and a
//! completion the server replays right after `+OK` is handled mid-handshake.

use crate::support;

use resilient_redis::maintenance::NotificationKind;
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeServer, Notification, OptIn};
use resilient_redis::{ClientEvent, ErrorKind, MaintenanceKind};
use support::maintenance::*;

fn with(server: &FakeServer, keys: &str) -> String {
    format!("{}?{keys}", server.url())
}

/// Servers that cannot give notifications, each with what `enabled` must say about it.
fn unable() -> Vec<(&'static str, FakeServer, &'static str)> {
    vec![
        (
            "refuses (cluster flag off)",
            FakeServer::builder()
                .maint_opt_in(OptIn::Refuse)
                .start()
                .unwrap(),
            "refused CLIENT MAINT_NOTIFICATIONS",
        ),
        (
            "has no subcommand (OSS, Valkey)",
            FakeServer::builder()
                .maint_opt_in(OptIn::Unknown)
                .start()
                .unwrap(),
            "refused CLIENT MAINT_NOTIFICATIONS",
        ),
        (
            "answers HELLO 3 in RESP2",
            FakeServer::builder().hello_resp2_only().start().unwrap(),
            "answered HELLO 3 in RESP2",
        ),
        (
            "has no HELLO",
            FakeServer::builder().without_hello().start().unwrap(),
            "does not speak RESP3",
        ),
    ]
}

#[test]
fn auto_connects_to_every_server_that_cannot_give_them_and_logs_once_per_endpoint() {
    support::logs::capture();
    for (what, server, _) in unable() {
        let client = Client::connect(with(&server, "maintNotifications=auto")).unwrap();
        let db = client.database();
        db.set("k", what).unwrap();
        assert_eq!(db.get::<String>("k").unwrap(), what);
        assert!(!status(&client).opted_in, "{what}");
        assert!(server.commands_received("CLIENT") >= 1, "{what}: it asked");
        // Reconnect twice: asked again each time, logged only the first.
        for round in 2..=3 {
            server.close_all_connections();
            assert!(
                support::wait_until(SOON, || server.commands_received("CLIENT") >= round),
                "{what}: asked again on reconnect"
            );
            assert!(support::wait_until(SOON, || client.is_connected()));
            assert_eq!(db.get::<String>("k").unwrap(), what);
        }
        let endpoint = format!("127.0.0.1:{}", server.port());
        let lines = log_lines(&[&endpoint, "unavailable"]);
        assert_eq!(lines.len(), 1, "{what}: once per endpoint: {lines:?}");
        assert_eq!(lines[0].0, log::Level::Debug, "{what}: at debug level");
    }
}

#[test]
fn enabled_refuses_each_with_a_clear_error() {
    for (what, server, says) in unable() {
        let err = Client::connect(with(&server, "maintNotifications=enabled")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol, "{what}: {err}");
        let text = err.to_string();
        assert!(
            text.contains("maintNotifications=enabled"),
            "{what}: {text}"
        );
        assert!(text.contains(says), "{what}: {text}");
        assert!(
            text.contains(&server.port().to_string()),
            "names the endpoint: {text}"
        );
    }
    // A configuration that can never ask is refused before anything is sent.
    let server = FakeServer::start().unwrap();
    let err =
        Client::connect(with(&server, "maintNotifications=enabled&protocol=resp2")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    assert!(err.to_string().contains("protocol=resp2"), "{err}");
    assert_eq!(server.total_commands(), 0);
    // And auto with RESP2 forced simply connects without.
    let client = Client::connect(with(&server, "maintNotifications=auto&protocol=resp2")).unwrap();
    client.database().ping().unwrap();
    assert!(!status(&client).opted_in);
    assert_eq!(server.commands_received("CLIENT"), 0);
}

#[test]
fn a_willing_server_opts_in_with_the_endpoint_type_detected_or_given() {
    let server = FakeServer::start().unwrap();
    for (keys, expected) in [
        // An address literal on loopback: internal, by address.
        ("maintNotifications=auto", "internal-ip"),
        ("maintNotifications=enabled", "internal-ip"),
        (
            "maintNotifications=auto&maintMovingEndpointType=external-fqdn",
            "external-fqdn",
        ),
    ] {
        let client = Client::connect(with(&server, keys)).unwrap();
        assert!(status(&client).opted_in, "{keys}");
        let opted: Vec<_> = server
            .connections()
            .into_iter()
            .filter(|c| c.opted_in)
            .collect();
        assert_eq!(opted.len(), 1, "{keys}");
        assert_eq!(
            opted[0].moving_endpoint_type.as_deref(),
            Some(expected),
            "{keys}"
        );
        client.close();
        assert!(server.wait_for(|s| s.connections_open() == 0, SOON));
    }
    // Disabled (the default) never asks.
    let client = Client::connect(server.url().as_str()).unwrap();
    client.database().ping().unwrap();
    assert!(!status(&client).opted_in);
    assert!(server.connections().iter().all(|c| !c.opted_in));
}

#[test]
fn the_opt_in_is_re_armed_on_every_reconnect_and_auto_stays_fail_open() {
    let server = FakeServer::start().unwrap();
    let client = Client::connect(with(&server, "maintNotifications=auto")).unwrap();
    assert!(wait_opted_in(&client, SOON));
    for round in 2..=3 {
        server.close_all_connections();
        // Server side first (it counts the opt-in when it processes it), then the
        // client side, which marks it live a beat later, when it reads the +OK.
        assert!(server.wait_for(
            |s| s.commands_received("CLIENT") >= round
                && s.connections().iter().any(|c| c.opted_in),
            SOON
        ));
        assert!(
            wait_opted_in(&client, SOON),
            "re-armed after reconnect {round}"
        );
    }
    // Auto is never promoted to required by a success: a later refusal still connects.
    server.set_maint_opt_in(OptIn::Refuse);
    server.close_all_connections();
    assert!(support::wait_until(SOON, || {
        let s = status(&client);
        s.connected && !s.opted_in
    }));
    client.database().ping().unwrap();
}

#[test]
fn enabled_keeps_refusing_reconnects_the_server_no_longer_allows() {
    let server = FakeServer::start().unwrap();
    let client =
        Client::connect(with(&server, "maintNotifications=enabled&reconnectMax=200")).unwrap();
    let events = client.events();
    assert!(status(&client).opted_in);
    server.set_maint_opt_in(OptIn::Refuse);
    server.close_all_connections();
    let refused = (0..50).find_map(|_| match events.recv_timeout(SOON) {
        Ok(ClientEvent::ReconnectFailed { error, .. }) => Some(error),
        _ => None,
    });
    let error = refused.expect("a refused reconnect");
    assert_eq!(error.kind(), ErrorKind::Protocol);
    assert!(!client.is_connected());
    server.set_maint_opt_in(OptIn::Accept);
    assert!(wait_opted_in(&client, SOON));
}

#[test]
fn a_real_redis_server_lacks_the_subcommand() {
    support::logs::capture();
    let Some(redis) = support::RedisServer::start() else {
        return;
    };
    let client = Client::connect(format!("{}?maintNotifications=auto", redis.url())).unwrap();
    let db = client.database();
    db.set("k", "v").unwrap();
    assert_eq!(db.get::<String>("k").unwrap(), "v");
    assert!(!status(&client).opted_in);
    let lines = log_lines(&[&redis.addr(), "unavailable"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0].0, log::Level::Debug);
    let err = Client::connect(format!("{}?maintNotifications=enabled", redis.url())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Protocol, "{err}");
    assert!(err.to_string().contains("MAINT_NOTIFICATIONS"), "{err}");
}

#[test]
fn a_completion_replayed_after_ok_is_handled_mid_handshake_and_raised_once() {
    let server = FakeServer::start().unwrap();
    let client = Client::connect(with(&server, "maintNotifications=auto")).unwrap();
    let events = client.events();
    let db = client.database();
    server.notify(Notification::migrating(2, &["27"]));
    let migrated = server.notify(Notification::migrated(&["27"]));
    let kinds: Vec<_> = (0..2)
        .filter_map(|_| next_maintenance(&events, SOON))
        .map(|e| (e.kind, e.sequence))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (NotificationKind::Migrating, Some(migrated - 1)),
            (NotificationKind::Migrated, Some(migrated))
        ]
    );
    // The reconnect's opt-in gets MIGRATED again, in the same read as its +OK: the
    // handshake is undisturbed and the replay (already acted on) raises nothing.
    server.close_all_connections();
    assert!(server.wait_for(|s| s.commands_received("CLIENT") >= 2, SOON));
    assert!(wait_opted_in(&client, SOON));
    for i in 0..20 {
        db.set("k", i).unwrap();
        assert_eq!(db.get::<i64>("k").unwrap(), i);
    }
    assert!(
        drain_maintenance(&events).is_empty(),
        "a replay is not a new event"
    );

    // A client that was away when it happened is told, on reconnecting, that a
    // disruption ended: raised (new to it), nothing relaxed (nothing was open).
    drop(client);
    server.clear_retained();
    let away = Client::connect(with(&server, "maintNotifications=auto&reconnectMax=200")).unwrap();
    let away_events = away.events();
    server.refuse_connections(true);
    server.close_all_connections();
    assert!(support::wait_until(SOON, || !away.is_connected()));
    let replayed = server.notify(Notification::failed_over(&["21"]));
    server.refuse_connections(false);
    let e = next_maintenance(&away_events, SOON).expect("the replay");
    assert_eq!(
        (e.kind, e.sequence),
        (NotificationKind::FailedOver, Some(replayed))
    );
    assert!(wait_opted_in(&away, SOON));
    away.database().ping().unwrap();
    assert_eq!(status(&away).in_force, MaintenanceKind::None);

    // With retention off nothing is replayed.
    server.set_retain_completions(false);
    let before = server.commands_received("CLIENT");
    let quiet = Client::connect(with(&server, "maintNotifications=auto")).unwrap();
    let quiet_events = quiet.events();
    assert!(server.commands_received("CLIENT") > before);
    quiet.database().ping().unwrap();
    assert!(drain_maintenance(&quiet_events).is_empty());
}

#[test]
fn provider_defaults_apply_when_connecting_and_explicit_settings_win() {
    let server = FakeServer::start().unwrap();
    // enterprise: Auto, matched by name only.
    let client = Client::connect(with(&server, "defaults=enterprise")).unwrap();
    assert!(wait_opted_in(&client, SOON));
    let written = client.options().to_string();
    assert!(written.ends_with(",defaults=enterprise"), "{written}");
    assert!(
        !written.contains("maintNotifications"),
        "no provider value: {written}"
    );
    // An explicit choice beats it, even the library default.
    let off = Client::connect(with(
        &server,
        "defaults=enterprise&maintNotifications=disabled",
    ))
    .unwrap();
    off.database().ping().unwrap();
    assert!(!status(&off).opted_in);
    // amr turns TLS on, which this plain fake cannot speak...
    let err = Client::connect(with(&server, "defaults=amr&connectTimeout=1000")).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Tls | ErrorKind::Io | ErrorKind::ConnectionClosed | ErrorKind::Timeout
        ),
        "TLS was attempted: {err}"
    );
    // ...unless ssl=false is given: then Auto and RESP3 still apply.
    let plain = Client::connect(with(&server, "defaults=amr&ssl=false")).unwrap();
    assert!(wait_opted_in(&plain, SOON));
    assert_eq!(
        server
            .connections()
            .iter()
            .filter(|c| c.protocol == 3 && c.opted_in)
            .count(),
        2
    );
    assert_eq!(
        plain.options().to_string(),
        format!("127.0.0.1:{},ssl=false,defaults=amr", server.port())
    );
}
