//! Chaos soak: three real `redis-server`s in an availability group, 16 threads of mixed
//! traffic, and a seeded fault schedule that kills, stops (SIGSTOP), resumes and
//! restarts members under them. Alone in its own test binary, so the thread count it
//! checks at the end is its own.
//!
//! Parameters (environment): `SOAK_SECONDS` (chaos duration, default 40), `SOAK_SEED`
//! (default: fixed, so CI runs the same schedule; the seed is printed, and the same
//! seed gives the same sequence of faults and operations, though not the same timing
//! between them). `SOAK_SUMMARY=path` also writes the summary to a file.
//! Run long by hand: `SOAK_SECONDS=1800 cargo test --release --test soak -- --nocapture`.
//!
//! # Invariants, and how each is checked
//!
//! * **Every reply belongs to its request.** Every value written encodes its key
//!   (`soak:<thread>:<kind>:<seq>=<nonce>`, the nonce a hash of seed, thread and
//!   sequence), and keys are per thread and written once, so a read has exactly one
//!   right answer (or none, if the member serving it never saw the write). `ECHO`
//!   tokens, batch replies (a `GET` pipelined behind its own `SET` must return that
//!   value), transaction reads, pub/sub payloads (which name their channel and a
//!   sequence already published) and `INFO` in a transaction (whose port must be a
//!   member's) are all checked. Anything else is a mismatch: must be 0.
//! * **No caller waits past its timeout plus a stated slack.** Every call is timed
//!   against its budget: `round trips x timeout + SLACK`, the timeout being `TIMEOUT`
//!   (500 ms), or `RELAXED` (1 s) when a maintenance window may have been open during
//!   the call; a `watch` is a lease that may connect, WATCH, GET, MULTI/EXEC and on
//!   failure UNWATCH: 5 round trips. `SLACK` is 500 ms. Late calls: 0.
//! * **No acknowledged write is missing from the member that acknowledged it while
//!   that member stayed up.** The group's `active()` at ack time is only a hint (it can
//!   change between the send and the reply), so the check does not use it. Writes are
//!   checked at *checkpoints*: just before every kill (the last moment the victim's
//!   data exists), every 5 s otherwise, and at the end, by reading each running member
//!   directly with its own
//!   client (stopped members cannot answer: what needs one waits for a later
//!   checkpoint).
//!   - *attributed writes* go in a `MULTI`/`EXEC` with `INFO server`: the reply names
//!     the port and `run_id` of the very process that executed the write (a restarted
//!     server gets a new `run_id`). If that process is still the member's, the key
//!     must be there with its value; if it has died, the write is unverifiable.
//!   - *plain writes* (`SET`, and the `SET` of a batch) cannot name their executor, so
//!     each is checked against every member *incarnation* (process life, recorded by
//!     the fault thread: start before spawn, end after the kill is reaped) alive at any
//!     point between its send and its ack. Values are unique and written once, so
//!     finding the value on one of them proves its executor kept it (verified); not
//!     finding it is a loss if every one of those incarnations is still alive, and
//!     unverifiable if one of them has died (it may have been the acker).
//!   - the per-thread counter updated by `Database::watch` read-modify-writes only
//!     grows on a given process, so each process must hold at least the highest value
//!     it acknowledged (attributed by `run_id`, checked at each checkpoint).
//!
//!   A key found with a value other than its own is a mismatch. Checked writes are
//!   dropped, so the soak's own bookkeeping stays bounded however long it runs.
//! * **Memory bounded.** VmRSS (`/proc/self/status`) is sampled every 100 ms. After a
//!   warm-up (the first 10% of the chaos, at most 5 s) the peak must stay under the
//!   warm-up RSS + the largest backlog of unchecked writes the soak held (bytes) +
//!   `RSS_MARGIN`.
//! * **Every thread ends on close.** After `Group::close` and dropping every handle, no
//!   `rr-*` thread may remain (`/proc/self/task/*/comm`); the verification clients are
//!   closed and counted the same way.
//!
//! # Maintenance notifications
//!
//! Real Redis OSS never sends them, so each member is reached through a small TCP
//! proxy ([`Proxy`]) that forwards both ways and, when the schedule says so, writes a
//! maintenance notification (a RESP3 push: `MIGRATING`/`MIGRATED`, `FAILING_OVER`/
//! `FAILED_OVER`, `SMIGRATING`/`SMIGRATED`, `MOVING` to the same proxy) into the
//! server-to-client stream between two frames, on every connection to that member, as
//! a server announcing maintenance would. Members opt in with `maintNotifications=auto`
//! (Redis 7 refuses the opt-in, which `auto` absorbs, on every reconnect) and relax
//! timeouts to `RELAXED` for a short window; calls that overlap a window get the
//! relaxed timeout in their budget. The summary counts notifications injected and the
//! `ClientEvent::Maintenance` events the member clients raised for them.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{Read, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::{Group, GroupOptions, GroupSubscription, HealthCheck, Member};
use resilient_redis::prelude::*;
use resilient_redis::{ClientEvent, Error, ErrorKind};
use support::{threads_named, wait_until, RedisServer};

/// Worker threads of mixed traffic.
const THREADS: usize = 16;
/// `syncTimeout` and `connectTimeout` of every member.
const TIMEOUT: Duration = Duration::from_millis(500);
/// How far past its budget a call may return before it counts as late: scheduling on
/// a loaded 2-core machine (16 workers, ~50 client threads, three servers).
const SLACK: Duration = Duration::from_millis(500);
/// Allowed RSS growth past the warm-up, beyond the soak's own bookkeeping.
const RSS_MARGIN: u64 = 64 * 1024 * 1024;
/// The fault schedule keeps at least one member untouched (stopped + killed ≤ 2).
const MAX_FAULTED: usize = 2;
/// Writes checked per round of reads at a checkpoint.
const CHECK_CHUNK: usize = 5000;
/// Longest time between two checkpoints (there is one before every kill too).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);
/// `maintRelaxedTimeout` of every member; windows last at most `maintRelaxedWindowMax`
/// (2 s) plus the `maintPostEventRelaxed` tail (1 s).
const RELAXED: Duration = Duration::from_millis(1000);
/// How long after an injection a call may still be relaxed: delivery (up to the proxy's
/// 100 ms idle tick), window, tail, and a margin.
const RELAX_SPAN_MS: u32 = 100 + 2000 + 1000 + 500;

// ---------------------------------------------------------------------------------
// Deterministic randomness (no dependency): xorshift64* seeded through splitmix64.

struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(splitmix(seed) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from + 1))
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------
// Keys and values.

/// `soak:<t>:<kind>:<seq>`; kinds: `w` plain write, `b` batch write, `a` attributed
/// write (in a transaction), `e` echo token.
fn key(t: usize, kind: char, seq: u32) -> String {
    format!("soak:{t}:{kind}:{seq}")
}

/// The one value `key` is ever written with.
fn value_of(seed: u64, t: usize, kind: char, seq: u32) -> String {
    let nonce = splitmix(seed ^ ((t as u64) << 40) ^ ((kind as u64) << 32) ^ u64::from(seq));
    format!("{}={nonce:016x}", key(t, kind, seq))
}

fn counter_key(t: usize) -> String {
    format!("soak:{t}:ctr")
}

