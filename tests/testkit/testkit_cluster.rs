//! The fake cluster: slot map and topology replies, MOVED / CROSSSLOT, a migration with
//! ASK and ASKING, announced migrations (SMIGRATING, unsolicited SUNSUBSCRIBE,
//! SMIGRATED), notify_all with one id, removing and adding nodes.

use crate::support;

use std::time::Duration;

use resilient_redis::resp::Value;
use resilient_redis::testkit::{key_slot, FakeCluster, Notification};
use support::raw::{b, err_text, ok, push_items, Raw};

fn addr_text(cluster: &FakeCluster, i: usize) -> String {
    cluster.node(i).addr().to_string()
}

#[test]
fn slots_are_split_evenly_and_reported() {
    let cluster = FakeCluster::start(3).unwrap();
    assert_eq!(cluster.slot_owner(0), Some(0));
    assert_eq!(cluster.slot_owner(5461), Some(1));
    assert_eq!(cluster.slot_owner(16383), Some(2));
    let mut r = Raw::connect(cluster.node(1).addr());
    let slots = r.cmd(&["CLUSTER", "SLOTS"]);
    let Value::Array(ranges) = slots else {
        panic!("{slots:?}")
    };
    assert_eq!(ranges.len(), 3);
    let Value::Array(first) = &ranges[0] else {
        panic!()
    };
    assert_eq!(first[0], Value::Int(0));
    assert_eq!(first[1], Value::Int(5460));
    let Value::Array(node) = &first[2] else {
        panic!()
    };
    assert_eq!(node[0], b("127.0.0.1"));
    assert_eq!(node[1], Value::Int(cluster.node(0).port() as i64));
    let myid = r.cmd(&["CLUSTER", "MYID"]);
    let nodes = match r.cmd(&["CLUSTER", "NODES"]) {
        Value::BulkString(t) => String::from_utf8(t).unwrap(),
        other => panic!("{other:?}"),
    };
    let Value::BulkString(myid) = myid else {
        panic!()
    };
    let mine = nodes
        .lines()
        .find(|l| l.contains("myself"))
        .expect("a myself line");
    assert!(mine.starts_with(std::str::from_utf8(&myid).unwrap()));
    assert!(mine.ends_with(" 5461-10922"), "{mine}");
    assert_eq!(nodes.lines().count(), 3);
    let Value::Array(shards) = r.cmd(&["CLUSTER", "SHARDS"]) else {
        panic!()
    };
    assert_eq!(shards.len(), 3);
    assert_eq!(r.cmd(&["CLUSTER", "KEYSLOT", "foo"]), Value::Int(12182));
    let mut r3 = Raw::resp3(cluster.node(0).addr());
    let hello = r3.cmd(&["HELLO", "3"]);
    assert!(format!("{hello:?}").contains("cluster"), "{hello:?}");
}

