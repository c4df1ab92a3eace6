//! Redis Cluster: slot routing, a multi-key command split per slot, a slot migration
//! followed through `-ASK` and `-MOVED`, the client's cluster counters, and the whole
//! keyspace (a walk over every master, `DBSIZE` summed, per-node commands).
//!
//! `cargo run --example cluster` runs against an in-process three-master
//! `testkit::FakeCluster` (feature `testkit`, on for the crate's examples) and moves a
//! slot from one master to another while it reads, so the redirects are live. It
//! checks what it shows and exits non-zero if a redirect was not followed.
//!
//! Give a seed URL to use a real cluster:
//! `cargo run --example cluster -- redis://127.0.0.1:7000`. Routing, the multi-key
//! split and the counters are shown there too; the example does not reshard a cluster
//! it does not own, so it then reads for ten seconds while printing the counters:
//! reshard meanwhile (`redis-cli --cluster reshard 127.0.0.1:7000`) to watch the
//! client follow.

use std::time::{Duration, Instant};

use resilient_redis::cluster::key_slot;
use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::FakeCluster;
use resilient_redis::ScanOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seed = std::env::args().nth(1);
    let fake = match seed {
        Some(_) => None,
        None => Some(FakeCluster::start(3)?),
    };
    let url = seed.unwrap_or_else(|| fake.as_ref().map(FakeCluster::url).unwrap_or_default());
    println!("seed: {url}");
    let client = Client::connect(url.as_str())?;
    if !client.is_cluster() {
        return Err(format!("{url} is not a Redis Cluster").into());
    }
    let db = client.database();

    // 1. Routing: every key goes to the master that owns its slot, read off the slot
    //    map (`CLUSTER SLOTS`) the client keeps; a hash tag `{...}` pins related keys
    //    to one slot.
    println!("\n1. routing by slot");
    let slots = slot_owners(&db)?;
    // One key per master: the first `user:N` whose slot each master owns.
    let mut keys: Vec<String> = Vec::new();
    for (_, _, node) in &slots {
        let key = (0..10_000)
            .map(|i| format!("user:{i}"))
            .find(|k| owner(&slots, key_slot(k.as_bytes())) == Some(node.as_str()))
            .ok_or("no key found for a master")?;
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.push(format!("{{{}}}:cart", keys[0]));
    for key in &keys {
        db.set(key, format!("value of {key}"))?;
        let slot = key_slot(key.as_bytes());
        println!(
            "   SET {key:<15} slot {slot:>5} -> {}",
            owner(&slots, slot).unwrap_or("?")
        );
    }
    println!(
        "   ({{{}}}:cart is in the slot of {}: only the {{hash tag}} is hashed)",
        keys[0], keys[0]
    );

    // 2. A multi-key command across slots is split per slot, sent to each owner,
    //    and reassembled in key order (MGET, MSET, DEL, UNLINK, EXISTS, TOUCH).
    println!("\n2. multi-key commands split per slot");
    keys.push("user:missing".to_string());
    let values: Vec<Option<String>> = db.mget(&keys[..])?;
    for (k, v) in keys.iter().zip(&values) {
        println!("   MGET {k:<15} -> {v:?}");
    }
    let expected = keys.iter().map(|k| Some(format!("value of {k}")));
    let last = keys.len() - 1;
    if !values[..last].iter().cloned().eq(expected.take(last)) || values[last].is_some() {
        return Err("MGET across slots came back wrong".into());
    }
    db.mset(&[("a", "1"), ("b", "2"), ("c", "3")])?;
    let deleted = db.del(&["a", "b", "c"][..])?;
    println!("   MSET a b c, then DEL a b c -> {deleted} deleted (counts summed over slots)");
    if deleted != 3 {
        return Err("DEL across slots came back wrong".into());
    }

    // 3. A slot migration under our feet.
    match &fake {
        Some(cluster) => migrate_while_reading(cluster, &client, &db)?,
        None => watch_real_cluster(&client, &db)?,
    }

    // 4. The whole keyspace: a walk over every master, each with its own SCAN cursor;
    //    DBSIZE summed over the masters; one node at a time where that is the point.
    println!("\n4. every key");
    let walked: std::collections::BTreeSet<String> = db
        .scan_iter::<String>(ScanOptions::default().count(100))
        .collect::<Result<_, _>>()?;
    let total = db.dbsize()?;
    println!(
        "   scan_iter: {} keys; DBSIZE (every master, summed): {total}",
        walked.len()
    );
    for (node, size) in client.for_each_master(|node| node.dbsize()) {
        println!("   DBSIZE on {node} alone: {}", size?);
    }
    if fake.is_some() && walked.len() as i64 != total {
        return Err("the walk did not return every key".into());
    }

    println!("\n{}", client.status());
    client.close();
    Ok(())
}

