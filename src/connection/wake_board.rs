//! Waking every caller answered by one read with one system call (Linux).
//!
//! A read often completes dozens of replies at once. Woken one `unpark` at a time,
//! each woken caller took the reader's core on return from its `futex` call (two
//! context switches per call instead of one) and each wake was a system call of its
//! own. Here a waiting caller sleeps on the futex word of its request's group of 32
//! places in the FIFO, with its place's bit; whoever hands out a read's replies wakes
//! every place it answered in a group with one `FUTEX_WAKE_BITSET`: one system call
//! for the read, and the woken callers run after it, not each on its return.
//!
//! Elsewhere a slot's waiter parks its thread and is unparked one at a time (see
//! `ReplySlot`): this board is then never slept on, and waking it does nothing.

/// A request's place in its connection's FIFO (its number, wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place(pub(crate) u32);

/// Groups of 32 places: 256 requests in flight before two share a bit (a shared
/// bit only wakes the other waiter early; it looks and sleeps again).
const WORDS: usize = 8;

impl Place {
    fn word(self) -> usize {
        (self.0 as usize / 32) % WORDS
    }

    fn bit(self) -> u32 {
        1 << (self.0 % 32)
    }
}

/// The places to wake, collected while a read's replies are handed out.
#[derive(Default)]
pub(crate) struct Wakes {
    masks: [u32; WORDS],
}

impl Wakes {
    pub(crate) fn add(&mut self, place: Place) {
        self.masks[place.word()] |= place.bit();
    }
}

/// Whether callers sleep on a board here (otherwise they park their threads).
pub(crate) const SUPPORTED: bool = cfg!(target_os = "linux");

#[cfg(target_os = "linux")]
pub(crate) use linux::WakeBoard;

#[cfg(not(target_os = "linux"))]
pub(crate) use elsewhere::WakeBoard;

#[cfg(target_os = "linux")]
mod linux {
    use std::num::NonZeroU32;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Instant;

    use rustix::thread::futex;

    use super::{Place, Wakes, WORDS};

    #[derive(Default)]
    pub(super) struct Word {
        /// Bumped before every wake, so a waiter that took its ticket before a
        /// completion never sleeps through it (the kernel sees the word changed).
        seq: AtomicU32,
        /// Waiters asleep, or about to be, on this word: a wake with none skips
        /// the system call (most replies find their caller still spinning).
        pub(super) sleepers: AtomicU32,
    }

    /// One connection's futex words.
    #[derive(Default)]
    pub(crate) struct WakeBoard {
        pub(super) words: [Word; WORDS],
    }

    impl WakeBoard {
        /// Sleeps until `place` is woken, `until` passes, or a spurious wake-up,
        /// unless `ready()` holds when looked at after the ticket is taken (so a
        /// completion between the caller's last look and the sleep is never
        /// missed). The caller looks at its slot again either way.
        pub(crate) fn sleep(&self, place: Place, until: Instant, ready: impl Fn() -> bool) {
            let word = &self.words[place.word()];
            word.sleepers.fetch_add(1, Ordering::SeqCst);
            let ticket = word.seq.load(Ordering::SeqCst);
            if !ready() {
                let at = monotonic_at(until);
                let bit = NonZeroU32::new(place.bit()).unwrap_or(NonZeroU32::MIN);
                // Woken, timed out, interrupted, or the word moved on: all mean
                // "look again", which the caller does.
                let _ =
                    futex::wait_bitset(&word.seq, futex::Flags::PRIVATE, ticket, Some(&at), bit);
            }
            word.sleepers.fetch_sub(1, Ordering::SeqCst);
        }

        /// Wakes one place (a lone completion, or the read token handed over).
        pub(crate) fn wake_one(&self, place: Place) {
            let mut wakes = Wakes::default();
            wakes.add(place);
            self.wake(&mut wakes);
        }

        /// Wakes every place collected, one call per group with a sleeper, and
        /// clears them. Called after the slots are completed.
        pub(crate) fn wake(&self, wakes: &mut Wakes) {
            for (word, mask) in self.words.iter().zip(wakes.masks.iter_mut()) {
                let Some(bits) = NonZeroU32::new(std::mem::take(mask)) else {
                    continue;
                };
                word.seq.fetch_add(1, Ordering::SeqCst);
                if word.sleepers.load(Ordering::SeqCst) == 0 {
                    continue;
                }
                // Every waiter whose bit is set; they look at their slots.
                let _ = futex::wake_bitset(&word.seq, futex::Flags::PRIVATE, i32::MAX as u32, bits);
            }
        }
    }

    /// `until` on `CLOCK_MONOTONIC` (which `Instant` reads on Linux), the clock an
    /// absolute `FUTEX_WAIT_BITSET` timeout is on.
    fn monotonic_at(until: Instant) -> futex::Timespec {
        let left = until.saturating_duration_since(Instant::now());
        let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let left_secs = i64::try_from(left.as_secs()).unwrap_or(i64::MAX);
        let mut tv_sec = now.tv_sec.saturating_add(left_secs);
        let mut tv_nsec = now.tv_nsec + i64::from(left.subsec_nanos());
        if tv_nsec >= 1_000_000_000 {
            tv_nsec -= 1_000_000_000;
            tv_sec = tv_sec.saturating_add(1);
        }
        futex::Timespec { tv_sec, tv_nsec }
    }
}

