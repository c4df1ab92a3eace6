//! When to ask the identity service for the next token: the decision the
//! `rr-token-renew` thread of [`TokenCredentials`](super::TokenCredentials) carries
//! out, kept apart from it (no clock, no waiting, no fetching) so it is tested as a
//! table.
//!
//! Owns: the renewal time (a fraction of the life the token had left when it arrived,
//! 75 % by default as in Jedis' Entra ID support; redis-py and redis-rs use 70-80 %),
//! the back-off of a failed fetch, and what each outcome means for the cached token.
//! Must never: look at the time itself (the caller passes `now`), or let a failure end
//! the renewals (a token source that fails for an hour is asked again, at `retry_max`).

use std::time::{Duration, Instant};

/// The settings of a renewal schedule (checked by the builder: `0 < renew_after < 1`,
/// `0 < retry_min <= retry_max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Schedule {
    /// The fraction of a token's remaining life after which the next one is fetched.
    pub(crate) renew_after: f64,
    /// The first pause after a failed fetch, doubled on each failure in a row; also
    /// the shortest pause between two fetches of any kind.
    pub(crate) retry_min: Duration,
    /// The longest pause after a failed fetch.
    pub(crate) retry_max: Duration,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule {
            renew_after: 0.75,
            retry_min: Duration::from_millis(100),
            retry_max: Duration::from_secs(30),
        }
    }
}

/// What a fetch gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fetched {
    /// A token that ends at `expires_at`.
    Token { expires_at: Instant },
    /// The token source returned an error (or panicked).
    Failed,
}

/// Why a fetch did not renew the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Because {
    /// The source failed.
    SourceFailed,
    /// The source returned a token that had already ended: it is not used (the one
    /// held, if still valid, serves better).
    ArrivedExpired,
}

/// What to do with the outcome of a fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Use the new token (the generation moves).
    Renewed,
    /// Keep the token held, report the failure, try again at `next_fetch`.
    Retry {
        /// Failures in a row, this one included.
        attempt: u32,
        /// What the token held has left (`None`: none held, or it has ended).
        valid_for: Option<Duration>,
        because: Because,
    },
}

/// The decision for one fetch: the verdict, and when to fetch next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) verdict: Verdict,
    pub(crate) next_fetch: Instant,
}

/// The renewal state: when the token held ends, and the failures in a row.
#[derive(Debug)]
pub(crate) struct Renewal {
    schedule: Schedule,
    expires_at: Option<Instant>,
    failures: u32,
}

impl Renewal {
    /// No token held yet.
    pub(crate) fn new(schedule: Schedule) -> Renewal {
        Renewal {
            schedule,
            expires_at: None,
            failures: 0,
        }
    }

    /// The decision for a fetch that ended at `now`; `jitter` (in [0, 1]) scales a
    /// retry's delay to between half and all of it, so the processes that share an
    /// identity service do not all ask it again at the same instant after it failed
    /// them together (1.0: no jitter).
    pub(crate) fn handle(&mut self, now: Instant, fetched: Fetched, jitter: f64) -> Step {
        let because = match fetched {
            Fetched::Token { expires_at } if expires_at > now => {
                self.expires_at = Some(expires_at);
                self.failures = 0;
                // Measured from now, not from when the token was issued: the fraction
                // is of what is left, so a token that arrived late is renewed sooner.
                let wait = (expires_at - now)
                    .mul_f64(self.schedule.renew_after)
                    .max(self.schedule.retry_min);
                return Step {
                    verdict: Verdict::Renewed,
                    next_fetch: now + wait,
                };
            }
            Fetched::Token { .. } => Because::ArrivedExpired,
            Fetched::Failed => Because::SourceFailed,
        };
        self.failures = self.failures.saturating_add(1);
        let valid_for = validity(now, self.expires_at);
        Step {
            verdict: Verdict::Retry {
                attempt: self.failures,
                valid_for,
                because,
            },
            next_fetch: now + self.jittered(self.retry_delay(valid_for), jitter),
        }
    }