/// Moves the slot of `{account:7}` to the next master in two steps, as a reshard does:
/// first half of its keys (reads of moved keys get `-ASK`, the client asks the target
/// with `ASKING`), then the slot itself (the old owner answers `-MOVED`, the client
/// follows and re-reads the topology).
fn migrate_while_reading(
    cluster: &FakeCluster,
    client: &Client,
    db: &Database,
) -> Result<(), Box<dyn std::error::Error>> {
    let keys: Vec<String> = (0..10).map(|i| format!("{{account:7}}:field{i}")).collect();
    for k in &keys {
        db.set(k, k.as_str())?;
    }
    let slot = key_slot(keys[0].as_bytes());
    let from = cluster.slot_owner(slot).ok_or("slot has no owner")?;
    let to = (from + 1) % cluster.nodes().len();
    let before = client.cluster_stats().unwrap_or_default();
    println!(
        "\n3. migrating slot {slot} ({} keys) from node {from} ({}) to node {to} ({})",
        keys.len(),
        cluster.node(from).addr(),
        cluster.node(to).addr()
    );

    cluster.begin_migration(slot..=slot, from, to, false)?;
    let moved = cluster.move_keys(keys.len() / 2);
    println!("   MIGRATING: {moved} keys moved to the target so far");
    read_all(db, &keys)?;
    let during = client.cluster_stats().unwrap_or_default();
    println!(
        "   every key read back; -ASK followed: {}",
        during.ask - before.ask
    );

    cluster.finish_migration()?;
    println!("   slot {slot} now belongs to node {to}");
    read_all(db, &keys)?;
    // A MOVED makes the supervisor re-read the topology, in the background.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = client.cluster_stats().unwrap_or_default();
    while after.refreshes == during.refreshes && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        after = client.cluster_stats().unwrap_or_default();
    }
    println!(
        "   every key read back; -MOVED followed: {}, topology refreshes since: {}",
        after.moved - during.moved,
        after.refreshes - during.refreshes
    );
    let owner_now = owner(&slot_owners(db)?, slot).unwrap_or("?").to_string();
    println!("   CLUSTER SLOTS now names {owner_now} as the owner of slot {slot}");
    if during.ask == before.ask || after.moved == during.moved {
        return Err("the migration did not produce the expected redirects".into());
    }
    if owner_now != cluster.node(to).addr().to_string() {
        return Err("the slot map does not show the new owner".into());
    }
    Ok(())
}

/// Every key still holds its own name as its value.
fn read_all(db: &Database, keys: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    for k in keys {
        let v: Option<String> = db.get(k)?;
        if v.as_deref() != Some(k.as_str()) {
            return Err(format!("{k} read back as {v:?}").into());
        }
    }
    Ok(())
}

/// On a real cluster: read for ten seconds, printing the counters each second.
fn watch_real_cluster(client: &Client, db: &Database) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n3. reading for 10 s: reshard now to watch MOVED/ASK being followed");
    let started = Instant::now();
    let mut reads = 0u64;
    let mut next_print = Duration::from_secs(1);
    while started.elapsed() < Duration::from_secs(10) {
        for i in 0..100 {
            let _: Option<String> = db.get(format!("user:{i}"))?;
            reads += 1;
        }
        if started.elapsed() >= next_print {
            next_print += Duration::from_secs(1);
            println!(
                "   t={:>2}s reads={reads:<7} {:?}",
                started.elapsed().as_secs(),
                client.cluster_stats().unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// `(first slot, last slot, "host:port" of the master)` from `CLUSTER SLOTS`.
fn slot_owners(db: &Database) -> resilient_redis::Result<Vec<(u16, u16, String)>> {
    let reply: Vec<Value> = db.cmd("CLUSTER").arg("SLOTS").query()?;
    let mut ranges = Vec::new();
    for range in reply {
        let Value::Array(fields) = range else {
            continue;
        };
        if let [Value::Int(first), Value::Int(last), Value::Array(master), ..] = &fields[..] {
            if let [host, Value::Int(port), ..] = &master[..] {
                let host = match host {
                    Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    Value::SimpleString(s) => s.clone(),
                    _ => continue,
                };
                ranges.push((*first as u16, *last as u16, format!("{host}:{port}")));
            }
        }
    }
    Ok(ranges)
}

fn owner(ranges: &[(u16, u16, String)], slot: u16) -> Option<&str> {
    ranges
        .iter()
        .find(|(a, b, _)| (*a..=*b).contains(&slot))
        .map(|(_, _, node)| node.as_str())
}
