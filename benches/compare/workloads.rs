//! The measurements: latency of sequential calls, throughput of N threads doing
//! GET/SET 50/50 for a fixed time, and the A/B interleaving that makes ours and
//! theirs share the machine's drift.
//!
//! Owns: how each side is driven, so that both do the same work through their
//! natural API (ours: one `Client`, a `Database` clone per thread; redis-rs: one sync
//! `Connection` per thread). Must never: count setup (connecting, populating keys)
//! inside a timed window, or let a failed call count as an op.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use resilient_redis::{Client, Database, StringCommands};

use crate::machine::{CpuTicks, Shares};

/// Keys the throughput workloads cycle through, all holding `value` beforehand.
pub struct Keys {
    pub names: Vec<String>,
    pub value: Vec<u8>,
}

impl Keys {
    pub fn new(prefix: &str, count: usize, value_len: usize) -> Keys {
        Keys {
            names: (0..count).map(|i| format!("{prefix}:{i:05}")).collect(),
            value: vec![b'v'; value_len],
        }
    }

    /// Sets every key (one pipelined batch, outside any timed window).
    pub fn populate(&self, db: &Database) {
        let batch = db.batch();
        for k in &self.names {
            let _ = batch.set(k.as_str(), self.value.as_slice());
        }
        batch.execute().expect("populate the keys");
    }
}

/// `BENCH_OURS_OPTIONS` (say `lanes=3`) is appended to the URL's query, for
/// prototyping a setting against the shipped defaults in one run.
pub fn ours_client(url: &str) -> Client {
    let url = match std::env::var("BENCH_OURS_OPTIONS") {
        Ok(extra) if !extra.is_empty() => {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}{extra}")
        }
        _ => url.to_string(),
    };
    Client::connect(&url).expect("resilient-redis connects")
}

pub fn theirs_conn(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("redis-rs connects")
}

/// Ours: `GET` into `Vec<u8>`; true when the value has the expected length.
pub fn ours_get(db: &Database, key: &str, len: usize) -> bool {
    matches!(db.get::<Vec<u8>>(key), Ok(v) if v.len() == len)
}

/// redis-rs: `GET` into `Vec<u8>`; true when the value has the expected length.
pub fn theirs_get(con: &mut redis::Connection, key: &str, len: usize) -> bool {
    matches!(redis::cmd("GET").arg(key).query::<Vec<u8>>(con), Ok(v) if v.len() == len)
}

fn ours_op(db: &mut Database, key: &str, set: Option<&[u8]>, len: usize) -> bool {
    match set {
        Some(v) => db.set(key, v).is_ok(),
        None => ours_get(db, key, len),
    }
}

fn theirs_op(con: &mut redis::Connection, key: &str, set: Option<&[u8]>, len: usize) -> bool {
    match set {
        Some(v) => redis::cmd("SET").arg(key).arg(v).query::<()>(con).is_ok(),
        None => theirs_get(con, key, len),
    }
}

/// Operations completed in a timed window, and the CPU the whole process spent in it.
#[derive(Clone, Copy, Debug)]
pub struct Rate {
    pub ops: u64,
    pub errors: u64,
    pub elapsed: Duration,
    /// User + system time of this process (every thread: callers and the client's
    /// reader, writer and supervisor threads) over the window.
    pub cpu: Duration,
    /// User + system time of the bench's `redis-server` over the window (zero when
    /// unknown, see [`watch_server`]).
    pub server_cpu: Duration,
    /// What the machine's CPUs did over the window (zero where unknown).
    pub machine: Shares,
}

impl Rate {
    pub fn per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }

    /// CPU per completed call, in nanoseconds.
    pub fn cpu_per_call(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.ops.max(1) as f64
    }

    /// Client and server CPU per completed call, in nanoseconds: what a call costs the
    /// machine (a client that batches saves the server work; one that spins spends
    /// it).
    pub fn machine_cpu_per_call(&self) -> f64 {
        (self.cpu + self.server_cpu).as_nanos() as f64 / self.ops.max(1) as f64
    }
}

