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

/// Learns, per server, which regime serves a caller the rule allows a lane faster, by
/// timing such calls in each in turn.
///
/// Which wins depends on the machine, not on the code: where waking an idle core is
/// cheap, two callers each blocking on a connection of their own match a connection
/// per thread and beat one waiting on the other (1.04× redis-rs against 0.72× on one
/// connection, measured when lanes came in); where it is dear (a VM whose idle vCPU
/// takes tens of microseconds to wake), the pair on one connection, one spinning while
/// the other reads, does twice the calls of two blocking callers (1.93× redis-rs
/// against 1.00×, at 1.15× against 1.02× its CPU per call, on the machine of this
/// stop). A fixed choice loses by half on one machine or the other; timing both
/// costs a few dozen calls in the slower one every few thousand.
#[derive(Debug)]
pub(crate) struct LaneTrial {
    phase: Phase,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Timing calls in `regime`; `lane_mean` is the lane's result once it has one.
    Timing {
        regime: Regime,
        warm: u32,
        total: u64,
        timed: u32,
        lane_mean: Option<u64>,
    },
    /// Sending every allowed call to `winner` for `left` more calls.
    Settled { winner: Regime, left: u32 },
}

impl LaneTrial {
    /// Calls at the start of each regime's turn that are not timed: the lane may
    /// still be opening and the pair settling into its rhythm.
    const WARM: u32 = 8;
    /// Calls timed in each regime.
    const TIMED: u32 = 32;
    /// Allowed calls sent to the winner before both are timed again (a machine's
    /// load changes).
    const SETTLED: u32 = 4096;
    /// How much faster the shared connection must be to win: its reader's partner
    /// spins, which costs CPU a blocking caller does not spend.
    const SHARED_MARGIN_PERCENT: u64 = 10;

    pub(crate) fn new() -> LaneTrial {
        LaneTrial {
            phase: Self::timing(Regime::Lane, None),
        }
    }

    fn timing(regime: Regime, lane_mean: Option<u64>) -> Phase {
        Phase::Timing {
            regime,
            warm: 0,
            total: 0,
            timed: 0,
            lane_mean,
        }
    }

    /// Where to send a call the rule allows a lane.
    pub(crate) fn choose(&mut self) -> Regime {
        match &mut self.phase {
            Phase::Timing { regime, .. } => *regime,
            Phase::Settled { winner, left } => {
                let winner = *winner;
                *left = left.saturating_sub(1);
                if *left == 0 {
                    self.phase = Self::timing(Regime::Lane, None);
                }
                winner
            }
        }
    }

    /// A call sent to `regime` was answered after `nanos`. Calls of the other regime
    /// than the one being timed (sent before the turn changed), and calls that fell
    /// back to the shared connection because no lane was idle, are not counted:
    /// report only calls that went where `choose` said.
    pub(crate) fn record(&mut self, regime: Regime, nanos: u64) {
        let Phase::Timing {
            regime: timing,
            warm,
            total,
            timed,
            lane_mean,
        } = &mut self.phase
        else {
            return;
        };
        if *timing != regime {
            return;
        }
        if *warm < Self::WARM {
            *warm += 1;
            return;
        }
        *total = total.saturating_add(nanos);
        *timed += 1;
        if *timed < Self::TIMED {
            return;
        }
        let mean = *total / u64::from(*timed);
        self.phase = match (regime, *lane_mean) {
            (Regime::Lane, _) => Self::timing(Regime::Shared, Some(mean)),
            (Regime::Shared, Some(lane)) => {
                let shared_wins = mean.saturating_mul(100 + Self::SHARED_MARGIN_PERCENT)
                    < lane.saturating_mul(100);
                Phase::Settled {
                    winner: if shared_wins {
                        Regime::Shared
                    } else {
                        Regime::Lane
                    },
                    left: Self::SETTLED,
                }
            }
            (Regime::Shared, None) => Self::timing(Regime::Lane, None),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::{takes_a_lane, LaneTrial, Regime};

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

    /// Feeds the trial `calls` calls, each answered after what `took` says for the
    /// regime it was sent to; returns the regimes chosen.
    fn run(trial: &mut LaneTrial, calls: u32, took: impl Fn(Regime) -> u64) -> Vec<Regime> {
        (0..calls)
            .map(|_| {
                let r = trial.choose();
                trial.record(r, took(r));
                r
            })
            .collect()
    }

    fn turn() -> u32 {
        LaneTrial::WARM + LaneTrial::TIMED
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
            let mut trial = LaneTrial::new();
            let took = |r| if r == Regime::Lane { lane } else { shared } * 1_000;
            let timing = run(&mut trial, 2 * turn(), took);
            assert!(timing[..turn() as usize].iter().all(|r| *r == Regime::Lane));
            assert!(timing[turn() as usize..]
                .iter()
                .all(|r| *r == Regime::Shared));
            let settled = run(&mut trial, LaneTrial::SETTLED, took);
            assert!(
                settled.iter().all(|r| *r == winner),
                "lane {lane} µs, shared {shared} µs"
            );
            // Then both are timed again.
            assert_eq!(run(&mut trial, 1, took), [Regime::Lane]);
        }
    }

    #[test]
    fn only_calls_that_went_where_the_trial_said_are_timed() {
        let mut trial = LaneTrial::new();
        // Lane turn: calls that fell back to the shared connection (no idle lane)
        // are reported as shared and ignored, however slow.
        for _ in 0..1_000 {
            assert_eq!(trial.choose(), Regime::Lane);
            trial.record(Regime::Shared, 1_000_000_000);
        }
        assert_eq!(trial.choose(), Regime::Lane, "still timing the lane");
        // The warm-up calls are not timed: slow ones there change nothing.
        for _ in 0..LaneTrial::WARM {
            trial.record(Regime::Lane, 1_000_000_000);
        }
        run(&mut trial, LaneTrial::TIMED, |_| 50_000);
        for _ in 0..LaneTrial::WARM {
            trial.record(Regime::Shared, 1_000_000_000);
        }
        run(&mut trial, LaneTrial::TIMED, |_| 20_000);
        assert_eq!(trial.choose(), Regime::Shared);
    }
}
