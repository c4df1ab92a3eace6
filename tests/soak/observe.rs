//! What the soak watches besides the calls themselves: how much CPU the machine
//! denied this process ([`Stalls`]), and what the client logged ([`LogRing`]), so a
//! late call can be told apart: a caller the client kept waiting, or a process the
//! scheduler did not run.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A sleep of 1 ms that overslept by more than this is a stall.
const STALL_OVER: Duration = Duration::from_millis(5);

/// Scheduling stalls measured by a thread that sleeps 1 ms in a loop: each time it
/// wakes more than `STALL_OVER` late, the time it should have been running and was not
/// is a stall (ms since the soak's start). Calls that overlap stalls were delayed by
/// the machine, not (necessarily) by the client; the soak widens their slack by the
/// overlap, and counts them apart.
pub struct Stalls {
    t0: Instant,
    /// `[from, to]` in ms since `t0`, in time order (one writer). Each span is at least
    /// `STALL_OVER` long, so a run holds at most one per 6 ms.
    spans: Mutex<Vec<(u32, u32)>>,
    pub count: AtomicU64,
    pub total_us: AtomicU64,
    pub worst_us: AtomicU64,
    /// When the worst one ended, ms since the start.
    pub worst_at: AtomicU64,
}

fn ms(t0: Instant, at: Instant) -> u32 {
    u32::try_from(at.saturating_duration_since(t0).as_millis()).unwrap_or(u32::MAX)
}

impl Stalls {
    /// Starts the probe thread; it ends when `stop` is set.
    pub fn start(t0: Instant, stop: Arc<AtomicBool>) -> (Arc<Stalls>, thread::JoinHandle<()>) {
        let stalls = Arc::new(Stalls {
            t0,
            spans: Mutex::new(Vec::new()),
            count: AtomicU64::new(0),
            total_us: AtomicU64::new(0),
            worst_us: AtomicU64::new(0),
            worst_at: AtomicU64::new(0),
        });
        let s = stalls.clone();
        let probe = thread::Builder::new()
            .name("soak-stall-probe".into())
            .spawn(move || {
                crate::alloc::soak_thread();
                let tick = Duration::from_millis(1);
                while !stop.load(Ordering::Relaxed) {
                    let before = Instant::now();
                    thread::sleep(tick);
                    let woke = Instant::now();
                    let over = woke.duration_since(before).saturating_sub(tick);
                    if over > STALL_OVER {
                        s.record(before + tick, woke, over);
                    }
                }
            })
            .expect("stall probe thread");
        (stalls, probe)
    }

    fn record(&self, from: Instant, to: Instant, over: Duration) {
        let us = u64::try_from(over.as_micros()).unwrap_or(u64::MAX);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
        if us > self.worst_us.fetch_max(us, Ordering::Relaxed) {
            self.worst_at
                .store(u64::from(ms(self.t0, to)), Ordering::Relaxed);
        }
        self.spans
            .lock()
            .unwrap()
            .push((ms(self.t0, from), ms(self.t0, to)));
    }

    /// Milliseconds of measured stall within `[from, to]` (ms since the start), counting
    /// only the stalls `keep` accepts (given a stall's `(start, end)`).
    pub fn overlap_ms(&self, from: u32, to: u32, keep: impl Fn(u32, u32) -> bool) -> u32 {
        let spans = self.spans.lock().unwrap();
        let first = spans.partition_point(|&(_, end)| end < from);
        spans[first..]
            .iter()
            .take_while(|&&(start, _)| start <= to)
            .filter(|&&(start, end)| keep(start, end))
            .map(|&(start, end)| end.min(to).saturating_sub(start.max(from)))
            .sum()
    }

    /// Milliseconds of stall in each of `buckets` equal slices of `[0, until]`.
    pub fn profile(&self, until: u32, buckets: u32) -> Vec<u32> {
        let width = (until / buckets).max(1);
        (0..buckets)
            .map(|b| self.overlap_ms(b * width, (b + 1) * width, |_, _| true))
            .collect()
    }
}

/// The client's log lines (info and above), kept with their time for the summary of a
/// late call: what the client was doing meanwhile (a connection set aside, a member
/// flagged, the active member changing). Bounded: the newest `KEEP`.
pub struct LogRing {
    t0: Instant,
    lines: Mutex<VecDeque<(u32, String)>>,
    pub warnings: AtomicU64,
}

const KEEP: usize = 20_000;

impl LogRing {
    /// Installs the ring as the process's logger (once per process; later calls get
    /// the ring installed first).
    pub fn install(t0: Instant) -> &'static LogRing {
        static RING: std::sync::OnceLock<&'static LogRing> = std::sync::OnceLock::new();
        RING.get_or_init(|| {
            let ring: &'static LogRing = Box::leak(Box::new(LogRing {
                t0,
                lines: Mutex::new(VecDeque::with_capacity(1024)),
                warnings: AtomicU64::new(0),
            }));
            if log::set_logger(ring).is_ok() {
                log::set_max_level(log::LevelFilter::Info);
            }
            ring
        })
    }

    /// Lines logged within `[from, to]` ms since the ring's start, oldest first.
    pub fn between(&self, from: u32, to: u32, max: usize) -> Vec<String> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, _)| *at >= from && *at <= to)
            .take(max)
            .map(|(at, line)| format!("{at:>7} ms {line}"))
            .collect()
    }

    /// Where a test's clock starting at `t0` is on the ring's (which may have started
    /// earlier, for an earlier test).
    pub fn offset_ms(&self, t0: Instant) -> u32 {
        ms(self.t0, t0)
    }
}

impl log::Log for LogRing {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info && m.target().starts_with("resilient_redis")
    }

    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        if r.level() <= log::Level::Warn {
            self.warnings.fetch_add(1, Ordering::Relaxed);
        }
        let line = format!(
            "[{}] {}: {}",
            thread::current().name().unwrap_or("?"),
            r.level(),
            r.args()
        );
        let mut lines = self.lines.lock().unwrap();
        if lines.len() == KEEP {
            lines.pop_front();
        }
        lines.push_back((ms(self.t0, Instant::now()), line));
    }

    fn flush(&self) {}
}
