use std::time::Duration;

use super::*;
use crate::resp::Value;

fn event(kind: NotificationKind, sequence: Option<u64>, secs: u64) -> MaintenanceEvent {
    let mut e = MaintenanceEvent::new(kind, Value::Nil, Endpoint::new("db.example", 12000));
    e.sequence = sequence;
    if kind == NotificationKind::Moving {
        e.time = Some(Duration::from_secs(secs));
    }
    e
}

fn node() -> NodeMaintenance {
    NodeMaintenance::new(Endpoint::new("db.example", 12000))
}

#[test]
fn one_moving_event_is_acted_on_once_whatever_the_repeats() {
    let h = node();
    let moving = event(NotificationKind::Moving, Some(7), 15);
    assert!(h.offer(&moving, None));
    // Re-sent to the subscription connection, and to a reconnect opting in.
    assert!(!h.offer(&moving, None));
    assert!(!h.offer(&moving, None));
    assert_eq!(h.stats().moving, 1);
    assert_eq!(h.stats().repeats_ignored, 2);
    // A chained handoff: the next event has its own id and window.
    assert!(h.offer(&event(NotificationKind::Moving, Some(9), 15), None));
    assert_eq!(h.stats().moving, 2);
    // Superseding: only the newest MOVING is queued.
    assert!(h.claim_worker());
    assert!(!h.claim_worker(), "one worker per node");
    let (task, generation) = h.next_task().unwrap();
    assert!(matches!(
        task,
        Task::Moving {
            sequence: Some(9),
            ..
        }
    ));
    assert!(h.next_task().is_none());
    assert!(
        !h.pause(Duration::ZERO, generation - 1),
        "an older generation"
    );
}

#[test]
fn a_moving_without_an_id_repeats_within_its_window() {
    let h = node();
    assert!(h.offer(&event(NotificationKind::Moving, None, 15), None));
    assert!(!h.offer(&event(NotificationKind::Moving, None, 15), None));
    let h = node();
    assert!(h.offer(&event(NotificationKind::Moving, None, 0), None));
    assert!(
        h.offer(&event(NotificationKind::Moving, None, 0), None),
        "a zero window is over at once"
    );
}

#[test]
fn a_newer_moving_cuts_a_running_wait_short_and_close_cancels() {
    let h = std::sync::Arc::new(node());
    h.offer(&event(NotificationKind::Migrated, Some(1), 0), None);
    assert!(h.claim_worker());
    let (task, generation) = h.next_task().unwrap();
    assert!(matches!(task, Task::Migrated { .. }));
    // A second MIGRATED while the watch runs is not queued again.
    assert!(!h.offer(&event(NotificationKind::Migrated, Some(2), 0), None));
    let waiter = {
        let h = h.clone();
        std::thread::spawn(move || h.pause(Duration::from_secs(60), generation))
    };
    h.offer(&event(NotificationKind::Moving, Some(3), 15), None);
    assert!(!waiter.join().unwrap(), "superseded, long before 60 s");
    let (_, generation) = h.next_task().unwrap();
    h.cancel();
    assert!(!h.pause(Duration::from_secs(60), generation));
    assert!(h.next_task().is_none());
    assert!(!h.offer(&event(NotificationKind::Moving, Some(4), 15), None));
}

#[test]
fn migrated_on_an_address_literal_asks_nothing_and_smigrated_is_kept_for_the_supervisor() {
    let h = NodeMaintenance::new(Endpoint::new("10.0.0.1", 12000));
    assert!(!h.offer(&event(NotificationKind::Migrated, Some(1), 0), None));
    assert!(!h.claim_worker());
    let mut e = event(NotificationKind::SMigrated, Some(2), 0);
    e.migrations = vec![SlotMigration {
        source: Endpoint::new("10.0.0.1", 12000),
        target: Endpoint::new("10.0.0.2", 12000),
        slots: vec![1..=5],
        slots_text: "1-5".into(),
    }];
    assert!(h.offer(&e, None));
    assert_eq!(h.take_migrations().len(), 1);
    assert!(h.take_migrations().is_empty());
    assert!(
        !h.claim_worker(),
        "slots are the supervisor's, not a worker's"
    );
}

#[test]
fn failed_over_asks_the_same_question_as_migrated_once() {
    let h = node();
    assert!(h.offer(&event(NotificationKind::FailedOver, Some(1), 0), None));
    assert!(
        !h.offer(&event(NotificationKind::Migrated, Some(2), 0), None),
        "one watch at a time, whichever completion asked first"
    );
    assert!(h.claim_worker());
    let (task, _) = h.next_task().unwrap();
    assert!(matches!(
        task,
        Task::Migrated {
            trigger: NotificationKind::FailedOver,
            sequence: Some(1),
            ..
        }
    ));
    assert!(
        !h.offer(&event(NotificationKind::FailingOver, Some(3), 0), None),
        "FAILING_OVER only relaxes"
    );
}
