//! The waiting policy: given what the connection knows, whether a thread that waits
//! spins, yields or parks. A pure function, tested as a table; every constant that
//! shapes a wait in the connection is here, with the reason for its value.
//!
//! The model. A parked thread costs a `futex` wait, a wake-up by whoever completes
//! it, and two context switches; where the idle core has halted (a VM's vCPU), the
//! wake-up also waits tens of microseconds for the core. A thread that yields costs a
//! `sched_yield` per look, and hands its core to another runnable thread (the server,
//! the caller answered before it, the reader); when nothing else wants the core, the
//! yield returns at once and the wait is burnt CPU. So:
//!
//! - **A server far away** (the connection's reply floor above [`NEAR`]): every wait
//!   parks at once. The reply is a network round trip away; no yield can shorten it,
//!   and each one burns what the caller would save. Readers block in `recv`. Unless
//!   the yields are long: when each one hands the core to other work for a while (64
//!   callers on 2 cores, where the floor itself is long because the reader waits for
//!   a core too), a few of them cover the wait for less than a park and a wake-up
//!   cost ([`YIELDS_PER_PARK`]), and the wait takes turns as for a near server.
//! - **A server near** (loopback, the same host): a reply is expected within about a
//!   park and a wake-up, so waiting actively pays. With few callers in flight a wait
//!   spins a moment, then yields for about two reply floors (what a reply that left
//!   with the others takes), then parks. With many in flight, each yield hands the
//!   core to another caller's work (their replies arrive while they run), so a wait
//!   takes turns: up to [`TURNS`] yields, then parks.
//! - Two waits always park, since nothing they wait for is near: a caller with a
//!   large frame waiting for the socket's current write to end (bounded by its call),
//!   and the stood-down reader thread waiting to be asked back, which looks by itself
//!   only every [`ReclaimTick`].
//! - Waits that are not for a reply are for another thread that is already running:
//!   a send that holds the socket, or callers answered together that are about to
//!   send. They yield for a bounded few microseconds at any distance: the threads they
//!   wait for are runnable, so each yield hands them the core. A cohort's frames sent
//!   in one write come back in one read, which is what lets callers far from their
//!   server share a write, a read and a wake-up.

use std::time::Duration;

/// The reply floor at or under which a server counts as near: a reply is then expected
/// sooner than a park and a wake-up of an idle core cost a waiter (tens of
/// microseconds on a VM). A loopback reply on a 2-core machine takes 20–50 µs to its
/// first byte; a server in the same zone 200 µs and more.
pub(crate) const NEAR: Duration = Duration::from_micros(80);

/// What one park and wake-up cost a waiter, in yields: a `futex` wait, two context
/// switches and, where the idle core halted, its wake-up; against a `sched_yield` and
/// a look at the socket.
pub(crate) const YIELDS_PER_PARK: u32 = 8;

/// Callers in flight up to which each is served from its own thread: it writes its
/// own frame, reads when handed the token, and waits by spinning then yielding.
/// Above it, the writer and reader threads batch for them, and waits take turns.
pub(crate) const FEW_IN_FLIGHT: usize = 16;

/// How long a wait for a near reply spins before it yields: a reply already on its
/// way lands within this without a system call.
const SPIN_FOR: Duration = Duration::from_micros(2);

/// The longest a waiter with few in flight yields before it parks, however slow the
/// floor says replies are (the floor is at most [`NEAR`], so this only caps it).
const YIELD_AT_MOST: Duration = Duration::from_micros(160);

/// The shortest: a floor measured on a quiet connection can be lower than what a
/// reply takes when its cohort shares the cores.
const YIELD_AT_LEAST: Duration = Duration::from_micros(40);

/// Yields a waiter among many makes before it parks. Each is a turn of the other
/// callers (their replies come while they run), so a wait needs one or two; the
/// count bounds what a wait burns when nobody else wants the core.
pub(crate) const TURNS: u32 = 32;

/// The longest a waiter among many takes turns before it parks.
const TURNS_FOR: Duration = Duration::from_millis(1);

/// How long a read waits for a send under way on its socket to return before it
/// enters `recv` anyway (where the kernel's socket lock would put it to sleep): a
/// cohort's write on loopback takes a few microseconds; one stuck on a full socket
/// must not hold replies up.
const SEND_RETURNS_WITHIN: Duration = Duration::from_micros(50);

/// How long a frame held for the callers answered with it waits for the last of them
/// to send it: they are runnable, and back within microseconds.
const COHORT_WITHIN: Duration = Duration::from_micros(30);

/// Callers in flight above which the writer thread yields once before it writes: the
/// callers just woken by their replies are about to queue their next frames, and one
/// yield lets them join this write. A lone caller never waits for it.
const LINGER_ABOVE: usize = 4;

