//! P6, P6b, P7, P8 of the performance spec: failover timings of a group of three real
//! `redis-server`s under load, with the **default options** a user gets (nothing
//! tuned: 5 s command and connect timeouts, the default health check, breaker and
//! retry policy), and the memory and threads of an idle group.
//!
//! P6:  the active member SIGKILLed under 8 threads of load (GET/SET through
//!      `with_retry(RetryPolicy::default())`): the longest stretch without a successful
//!      call after the kill (only calls started after it count), and failed calls.
//! P6h: the same while a standby is hung (SIGSTOP), after the group found it hung, so
//!      its reconnect is stuck in a handshake when the active member dies.
//! P6b: the heaviest member hung when `Group::connect` is called: time to `connect`
//!      returning and to the first write, and which member served it.
//! P7:  the active member SIGSTOPped (socket open, no answers): the stretch without a
//!      successful call, failed calls, the longest single call.
//! P8:  an idle 3-member group: RSS growth and threads.
//!
//! `cargo bench --bench failover` (runs per row: `FAILOVER_RUNS`, default 5).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::{Group, GroupOptions, Member, RetryPolicy};
use resilient_redis::prelude::*;

struct Server {
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start() -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install -y redis-server)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            thread::sleep(Duration::from_millis(5));
        }
        Server {
            port,
            child: Some(child),
        }
    }

    fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            let _ = Command::new("kill")
                .arg(sig)
                .arg(c.id().to_string())
                .status();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.signal("-CONT");
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Members m0 (weight 30), m1 (20), m2 (10), every option at its default.
fn members(servers: &[Server]) -> Vec<Member> {
    servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Member::new(format!("127.0.0.1:{}", s.port))
                .with_name(format!("m{i}"))
                .with_weight(30 - 10 * i as u32)
        })
        .collect()
}

fn three() -> (Vec<Server>, Group) {
    let servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    let g = Group::connect(members(&servers), GroupOptions::default()).expect("group");
    assert_eq!(
        g.active().map(|m| m.name().to_string()).as_deref(),
        Some("m0")
    );
    (servers, g)
}

/// 8 threads of SET/GET with the default retry policy, timing the stretch without a
/// successful call after a fault.
struct Load {
    stop: Arc<AtomicBool>,
    fault_at: Arc<Mutex<Option<Instant>>>,
    first_after: Arc<Mutex<Option<Instant>>>,
    failures: Arc<AtomicU64>,
    longest_us: Arc<AtomicU64>,
    workers: Vec<thread::JoinHandle<()>>,
}

/// What one faulted run measured.
struct Outcome {
    gap_ms: f64,
    failures: u64,
    longest_ms: f64,
}

