//! Redis Cluster failovers under load, measured on a real 3-master, 3-replica cluster
//! (`cluster-node-timeout 2000`, `cluster-require-full-coverage no`), one `Client`
//! with default options and `with_retry(RetryPolicy::default())`, 3 threads per shard
//! writing and reading keys of their shard:
//!
//! - graceful: `CLUSTER FAILOVER` on shard A's replica: calls failed, the longest
//!   stretch without a successful call on shard A, the longest single call; and, for
//!   comparison, the longest stretch of a raw socket that follows `-MOVED` (what the
//!   server allows);
//! - kill: shard B's master SIGKILLed: when the cluster promoted its replica, when
//!   shard B was served again after that, calls failed after the promotion, and the
//!   longest stretch without a success on the other shards.
//!
//! `cargo bench --bench cluster_failover` (runs: `CLUSTER_FAILOVER_RUNS`, default 3;
//! `CLUSTER_FAILOVER_LOG=debug` prints the client's log with timestamps).

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::RetryPolicy;
use resilient_redis::prelude::*;
use support::cluster::{tags_owned_by, ClusterSpec, Load, RawConn, RedisCluster, Reply};

/// How long the load runs after a graceful failover's promotion, and after a kill's.
const AFTER: Duration = Duration::from_secs(3);

#[derive(Default, Clone)]
struct Run {
    graceful_promoted: Duration,
    graceful_failed: usize,
    graceful_gap: Duration,
    graceful_longest: Duration,
    raw_gap: Duration,
    kill_promoted: Duration,
    kill_served: Option<Duration>,
    kill_failed_after: usize,
    kill_failed_before: usize,
    others_gap: Duration,
    /// `None` when the restarted node did not come back in sync in time (the run's
    /// failback is then left out).
    failback: Option<Failback>,
}

