//! Chaos soak: three real `redis-server`s in an availability group, 16 threads of mixed
//! traffic, and a seeded fault schedule that kills, stops (SIGSTOP), resumes and
//! restarts members under them, announces maintenance, and breaks the network and the
//! servers (the wider fault model, below). Its own test binary, so the thread count it
//! checks at the end is its own (the binary's other tests never run beside it).
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
//!   failure UNWATCH: 5 round trips; the large write has a 1 s timeout. `SLACK` is
//!   500 ms. The machine may not run us: a probe thread sleeps 1 ms in a loop and
//!   records each wake-up more than 5 ms late as a stall ([`Stalls`]); a stall during
//!   which calls completed at under a tenth of the run's pace (counted per 10 ms) is
//!   one of the whole process, and a
//!   call past its budget + `SLACK` but within budget + `SLACK` + such stalls during it
//!   is counted apart ("past the slack in stalls"), not as late. A stall of the probe
//!   alone (starved among our own threads while calls went on) excuses nothing. Late calls: 0, each
//!   reported with what the client logged meanwhile ([`LogRing`]).
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
//! * **Memory bounded.** The live heap (bytes allocated and not freed, counted by the
//!   test's global allocator, [`CountingAlloc`]) is sampled every 100 ms. After a
//!   warm-up (the first 10% of the chaos, at most 5 s) the peak must stay under the
//!   warm-up heap + the largest backlog of unchecked writes the soak held (bytes) +
//!   `HEAP_MARGIN`. VmRSS is sampled too, and the client's share of it must end within
//!   `CLIENT_RSS_MARGIN` of its value after the warm-up. The share is told apart by
//!   the soak's allocator ([`alloc`]): the soak's own large buffers (its values, its
//!   proxies' frames) are mapped and unmapped directly, so they are resident only
//!   while alive, and RSS less those alive is the client's share (with the soak's
//!   small-object heap). Everything of the client's goes to the C allocator, which
//!   keeps pages after a multi-MiB buffer is freed (glibc raises its mmap threshold
//!   and later large buffers come from per-thread arenas).
//! * **Every thread ends on close.** After `Group::close` and dropping every handle, no
//!   `rr-*` thread may remain (`/proc/self/task/*/comm`); the verification clients are
//!   closed and counted the same way.
//!
//! # Maintenance notifications
//!
//! Real Redis OSS never sends them, so each member is reached through a TCP proxy
//! ([`Proxy`], in `proxy`) that forwards both ways and, when the schedule says so, writes a
//! maintenance notification (a RESP3 push: `MIGRATING`/`MIGRATED`, `FAILING_OVER`/
//! `FAILED_OVER`, `SMIGRATING`/`SMIGRATED`, `MOVING` to the member's own name) into the
//! server-to-client stream between two frames, on every connection to that member, as
//! a server announcing maintenance would. Members opt in with `maintNotifications=auto`
//! (Redis 7 refuses the opt-in, which `auto` absorbs, on every reconnect) and relax
//! timeouts to `RELAXED` for a short window; calls that overlap a window get the
//! relaxed timeout in their budget. The summary counts notifications injected and the
//! `ClientEvent::Maintenance` events the member clients raised for them.
//!
//! # The wider fault model
//!
//! Each kind (see [`Net`]) hits one member through its proxy (or its host name, which
//! a [`ScriptedResolver`] resolves) for a window, then is undone: a black hole (then
//! resumed, or reset), half-open connections, reads held while a 4-8 MiB `SET` is
//! written, a stressed server's error replies (`-LOADING`, `-BUSY`, `-MASTERDOWN`, and
//! for writes `-READONLY` and `-OOM`, with `-EXECABORT` for a transaction that had one)
//! in place of its replies, `-ERR max number of clients reached` at reconnect, and a
//! name that stops resolving. The first deck deals every kind once, one per step (so
//! the CI run sees each), then 40 % of the steps deal one. Error replies a caller gets
//! are expected only while they were being injected; a large write that was
//! acknowledged is checked by its length and first bytes, like any write.

mod alloc;
mod observe;
mod proxy;
#[path = "../support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use alloc::{client_side, soak_thread, CountingAlloc};
use observe::{LogRing, Stalls};
use resilient_redis::availability::{Group, GroupOptions, GroupSubscription, HealthCheck, Member};
use resilient_redis::prelude::*;
use resilient_redis::testkit::{Answer, ScriptedResolver};
use resilient_redis::{ClientEvent, Error, ErrorKind};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;
use proxy::{Proxy, Stress};
use support::machine::CpuTicks;
use support::optin::opt_in;
use support::{threads_named, wait_until, RedisServer};

/// Worker threads of mixed traffic.
const THREADS: usize = 16;
/// `syncTimeout` and `connectTimeout` of every member.
const TIMEOUT: Duration = Duration::from_millis(500);
/// How far past its budget a call may return before it counts as late: scheduling on
/// a loaded 2-core machine (16 workers, ~50 client threads, three servers).
const SLACK: Duration = Duration::from_millis(500);
/// Allowed heap growth past the warm-up, beyond the soak's own bookkeeping: room for
/// the large write in flight (its value, the encoded frame, the write buffer, the
/// proxy's copy: 4 x 8 MiB) and ordinary churn.
const HEAP_MARGIN: u64 = 64 * 1024 * 1024;
/// How far the client's share of RSS may end above its value after the warm-up: what
/// the C allocator may keep of the client's large buffers (the frames it encodes for
/// the large writes) once they are freed.
const CLIENT_RSS_MARGIN: u64 = 32 * 1024 * 1024;
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
/// Timeout of the large `SET`s written while a member stops reading.
const BIG_TIMEOUT: Duration = Duration::from_millis(1000);
/// Large values expire (a run writes dozens of MiB of them); one is checked only while
/// it is sure to be there: `BIG_TTL_MS` minus this margin after its ack.
const BIG_TTL_MS: u32 = 90_000;
const BIG_CHECK_WITHIN_MS: u32 = BIG_TTL_MS - 15_000;
/// The worker index the large writes are booked under (after the real workers).
const BIG_T: usize = THREADS;
/// How long after an injected error reply's window a caller may still report it.
const INJECTED_SPAN_MS: u32 = 3000;

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

/// The large value `key(BIG_T, 'g', seq)` is written with: its one small value as a
/// prefix, then filler up to 4 to 8 MiB. Checked by length and prefix.
fn big_prefix(seed: u64, seq: u32) -> String {
    format!("{}|", value_of(seed, BIG_T, 'g', seq))
}

fn big_size(seed: u64, seq: u32) -> usize {
    (4 << 20) + (splitmix(seed ^ 0xb16 ^ u64::from(seq)) % (4 << 20)) as usize
}

fn big_value(seed: u64, seq: u32) -> String {
    let mut v = big_prefix(seed, seq);
    let size = big_size(seed, seq);
    v.extend(std::iter::repeat_n('x', size - v.len()));
    v
}

/// What a member's check reads of a large value: its length and first bytes.
fn big_digest(len: usize, head: &str) -> String {
    format!("{len}:{head}")
}

/// How many first bytes of a large value are checked.
const BIG_HEAD: usize = 64;

