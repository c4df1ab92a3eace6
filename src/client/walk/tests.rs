use super::*;

fn ep(port: u16) -> Endpoint {
    Endpoint::new("10.0.0.1", port)
}

fn master(slots: &[(u16, u16)], epoch: u64, run: &str) -> NodeSnapshot {
    NodeSnapshot {
        is_master: true,
        epoch,
        slots: slots.to_vec(),
        migrating: Vec::new(),
        run_id: run.to_string(),
    }
}

/// Runs one node's scan from `start` to `end` and returns the first uncovered slot.
fn run(walk: &mut KeyspaceWalk, port: u16, start: NodeSnapshot, end: NodeSnapshot) -> Option<u16> {
    walk.begin(ep(port), start).unwrap();
    assert!(!walk.page(17));
    assert_eq!(walk.current().map(|s| s.cursor), Some(17));
    assert!(walk.page(0));
    walk.complete(&end, true);
    walk.next_uncovered()
}

#[test]
fn three_stable_masters_cover_the_keyspace() {
    let mut walk = KeyspaceWalk::new();
    assert_eq!(walk.next_uncovered(), Some(0));
    let a = master(&[(0, 5460)], 1, "a");
    let b = master(&[(5461, 10922)], 2, "b");
    let c = master(&[(10923, 16383)], 3, "c");
    assert_eq!(run(&mut walk, 1, a.clone(), a), Some(5461));
    assert_eq!(run(&mut walk, 2, b.clone(), b), Some(10923));
    assert!(!walk.is_finished());
    assert_eq!(run(&mut walk, 3, c.clone(), c), None);
    assert!(walk.is_finished());
}

#[test]
fn what_a_run_may_cover_as_a_table() {
    struct Row {
        what: &'static str,
        start: NodeSnapshot,
        end: NodeSnapshot,
        /// The first uncovered slot afterwards.
        next: Option<u16>,
    }
    let all = |epoch, run| master(&[(0, 16383)], epoch, run);
    let moving = |slot: u16| NodeSnapshot {
        migrating: vec![slot],
        ..all(1, "a")
    };
    let rows = [
        Row {
            what: "stable",
            start: all(1, "a"),
            end: all(1, "a"),
            next: None,
        },
        Row {
            what: "restarted mid-run: another process, another hash seed",
            start: all(1, "a"),
            end: all(1, "b"),
            next: Some(0),
        },
        Row {
            what: "its epoch rose: it took slots over mid-run (some may be back)",
            start: all(1, "a"),
            end: all(2, "a"),
            next: Some(0),
        },
        Row {
            what: "demoted mid-run (a graceful failover)",
            start: all(1, "a"),
            end: NodeSnapshot {
                is_master: false,
                ..all(1, "a")
            },
            next: Some(0),
        },
        Row {
            what: "a slot migrating away at the start",
            start: moving(100),
            end: all(1, "a"),
            next: Some(100),
        },
        Row {
            what: "a slot migrating away at the end",
            start: all(1, "a"),
            end: moving(7),
            next: Some(7),
        },
        Row {
            what: "a slot lost mid-run",
            start: all(1, "a"),
            end: master(&[(0, 99), (101, 16383)], 1, "a"),
            next: Some(100),
        },
        Row {
            what: "a slot gained mid-run (not owned at the start)",
            start: master(&[(1, 16383)], 1, "a"),
            end: all(1, "a"),
            next: Some(0),
        },
    ];
    for row in rows {
        let mut walk = KeyspaceWalk::new();
        let next = run(&mut walk, 1, row.start, row.end);
        assert_eq!(next, row.next, "{}", row.what);
        assert_eq!(walk.is_finished(), row.next.is_none(), "{}", row.what);
    }
}

#[test]
fn an_abandoned_run_counts_for_nothing_and_a_stuck_slot_ends_the_walk() {
    let mut walk = KeyspaceWalk::new();
    let a = master(&[(0, 16383)], 1, "a");
    for _ in 0..RUNS_PER_SLOT {
        walk.begin(ep(1), a.clone()).unwrap();
        walk.page(5);
        walk.abandon();
        assert!(walk.current().is_none());
        assert_eq!(walk.next_uncovered(), Some(0));
    }
    let e = walk.begin(ep(1), a.clone()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TryAgain);
    assert!(e.to_string().contains("slot 0"), "{e}");
    // Progress resets the count.
    let mut walk = KeyspaceWalk::new();
    for _ in 0..RUNS_PER_SLOT - 1 {
        walk.begin(ep(1), a.clone()).unwrap();
        walk.abandon();
    }
    let half = master(&[(0, 8191)], 1, "a");
    run(&mut walk, 1, half.clone(), half);
    for _ in 0..RUNS_PER_SLOT {
        walk.begin(ep(2), a.clone()).unwrap();
        walk.abandon();
    }
}

#[test]
fn outside_a_cluster_one_run_of_one_process_completes_the_walk() {
    let mut walk = KeyspaceWalk::new();
    let a = NodeSnapshot {
        run_id: "a".into(),
        ..NodeSnapshot::default()
    };
    let restarted = NodeSnapshot {
        run_id: "b".into(),
        ..NodeSnapshot::default()
    };
    walk.begin(ep(1), a.clone()).unwrap();
    assert!(walk.page(0));
    walk.complete(&restarted, false);
    assert!(!walk.is_finished() && walk.current().is_none());
    walk.begin(ep(1), restarted.clone()).unwrap();
    assert!(walk.page(0));
    walk.complete(&restarted, false);
    assert!(walk.is_finished());
}

#[test]
fn a_walk_moved_to_another_group_member_starts_over() {
    let mut walk = KeyspaceWalk::new();
    walk.on_member(1);
    let half = master(&[(0, 8191)], 1, "a");
    run(&mut walk, 1, half.clone(), half);
    walk.on_member(1);
    assert_eq!(walk.next_uncovered(), Some(8192));
    walk.on_member(2);
    assert_eq!(walk.next_uncovered(), Some(0));
}
