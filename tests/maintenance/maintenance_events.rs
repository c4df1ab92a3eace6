//! Notifications as the client publishes them: every capture end to end, one event
//! per broadcast although every node sends its own copy, replays and zero handled,
//! a lagging node's older event still raised, and unreadable frames dropped without
//! the connection losing step.

use crate::support;

use std::time::Duration;

use resilient_redis::maintenance::NotificationKind;
use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::{FakeCluster, FakeServer, Notification};
use resilient_redis::{Endpoint, MaintenanceKind};
use support::maintenance::*;

fn b(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn auto(url: String) -> Client {
    let client = Client::connect(format!("{url}?maintNotifications=auto")).unwrap();
    assert!(wait_opted_in(&client, SOON));
    client
}

#[test]
fn every_capture_end_to_end() {
    let server = FakeServer::start().unwrap();
    let client = auto(server.url());
    let events = client.events();
    let captures: [(&[u8], NotificationKind, Option<u64>, MaintenanceKind); 7] = [
        (
            b">3\r\n$10\r\nSMIGRATING\r\n:18\r\n$9\r\n8892-8991\r\n",
            NotificationKind::SMigrating,
            Some(18),
            MaintenanceKind::SlotMigrating,
        ),
        (
            b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n$20\r\n10.100.200.214:12345\r\n\
              $18\r\n10.0.101.214:12346\r\n$9\r\n8892-8991\r\n",
            NotificationKind::SMigrated,
            Some(19),
            MaintenanceKind::Settling,
        ),
        (
            b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n",
            NotificationKind::Moving,
            Some(0),
            MaintenanceKind::Moving,
        ),
        (
            b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n",
            NotificationKind::Migrating,
            Some(0),
            MaintenanceKind::Migrating,
        ),
        (
            b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n",
            NotificationKind::Migrated,
            Some(1),
            MaintenanceKind::Settling,
        ),
        (
            b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"21\"]\r\n",
            NotificationKind::FailingOver,
            Some(0),
            MaintenanceKind::FailingOver,
        ),
        (
            b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"21\"]\r\n",
            NotificationKind::FailedOver,
            Some(1),
            MaintenanceKind::Settling,
        ),
    ];
    let from = Endpoint::new("127.0.0.1", server.port());
    for (bytes, kind, sequence, in_force) in captures {
        assert_eq!(server.notify_raw_bytes(bytes), 1);
        let e = next_maintenance(&events, SOON).expect("raised");
        assert_eq!((e.kind, e.sequence), (kind, sequence));
        assert_eq!(e.reported_by, from);
        assert_eq!(status(&client).in_force, in_force, "{kind}");
        match kind {
            NotificationKind::Moving => {
                assert_eq!(e.time, Some(Duration::from_secs(15)));
                assert_eq!(e.new_endpoint, None);
            }
            NotificationKind::SMigrated => {
                assert_eq!(e.migrations.len(), 1);
                assert_eq!(
                    e.migrations[0].source,
                    Endpoint::new("10.100.200.214", 12345)
                );
                assert_eq!(e.migrations[0].target, Endpoint::new("10.0.101.214", 12346));
                assert_eq!(e.migrations[0].slots, vec![8892..=8991]);
            }
            NotificationKind::SMigrating => assert_eq!(e.slots, Some(vec![8892..=8991])),
            NotificationKind::Migrating | NotificationKind::FailingOver => {
                assert_eq!(e.time, Some(Duration::from_secs(2)));
                assert!(e.shards.is_some());
            }
            _ => assert_eq!(e.time, None),
        }
    }
}

#[test]
fn three_nodes_broadcasting_one_event_raise_it_once_and_relax_each_node() {
    let cluster = FakeCluster::start(3).unwrap();
    let client = auto(cluster.url());
    assert!(client.is_cluster());
    assert!(support::wait_until(SOON, || client
        .maintenance_status()
        .len()
        == 3));
    assert!(wait_opted_in(&client, SOON));
    let events = client.events();

    let id = cluster.notify_all(Notification::failing_over(2, &["52"]));
    let e = next_maintenance(&events, SOON).expect("raised");
    assert_eq!(
        (e.kind, e.sequence),
        (NotificationKind::FailingOver, Some(id))
    );
    // Every node relaxes for its own copy.
    assert!(wait_in_force(&client, MaintenanceKind::FailingOver, SOON));

    let done = cluster.notify_all(Notification::failed_over(&["52"]));
    assert!(wait_in_force(&client, MaintenanceKind::Settling, SOON));
    let raised = drain_maintenance(&events);
    assert_eq!(
        raised
            .iter()
            .map(|e| (e.kind, e.sequence))
            .collect::<Vec<_>>(),
        vec![(NotificationKind::FailedOver, Some(done))],
        "one event for three copies"
    );

    // A node replaying an id already acted on: ignored. The marker after it, on the
    // same connection, proves it was processed (frames keep their order).
    cluster
        .node(1)
        .notify_with_id(Notification::failing_over(2, &["52"]), id);
    cluster
        .node(1)
        .notify_with_id(Notification::migrated(&["marker"]), 1000);
    let e = next_maintenance(&events, SOON).expect("the marker");
    assert_eq!(
        (e.kind, e.sequence),
        (NotificationKind::Migrated, Some(1000))
    );

    // A lagging node's older event that nobody raised yet is raised (equality, not
    // <=): a MIGRATING with an id below the last FAILED_OVER.
    assert!(id < done);
    cluster
        .node(2)
        .notify_with_id(Notification::migrating(2, &["9"]), id);
    let e = next_maintenance(&events, SOON).expect("the lagging event");
    assert_eq!(
        (e.kind, e.sequence),
        (NotificationKind::Migrating, Some(id))
    );
    assert_eq!(e.reported_by.port, cluster.node(2).port());
}

#[test]
fn sequence_zero_is_de_duplicated_and_a_frame_without_one_is_still_acted_on() {
    let server = FakeServer::start().unwrap();
    let client = auto(server.url());
    let events = client.events();
    let zero = server.notify(Notification::migrating(2, &["27"]));
    assert_eq!(zero, 0, "a fresh deployment starts at zero");
    let e = next_maintenance(&events, SOON).unwrap();
    assert_eq!(e.sequence, Some(0));
    server.notify_with_id(Notification::migrating(2, &["27"]), 0);
    server.notify_with_id(Notification::migrated(&["marker"]), 77);
    let e = next_maintenance(&events, SOON).unwrap();
    assert_eq!(e.sequence, Some(77), "the replayed zero raised nothing");

    // No sequence id: not de-duplicable, but still a notification.
    server.notify_raw(Value::Push(vec![b("MIGRATING"), b("[\"3\"]")]));
    let e = next_maintenance(&events, SOON).unwrap();
    assert_eq!((e.kind, e.sequence), (NotificationKind::Migrating, None));
    assert_eq!(e.shards.as_deref(), Some("[\"3\"]"));
    assert_eq!(status(&client).in_force, MaintenanceKind::Migrating);
}

#[test]
fn unreadable_pushes_are_dropped_and_the_connection_stays_in_step() {
    support::logs::capture();
    let server = FakeServer::start().unwrap();
    let client = auto(server.url());
    let events = client.events();
    let db = client.database();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let key = format!("k{w}");
                    let value = format!("{w}-{i}");
                    db.set(key.as_str(), value.as_str()).unwrap();
                    assert_eq!(db.get::<String>(key.as_str()).unwrap(), value);
                }
            })
        })
        .collect();
    for _ in 0..20 {
        server.notify_raw(Value::Push(vec![
            b("MOVING"),
            Value::Int(1),
            Value::Array(vec![]),
        ]));
        server.notify_raw(Value::Push(vec![b("SMIGRATED"), Value::Int(2), b("1-2")]));
        server.notify_raw(Value::Push(vec![Value::Int(5), Value::Int(6)]));
        server.notify_raw_bytes(b">3\r\n$11\r\nFAILED_OVER\r\n:3\r\n#t\r\n");
        server.notify_raw_bytes(b">2\r\n$9\r\nMIGRATING\r\n*1\r\n:1\r\n");
    }
    for w in workers {
        w.join().expect("every reply reached its own caller");
    }
    for i in 0..50 {
        assert_eq!(
            db.echo::<String>(format!("x{i}").as_str()).unwrap(),
            format!("x{i}")
        );
    }
    assert!(
        drain_maintenance(&events).is_empty(),
        "nothing unreadable is raised"
    );
    assert_eq!(status(&client).in_force, MaintenanceKind::None);
    let endpoint = format!("127.0.0.1:{}", server.port());
    assert!(
        !log_lines(&[&endpoint, "unreadable"]).is_empty(),
        "dropped with a log line"
    );
    // And a readable one right after is raised.
    server.notify(Notification::failed_over(&["21"]));
    assert!(next_maintenance(&events, SOON).is_some());
}
