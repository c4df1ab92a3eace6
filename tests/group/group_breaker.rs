//! Custom circuit breakers (`CircuitBreaker::custom`) in a group, against fakes: what
//! an accumulator is shown (classified faults only: `is_fault()` is false for an
//! application error), that every connection starts its accumulator afresh, and what
//! batches and transactions count as.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resilient_redis::availability::{
    Accumulator, BreakerPolicy, ChangeReason, CircuitBreaker, FaultContext, Group, GroupEvent,
    GroupOptions, HealthCheck, Member,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::FakeServer;
use resilient_redis::Cmd;
use support::optin::opt_in;
use support::{events_until, wait_until};

const WAIT: Duration = Duration::from_secs(10);
const LOADING: &str = "LOADING Redis is loading the dataset in memory";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The reference guide's `ConsecutiveFailureBreaker`, ported as its users would: a
/// fault (`is_fault()`) extends the run, anything else ends it (unless `total`: then
/// it counts every fault the connection saw); the breaker trips at `limit`. The count
/// is shared by every accumulator of the policy, so only `reset` keeps one
/// connection's history from tripping the next.
#[derive(Debug, Default)]
struct Consecutive {
    limit: u32,
    total: bool,
    run: Arc<AtomicU32>,
    /// Trips, one per accumulator at most (a connection closes when it trips).
    trips: Arc<AtomicU32>,
}

struct RunAccumulator {
    limit: u32,
    total: bool,
    run: Arc<AtomicU32>,
    trips: Arc<AtomicU32>,
    tripped: AtomicBool,
}

impl Accumulator for RunAccumulator {
    fn observe(&self, fault: &FaultContext) {
        if fault.is_fault() {
            self.run.fetch_add(1, Ordering::SeqCst);
        } else if !self.total {
            self.run.store(0, Ordering::SeqCst);
        }
    }

    fn is_healthy(&self) -> bool {
        let healthy = self.run.load(Ordering::SeqCst) < self.limit;
        if !healthy && !self.tripped.swap(true, Ordering::SeqCst) {
            self.trips.fetch_add(1, Ordering::SeqCst);
        }
        healthy
    }

    fn reset(&self) {
        self.run.store(0, Ordering::SeqCst);
    }
}

impl BreakerPolicy for Consecutive {
    fn create_accumulator(&self) -> Box<dyn Accumulator> {
        Box::new(RunAccumulator {
            limit: self.limit,
            total: self.total,
            run: self.run.clone(),
            trips: self.trips.clone(),
            tripped: AtomicBool::new(false),
        })
    }
}

/// A breaker that trips at `limit` faults in a row (`total`: in all), and its count
/// of trips.
fn breaker(limit: u32, total: bool) -> (CircuitBreaker, Arc<AtomicU32>) {
    let policy = Consecutive {
        limit,
        total,
        ..Consecutive::default()
    };
    let trips = policy.trips.clone();
    (CircuitBreaker::custom(Arc::new(policy)), trips)
}

fn member(server: &FakeServer, name: &str, weight: u32) -> Member {
    Member::new(opt_in(format!(
        "{}?syncTimeout=1000&reconnectMin=20&reconnectMax=100",
        server.url()
    )))
    .with_name(name)
    .with_weight(weight)
}

fn active(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

/// "a" (weight 2) and "b" (1), both up, "a" serving, with `breaker`.
fn pair(servers: &[FakeServer; 2], breaker: CircuitBreaker, interval: Duration) -> Group {
    let group = Group::connect(
        vec![member(&servers[0], "a", 2), member(&servers[1], "b", 1)],
        GroupOptions::default()
            .health_check(
                HealthCheck::default()
                    .interval(interval)
                    .probe_count(1)
                    .probe_timeout(Duration::from_secs(1)),
            )
            .circuit_breaker(breaker),
    )
    .unwrap();
    assert!(
        wait_until(WAIT, || active(&group) == "a"
            && group.members().iter().all(|m| m.is_connected())),
        "{}",
        group.status()
    );
    group
}

fn fakes() -> [FakeServer; 2] {
    [FakeServer::start().unwrap(), FakeServer::start().unwrap()]
}

/// `WRONGTYPE` is the application's error: a breaker counting `is_fault()` sees it as
/// a success. `LOADING` is the server's: the same breaker trips on it, and the group
/// announces the failover as the breaker's.
#[test]
fn a_breaker_counting_is_fault_counts_transient_faults_and_never_application_errors() {
    let servers = fakes();
    let (breaker, trips) = breaker(5, false);
    let group = pair(&servers, breaker, Duration::from_secs(60));
    let events = group.events();
    let db = group.database();
    servers[0].fail_command("GET", WRONGTYPE);
    for _ in 0..20 {
        let e = db.get::<Option<String>>("k").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongType, "{e}");
    }
    assert_eq!(trips.load(Ordering::SeqCst), 0, "WRONGTYPE counted");
    assert_eq!(active(&group), "a");
    servers[0].fail_command("GET", LOADING);
    for _ in 0..5 {
        let _ = db.get::<Option<String>>("k");
    }
    assert_eq!(trips.load(Ordering::SeqCst), 1);
    let seen = events_until(&events, WAIT, |e| {
        matches!(e, GroupEvent::ActiveChanged { .. })
    });
    assert!(
        seen.iter().any(|e| matches!(
            e,
            GroupEvent::ActiveChanged {
                reason: ChangeReason::CircuitBreaker,
                ..
            }
        )),
        "{seen:#?}"
    );
    assert!(group.members()[0].is_unhealthy());
}