#[derive(Default, Clone)]
struct Failback {
    promoted: Duration,
    failed: usize,
    gap: Duration,
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let runs: usize = std::env::var("CLUSTER_FAILOVER_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    if let Ok(level) = std::env::var("CLUSTER_FAILOVER_LOG") {
        Logger::install(&level);
    }
    let mut results = Vec::new();
    for run in 1..=runs {
        let r = one_run();
        println!(
            "run {run}: graceful: promoted after {} ms, {} failed, gap {} ms, longest call {} ms, raw socket gap {} ms | kill: promoted after {} ms, served {} after, {} failed after promotion ({} before), other shards' gap {} ms | failback: {}",
            r.graceful_promoted.as_millis(),
            r.graceful_failed,
            r.graceful_gap.as_millis(),
            r.graceful_longest.as_millis(),
            r.raw_gap.as_millis(),
            r.kill_promoted.as_millis(),
            r.kill_served
                .map_or_else(|| "never".to_string(), |d| format!("{} ms", d.as_millis())),
            r.kill_failed_after,
            r.kill_failed_before,
            r.others_gap.as_millis(),
            r.failback.as_ref().map_or_else(
                || "skipped".to_string(),
                |f| format!(
                    "promoted after {} ms, {} failed, gap {} ms",
                    f.promoted.as_millis(),
                    f.failed,
                    f.gap.as_millis()
                )
            ),
        );
        results.push(r);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!();
    println!(
        "{runs} runs; load average at the end: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("| figure | median | max |");
    println!("|---|---|---|");
    let ms = |f: &dyn Fn(&Run) -> Duration| row(&results, |r| f(r).as_millis() as f64);
    let n = |f: &dyn Fn(&Run) -> usize| row(&results, |r| f(r) as f64);
    let failbacks: Vec<Failback> = results.iter().filter_map(|r| r.failback.clone()).collect();
    let fb = |f: &dyn Fn(&Failback) -> f64| {
        let mut v: Vec<f64> = failbacks.iter().map(f).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        median_max(&v)
    };
    print_row(
        "graceful: replica promoted after CLUSTER FAILOVER (ms)",
        ms(&|r| r.graceful_promoted),
    );
    print_row("graceful: failed calls", n(&|r| r.graceful_failed));
    print_row(
        "graceful: longest stretch without a success on the shard (ms)",
        ms(&|r| r.graceful_gap),
    );
    print_row("graceful: longest call (ms)", ms(&|r| r.graceful_longest));
    print_row(
        "graceful: raw socket following MOVED, longest stretch (ms)",
        ms(&|r| r.raw_gap),
    );
    print_row(
        "kill: replica promoted after the SIGKILL (ms)",
        ms(&|r| r.kill_promoted),
    );
    print_row(
        "kill: shard served again after the promotion (ms)",
        row(&results, |r| {
            r.kill_served
                .map_or(f64::INFINITY, |d| d.as_millis() as f64)
        }),
    );
    print_row(
        "kill: failed calls after the promotion",
        n(&|r| r.kill_failed_after),
    );
    print_row(
        "kill: failed calls before the promotion",
        n(&|r| r.kill_failed_before),
    );
    print_row(
        "kill: other shards, longest stretch without a success (ms)",
        ms(&|r| r.others_gap),
    );
    print_row(
        "failback to the restarted node: promoted after (ms)",
        fb(&|f| f.promoted.as_millis() as f64),
    );
    print_row("failback: failed calls", fb(&|f| f.failed as f64));
    print_row(
        "failback: longest stretch without a success on the shard (ms)",
        fb(&|f| f.gap.as_millis() as f64),
    );
}

fn row(results: &[Run], f: impl Fn(&Run) -> f64) -> (f64, f64) {
    let mut v: Vec<f64> = results.iter().map(f).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    median_max(&v)
}

/// Median and maximum of sorted figures (`NaN` when there are none).
fn median_max(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (median, v.last().copied().unwrap_or(0.0))
}

fn print_row(name: &str, (median, max): (f64, f64)) {
    println!("| {name} | {median:.0} | {max:.0} |");
}

fn one_run() -> Run {
    // `CLUSTER_FAILOVER_EARLY=1`: the client connects before the replicas are in sync,
    // as right after `redis-cli --cluster create`.
    let early = std::env::var("CLUSTER_FAILOVER_EARLY").is_ok_and(|v| v == "1");
    let spec = ClusterSpec::new(3, 1)
        .node_timeout_ms(2000)
        .full_coverage(false)
        .sync_replicas(!early);
    let mut cluster = RedisCluster::start_spec(spec).expect("server tests are not skipped");
    let client = Client::connect(cluster.nodes[0].url().as_str()).expect("connect");
    if early {
        cluster.wait_replicas_in_sync();
    }
    let db = client.database();
    let shards = cluster.shards();
    assert_eq!(shards.len(), 3, "{shards:?}");
    let tags: Vec<Vec<String>> = shards
        .iter()
        .map(|(master, _)| tags_owned_by(&cluster, master.to_owned(), 3))
        .collect();
    let load = Load::start(&db, &tags, 3, Some(RetryPolicy::default()));

    // The raw socket that follows MOVED, on shard A (index 0).
    let raw_stop = Arc::new(AtomicBool::new(false));
    let raw_successes = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let raw = {
        let (stop, successes) = (raw_stop.clone(), raw_successes.clone());
        let (port, tag) = (shards[0].0, tags[0][0].clone());
        thread::spawn(move || raw_load(port, &tag, &stop, &successes))
    };
    // `CLUSTER_FAILOVER_WARMUP_SECS` (default 1): load before the graceful failover; past
    // the keep-alive (10 s), idle connections to the replicas have seen heartbeats.
    let warmup = std::env::var("CLUSTER_FAILOVER_WARMUP_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    thread::sleep(Duration::from_secs(warmup));

    // Graceful, on shard A.
    let replica_a = shards[0].1.expect("shard A has a replica");
    let graceful_at = Instant::now();
    cluster.graceful_failover(replica_a);
    let promoted_a = RedisCluster::wait_promoted(replica_a, Duration::from_secs(20))
        .expect("the replica was promoted");
    thread::sleep(AFTER);
    let graceful_end = Instant::now();
    raw_stop.store(true, Ordering::Relaxed);
    let _ = raw.join();

    // Kill, on shard B.
    let (master_b, replica_b) = (shards[1].0, shards[1].1.expect("shard B has a replica"));
    let kill_at = Instant::now();
    cluster.node_mut(master_b).kill();
    let promoted_b = RedisCluster::wait_promoted(replica_b, Duration::from_secs(30))
        .expect("the replica was promoted");
    thread::sleep(AFTER);
    let end = Instant::now();

    // Failback: the killed master restarted (it rejoins as a replica), then a graceful
    // failover back to it.
    cluster.node_mut(master_b).restart();
    let synced = support::wait_until(Duration::from_secs(30), || {
        RawConn::connect(master_b)
            .and_then(|mut c| c.command(&["INFO", "replication"]).ok())
            .is_some_and(|r| r.text().contains("master_link_status:up"))
    });
    let failback_window = if synced {
        let at = Instant::now();
        cluster.graceful_failover(master_b);
        let promoted = RedisCluster::wait_promoted(master_b, Duration::from_secs(20))
            .expect("the restarted node was promoted");
        thread::sleep(AFTER);
        Some((at, promoted, Instant::now()))
    } else {
        let role = RawConn::connect(master_b).and_then(|mut c| c.command(&["ROLE"]).ok());
        eprintln!("the restarted node did not sync in 30 s (ROLE: {role:?}); no failback this run");
        None
    };
    let record = load.finish();
    client.close();

    let raw_gap = {
        let successes = raw_successes.lock().expect("raw record");
        let mut last = graceful_at;
        let mut gap = Duration::ZERO;
        for &s in successes
            .iter()
            .filter(|s| **s >= graceful_at && **s <= graceful_end)
        {
            gap = gap.max(s - last);
            last = s;
        }
        gap
    };
    let attempts = |shard: usize, from: Instant, to: Instant| {
        let (from, to) = (from - record.start, to - record.start);
        let mut kinds: Vec<String> = record.attempts[shard]
            .iter()
            .filter(|c| c.end >= from && c.end <= to)
            .filter_map(|c| c.error.map(|k| format!("{k:?}")))
            .collect();
        kinds.sort();
        kinds.dedup_by(|a, b| a == b);
        kinds
    };
    if let Some(start) = LOG_START.get() {
        let at = |shard: usize, from: Instant, to: Instant| {
            let (began, gap) = record.max_gap_span(shard, from, to);
            format!(
                "{gap:?} from {:.3}",
                began.saturating_duration_since(*start).as_secs_f64()
            )
        };
        eprintln!(
            "longest gaps: graceful {} (failover at {:.3}); kill, other shards {} / {}",
            at(0, graceful_at, graceful_end),
            graceful_at.saturating_duration_since(*start).as_secs_f64(),
            at(0, kill_at, end),
            at(2, kill_at, end),
        );
    }
    eprintln!(
        "failed attempts: graceful {:?}; kill {:?}; failback {:?}",
        attempts(0, graceful_at, graceful_end),
        attempts(1, kill_at, end),
        failback_window.map(|(at, _, end)| attempts(1, at, end))
    );
    let failed_between = |shard: usize, from: Instant, to: Instant| {
        let (from, to) = (from - record.start, to - record.start);
        record.shards[shard]
            .iter()
            .filter(|c| c.error.is_some() && c.end >= from && c.end <= to)
            .count()
    };
    Run {
        graceful_promoted: promoted_a - graceful_at,
        graceful_failed: failed_between(0, graceful_at, graceful_end),
        graceful_gap: record.max_gap(0, graceful_at, graceful_end),
        graceful_longest: record.longest_call(0, graceful_at, graceful_end),
        raw_gap,
        kill_promoted: promoted_b - kill_at,
        kill_served: record.served_after(1, promoted_b),
        kill_failed_after: record.failures_after(1, promoted_b).len(),
        kill_failed_before: failed_between(1, kill_at, promoted_b),
        failback: failback_window.map(|(at, promoted, end)| Failback {
            promoted: promoted - at,
            failed: failed_between(1, at, end),
            gap: record.max_gap(1, at, end),
        }),
        others_gap: [0, 2]
            .iter()
            .map(|&s| record.max_gap(s, kill_at, end))
            .max()
            .unwrap_or_default(),
    }
}

/// SET in a loop over one raw connection per node, following `-MOVED`; records every
/// success.
fn raw_load(port: u16, tag: &str, stop: &AtomicBool, successes: &Mutex<Vec<Instant>>) {
    let mut target = port;
    let mut conn = RawConn::connect(target);
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = conn.as_mut() else {
            thread::sleep(Duration::from_millis(1));
            conn = RawConn::connect(target);
            continue;
        };
        let key = format!("{{{tag}}}:raw");
        match c.command(&["SET", &key, &i.to_string()]) {
            Ok(Reply::Simple(_)) => successes.lock().expect("raw record").push(Instant::now()),
            Ok(Reply::Error(e)) if e.starts_with("MOVED ") => {
                target = e
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(target);
                conn = RawConn::connect(target);
            }
            Ok(_) => {}
            Err(_) => conn = RawConn::connect(target),
        }
        i += 1;
    }
}

/// When the log started (set when `CLUSTER_FAILOVER_LOG` is).
static LOG_START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// The client's log on stderr, with seconds since start and the thread's name.
struct Logger {
    start: Instant,
    level: log::LevelFilter,
}

impl Logger {
    fn install(level: &str) {
        let level = level.parse().unwrap_or(log::LevelFilter::Info);
        let logger = Box::leak(Box::new(Logger {
            start: *LOG_START.get_or_init(Instant::now),
            level,
        }));
        if log::set_logger(logger).is_ok() {
            log::set_max_level(level);
        }
    }
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= self.level && m.target().starts_with("resilient_redis")
    }

    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let _ = writeln!(
                std::io::stderr(),
                "{:>8.3} {:<5} [{}] {}",
                self.start.elapsed().as_secs_f64(),
                r.level(),
                thread::current().name().unwrap_or("?"),
                r.args()
            );
        }
    }

    fn flush(&self) {}
}