/// The bench's `redis-server`, whose CPU each window also reads (0: none).
static SERVER_PID: AtomicU32 = AtomicU32::new(0);

/// Makes every later window read the CPU time of process `pid` (the bench's server).
pub fn watch_server(pid: u32) {
    SERVER_PID.store(pid, Ordering::Relaxed);
}

fn server_cpu() -> Duration {
    match SERVER_PID.load(Ordering::Relaxed) {
        0 => Duration::ZERO,
        pid => cpu_of(&format!("/proc/{pid}/stat")),
    }
}

/// User + system CPU time of this process so far, all threads (also those that ended),
/// to the nanosecond (`CLOCK_PROCESS_CPUTIME_ID`, what `getrusage(RUSAGE_SELF)` sums,
/// without its 10 ms ticks: a client 10 ms from its server makes 100 calls a second).
pub fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// User + system CPU time from a `/proc/<pid>/stat` file (zero where unreadable).
fn cpu_of(path: &str) -> Duration {
    let Ok(stat) = std::fs::read_to_string(path) else {
        return Duration::ZERO;
    };
    // The command name (field 2) may hold spaces: count fields after its ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after ')'.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let ticks_per_sec = 100; // USER_HZ on Linux
    Duration::from_nanos((ticks(11) + ticks(12)) * (1_000_000_000 / ticks_per_sec))
}

/// `threads` threads sharing one fresh `Client`, each with its own `Database` clone,
/// GET/SET 50/50 for `dur`.
pub fn mixed_ours(url: &str, threads: usize, dur: Duration, keys: &Keys) -> Rate {
    let client = ours_client(url);
    let db = client.database();
    let states: Vec<Database> = (0..threads).map(|_| db.clone()).collect();
    let len = keys.value.len();
    let rate = run_mixed(states, dur, keys, |db, k, set| ours_op(db, k, set, len));
    client.close();
    rate
}

/// Experiment: a `Client` per thread (each caller alone on its connection).
pub fn mixed_split(url: &str, threads: usize, dur: Duration, keys: &Keys) -> Rate {
    let clients: Vec<Client> = (0..threads).map(|_| ours_client(url)).collect();
    let states: Vec<Database> = clients.iter().map(|c| c.database()).collect();
    let len = keys.value.len();
    run_mixed(states, dur, keys, |db, k, set| ours_op(db, k, set, len))
}

/// `threads` threads each with its own redis-rs `Connection`, GET/SET 50/50 for `dur`.
pub fn mixed_theirs(url: &str, threads: usize, dur: Duration, keys: &Keys) -> Rate {
    let states: Vec<redis::Connection> = (0..threads).map(|_| theirs_conn(url)).collect();
    let len = keys.value.len();
    run_mixed(states, dur, keys, |con, k, set| theirs_op(con, k, set, len))
}

/// Like `mixed_ours`, GET only (profiling the read path alone).
pub fn gets_ours(url: &str, threads: usize, dur: Duration, keys: &Keys) -> Rate {
    let client = ours_client(url);
    let db = client.database();
    let states: Vec<Database> = (0..threads).map(|_| db.clone()).collect();
    let len = keys.value.len();
    let rate = run_mixed(states, dur, keys, |db, k, _| ours_get(db, k, len));
    client.close();
    rate
}

/// Like `mixed_theirs`, GET only.
pub fn gets_theirs(url: &str, threads: usize, dur: Duration, keys: &Keys) -> Rate {
    let states: Vec<redis::Connection> = (0..threads).map(|_| theirs_conn(url)).collect();
    let len = keys.value.len();
    run_mixed(states, dur, keys, |con, k, _| theirs_get(con, k, len))
}

