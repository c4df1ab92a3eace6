//! When a caller takes a lane instead of the shared connection: a socket-free rule and
//! a trial that learns which of the two serves a second caller faster, tested as
//! tables.
//!
//! With two callers on one connection, at most two requests are in flight per round
//! trip and each caller waits for the other's reply to be read first; on a connection
//! of its own each reads its own reply, as a connection per thread would (measured at
//! 2 threads: 1.04× redis-rs against 0.72× on one connection). With more callers than
//! lanes, the shared connection's cohorts batch them (one write and one read for
//! several calls), and taking a lane would split a cohort into round trips of one
//! (measured at 4 threads: 0.94× against 1.39×). See `docs/performance.md`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Whether a caller's request goes on a lane: the shared connection already carries
/// `shared_callers` callers' requests, `others_waiting` callers of the process wait
/// for a reply on any connection, and the node has `lanes` lanes.
pub(crate) fn takes_a_lane(shared_callers: usize, others_waiting: usize, lanes: usize) -> bool {
    // Alone on the shared connection: it reads its own reply there.
    shared_callers > 0
        // Every caller can be alone on a connection (the shared one plus the lanes).
        && others_waiting <= lanes
}

/// Where a caller the rule allows a lane is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Regime {
    /// A lane of its own: each caller reads its own reply, blocking.
    Lane,
    /// The shared connection, with the caller already there: one write and one read
    /// for both, one of them reading for the other.
    Shared,
}

/// Learns, per server, which regime serves callers faster while the lane rule can
/// apply (every caller could be alone on a connection), by timing their calls under
/// each in turn.
///
/// Which wins depends on the machine and the network, not on the code: where waking
/// an idle core is cheap, or the server is a network round trip away, two callers
/// each blocking on a connection of their own match a connection per thread and beat
/// one waiting on the other (1.04× redis-rs against 0.72× on one connection, measured
/// when lanes came in), and a spinning partner would burn a core for a whole round
/// trip; where waking is dear (a VM whose idle vCPU takes tens of microseconds to
/// wake) and the server is near, the pair on one connection, one spinning while the
/// other reads, does nearly twice the calls of two blocking callers (1.71–1.79×
/// redis-rs against 0.97×, interleaved, on the machine of the stop that wrote this).
///
/// Every caller call made while the rule can apply is timed under the regime in
/// force, not only those the rule sent to a lane: with two callers, one is always
/// alone on the shared connection, and in a pair it holds its frame for the other,
/// so the regime's throughput is in the mean of both. Each turn lasts some 150 ms
/// and the winner serves the next 200,000 such calls, so the turn in the slower
/// regime costs a few per cent at most.
#[derive(Debug)]
pub(crate) struct LaneTrial {
    /// `SETTLED_*` with the allowed calls left, or the regime being timed.
    state: AtomicU32,
    turn: Mutex<Turn>,
}

/// The turn being timed (or armed for the next one while settled).
#[derive(Debug)]
struct Turn {
    regime: Regime,
    /// When its first call was reported.
    began: Option<Instant>,
    /// Calls timed (after the warm-up) and their total, in nanoseconds.
    calls: u64,
    total: u64,
    /// The lane's mean, in the shared connection's turn.
    lane: Option<u64>,
}

impl Turn {
    fn new(regime: Regime, lane: Option<u64>) -> Turn {
        Turn {
            regime,
            began: None,
            calls: 0,
            total: 0,
            lane,
        }
    }
}

/// `state`: timing the lane, timing the shared connection, or settled on one of them
/// (the high bits count the allowed calls left).
const TIMING_LANE: u32 = 0;
const TIMING_SHARED: u32 = 1;
const SETTLED_LANE: u32 = 2;
const SETTLED_SHARED: u32 = 3;
const KIND: u32 = 0b11;

