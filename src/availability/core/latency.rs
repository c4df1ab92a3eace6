//! A member's distance as the core ranks it: the median of its latest latency
//! samples, restarted when its connection is replaced.
//!
//! Each sample is already the fastest of a few timed `PING`s (see
//! `availability::checks`), so a delay that hit one of them is gone before it gets
//! here. What is left is a delay that hit a whole sample (a scheduler that starved
//! the probe thread for a few milliseconds): the median of three drops that one, and
//! moves with the member when its distance really changes, at the second sample that
//! says so. A moving average would instead carry a quarter of every spike into the
//! ranking, enough to move traffic between members a millisecond apart and back.

use std::time::Duration;

/// The samples the estimate is the median of.
const WINDOW: usize = 3;

/// The latest samples of one member's latency.
#[derive(Clone, Debug, Default)]
pub(super) struct Latency {
    /// Newest last; at most [`WINDOW`].
    samples: Vec<Duration>,
    /// The member's connection the samples were taken on (its count of connection
    /// changes): a member back from an outage may have come back by another route, so
    /// its first sample since counts alone.
    connection: u64,
}

impl Latency {
    /// Folds in a sample taken on the member's connection number `connection`.
    pub(super) fn record(&mut self, sample: Duration, connection: u64) {
        if connection != self.connection {
            self.samples.clear();
            self.connection = connection;
        }
        if self.samples.len() == WINDOW {
            self.samples.remove(0);
        }
        self.samples.push(sample);
    }

    /// The median of the samples (the mean of two), `None` before the first.
    pub(super) fn estimate(&self) -> Option<Duration> {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        match sorted.as_slice() {
            [] => None,
            [a, b] => Some(*a / 2 + *b / 2),
            odd => Some(odd[odd.len() / 2]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn one_slow_sample_is_dropped_and_two_are_the_distance() {
        let mut l = Latency::default();
        assert_eq!(l.estimate(), None);
        l.record(ms(1), 0);
        assert_eq!(l.estimate(), Some(ms(1)));
        l.record(ms(3), 0);
        assert_eq!(l.estimate(), Some(ms(2)), "two: their mean");
        l.record(ms(1), 0);
        l.record(ms(1), 0);
        l.record(ms(40), 0);
        assert_eq!(l.estimate(), Some(ms(1)), "a spike moves nothing");
        l.record(ms(5), 0);
        assert_eq!(l.estimate(), Some(ms(5)), "the second says it moved");
    }

    #[test]
    fn a_new_connection_starts_afresh() {
        let mut l = Latency::default();
        for _ in 0..3 {
            l.record(ms(5), 2);
        }
        l.record(ms(1), 4);
        assert_eq!(l.estimate(), Some(ms(1)));
    }
}
