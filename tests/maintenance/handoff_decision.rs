//! The MOVING handoff decided without a server: every branch of the decision and of
//! the advertised-address probe, against a scripted DNS timeline on a manual clock
//! (no test here sleeps; a 15 s window is polled in microseconds).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use resilient_redis::clock::{Clock, ManualClock};
use resilient_redis::maintenance::handoff::{decide_handoff, jitter, max_jitter, poll_interval};
use resilient_redis::maintenance::{AdvertisedAddressProbe, HandoffDecision, ReplacementPoll};
use resilient_redis::testkit::{Answer, ScriptedResolver};
use resilient_redis::Endpoint;

const HOST: &str = "db.example";
const WINDOW: Duration = Duration::from_secs(15);

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn old() -> SocketAddr {
    addr("10.0.0.1:12000")
}

fn new() -> SocketAddr {
    addr("10.0.0.2:12000")
}

fn sibling() -> SocketAddr {
    addr("10.0.0.3:12000")
}

struct Dns {
    clock: ManualClock,
    dns: ScriptedResolver,
    probe: AdvertisedAddressProbe,
}

fn dns(timeline: Vec<(Duration, Answer)>) -> Dns {
    let clock = ManualClock::new();
    let dns = ScriptedResolver::with_clock(Arc::new(clock.clone()));
    dns.script(HOST, timeline);
    let probe = AdvertisedAddressProbe::new(
        Arc::new(dns.clone()),
        Arc::new(clock.clone()),
        poll_interval(WINDOW),
    );
    Dns { clock, dns, probe }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

fn endpoint() -> Endpoint {
    Endpoint::new(HOST, 12000)
}

/// Decides with the probe's own (manual) clock as the pause.
fn decide(d: &Dns, window: Duration) -> HandoffDecision {
    let clock = d.clock.clone();
    decide_handoff(&endpoint(), Some(old()), None, window, &d.probe, &mut |w| {
        clock.advance(w);
        true
    })
}

#[test]
fn dns_trailing_the_moving_is_polled_until_the_record_moves() {
    // Measured: the first answers name the retiring address; DNS follows at ~+6 s.
    let d = dns(vec![
        (Duration::ZERO, Answer::addrs([old()])),
        (secs(6.2), Answer::addrs([new()])),
    ]);
    let t0 = d.clock.now();
    let decision = decide(&d, WINDOW);
    // One lookup a second (15 s window): 0, 1, .. 6 see the old record, 7 the new.
    assert_eq!(
        decision,
        HandoffDecision::RecordMoved {
            to: new(),
            attempts: 8
        }
    );
    assert_eq!(d.clock.now() - t0, Duration::from_secs(7));
    assert_eq!(d.dns.lookups(HOST), 8);
    assert_eq!(decision.target(), Some(new()));
}

#[test]
fn a_resolution_blip_mid_handoff_is_retried() {
    let d = dns(vec![
        (Duration::ZERO, Answer::addrs([old()])),
        (secs(2.5), Answer::Fail),
        (secs(4.5), Answer::Empty),
        (secs(5.5), Answer::addrs([new()])),
    ]);
    assert_eq!(
        decide(&d, WINDOW),
        HandoffDecision::RecordMoved {
            to: new(),
            attempts: 7
        },
        "failures at 3 and 4 s, nothing at 5 s, the new address at 6 s"
    );
}

#[test]
fn round_robin_records_naming_a_sibling_step_sideways_at_once() {
    for record in [vec![old(), sibling()], vec![sibling(), old()]] {
        let d = dns(vec![(Duration::ZERO, Answer::addrs(record.clone()))]);
        let t0 = d.clock.now();
        assert_eq!(
            decide(&d, WINDOW),
            HandoffDecision::StepSideways(sibling()),
            "{record:?}"
        );
        assert_eq!(d.clock.now(), t0, "no waiting for DNS");
        assert_eq!(d.dns.lookups(HOST), 1);
    }
    // Three records (all-master-shards): any address that is not ours.
    let d = dns(vec![(
        Duration::ZERO,
        Answer::addrs([old(), sibling(), new()]),
    )]);
    assert_eq!(decide(&d, WINDOW), HandoffDecision::StepSideways(sibling()));
}

#[test]
fn a_record_that_never_moves_is_a_normal_outcome_at_the_window_end() {
    let d = dns(vec![(Duration::ZERO, Answer::addrs([old()]))]);
    let t0 = d.clock.now();
    let decision = decide(&d, WINDOW);
    assert_eq!(decision, HandoffDecision::StillStale { attempts: 16 });
    assert_eq!(
        d.clock.now() - t0,
        WINDOW,
        "the whole window, not a moment more"
    );
    assert_eq!(decision.target(), None);
    // A record that names nothing at all, or keeps failing, is stale too (never a guess).
    let d = dns(vec![(Duration::ZERO, Answer::Fail)]);
    assert_eq!(
        decide(&d, secs(2.0)),
        HandoffDecision::StillStale { attempts: 3 }
    );
}

#[test]
fn a_zero_window_still_gets_one_lookup() {
    let d = dns(vec![(Duration::ZERO, Answer::addrs([old()]))]);
    assert_eq!(
        decide(&d, Duration::ZERO),
        HandoffDecision::StillStale { attempts: 1 }
    );
    assert_eq!(d.dns.lookups(HOST), 1);
    let d = dns(vec![(Duration::ZERO, Answer::addrs([new()]))]);
    assert_eq!(
        decide(&d, Duration::ZERO),
        HandoffDecision::StepSideways(new()),
        "act now, not do nothing"
    );
    assert_eq!(
        d.probe.replacement(&endpoint(), old(), Duration::ZERO),
        Some(new())
    );
}

#[test]
fn cancellation_stops_the_poll() {
    let d = dns(vec![
        (Duration::ZERO, Answer::addrs([old()])),
        (secs(9.0), Answer::addrs([new()])),
    ]);
    let mut pauses = 0;
    let clock = d.clock.clone();
    let decision = decide_handoff(&endpoint(), Some(old()), None, WINDOW, &d.probe, &mut |w| {
        clock.advance(w);
        pauses += 1;
        pauses < 3
    });
    assert_eq!(decision, HandoffDecision::Cancelled);
    assert_eq!(d.dns.lookups(HOST), 3);
    let poll = d
        .probe
        .poll_replacement(&endpoint(), old(), WINDOW, &mut |_| false);
    assert_eq!(poll, ReplacementPoll::Cancelled);
}

#[test]
fn the_endpoint_form_decides_before_any_lookup() {
    let d = dns(vec![(Duration::ZERO, Answer::addrs([new()]))]);
    let named = Endpoint::new("10.9.9.9", 12001);
    let mut never = |_: Duration| -> bool { panic!("no waiting") };
    let literal = Endpoint::new("10.0.0.1", 12000);
    // Address, no new endpoint: nothing to re-resolve.
    assert_eq!(
        decide_handoff(&literal, Some(old()), None, WINDOW, &d.probe, &mut never),
        HandoffDecision::Nothing
    );
    // Address with a named new endpoint: a different endpoint, connect there.
    assert_eq!(
        decide_handoff(
            &literal,
            Some(old()),
            Some(&named),
            WINDOW,
            &d.probe,
            &mut never
        ),
        HandoffDecision::ConnectTo(named.clone())
    );
    // A name with a named endpoint goes there too; a server naming itself names nothing.
    assert_eq!(
        decide_handoff(
            &endpoint(),
            Some(old()),
            Some(&named),
            WINDOW,
            &d.probe,
            &mut never
        ),
        HandoffDecision::ConnectTo(named)
    );
    assert_eq!(
        decide_handoff(
            &literal,
            Some(old()),
            Some(&literal),
            WINDOW,
            &d.probe,
            &mut never
        ),
        HandoffDecision::Nothing
    );
    assert_eq!(
        decide_handoff(&endpoint(), None, None, WINDOW, &d.probe, &mut never),
        HandoffDecision::NotConnected
    );
    assert_eq!(d.dns.lookups(HOST), 0);
}

#[test]
fn still_advertised_is_none_when_it_cannot_tell() {
    let d = dns(vec![
        (Duration::ZERO, Answer::addrs([old(), sibling()])),
        (secs(1.0), Answer::addrs([sibling()])),
        (secs(2.0), Answer::Fail),
        (secs(3.0), Answer::Empty),
    ]);
    let e = endpoint();
    assert_eq!(d.probe.still_advertised(&e, old()), Some(true));
    d.clock.advance(secs(1.0));
    assert_eq!(d.probe.still_advertised(&e, old()), Some(false));
    d.clock.advance(secs(1.0));
    assert_eq!(d.probe.still_advertised(&e, old()), None, "a blip");
    d.clock.advance(secs(1.0));
    assert_eq!(d.probe.still_advertised(&e, old()), None, "an empty record");
}

#[test]
fn jitter_is_a_fraction_of_the_window_capped_at_a_second() {
    assert_eq!(max_jitter(WINDOW), Duration::from_secs(1));
    assert_eq!(
        max_jitter(Duration::from_secs(2)),
        Duration::from_millis(200)
    );
    assert_eq!(max_jitter(Duration::ZERO), Duration::ZERO);
    for f in [0.0, 0.3, 0.999, 7.0] {
        assert!(jitter(Duration::from_secs(2), f) <= Duration::from_millis(200));
        assert!(jitter(Duration::from_secs(600), f) <= Duration::from_secs(1));
    }
    assert_eq!(poll_interval(WINDOW), Duration::from_secs(1));
    assert_eq!(poll_interval(Duration::ZERO), Duration::from_millis(50));
}