impl LaneTrial {
    /// How long each regime's turn runs before its calls are timed. Long, because
    /// what is measured has a memory: a VM's idle vCPUs poll before they halt for as
    /// long as recent wake-ups made that pay, so two blocking callers right after a
    /// spell of the pair wake fast (32–46 µs a call, timed over 1,500 calls) and
    /// slow down only later (70 µs, steady).
    const WARM_FOR: Duration = Duration::from_millis(60);
    /// How long each regime's calls are timed (at least `MIN_CALLS` of them).
    const TIME_FOR: Duration = Duration::from_millis(90);
    const MIN_CALLS: u64 = 64;
    /// Allowed calls sent to the winner before both are timed again (a machine's
    /// load changes): seconds at the rates where the choice matters, so the turn in
    /// the slower regime costs a few per cent at most.
    const SETTLED: u32 = 200_000;
    /// How much faster the shared connection must be to win: its reader's partner
    /// spins, which costs CPU a blocking caller does not spend.
    const SHARED_MARGIN_PERCENT: u64 = 10;

    pub(crate) fn new() -> LaneTrial {
        LaneTrial {
            state: AtomicU32::new(TIMING_LANE),
            turn: Mutex::new(Turn::new(Regime::Lane, None)),
        }
    }

    /// The regime being timed, if any (calls are then timed and reported).
    pub(crate) fn timing(&self) -> Option<Regime> {
        match self.state.load(Ordering::Acquire) & KIND {
            TIMING_LANE => Some(Regime::Lane),
            TIMING_SHARED => Some(Regime::Shared),
            _ => None,
        }
    }