/// The breaker's state is per connection: after a trip, the member's new connection
/// starts from `reset`, even though this policy shares its count between
/// accumulators; without the reset, its first call would trip it again.
#[test]
fn every_new_connection_starts_its_accumulator_afresh() {
    let servers = fakes();
    let (breaker, trips) = breaker(3, true);
    let group = pair(&servers, breaker, Duration::from_millis(200));
    let db = group.database();
    servers[0].fail_command("SET", LOADING);
    for _ in 0..3 {
        let _ = db.set("k", "v");
    }
    assert_eq!(trips.load(Ordering::SeqCst), 1);
    assert!(wait_until(WAIT, || active(&group) == "b"));
    servers[0].clear_failures();
    // Reconnected, and back at its next check (a tripped member waits for it).
    assert!(
        wait_until(WAIT, || active(&group) == "a"),
        "{}",
        group.status()
    );
    for _ in 0..10 {
        db.set("k", "v").unwrap();
    }
    assert_eq!(trips.load(Ordering::SeqCst), 1, "tripped again at once");
    assert_eq!(active(&group), "a");
}

/// A batch or transaction is seen as its round trip (once, a success when it came
/// back whole) and each error reply in it as that reply alone would be: `LOADING`
/// answers inside a batch trip the breaker as three `LOADING`d commands would;
/// `WRONGTYPE` answers never do.
#[test]
fn error_replies_inside_a_batch_count_as_they_would_alone() {
    let servers = fakes();
    let (breaker, trips) = breaker(3, false);
    let group = pair(&servers, breaker, Duration::from_secs(60));
    let db = group.database();
    servers[0].fail_command("GET", WRONGTYPE);
    for _ in 0..5 {
        let batch = db.batch();
        let replies: Vec<_> = (0..10)
            .map(|i| batch.add::<Option<String>>(Cmd::new("GET").key(format!("k{i}"))))
            .collect();
        batch.execute().unwrap();
        for r in replies {
            assert_eq!(r.wait().unwrap_err().kind(), ErrorKind::WrongType);
        }
    }
    assert_eq!(trips.load(Ordering::SeqCst), 0, "WRONGTYPE counted");
    servers[0].fail_command("GET", LOADING);
    let batch = db.batch();
    for i in 0..3 {
        batch.add::<Option<String>>(Cmd::new("GET").key(format!("k{i}")));
    }
    let _ = batch.execute();
    assert_eq!(
        trips.load(Ordering::SeqCst),
        1,
        "LOADING in a batch not counted"
    );
    assert!(wait_until(WAIT, || group.members()[0].is_unhealthy()));
}

/// A transaction whose commands the server refuses while queueing (`LOADING`) is
/// counted by those replies; its `EXECABORT` is an application error.
#[test]
fn a_transaction_refused_while_queueing_counts_its_transient_replies() {
    let servers = fakes();
    let (breaker, trips) = breaker(3, false);
    let group = pair(&servers, breaker, Duration::from_secs(60));
    let db = group.database();
    let tx = db.transaction();
    tx.add::<()>(Cmd::new("SET").key("k").arg("v"));
    tx.add::<()>(Cmd::new("SET").key("k").arg("v"));
    assert!(tx.execute().is_ok());
    assert_eq!(trips.load(Ordering::SeqCst), 0);
    servers[0].fail_command("SET", LOADING);
    let tx = db.transaction();
    for _ in 0..3 {
        tx.add::<()>(Cmd::new("SET").key("k").arg("v"));
    }
    let e = tx.execute().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ExecAbort, "{e}");
    assert_eq!(
        trips.load(Ordering::SeqCst),
        1,
        "queued LOADING not counted"
    );
}