/// How long the stood-down thread waits before it looks whether callers still use
/// the token: short at first, so a connection left idle gets its reader back (pushes,
/// the close) within milliseconds; twice as long after every tick the callers used,
/// up to [`ReclaimTick::LONGEST`], so a connection in steady use wakes its thread a
/// few times a second, not hundreds: each such wake-up costs what a call costs.
#[derive(Debug)]
pub(crate) struct ReclaimTick(Duration);

impl ReclaimTick {
    /// The first tick after the thread stands down.
    pub(crate) const FIRST: Duration = Duration::from_millis(2);
    /// The longest: the thread takes an idle connection back at most about twice
    /// this after its last caller (`look_before_sending` covers a close meanwhile).
    pub(crate) const LONGEST: Duration = Duration::from_millis(256);

    pub(crate) fn new() -> ReclaimTick {
        ReclaimTick(Self::FIRST)
    }

    /// The tick to wait now.
    pub(crate) fn current(&self) -> Duration {
        self.0
    }

    /// A tick ended with the token used by callers: wait longer next time.
    pub(crate) fn used(&mut self) {
        self.0 = (self.0 * 2).min(Self::LONGEST);
    }
}

/// What a thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// A caller, for its reply (it parks on the wake board).
    Reply,
    /// The read token's holder, for bytes on the socket (it blocks in `recv`).
    Bytes,
    /// A read, for a send under way on the same socket to return.
    SendReturns,
    /// A caller holding its frame, for the callers answered with it to send it.
    Cohort,
}

/// What the connection knows at the moment of a look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Moment {
    /// The connection's reply floor (see `ReplyFloor`).
    pub floor: Duration,
    /// Caller requests in flight on the connection.
    pub in_flight: usize,
    /// How long this wait has lasted.
    pub waited: Duration,
    /// Yields this wait has made.
    pub turns: u32,
    /// How long a yield lasts on the connection now (see `TurnTime`).
    pub turn: Duration,
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Spin a moment and look again.
    Spin,
    /// Yield the core once and look again.
    Yield,
    /// Stop waiting actively: park (for a reply), block (for bytes), or stop waiting
    /// (for a send or a cohort: the waiter goes on without it).
    Park,
}

/// Whether the server is near (see [`NEAR`]).
pub(crate) fn is_near(floor: Duration) -> bool {
    floor <= NEAR
}

/// Whether waiting for a reply actively pays: the reply is near, or yields are long
/// enough that a few of them cover its time (see the module documentation).
pub(crate) fn waits_actively(floor: Duration, turn: Duration) -> bool {
    is_near(floor) || turn * YIELDS_PER_PARK >= floor
}

/// Whether few enough callers are in flight that each serves itself (see
/// [`FEW_IN_FLIGHT`]).
pub(crate) fn is_few(in_flight: usize) -> bool {
    in_flight <= FEW_IN_FLIGHT
}

/// Whether a caller answered together with others holds its frame for them, so the
/// last of them sends every frame in one write: with few in flight (with more, the
/// writer thread batches), near or far (see the module documentation).
pub(crate) fn holds_for_cohort(in_flight: usize) -> bool {
    is_few(in_flight)
}

/// Whether the writer thread yields once before it writes (see [`LINGER_ABOVE`]).
pub(crate) fn writer_lingers(in_flight: usize) -> bool {
    in_flight > LINGER_ABOVE
}

