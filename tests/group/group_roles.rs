//! A member of two endpoints, a primary and its replica with no Sentinel (real
//! `redis-server`s, roles read with `ROLE`), whose primary dies. It follows its own
//! replica's promotion as a Sentinel member does; for the group it is a member that
//! fails over inside itself: flagged at once (its return waits for the failback
//! delay) unless `with_local_failover` holds it while it does. Its health checks
//! probe the primary only.

use crate::support;

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use resilient_redis::availability::{
    Group, GroupEvent, GroupMember, GroupOptions, HealthCheck, Member,
};
use resilient_redis::prelude::*;
use support::cluster::cli;
use support::optin::opt_in;
use support::sentinel::replica_pair;
use support::{wait_until, RedisServer};

const WAIT: Duration = Duration::from_secs(15);

fn checks() -> HealthCheck {
    HealthCheck::default()
        .interval(Duration::from_millis(100))
        .probe_count(1)
        .probe_timeout(Duration::from_millis(500))
}

/// The servers of a test: the region's primary and replica, and another server.
struct Setup {
    primary: RedisServer,
    replica: RedisServer,
    /// Serves the group's "elsewhere" member (kept alive, never read).
    _other: RedisServer,
    group: Group,
    /// The region's member.
    member: GroupMember,
    /// The group's events from the moment it settled on the region.
    events: Receiver<GroupEvent>,
}

/// How the region is given to the group.
struct Region {
    replica_first: bool,
    local_failover: Option<Duration>,
    failback_delay: Duration,
}

const REGION: Region = Region {
    replica_first: false,
    local_failover: None,
    failback_delay: Duration::ZERO,
};

/// A group of "region" (the pair, weight 10) and "elsewhere" (weight 1), settled on
/// the region; `None` only when server tests are skipped.
fn start(region_as: Region) -> Option<Setup> {
    let (primary, replica) = replica_pair()?;
    let other = RedisServer::start()?;
    let endpoints = if region_as.replica_first {
        format!("{},{}", replica.addr(), primary.addr())
    } else {
        format!("{},{}", primary.addr(), replica.addr())
    };
    let group = Group::connect(
        vec![
            region(endpoints, region_as.local_failover),
            elsewhere(&other),
        ],
        GroupOptions::default()
            .health_check(checks())
            .failback_delay(region_as.failback_delay),
    )
    .unwrap();
    settled(&group);
    let member = group.member("region").unwrap();
    let events = group.events();
    Some(Setup {
        primary,
        replica,
        _other: other,
        member,
        events,
        group,
    })
}

/// "region": the primary/replica pair, listed as `endpoints` (weight 10).
fn region(endpoints: String, local_failover: Option<Duration>) -> Member {
    let member = Member::new(opt_in(format!(
        "{endpoints},syncTimeout=1000,connectTimeout=1000,reconnectMin=20,reconnectMax=200"
    )))
    .with_name("region")
    .with_weight(10);
    match local_failover {
        Some(grace) => member.with_local_failover(grace),
        None => member,
    }
}

/// "elsewhere": another server (weight 1).
fn elsewhere(server: &RedisServer) -> Member {
    Member::new(opt_in(format!("{},reconnectMin=20", server.addr())))
        .with_name("elsewhere")
        .with_weight(1)
}

fn active(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

fn settled(group: &Group) {
    assert!(
        wait_until(WAIT, || active(group) == "region"
            && group
                .members()
                .iter()
                .all(|m| m.is_connected() && !m.is_unhealthy())),
        "{}",
        group.status()
    );
}

/// The events of `kind` received within `window`.
fn events_within(
    events: &Receiver<GroupEvent>,
    window: Duration,
    kind: fn(&GroupEvent) -> bool,
) -> Vec<GroupEvent> {
    let deadline = Instant::now() + window;
    let mut seen = Vec::new();
    while let Ok(e) = events.recv_deadline(deadline) {
        if kind(&e) {
            seen.push(e);
        }
    }
    seen
}

#[test]
fn its_primary_dead_the_member_is_flagged_and_returns_on_its_promoted_replica_after_the_delay() {
    let delay = Duration::from_secs(1);
    let Some(mut s) = start(Region {
        failback_delay: delay,
        ..REGION
    }) else {
        return;
    };
    s.primary.kill();
    let killed = Instant::now();
    assert!(wait_until(WAIT, || active(&s.group) == "elsewhere"));
    assert!(!s.member.is_connected() && s.member.is_unhealthy());
    cli(s.replica.port, &["REPLICAOF", "NO", "ONE"]);
    // It follows its own replica: connected again, to the promoted one.
    assert!(
        wait_until(WAIT, || s.member.is_connected()),
        "{}",
        s.group.status()
    );
    assert!(
        wait_until(WAIT, || active(&s.group) == "region"),
        "{}",
        s.group.status()
    );
    assert!(killed.elapsed() >= delay, "back before the failback delay");
    s.group.database().set("after", "promoted").unwrap();
    assert_eq!(cli(s.replica.port, &["GET", "after"]), "promoted");
}

#[test]
fn with_local_failover_the_group_waits_for_the_promotion_and_never_moves() {
    let Some(mut s) = start(Region {
        local_failover: Some(Duration::from_secs(5)),
        ..REGION
    }) else {
        return;
    };
    s.primary.kill();
    assert!(wait_until(WAIT, || !s.member.is_connected()));
    cli(s.replica.port, &["REPLICAOF", "NO", "ONE"]);
    assert!(
        wait_until(WAIT, || s.member.is_connected()),
        "{}",
        s.group.status()
    );
    s.group.database().set("after", "promoted").unwrap();
    assert_eq!(cli(s.replica.port, &["GET", "after"]), "promoted");
    let moved = events_within(&s.events, Duration::from_millis(500), |e| {
        matches!(
            e,
            GroupEvent::ActiveChanged { .. } | GroupEvent::MemberHealthChanged { .. }
        )
    });
    assert!(moved.is_empty(), "{moved:#?}");
    assert!(!s.member.is_unhealthy());
}

/// A replica that stops answering does not fail the member: only its primary is
/// probed.
#[test]
fn a_hung_replica_does_not_fail_the_member() {
    let Some(s) = start(REGION) else {
        return;
    };
    s.replica.pause();
    // Ten intervals: a probe of the replica would have failed by now.
    let flagged = events_within(&s.events, Duration::from_secs(1), |e| {
        matches!(e, GroupEvent::MemberHealthChanged { .. })
    });
    s.replica.resume();
    assert!(flagged.is_empty(), "{flagged:#?}");
    assert_eq!(active(&s.group), "region");
}

/// With its primary dead and no replica promoted, the member knows no primary: its
/// checks fail, whatever its replica answers (listed first here, it is the node a
/// check would fall back to), so its failure time keeps moving and the failback delay
/// never runs out while it cannot take a write.
#[test]
fn with_no_primary_known_the_checks_fail_even_though_the_replica_answers() {
    let delay = Duration::from_millis(300);
    let Some(mut s) = start(Region {
        replica_first: true,
        failback_delay: delay,
        ..REGION
    }) else {
        return;
    };
    s.primary.kill();
    assert!(wait_until(WAIT, || s.member.is_unhealthy()));
    let cleared = events_within(&s.events, delay * 4, |e| {
        matches!(e, GroupEvent::MemberHealthChanged { healthy: true, .. })
    });
    assert!(cleared.is_empty(), "{cleared:#?}\n{}", s.group.status());
    assert!(s.member.is_unhealthy() && !s.member.is_connected());
}
