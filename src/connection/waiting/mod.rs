//! How every thread of a connection waits: one policy ([`policy`]), fed by what the
//! connection measures ([`ReplyFloor`], the callers in flight), carried out by one
//! [`Waiter`], the way crossbeam's `Backoff` serves every channel flavor.
//!
//! A wait loop looks at its condition, asks its `Waiter` what to do next, and either
//! lets it spin or yield once (then looks again) or parks in its own way: a caller on
//! the wake board, the token's holder in a blocking `recv`, a read about to enter
//! `recv` or a caller holding its frame simply by going on.
//!
//! Owns: the decision and the spinning and yielding. Must never: sleep or block
//! (parking belongs to the loop that knows what wakes it).

pub(crate) mod policy;
mod reply_floor;

use std::time::{Duration, Instant};

pub(crate) use policy::{Plan, Wait};
pub(crate) use reply_floor::{ReplyFloor, TurnTime, WriteTimes};

/// What a waiter reads from its connection at each look, and tells it.
pub(crate) trait Gauges {
    /// The connection's reply floor.
    fn floor(&self) -> Duration;
    /// Caller requests in flight.
    fn in_flight(&self) -> usize;
    /// How long a yield lasts on the connection now.
    fn turn(&self) -> Duration;
    /// A yield on the connection lasted `took`.
    fn record_turn(&self, took: Duration);
}

/// One wait in progress.
pub(crate) struct Waiter {
    wait: Wait,
    started: Instant,
    turns: u32,
}

/// Spins per [`Plan::Spin`]: a few hundred nanoseconds, then the waiter looks again.
const SPINS: u32 = 16;

impl Waiter {
    /// A wait for `wait` that starts now.
    pub(crate) fn new(wait: Wait) -> Waiter {
        Waiter {
            wait,
            started: Instant::now(),
            turns: 0,
        }
    }

    /// What to do next, as the policy sees the connection now.
    pub(crate) fn next(&self, gauges: &impl Gauges) -> Plan {
        policy::plan(
            self.wait,
            policy::Moment {
                floor: gauges.floor(),
                in_flight: gauges.in_flight(),
                waited: self.started.elapsed(),
                turns: self.turns,
                turn: gauges.turn(),
            },
        )
    }

    /// Carries out a spin or a yield (a `Park` is the loop's own to do); a yield is
    /// timed for the connection's turn time.
    pub(crate) fn snooze(&mut self, plan: Plan, gauges: &impl Gauges) {
        match plan {
            Plan::Spin => {
                for _ in 0..SPINS {
                    std::hint::spin_loop();
                }
            }
            Plan::Yield => {
                self.turns = self.turns.saturating_add(1);
                timed_yield(gauges);
            }
            Plan::Park => {}
        }
    }
}

/// Yields the core once, timing how long until this thread ran again.
pub(crate) fn timed_yield(gauges: &impl Gauges) {
    let before = Instant::now();
    std::thread::yield_now();
    gauges.record_turn(before.elapsed());
}