fn channel(t: usize) -> String {
    format!("soak:{t}:ch")
}

// ---------------------------------------------------------------------------------
// Shared state.

/// Milliseconds since the soak started (floor).
fn ms_since(t0: Instant) -> u32 {
    u32::try_from(t0.elapsed().as_millis()).unwrap_or(u32::MAX)
}

/// One process life of a member: `[start, end]` in ms since the start (start taken
/// before the spawn, end after the kill was reaped, so the interval covers the
/// process's whole life).
#[derive(Clone, Copy, Debug)]
struct Life {
    start: u32,
    end: Option<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Running,
    Stopped,
    Killed,
}

#[derive(Default)]
struct Counters {
    ops: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
    mismatches: AtomicU64,
    late: AtomicU64,
    unexpected: AtomicU64,
    /// Largest (elapsed - budget) seen, in µs, also when within the slack.
    worst_over_us: AtomicU64,
    read_hits: AtomicU64,
    read_misses: AtomicU64,
    published: AtomicU64,
    delivered: AtomicU64,
    commits: AtomicU64,
    watch_conflicts: AtomicU64,
}

struct Shared {
    seed: u64,
    t0: Instant,
    stop: AtomicBool,
    counters: Counters,
    ops_by_kind: Mutex<BTreeMap<&'static str, u64>>,
    /// Per kind: the worst time past the budget (µs) and when it ended (ms since start).
    worst_by_kind: Mutex<BTreeMap<&'static str, (u64, u32)>>,
    errors_by_kind: Mutex<BTreeMap<String, u64>>,
    /// First few problems, for the failure message.
    problems: Mutex<Vec<String>>,
    ports: Vec<u16>,
    /// One per worker, drained by the checkpoints.
    books: Vec<Mutex<Book>>,
    run_ids: Mutex<RunIds>,
    /// Periods (ms since start) during which a member may have relaxed its timeouts.
    relaxed: Mutex<Vec<(u32, u32)>>,
}

impl Shared {
    fn problem(&self, what: String) {
        let mut p = self.problems.lock().unwrap();
        if p.len() < 30 {
            p.push(what);
        }
    }

    fn mismatch(&self, what: String) {
        self.counters.mismatches.fetch_add(1, Ordering::Relaxed);
        self.problem(format!("MISMATCH {what}"));
    }

    fn unexpected(&self, what: String) {
        self.counters.unexpected.fetch_add(1, Ordering::Relaxed);
        self.problem(format!("UNEXPECTED {what}"));
    }

    fn error(&self, op: &str, e: &Error) {
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
        *self
            .errors_by_kind
            .lock()
            .unwrap()
            .entry(format!("{:?}", e.kind()))
            .or_default() += 1;
        // Transient faults are what a dying server causes; anything else (a protocol
        // error, a type mismatch, a server error reply) means a reply went astray or
        // the client misbehaved.
        if !e.is_transient() {
            self.unexpected(format!("{op}: {e}"));
        }
    }

    /// Whether a call between these times (ms since start) may have met relaxed
    /// timeouts.
    fn relaxed_during(&self, from: u32, to: u32) -> bool {
        let periods = self.relaxed.lock().unwrap();
        periods
            .iter()
            .rev()
            .take(32)
            .any(|&(start, end)| start <= to && end >= from)
    }

    /// Times one call against its budget: `rounds` x the timeout in force (the relaxed
    /// one if a maintenance window may have been open) + `SLACK`.
    fn timed<T>(&self, op: &'static str, rounds: u32, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let from = ms_since(self.t0);
        let out = f();
        let took = started.elapsed();
        let timeout = if self.relaxed_during(from, ms_since(self.t0)) {
            RELAXED.max(TIMEOUT)
        } else {
            TIMEOUT
        };
        let budget = timeout * rounds;
        self.counters.ops.fetch_add(1, Ordering::Relaxed);
        *self.ops_by_kind.lock().unwrap().entry(op).or_default() += 1;
        if let Some(over) = took.checked_sub(budget) {
            let us = u64::try_from(over.as_micros()).unwrap_or(u64::MAX);
            self.counters.worst_over_us.fetch_max(us, Ordering::Relaxed);
            let mut worst = self.worst_by_kind.lock().unwrap();
            let entry = worst.entry(op).or_default();
            if us > entry.0 {
                *entry = (us, ms_since(self.t0));
            }
            if over > SLACK {
                self.counters.late.fetch_add(1, Ordering::Relaxed);
                self.problem(format!(
                    "LATE {op}: {took:?} against a budget of {budget:?} + {SLACK:?}"
                ));
            }
        }
        out
    }
}

/// An acknowledged write not yet checked (16 bytes: a release build acknowledges
/// hundreds of thousands between two checkpoints).
#[derive(Clone, Copy)]
enum Pending {
    /// A plain or batch `SET`: thread, kind, sequence, send and ack (ms since start).
    Plain {
        t: u16,
        kind: u8,
        seq: u32,
        send: u32,
        ack: u32,
    },
    /// A write whose executing process is known: thread, sequence, interned run_id.
    Attributed { t: u16, seq: u32, run: u32 },
}

/// What one worker acknowledged since the last checkpoint.
#[derive(Default)]
struct Book {
    pending: Vec<Pending>,
    /// Highest counter value committed, per interned run_id.
    counter_max: HashMap<u32, u64>,
}

/// run_ids seen in `INFO` replies, interned (a few hundred in a long run).
#[derive(Default)]
struct RunIds {
    ids: Vec<String>,
    index: HashMap<String, u32>,
}

impl RunIds {
    fn intern(&mut self, run_id: &str) -> u32 {
        if let Some(&i) = self.index.get(run_id) {
            return i;
        }
        self.ids.push(run_id.to_string());
        let i = (self.ids.len() - 1) as u32;
        self.index.insert(run_id.to_string(), i);
        i
    }
}

// ---------------------------------------------------------------------------------
// A worker: mixed traffic on the group, every reply checked.

struct Worker {
    t: usize,
    rng: XorShift,
    db: Database,
    publisher: resilient_redis::availability::GroupSubscriber,
    subscription: GroupSubscription,
    shared: Arc<Shared>,
    seq: u32,
    published_seq: u32,
    /// Recently acknowledged plain writes (kind, seq), the ones reads pick from.
    recent: std::collections::VecDeque<(u8, u32)>,
}

impl Worker {
    fn next_seq(&mut self) -> u32 {
        self.seq += 1;
        self.seq
    }

    fn run(mut self) {
        while !self.shared.stop.load(Ordering::Relaxed) {
            match self.rng.below(100) {
                0..=24 => self.read(),
                25..=49 => self.write(),
                50..=59 => self.echo(),
                60..=69 => self.batch(),
                70..=79 => self.transaction(),
                80..=89 => self.publish(),
                _ => self.mget(),
            }
        }
        self.drain();
    }

    fn acked(&mut self, kind: u8, seq: u32, send: u32) {
        let ack = ms_since(self.shared.t0) + 1;
        self.shared.books[self.t]
            .lock()
            .unwrap()
            .pending
            .push(Pending::Plain {
                t: self.t as u16,
                kind,
                seq,
                send,
                ack,
            });
        if self.recent.len() == 4096 {
            self.recent.pop_front();
        }
        self.recent.push_back((kind, seq));
    }

