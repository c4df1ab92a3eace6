//! Choosing the active member: a pure function of what each member looks like now,
//! so the order of the rules is testable without a server.
//!
//! The order: available first (connected, not unhealthy, eligible); then an explicit
//! override; then higher weight; then lower latency; and between otherwise equal
//! candidates the one already active stays (anti-flap).

use std::time::Duration;

/// What selection needs to know of one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub available: bool,
    pub weight: u32,
    pub latency: Option<Duration>,
}

/// Latencies this close count as equal: a quarter of the faster one, or 200 µs,
/// whichever is more. The current member stays among equals, so this is the band a
/// challenger must beat to take traffic: measurement noise and members a few percent
/// apart never move it, while a member twice as close always does. The floor is the
/// noise of timing a round trip on a busy machine (tens to a hundred microseconds on
/// loopback), below which no member is measurably nearer.
pub(crate) fn latency_equal(a: Duration, b: Duration) -> bool {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    hi - lo <= LATENCY_FLOOR.max(lo / LATENCY_BAND_DIVISOR)
}

/// The band, relative: a quarter of the faster latency.
pub(crate) const LATENCY_BAND_DIVISOR: u32 = 4;
/// The band, absolute: never narrower than this.
pub(crate) const LATENCY_FLOOR: Duration = Duration::from_micros(200);

/// The index of the member to make active; `None` when no member is available.
pub(crate) fn select(
    candidates: &[Candidate],
    current: Option<usize>,
    preferred: Option<usize>,
) -> Option<usize> {
    if let Some(p) = preferred.filter(|&p| candidates.get(p).is_some_and(|c| c.available)) {
        return Some(p);
    }
    let available = || candidates.iter().enumerate().filter(|(_, c)| c.available);
    let top_weight = available().map(|(_, c)| c.weight).max()?;
    let heaviest: Vec<(usize, &Candidate)> = available()
        .filter(|(_, c)| c.weight == top_weight)
        .collect();
    // An unmeasured latency ranks after every measured one.
    let best = heaviest.iter().filter_map(|(_, c)| c.latency).min();
    let fastest: Vec<usize> = heaviest
        .iter()
        .filter(|(_, c)| match (best, c.latency) {
            (Some(b), Some(l)) => latency_equal(b, l),
            (Some(_), None) => false,
            (None, _) => true,
        })
        .map(|(i, _)| *i)
        .collect();
    if let Some(cur) = current.filter(|c| fastest.contains(c)) {
        return Some(cur);
    }
    fastest
        .iter()
        .copied()
        .min_by_key(|&i| candidates[i].latency.unwrap_or(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(available: bool, weight: u32, latency_ms: Option<u64>) -> Candidate {
        Candidate {
            available,
            weight,
            latency: latency_ms.map(Duration::from_millis),
        }
    }

    #[test]
    fn availability_comes_first_then_override_then_weight_then_latency() {
        let members = [
            c(false, 100, Some(1)),
            c(true, 5, Some(50)),
            c(true, 10, Some(80)),
        ];
        assert_eq!(select(&members, None, None), Some(2), "heaviest available");
        assert_eq!(
            select(&members, Some(2), Some(1)),
            Some(1),
            "override beats weight"
        );
        assert_eq!(
            select(&members, None, Some(0)),
            Some(2),
            "an unavailable override is ignored"
        );
        let same_weight = [c(true, 1, Some(80)), c(true, 1, Some(20))];
        assert_eq!(
            select(&same_weight, Some(0), None),
            Some(1),
            "lower latency wins"
        );
        assert_eq!(select(&[c(false, 1, None)], None, None), None);
    }

    #[test]
    fn the_current_member_stays_on_ties_so_traffic_does_not_flap() {
        let members = [c(true, 1, Some(20)), c(true, 1, Some(21)), c(true, 1, None)];
        assert_eq!(select(&members, Some(1), None), Some(1));
        assert_eq!(select(&members, Some(0), None), Some(0));
        assert_eq!(select(&members, None, None), Some(0));
        assert_eq!(
            select(&members, Some(2), None),
            Some(0),
            "unmeasured ranks last"
        );
        assert!(latency_equal(
            Duration::from_millis(100),
            Duration::from_millis(125)
        ));
        assert!(!latency_equal(
            Duration::from_millis(100),
            Duration::from_millis(126)
        ));
    }
}
