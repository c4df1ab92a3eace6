//! Members at real distances, as issue 39 tried them: three real `redis-server`s,
//! each behind a `testkit::DelayProxy` ("far" 5 ms, "mid" 1 ms, "near" 0.25 ms),
//! equal weights, four threads writing and reading through the default retry policy.
//! The group serves from the nearest, fails over to the next nearest without a failed
//! call, returns to the nearest within `reconnectMax` + one health interval + 1 s of
//! its server coming back, follows a member that becomes slower, and never moves
//! traffic between members inside the latency band.
//!
//! The outage test runs 3 rounds in the suite; `GROUP_DISTANCE_ROUNDS=20 cargo test
//! --all-features --test group group_distance::` runs 20 in a row.

use crate::support;

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use resilient_redis::availability::{
    ChangeReason, Group, GroupEvent, GroupOptions, HealthCheck, Member,
};
use resilient_redis::testkit::DelayProxy;
use support::load::Load;
use support::optin::{note_real_server, opt_in};
use support::{wait_until, RedisServer};

const WAIT: Duration = Duration::from_secs(15);
const MID: usize = 1;
const NEAR: usize = 2;
const REGIONS: [(&str, Duration); 3] = [
    ("far", Duration::from_millis(5)),
    ("mid", Duration::from_millis(1)),
    ("near", Duration::from_micros(250)),
];

/// The tuned variants' reconnect back-off and health interval: short, so a round
/// takes a fraction of a second; the probe timeout stays generous, so a loaded
/// machine does not fail a member the test means to keep.
const RECONNECT_MAX: Duration = Duration::from_millis(200);
const INTERVAL: Duration = Duration::from_millis(200);
const TUNED: &str = "syncTimeout=1000,connectTimeout=1000,reconnectMin=20,reconnectMax=200";

fn fast_checks() -> HealthCheck {
    HealthCheck::default()
        .interval(INTERVAL)
        .probe_count(1)
        .probe_timeout(Duration::from_secs(1))
}

/// Servers, each behind its own proxy.
struct Regions {
    servers: Vec<RedisServer>,
    proxies: Vec<DelayProxy>,
}

impl Regions {
    fn start(distances: &[Duration]) -> Option<Regions> {
        let mut regions = Regions {
            servers: Vec::new(),
            proxies: Vec::new(),
        };
        for &round_trip in distances {
            let server = RedisServer::start()?;
            let proxy = DelayProxy::start(server.addr(), round_trip).unwrap();
            // What answers behind it is a real server: opted-in runs ask for `auto`.
            note_real_server(proxy.port());
            regions.servers.push(server);
            regions.proxies.push(proxy);
        }
        Some(regions)
    }

    fn issue_39() -> Option<Regions> {
        Regions::start(&REGIONS.map(|(_, d)| d))
    }

    /// One member per proxy, named after `names`, with `tuning` added to its options.
    fn members(&self, names: &[&str], tuning: &str) -> Vec<Member> {
        self.proxies
            .iter()
            .zip(names)
            .map(|(p, name)| {
                let spec = match tuning {
                    "" => p.addr().to_string(),
                    t => format!("{},{t}", p.addr()),
                };
                Member::new(opt_in(spec)).with_name(*name)
            })
            .collect()
    }
}

fn names() -> [&'static str; 3] {
    REGIONS.map(|(n, _)| n)
}