    fn ok(&self) {
        self.shared.counters.ok.fetch_add(1, Ordering::Relaxed);
    }

    /// An acknowledged plain write of this thread: the latest half the time (likely
    /// on the member serving), else a recent one (kind, seq).
    fn some_acked(&mut self) -> Option<(char, u32)> {
        let n = self.recent.len() as u64;
        if n == 0 {
            return None;
        }
        let i = if self.rng.below(2) == 0 {
            n - 1
        } else {
            self.rng.below(n)
        };
        let (kind, seq) = self.recent[i as usize];
        Some((kind as char, seq))
    }

    /// Checks a read of `key(kind, seq)`: nothing, or exactly its value.
    fn check_read(&self, op: &str, kind: char, seq: u32, got: Option<&str>) {
        let c = &self.shared.counters;
        match got {
            None => {
                c.read_misses.fetch_add(1, Ordering::Relaxed);
            }
            Some(v) if v == value_of(self.shared.seed, self.t, kind, seq) => {
                c.read_hits.fetch_add(1, Ordering::Relaxed);
            }
            Some(v) => self
                .shared
                .mismatch(format!("{op} of {} returned {v:?}", key(self.t, kind, seq))),
        }
    }

    fn read(&mut self) {
        let Some((kind, seq)) = self.some_acked() else {
            return self.echo();
        };
        let k = key(self.t, kind, seq);
        let shared = self.shared.clone();
        match shared.timed("get", 1, || self.db.get::<Option<String>>(&k)) {
            Ok(v) => {
                self.ok();
                self.check_read("GET", kind, seq, v.as_deref());
            }
            Err(e) => shared.error("GET", &e),
        }
    }

    fn write(&mut self) {
        let seq = self.next_seq();
        let (k, v) = (
            key(self.t, 'w', seq),
            value_of(self.shared.seed, self.t, 'w', seq),
        );
        let shared = self.shared.clone();
        let send = ms_since(shared.t0);
        match shared.timed("set", 1, || self.db.set(&k, &v)) {
            Ok(()) => {
                self.ok();
                self.acked(b'w', seq, send);
            }
            Err(e) => shared.error("SET", &e),
        }
    }

    fn echo(&mut self) {
        let seq = self.next_seq();
        let token = value_of(self.shared.seed, self.t, 'e', seq);
        let shared = self.shared.clone();
        match shared.timed("echo", 1, || self.db.echo::<String>(&token)) {
            Ok(got) if got == token => self.ok(),
            Ok(got) => shared.mismatch(format!("ECHO {token:?} returned {got:?}")),
            Err(e) => shared.error("ECHO", &e),
        }
    }

    fn mget(&mut self) {
        let picks: Vec<(char, u32)> = (0..4).filter_map(|_| self.some_acked()).collect();
        if picks.is_empty() {
            return self.echo();
        }
        let keys: Vec<String> = picks.iter().map(|&(k, s)| key(self.t, k, s)).collect();
        let shared = self.shared.clone();
        match shared.timed("mget", 1, || self.db.mget::<String>(&keys)) {
            Ok(values) if values.len() == picks.len() => {
                self.ok();
                for (&(kind, seq), v) in picks.iter().zip(&values) {
                    self.check_read("MGET", kind, seq, v.as_deref());
                }
            }
            Ok(values) => shared.mismatch(format!(
                "MGET of {} keys returned {} values",
                keys.len(),
                values.len()
            )),
            Err(e) => shared.error("MGET", &e),
        }
    }

    /// SET, GET of the same key (must see the SET: same connection, in order), ECHO,
    /// and a GET of an older key, pipelined.
    fn batch(&mut self) {
        let seq = self.next_seq();
        let (k, v) = (
            key(self.t, 'b', seq),
            value_of(self.shared.seed, self.t, 'b', seq),
        );
        let token = value_of(self.shared.seed, self.t, 'e', seq);
        let old = self.some_acked();
        let shared = self.shared.clone();
        let send = ms_since(shared.t0);
        let batch = self.db.batch();
        let set = batch.set(&k, &v);
        let get = batch.get::<Option<String>>(&k);
        let echo = batch.echo::<String>(&token);
        let older = old.map(|(kind, s)| batch.get::<Option<String>>(key(self.t, kind, s)));
        match shared.timed("batch", 1, || batch.execute()) {
            Ok(()) => {
                self.ok();
                let results = (set.wait(), get.wait(), echo.wait());
                match results {
                    (Ok(()), Ok(got), Ok(echoed)) => {
                        self.acked(b'b', seq, send);
                        if got.as_deref() != Some(v.as_str()) {
                            shared.mismatch(format!("batch GET {k} after its SET: {got:?}"));
                        }
                        if echoed != token {
                            shared.mismatch(format!("batch ECHO {token:?}: {echoed:?}"));
                        }
                    }
                    (a, b, c) => shared.unexpected(format!(
                        "batch items failed after a successful batch: {:?} {:?} {:?}",
                        a.err(),
                        b.err(),
                        c.err()
                    )),
                }
                if let (Some((kind, s)), Some(h)) = (old, older) {
                    match h.wait() {
                        Ok(got) => self.check_read("batch GET", kind, s, got.as_deref()),
                        Err(e) => shared.mismatch(format!("batch GET of an old key: {e}")),
                    }
                }
            }
            Err(e) => shared.error("batch", &e),
        }
    }

    /// A read-modify-write of this thread's counter under `Database::watch`, with an
    /// attributed write and `INFO server` in the same MULTI/EXEC.
    fn transaction(&mut self) {
        let seq = self.next_seq();
        let t = self.t;
        let seed = self.shared.seed;
        let ctr = counter_key(t);
        let (ak, av) = (key(t, 'a', seq), value_of(seed, t, 'a', seq));
        let shared = self.shared.clone();
        let mut next = 0u64;
        let mut info = None;
        let mut handles = None;
        let mut bad_read = None;
        let outcome = shared.timed("watch", 5, || {
            self.db.watch(&ctr, |conn| {
                let current = conn.get::<Option<String>>(&ctr)?;
                let n = match current.as_deref() {
                    None => 0,
                    Some(v) => match v
                        .strip_prefix(&format!("{ctr}="))
                        .and_then(|n| n.parse::<u64>().ok())
                    {
                        Some(n) => n,
                        None => {
                            bad_read = Some(v.to_string());
                            return Err(Error::new(ErrorKind::InvalidInput, "foreign counter"));
                        }
                    },
                };
                next = n + 1;
                let tx = conn.transaction();
                let a = tx.set(&ctr, format!("{ctr}={next}"));
                let b = tx.set(&ak, &av);
                info = Some(tx.info(Some("server")));
                handles = Some((a, b));
                Ok(tx)
            })
        });
        if let Some(v) = bad_read {
            return shared.mismatch(format!("GET {ctr} in a transaction returned {v:?}"));
        }
        match outcome {
            Ok(true) => {
                self.ok();
                shared.counters.commits.fetch_add(1, Ordering::Relaxed);
                let (Some((a, b)), Some(info)) = (handles, info) else {
                    return shared.mismatch("committed without its handles".into());
                };
                if a.wait().is_err() || b.wait().is_err() {
                    return shared.mismatch(format!("a SET in the EXEC of {ak} failed"));
                }
                let info = match info.wait() {
                    Ok(i) => i,
                    Err(e) => return shared.mismatch(format!("INFO in EXEC: {e}")),
                };
                let field = |name: &str| {
                    info.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().to_string())
                };
                let port = field("tcp_port:").and_then(|p| p.parse::<u16>().ok());
                match (field("run_id:"), port) {
                    (Some(run_id), Some(port)) if shared.ports.contains(&port) => {
                        let run = shared.run_ids.lock().unwrap().intern(&run_id);
                        let mut book = shared.books[t].lock().unwrap();
                        book.pending.push(Pending::Attributed {
                            t: t as u16,
                            seq,
                            run,
                        });
                        let max = book.counter_max.entry(run).or_default();
                        *max = (*max).max(next);
                    }
                    _ => shared.mismatch(format!("INFO in the EXEC of {ak} names no member")),
                }
            }
            Ok(false) => {
                self.ok();
                shared
                    .counters
                    .watch_conflicts
                    .fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => shared.error("watch", &e),
        }
    }