    /// Where to send a call the rule allows a lane.
    pub(crate) fn choose(&self) -> Regime {
        // Settled: count the call; the last one starts the next trial (its first
        // turn was armed when the trial settled).
        let counted = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| match s & KIND {
                TIMING_LANE | TIMING_SHARED => None,
                _ if s >> 2 <= 1 => Some(TIMING_LANE),
                _ => Some(s - (1 << 2)),
            });
        match counted.unwrap_or_else(|s| s) & KIND {
            TIMING_LANE | SETTLED_LANE => Regime::Lane,
            _ => Regime::Shared,
        }
    }

    /// A call made while `regime` was being timed was answered after `took`, at
    /// `now` (ignored when the turn has changed since, or when another caller is
    /// reporting at this moment).
    pub(crate) fn record(&self, regime: Regime, took: Duration, now: Instant) {
        let Some(mut turn) = self.turn.try_lock() else {
            return;
        };
        if self.timing() != Some(regime) || turn.regime != regime {
            return;
        }
        let age = now.saturating_duration_since(*turn.began.get_or_insert(now));
        if age < Self::WARM_FOR {
            return;
        }
        turn.calls += 1;
        turn.total = turn
            .total
            .saturating_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        if age < Self::WARM_FOR + Self::TIME_FOR || turn.calls < Self::MIN_CALLS {
            return;
        }
        let mean = turn.total / turn.calls;
        match (regime, turn.lane) {
            (Regime::Lane, _) => {
                *turn = Turn::new(Regime::Shared, Some(mean));
                self.state.store(TIMING_SHARED, Ordering::Release);
            }
            (Regime::Shared, lane) => {
                let shared_wins = lane.is_some_and(|lane| {
                    mean.saturating_mul(100 + Self::SHARED_MARGIN_PERCENT)
                        < lane.saturating_mul(100)
                });
                *turn = Turn::new(Regime::Lane, None);
                let kind = if shared_wins {
                    SETTLED_SHARED
                } else {
                    SETTLED_LANE
                };
                self.state
                    .store(kind | (Self::SETTLED << 2), Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{takes_a_lane, LaneTrial, Regime};
    use std::time::{Duration, Instant};

    #[test]
    fn a_lane_is_taken_only_while_every_caller_can_be_alone_on_a_connection() {
        // (callers on the shared connection, callers waiting in the process, lanes,
        // takes a lane)
        let table = [
            (0, 0, 1, false), // alone: the shared connection is its own
            (0, 1, 1, false), // the other one waits on another node
            (1, 1, 1, true),  // the second caller: a lane each
            (1, 2, 1, false), // a third: the shared connection batches them
            (3, 3, 1, false),
            (2, 3, 3, true), // lanes=3: up to four callers, each alone
            (3, 4, 3, false),
            (1, 1, 0, false), // lanes off
        ];
        for (shared, others, lanes, expected) in table {
            assert_eq!(
                takes_a_lane(shared, others, lanes),
                expected,
                "shared {shared}, others {others}, lanes {lanes}"
            );
        }
    }

    /// A clock the calls move: each takes what `took` says for its regime.
    struct Sim {
        trial: LaneTrial,
        now: Instant,
    }

    impl Sim {
        fn new() -> Sim {
            Sim {
                trial: LaneTrial::new(),
                now: Instant::now(),
            }
        }

        /// Calls one after another for `span` of the simulated clock; returns the
        /// regimes chosen.
        fn run(&mut self, span: Duration, took: impl Fn(Regime) -> Duration) -> Vec<Regime> {
            let until = self.now + span;
            let mut chosen = Vec::new();
            while self.now < until {
                let r = self.trial.choose();
                let timed = self.trial.timing();
                self.now += took(r);
                if let Some(timed) = timed {
                    self.trial.record(timed, took(r), self.now);
                }
                chosen.push(r);
            }
            chosen
        }
    }

    impl Sim {
        /// Calls until the turn being timed ends.
        fn run_turn(&mut self, took: impl Fn(Regime) -> Duration) -> Vec<Regime> {
            let timing = self.trial.timing();
            let mut chosen = Vec::new();
            while self.trial.timing() == timing && chosen.len() < 1_000_000 {
                chosen.extend(self.run(Duration::from_nanos(1), &took));
            }
            chosen
        }
    }

    fn turn() -> Duration {
        LaneTrial::WARM_FOR + LaneTrial::TIME_FOR
    }

    fn micros(lane: u64, shared: u64) -> impl Fn(Regime) -> Duration {
        move |r| Duration::from_micros(if r == Regime::Lane { lane } else { shared })
    }

    #[test]
    fn both_regimes_are_timed_then_the_faster_serves_until_the_next_trial() {
        // (lane µs, shared µs, winner): the shared connection must be 10 % faster.
        let table = [
            (60, 32, Regime::Shared),
            (41, 44, Regime::Lane),
            (50, 46, Regime::Lane), // 8 % faster: not enough
            (50, 45, Regime::Shared),
        ];
        for (lane, shared, winner) in table {
            let mut sim = Sim::new();
            let took = micros(lane, shared);
            let first = sim.run_turn(&took);
            assert!(first.iter().all(|r| *r == Regime::Lane));
            assert_eq!(sim.trial.timing(), Some(Regime::Shared));
            let second = sim.run_turn(&took);
            assert!(second.iter().all(|r| *r == Regime::Shared));
            assert_eq!(sim.trial.timing(), None, "settled");
            let settled: Vec<Regime> = (0..LaneTrial::SETTLED)
                .map(|_| sim.trial.choose())
                .collect();
            assert!(
                settled.iter().all(|r| *r == winner),
                "lane {lane} µs, shared {shared} µs"
            );
            // Then both are timed again, the lane first.
            assert_eq!(sim.trial.timing(), Some(Regime::Lane));
            assert_eq!(sim.trial.choose(), Regime::Lane);
        }
    }

    #[test]
    fn calls_in_a_turn_s_warm_up_or_under_the_other_regime_do_not_count() {
        let mut sim = Sim::new();
        // Lane turn: the warm-up's calls are slow (the lane opening), and calls
        // begun under the shared connection report late; neither counts.
        let slow = Duration::from_millis(5);
        let start = sim.now;
        sim.trial
            .record(Regime::Lane, Duration::from_micros(50), start);
        sim.trial
            .record(Regime::Lane, slow, start + LaneTrial::WARM_FOR / 2);
        sim.now = start + LaneTrial::WARM_FOR;
        for _ in 0..10 {
            sim.trial
                .record(Regime::Shared, Duration::from_secs(1), sim.now);
        }
        sim.run(LaneTrial::TIME_FOR, micros(50, 50));
        assert_eq!(sim.trial.timing(), Some(Regime::Shared));
        sim.run_turn(micros(50, 20));
        assert_eq!(sim.trial.choose(), Regime::Shared);
    }

    #[test]
    fn a_turn_times_at_least_its_minimum_of_calls_on_a_slow_server() {
        let mut sim = Sim::new();
        // 10 ms a call: the turn's time is up long before it has timed enough.
        sim.run(turn() * 3, micros(10_000, 10_000));
        assert_eq!(sim.trial.timing(), Some(Regime::Lane));
        sim.run(
            Duration::from_millis(10) * LaneTrial::MIN_CALLS as u32,
            micros(10_000, 10_000),
        );
        assert_eq!(sim.trial.timing(), Some(Regime::Shared));
    }
}
