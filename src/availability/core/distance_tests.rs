//! The core as tables, for members at different distances and equal weights: when
//! the group chooses again (a member back, a check passed, latencies crossing) and
//! the band that keeps jitter from moving traffic. Latencies are those measured in
//! issue 39 through a delay proxy: "near" 0.5-0.9 ms, "mid" 1.3-2.3 ms, "far"
//! 5.3-5.6 ms.

use super::tests::{changes, checks, Table};
use super::*;
use ChangeReason as R;
use ProbeResult::{Healthy, Unhealthy};

const SEC: Duration = Duration::from_secs(1);
const FAR: MemberId = 1;
const MID: MemberId = 2;
const NEAR: MemberId = 3;

fn micros(us: u64) -> Duration {
    Duration::from_micros(us)
}

/// A passed health check that measured `latency`.
fn measured(t: &mut Table, id: MemberId, latency: Duration) -> Step {
    t.input(Input::Health {
        id,
        result: Healthy,
        latency: Some(latency),
        connection_lost: false,
    })
}

/// Far, mid and near, equal weights, each measured a few times: near serves.
fn three_regions() -> Table {
    let mut t = Table::up(&[1, 1, 1]);
    for _ in 0..3 {
        measured(&mut t, FAR, micros(5_500));
        measured(&mut t, MID, micros(1_500));
        measured(&mut t, NEAR, micros(700));
    }
    assert_eq!(t.active(), Some(NEAR));
    t
}

/// The failed run: near back, connected, healthy and twice as close, and
/// left unused. It must take traffic back at its first passed check.
#[test]
fn a_nearer_member_back_after_an_outage_takes_traffic_back_at_its_first_passed_check() {
    let mut t = three_regions();
    t.at(10 * SEC);
    let s = t.input(Input::Connection {
        id: NEAR,
        up: false,
    });
    assert_eq!(changes(&s), vec![(Some(NEAR), Some(MID), R::HealthCheck)]);
    // Its check was due: it runs, and finds it down.
    assert!(checks(&s).contains(&(NEAR, CheckKind::Health)));
    t.input(Input::Health {
        id: NEAR,
        result: Unhealthy,
        latency: None,
        connection_lost: true,
    });
    t.at(20 * SEC);
    let s = t.input(Input::Connection { id: NEAR, up: true });
    assert!(checks(&s).contains(&(NEAR, CheckKind::Health)), "at once");
    assert!(changes(&s).is_empty(), "not before its check passed");
    let s = measured(&mut t, NEAR, micros(721));
    assert_eq!(changes(&s), vec![(Some(MID), Some(NEAR), R::Failback)]);
}

/// After an outage the member may come back by another route: its first sample
/// since then is its distance, whatever it measured before.
#[test]
fn the_first_sample_after_a_reconnect_replaces_what_was_measured_before() {
    let mut t = Table::up(&[1, 1]);
    for _ in 0..3 {
        measured(&mut t, 1, micros(5_500));
        measured(&mut t, 2, micros(1_500));
    }
    assert_eq!(t.active(), Some(2));
    t.at(10 * SEC);
    t.input(Input::Connection { id: 1, up: false });
    t.at(20 * SEC);
    t.input(Input::Connection { id: 1, up: true });
    let s = measured(&mut t, 1, micros(700));
    assert_eq!(changes(&s), vec![(Some(2), Some(1), R::Failback)]);
    assert_eq!(t.core.view(1).and_then(|v| v.latency), Some(micros(700)));
}

