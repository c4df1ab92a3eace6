//! Lag-aware failback: a group of two regions, each with a failback check that asks its
//! Redis Enterprise cluster's availability API whether the region's database is caught
//! up. A region that comes back from an outage is held off, although it is alive and
//! connected, until its cluster says it has caught up; then traffic fails back.
//!
//! `cargo run --example lag_aware` runs against embedded fakes (feature `testkit`, on
//! for the crate's examples): two in-process Redis servers as the regions, and one fake
//! REST API per region standing for its cluster, with a certificate minted at start.
//! Against real clusters, each member would be configured like this instead:
//!
//! ```text
//! Member::new("rediss://redis-12000.cluster-east.example.com:12000")
//!     .with_failback_check(HealthCheck::lag_aware(
//!         LagAwareOptions::new(|| Some(RestCredentials::new(user, password)))
//!             .trust_issuer_pem(&cluster_east_certificate_pem)?,
//!     ))
//! ```
//!
//! (the REST endpoint, `https://cluster-east.example.com:9443/`, and the database id
//! are then derived and discovered).

use std::time::{Duration, Instant};

use resilient_redis::availability::{
    Group, GroupEvent, GroupOptions, HealthCheck, LagAwareOptions, Member, RestCredentials,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeRestApi, FakeServer};

/// One region: its Redis, its cluster's REST API, and the database's id there.
struct Region {
    name: &'static str,
    redis: FakeServer,
    cluster: FakeRestApi,
    uid: u64,
}

impl Region {
    fn start(name: &'static str) -> Result<Region, Box<dyn std::error::Error>> {
        let redis = FakeServer::start()?;
        let cluster = FakeRestApi::start()?;
        let uid = cluster.add_database_for(redis.addr());
        // Label the region's data so the timeline shows who answered.
        Client::connect(redis.url().as_str())?
            .database()
            .set("whoami", name)?;
        Ok(Region {
            name,
            redis,
            cluster,
            uid,
        })
    }

    fn member(&self, weight: u32) -> Result<Member, Box<dyn std::error::Error>> {
        let (user, password) = self.cluster.credentials();
        let lag_aware = LagAwareOptions::new(move || {
            // Re-read before every request: a rotated password is picked up at once.
            Some(RestCredentials::new(user.clone(), password.clone()))
        })
        .rest_endpoint(self.cluster.url())
        .trust_issuer_pem(self.cluster.certificate_pem().as_bytes())?;
        let check = HealthCheck::lag_aware(lag_aware).interval(Duration::from_millis(250));
        Ok(Member::new(format!(
            "{}?syncTimeout=300&connectTimeout=300&reconnectMin=20&reconnectMax=200",
            self.redis.url()
        ))
        .with_name(self.name)
        .with_weight(weight)
        .with_failback_check(check))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let east = Region::start("us-east")?;
    let west = Region::start("us-west")?;
    let options = GroupOptions::default().health_check(
        HealthCheck::default()
            .interval(Duration::from_millis(200))
            .probe_count(1)
            .probe_timeout(Duration::from_millis(200)),
    );
    let group = Group::connect(vec![east.member(20)?, west.member(10)?], options)?;
    let events = group.events();
    let db = group.database();
    let started = Instant::now();
    println!("us-east (weight 20) is preferred; us-west (weight 10) stands by.");
    println!("Each region has a failback check asking its cluster whether it is caught up.\n");

    println!("{}\n", group.status());

    let script: [(f64, &str, &dyn Fn()); 4] = [
        (1.5, "us-east goes dark (region outage)", &|| {
            east.redis.hang(true)
        }),
        (
            2.5,
            "us-east's cluster: sync into us-east is behind (it missed the writes)",
            &|| east.cluster.set_lagging(east.uid, true),
        ),
        (3.0, "us-east is reachable again, but still behind", &|| {
            east.redis.hang(false)
        }),
        (6.0, "us-east's cluster: sync has caught up", &|| {
            east.cluster.set_lagging(east.uid, false)
        }),
    ];
    let mut next = 0;
    let mut tick = 0u32;
    let mut shown_held_off = false;
    let now = || started.elapsed().as_secs_f64();
    while started.elapsed() < Duration::from_secs(8) {
        while next < script.len() && now() >= script[next].0 {
            println!("t={:>4.1}s  >>> {}", now(), script[next].1);
            (script[next].2)();
            next += 1;
        }
        if tick % 5 == 0 {
            let served_by = db
                .get::<String>("whoami")
                .unwrap_or_else(|e| format!("({:?})", e.kind()));
            let _ = db.incr("writes", 1);
            for e in events.try_iter() {
                print_event(now(), &e);
            }
            println!(
                "t={:>4.1}s  reads from {served_by:<8} | {}",
                now(),
                members(&group)
            );
        }
        for e in events.try_iter() {
            print_event(now(), &e);
        }
        if !shown_held_off && now() >= 5.0 {
            shown_held_off = true;
            println!(
                "\nus-east is alive and connected, but held off:\n{}\n",
                group.status()
            );
        }
        tick += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("\n{}", group.status());
    println!(
        "\nus-east cluster was asked {} questions, us-west {}; unfiltered reads: {}",
        east.cluster.requests().len(),
        west.cluster.requests().len(),
        east.cluster.unfiltered_reads().len() + west.cluster.unfiltered_reads().len()
    );
    group.close();
    Ok(())
}

fn members(group: &Group) -> String {
    let active = group.active();
    group
        .members()
        .iter()
        .map(|m| {
            let role = if active.as_ref() == Some(m) {
                if m.is_provisional() {
                    "ACTIVE (provisional)"
                } else {
                    "ACTIVE"
                }
            } else if !m.is_connected() || m.is_unhealthy() {
                "down"
            } else {
                "standby"
            };
            let check = m
                .failback_result()
                .map_or_else(|| "-".to_string(), |r| format!("{r:?}"));
            format!("{}: {role}, failback check {check}", m.name())
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn print_event(t: f64, e: &GroupEvent) {
    let text = match e {
        GroupEvent::ActiveChanged {
            previous,
            current,
            reason,
            ..
        } => format!(
            "traffic {} -> {} ({reason:?})",
            previous.as_ref().map_or("none", |m| m.name()),
            current.as_ref().map_or("none", |m| m.name())
        ),
        GroupEvent::MemberHealthChanged { member, healthy } => format!(
            "{} is {}",
            member.name(),
            if *healthy { "alive again" } else { "unhealthy" }
        ),
        GroupEvent::FailbackCheckChanged { member, result } => {
            format!("{}'s failback check: {result:?}", member.name())
        }
        GroupEvent::ProvisionalChanged {
            member,
            provisional,
        } => format!(
            "{} {}",
            member.name(),
            if *provisional {
                "serves provisionally (no live member has passed its failback check)"
            } else {
                "is no longer provisional"
            }
        ),
        other => format!("{other:?}"),
    };
    println!("t={t:>4.1}s      event: {text}");
}
