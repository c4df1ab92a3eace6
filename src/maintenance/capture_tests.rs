//! Every frame of `wire-captures.md`, captured byte for byte from Redis Enterprise 8.6.2
//! (or Redis Cloud on it), pinned: the exact bytes through the decoder and the parser,
//! the parsed result, and, for the opening kinds, the relaxed window they open.

use std::sync::Arc;
use std::time::Duration;

use super::dedup::EventRing;
use super::event::{MaintenanceEvent, NotificationKind, SlotMigration};
use super::handler::ServerMaintenance;
use crate::clock::ManualClock;
use crate::config::{Endpoint, Options};
use crate::error::MaintenanceKind;
use crate::maintenance::timeouts::ServerTimeouts;
use crate::resp::{Decoder, Value};

fn from() -> Endpoint {
    Endpoint::new("redis-12000.example", 12000)
}

/// Decodes `bytes` (exactly one frame, nothing left over), parses it, and applies it
/// to a fresh server: returns the event and the maintenance then in force.
fn run(bytes: &[u8]) -> (MaintenanceEvent, MaintenanceKind, Duration) {
    let mut decoder = Decoder::new();
    decoder.feed(bytes);
    let frame = decoder.decode().unwrap().expect("one whole frame");
    assert!(decoder.decode().unwrap().is_none(), "nothing left over");
    assert!(matches!(frame, Value::Push(_)), "a RESP3 push");
    let clock = ManualClock::new();
    let timeouts = Arc::new(ServerTimeouts::new(Arc::new(clock.clone())));
    let server = ServerMaintenance::new(timeouts.clone(), &Options::default());
    let event = server
        .on_push(&EventRing::new(), &from(), frame.clone())
        .expect("a maintenance notification")
        .expect("raised");
    assert_eq!(event.raw, frame, "the raw frame is kept");
    assert_eq!(event.reported_by, from());
    let effective = timeouts.effective(Duration::from_secs(5));
    (event, timeouts.maintenance(), effective)
}

fn assert_opens(in_force: MaintenanceKind, effective: Duration, kind: MaintenanceKind) {
    assert_eq!(in_force, kind);
    assert_eq!(
        effective,
        Duration::from_secs(10),
        "relaxed to maintRelaxedTimeout"
    );
}

fn assert_closes_nothing(in_force: MaintenanceKind, effective: Duration) {
    assert_eq!(
        in_force,
        MaintenanceKind::None,
        "nothing was open to stand down"
    );
    assert_eq!(effective, Duration::from_secs(5));
}

/// `>3 $10 SMIGRATING :18 $9 8892-8991`
#[test]
fn smigrating() {
    let (e, in_force, effective) = run(b">3\r\n$10\r\nSMIGRATING\r\n:18\r\n$9\r\n8892-8991\r\n");
    assert_eq!(e.kind, NotificationKind::SMigrating);
    assert_eq!((e.sequence, e.time), (Some(18), None));
    assert_eq!(e.slots, Some(vec![8892..=8991]));
    assert_eq!(e.slots_text.as_deref(), Some("8892-8991"));
    assert_opens(in_force, effective, MaintenanceKind::SlotMigrating);
}

/// `>3 $9 SMIGRATED :19 *1[ *3[ $20 <source> $18 <target> $9 <slots> ] ]`, with
/// representative values of the captured lengths.
#[test]
fn smigrated() {
    let bytes = b">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n\
        $20\r\n10.100.200.214:12345\r\n$18\r\n10.0.101.214:12346\r\n$9\r\n8892-8991\r\n";
    let (e, in_force, effective) = run(bytes);
    assert_eq!(e.kind, NotificationKind::SMigrated);
    assert_eq!((e.sequence, e.time), (Some(19), None));
    assert_eq!(
        e.migrations,
        vec![SlotMigration {
            source: Endpoint::new("10.100.200.214", 12345),
            target: Endpoint::new("10.0.101.214", 12346),
            slots: vec![8892..=8991],
            slots_text: "8892-8991".into(),
        }]
    );
    assert_eq!(e.skipped_migrations, 0);
    assert_closes_nothing(in_force, effective);
}