/// The first `BIG_HEAD` bytes of `big_value(seed, seq)`, without building it.
fn big_head(seed: u64, seq: u32) -> String {
    let mut head = big_prefix(seed, seq);
    head.extend(std::iter::repeat_n(
        'x',
        BIG_HEAD.saturating_sub(head.len()),
    ));
    head.truncate(BIG_HEAD);
    head
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
    /// Past budget + slack, but not past it + the scheduling stalls measured during
    /// the call: the machine's delay, counted apart.
    late_in_stalls: AtomicU64,
    worst_in_stalls_us: AtomicU64,
    unexpected: AtomicU64,
    /// Largest (elapsed - budget) seen, in µs, also when within the slack.
    worst_over_us: AtomicU64,
    read_hits: AtomicU64,
    read_misses: AtomicU64,
    published: AtomicU64,
    delivered: AtomicU64,
    commits: AtomicU64,
    watch_conflicts: AtomicU64,
    big_acked: AtomicU64,
    big_failed: AtomicU64,
    /// Longest time a subscription stayed silent while its publishes succeeded: from
    /// the first publish not delivered to the next delivery (ms << 32 | when it ended).
    sub_gap: AtomicU64,
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
    /// Errors callers got that were replies the proxy put in place of the server's.
    injected_errors: Mutex<BTreeMap<&'static str, u64>>,
    /// First few problems, for the failure message.
    problems: Mutex<Vec<String>>,
    /// What the client logged around the first few late calls.
    late_details: Mutex<Vec<String>>,
    ports: Vec<u16>,
    /// One per worker and one for the large writes, drained by the checkpoints.
    books: Vec<Mutex<Book>>,
    run_ids: Mutex<RunIds>,
    /// Periods (ms since start) during which a member may have relaxed its timeouts.
    relaxed: Mutex<Vec<(u32, u32)>>,
    /// Periods (ms since start) during which a proxy replaced replies with an error
    /// of this code (`u32::MAX`: not ended yet).
    injected: Mutex<Vec<(u32, u32, &'static str)>>,
    stalls: Arc<Stalls>,
    /// Calls completed per 10 ms of the run: a stall during which calls still completed
    /// was the probe's alone (starved among our threads), not the whole process's.
    completions: Vec<AtomicU32>,
    log: &'static LogRing,
}

/// What a call ended with, for the report of a late one.
fn outcome<T>(r: &Result<T, Error>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{:?} from {}", e.kind(), e.endpoint().unwrap_or("?")),
    }
}