/// Sets the flag when dropped, so a panic in the timing thread still stops the
/// workers (a scope joins them before unwinding further).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs one state per thread, all released together; each alternates GET and SET over
/// the key space (threads start at different keys) until the window closes.
fn run_mixed<S: Send>(
    states: Vec<S>,
    dur: Duration,
    keys: &Keys,
    op: impl Fn(&mut S, &str, Option<&[u8]>) -> bool + Sync,
) -> Rate {
    let barrier = Barrier::new(states.len() + 1);
    let stop = AtomicBool::new(false);
    let op = &op;
    std::thread::scope(|scope| {
        let _stop_guard = StopOnDrop(&stop);
        let workers: Vec<_> = states
            .into_iter()
            .enumerate()
            .map(|(t, mut state)| {
                let (barrier, stop) = (&barrier, &stop);
                scope.spawn(move || {
                    barrier.wait();
                    let (mut ops, mut errors) = (0u64, 0u64);
                    let mut i = t * 7919;
                    while !stop.load(Ordering::Relaxed) {
                        let key = &keys.names[i % keys.names.len()];
                        let set = (i % 2 == 1).then_some(keys.value.as_slice());
                        if op(&mut state, key, set) {
                            ops += 1;
                        } else {
                            errors += 1;
                        }
                        i += 1;
                    }
                    (ops, errors)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let cpu_start = process_cpu();
        let server_start = server_cpu();
        let machine_start = CpuTicks::now();
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        let mut rate = Rate {
            ops: 0,
            errors: 0,
            elapsed: Duration::ZERO,
            cpu: Duration::ZERO,
            server_cpu: Duration::ZERO,
            machine: Shares::default(),
        };
        for w in workers {
            let (ops, errors) = w.join().expect("a bench thread panicked");
            rate.ops += ops;
            rate.errors += errors;
        }
        // Calls in flight when the window closed finish before the join: both sides
        // pay for their last call's latency alike.
        rate.elapsed = start.elapsed();
        rate.cpu = process_cpu().saturating_sub(cpu_start);
        rate.server_cpu = server_cpu().saturating_sub(server_start);
        rate.machine = CpuTicks::now().since(machine_start).shares();
        rate
    })
}

/// Per-call times of a sequential loop.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub nanos: Vec<f64>,
    pub errors: u64,
}

impl Samples {
    pub fn median(&self) -> f64 {
        median(&self.nanos)
    }

    pub fn percentile(&self, p: f64) -> f64 {
        percentile(&self.nanos, p)
    }

    /// Times `n` calls of `f` one by one (a failed call is counted, not timed).
    pub fn record(&mut self, n: usize, f: &mut dyn FnMut() -> bool) {
        for _ in 0..n {
            let t = Instant::now();
            let ok = f();
            let took = t.elapsed();
            if ok {
                self.nanos.push(took.as_nanos() as f64);
            } else {
                self.errors += 1;
            }
        }
    }
}

/// Runs each contestant once per round, in turn (A/B/A/B…), so slow drift of the
/// shared 2-core machine hits all of them alike; returns each one's results in order.
pub fn interleave<T>(rounds: usize, runs: &mut [&mut dyn FnMut() -> T]) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = runs.iter().map(|_| Vec::with_capacity(rounds)).collect();
    for _ in 0..rounds {
        for (run, results) in runs.iter_mut().zip(out.iter_mut()) {
            results.push(run());
        }
    }
    out
}

/// Sequential latency, ours vs theirs: `warmup` untimed calls each, then `rounds`
/// alternating chunks of `per_round` timed calls each.
pub fn latency_ab(
    rounds: usize,
    per_round: usize,
    warmup: usize,
    ours: &mut dyn FnMut() -> bool,
    theirs: &mut dyn FnMut() -> bool,
) -> (Samples, Samples) {
    for _ in 0..warmup {
        ours();
        theirs();
    }
    let (mut a, mut b) = (Samples::default(), Samples::default());
    for _ in 0..rounds {
        a.record(per_round, ours);
        b.record(per_round, theirs);
    }
    (a, b)
}

pub fn median(v: &[f64]) -> f64 {
    percentile(v, 50.0)
}

/// Nearest-rank percentile; NaN for no samples.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}