    /// `delay` scaled by `0.5 + 0.5 * jitter`, never under `retry_min`.
    fn jittered(&self, delay: Duration, jitter: f64) -> Duration {
        delay
            .mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
            .max(self.schedule.retry_min)
    }

    /// Doubling from `retry_min` up to `retry_max`; while the token held is valid, at
    /// most half of what it has left, so attempts come closer together as its end
    /// nears and several of them land before it (never closer than `retry_min`).
    fn retry_delay(&self, valid_for: Option<Duration>) -> Duration {
        let Schedule {
            retry_min,
            retry_max,
            ..
        } = self.schedule;
        let doublings = self.failures.saturating_sub(1).min(30);
        let delay = retry_min.saturating_mul(1u32 << doublings).min(retry_max);
        match valid_for {
            Some(left) => delay.min(left / 2).max(retry_min),
            None => delay,
        }
    }
}

/// What a token ending at `expires_at` has left at `now`; `None` once it has ended
/// (a token is not used at its end instant: the server may already refuse it).
pub(crate) fn validity(now: Instant, expires_at: Option<Instant>) -> Option<Duration> {
    expires_at
        .filter(|&at| at > now)
        .map(|at| at.saturating_duration_since(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn schedule() -> Schedule {
        Schedule {
            renew_after: 0.75,
            retry_min: ms(100),
            retry_max: ms(2_000),
        }
    }

    /// One row: time moves by this many ms, then a fetch ends with a token with this
    /// much life left in ms (negative: ended that long ago), or a failure (`None`);
    /// the verdict expected, and the pause until the next fetch in ms.
    type Row = (u64, Option<i64>, Verdict, u64);

    fn run(rows: &[Row]) {
        let clock = ManualClock::new();
        let mut renewal = Renewal::new(schedule());
        for (i, &(advance, fetched, verdict, next_in)) in rows.iter().enumerate() {
            clock.advance(ms(advance));
            let now = clock.now();
            let fetched = match fetched {
                Some(life) if life >= 0 => Fetched::Token {
                    expires_at: now + ms(life.unsigned_abs()),
                },
                Some(life) => Fetched::Token {
                    expires_at: now - ms(life.unsigned_abs()),
                },
                None => Fetched::Failed,
            };
            let step = renewal.handle(now, fetched, 1.0);
            assert_eq!(step.verdict, verdict, "row {i}");
            assert_eq!(step.next_fetch - now, ms(next_in), "row {i}");
        }
    }

    fn retry(attempt: u32, valid_for: Option<u64>) -> Verdict {
        Verdict::Retry {
            attempt,
            valid_for: valid_for.map(ms),
            because: Because::SourceFailed,
        }
    }

    #[test]
    fn tokens_are_renewed_at_three_quarters_of_their_remaining_life() {
        use Verdict::Renewed;
        run(&[
            // A 2 s token: renewed after 1.5 s.
            (0, Some(2_000), Renewed, 1_500),
            // The next one came 1.5 s later, with 2 s of life: 0.5 s of overlap.
            (1_500, Some(2_000), Renewed, 1_500),
            // An hour-long token: 45 min.
            (1_500, Some(3_600_000), Renewed, 2_700_000),
            // A token with 40 ms left: never fetched more often than `retry_min`.
            (2_700_000, Some(40), Renewed, 100),
        ]);
    }

    #[test]
    fn failures_back_off_doubling_but_land_before_the_token_ends() {
        use Verdict::Renewed;
        run(&[
            // A 10 s token, renewal due at 7.5 s: 2.5 s left then.
            (0, Some(10_000), Renewed, 7_500),
            (7_500, None, retry(1, Some(2_500)), 100),
            (100, None, retry(2, Some(2_400)), 200),
            (200, None, retry(3, Some(2_200)), 400),
            (400, None, retry(4, Some(1_800)), 800),
            // 1 600 ms would come after half of what is left (1 000 ms left): 500.
            (800, None, retry(5, Some(1_000)), 500),
            (500, None, retry(6, Some(500)), 250),
            (250, None, retry(7, Some(250)), 125),
            // Closer than `retry_min` never: the last attempt lands after the end.
            (125, None, retry(8, Some(125)), 100),
            // That fetch took a while: the token has ended. Back to the plain back-off,
            // capped at `retry_max`, for ever.
            (125, None, retry(9, None), 2_000),
            (2_000, None, retry(10, None), 2_000),
            // The service is back: a fresh token, the failures forgotten.
            (2_000, Some(4_000), Renewed, 3_000),
            (3_000, None, retry(1, Some(1_000)), 100),
        ]);
    }

    #[test]
    fn a_retry_is_jittered_down_to_half_its_delay_never_under_retry_min() {
        let clock = ManualClock::new();
        let now = clock.now();
        // (failures so far, jitter, delay of the next attempt in ms); no token held.
        let table = [
            (0, 1.0, 100),
            (0, 0.0, 100), // half of 100 ms is under retry_min
            (3, 1.0, 800),
            (3, 0.0, 400),
            (3, 0.5, 600),
            (10, 0.0, 1_000), // retry_max 2 s, halved
        ];
        for (failures, jitter, want) in table {
            let mut renewal = Renewal::new(schedule());
            for _ in 0..failures {
                renewal.handle(now, Fetched::Failed, 1.0);
            }
            let step = renewal.handle(now, Fetched::Failed, jitter);
            assert_eq!(
                step.next_fetch - now,
                ms(want),
                "after {failures} failures, jitter {jitter}"
            );
        }
    }

    #[test]
    fn a_token_that_arrives_already_ended_is_not_used() {
        use Verdict::Renewed;
        let ended = |attempt, valid_for: Option<u64>| Verdict::Retry {
            attempt,
            valid_for: valid_for.map(ms),
            because: Because::ArrivedExpired,
        };
        run(&[
            (0, Some(1_000), Renewed, 750),
            // Ended before it arrived (the identity service's clock, or a slow fetch):
            // the token held (250 ms left) is kept.
            (750, Some(-5), ended(1, Some(250)), 100),
            // Ending at the very instant it arrives counts as ended.
            (100, Some(0), ended(2, Some(150)), 100),
            (100, Some(1_000), Renewed, 750),
        ]);
    }

    #[test]
    fn the_first_fetch_failing_has_no_token_to_wait_for() {
        run(&[
            (0, None, retry(1, None), 100),
            (100, None, retry(2, None), 200),
            (200, Some(1_000), Verdict::Renewed, 750),
        ]);
    }

    #[test]
    fn a_long_outage_never_overflows_the_back_off() {
        let clock = ManualClock::new();
        let mut renewal = Renewal::new(schedule());
        let mut last = renewal.handle(clock.now(), Fetched::Failed, 1.0);
        for _ in 0..100 {
            clock.advance(ms(2_000));
            last = renewal.handle(clock.now(), Fetched::Failed, 1.0);
        }
        assert_eq!(last.next_fetch - clock.now(), ms(2_000));
        assert!(matches!(last.verdict, Verdict::Retry { attempt: 101, .. }));
    }

    #[test]
    fn validity_ends_at_the_expiry_instant() {
        let clock = ManualClock::new();
        let t0 = clock.now();
        let at = Some(t0 + ms(300));
        assert_eq!(validity(t0, None), None);
        assert_eq!(validity(t0, at), Some(ms(300)));
        assert_eq!(validity(t0 + ms(299), at), Some(ms(1)));
        assert_eq!(validity(t0 + ms(300), at), None);
        assert_eq!(validity(t0 + ms(301), at), None);
    }
}