impl Load {
    fn start(g: &Group) -> Load {
        let db = g
            .database()
            .with_retry(RetryPolicy::default())
            .expect("a database that retries");
        let stop = Arc::new(AtomicBool::new(false));
        let fault_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let first_after: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let failures = Arc::new(AtomicU64::new(0));
        let longest_us = Arc::new(AtomicU64::new(0));
        let workers = (0..8)
            .map(|t| {
                let (db, stop) = (db.clone(), stop.clone());
                let (fault_at, first_after) = (fault_at.clone(), first_after.clone());
                let (failures, longest_us) = (failures.clone(), longest_us.clone());
                thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let started = Instant::now();
                        let ok = if i % 2 == 0 {
                            db.set(format!("f:{t}"), i).is_ok()
                        } else {
                            db.get::<Option<u64>>(format!("f:{t}")).is_ok()
                        };
                        let done = Instant::now();
                        longest_us
                            .fetch_max((done - started).as_micros() as u64, Ordering::Relaxed);
                        let faulted = *fault_at.lock().unwrap();
                        if !ok && faulted.is_some() {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                        if ok && faulted.is_some_and(|f| started > f) {
                            let mut first = first_after.lock().unwrap();
                            if first.is_none_or(|x| done < x) {
                                *first = Some(done);
                            }
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(500));
        longest_us.store(0, Ordering::Relaxed);
        Load {
            stop,
            fault_at,
            first_after,
            failures,
            longest_us,
            workers,
        }
    }

    /// Signals `server` and marks the fault time once `kill` has delivered it.
    fn fault(&self, server: &Server, sig: &str) {
        server.signal(sig);
        *self.fault_at.lock().unwrap() = Some(Instant::now());
    }

    /// Waits for the first success after the fault (bounded), lets the load run a
    /// little longer to count failures after it, and stops.
    fn finish(self) -> Outcome {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.first_after.lock().unwrap().is_none() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        // Long enough for every call in flight at the fault to end (3 attempts of 5 s
        // at most, by the default policy), so a failure among them is counted.
        let settle = Instant::now() + Duration::from_secs(16);
        let longest = || self.longest_us.load(Ordering::Relaxed);
        let mut last = longest();
        thread::sleep(Duration::from_millis(300));
        while Instant::now() < settle && longest() != last {
            last = longest();
            thread::sleep(Duration::from_millis(300));
        }
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers {
            let _ = w.join();
        }
        let at = self.fault_at.lock().unwrap().expect("fault time");
        Outcome {
            gap_ms: self
                .first_after
                .lock()
                .unwrap()
                .map_or(f64::INFINITY, |f| (f - at).as_secs_f64() * 1e3),
            failures: self.failures.load(Ordering::Relaxed),
            longest_ms: self.longest_us.load(Ordering::Relaxed) as f64 / 1e3,
        }
    }
}

fn kill_active(hung_standby: bool) -> Outcome {
    let (servers, g) = three();
    if hung_standby {
        // Hung after the group connected; wait until the group has found it (its
        // next health check fails), so its reconnect hangs in a handshake now.
        servers[1].signal("-STOP");
        let m1 = g.members()[1].clone();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !m1.is_unhealthy() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(m1.is_unhealthy(), "the hung standby was not found");
        thread::sleep(Duration::from_millis(200));
    }
    let load = Load::start(&g);
    load.fault(&servers[0], "-KILL");
    let out = load.finish();
    g.close();
    out
}

fn stop_active() -> Outcome {
    let (servers, g) = three();
    let load = Load::start(&g);
    load.fault(&servers[0], "-STOP");
    let out = load.finish();
    g.close();
    out
}

/// (ms to `connect` returning, ms to the first write done, whether m0 served it).
fn heaviest_hung_at_connect() -> (f64, f64, bool) {
    let servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    servers[0].signal("-STOP");
    let t0 = Instant::now();
    let g = Group::connect(members(&servers), GroupOptions::default()).expect("group");
    let connected = t0.elapsed().as_secs_f64() * 1e3;
    g.database().set("first", "write").expect("first write");
    let written = t0.elapsed().as_secs_f64() * 1e3;
    let by_hung = g.active().is_some_and(|m| m.name() == "m0");
    g.close();
    (connected, written, by_hung)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn max(v: &[f64]) -> f64 {
    v.iter().cloned().fold(0f64, f64::max)
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn row(name: &str, measured: String, target: &str, pass: bool) {
    println!(
        "| {name} | {measured} | {target} | {} |",
        if pass { "pass" } else { "FAIL" }
    );
}

fn faulted_rows(name: &str, runs: &[Outcome], gap_target_ms: f64, target: &str) {
    let gaps: Vec<f64> = runs.iter().map(|o| o.gap_ms).collect();
    let failures: u64 = runs.iter().map(|o| o.failures).sum();
    let longest = runs.iter().map(|o| o.longest_ms).fold(0f64, f64::max);
    row(
        &format!("{name}: no successful call (median / max)"),
        format!("{:.1} / {:.1} ms", median(gaps.clone()), max(&gaps)),
        target,
        max(&gaps) <= gap_target_ms,
    );
    row(
        &format!("{name}: failed calls (all runs)"),
        failures.to_string(),
        "0",
        failures == 0,
    );
    // The default policy: 3 attempts of 5 s, 1 to 1.5 s between same-server attempts.
    row(
        &format!("{name}: longest single call"),
        format!("{longest:.0} ms"),
        "≤ 3 × 5 s + 2 × 1.5 s = 18000 ms",
        longest <= 18_000.0,
    );
}

fn main() {
    let runs: usize = std::env::var("FAILOVER_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    println!("load average before: {}", load_average());
    let p6: Vec<Outcome> = (0..runs).map(|_| kill_active(false)).collect();
    let p6h: Vec<Outcome> = (0..runs).map(|_| kill_active(true)).collect();
    let p6b: Vec<(f64, f64, bool)> = (0..runs).map(|_| heaviest_hung_at_connect()).collect();
    let p7: Vec<Outcome> = (0..runs).map(|_| stop_active()).collect();

    // P8: an idle 3-member group, after a warm-up group so allocator pools exist.
    let servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    drop(Group::connect(members(&servers), GroupOptions::default()).expect("group"));
    thread::sleep(Duration::from_millis(300));
    let (rss_before, threads_before) = (status_kib("VmRSS:"), threads());
    let idle = Group::connect(members(&servers), GroupOptions::default()).expect("group");
    thread::sleep(Duration::from_secs(2));
    let (rss_after, threads_after) = (status_kib("VmRSS:"), threads());
    drop(idle);

    println!(
        "default options, {runs} runs per row; load average after: {}",
        load_average()
    );
    println!();
    println!("| workload | measured | target | pass |");
    println!("|---|---|---|---|");
    faulted_rows("P6 active killed", &p6, 100.0, "≤ 100 ms");
    faulted_rows("P6h active killed, a standby hung", &p6h, 100.0, "≤ 100 ms");
    let connects: Vec<f64> = p6b.iter().map(|r| r.0).collect();
    let writes: Vec<f64> = p6b.iter().map(|r| r.1).collect();
    row(
        "P6b heaviest hung at connect: `connect` returns (median / max)",
        format!("{:.0} / {:.0} ms", median(connects.clone()), max(&connects)),
        "-",
        true,
    );
    row(
        "P6b heaviest hung at connect: first write done (median / max)",
        format!("{:.0} / {:.0} ms", median(writes.clone()), max(&writes)),
        "≤ 1000 ms, by a healthy member",
        max(&writes) <= 1000.0 && p6b.iter().all(|r| !r.2),
    );
    faulted_rows(
        "P7 active hung",
        &p7,
        4000.0,
        "≤ probe timeout + 1 s = 4000 ms",
    );
    let growth_mib = rss_after.saturating_sub(rss_before) as f64 / 1024.0;
    row(
        "P8 idle 3-member group: RSS growth",
        format!("{growth_mib:.1} MiB"),
        "≤ 8 MiB",
        growth_mib <= 8.0,
    );
    let added = threads_after.saturating_sub(threads_before);
    // Per member: a reader and a writer on its connection and its own supervisor
    // (it dials and reconnects); plus the group's supervisor.
    let expected = 3 * (2 + 1) + 1;
    row(
        "P8 threads added",
        added.to_string(),
        "3 members × (2 per connection + 1 supervisor) + 1 group supervisor = 10",
        added == expected,
    );
}