/// The code of an error a stressed server gives (the ones the proxy injects).
fn stress_code(e: &Error) -> Option<&'static str> {
    match e.kind() {
        ErrorKind::Loading => Some("LOADING"),
        ErrorKind::Busy => Some("BUSY"),
        ErrorKind::MasterDown => Some("MASTERDOWN"),
        ErrorKind::ReadOnly => Some("READONLY"),
        ErrorKind::ExecAbort => Some("EXECABORT"),
        ErrorKind::Server if e.to_string().contains("OOM command not allowed") => Some("OOM"),
        _ => None,
    }
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

    /// Whether `e` is a reply a proxy injected in place of the server's (its code was
    /// being injected on some member when the call ended, or just before); counted.
    fn injected(&self, e: &Error) -> bool {
        let Some(code) = stress_code(e) else {
            return false;
        };
        let now = ms_since(self.t0);
        let during = self
            .injected
            .lock()
            .unwrap()
            .iter()
            .rev()
            .any(|&(from, to, c)| {
                c == code && from <= now && to.saturating_add(INJECTED_SPAN_MS) >= now
            });
        if during {
            *self
                .injected_errors
                .lock()
                .unwrap()
                .entry(code)
                .or_default() += 1;
        }
        during
    }

    fn error(&self, op: &str, e: &Error) {
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
        *self
            .errors_by_kind
            .lock()
            .unwrap()
            .entry(format!("{:?}", e.kind()))
            .or_default() += 1;
        // An error reply a stressed server gives, while the proxy was injecting it, is
        // expected; outside such a window it means a reply went astray (redis-server
        // itself never says LOADING or OOM here).
        if stress_code(e).is_some() {
            if !self.injected(e) {
                self.unexpected(format!("{op}: {e} (no such reply was being injected)"));
            }
            return;
        }
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
    fn timed<T>(
        &self,
        op: &'static str,
        rounds: u32,
        f: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.timed_with(op, TIMEOUT, rounds, f)
    }

    /// `timed` with another timeout. A call past budget + `SLACK` is late, unless the
    /// stall probe measured the machine not running this process (calls completing at
    /// under a tenth of their pace meanwhile) for long enough during the call to
    /// explain it: then budget + `SLACK`
    /// + those stalls is the honest limit, and the call is counted apart.
    fn timed_with<T>(
        &self,
        op: &'static str,
        timeout: Duration,
        rounds: u32,
        f: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        let started = Instant::now();
        let from = ms_since(self.t0);
        let out = client_side(f);
        let took = started.elapsed();
        let to = ms_since(self.t0);
        if let Some(slot) = self.completions.get((to / 10) as usize) {
            slot.fetch_add(1, Ordering::Relaxed);
        }
        let timeout = if self.relaxed_during(from, to) {
            RELAXED.max(timeout)
        } else {
            timeout
        };
        let budget = timeout * rounds;
        self.counters.ops.fetch_add(1, Ordering::Relaxed);
        *self.ops_by_kind.lock().unwrap().entry(op).or_default() += 1;
        if let Some(over) = took.checked_sub(budget) {
            let us = u64::try_from(over.as_micros()).unwrap_or(u64::MAX);
            self.counters.worst_over_us.fetch_max(us, Ordering::Relaxed);
            {
                let mut worst = self.worst_by_kind.lock().unwrap();
                let entry = worst.entry(op).or_default();
                if us > entry.0 {
                    *entry = (us, to);
                }
            }
            if over > SLACK {
                let stall = Duration::from_millis(
                    self.stalls
                        .overlap_ms(from, to, |a, b| self.stood_still(a, b))
                        .into(),
                );
                let what = format!(
                    "{op}: {took:?} against a budget of {budget:?} + {SLACK:?}, at {from}..{to} ms, \
                     {stall:?} of whole-process stalls during it, {}",
                    outcome(&out)
                );
                if over > SLACK + stall {
                    self.counters.late.fetch_add(1, Ordering::Relaxed);
                    self.problem(format!("LATE {what}"));
                    self.late_detail(&what, from, to);
                } else {
                    self.counters.late_in_stalls.fetch_add(1, Ordering::Relaxed);
                    self.counters
                        .worst_in_stalls_us
                        .fetch_max(us, Ordering::Relaxed);
                }
            }
        }
        out
    }

    /// Whether the whole process (all but) stood still during a stall: fewer calls
    /// completed in the 10 ms slices wholly inside it than a tenth of the run's pace so
    /// far (measured: 15 where 4,800 were due, in a stall of 313 ms). A stall shorter
    /// than two slices cannot be told apart, and counts.
    fn stood_still(&self, start: u32, end: u32) -> bool {
        let (first, last) = (start / 10 + 1, end / 10);
        if last <= first {
            return true;
        }
        let done: u64 = (first..last)
            .filter_map(|b| self.completions.get(b as usize))
            .map(|c| u64::from(c.load(Ordering::Relaxed)))
            .sum();
        let pace =
            self.counters.ops.load(Ordering::Relaxed) as f64 / f64::from(ms_since(self.t0).max(1));
        (done as f64) * 10.0 <= pace * f64::from((last - first) * 10)
    }

    /// Keeps what the client logged during the first few late calls.
    fn late_detail(&self, what: &str, from: u32, to: u32) {
        let mut details = self.late_details.lock().unwrap();
        if details.len() >= 5 {
            return;
        }
        let offset = self.log.offset_ms(self.t0);
        let mut text = format!("{what}; the client logged:");
        for line in self
            .log
            .between(offset + from.saturating_sub(100), offset + to + 100, 16)
        {
            let _ = write!(text, "\n      {line}");
        }
        details.push(text);
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
    /// A large `SET` (see `big_value`): sequence, send and ack (ms since start).
    Big { seq: u32, send: u32, ack: u32 },
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
    /// When the oldest publish not followed by any delivery was acknowledged (ms).
    silent_since: Option<u32>,
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
                    (a, b, c) => {
                        let errors = [a.as_ref().err(), b.as_ref().err(), c.as_ref().err()];
                        // Replies a proxy replaced (the server still ran the commands,
                        // so what did come must still be right); anything else failing
                        // inside a successful batch is unexpected.
                        if errors.iter().flatten().all(|e| shared.injected(e)) {
                            if let Ok(got) = &b {
                                if got.as_deref() != Some(v.as_str()) {
                                    shared
                                        .mismatch(format!("batch GET {k} after its SET: {got:?}"));
                                }
                            }
                            if let Ok(echoed) = &c {
                                if *echoed != token {
                                    shared.mismatch(format!("batch ECHO {token:?}: {echoed:?}"));
                                }
                            }
                        } else {
                            shared.unexpected(format!(
                                "batch items failed after a successful batch: {:?} {:?} {:?}",
                                a.err(),
                                b.err(),
                                c.err()
                            ));
                        }
                    }
                }
                if let (Some((kind, s)), Some(h)) = (old, older) {
                    match h.wait() {
                        Ok(got) => self.check_read("batch GET", kind, s, got.as_deref()),
                        Err(e) if shared.injected(&e) => {}
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
                self.silent_since.get_or_insert(ms_since(shared.t0));
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
                if let Some(since) = self.silent_since.take() {
                    let now = ms_since(self.shared.t0);
                    let gap = u64::from(now - since) << 32 | u64::from(now);
                    self.shared
                        .counters
                        .sub_gap
                        .fetch_max(gap, Ordering::Relaxed);
                }
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

/// A large `SET` (4-8 MiB) through the group, ordered while the member serving stops
/// reading: its caller must still return by its deadline, and if acknowledged it is
/// checked like any write.
fn big_write(db: &Database, shared: &Shared, seq: u32) {
    let (k, v) = (key(BIG_T, 'g', seq), big_value(shared.seed, seq));
    let send = ms_since(shared.t0);
    let db = db.with_timeout(BIG_TIMEOUT);
    let out = shared.timed_with("big set", BIG_TIMEOUT, 1, || {
        db.cmd("SET")
            .key(&k)
            .arg(&v)
            .arg("PX")
            .arg(BIG_TTL_MS)
            .exec()
    });
    match out {
        Ok(()) => {
            shared.counters.ok.fetch_add(1, Ordering::Relaxed);
            shared.counters.big_acked.fetch_add(1, Ordering::Relaxed);
            let ack = ms_since(shared.t0) + 1;
            shared.books[BIG_T]
                .lock()
                .unwrap()
                .pending
                .push(Pending::Big { seq, send, ack });
        }
        Err(e) => {
            shared.counters.big_failed.fetch_add(1, Ordering::Relaxed);
            shared.error("big SET", &e);
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
    /// Network and server-stress faults, by kind (see `Net`).
    net: BTreeMap<Net, u64>,
    /// Black holes that ended with a reset rather than resuming.
    black_hole_resets: u64,
    /// Connections the half-open faults left hanging.
    half_open_conns: u64,
    /// Large `SET`s ordered while their member stopped reading.
    big_ordered: u64,
}

/// The wider fault model: the network and a server under stress, each on one member
/// through its proxy, for a window ended by an `Undo` (half-open is at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Net {
    /// Nothing forwarded either way, sockets open; then resumed, or reset (RST).
    BlackHole,
    /// The peer gone without a FIN or RST: every open connection hangs for good.
    HalfOpen,
    /// The member stops reading while a 4-8 MiB `SET` is written to it.
    HeldWrite,
    /// A stressed server's error reply in place of replies.
    Stress(Stress),
    /// Connections closed, then `-ERR max number of clients reached` at reconnect.
    MaxClients,
    /// Connections closed while the member's host name stops resolving.
    Dns,
}

const NET_KINDS: [Net; 10] = [
    Net::BlackHole,
    Net::HalfOpen,
    Net::HeldWrite,
    Net::Stress(Stress::Loading),
    Net::Stress(Stress::Busy),
    Net::Stress(Stress::MasterDown),
    Net::Stress(Stress::ReadOnly),
    Net::Stress(Stress::Oom),
    Net::MaxClients,
    Net::Dns,
];

impl Net {
    fn name(self) -> &'static str {
        match self {
            Net::BlackHole => "black hole",
            Net::HalfOpen => "half-open",
            Net::HeldWrite => "held reads + large SET",
            Net::Stress(s) => s.code(),
            Net::MaxClients => "maxclients at reconnect",
            Net::Dns => "DNS outage",
        }
    }

    /// Kinds whose windows must not overlap on one member (one flag each).
    fn class(self) -> usize {
        match self {
            Net::BlackHole => 0,
            Net::HeldWrite => 1,
            Net::Stress(_) => 2,
            Net::MaxClients => 3,
            Net::Dns => 4,
            Net::HalfOpen => 5,
        }
    }
}

/// How a network fault's window ends.
#[derive(Clone, Copy, Debug)]
enum Undo {
    BlackHole { reset: bool },
    HeldWrite,
    Stress,
    MaxClients,
    Dns,
}

/// A member's host name (members are reached by name, resolved by `Chaos::dns`).
fn host_of(i: usize) -> String {
    format!("m{i}.soak.test")
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
    /// What every member's host name resolves to.
    dns: ScriptedResolver,
    /// Network faults still to deal, drawn from a shuffled deck of every kind: the
    /// first deck is dealt one per step, so a short run sees each kind.
    deck: Vec<Net>,
    dealt: u64,
    /// Windows to end: (due, ms since start), member, how, and the index of the
    /// injected-reply period to close (if any).
    undo: Vec<(u32, usize, Undo, Option<usize>)>,
    /// Per member, per `Net::class`: a window is open.
    net_open: Vec<[bool; 6]>,
    /// Orders for the large writer (sequence numbers).
    big_orders: Option<crossbeam_channel::Sender<u32>>,
    next_big: u32,
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
    client_side(|| read_member_values(client, keys))
}

fn read_member_values(client: &Client, keys: &[String]) -> HashMap<String, String> {
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

/// Reads large values from a member: key -> `big_digest` of what is there.
fn read_big(client: &Client, keys: &[String]) -> HashMap<String, String> {
    client_side(|| read_big_digests(client, keys))
}

fn read_big_digests(client: &Client, keys: &[String]) -> HashMap<String, String> {
    let db = client.database().with_timeout(Duration::from_secs(10));
    let mut out = HashMap::new();
    for k in keys {
        let len: usize = db
            .cmd("STRLEN")
            .key(k)
            .query()
            .expect("STRLEN from a member");
        if len == 0 {
            continue;
        }
        let head: String = db
            .cmd("GETRANGE")
            .key(k)
            .arg(0)
            .arg(BIG_HEAD - 1)
            .query()
            .expect("GETRANGE from a member");
        out.insert(k.clone(), big_digest(len, &head));
    }
    out
}

fn run_id_of(client: &Client) -> String {
    let info = client_side(|| {
        client
            .database()
            .with_timeout(Duration::from_secs(10))
            .info(Some("server"))
    })
    .expect("INFO from a member");
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .expect("run_id in INFO")
        .trim()
        .to_string()
}

fn direct(server: &RedisServer) -> Client {
    Client::connect(opt_in(format!(
        "{},syncTimeout=10000,connectTimeout=5000",
        server.addr()
    )))
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

    /// One step of the schedule: a process or maintenance fault, then maybe a
    /// network one.
    fn step(&mut self, rng: &mut XorShift, group: &Group, shared: &Shared) {
        self.process_step(rng, group, shared);
        self.net_step(rng, group, shared);
    }

    /// The active member's index, if any.
    fn active(group: &Group) -> Option<usize> {
        group
            .active()
            .and_then(|m| m.name().strip_prefix('m')?.parse::<usize>().ok())
    }

    /// Deals a network fault: every step until each kind has been dealt once, then
    /// on 40% of the steps.
    fn net_step(&mut self, rng: &mut XorShift, group: &Group, shared: &Shared) {
        if self.dealt >= NET_KINDS.len() as u64 && rng.below(100) >= 40 {
            return;
        }
        if self.deck.is_empty() {
            let mut deck = NET_KINDS.to_vec();
            for k in (1..deck.len()).rev() {
                deck.swap(k, rng.below(k as u64 + 1) as usize);
            }
            self.deck = deck;
        }
        let Some(kind) = self.deck.pop() else { return };
        self.dealt += 1;
        let free: Vec<usize> = (0..self.servers.len())
            .filter(|&m| !self.net_open[m][kind.class()])
            .collect();
        if free.is_empty() {
            return;
        }
        // The active member more often than not (that is where the traffic is); always
        // for the large write, which goes where the traffic goes.
        let bias = if kind == Net::HeldWrite { 100 } else { 60 };
        let i = match Chaos::active(group) {
            Some(a) if free.contains(&a) && rng.below(100) < bias => a,
            _ => free[rng.below(free.len() as u64) as usize],
        };
        let now = ms_since(shared.t0);
        let until = |rng: &mut XorShift, from: u64, to: u64| {
            now + u32::try_from(rng.millis(from, to).as_millis()).unwrap_or(u32::MAX)
        };
        let proxy = &self.proxies[i];
        let (due, undo, period) = match kind {
            Net::BlackHole => {
                proxy.black_hole(true);
                let reset = rng.below(2) == 0;
                (until(rng, 800, 2500), Undo::BlackHole { reset }, None)
            }
            Net::HalfOpen => {
                self.counts.half_open_conns += proxy.half_open() as u64;
                *self.counts.net.entry(kind).or_default() += 1;
                self.log.push(format!("{now:>7} ms {} m{i}", kind.name()));
                return;
            }
            Net::HeldWrite => {
                proxy.hold_client(true);
                self.next_big += 1;
                if let Some(orders) = &self.big_orders {
                    if orders.send(self.next_big).is_ok() {
                        self.counts.big_ordered += 1;
                    }
                }
                // Short enough for the write to go through once reads resume (it is
                // then acknowledged and checked), or longer than its timeout.
                let held = if rng.below(2) == 0 {
                    until(rng, 200, 500)
                } else {
                    until(rng, 1500, 3000)
                };
                (held, Undo::HeldWrite, None)
            }
            Net::Stress(stress) => {
                let mut periods = shared.injected.lock().unwrap();
                let at = periods.len();
                // A transaction with a refused command is refused whole (EXECABORT).
                periods.push((now, u32::MAX, stress.code()));
                periods.push((now, u32::MAX, "EXECABORT"));
                drop(periods);
                proxy.stress(Some(stress));
                (until(rng, 300, 1500), Undo::Stress, Some(at))
            }
            Net::MaxClients => {
                proxy.refuse(true);
                proxy.close_all();
                (until(rng, 500, 2000), Undo::MaxClients, None)
            }
            Net::Dns => {
                self.dns.set(&host_of(i), Answer::Fail);
                proxy.close_all();
                (until(rng, 1000, 3000), Undo::Dns, None)
            }
        };
        self.net_open[i][kind.class()] = true;
        self.undo.push((due, i, undo, period));
        *self.counts.net.entry(kind).or_default() += 1;
        self.log.push(format!(
            "{now:>7} ms {} m{i} for {} ms",
            kind.name(),
            due - now
        ));
    }

    /// Ends the network faults whose window is over (all of them with `all`).
    fn run_due(&mut self, shared: &Shared, all: bool) {
        let now = ms_since(shared.t0);
        let mut due = Vec::new();
        self.undo.retain(|u| {
            let go = all || u.0 <= now;
            if go {
                due.push(*u);
            }
            !go
        });
        for (_, i, undo, period) in due {
            let proxy = &self.proxies[i];
            let class = match undo {
                Undo::BlackHole { reset } => {
                    if reset {
                        proxy.reset_all();
                        self.counts.black_hole_resets += 1;
                        self.log.push(format!("{now:>7} ms black hole m{i} reset"));
                    }
                    proxy.black_hole(false);
                    Net::BlackHole.class()
                }
                Undo::HeldWrite => {
                    proxy.hold_client(false);
                    Net::HeldWrite.class()
                }
                Undo::Stress => {
                    proxy.stress(None);
                    if let Some(at) = period {
                        let mut periods = shared.injected.lock().unwrap();
                        for p in periods.iter_mut().skip(at).take(2) {
                            p.1 = now;
                        }
                    }
                    Net::Stress(Stress::Loading).class()
                }
                Undo::MaxClients => {
                    proxy.refuse(false);
                    Net::MaxClients.class()
                }
                Undo::Dns => {
                    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
                    self.dns.set(&host_of(i), Answer::addrs([addr]));
                    Net::Dns.class()
                }
            };
            self.net_open[i][class] = false;
        }
    }

    /// Sleeps until `until`, ending network fault windows when they are due.
    fn sleep_until(&mut self, until: Instant, shared: &Shared) {
        loop {
            self.run_due(shared, false);
            let now = Instant::now();
            if now >= until {
                return;
            }
            let next = self
                .undo
                .iter()
                .map(|u| shared.t0 + Duration::from_millis(u.0.into()))
                .min()
                .map_or(until, |due| due.min(until));
            thread::sleep(next.saturating_duration_since(now));
        }
    }

    /// One process or maintenance fault that is possible now.
    fn process_step(&mut self, rng: &mut XorShift, group: &Group, shared: &Shared) {
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
                // Moves to where it already is (its own name, so the handoff polls the
                // record, which names the same address): the client ends up talking to
                // the same member.
                _ => (
                    "MOVING",
                    format!(">4\r\n+MOVING\r\n:{id}\r\n:1\r\n+{}:{port}\r\n", host_of(i)),
                ),
            },
        };
        let now = ms_since(shared.t0);
        // A black hole on the member holds the notification until it ends (a network
        // that resumes delivers what it held): the client may relax only then.
        let delivered = self
            .undo
            .iter()
            .filter(|u| u.1 == i && matches!(u.2, Undo::BlackHole { .. }))
            .map(|u| u.0)
            .max()
            .unwrap_or(now)
            .max(now);
        shared
            .relaxed
            .lock()
            .unwrap()
            .push((now, delivered + RELAX_SPAN_MS));
        self.proxies[i].inject(frame.as_bytes());
        self.counts.maintenance += 1;
        *self.counts.maintenance_by_kind.entry(kind).or_default() += 1;
        kind
    }

    /// Back to a readable state: stopped members resume; killed ones stay dead (their
    /// writes died with them and are counted as unverifiable).
    fn settle(&mut self, shared: &Shared) {
        self.run_due(shared, true);
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

    /// The member processes that may have executed a write sent at `send` and acked at
    /// `ack` (ms): the running ones alive at any point between; `settled`: none of
    /// them is stopped now; `dead`: one of them has died since.
    fn candidates(&self, send: u32, ack: u32) -> (Vec<usize>, bool, bool) {
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
        (members, settled, dead)
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
        let mut wanted_big: Vec<Vec<String>> = vec![Vec::new(); self.servers.len()];
        let now = ms_since(shared.t0);
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
                    let (members, settled, dead) = self.candidates(send, ack);
                    for &m in &members {
                        wanted[m].push(key(t.into(), kind as char, seq));
                    }
                    Plan::Read {
                        members,
                        settled,
                        dead,
                    }
                }
                // Expired, or about to: nothing to read any more.
                Pending::Big { ack, .. } if now > ack.saturating_add(BIG_CHECK_WITHIN_MS) => {
                    Plan::Unverifiable
                }
                Pending::Big { seq, send, ack } => {
                    let (members, settled, dead) = self.candidates(send, ack);
                    for &m in &members {
                        wanted_big[m].push(key(BIG_T, 'g', seq));
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
        let mut held = read_all(&mut wanted, clients);
        for (m, keys) in wanted_big.iter().enumerate() {
            if let (Some(c), false) = (&clients[m], keys.is_empty()) {
                held[m].extend(read_big(c, keys));
            }
        }

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
                Pending::Big { seq, .. } => (
                    key(BIG_T, 'g', seq),
                    big_digest(big_size(seed, seq), &big_head(seed, seq)),
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
                            Pending::Plain { send, ack, .. } | Pending::Big { send, ack, .. } => {
                                format!(
                                    "{k} (sent {send} ms, acked {ack} ms) is on no process alive since"
                                )
                            }
                        };
                        shared.problem(format!("MISSING {what}"));
                    }
                }
            }
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

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A member reached through its proxy by host name (resolved by `dns`, which a
/// fault makes fail), opted in to maintenance notifications with short relaxed
/// windows.
fn member(proxy: &Proxy, i: usize, weight: u32, dns: &ScriptedResolver) -> Member {
    dns.set(
        &host_of(i),
        Answer::addrs([SocketAddr::from(([127, 0, 0, 1], proxy.port))]),
    );
    let mut options = Options::parse(&format!(
        "{}:{},syncTimeout={ms},connectTimeout={ms},reconnectMin=20,reconnectMax=200,\
         maintNotifications=auto,maintRelaxedTimeout={relaxed},maintRelaxedWindowMax=2,\
         maintPostEventRelaxed=1",
        host_of(i),
        proxy.port,
        ms = TIMEOUT.as_millis(),
        relaxed = RELAXED.as_secs_f64()
    ))
    .expect("member options");
    options.resolver = Some(Arc::new(dns.clone()));
    Member::from_options(opt_in(options))
        .with_name(format!("m{i}"))
        .with_weight(weight)
}

/// A memory sample: ms since the start, RSS, live heap, operations so far, and the
/// soak's own large buffers alive (see `alloc`).
type Sample = (u32, u64, u64, u64, u64);

/// RSS less the soak's own large buffers alive: the client's share (with the soak's
/// small-object heap).
fn client_rss(s: &Sample) -> u64 {
    s.1.saturating_sub(s.4)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

// ---------------------------------------------------------------------------------

/// The tests of this binary run one at a time: the soak counts the process's client
/// threads, which another test's client would disturb.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn chaos_soak() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // This thread runs the fault schedule and the checkpoints: the soak's side.
    soak_thread();
    let seconds = env_u64("SOAK_SECONDS", 40);
    let seed = env_u64("SOAK_SEED", 0x5eed_2024);
    let log = LogRing::install(Instant::now());
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
    let checks = HealthCheck::default()
        .interval(Duration::from_millis(200))
        .probe_count(1)
        .probe_timeout(Duration::from_millis(300))
        .probe_interval(Duration::from_millis(50));
    let proxies: Vec<Proxy> = servers.iter().map(|s| Proxy::start(s.port)).collect();
    let dns = ScriptedResolver::new();
    let group = Group::connect(
        vec![
            member(&proxies[0], 0, 30, &dns),
            member(&proxies[1], 1, 20, &dns),
            member(&proxies[2], 2, 10, &dns),
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
    let (load_before, cpu_before) = (load_average(), CpuTicks::now());
    let probe_stop = Arc::new(AtomicBool::new(false));
    let (stalls, stall_probe) = Stalls::start(t0, probe_stop.clone());
    let shared = Arc::new(Shared {
        seed,
        t0,
        stop: AtomicBool::new(false),
        counters: Counters::default(),
        ops_by_kind: Mutex::new(BTreeMap::new()),
        worst_by_kind: Mutex::new(BTreeMap::new()),
        errors_by_kind: Mutex::new(BTreeMap::new()),
        injected_errors: Mutex::new(BTreeMap::new()),
        problems: Mutex::new(Vec::new()),
        late_details: Mutex::new(Vec::new()),
        ports: ports.clone(),
        books: (0..=THREADS).map(|_| Mutex::new(Book::default())).collect(),
        run_ids: Mutex::new(RunIds::default()),
        relaxed: Mutex::new(Vec::new()),
        injected: Mutex::new(Vec::new()),
        stalls: stalls.clone(),
        // Ten per second, with room for the run's tail.
        completions: (0..(seconds + 120) * 100)
            .map(|_| AtomicU32::new(0))
            .collect(),
        log,
    });
    let (big_orders, big_rx) = crossbeam_channel::unbounded::<u32>();
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
        dns: dns.clone(),
        deck: Vec::new(),
        dealt: 0,
        undo: Vec::new(),
        net_open: vec![[false; 6]; 3],
        big_orders: Some(big_orders),
        next_big: 0,
    };

    // Memory and thread sampler.
    // (ms since start, RSS, live heap, operations so far, the soak's large buffers)
    let rss_samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let peak_threads = Arc::new(AtomicU64::new(0));
    let maintenance_events = Arc::new(AtomicU64::new(0));
    // Reconnects refused at maxclients, and those that could not resolve the name.
    let refused_reconnects = Arc::new(AtomicU64::new(0));
    let unresolved_reconnects = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (shared, rss, peak_threads, raised) = (
            shared.clone(),
            rss_samples.clone(),
            peak_threads.clone(),
            maintenance_events.clone(),
        );
        let (refused, unresolved) = (refused_reconnects.clone(), unresolved_reconnects.clone());
        thread::Builder::new()
            .name("soak-sampler".into())
            .spawn(move || {
                soak_thread();
                let count = |events: &[crossbeam_channel::Receiver<ClientEvent>]| {
                    for rx in events {
                        for e in rx.try_iter() {
                            match e {
                                ClientEvent::Maintenance(_) => {
                                    raised.fetch_add(1, Ordering::Relaxed);
                                }
                                ClientEvent::ReconnectFailed { error, .. } => {
                                    let text = error.to_string();
                                    if text.contains("max number of clients") {
                                        refused.fetch_add(1, Ordering::Relaxed);
                                    } else if text.contains("resolve") {
                                        unresolved.fetch_add(1, Ordering::Relaxed);
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                };
                while !shared.stop.load(Ordering::Relaxed) {
                    rss.lock().unwrap().push((
                        ms_since(shared.t0),
                        rss_bytes(),
                        CountingAlloc::live(),
                        shared.counters.ops.load(Ordering::Relaxed),
                        CountingAlloc::soak_mapped(),
                    ));
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
                silent_since: None,
                recent: std::collections::VecDeque::with_capacity(4096),
            };
            thread::Builder::new()
                .name(format!("soak-worker-{t}"))
                .spawn(move || {
                    soak_thread();
                    w.run()
                })
                .unwrap()
        })
        .collect();
    // The large writes, one per order of the schedule (it holds the member's reads).
    let big_writer = {
        let (db, shared) = (db.clone(), shared.clone());
        thread::Builder::new()
            .name("soak-big".into())
            .spawn(move || {
                soak_thread();
                for seq in big_rx {
                    big_write(&db, &shared, seq);
                }
            })
            .unwrap()
    };

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
        chaos.sleep_until((Instant::now() + pause).min(end), &shared);
    }
    let chaos_ms = ms_since(t0);
    let (load_after, cpu_after) = (load_average(), CpuTicks::now());
    shared.stop.store(true, Ordering::Relaxed);
    chaos.big_orders = None;
    for w in workers {
        w.join().expect("a worker panicked");
    }
    big_writer.join().expect("the large writer panicked");
    sampler.join().unwrap();
    probe_stop.store(true, Ordering::Relaxed);
    stall_probe.join().unwrap();
    chaos.settle(&shared);

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

    // Memory: warm-up peak, then the peak after it; heap bounded, RSS reported.
    let samples = rss_samples.lock().unwrap().clone();
    let warmup_ms = (chaos_ms / 10).min(5000);
    let warm_peak = |f: fn(&Sample) -> u64| {
        let warm = samples
            .iter()
            .filter(|s| s.0 <= warmup_ms)
            .map(f)
            .max()
            .unwrap_or(0);
        (warm, samples.iter().map(f).max().unwrap_or(0))
    };
    let (warm, peak) = warm_peak(|s| s.1);
    let (warm_heap, peak_heap) = warm_peak(|s| s.2);
    let (warm_client, _) = warm_peak(client_rss);
    let end_client = samples.last().map_or(0, client_rss);
    let client_bound = warm_client + CLIENT_RSS_MARGIN;
    let verdict = &chaos.verdict;
    let heap_bound = warm_heap + verdict.peak_backlog_bytes + HEAP_MARGIN;
    // Operations completed during the worst stall, against the run's average pace: a
    // stall of the whole process stops them, one of the probe thread alone does not.
    let worst_stall_end = u32::try_from(stalls.worst_at.load(Ordering::Relaxed)).unwrap_or(0);
    let worst_stall_ms = u32::try_from(stalls.worst_us.load(Ordering::Relaxed) / 1000).unwrap_or(0);
    // Calls completed during the worst stall: none if the whole process stood still.
    let completed_in_worst: u32 = (worst_stall_end.saturating_sub(worst_stall_ms) / 10 + 1
        ..worst_stall_end / 10)
        .filter_map(|b| shared.completions.get(b as usize))
        .map(|c| c.load(Ordering::Relaxed))
        .sum();
    let c = &shared.counters;
    let ops = c.ops.load(Ordering::Relaxed);
    let problems = shared.problems.lock().unwrap().clone();
    let mut summary = String::new();
    let _ = writeln!(summary, "=== chaos soak summary ===");
    let _ = writeln!(summary, "seed                   {seed:#x}");
    let stolen = cpu_after.since(cpu_before).shares().steal;
    let _ = writeln!(
        summary,
        "machine                {} CPUs, load average {load_before} at the start, {load_after} at the end; {:.1} % of CPU time stolen by the hypervisor",
        thread::available_parallelism().map_or(0, |n| n.get()),
        stolen * 100.0
    );
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
    let net: Vec<String> = NET_KINDS
        .iter()
        .map(|k| {
            format!(
                "{} {}",
                k.name(),
                chaos.counts.net.get(k).copied().unwrap_or(0)
            )
        })
        .collect();
    let _ = writeln!(summary, "network/stress faults  {}", net.join(", "));
    let proxy_sum = |f: &dyn Fn(&proxy::Stats) -> &AtomicU64| -> u64 {
        chaos
            .proxies
            .iter()
            .map(|p| f(p.stats()).load(Ordering::Relaxed))
            .sum()
    };
    let _ = writeln!(
        summary,
        "  what they did        black holes reset {} of {}; {} connections left half-open; large SETs {} ordered, {} acked, {} failed; {} replies replaced by stress errors + {} EXECABORT; {} connections refused at maxclients ({} reconnects failed on it); {} reconnects failed to resolve; {} RSTs; {} proxied connections",
        chaos.counts.black_hole_resets,
        chaos.counts.net.get(&Net::BlackHole).copied().unwrap_or(0),
        chaos.counts.half_open_conns,
        chaos.counts.big_ordered,
        c.big_acked.load(Ordering::Relaxed),
        c.big_failed.load(Ordering::Relaxed),
        proxy_sum(&|s| &s.replaced),
        proxy_sum(&|s| &s.exec_aborted),
        proxy_sum(&|s| &s.refused),
        refused_reconnects.load(Ordering::Relaxed),
        unresolved_reconnects.load(Ordering::Relaxed),
        proxy_sum(&|s| &s.reset),
        proxy_sum(&|s| &s.connections),
    );
    let _ = writeln!(
        summary,
        "  injected errors      {:?} returned to callers (expected: each was being injected)",
        shared.injected_errors.lock().unwrap()
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
    let gap = c.sub_gap.load(Ordering::Relaxed);
    let _ = writeln!(
        summary,
        "pub/sub                {} published, {} delivered; longest silence of a subscription whose publishes succeeded {:.1} s (ended at {:.1} s)",
        c.published.load(Ordering::Relaxed),
        c.delivered.load(Ordering::Relaxed),
        (gap >> 32) as f64 / 1000.0,
        (gap & 0xffff_ffff) as f64 / 1000.0
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
        "callers past deadline  {} (budget: round trips x {TIMEOUT:?} ({RELAXED:?} near a maintenance window) + {SLACK:?} + the scheduling stalls measured during the call; worst overshoot past the budget {:.1} ms)",
        c.late.load(Ordering::Relaxed),
        c.worst_over_us.load(Ordering::Relaxed) as f64 / 1000.0
    );
    let _ = writeln!(
        summary,
        "  past the slack in stalls {} (late by the fixed slack, not once the stalls measured during them are added; worst {:.1} ms past the budget)",
        c.late_in_stalls.load(Ordering::Relaxed),
        c.worst_in_stalls_us.load(Ordering::Relaxed) as f64 / 1000.0
    );
    let _ = writeln!(
        summary,
        "  scheduling stalls    {} (a 1 ms sleeper woke > 5 ms late), {:.1} s in all ({:.1} s of the whole process), worst {:.1} ms at {:.1} s; per tenth of the run (ms): {:?}",
        stalls.count.load(Ordering::Relaxed),
        stalls.total_us.load(Ordering::Relaxed) as f64 / 1e6,
        f64::from(stalls.overlap_ms(0, chaos_ms, |a, b| shared.stood_still(a, b))) / 1000.0,
        stalls.worst_us.load(Ordering::Relaxed) as f64 / 1000.0,
        stalls.worst_at.load(Ordering::Relaxed) as f64 / 1000.0,
        stalls.profile(chaos_ms, 10)
    );
    let _ = writeln!(
        summary,
        "  during the worst     {completed_in_worst} calls completed ({:.0} at the run's average pace): {}",
        ops as f64 * f64::from(worst_stall_ms) / f64::from(chaos_ms.max(1)),
        if worst_stall_ms < 20 {
            "too short to tell (calls are counted per 10 ms)"
        } else if shared.stood_still(
            worst_stall_end.saturating_sub(worst_stall_ms),
            worst_stall_end,
        ) {
            "the whole process (all but) stood still"
        } else {
            "the process ran on; the probe alone was starved"
        }
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
        "peak heap              {} (after warm-up {}; bound {} = warm-up + {} unchecked-write backlog + {} margin)",
        mib(peak_heap),
        mib(warm_heap),
        mib(heap_bound),
        mib(verdict.peak_backlog_bytes),
        mib(HEAP_MARGIN)
    );
    let at = |fraction: u32, f: fn(&Sample) -> u64| {
        let when = chaos_ms / 4 * fraction;
        samples.iter().find(|s| s.0 >= when).map_or(0, f)
    };
    let quarters = |f: fn(&Sample) -> u64| {
        format!(
            "{} / {} / {} / {}",
            mib(at(1, f)),
            mib(at(2, f)),
            mib(at(3, f)),
            mib(samples.last().map_or(0, f))
        )
    };
    let _ = writeln!(
        summary,
        "  heap over the run    {} at 25/50/75/100%",
        quarters(|s| s.2)
    );
    let _ = writeln!(
        summary,
        "peak RSS               {} (after warm-up {}; {} at 25/50/75/100%; the soak's own large buffers included)",
        mib(peak),
        mib(warm),
        quarters(|s| s.1)
    );
    let _ = writeln!(
        summary,
        "client's share of RSS  {} at the end (after warm-up {}; {} at 25/50/75/100%; bound {} = warm-up + {}): RSS less the soak's large buffers alive",
        mib(end_client),
        mib(warm_client),
        quarters(client_rss),
        mib(client_bound),
        mib(CLIENT_RSS_MARGIN),
    );
    let _ = writeln!(summary, "fault log (first 60):");
    for line in chaos.log.iter().take(60) {
        let _ = writeln!(summary, "  {line}");
    }
    if !problems.is_empty() {
        let _ = writeln!(summary, "problems (first {}):", problems.len().min(30));
        for p in problems.iter().take(30) {
            let _ = writeln!(summary, "  {p}");
        }
    }
    let details = shared.late_details.lock().unwrap().clone();
    if !details.is_empty() {
        let _ = writeln!(
            summary,
            "late calls, with what the client logged meanwhile:"
        );
        for d in &details {
            let _ = writeln!(summary, "  {d}");
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
    assert!(
        peak_heap <= heap_bound,
        "the heap grew past its bound\n{summary}"
    );
    assert!(
        end_client <= client_bound,
        "the client's share of RSS grew past its bound\n{summary}"
    );
    // The run must have done something worth the name.
    assert!(ops > 1000, "too little traffic\n{summary}");
    assert!(verdict.verified > 100, "too few writes verified\n{summary}");
    assert!(
        chaos.counts.kill + chaos.counts.stop >= seconds / 4,
        "too few faults\n{summary}"
    );
    // The first deck deals every network kind once, one per step: any run of the CI's
    // length gets that far.
    if seconds >= 30 {
        for kind in NET_KINDS {
            assert!(
                chaos.counts.net.get(&kind).copied().unwrap_or(0) > 0,
                "{} was never injected\n{summary}",
                kind.name()
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// Faults of the wider model on their own, where each is easy to read: a deadline the
// soak found broken, one found by reading the code, and a subscription the soak found
// silent after a failback (all fixed).

/// A caller writing a large value to a server that stopped reading returns by its
/// deadline. It used to write its own frame with a `write_all` that has no deadline,
/// and stayed there until the connection was set aside and closed: 1.48 s for a
/// 500 ms timeout (measured). A large frame is still written by its caller (from its
/// own buffer, never copied), but each send may block only for what is left of the
/// call's time, and the caller is told of a timeout.
#[test]
fn a_large_write_to_a_server_that_stopped_reading_returns_by_its_deadline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let client = Client::connect(opt_in(format!(
        "127.0.0.1:{},syncTimeout=500,connectTimeout=500",
        proxy.port
    )))
    .expect("client");
    let db = client.database();
    db.set("before", "x").expect("a first SET");
    proxy.hold_client(true);
    let big = "v".repeat(8 << 20);
    let started = Instant::now();
    let out = db.set("big", &big);
    let took = started.elapsed();
    proxy.hold_client(false);
    assert!(
        matches!(&out, Err(e) if e.kind() == ErrorKind::Timeout),
        "expected a timeout, got {out:?}"
    );
    // The deadline, plus scheduling on a loaded 2-core machine (measured stalls reach
    // 200 ms there); without the fix the caller came back with the connection's close,
    // not a timeout, 1.1 to 1.5 s after it started.
    assert!(
        took < Duration::from_millis(500 + 400),
        "the caller returned {took:?} after it started, for a 500 ms timeout"
    );
    // And the connection recovers: the server reads again, the client carries on.
    assert!(
        wait_until(Duration::from_secs(10), || db.set("after", "y").is_ok()),
        "the client never recovered"
    );
    client.close();
}

/// A relaxed timeout bounds the whole call, not what is left of it after waiting for
/// a reconnect. `Node::request` used to pass what was left of the caller's
/// (unrelaxed) timeout to `Connection::request`, which relaxed it again from the
/// moment of the send (`timeouts.effective(left)` is at least the relaxed timeout), so
/// a call that waited in the backlog could take that wait plus the whole relaxed
/// timeout (a group did the same after its own backlog wait). Measured: 3.2 s for a
/// call whose timeout, relaxed, is 2 s. A call's deadline is now fixed when it starts
/// and handed down whole (`connection::Deadline`).
#[test]
fn a_relaxed_timeout_bounds_the_whole_call_after_a_backlog_wait() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = RedisServer::start_with(&["--enable-debug-command", "yes"]) else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let client = Client::connect(opt_in(format!(
        "127.0.0.1:{},syncTimeout=500,connectTimeout=500,reconnectMin=20,reconnectMax=50,\
         maintNotifications=auto,maintRelaxedTimeout=2,maintRelaxedWindowMax=30",
        proxy.port
    )))
    .expect("client");
    let db = client.database();
    db.set("before", "x").expect("a first SET");
    // Maintenance announced: timeouts relaxed to 2 s for up to 30 s.
    proxy.inject(b">4\r\n+MIGRATING\r\n:1\r\n:30\r\n+1\r\n");
    assert!(
        wait_until(Duration::from_secs(5), || client
            .maintenance_status()
            .iter()
            .any(|s| s.in_force != resilient_redis::MaintenanceKind::None)),
        "the client never relaxed its timeouts"
    );
    // The server goes away for 1.2 s (the window covers the wait for the reconnect).
    proxy.refuse(true);
    proxy.close_all();
    assert!(wait_until(Duration::from_secs(5), || !client.is_connected()));
    let started = Instant::now();
    // Waits in the backlog for the reconnect, then for a reply that takes 5 s.
    let caller = thread::spawn(move || {
        let out = db.cmd("DEBUG").arg("SLEEP").arg(5).exec();
        (out, started.elapsed())
    });
    thread::sleep(Duration::from_millis(1200));
    proxy.refuse(false);
    let (out, took) = caller.join().unwrap();
    assert!(out.is_err(), "DEBUG SLEEP 5 cannot answer within 2 s");
    assert!(
        took < Duration::from_millis(2000 + 250),
        "a call whose relaxed timeout is 2 s took {took:?}"
    );
    client.close();
}

/// The same through a group, which holds the backlog itself (member clients fail
/// fast) and used to hand the member what was left of the call after its wait, which
/// the member then relaxed again: a call that waited 1 s for the member to come back
/// could take that second plus the whole relaxed timeout. Now the member is given the
/// call's start.
#[test]
fn a_relaxed_timeout_bounds_the_whole_call_after_a_group_backlog_wait() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = RedisServer::start_with(&["--enable-debug-command", "yes"]) else {
        return;
    };
    let proxy = Proxy::start(server.port);
    // The group's backlog waits up to `syncTimeout` (2 s, unrelaxed); the call, relaxed,
    // has 3 s in all.
    let member = Member::new(opt_in(format!(
        "127.0.0.1:{},syncTimeout=2000,connectTimeout=500,reconnectMin=20,reconnectMax=50,\
         maintNotifications=auto,maintRelaxedTimeout=3,maintRelaxedWindowMax=30",
        proxy.port
    )))
    .with_name("m0");
    let group = Group::connect(vec![member], GroupOptions::default()).expect("group");
    let db = group.database();
    db.set("before", "x").expect("a first SET");
    proxy.inject(b">4\r\n+MIGRATING\r\n:1\r\n:30\r\n+1\r\n");
    let m0 = group.members().into_iter().next().expect("a member");
    let client = m0.client().expect("the member's client").clone();
    assert!(
        wait_until(Duration::from_secs(5), || client
            .maintenance_status()
            .iter()
            .any(|s| s.in_force != resilient_redis::MaintenanceKind::None)),
        "the member never relaxed its timeouts"
    );
    proxy.refuse(true);
    proxy.close_all();
    assert!(wait_until(Duration::from_secs(5), || !m0.is_connected()));
    let started = Instant::now();
    // Waits in the group's backlog for the member to come back, then for a reply that
    // takes 5 s.
    let caller = thread::spawn(move || {
        let out = db.cmd("DEBUG").arg("SLEEP").arg(5).exec();
        (out, started.elapsed())
    });
    thread::sleep(Duration::from_millis(1000));
    proxy.refuse(false);
    let (out, took) = caller.join().unwrap();
    assert!(
        matches!(&out, Err(e) if e.kind() == ErrorKind::Timeout),
        "expected the member's timeout, got {out:?} after {took:?}"
    );
    // Sent to the member, not given up in the backlog: it waited for the reply.
    assert!(
        took >= Duration::from_millis(2500),
        "the call ended after {took:?}, before its relaxed timeout: {out:?}"
    );
    assert!(
        took < Duration::from_millis(3000 + 250),
        "a call whose relaxed timeout is 3 s took {took:?}"
    );
    group.close();
}

/// A server at `maxclients` answers a new connection with its reason and closes it:
/// the handshake's error keeps the reason (it used to say only that the server
/// closed the connection, so the soak could not tell a refusal from a crash).
#[test]
fn a_connection_refused_at_maxclients_says_so() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    proxy.refuse(true);
    let Err(err) = Client::connect(opt_in(format!(
        "127.0.0.1:{},connectTimeout=500,maintNotifications=auto",
        proxy.port
    ))) else {
        panic!("connected through a refusing server");
    };
    assert!(
        err.to_string().contains("max number of clients reached"),
        "{err}"
    );
}

/// A member whose connections all went half-open is found hung by its interactive
/// connection, which is replaced. Its subscription connection, which carries no calls,
/// used to stay half-open until its heartbeat failed (`keepAlive`, 10 s by default, of
/// silence, plus the heartbeat's timeout): when traffic failed back to the member,
/// what was published there meanwhile reached no subscriber. Seen in the soak as a
/// subscription silent for 5.8 s while its publishes succeeded. A server found hung
/// now has its subscription connection replaced too (`Node::found_hung`).
#[test]
fn a_subscription_on_a_half_open_member_is_recovered_before_traffic_fails_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (Some(s0), Some(s1)) = (RedisServer::start(), RedisServer::start()) else {
        return;
    };
    let proxies = [Proxy::start(s0.port), Proxy::start(s1.port)];
    let member = |i: usize, weight: u32| {
        Member::new(opt_in(format!(
            "127.0.0.1:{},syncTimeout=500,connectTimeout=500,reconnectMin=20,reconnectMax=100",
            proxies[i].port
        )))
        .with_name(format!("m{i}"))
        .with_weight(weight)
    };
    let checks = HealthCheck::default()
        .interval(Duration::from_millis(200))
        .probe_count(1)
        .probe_timeout(Duration::from_millis(300));
    let group = Group::connect(
        vec![member(0, 20), member(1, 10)],
        GroupOptions::default()
            .health_check(checks)
            .failback_delay(Duration::from_millis(500)),
    )
    .expect("group");
    let active = |name: &str| group.active().is_some_and(|m| m.name() == name);
    assert!(wait_until(Duration::from_secs(10), || active("m0")));
    let subscriber = group.subscriber();
    let subscription = subscriber.subscribe("news").expect("subscribe");
    // Delivered before the fault.
    assert!(
        wait_until(Duration::from_secs(10), || {
            let _ = subscriber.publish("news", "before");
            subscription.try_recv().is_some()
        }),
        "no delivery before the fault"
    );
    let db = group.database();
    proxies[0].half_open();
    // Traffic finds m0 hung and moves to m1, then comes back once m0 passes its checks
    // on a fresh interactive connection.
    assert!(
        wait_until(Duration::from_secs(10), || {
            let _ = db.echo::<String>("x");
            active("m1")
        }),
        "the group never left the half-open member"
    );
    assert!(
        wait_until(Duration::from_secs(15), || active("m0")),
        "the group never came back to m0"
    );
    while subscription.try_recv().is_some() {}
    // Published on m0 now: must reach the subscriber within a few seconds, not after
    // the subscription connection's heartbeat gives up on it.
    let started = Instant::now();
    let delivered = wait_until(Duration::from_secs(3), || {
        let _ = subscriber.publish("news", "after");
        subscription.try_recv().is_some()
    });
    assert!(
        delivered,
        "nothing delivered {:?} after the failback to m0",
        started.elapsed()
    );
    group.close();
}

/// The same outside a group: a server found hung by the calls on a client's
/// interactive connection has its subscription connection replaced with it, and the
/// fresh one carries every subscription again (plain, pattern and sharded), long
/// before the old one's heartbeat would give up on it (10 s of silence, by default).
#[test]
fn a_subscription_on_a_half_open_server_is_replaced_with_its_hung_interactive_connection() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = Instant::now();
    let log = LogRing::install(t0);
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let client = Client::connect(opt_in(format!(
        "127.0.0.1:{},syncTimeout=500,connectTimeout=500,reconnectMin=20,reconnectMax=100",
        proxy.port
    )))
    .expect("client");
    let subscriber = client.subscriber();
    let subscriptions = [
        subscriber.subscribe("news").expect("subscribe"),
        subscriber.psubscribe("alerts:*").expect("psubscribe"),
        subscriber.ssubscribe("orders").expect("ssubscribe"),
    ];
    // Publishes to each until each subscription has had a message; which had one.
    let deliver_all = |within: Duration| {
        let mut got = [false; 3];
        wait_until(within, || {
            let publish = [
                subscriber.publish("news", "m"),
                subscriber.publish("alerts:1", "m"),
                subscriber.spublish("orders", "m"),
            ];
            for ((got, sub), _) in got.iter_mut().zip(&subscriptions).zip(publish) {
                while sub.try_recv().is_some() {
                    *got = true;
                }
            }
            got.iter().all(|g| *g)
        });
        got
    };
    let got = deliver_all(Duration::from_secs(10));
    assert_eq!(got, [true; 3], "no delivery before the fault");
    proxy.half_open();
    let started = Instant::now();
    // A call finds the server hung; the client sets the connection aside at its
    // timeout plus 500 ms of grace, and replaces the subscription connection with it.
    let out = client.database().echo::<String>("x");
    assert!(out.is_err(), "a half-open connection answered: {out:?}");
    for sub in &subscriptions {
        while sub.try_recv().is_some() {}
    }
    let got = deliver_all(Duration::from_secs(5));
    let from = log.offset_ms(t0);
    assert_eq!(
        got,
        [true; 3],
        "a subscription (plain, pattern, sharded) stayed silent {:?} after the server \
         was found hung; the client logged:\n{}",
        started.elapsed(),
        log.between(from, u32::MAX, 60).join("\n")
    );
    client.close();
}