fn active_name(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

fn rounds() -> usize {
    std::env::var("GROUP_DISTANCE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// The members the group made active, in order, from the events so far, and why.
fn made_active(events: &Receiver<GroupEvent>) -> Vec<(String, ChangeReason)> {
    events
        .try_iter()
        .filter_map(|e| match e {
            GroupEvent::ActiveChanged {
                current, reason, ..
            } => current.map(|m| (m.name().to_string(), reason)),
            _ => None,
        })
        .collect()
}

/// Kills the nearest member's server and restarts it, `rounds` times under load:
/// traffic goes to the next nearest at once and returns to the nearest within
/// `bound` of its server answering again; no call fails. Returns how long each
/// return took.
fn outages(group: &Group, regions: &mut Regions, rounds: usize, bound: Duration) {
    let events = group.events();
    let load = Load::start(group);
    assert!(load.served(200, WAIT));
    let mut returns = Vec::new();
    for round in 0..rounds {
        regions.servers[NEAR].kill();
        assert!(
            wait_until(WAIT, || active_name(group) == "mid"),
            "round {round}: traffic did not go to the next nearest\n{}",
            group.status()
        );
        assert!(load.served(100, WAIT), "round {round}: mid does not serve");
        regions.servers[NEAR].restart();
        let back = Instant::now();
        assert!(
            wait_until(bound + WAIT, || active_name(group) == "near"),
            "round {round}: no failback to the nearest\n{}",
            group.status()
        );
        returns.push(back.elapsed());
        assert!(load.served(100, WAIT), "round {round}: near does not serve");
    }
    let failed = load.stop();
    eprintln!("returned to the nearest after its server came back: {returns:?}");
    assert!(failed.is_empty(), "failed calls: {failed:?}");
    let late: Vec<_> = returns.iter().filter(|t| **t > bound).collect();
    assert!(late.is_empty(), "past {bound:?}: {late:?} of {returns:?}");
    let changes = made_active(&events);
    let order: Vec<&str> = changes.iter().map(|(name, _)| name.as_str()).collect();
    let expected: Vec<&str> = (0..rounds).flat_map(|_| ["mid", "near"]).collect();
    assert_eq!(
        order, expected,
        "every change of the active member: {changes:?}"
    );
}

#[test]
fn the_group_serves_the_nearest_fails_over_to_the_next_and_returns_within_the_bound() {
    let Some(mut regions) = Regions::issue_39() else {
        return;
    };
    let group = Group::connect(
        regions.members(&names(), TUNED),
        GroupOptions::default().health_check(fast_checks()),
    )
    .unwrap();
    assert!(
        wait_until(WAIT, || active_name(&group) == "near"),
        "{}",
        group.status()
    );
    let latency = |i: usize| group.members()[i].latency();
    assert!(
        wait_until(WAIT, || latency(NEAR) < latency(MID)
            && latency(MID) < latency(0)),
        "{}",
        group.status()
    );
    eprintln!("{}", group.status());
    let bound = RECONNECT_MAX + INTERVAL + Duration::from_secs(1);
    outages(&group, &mut regions, rounds(), bound);
}

/// Issue 39's run as a user makes it: every option at its default (reconnect back-off
/// up to 5 s, health checks every 5 s).
#[test]
fn with_default_options_the_group_returns_to_the_nearest_after_an_outage() {
    let Some(mut regions) = Regions::issue_39() else {
        return;
    };
    let group = Group::connect(regions.members(&names(), ""), GroupOptions::default()).unwrap();
    assert!(
        wait_until(WAIT, || active_name(&group) == "near"),
        "{}",
        group.status()
    );
    // Connected and measured before the load starts: the load's first event then is
    // the failover.
    assert!(wait_until(WAIT, || group
        .members()
        .iter()
        .all(|m| m.is_connected() && m.latency().is_some())));
    let bound = Duration::from_secs(5) + Duration::from_secs(5) + Duration::from_secs(1);
    outages(&group, &mut regions, 1, bound);
}

#[test]
fn a_member_that_becomes_slower_than_another_loses_traffic_until_it_is_near_again() {
    let Some(regions) = Regions::issue_39() else {
        return;
    };
    let group = Group::connect(
        regions.members(&names(), TUNED),
        GroupOptions::default().health_check(fast_checks()),
    )
    .unwrap();
    assert!(wait_until(WAIT, || active_name(&group) == "near"));
    regions.proxies[NEAR].set_round_trip(Duration::from_millis(3));
    assert!(
        wait_until(WAIT, || active_name(&group) == "mid"),
        "{}",
        group.status()
    );
    regions.proxies[NEAR].set_round_trip(REGIONS[NEAR].1);
    assert!(
        wait_until(WAIT, || active_name(&group) == "near"),
        "{}",
        group.status()
    );
}

/// Waits `window` and returns the changes of the active member made meanwhile.
fn changes_within(events: &Receiver<GroupEvent>, window: Duration) -> Vec<String> {
    let deadline = Instant::now() + window;
    let mut moved = Vec::new();
    while let Ok(e) = events.recv_deadline(deadline) {
        if let GroupEvent::ActiveChanged { current, .. } = e {
            moved.push(current.map_or_else(|| "none".into(), |m| m.name().to_string()));
        }
    }
    moved
}

/// Two members 5 % apart (20 and 21 ms), measured every 100 ms: whichever serves
/// keeps serving, also once their distances are swapped. At 20 ms the band (5 ms) is
/// above what a loaded machine adds to a proxied round trip; at 1 ms it is not: at a
/// load average of 14 on 2 cores, members 1.00 and 1.05 ms away measured 3.4 and
/// 5.6 ms, which no band tells apart from a real difference.
#[test]
fn members_inside_the_band_never_move_traffic() {
    let (a, b) = (Duration::from_millis(20), Duration::from_millis(21));
    let Some(regions) = Regions::start(&[a, b]) else {
        return;
    };
    let group = Group::connect(
        regions.members(&["a", "b"], TUNED),
        GroupOptions::default().health_check(fast_checks().interval(Duration::from_millis(100))),
    )
    .unwrap();
    assert!(wait_until(WAIT, || group
        .members()
        .iter()
        .all(|m| m.latency().is_some())));
    let events = group.events();
    // Settled first: a member's first sample counts alone, and one slowed down by a
    // loaded machine can move traffic once, before the other has a sample from a
    // quiet moment (seen: both at 1.2 ms a moment later, 1 run in 40). The band is
    // about what the group does once it has measured.
    let settling = Instant::now();
    while !changes_within(&events, Duration::from_millis(500)).is_empty() {
        assert!(settling.elapsed() < WAIT, "{}", group.status());
    }
    let serving = active_name(&group);
    let moved = changes_within(&events, Duration::from_secs(2));
    assert!(moved.is_empty(), "moved to {moved:?}\n{}", group.status());
    regions.proxies[0].set_round_trip(b);
    regions.proxies[1].set_round_trip(a);
    let moved = changes_within(&events, Duration::from_secs(2));
    assert!(moved.is_empty(), "moved to {moved:?}\n{}", group.status());
    assert_eq!(active_name(&group), serving);
}