#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use std::time::Instant;

    use super::{Place, Wakes};

    /// Never slept on: slots park their threads (see `ReplySlot::on_board`).
    #[derive(Default)]
    pub(crate) struct WakeBoard;

    impl WakeBoard {
        pub(crate) fn sleep(&self, _: Place, _: Instant, _: impl Fn() -> bool) {}

        pub(crate) fn wake_one(&self, _: Place) {}

        pub(crate) fn wake(&self, wakes: &mut Wakes) {
            *wakes = Wakes::default();
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn sleeper(
        board: &Arc<WakeBoard>,
        place: Place,
        done: &Arc<AtomicBool>,
    ) -> std::thread::JoinHandle<Duration> {
        let (board, done) = (board.clone(), done.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            let until = start + Duration::from_secs(20);
            while !done.load(Ordering::Acquire) && Instant::now() < until {
                board.sleep(place, until, || done.load(Ordering::Acquire));
            }
            start.elapsed()
        })
    }

    #[test]
    fn one_wake_reaches_every_place_collected_across_groups() {
        let board = Arc::new(WakeBoard::default());
        // Places in three groups, the last wrapping around the board.
        let places = [0, 5, 31, 32, 63, 300].map(Place);
        let flags: Vec<_> = places
            .iter()
            .map(|_| Arc::new(AtomicBool::new(false)))
            .collect();
        let threads: Vec<_> = places
            .iter()
            .zip(&flags)
            .map(|(p, f)| sleeper(&board, *p, f))
            .collect();
        // All asleep (or about to be) before the wake, so it is the wake that ends
        // their sleep, not a look at their flags.
        let until = Instant::now() + Duration::from_secs(10);
        let asleep = || -> u32 {
            board
                .words
                .iter()
                .map(|w| w.sleepers.load(Ordering::SeqCst))
                .sum()
        };
        while asleep() < places.len() as u32 && Instant::now() < until {
            std::thread::yield_now();
        }
        let mut wakes = Wakes::default();
        for (p, f) in places.iter().zip(&flags) {
            f.store(true, Ordering::Release);
            wakes.add(*p);
        }
        board.wake(&mut wakes);
        for t in threads {
            assert!(t.join().expect("sleeper") < Duration::from_secs(10));
        }
        assert_eq!(wakes.masks, [0; WORDS], "the wake clears what it woke");
    }

    #[test]
    fn a_sleeper_whose_place_was_not_woken_sleeps_on_until_its_own_wake() {
        let board = Arc::new(WakeBoard::default());
        let (mine, other) = (Place(3), Place(4));
        let done = Arc::new(AtomicBool::new(false));
        let t = sleeper(&board, mine, &done);
        let until = Instant::now() + Duration::from_secs(10);
        // The other place's wake, over and over: ours must not take it as its own.
        while board.words[mine.word()].sleepers.load(Ordering::SeqCst) == 0
            && Instant::now() < until
        {
            std::thread::yield_now();
        }
        for _ in 0..100 {
            board.wake_one(other);
        }
        assert!(!t.is_finished(), "woken for another place");
        done.store(true, Ordering::Release);
        board.wake_one(mine);
        assert!(t.join().expect("sleeper") < Duration::from_secs(10));
    }

    #[test]
    fn a_wake_between_a_waiter_s_last_look_and_its_sleep_is_not_lost() {
        // The completion and its wake land exactly there: inside the last look,
        // after the ticket was taken. The sleep must end at once, not at the
        // deadline.
        let board = WakeBoard::default();
        let start = Instant::now();
        board.sleep(Place(5), start + Duration::from_secs(20), || {
            board.wake_one(Place(5));
            false
        });
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "slept through it"
        );
    }

    #[test]
    fn wakes_reach_a_sleeper_round_after_round() {
        // Ping-pong on one place: each round the waker completes and wakes, sometimes
        // as the sleeper takes its ticket, sometimes once it is in the kernel. A lost
        // wake would leave the sleeper (and the waker waiting for its answer) until
        // the deadline.
        use std::sync::atomic::AtomicU32;
        let board = Arc::new(WakeBoard::default());
        let turn = Arc::new(AtomicU32::new(0));
        let answered = Arc::new(AtomicU32::new(0));
        let rounds = 2_000;
        let (b, t, a) = (board.clone(), turn.clone(), answered.clone());
        let sleeper = std::thread::spawn(move || {
            for round in 0..rounds {
                let until = Instant::now() + Duration::from_secs(10);
                while t.load(Ordering::Acquire) <= round && Instant::now() < until {
                    b.sleep(Place(9), until, || t.load(Ordering::Acquire) > round);
                }
                a.store(round + 1, Ordering::Release);
            }
        });
        let mut lost = 0;
        for round in 0..rounds {
            for _ in 0..round % 4 {
                std::thread::yield_now();
            }
            turn.store(round + 1, Ordering::Release);
            board.wake_one(Place(9));
            let until = Instant::now() + Duration::from_secs(5);
            while answered.load(Ordering::Acquire) <= round {
                if Instant::now() >= until {
                    lost += 1;
                    break;
                }
                std::thread::yield_now();
            }
        }
        sleeper.join().expect("sleeper");
        assert_eq!(lost, 0, "wakes lost");
    }
}
