//! P6, P7, P8 of the performance spec: failover timings of a group of three real
//! `redis-server`s under load, and the memory and threads of an idle group.
//!
//! P6: the active member SIGKILLed under 8 threads of load: milliseconds from the kill
//!     to the first success (necessarily on another member); zero hung callers.
//! P7: the active member SIGSTOPped (socket open, no answers): milliseconds from the
//!     stop to the first success; no caller waits past its timeout (+ slack).
//! P8: an idle 3-member group: RSS growth and threads (2 per connection + 1 supervisor).
//!
//! `cargo bench --bench failover` (runs: `FAILOVER_RUNS`, default 5).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::{Group, GroupOptions, HealthCheck, Member};
use resilient_redis::prelude::*;

/// syncTimeout of the members: a caller never waits much longer than this.
const CALLER_TIMEOUT: Duration = Duration::from_millis(1000);
/// P7's health check: a probe timeout of 1 s, checked every 500 ms.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);

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

fn group(servers: &[Server], check: HealthCheck) -> Group {
    let members = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Member::new(format!(
                "127.0.0.1:{},syncTimeout={},connectTimeout=500,reconnectMax=500",
                s.port,
                CALLER_TIMEOUT.as_millis()
            ))
            .with_name(format!("m{i}"))
            .with_weight(30 - 10 * i as u32)
        })
        .collect();
    Group::connect(members, GroupOptions::default().health_check(check)).expect("group")
}

/// Runs 8 threads of SET/GET, applies `fault` to the active member, and returns
/// (ms from the fault to the first success, the longest single call in ms).
fn fault_under_load(fault: &str, check: HealthCheck) -> (f64, f64) {
    let servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    let g = group(&servers, check);
    let db = g.database();
    let stop = Arc::new(AtomicBool::new(false));
    let fault_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let first_after: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let longest_us = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let (db, stop) = (db.clone(), stop.clone());
            let (fault_at, first_after, longest_us) =
                (fault_at.clone(), first_after.clone(), longest_us.clone());
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
                    longest_us.fetch_max((done - started).as_micros() as u64, Ordering::Relaxed);
                    let faulted = *fault_at.lock().unwrap();
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
    // Timed from when `kill` has delivered the signal (spawning it takes a while).
    servers[0].signal(fault);
    *fault_at.lock().unwrap() = Some(Instant::now());
    let deadline = Instant::now() + Duration::from_secs(30);
    while first_after.lock().unwrap().is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let at = fault_at.lock().unwrap().expect("fault time");
    let first = first_after
        .lock()
        .unwrap()
        .map_or(f64::INFINITY, |f| (f - at).as_secs_f64() * 1e3);
    g.close();
    (first, longest_us.load(Ordering::Relaxed) as f64 / 1e3)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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

fn main() {
    let runs: usize = std::env::var("FAILOVER_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let default_check = HealthCheck::default();
    let fast_check = HealthCheck {
        interval: Duration::from_millis(500),
        probe_timeout: PROBE_TIMEOUT,
        ..HealthCheck::default()
    };
    let mut p6 = Vec::new();
    let mut p6_longest = 0f64;
    let mut p7 = Vec::new();
    let mut p7_longest = 0f64;
    for _ in 0..runs {
        let (first, longest) = fault_under_load("-KILL", default_check.clone());
        p6.push(first);
        p6_longest = p6_longest.max(longest);
        let (first, longest) = fault_under_load("-STOP", fast_check.clone());
        p7.push(first);
        p7_longest = p7_longest.max(longest);
    }
    // P8: an idle 3-member group, after a warm-up group so allocator pools exist.
    let servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    drop(group(&servers, default_check.clone()));
    thread::sleep(Duration::from_millis(300));
    let (rss_before, threads_before) = (status_kib("VmRSS:"), threads());
    let idle = group(&servers, default_check);
    thread::sleep(Duration::from_secs(2));
    let (rss_after, threads_after) = (status_kib("VmRSS:"), threads());
    let connections = 3;
    let expected_threads = 2 * connections + 1;
    drop(idle);

    let slack = CALLER_TIMEOUT.as_secs_f64() * 1e3 + 500.0;
    let p7_target = PROBE_TIMEOUT.as_secs_f64() * 1e3 + 1000.0;
    println!("| workload | measured | target | pass |");
    println!("|---|---|---|---|");
    let row = |name: &str, measured: String, target: String, pass: bool| {
        println!(
            "| {name} | {measured} | {target} | {} |",
            if pass { "pass" } else { "FAIL" }
        );
    };
    let p6_max = p6.iter().cloned().fold(0f64, f64::max);
    row(
        "P6 kill -> first success (median / max of runs)",
        format!("{:.1} / {:.1} ms", median(p6.clone()), p6_max),
        "≤ 500 ms".into(),
        p6_max <= 500.0,
    );
    row(
        "P6 longest single call",
        format!("{p6_longest:.0} ms"),
        format!("≤ timeout + 500 ms = {slack:.0} ms"),
        p6_longest <= slack,
    );
    let p7_max = p7.iter().cloned().fold(0f64, f64::max);
    row(
        "P7 stop -> first success (median / max of runs)",
        format!("{:.1} / {:.1} ms", median(p7.clone()), p7_max),
        format!("≤ probe timeout + 1 s = {p7_target:.0} ms"),
        p7_max <= p7_target,
    );
    row(
        "P7 longest single call",
        format!("{p7_longest:.0} ms"),
        format!("≤ {slack:.0} ms"),
        p7_longest <= slack,
    );
    let growth_mib = rss_after.saturating_sub(rss_before) as f64 / 1024.0;
    row(
        "P8 idle 3-member group: RSS growth",
        format!("{growth_mib:.1} MiB"),
        "≤ 8 MiB".into(),
        growth_mib <= 8.0,
    );
    let added = threads_after.saturating_sub(threads_before);
    row(
        "P8 threads added",
        format!("{added}"),
        format!("2 x {connections} connections + 1 supervisor = {expected_threads}"),
        added == expected_threads,
    );
}