/// `>4 $6 MOVING :0 :15 _`: the explicit RESP3 null means "no replacement given".
#[test]
fn moving() {
    let (e, in_force, effective) = run(b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n");
    assert_eq!(e.kind, NotificationKind::Moving);
    assert_eq!(e.sequence, Some(0), "zero is a valid id");
    assert_eq!(e.time, Some(Duration::from_secs(15)));
    assert_eq!((e.new_endpoint, e.endpoint_text), (None, None));
    assert_opens(in_force, effective, MaintenanceKind::Moving);
}

/// `>4 $9 MIGRATING :0 :2 $6 ["27"]`
#[test]
fn migrating() {
    let (e, in_force, effective) = run(b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(e.kind, NotificationKind::Migrating);
    assert_eq!(
        (e.sequence, e.time),
        (Some(0), Some(Duration::from_secs(2)))
    );
    assert_eq!(e.shards.as_deref(), Some("[\"27\"]"), "opaque, as sent");
    assert_opens(in_force, effective, MaintenanceKind::Migrating);
}

/// `>3 $8 MIGRATED :1 $6 ["27"]`
#[test]
fn migrated() {
    let (e, in_force, effective) = run(b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n");
    assert_eq!(e.kind, NotificationKind::Migrated);
    assert_eq!((e.sequence, e.time), (Some(1), None));
    assert_eq!(e.shards.as_deref(), Some("[\"27\"]"));
    assert_closes_nothing(in_force, effective);
}

/// `>4 $12 FAILING_OVER :0 :2 $6 ["21"]`
#[test]
fn failing_over() {
    let (e, in_force, effective) =
        run(b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"21\"]\r\n");
    assert_eq!(e.kind, NotificationKind::FailingOver);
    assert_eq!(
        (e.sequence, e.time),
        (Some(0), Some(Duration::from_secs(2)))
    );
    assert_eq!(e.shards.as_deref(), Some("[\"21\"]"));
    assert_opens(in_force, effective, MaintenanceKind::FailingOver);
}

/// `>3 $11 FAILED_OVER :1 $6 ["21"]`
#[test]
fn failed_over() {
    let (e, in_force, effective) = run(b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"21\"]\r\n");
    assert_eq!(e.kind, NotificationKind::FailedOver);
    assert_eq!((e.sequence, e.time), (Some(1), None));
    assert_eq!(e.shards.as_deref(), Some("[\"21\"]"));
    assert_closes_nothing(in_force, effective);
}

/// The failover pair observed end to end (`FAILING_OVER seq=0 time=2s ["52"]`, then
/// `FAILED_OVER seq=1`): the second turns the first's window into the tail.
#[test]
fn the_observed_failover_pair_opens_then_settles() {
    let clock = ManualClock::new();
    let timeouts = Arc::new(ServerTimeouts::new(Arc::new(clock.clone())));
    let server = ServerMaintenance::new(timeouts.clone(), &Options::default());
    let ring = EventRing::new();
    let mut decoder = Decoder::new();
    decoder.feed(b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"52\"]\r\n");
    decoder.feed(b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"52\"]\r\n");
    let opening = decoder.decode().unwrap().unwrap();
    let closing = decoder.decode().unwrap().unwrap();
    assert!(server.on_push(&ring, &from(), opening).unwrap().is_some());
    assert_eq!(timeouts.maintenance(), MaintenanceKind::FailingOver);
    clock.advance(Duration::from_secs(2));
    assert!(server.on_push(&ring, &from(), closing).unwrap().is_some());
    assert_eq!(timeouts.maintenance(), MaintenanceKind::Settling);
    clock.advance(Duration::from_secs(20));
    assert_eq!(timeouts.maintenance(), MaintenanceKind::None);
}

/// A remove-add moved every shard as five SMIGRATING/SMIGRATED pairs, ids 0 to 9 in
/// one chain, shared across kinds: every one of them is new, none de-duplicated.
#[test]
fn one_chain_of_ids_across_kinds_is_all_new() {
    let clock = ManualClock::new();
    let timeouts = Arc::new(ServerTimeouts::new(Arc::new(clock.clone())));
    let server = ServerMaintenance::new(timeouts.clone(), &Options::default());
    let ring = EventRing::new();
    let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    for pair in 0..5i64 {
        let start = Value::Push(vec![b("SMIGRATING"), Value::Int(2 * pair), b("1-2")]);
        let triplet = Value::Array(vec![b("a:1"), b("b:2"), b("1-2")]);
        let done = Value::Push(vec![
            b("SMIGRATED"),
            Value::Int(2 * pair + 1),
            Value::Array(vec![triplet]),
        ]);
        assert!(server.on_push(&ring, &from(), start).unwrap().is_some());
        assert_eq!(timeouts.maintenance(), MaintenanceKind::SlotMigrating);
        assert!(server.on_push(&ring, &from(), done).unwrap().is_some());
        assert_eq!(timeouts.maintenance(), MaintenanceKind::Settling);
    }
}