#[test]
fn moved_crossslot_and_each_node_holds_only_its_keys() {
    let cluster = FakeCluster::start(3).unwrap();
    let owner = cluster.owner_of_key(b"foo").unwrap();
    let other = (owner + 1) % 3;
    let mut wrong = Raw::connect(cluster.node(other).addr());
    assert_eq!(
        err_text(&wrong.cmd(&["SET", "foo", "1"])),
        format!("MOVED 12182 {}", addr_text(&cluster, owner))
    );
    let mut right = Raw::connect(cluster.node(owner).addr());
    assert_eq!(right.cmd(&["SET", "foo", "1"]), ok());
    assert_eq!(
        err_text(&right.cmd(&["MSET", "foo", "1", "bar", "2"])),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    // Hash tags keep keys together.
    assert_eq!(right.cmd(&["MSET", "{foo}a", "1", "{foo}b", "2"]), ok());
    assert_eq!(right.cmd(&["DBSIZE"]), Value::Int(3));
    assert_eq!(wrong.cmd(&["DBSIZE"]), Value::Int(0));
    assert_eq!(
        err_text(&right.cmd(&["SELECT", "1"])),
        "ERR SELECT is not allowed in cluster mode"
    );
    // Keyless commands are served anywhere.
    assert_eq!(wrong.cmd(&["PING"]), Value::SimpleString("PONG".into()));
}

#[test]
fn a_migration_asks_for_moved_keys_and_then_moves_the_slot() {
    let cluster = FakeCluster::start(2).unwrap();
    let (a, c) = ("{m}a", "{m}c");
    let slot = key_slot(b"{m}");
    let from = cluster.slot_owner(slot).unwrap();
    let to = 1 - from;
    let mut src = Raw::connect(cluster.node(from).addr());
    let mut dst = Raw::connect(cluster.node(to).addr());
    src.cmd(&["SET", a, "1"]);
    src.cmd(&["SET", c, "3"]);
    cluster
        .begin_migration(slot..=slot, from, to, false)
        .unwrap();
    // Nothing moved yet: the source serves what it has, and ASKs for what it has not.
    assert_eq!(src.cmd(&["GET", a]), b("1"));
    let ask = format!("ASK {slot} {}", addr_text(&cluster, to));
    assert_eq!(err_text(&src.cmd(&["GET", "{m}new"])), ask);
    // The target refuses without ASKING, serves after it (once).
    assert_eq!(
        err_text(&dst.cmd(&["SET", "{m}new", "n"])),
        format!("MOVED {slot} {}", addr_text(&cluster, from))
    );
    assert_eq!(dst.cmd(&["ASKING"]), ok());
    assert_eq!(dst.cmd(&["SET", "{m}new", "n"]), ok());
    assert!(err_text(&dst.cmd(&["GET", "{m}new"])).starts_with("MOVED"));
    // Keys moved: ASK for them; a multi-key command across moved and unmoved: TRYAGAIN.
    assert_eq!(cluster.move_keys(1), 1);
    let moved_one = if matches!(src.cmd(&["EXISTS", a]), Value::Int(1)) {
        c
    } else {
        a
    };
    assert_eq!(err_text(&src.cmd(&["GET", moved_one])), ask);
    assert!(err_text(&src.cmd(&["MGET", a, c])).starts_with("TRYAGAIN"));
    let nodes = match src.cmd(&["CLUSTER", "NODES"]) {
        Value::BulkString(t) => String::from_utf8(t).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(nodes.contains(&format!("[{slot}->-")), "{nodes}");
    cluster.finish_migration().unwrap();
    assert_eq!(cluster.slot_owner(slot), Some(to));
    assert_eq!(
        err_text(&src.cmd(&["GET", a])),
        format!("MOVED {slot} {}", addr_text(&cluster, to))
    );
    assert_eq!(
        dst.cmd(&["MGET", a, c, "{m}new"]),
        Value::Array(vec![b("1"), b("3"), b("n")])
    );
}

#[test]
fn an_announced_migration_sends_smigrating_sunsubscribe_and_smigrated() {
    let cluster = FakeCluster::start(2).unwrap();
    let channel = "{chan}orders";
    let slot = key_slot(channel.as_bytes());
    let from = cluster.slot_owner(slot).unwrap();
    let to = 1 - from;
    let mut watcher = Raw::opted_in(cluster.node(from).addr());
    let mut sub = Raw::resp3(cluster.node(from).addr());
    let mut other_sub = Raw::resp3(cluster.node(from).addr());
    sub.cmd(&["SSUBSCRIBE", channel]);
    other_sub.cmd(&["SSUBSCRIBE", "unrelated"]);
    // Control: sharded publish reaches the subscriber before anything moves.
    let mut publisher = Raw::connect(cluster.node(from).addr());
    assert_eq!(
        publisher.cmd(&["SPUBLISH", channel, "before"]),
        Value::Int(1)
    );
    assert_eq!(push_items(&sub.read())[2], b("before"));

    cluster
        .begin_migration(slot..=slot, from, to, true)
        .unwrap();
    let smigrating = watcher.read();
    assert_eq!(
        smigrating,
        Value::Push(vec![b("SMIGRATING"), Value::Int(0), b(&slot.to_string())])
    );
    cluster.finish_migration().unwrap();
    assert_eq!(
        sub.read(),
        Value::Push(vec![b("sunsubscribe"), b(channel), Value::Int(0)])
    );
    let smigrated = watcher.read();
    assert_eq!(
        smigrated,
        Value::Push(vec![
            b("SMIGRATED"),
            Value::Int(1),
            Value::Array(vec![Value::Array(vec![
                b(&addr_text(&cluster, from)),
                b(&addr_text(&cluster, to)),
                b(&slot.to_string()),
            ])])
        ])
    );
    // The unrelated subscription was left alone; the moved channel now lives on `to`.
    assert_eq!(other_sub.cmd(&["PING"]), Value::SimpleString("PONG".into()));
    assert!(err_text(&sub.cmd(&["SSUBSCRIBE", channel])).starts_with("MOVED"));
    let mut new_sub = Raw::resp3(cluster.node(to).addr());
    new_sub.cmd(&["SSUBSCRIBE", channel]);
    let mut new_pub = Raw::connect(cluster.node(to).addr());
    assert_eq!(new_pub.cmd(&["SPUBLISH", channel, "after"]), Value::Int(1));
    assert_eq!(push_items(&new_sub.read())[2], b("after"));
}

#[test]
fn notify_all_sends_the_same_id_from_every_node() {
    let cluster = FakeCluster::start(3).unwrap();
    let mut per_node: Vec<Raw> = (0..3)
        .map(|i| Raw::opted_in(cluster.node(i).addr()))
        .collect();
    let mut not_opted = Raw::resp3(cluster.node(0).addr());
    assert_eq!(cluster.node(1).notify(Notification::migrated(&["1"])), 0);
    assert_eq!(push_items(&per_node[1].read())[1], Value::Int(0));
    let id = cluster.notify_all(Notification::failing_over(2, &["5"]));
    assert_eq!(id, 1, "one counter per deployment");
    for r in &mut per_node {
        let f = r.read();
        assert_eq!(push_items(&f)[0], b("FAILING_OVER"));
        assert_eq!(push_items(&f)[1], Value::Int(1));
    }
    assert_eq!(not_opted.cmd(&["PING"]), Value::SimpleString("PONG".into()));
}

#[test]
fn nodes_are_removed_like_cluster_forget_and_added_empty() {
    let mut cluster = FakeCluster::start(2).unwrap();
    let err = cluster.remove_node(1).unwrap_err();
    assert!(err.contains("owns slots"), "{err}");
    let new = cluster.add_node().unwrap().addr();
    let mut r = Raw::connect(new);
    assert_eq!(
        r.cmd(&["CLUSTER", "NODES"])
            .as_bytes()
            .map(|t| t.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count()),
        Some(3)
    );
    let foo_owner = cluster.owner_of_key(b"foo").unwrap();
    assert!(err_text(&r.cmd(&["GET", "foo"])).starts_with("MOVED"));
    // Move node 1's slots to the new node 2, then forget node 1.
    cluster.migrate(8192..=16383, 1, 2, false).unwrap();
    cluster.remove_node(1).unwrap();
    let Value::Array(ranges) = r.cmd(&["CLUSTER", "SLOTS"]) else {
        panic!()
    };
    assert_eq!(ranges.len(), 2);
    let shards = r.cmd(&["CLUSTER", "SHARDS"]);
    let Value::Array(shards) = shards else {
        panic!()
    };
    assert_eq!(shards.len(), 2, "the forgotten node is gone");
    assert_eq!(
        cluster.owner_of_key(b"foo"),
        Some(if foo_owner == 1 { 2 } else { foo_owner })
    );
    // The removed node still runs until shut down.
    let mut old = Raw::connect(cluster.node(1).addr());
    assert!(err_text(&old.cmd(&["GET", "foo"])).starts_with("MOVED"));
    cluster.node(1).shutdown();
    assert!(old.closed_within(Duration::from_secs(5)));
}
