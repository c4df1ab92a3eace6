//! Metrics: a simulated outage against in-process fake servers, then a snapshot of
//! every metric it moved, as a dashboard would see them.
//!
//! `cargo run --example metrics --features metrics`. The recorder is `metrics-util`'s
//! in-memory `DebuggingRecorder`; in production, install an exporter instead
//! (`metrics-exporter-prometheus`, ...): the client only talks to the `metrics` facade.
//! Every metric is listed in `docs/metrics.md`.
//!
//! The timeline, on two regions `east` (preferred) and `west`, plus one standalone
//! client:
//! 1. traffic, one application error (`WRONGTYPE`);
//! 2. an error storm on `east` (`-LOADING`): its circuit breaker trips, traffic moves
//!    to `west`, and back once `east` answers again;
//! 3. `east` goes away (connections closed, new ones refused): reconnects fail, traffic
//!    moves to `west`; `east` comes back: a reconnect succeeds, traffic fails back;
//! 4. maintenance on `east`: `MIGRATING` / `MIGRATED` relax its timeouts, a `MOVING`
//!    is handed off;
//! 5. a standalone client loses its server: callers wait in its backlog, one times out.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use resilient_redis::availability::{CircuitBreaker, Group, GroupOptions, HealthCheck, Member};
use resilient_redis::maintenance::NotificationKind;
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeServer, Notification};

type Failure = Box<dyn std::error::Error>;

fn main() -> Result<(), Failure> {
    // Installed before any client is built: what is recorded before it is lost.
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install()?;

    let east = FakeServer::start()?;
    let west = FakeServer::start()?;
    let member = |server: &FakeServer, name: &str, weight: u32| {
        Member::new(format!(
            "{}?syncTimeout=300&connectTimeout=300&reconnectMin=20&reconnectMax=200\
             &maintNotifications=enabled",
            server.url()
        ))
        .with_name(name)
        .with_weight(weight)
    };
    let check = HealthCheck::default()
        .interval(Duration::from_millis(100))
        .probe_count(1)
        .probe_timeout(Duration::from_millis(200));
    let options = GroupOptions::default()
        .health_check(check.clone())
        .failback_check(check)
        .circuit_breaker(CircuitBreaker::default().minimum_number_of_failures(10));
    let group = Group::connect(
        vec![member(&east, "east", 2), member(&west, "west", 1)],
        options,
    )?;
    let db = group.database();
    let active = || group.active().map(|m| m.name().to_string());
    let serving = |name: &str| {
        let name = name.to_string();
        move || active().as_deref() == Some(name.as_str())
    };

    println!("1. traffic");
    for i in 0..20 {
        db.set("counter", i)?;
        let _: Option<i64> = db.get("counter")?;
    }
    db.cmd("LPUSH").arg("list").arg("x").exec()?;
    let wrong = db.get::<String>("list");
    println!("   GET on a list: {}", describe(&wrong));

    println!("2. an error storm on east trips its breaker");
    east.fail_command("SET", "LOADING Redis is loading the dataset in memory");
    for _ in 0..20 {
        let _ = db.set("k", "v");
    }
    wait_for("traffic on west", serving("west"))?;
    east.clear_failures();
    wait_for("traffic back on east", serving("east"))?;

    println!("3. east goes away, then comes back");
    east.refuse_connections(true);
    east.close_all_connections();
    wait_for("traffic on west", serving("west"))?;
    db.set("during", "outage")?;
    east.refuse_connections(false);
    wait_for("traffic back on east", serving("east"))?;

    println!("4. maintenance on east");
    east.set_moving_close(false);
    east.notify(Notification::migrating(2, &["1"]));
    east.notify(Notification::migrated(&["1"]));
    east.notify(Notification::moving(1));
    let east_client = group.members()[0].client().cloned();
    let east_client = east_client.ok_or("east has no client")?;
    wait_for("the MOVING handed off", || {
        east_client.maintenance_status().iter().any(|s| {
            s.last_handoff
                .as_ref()
                .is_some_and(|h| h.trigger == NotificationKind::Moving)
        })
    })?;

    println!("5. a standalone client loses its server");
    let solo = FakeServer::start()?;
    let client = Client::connect(format!(
        "{}?syncTimeout=300&reconnectMin=20&reconnectMax=100",
        solo.url()
    ))?;
    let solo_db = client.database();
    solo_db.set("k", "v")?;
    solo.refuse_connections(true);
    solo.close_all_connections();
    wait_for("the client to notice", || !client.is_connected())?;
    println!(
        "   waiting in the backlog: {}",
        describe(&solo_db.get::<String>("k"))
    );
    let patient = solo_db.with_timeout(Duration::from_secs(5));
    let waiter = thread::spawn(move || patient.get::<String>("k"));
    thread::sleep(Duration::from_millis(200));
    solo.refuse_connections(false);
    let served = waiter.join().map_err(|_| "the waiting caller panicked")?;
    println!("   served after the reconnect: {}", describe(&served));

    println!("\nevery series this run moved:\n");
    print_snapshot(snapshotter.snapshot());
    group.close();
    client.close();
    Ok(())
}

/// Polls `done` for up to 15 s (generous: a loaded machine); an error if it never holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> Result<(), Failure> {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("gave up waiting for {what}").into());
        }
        thread::sleep(Duration::from_millis(20));
    }
    println!("   {what}");
    Ok(())
}

fn describe<T: std::fmt::Debug>(result: &resilient_redis::Result<T>) -> String {
    match result {
        Ok(v) => format!("ok ({v:?})"),
        Err(e) => format!("error: {e}"),
    }
}

/// One line per series, grouped by metric: its labels and its value (a histogram's
/// count, mean and max, in the metric's unit).
fn print_snapshot(snapshot: metrics_util::debugging::Snapshot) {
    let mut by_name: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (key, unit, _, value) in snapshot.into_vec() {
        let key = key.key();
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let unit = unit.map(|u| u.as_canonical_label()).unwrap_or_default();
        let value = match value {
            DebugValue::Counter(n) => n.to_string(),
            DebugValue::Gauge(g) => g.to_string(),
            DebugValue::Histogram(values) => {
                let n = values.len();
                let sum: f64 = values.iter().map(|v| v.into_inner()).sum();
                let max = values.iter().map(|v| v.into_inner()).fold(0.0, f64::max);
                let mean = if n == 0 { 0.0 } else { sum / n as f64 };
                format!("count={n} mean={mean:.4} {unit} max={max:.4} {unit}")
            }
        };
        by_name
            .entry(key.name().to_string())
            .or_default()
            .push((labels.join(","), value));
    }
    for (name, mut series) in by_name {
        series.sort();
        println!("{name}");
        for (labels, value) in series {
            println!("  {{{labels}}} {value}");
        }
    }
}