/// A check under way when the member's connection comes back: failed on the old
/// connection, it is ignored and the reconnect's own check decides; passed, and
/// started after the failure, it brings the member back at once.
#[test]
fn a_member_back_while_a_check_is_in_flight_is_chosen_by_the_check_that_counts() {
    for in_flight in [Unhealthy, Healthy] {
        let mut t = three_regions();
        t.at(10 * SEC);
        let s = t.input(Input::Connection {
            id: NEAR,
            up: false,
        });
        assert_eq!(t.active(), Some(MID));
        assert!(checks(&s).contains(&(NEAR, CheckKind::Health)), "due");
        t.at(10 * SEC + micros(100_000));
        let s = t.input(Input::Connection { id: NEAR, up: true });
        assert!(checks(&s).is_empty(), "one check at a time");
        let s = t.input(Input::Health {
            id: NEAR,
            result: in_flight,
            latency: (in_flight == Healthy).then_some(micros(700)),
            connection_lost: false,
        });
        if in_flight == Unhealthy {
            assert!(changes(&s).is_empty(), "{:?}", changes(&s));
            assert_eq!(checks(&s), vec![(NEAR, CheckKind::Health)], "the new one");
            assert!(
                t.core.view(NEAR).is_some_and(|v| v.unhealthy),
                "not passed yet"
            );
            let s = measured(&mut t, NEAR, micros(700));
            assert_eq!(changes(&s), vec![(Some(MID), Some(NEAR), R::Failback)]);
        } else {
            assert_eq!(changes(&s), vec![(Some(MID), Some(NEAR), R::Failback)]);
        }
    }
}

/// Near becomes slower than mid at run time: slow samples are noise until five in a
/// row say it moved, and traffic moves at that check; one near sample brings it back
/// (a round trip cannot measure faster than it is).
#[test]
fn latencies_crossing_move_traffic_at_the_check_that_crosses_them() {
    let mut t = three_regions();
    for _ in 0..4 {
        let s = measured(&mut t, NEAR, micros(3_000));
        assert!(
            changes(&s).is_empty(),
            "slow samples among near ones move nothing"
        );
    }
    let s = measured(&mut t, NEAR, micros(3_000));
    assert_eq!(changes(&s), vec![(Some(NEAR), Some(MID), R::Rebalance)]);
    let s = measured(&mut t, NEAR, micros(700));
    assert_eq!(changes(&s), vec![(Some(MID), Some(NEAR), R::Rebalance)]);
}

/// Members 5 % apart, their samples jittered by up to ±8 % each, never move traffic,
/// whichever serves: the worst case, 1.05 × 1.08 against 0.92, is still inside the
/// band (1.233 < 1.25).
#[test]
fn jitter_inside_the_band_never_moves_traffic() {
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut jittered = |base_us: u64| {
        // xorshift: deterministic, so a failure replays.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let permille = 920 + rng % 161; // 0.920 ..= 1.080
        micros(base_us * permille / 1000)
    };
    for (a, b) in [(1_000, 1_050), (1_050, 1_000), (700, 735), (5_300, 5_565)] {
        let mut t = Table::up(&[1, 1]);
        measured(&mut t, 1, micros(a));
        measured(&mut t, 2, micros(b));
        let first = t.active();
        for round in 0..2_000u32 {
            t.at(SEC * round);
            for (id, base) in [(1, a), (2, b)] {
                let s = measured(&mut t, id, jittered(base));
                assert!(changes(&s).is_empty(), "{a} / {b} µs, round {round}");
            }
        }
        assert_eq!(t.active(), first);
    }
}

#[test]
fn the_band_is_a_quarter_of_the_faster_or_200_microseconds() {
    use select::latency_equal;
    let table = [
        // (a µs, b µs, equal)
        (700, 1_500, false),  // the near and mid: twice as close
        (1_000, 1_050, true), // 5 % apart
        (1_000, 1_250, true), // the edge of the band
        (1_000, 1_251, false),
        (100, 300, true), // under 200 µs apart: loopback noise
        (100, 301, false),
        (5_300, 5_600, true),
        (1_500, 5_500, false),
    ];
    for (a, b, equal) in table {
        assert_eq!(latency_equal(micros(a), micros(b)), equal, "{a} / {b}");
        assert_eq!(latency_equal(micros(b), micros(a)), equal, "{b} / {a}");
    }
}