    fn publish(&mut self) {
        self.published_seq += 1;
        let payload = format!("{}#{}", channel(self.t), self.published_seq);
        let shared = self.shared.clone();
        match shared.timed("publish", 1, || {
            self.publisher.publish(channel(self.t), &payload)
        }) {
            Ok(_) => {
                self.ok();
                shared.counters.published.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => shared.error("PUBLISH", &e),
        }
        self.drain();
    }

    /// Takes what arrived on this thread's subscription: its own channel only, and
    /// payloads it published.
    fn drain(&mut self) {
        let ch = channel(self.t);
        while let Some(m) = self.subscription.try_recv() {
            let seq = String::from_utf8_lossy(&m.payload)
                .strip_prefix(&format!("{ch}#"))
                .and_then(|s| s.parse::<u32>().ok());
            let right = m.channel == ch.as_bytes()
                && seq.is_some_and(|s| s >= 1 && s <= self.published_seq);
            if right {
                self.shared
                    .counters
                    .delivered
                    .fetch_add(1, Ordering::Relaxed);
            } else {
                self.shared.mismatch(format!(
                    "message on {:?} with {:?} reached {ch}",
                    m.channel_str(),
                    m.payload_str()
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// The fault schedule.

#[derive(Default)]
struct FaultCounts {
    kill: u64,
    stop: u64,
    resume: u64,
    restart: u64,
    maintenance: u64,
    maintenance_by_kind: BTreeMap<&'static str, u64>,
}

struct Chaos {
    servers: Vec<RedisServer>,
    states: Vec<State>,
    lives: Vec<Vec<Life>>,
    /// The run_id of each member's current process (`None` once killed).
    run_ids: Vec<Option<String>>,
    /// Writes a checkpoint could not settle yet (a candidate member was stopped).
    deferred: Vec<Pending>,
    verdict: Verdict,
    counts: FaultCounts,
    log: Vec<String>,
    seed: u64,
    proxies: Vec<Proxy>,
    /// Per member: the closing kind owed for a window this schedule opened.
    open_windows: Vec<Option<&'static str>>,
    next_notification_id: u64,
}

#[derive(Default)]
struct Verdict {
    checkpoints: u64,
    verified: u64,
    /// Of `verified`: attributed writes, checked on the very process that acked them.
    verified_attributed: u64,
    unverifiable: u64,
    missing: u64,
    wrong_value: u64,
    counters_checked: u64,
    /// Most unchecked writes held at once, in bytes (for the RSS bound).
    peak_backlog_bytes: u64,
}

/// Reads `keys` from a member with its own client: key -> value.
fn read_member(client: &Client, keys: &[String]) -> HashMap<String, String> {
    let db = client.database().with_timeout(Duration::from_secs(10));
    let mut out = HashMap::new();
    for chunk in keys.chunks(500) {
        let values: Vec<Option<String>> = db.mget(chunk).expect("MGET from a member");
        for (k, v) in chunk.iter().zip(values) {
            if let Some(v) = v {
                out.insert(k.clone(), v);
            }
        }
    }
    out
}

/// Reads each member's wanted keys (sorted, deduplicated) with its direct client.
fn read_all(
    wanted: &mut [Vec<String>],
    clients: &[Option<Client>],
) -> Vec<HashMap<String, String>> {
    wanted
        .iter_mut()
        .enumerate()
        .map(|(m, keys)| {
            keys.sort_unstable();
            keys.dedup();
            match &clients[m] {
                Some(c) if !keys.is_empty() => read_member(c, keys),
                _ => HashMap::new(),
            }
        })
        .collect()
}

fn run_id_of(client: &Client) -> String {
    let info = client
        .database()
        .with_timeout(Duration::from_secs(10))
        .info(Some("server"))
        .expect("INFO from a member");
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .expect("run_id in INFO")
        .trim()
        .to_string()
}

fn direct(server: &RedisServer) -> Client {
    Client::connect(format!(
        "{},syncTimeout=10000,connectTimeout=5000",
        server.addr()
    ))
    .expect("a direct client to a running member")
}

impl Chaos {
    fn faulted(&self) -> usize {
        self.states.iter().filter(|s| **s != State::Running).count()
    }

    fn with(&self, state: State) -> Vec<usize> {
        (0..self.states.len())
            .filter(|&i| self.states[i] == state)
            .collect()
    }

    /// One step of the schedule: picks a fault that is possible now.
    fn step(&mut self, rng: &mut XorShift, group: &Group, shared: &Shared) {
        let t0 = shared.t0;
        let running = self.with(State::Running);
        let stopped = self.with(State::Stopped);
        let killed = self.with(State::Killed);
        let mut choices = Vec::new();
        if self.faulted() < MAX_FAULTED && !running.is_empty() {
            choices.extend(["kill", "stop", "stop"]);
        }
        if !stopped.is_empty() {
            choices.extend(["resume", "resume"]);
        }
        if !killed.is_empty() {
            choices.extend(["restart", "restart"]);
        }
        choices.extend(["maintenance", "maintenance"]);
        if choices.is_empty() {
            return;
        }
        let choice = choices[rng.below(choices.len() as u64) as usize];
        // Faults hit the active member more often than not: that is where the traffic is.
        let active = group
            .active()
            .and_then(|m| m.name().strip_prefix('m')?.parse::<usize>().ok());
        let pick = |rng: &mut XorShift, from: &[usize]| -> usize {
            match active {
                Some(a) if from.contains(&a) && rng.below(100) < 60 => a,
                _ => from[rng.below(from.len() as u64) as usize],
            }
        };
        let at = ms_since(t0);
        let i = match choice {
            "kill" => {
                let i = pick(rng, &running);
                // The victim's writes are checked while it still has them.
                self.checkpoint(shared);
                self.servers[i].kill();
                if let Some(life) = self.lives[i].last_mut() {
                    life.end = Some(ms_since(t0) + 1);
                }
                self.run_ids[i] = None;
                self.states[i] = State::Killed;
                self.counts.kill += 1;
                i
            }
            "stop" => {
                let i = pick(rng, &running);
                self.servers[i].pause();
                self.states[i] = State::Stopped;
                self.counts.stop += 1;
                i
            }
            "resume" => {
                let i = stopped[rng.below(stopped.len() as u64) as usize];
                self.servers[i].resume();
                self.states[i] = State::Running;
                self.counts.resume += 1;
                i
            }
            "maintenance" => {
                let all: Vec<usize> = (0..self.servers.len()).collect();
                let i = pick(rng, &all);
                let kind = self.inject_maintenance(i, rng, shared);
                self.log.push(format!("{at:>7} ms maintenance {kind} m{i}"));
                return;
            }
            _ => {
                let i = killed[rng.below(killed.len() as u64) as usize];
                self.lives[i].push(Life {
                    start: ms_since(t0),
                    end: None,
                });
                self.servers[i].restart();
                let client = direct(&self.servers[i]);
                self.run_ids[i] = Some(run_id_of(&client));
                client.close();
                self.states[i] = State::Running;
                self.counts.restart += 1;
                i
            }
        };
        self.log.push(format!("{at:>7} ms {choice} m{i}"));
    }

    /// Announces maintenance on member `i`: closes the window this schedule opened
    /// there, or opens one (or sends a `MOVING` to the same proxy). Returns the kind.
    fn inject_maintenance(
        &mut self,
        i: usize,
        rng: &mut XorShift,
        shared: &Shared,
    ) -> &'static str {
        self.next_notification_id += 1;
        let id = self.next_notification_id;
        let port = self.proxies[i].port;
        let (kind, frame) = match self.open_windows[i].take() {
            Some("MIGRATED") => ("MIGRATED", format!(">3\r\n+MIGRATED\r\n:{id}\r\n+1\r\n")),
            Some("FAILED_OVER") => (
                "FAILED_OVER",
                format!(">3\r\n+FAILED_OVER\r\n:{id}\r\n+1\r\n"),
            ),
            Some(_) => (
                "SMIGRATED",
                format!(
                    ">3\r\n+SMIGRATED\r\n:{id}\r\n*1\r\n*3\r\n+127.0.0.1:{port}\r\n+127.0.0.1:{port}\r\n+100-200\r\n"
                ),
            ),
            None => match rng.below(4) {
                0 => {
                    self.open_windows[i] = Some("MIGRATED");
                    ("MIGRATING", format!(">4\r\n+MIGRATING\r\n:{id}\r\n:1\r\n+1\r\n"))
                }
                1 => {
                    self.open_windows[i] = Some("FAILED_OVER");
                    (
                        "FAILING_OVER",
                        format!(">4\r\n+FAILING_OVER\r\n:{id}\r\n:1\r\n+1\r\n"),
                    )
                }
                2 => {
                    self.open_windows[i] = Some("SMIGRATED");
                    ("SMIGRATING", format!(">3\r\n+SMIGRATING\r\n:{id}\r\n+100-200\r\n"))
                }
                // Moves to where it already is: with or without a handoff, the client
                // ends up talking to the same member.
                _ => (
                    "MOVING",
                    format!(">4\r\n+MOVING\r\n:{id}\r\n:1\r\n+127.0.0.1:{port}\r\n"),
                ),
            },
        };
        let now = ms_since(shared.t0);
        shared
            .relaxed
            .lock()
            .unwrap()
            .push((now, now + RELAX_SPAN_MS));
        self.proxies[i].inject(frame.as_bytes());
        self.counts.maintenance += 1;
        *self.counts.maintenance_by_kind.entry(kind).or_default() += 1;
        kind
    }

    /// Back to a readable state: stopped members resume; killed ones stay dead (their
    /// writes died with them and are counted as unverifiable).
    fn settle(&mut self) {
        for i in self.with(State::Stopped) {
            self.servers[i].resume();
            self.states[i] = State::Running;
        }
    }

    /// Checks every acknowledged write not checked yet against the running members,
    /// read directly (see the module documentation for the method).
    fn checkpoint(&mut self, shared: &Shared) {
        self.verdict.checkpoints += 1;
        // Take what the workers acknowledged so far; they carry on meanwhile.
        let mut items = std::mem::take(&mut self.deferred);
        let mut counters: Vec<HashMap<u32, u64>> = Vec::new();
        let mut backlog = 0u64;
        for book in &shared.books {
            // Taken whole (not appended from), so its memory goes when checked.
            let taken = std::mem::take(&mut book.lock().unwrap().pending);
            backlog += (taken.capacity() * std::mem::size_of::<Pending>()) as u64;
            items.extend_from_slice(&taken);
            counters.push(book.lock().unwrap().counter_max.clone());
        }
        backlog += (items.capacity() * std::mem::size_of::<Pending>()) as u64;
        self.verdict.peak_backlog_bytes = self.verdict.peak_backlog_bytes.max(backlog);
        let run_ids: Vec<String> = shared.run_ids.lock().unwrap().ids.clone();

        // Direct clients to the running members, and their current run_ids.
        let mut clients: Vec<Option<Client>> = Vec::new();
        for i in 0..self.servers.len() {
            if self.states[i] == State::Running {
                let client = direct(&self.servers[i]);
                self.run_ids[i] = Some(run_id_of(&client));
                clients.push(Some(client));
            } else {
                clients.push(None);
            }
        }
        // In chunks, so a checkpoint's own memory (key lists, values read) is bounded
        // whatever the backlog: the RSS bound is about the client, not about this.
        for chunk in items.chunks(CHECK_CHUNK) {
            self.check_chunk(chunk, &clients, &run_ids, shared);
        }
        // Counters: each process holds at least the highest value it acknowledged.
        let mut wanted: Vec<Vec<String>> = vec![Vec::new(); self.servers.len()];
        for (t, maxes) in counters.iter().enumerate() {
            for &run in maxes.keys() {
                if let Some(m) = self.member_of(run, &run_ids) {
                    if self.states[m] == State::Running {
                        wanted[m].push(counter_key(t));
                    }
                }
            }
        }
        let held = read_all(&mut wanted, &clients);
        for (t, maxes) in counters.iter().enumerate() {
            let ctr = counter_key(t);
            let mut done = Vec::new();
            for (&run, &max) in maxes {
                let Some(m) = self.member_of(run, &run_ids) else {
                    done.push(run);
                    continue;
                };
                if self.states[m] != State::Running {
                    continue;
                }
                self.verdict.counters_checked += 1;
                let now = held[m]
                    .get(&ctr)
                    .and_then(|x| x.strip_prefix(&format!("{ctr}="))?.parse::<u64>().ok())
                    .unwrap_or(0);
                if now < max {
                    self.verdict.missing += 1;
                    shared.problem(format!(
                        "MISSING {ctr} on m{m} is {now}, below the {max} it acknowledged"
                    ));
                }
            }
            let mut book = shared.books[t].lock().unwrap();
            for run in done {
                book.counter_max.remove(&run);
            }
        }
        for c in clients.into_iter().flatten() {
            c.close();
        }
    }

    /// The process a run_id belongs to now, if it is still a member's.
    fn member_of(&self, run: u32, run_ids: &[String]) -> Option<usize> {
        let id = run_ids.get(run as usize)?;
        self.run_ids.iter().position(|r| r.as_ref() == Some(id))
    }

    fn check_chunk(
        &mut self,
        items: &[Pending],
        clients: &[Option<Client>],
        run_ids: &[String],
        shared: &Shared,
    ) {
        let mut wanted: Vec<Vec<String>> = vec![Vec::new(); self.servers.len()];
        enum Plan {
            /// Read on these members; `settled`: no candidate is stopped; `dead`: a
            /// candidate process has died.
            Read {
                members: Vec<usize>,
                settled: bool,
                dead: bool,
            },
            Defer,
            Unverifiable,
        }
        let mut plans = Vec::with_capacity(items.len());
        for item in items {
            let plan = match *item {
                Pending::Attributed { t, seq, run } => match self.member_of(run, run_ids) {
                    None => Plan::Unverifiable,
                    Some(m) if self.states[m] == State::Running => {
                        wanted[m].push(key(t.into(), 'a', seq));
                        Plan::Read {
                            members: vec![m],
                            settled: true,
                            dead: false,
                        }
                    }
                    Some(_) => Plan::Defer,
                },
                Pending::Plain {
                    t,
                    kind,
                    seq,
                    send,
                    ack,
                } => {
                    let mut members = Vec::new();
                    let (mut settled, mut dead) = (true, false);
                    for (m, lives) in self.lives.iter().enumerate() {
                        for life in lives {
                            if life.start <= ack && life.end.is_none_or(|e| e >= send) {
                                match (life.end, self.states[m]) {
                                    (Some(_), _) => dead = true,
                                    (None, State::Running) => members.push(m),
                                    (None, _) => settled = false,
                                }
                            }
                        }
                    }
                    for &m in &members {
                        wanted[m].push(key(t.into(), kind as char, seq));
                    }
                    Plan::Read {
                        members,
                        settled,
                        dead,
                    }
                }
            };
            plans.push(plan);
        }
        let held = read_all(&mut wanted, clients);

        let seed = self.seed;
        let v = &mut self.verdict;
        for (item, plan) in items.iter().zip(plans) {
            let (k, want, attributed) = match *item {
                Pending::Attributed { t, seq, .. } => (
                    key(t.into(), 'a', seq),
                    value_of(seed, t.into(), 'a', seq),
                    true,
                ),
                Pending::Plain { t, kind, seq, .. } => (
                    key(t.into(), kind as char, seq),
                    value_of(seed, t.into(), kind as char, seq),
                    false,
                ),
            };
            match plan {
                Plan::Unverifiable => v.unverifiable += 1,
                Plan::Defer => self.deferred.push(*item),
                Plan::Read {
                    members,
                    settled,
                    dead,
                } => {
                    let mut found = false;
                    for &m in &members {
                        match held[m].get(&k) {
                            Some(got) if *got == want => found = true,
                            Some(got) => {
                                v.wrong_value += 1;
                                shared.problem(format!("{k} on m{m} holds {got:?}"));
                            }
                            None => {}
                        }
                    }
                    if found {
                        v.verified += 1;
                        if attributed {
                            v.verified_attributed += 1;
                        }
                    } else if !settled {
                        self.deferred.push(*item);
                    } else if dead || members.is_empty() {
                        v.unverifiable += 1;
                    } else {
                        v.missing += 1;
                        let what = match *item {
                            Pending::Attributed { run, .. } => format!(
                                "{k}, acknowledged by run {}, is missing from that process",
                                run_ids[run as usize]
                            ),
                            Pending::Plain { send, ack, .. } => format!(
                                "{k} (sent {send} ms, acked {ack} ms) is on no process alive since"
                            ),
                        };
                        shared.problem(format!("MISSING {what}"));
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// The proxy that plays a server announcing maintenance.

/// One proxied connection: where to write notifications, and its two sockets.
struct ProxyConn {
    pending: Mutex<Vec<u8>>,
    client: TcpStream,
    upstream: TcpStream,
}

impl ProxyConn {
    fn shutdown(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.upstream.shutdown(Shutdown::Both);
    }
}

/// A TCP proxy in front of one member's server: forwards both ways; notifications
/// queued with [`Proxy::inject`] are written to the client between two frames of the
/// server's stream (found with the crate's own decoder), or within 100 ms when idle.
/// A server that is down makes it close the client's connection, as the server would.
struct Proxy {
    port: u16,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<Weak<ProxyConn>>>>,
    acceptor: Option<thread::JoinHandle<()>>,
}

impl Proxy {
    fn start(upstream_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy port");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let port = listener.local_addr().expect("proxy address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<Weak<ProxyConn>>>> = Arc::new(Mutex::new(Vec::new()));
        let acceptor = {
            let (stop, conns) = (stop.clone(), conns.clone());
            thread::Builder::new()
                .name("soak-proxy".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match listener.accept() {
                            Ok((client, _)) => Proxy::open(client, upstream_port, &conns),
                            Err(_) => thread::sleep(Duration::from_millis(5)),
                        }
                    }
                })
                .expect("proxy thread")
        };
        Proxy {
            port,
            stop,
            conns,
            acceptor: Some(acceptor),
        }
    }

    fn open(client: TcpStream, upstream_port: u16, conns: &Mutex<Vec<Weak<ProxyConn>>>) {
        let _ = client.set_nonblocking(false);
        let upstream = match TcpStream::connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], upstream_port)),
            Duration::from_millis(500),
        ) {
            Ok(u) => u,
            // Down: the client sees its connection closed.
            Err(_) => return,
        };
        let _ = upstream.set_nodelay(true);
        let _ = client.set_nodelay(true);
        let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
            return;
        };
        let conn = Arc::new(ProxyConn {
            pending: Mutex::new(Vec::new()),
            client,
            upstream,
        });
        {
            let mut list = conns.lock().unwrap();
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&conn));
        }
        let up = conn.clone();
        let _ = thread::Builder::new()
            .name("soak-proxy-up".into())
            .spawn(move || {
                let (mut from, mut to) = (c2, &up.upstream);
                let _ = std::io::copy(&mut from, &mut to);
                up.shutdown();
            });
        let _ = thread::Builder::new()
            .name("soak-proxy-down".into())
            .spawn(move || {
                Proxy::down(&conn, u2);
                conn.shutdown();
            });
    }

    /// Server to client, with notifications written at frame boundaries.
    fn down(conn: &ProxyConn, mut upstream: TcpStream) {
        let _ = upstream.set_read_timeout(Some(Duration::from_millis(100)));
        let mut decoder = resilient_redis::resp::Decoder::new();
        let mut held: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut client = &conn.client;
        loop {
            match upstream.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    decoder.feed(&buf[..n]);
                    held.extend_from_slice(&buf[..n]);
                    loop {
                        match decoder.decode() {
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            // Not expected from redis-server; forward everything as it
                            // comes and inject nothing more.
                            Err(_) => {
                                let _ = client.write_all(&held);
                                let _ = std::io::copy(&mut upstream, &mut client);
                                return;
                            }
                        }
                    }
                    let complete = held.len() - decoder.buffered();
                    if client.write_all(&held[..complete]).is_err() {
                        return;
                    }
                    held.drain(..complete);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
            // Between frames: whatever is held is the start of the next one, not yet sent.
            let notes = std::mem::take(&mut *conn.pending.lock().unwrap());
            if !notes.is_empty() && client.write_all(&notes).is_err() {
                return;
            }
        }
    }

    /// Queues a notification on every open connection; how many.
    fn inject(&self, frame: &[u8]) -> usize {
        let list = self.conns.lock().unwrap();
        let mut n = 0;
        for conn in list.iter().filter_map(Weak::upgrade) {
            conn.pending.lock().unwrap().extend_from_slice(frame);
            n += 1;
        }
        n
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for conn in self.conns.lock().unwrap().iter().filter_map(Weak::upgrade) {
            conn.shutdown();
        }
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

// ---------------------------------------------------------------------------------
// Measurements.

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A member reached through its proxy, opted in to maintenance notifications with
/// short relaxed windows.
fn member(proxy: &Proxy, i: usize, weight: u32) -> Member {
    Member::new(format!(
        "127.0.0.1:{},syncTimeout={ms},connectTimeout={ms},reconnectMin=20,reconnectMax=200,\
         maintNotifications=auto,maintRelaxedTimeout={relaxed},maintRelaxedWindowMax=2,\
         maintPostEventRelaxed=1",
        proxy.port,
        ms = TIMEOUT.as_millis(),
        relaxed = RELAXED.as_secs_f64()
    ))
    .with_name(format!("m{i}"))
    .with_weight(weight)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

// ---------------------------------------------------------------------------------

#[test]
fn chaos_soak() {
    let seconds = env_u64("SOAK_SECONDS", 40);
    let seed = env_u64("SOAK_SEED", 0x5eed_2024);
    let Some(s0) = RedisServer::start() else {
        return;
    };
    let (Some(s1), Some(s2)) = (RedisServer::start(), RedisServer::start()) else {
        return;
    };
    assert!(
        threads_named("rr-").is_empty(),
        "a client thread before the start"
    );
    let servers = vec![s0, s1, s2];
    let ports: Vec<u16> = servers.iter().map(|s| s.port).collect();
    let run_ids: Vec<Option<String>> = servers
        .iter()
        .map(|s| {
            let c = direct(s);
            let id = run_id_of(&c);
            c.close();
            Some(id)
        })
        .collect();
    let checks = HealthCheck {
        interval: Duration::from_millis(200),
        probe_count: 1,
        probe_timeout: Duration::from_millis(300),
        probe_interval: Duration::from_millis(50),
        ..HealthCheck::default()
    };
    let proxies: Vec<Proxy> = servers.iter().map(|s| Proxy::start(s.port)).collect();
    let group = Group::connect(
        vec![
            member(&proxies[0], 0, 30),
            member(&proxies[1], 1, 20),
            member(&proxies[2], 2, 10),
        ],
        GroupOptions::default().health_check(checks),
    )
    .expect("group");
    // The maintenance events the members raise, counted by the sampler.
    let member_events: Vec<_> = group
        .members()
        .iter()
        .filter_map(|m| m.client().map(Client::events))
        .collect();
    let db = group.database();
    let publisher = group.subscriber();
    let subscriptions: Vec<GroupSubscription> = (0..THREADS)
        .map(|t| publisher.subscribe(channel(t)).expect("subscribe"))
        .collect();

    let t0 = Instant::now();
    let shared = Arc::new(Shared {
        seed,
        t0,
        stop: AtomicBool::new(false),
        counters: Counters::default(),
        ops_by_kind: Mutex::new(BTreeMap::new()),
        worst_by_kind: Mutex::new(BTreeMap::new()),
        errors_by_kind: Mutex::new(BTreeMap::new()),
        problems: Mutex::new(Vec::new()),
        ports: ports.clone(),
        books: (0..THREADS).map(|_| Mutex::new(Book::default())).collect(),
        run_ids: Mutex::new(RunIds::default()),
        relaxed: Mutex::new(Vec::new()),
    });
    let mut chaos = Chaos {
        servers,
        states: vec![State::Running; 3],
        lives: vec![
            vec![Life {
                start: 0,
                end: None
            }];
            3
        ],
        run_ids,
        deferred: Vec::new(),
        verdict: Verdict::default(),
        counts: FaultCounts::default(),
        log: Vec::new(),
        seed,
        proxies,
        open_windows: vec![None; 3],
        next_notification_id: 0,
    };

    // Memory and thread sampler.
    let rss_samples = Arc::new(Mutex::new(Vec::<(u32, u64)>::new()));
    let peak_threads = Arc::new(AtomicU64::new(0));
    let maintenance_events = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (shared, rss, peak_threads, raised) = (
            shared.clone(),
            rss_samples.clone(),
            peak_threads.clone(),
            maintenance_events.clone(),
        );
        thread::Builder::new()
            .name("soak-sampler".into())
            .spawn(move || {
                let count = |events: &[crossbeam_channel::Receiver<ClientEvent>]| {
                    for rx in events {
                        for e in rx.try_iter() {
                            if matches!(e, ClientEvent::Maintenance(_)) {
                                raised.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                };
                while !shared.stop.load(Ordering::Relaxed) {
                    rss.lock().unwrap().push((ms_since(shared.t0), rss_bytes()));
                    let n = threads_named("rr-").len() as u64;
                    peak_threads.fetch_max(n, Ordering::Relaxed);
                    count(&member_events);
                    thread::sleep(Duration::from_millis(100));
                }
                count(&member_events);
            })
            .unwrap()
    };

    let workers: Vec<_> = subscriptions
        .into_iter()
        .enumerate()
        .map(|(t, subscription)| {
            let w = Worker {
                t,
                rng: XorShift::new(seed ^ (0x1000 + t as u64)),
                db: db.clone(),
                publisher: publisher.clone(),
                subscription,
                shared: shared.clone(),
                seq: 0,
                published_seq: 0,
                recent: std::collections::VecDeque::with_capacity(4096),
            };
            thread::Builder::new()
                .name(format!("soak-worker-{t}"))
                .spawn(move || w.run())
                .unwrap()
        })
        .collect();

    // The fault schedule runs on this thread.
    let mut rng = XorShift::new(seed);
    let end = t0 + Duration::from_secs(seconds);
    // A quiet first second: traffic is flowing before the first fault.
    thread::sleep(Duration::from_millis(1000));
    let mut last_checkpoint = Instant::now();
    while Instant::now() < end {
        let checkpoints = chaos.verdict.checkpoints;
        chaos.step(&mut rng, &group, &shared);
        // Also every few seconds without a kill, so the backlog of unchecked writes
        // (and the memory it holds) is bounded by time, not by the schedule's luck.
        if chaos.verdict.checkpoints != checkpoints {
            last_checkpoint = Instant::now();
        } else if last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
            chaos.checkpoint(&shared);
            last_checkpoint = Instant::now();
        }
        let pause = rng.millis(300, 1500);
        thread::sleep(pause.min(end.saturating_duration_since(Instant::now())));
    }
    let chaos_ms = ms_since(t0);
    shared.stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("a worker panicked");
    }
    sampler.join().unwrap();
    chaos.settle();

    // Every thread ends on close.
    let during_run_threads = peak_threads.load(Ordering::Relaxed);
    group.close();
    drop((db, publisher, group));
    let closed_clean = wait_until(Duration::from_secs(10), || threads_named("rr-").is_empty());
    let leaked_after_close = threads_named("rr-");

    // The last checkpoint: every member is running again.
    chaos.checkpoint(&shared);
    let verify_clean = wait_until(Duration::from_secs(10), || threads_named("rr-").is_empty());
    let leaked = leaked_after_close.len() + usize::from(!verify_clean);

    // Memory: warm-up peak, then the peak after it.
    let samples = rss_samples.lock().unwrap().clone();
    let warmup_ms = (chaos_ms / 10).min(5000);
    let warm = samples
        .iter()
        .filter(|(at, _)| *at <= warmup_ms)
        .map(|&(_, b)| b)
        .max()
        .unwrap_or(0);
    let peak = samples.iter().map(|&(_, b)| b).max().unwrap_or(0);
    let verdict = &chaos.verdict;
    let rss_bound = warm + verdict.peak_backlog_bytes + RSS_MARGIN;

    let c = &shared.counters;
    let ops = c.ops.load(Ordering::Relaxed);
    let problems = shared.problems.lock().unwrap().clone();
    let mut summary = String::new();
    let _ = writeln!(summary, "=== chaos soak summary ===");
    let _ = writeln!(summary, "seed                   {seed:#x}");
    let _ = writeln!(
        summary,
        "duration               {:.1} s of chaos ({:.1} s in all)",
        f64::from(chaos_ms) / 1000.0,
        t0.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        summary,
        "operations             {ops} ({:.0}/s): {} ok, {} failed (transient)",
        ops as f64 / (f64::from(chaos_ms) / 1000.0),
        c.ok.load(Ordering::Relaxed),
        c.failed.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "  by kind              {:?}",
        shared.ops_by_kind.lock().unwrap()
    );
    let _ = writeln!(
        summary,
        "  errors by kind       {:?}",
        shared.errors_by_kind.lock().unwrap()
    );
    let _ = writeln!(
        summary,
        "faults                 kill {}, stop {}, resume {}, restart {}, maintenance notifications {} {:?}",
        chaos.counts.kill,
        chaos.counts.stop,
        chaos.counts.resume,
        chaos.counts.restart,
        chaos.counts.maintenance,
        chaos.counts.maintenance_by_kind
    );
    let _ = writeln!(
        summary,
        "  maintenance events   {} raised by the member clients (one per notification and client; none while a member was down or stopped)",
        maintenance_events.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "reads                  {} hits, {} misses (key not on the member serving)",
        c.read_hits.load(Ordering::Relaxed),
        c.read_misses.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "transactions           {} committed, {} watch conflicts",
        c.commits.load(Ordering::Relaxed),
        c.watch_conflicts.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "pub/sub                {} published, {} delivered",
        c.published.load(Ordering::Relaxed),
        c.delivered.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "acked writes           {} verified ({} attributed by run_id), {} unverifiable (a possible acker died first), {} MISSING, {} wrong values; {} counter checks; {} checkpoints",
        verdict.verified,
        verdict.verified_attributed,
        verdict.unverifiable,
        verdict.missing,
        verdict.wrong_value,
        verdict.counters_checked,
        verdict.checkpoints
    );
    let _ = writeln!(
        summary,
        "mismatched replies     {}",
        c.mismatches.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "unexpected errors      {}",
        c.unexpected.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        summary,
        "callers past deadline  {} (budget: round trips x {TIMEOUT:?} ({RELAXED:?} near a maintenance window) + {SLACK:?}; worst overshoot past the budget {:.1} ms)",
        c.late.load(Ordering::Relaxed),
        c.worst_over_us.load(Ordering::Relaxed) as f64 / 1000.0
    );
    let worst: Vec<String> = shared
        .worst_by_kind
        .lock()
        .unwrap()
        .iter()
        .map(|(op, (us, at))| {
            format!(
                "{op} {:.1} ms at {:.1} s",
                *us as f64 / 1000.0,
                f64::from(*at) / 1000.0
            )
        })
        .collect();
    let _ = writeln!(summary, "  worst past budget    {}", worst.join(", "));
    // What the schedule did around the worst one.
    let worst_at = shared
        .worst_by_kind
        .lock()
        .unwrap()
        .values()
        .max()
        .map(|&(_, at)| at);
    if let Some(at) = worst_at {
        let near: Vec<&String> = chaos
            .log
            .iter()
            .filter(|line| {
                line.split_whitespace()
                    .next()
                    .and_then(|ms| ms.parse::<u32>().ok())
                    .is_some_and(|ms| ms + 8000 >= at && ms <= at + 1000)
            })
            .collect();
        let _ = writeln!(summary, "  faults before it     {near:?}");
    }
    let _ = writeln!(
        summary,
        "leaked threads         {} (peak rr-* threads during the run: {during_run_threads})",
        leaked_after_close.len()
    );
    let _ = writeln!(
        summary,
        "peak RSS               {} (after warm-up {}; bound {} = warm-up + {} unchecked-write backlog + {} margin)",
        mib(peak),
        mib(warm),
        mib(rss_bound),
        mib(verdict.peak_backlog_bytes),
        mib(RSS_MARGIN)
    );
    let at = |fraction: u32| {
        let when = chaos_ms / 4 * fraction;
        samples
            .iter()
            .find(|(t, _)| *t >= when)
            .map_or(0, |&(_, b)| b)
    };
    let _ = writeln!(
        summary,
        "  RSS over the run     {} / {} / {} / {} at 25/50/75/100%",
        mib(at(1)),
        mib(at(2)),
        mib(at(3)),
        mib(samples.last().map_or(0, |&(_, b)| b))
    );
    let _ = writeln!(summary, "fault log (first 40):");
    for line in chaos.log.iter().take(40) {
        let _ = writeln!(summary, "  {line}");
    }
    if !problems.is_empty() {
        let _ = writeln!(summary, "problems (first {}):", problems.len().min(30));
        for p in problems.iter().take(30) {
            let _ = writeln!(summary, "  {p}");
        }
    }
    eprintln!("{summary}");
    if let Ok(path) = std::env::var("SOAK_SUMMARY") {
        let _ = std::fs::write(path, &summary);
    }

    assert_eq!(
        c.mismatches.load(Ordering::Relaxed),
        0,
        "mismatched replies\n{summary}"
    );
    assert_eq!(
        c.late.load(Ordering::Relaxed),
        0,
        "callers past their deadline\n{summary}"
    );
    assert_eq!(
        c.unexpected.load(Ordering::Relaxed),
        0,
        "unexpected errors\n{summary}"
    );
    assert_eq!(verdict.missing, 0, "acknowledged writes missing\n{summary}");
    assert_eq!(
        verdict.wrong_value, 0,
        "keys holding foreign values\n{summary}"
    );
    assert!(
        closed_clean && leaked == 0,
        "leaked threads {leaked_after_close:?}\n{summary}"
    );
    assert!(peak <= rss_bound, "memory grew past its bound\n{summary}");
    // The run must have done something worth the name.
    assert!(ops > 1000, "too little traffic\n{summary}");
    assert!(verdict.verified > 100, "too few writes verified\n{summary}");
    assert!(
        chaos.counts.kill + chaos.counts.stop >= seconds / 4,
        "too few faults\n{summary}"
    );
}