/// The plan for the next look of a `wait` at `now`.
pub(crate) fn plan(wait: Wait, now: Moment) -> Plan {
    match wait {
        Wait::Reply | Wait::Bytes if !waits_actively(now.floor, now.turn) => Plan::Park,
        Wait::Reply | Wait::Bytes if is_few(now.in_flight) => {
            let window = (now.floor * 2).clamp(YIELD_AT_LEAST, YIELD_AT_MOST);
            // A spin only for a reply on its way: it burns what it waits.
            if now.waited < SPIN_FOR && is_near(now.floor) {
                Plan::Spin
            } else if now.waited < window {
                Plan::Yield
            } else {
                Plan::Park
            }
        }
        Wait::Reply | Wait::Bytes => {
            if now.turns < TURNS && now.waited < TURNS_FOR {
                Plan::Yield
            } else {
                Plan::Park
            }
        }
        Wait::SendReturns if now.waited < SEND_RETURNS_WITHIN => Plan::Yield,
        Wait::Cohort if now.waited < COHORT_WITHIN => Plan::Yield,
        Wait::SendReturns | Wait::Cohort => Plan::Park,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn a_wait_spins_yields_or_parks_by_distance_company_and_time() {
        use Plan::{Park, Spin, Yield};
        use Wait::{Bytes, Cohort, Reply, SendReturns};
        // (what, wait, floor µs, in flight, waited µs, turns, plan), with yields of
        // a microsecond (nobody else wants the core)
        let table = [
            ("near, alone: a reply on its way", Reply, 30, 1, 0, 0, Spin),
            ("near, alone: then yields", Reply, 30, 1, 5, 0, Yield),
            (
                "near: two floors, at least 40 µs",
                Reply,
                10,
                2,
                39,
                0,
                Yield,
            ),
            ("near: past the window", Reply, 10, 2, 41, 0, Park),
            ("near: two floors of 60 µs", Reply, 60, 4, 110, 0, Yield),
            ("near: past two floors of 60 µs", Reply, 60, 4, 121, 0, Park),
            ("near: the token's holder polls", Bytes, 30, 1, 20, 0, Yield),
            ("near: then blocks in recv", Bytes, 30, 1, 70, 0, Park),
            ("near, many: takes turns", Reply, 30, 64, 500, 10, Yield),
            ("near, many: after its turns", Reply, 30, 64, 100, 32, Park),
            (
                "near, many: after a millisecond",
                Reply,
                30,
                64,
                1_000,
                1,
                Park,
            ),
            ("far (250 µs): parks at once", Reply, 250, 1, 0, 0, Park),
            ("far: many in flight park too", Reply, 250, 64, 0, 0, Park),
            (
                "far: the token's holder blocks",
                Bytes,
                1_000,
                4,
                0,
                0,
                Park,
            ),
            ("at the line: near", Reply, 80, 1, 10, 0, Yield),
            ("just past it: far", Reply, 81, 1, 0, 0, Park),
            (
                "a send under way: yields",
                SendReturns,
                1_000,
                4,
                10,
                0,
                Yield,
            ),
            (
                "a send stuck: blocks anyway",
                SendReturns,
                30,
                4,
                50,
                0,
                Park,
            ),
            ("a near cohort: yields", Cohort, 30, 2, 10, 0, Yield),
            ("a cohort that does not come", Cohort, 30, 2, 30, 0, Park),
            ("a far cohort: yields too", Cohort, 250, 2, 10, 0, Yield),
        ];
        for (what, wait, floor, in_flight, waited, turns, expected) in table {
            let now = Moment {
                floor: us(floor),
                in_flight,
                waited: us(waited),
                turns,
                turn: us(1),
            };
            assert_eq!(plan(wait, now), expected, "{what}");
        }
    }

    #[test]
    fn long_yields_make_a_far_reply_worth_taking_turns_for() {
        use Plan::{Park, Yield};
        // (what, floor µs, turn µs, in flight, waited µs, turns, plan): 64 callers on
        // 2 cores, where the reader waits for a core too and the floor looks far.
        let table = [
            (
                "yields of 1 µs: a far reply is parked for",
                300,
                1,
                64,
                0,
                0,
                Park,
            ),
            ("yields of 40 µs: 8 cover 300 µs", 300, 40, 64, 0, 0, Yield),
            ("still taking turns", 300, 40, 64, 600, 10, Yield),
            ("after its turns", 300, 40, 64, 600, 32, Park),
            (
                "yields of 20 µs: not enough for 300 µs",
                300,
                20,
                64,
                0,
                0,
                Park,
            ),
            (
                "few in flight, long yields: within its window",
                300,
                40,
                4,
                100,
                3,
                Yield,
            ),
            (
                "few in flight, long yields: past its window",
                300,
                40,
                4,
                170,
                4,
                Park,
            ),
            (
                "a slow server, 1 ms, with yields of 1 µs",
                1_000,
                1,
                64,
                0,
                0,
                Park,
            ),
        ];
        for (what, floor, turn, in_flight, waited, turns, expected) in table {
            let now = Moment {
                floor: us(floor),
                in_flight,
                waited: us(waited),
                turns,
                turn: us(turn),
            };
            assert_eq!(plan(Wait::Reply, now), expected, "{what}");
        }
        // No spin for a far reply, however long the yields.
        let far = Moment {
            floor: us(300),
            in_flight: 2,
            waited: Duration::ZERO,
            turns: 0,
            turn: us(100),
        };
        assert_eq!(plan(Wait::Reply, far), Yield);
    }

    #[test]
    fn the_reclaim_tick_doubles_while_callers_use_the_token_up_to_the_longest() {
        let ms = Duration::from_millis;
        let mut tick = ReclaimTick::new();
        for expected in [2, 4, 8, 16, 32, 64, 128, 256, 256] {
            assert_eq!(tick.current(), ms(expected));
            tick.used();
        }
        assert_eq!(ReclaimTick::new().current(), ReclaimTick::FIRST);
    }

    #[test]
    fn callers_hold_frames_for_their_cohort_only_with_few_in_flight() {
        // (in flight, holds)
        let table = [(2, true), (16, true), (17, false), (64, false)];
        for (in_flight, holds) in table {
            assert_eq!(holds_for_cohort(in_flight), holds, "{in_flight} in flight");
        }
    }
}
