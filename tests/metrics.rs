//! Metrics (feature `metrics`): simulated outages on the testkit's fakes move the
//! counters, gauges and histograms `docs/metrics.md` promises, with the labels it
//! promises, and no label ever carries a secret from the connection string.
//!
//! One recorder for the whole binary (a global one: the client records from its own
//! threads, which a thread-local recorder would not see). It never resets, so tests
//! running in parallel only ever add: each test reads the series labelled with its own
//! servers' ports and its own member names, and where a series has no such label
//! (`db.client.operation.duration`) it compares before and after and asserts "at
//! least". Its own test binary: the recorder is the process's, so the other tests'
//! clients would record into it.
#![cfg(feature = "metrics")]

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use resilient_redis::availability::{
    CircuitBreaker, Group, GroupOptions, HealthCheck, Member, RetryPolicy,
};
use resilient_redis::metrics::{
    label, MetricKind, MetricUnit, ACTIVE_MEMBER_CHANGES, BREAKER_TRIPS, CATALOGUE, CHECKS,
    CONNECTION_CREATE_TIME, CONNECTION_FAILURES, CONNECTION_PENDING_REQUESTS, CONNECTION_TIMEOUTS,
    HANDOFFS, HANDOFF_DURATION, MEMBER_ACTIVE, MEMBER_HEALTH_CHANGES, NOTIFICATIONS,
    OPERATION_DURATION, RECONNECTS, RELAXED_WINDOWS,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeServer, Notification};
use support::optin::opt_in;
use support::wait_until;

const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------
// The recorder: cumulative, readable by name and labels.

#[derive(Default)]
struct Values(Mutex<Vec<f64>>);

impl HistogramFn for Values {
    fn record(&self, value: f64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(value);
    }
}

#[derive(Clone)]
enum Series {
    Counter(Arc<AtomicU64>),
    Gauge(Arc<AtomicU64>),
    Histogram(Arc<Values>),
}

/// (name, labels in the order recorded) -> series.
type SeriesMap = HashMap<(String, Vec<(String, String)>), Series>;
/// name -> (kind, unit, description), as described to the recorder.
type Descriptions = HashMap<String, (MetricKind, Option<Unit>, String)>;

#[derive(Default)]
struct TestRecorder {
    series: Mutex<SeriesMap>,
    described: Mutex<Descriptions>,
}

impl TestRecorder {
    fn series(&self, key: &Key, make: impl FnOnce() -> Series) -> Series {
        let labels = key
            .labels()
            .map(|l| (l.key().to_string(), l.value().to_string()))
            .collect();
        self.series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((key.name().to_string(), labels))
            .or_insert_with(make)
            .clone()
    }

    fn describe(&self, kind: MetricKind, key: KeyName, unit: Option<Unit>, d: SharedString) {
        self.described
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.as_str().to_string(), (kind, unit, d.to_string()));
    }

    /// The series called `name` whose labels include every pair of `with` and none of
    /// the keys in `without`.
    fn matching(&self, name: &str, with: &[(&str, &str)], without: &[&str]) -> Vec<Series> {
        self.series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|((n, labels), _)| {
                n == name
                    && with
                        .iter()
                        .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
                    && without.iter().all(|k| labels.iter().all(|(lk, _)| lk != k))
            })
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// The sum of the matching counters.
    fn counter(&self, name: &str, with: &[(&str, &str)]) -> u64 {
        self.matching(name, with, &[])
            .iter()
            .map(|s| match s {
                Series::Counter(c) => c.load(Ordering::Acquire),
                _ => panic!("{name} is not a counter"),
            })
            .sum()
    }

    /// The value of the one matching gauge.
    fn gauge(&self, name: &str, with: &[(&str, &str)]) -> Option<f64> {
        match self.matching(name, with, &[]).as_slice() {
            [] => None,
            [Series::Gauge(g)] => Some(f64::from_bits(g.load(Ordering::Acquire))),
            other => panic!("{name} {with:?}: {} series, not one gauge", other.len()),
        }
    }

    /// How many measurements the matching histograms hold.
    fn histogram_count(&self, name: &str, with: &[(&str, &str)], without: &[&str]) -> usize {
        self.matching(name, with, without)
            .iter()
            .map(|s| match s {
                Series::Histogram(h) => h.0.lock().unwrap_or_else(|e| e.into_inner()).len(),
                _ => panic!("{name} is not a histogram"),
            })
            .sum()
    }

    /// The counters called `name` with a label value `value`, for failure messages.
    fn dump(&self, name: &str, value: &str) -> Vec<String> {
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series
            .iter()
            .filter(|((n, labels), _)| n == name && labels.iter().any(|(_, v)| v == value))
            .map(|((_, labels), s)| match s {
                Series::Counter(c) => format!("{labels:?} = {}", c.load(Ordering::Acquire)),
                _ => format!("{labels:?}"),
            })
            .collect()
    }

    /// Every name and label value recorded so far.
    fn every_text(&self) -> Vec<String> {
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (name, labels) in series.keys() {
            out.push(name.clone());
            for (k, v) in labels {
                out.push(format!("{k}={v}"));
            }
        }
        out
    }
}

impl Recorder for TestRecorder {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, d: SharedString) {
        self.describe(MetricKind::Counter, key, unit, d);
    }
    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, d: SharedString) {
        self.describe(MetricKind::Gauge, key, unit, d);
    }
    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, d: SharedString) {
        self.describe(MetricKind::Histogram, key, unit, d);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self.series(key, || Series::Counter(Arc::default())) {
            Series::Counter(c) => Counter::from_arc(c),
            _ => panic!("{} registered as two kinds", key.name()),
        }
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        match self.series(key, || Series::Gauge(Arc::default())) {
            Series::Gauge(g) => Gauge::from_arc(g),
            _ => panic!("{} registered as two kinds", key.name()),
        }
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        match self.series(key, || Series::Histogram(Arc::default())) {
            Series::Histogram(h) => Histogram::from_arc(h),
            _ => panic!("{} registered as two kinds", key.name()),
        }
    }
}

/// The binary's recorder, installed by the first test that asks (before it builds a
/// client: what is recorded before the install is lost).
fn recorder() -> &'static TestRecorder {
    static RECORDER: OnceLock<Arc<TestRecorder>> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let r = Arc::new(TestRecorder::default());
        metrics::set_global_recorder(r.clone())
            .unwrap_or_else(|_| panic!("another recorder is installed"));
        r
    })
}

// ---------------------------------------------------------------------------------
// Helpers.

fn port(server: &FakeServer) -> String {
    server.port().to_string()
}

/// `with` for a server's series.
fn on(port: &str) -> [(&'static str, &str); 1] {
    [(label::SERVER_PORT, port)]
}

fn active(group: &Group) -> String {
    group
        .active()
        .map(|m| m.name().to_string())
        .unwrap_or_default()
}

fn member(server: &FakeServer, name: &str, weight: u32) -> Member {
    Member::new(opt_in(format!(
        "{}?syncTimeout=2000&connectTimeout=2000&reconnectMin=20&reconnectMax=100",
        server.url()
    )))
    .with_name(name)
    .with_weight(weight)
}

fn fast_checks() -> HealthCheck {
    HealthCheck::default()
        .interval(Duration::from_millis(100))
        .probe_count(1)
        .probe_timeout(Duration::from_secs(1))
        .probe_interval(Duration::from_millis(20))
}

/// Waits until `read` reaches at least `want`; its last value either way.
fn reaches(want: u64, read: impl Fn() -> u64) -> u64 {
    wait_until(WAIT, || read() >= want);
    read()
}

/// Whether `member`'s `member.active` gauge says `serving`, waiting for it (set just
/// after the change is counted: a separate recording).
fn gauge_says(member: &str, serving: bool) -> bool {
    let want = Some(if serving { 1.0 } else { 0.0 });
    let is = || recorder().gauge(MEMBER_ACTIVE, &[(label::MEMBER, member)]) == want;
    wait_until(WAIT, is)
}

/// `serving` serves and `left` does not, by the gauges.
fn serves(serving: &str, left: &str) -> bool {
    gauge_says(serving, true) && gauge_says(left, false)
}

fn ops(with: &[(&str, &str)], without: &[&str]) -> usize {
    recorder().histogram_count(OPERATION_DURATION, with, without)
}

/// Two fakes, the members `a-<port>` (weight 2) and `b-<port>` (weight 1) of a group
/// with `options`, once both are connected: `connect` returns once one serves, and a
/// failover to a member still connecting waits for it (and is announced as its
/// arrival, not as what the test did).
fn two_members(options: GroupOptions) -> ([FakeServer; 2], String, String, Group) {
    let servers = [FakeServer::start().unwrap(), FakeServer::start().unwrap()];
    let (a, b) = (
        format!("a-{}", port(&servers[0])),
        format!("b-{}", port(&servers[1])),
    );
    let group = Group::connect(
        vec![member(&servers[0], &a, 2), member(&servers[1], &b, 1)],
        options,
    )
    .unwrap();
    assert!(wait_until(WAIT, || group
        .members()
        .iter()
        .all(|m| m.is_connected())));
    (servers, a, b, group)
}

// ---------------------------------------------------------------------------------
// The tests.

#[test]
fn an_error_storm_trips_the_breaker_and_the_group_fails_over() {
    let r = recorder();
    // Health checks far apart: only the breaker moves the group this fast; and no
    // failback while the test looks (a reconnects at once after the trip).
    let options = GroupOptions::default()
        .failback_delay(Duration::from_secs(60))
        .health_check(HealthCheck::default().interval(Duration::from_secs(60)))
        .circuit_breaker(
            CircuitBreaker::default()
                .minimum_number_of_failures(20)
                .failure_rate_threshold(10.0),
        );
    let (servers, a, b, group) = two_members(options);
    assert!(wait_until(WAIT, || active(&group) == a));
    let initial = [(label::FROM, "none"), (label::TO, a.as_str())];
    assert_eq!(reaches(1, || r.counter(ACTIVE_MEMBER_CHANGES, &initial)), 1);
    assert!(gauge_says(&a, true));

    let set = (label::DB_OPERATION_NAME, "SET");
    let loading = (label::ERROR_TYPE, "Loading");
    let (loading_before, ok_before) =
        (ops(&[set, loading], &[]), ops(&[set], &[label::ERROR_TYPE]));
    servers[0].fail_command("SET", "LOADING Redis is loading the dataset in memory");
    let db = group.database();
    let mut errors = Vec::new();
    for _ in 0..20 {
        if let Err(e) = db.set("k", "v") {
            errors.push(e.kind());
        }
    }
    let port_a = port(&servers[0]);
    assert!(
        wait_until(WAIT, || active(&group) == b),
        "{}\nerrors {errors:?}\ntrips {}\n{:?}",
        group.status(),
        r.counter(BREAKER_TRIPS, &on(&port_a)),
        r.dump(ACTIVE_MEMBER_CHANGES, &a)
    );
    db.set("k", "on-b").unwrap();

    // Every failed SET, by kind, and the one that worked on b.
    assert!(ops(&[set, loading], &[]) >= loading_before + 20);
    assert!(ops(&[set], &[label::ERROR_TYPE]) > ok_before);
    assert_eq!(reaches(1, || r.counter(BREAKER_TRIPS, &on(&port_a))), 1);
    let tripped = [
        (label::SERVER_PORT, port_a.as_str()),
        (label::FAILURE, "CircuitBreaker"),
    ];
    assert_eq!(reaches(1, || r.counter(CONNECTION_FAILURES, &tripped)), 1);
    // Why: the breaker (the group's poll leaves a connection it finds down one poll
    // for the member's own signal, which says a breaker closed it).
    let moved = |reason: &'static str| {
        let with = [
            (label::FROM, a.as_str()),
            (label::TO, b.as_str()),
            (label::REASON, reason),
        ];
        r.counter(ACTIVE_MEMBER_CHANGES, &with)
    };
    assert_eq!(
        reaches(1, || moved("CircuitBreaker")),
        1,
        "{:?}",
        r.dump(ACTIVE_MEMBER_CHANGES, &a)
    );
    assert!(serves(&b, &a));
    let unhealthy = [(label::MEMBER, a.as_str()), (label::HEALTHY, "false")];
    assert!(reaches(1, || r.counter(MEMBER_HEALTH_CHANGES, &unhealthy)) >= 1);
    // The connection the breaker closed is dialled again.
    let back = [
        (label::SERVER_PORT, port_a.as_str()),
        (label::OUTCOME, "ok"),
    ];
    assert!(reaches(1, || r.counter(RECONNECTS, &back)) >= 1);
}

#[test]
fn a_member_that_goes_away_fails_over_reconnects_and_fails_back() {
    let r = recorder();
    let options = GroupOptions::default()
        .health_check(fast_checks())
        .failback_check(fast_checks());
    let (servers, a, b, group) = two_members(options);
    // With a failback check, the first member up serves provisionally until one
    // passes its check; settled once a serves and has passed its own.
    let settled = || active(&group) == a && !group.members()[0].is_provisional();
    assert!(wait_until(WAIT, settled), "{}", group.status());
    // The gauge is set after the change is counted: counted now, whatever came first.
    assert!(gauge_says(&a, true));
    let home = [(label::FROM, b.as_str()), (label::TO, a.as_str())];
    let moved_home = || {
        ["Failback", "FailbackCheck"]
            .iter()
            .map(|reason| {
                let with = [home[0], home[1], (label::REASON, *reason)];
                r.counter(ACTIVE_MEMBER_CHANGES, &with)
            })
            .sum::<u64>()
    };
    let away = [(label::FROM, a.as_str()), (label::TO, b.as_str())];
    let (home_before, moved_home_before) = (r.counter(ACTIVE_MEMBER_CHANGES, &home), moved_home());
    let away_before = r.counter(ACTIVE_MEMBER_CHANGES, &away);
    let db = group.database().with_retry(RetryPolicy::default()).unwrap();
    db.set("k", "on-a").unwrap();
    // b is not active: its failback check runs and passes.
    let b_checked = [
        (label::MEMBER, b.as_str()),
        (label::CHECK, "failback"),
        (label::VERDICT, "Healthy"),
    ];
    assert!(reaches(1, || r.counter(CHECKS, &b_checked)) >= 1);
    let a_checked = [(label::MEMBER, a.as_str()), (label::CHECK, "health")];
    assert!(reaches(1, || r.counter(CHECKS, &a_checked)) >= 1);

    let port_a = port(&servers[0]);
    servers[0].refuse_connections(true);
    servers[0].close_all_connections();
    assert!(
        wait_until(WAIT, || active(&group) == b),
        "{}",
        group.status()
    );
    db.set("k", "on-b").unwrap();
    let lost = [
        (label::SERVER_PORT, port_a.as_str()),
        (label::FAILURE, "SocketClosed"),
    ];
    assert!(reaches(1, || r.counter(CONNECTION_FAILURES, &lost)) >= 1);
    let refused = [
        (label::SERVER_PORT, port_a.as_str()),
        (label::OUTCOME, "error"),
    ];
    assert!(reaches(1, || r.counter(RECONNECTS, &refused)) >= 1);
    let away_now = reaches(away_before + 1, || r.counter(ACTIVE_MEMBER_CHANGES, &away));
    assert!(away_now > away_before);
    assert!(serves(&b, &a));

    servers[0].refuse_connections(false);
    assert!(
        wait_until(WAIT, || active(&group) == a),
        "{}",
        group.status()
    );
    let reconnected = [
        (label::SERVER_PORT, port_a.as_str()),
        (label::OUTCOME, "ok"),
    ];
    assert!(r.counter(RECONNECTS, &reconnected) >= 1);
    // At least: a loaded machine may make the group hesitate, each move counted.
    assert!(reaches(home_before + 1, || r.counter(ACTIVE_MEMBER_CHANGES, &home)) > home_before);
    assert!(moved_home() > moved_home_before, "moved back by failback");
    assert!(serves(&a, &b));
}

#[test]
fn callers_wait_in_the_backlog_one_times_out_and_the_next_is_served() {
    let r = recorder();
    let server = FakeServer::start().unwrap();
    let client = Client::connect(opt_in(format!(
        "{}?syncTimeout=2000&connectTimeout=2000&reconnectMin=20&reconnectMax=100",
        server.url()
    )))
    .unwrap();
    let db = client.database();
    db.set("k", "v").unwrap();
    let p = port(&server);
    let created = || r.histogram_count(CONNECTION_CREATE_TIME, &on(&p), &[]);
    assert!(created() >= 1);
    let get_timeouts_before = ops(
        &[
            (label::DB_OPERATION_NAME, "GET"),
            (label::ERROR_TYPE, "Timeout"),
        ],
        &[],
    );

    server.refuse_connections(true);
    server.close_all_connections();
    assert!(wait_until(WAIT, || !client.is_connected()));
    let e = db
        .with_timeout(Duration::from_millis(200))
        .get::<String>("k")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert_eq!(r.counter(CONNECTION_TIMEOUTS, &on(&p)), 1);
    assert!(
        ops(
            &[
                (label::DB_OPERATION_NAME, "GET"),
                (label::ERROR_TYPE, "Timeout")
            ],
            &[]
        ) > get_timeouts_before
    );
    let pool = [(label::POOL_NAME, format!("127.0.0.1:{p}"))];
    let pool: Vec<(&str, &str)> = pool.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(r.gauge(CONNECTION_PENDING_REQUESTS, &pool), Some(0.0));

    let patient = db.with_timeout(WAIT);
    let waiter = std::thread::spawn(move || patient.get::<String>("k"));
    assert!(wait_until(WAIT, || r
        .gauge(CONNECTION_PENDING_REQUESTS, &pool)
        == Some(1.0)));
    server.refuse_connections(false);
    assert_eq!(waiter.join().unwrap().unwrap(), "v");
    assert_eq!(r.gauge(CONNECTION_PENDING_REQUESTS, &pool), Some(0.0));
    let refused = [(label::SERVER_PORT, p.as_str()), (label::OUTCOME, "error")];
    assert!(r.counter(RECONNECTS, &refused) >= 1);
    let back = [(label::SERVER_PORT, p.as_str()), (label::OUTCOME, "ok")];
    assert!(r.counter(RECONNECTS, &back) >= 1);
    assert!(created() >= 2, "the reconnect's connection is timed too");
}

#[test]
fn maintenance_notifications_relaxed_windows_and_a_handoff_are_counted() {
    let r = recorder();
    let server = FakeServer::start().unwrap();
    server.set_moving_close(false);
    server.set_retain_completions(false);
    let client = Client::connect(format!(
        "{}?maintNotifications=enabled&syncTimeout=2000",
        server.url()
    ))
    .unwrap();
    client.database().set("k", "v").unwrap();
    let p = port(&server);
    let notified = |kind: &str| {
        r.counter(
            NOTIFICATIONS,
            &[(label::SERVER_PORT, &p), (label::KIND, kind)],
        )
    };
    let relaxed = |kind: &str| {
        r.counter(
            RELAXED_WINDOWS,
            &[(label::SERVER_PORT, &p), (label::MAINTENANCE, kind)],
        )
    };

    server.notify(Notification::migrating(5, &["1"]));
    assert_eq!(reaches(1, || notified("MIGRATING")), 1);
    assert_eq!(reaches(1, || relaxed("Migrating")), 1);
    // A second MIGRATING only re-arms the window that is open.
    server.notify(Notification::migrating(5, &["2"]));
    assert_eq!(reaches(2, || notified("MIGRATING")), 2);
    assert_eq!(relaxed("Migrating"), 1);
    server.notify(Notification::migrated(&["1", "2"]));
    assert_eq!(reaches(1, || notified("MIGRATED")), 1);
    assert_eq!(reaches(1, || relaxed("Settling")), 1);

    // An address literal and no new endpoint: nothing to move.
    server.notify(Notification::moving(1));
    assert_eq!(reaches(1, || notified("MOVING")), 1);
    assert_eq!(reaches(1, || relaxed("Moving")), 1);
    let handoff = [
        (label::SERVER_PORT, p.as_str()),
        (label::TRIGGER, "MOVING"),
        (label::OUTCOME, "Nothing"),
    ];
    let with_recycle = [handoff[0], handoff[1], handoff[2], (label::RECYCLE, "none")];
    assert_eq!(reaches(1, || r.counter(HANDOFFS, &with_recycle)), 1);
    assert_eq!(r.histogram_count(HANDOFF_DURATION, &handoff, &[]), 1);
}

#[test]
fn label_values_never_carry_a_secret_from_the_connection_string() {
    const SECRET: &str = "s3cret-Pa55word";
    let r = recorder();
    let server = FakeServer::builder().password(SECRET).start().unwrap();
    let other = FakeServer::builder().password(SECRET).start().unwrap();
    // Option string, URL with userinfo, and a member named by default (its endpoint).
    let client = Client::connect(opt_in(format!(
        "127.0.0.1:{},password={SECRET},syncTimeout=2000,reconnectMin=20,reconnectMax=100",
        server.port()
    )))
    .unwrap();
    let url = |s: &FakeServer| {
        opt_in(format!(
            "redis://:{SECRET}@127.0.0.1:{}?syncTimeout=2000&reconnectMin=20&reconnectMax=100",
            s.port()
        ))
    };
    let group = Group::connect(
        vec![
            Member::new(url(&server)).with_weight(2),
            Member::new(url(&other)),
        ],
        GroupOptions::default().health_check(fast_checks()),
    )
    .unwrap();
    let db = client.database();
    db.set("k", "v").unwrap();
    // A key in a command name's second word never reaches the label.
    let _ = db.cmd(&format!("GET {SECRET}")).query::<Option<String>>();
    group.database().set("k", "v").unwrap();
    // Failures and reconnects, which carry the server's labels.
    server.close_all_connections();
    let p = port(&server);
    assert!(reaches(2, || r.counter(RECONNECTS, &on(&p))) >= 2);

    let leaks: Vec<String> = r
        .every_text()
        .into_iter()
        .filter(|t| {
            t.to_ascii_lowercase()
                .contains(&SECRET.to_ascii_lowercase())
        })
        .collect();
    assert!(leaks.is_empty(), "secrets in metrics: {leaks:?}");
    let name = format!("127.0.0.1:{p}");
    assert!(
        r.gauge(MEMBER_ACTIVE, &[(label::MEMBER, &name)]).is_some(),
        "the default member name is the endpoint: {}",
        group.status()
    );
}

#[test]
fn every_metric_is_described_with_its_unit() {
    let r = recorder();
    let server = FakeServer::start().unwrap();
    // Building a client describes them all.
    let _client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let described = r.described.lock().unwrap_or_else(|e| e.into_inner());
    for m in CATALOGUE {
        let (kind, unit, description) = described
            .get(m.name)
            .unwrap_or_else(|| panic!("{} was not described", m.name));
        assert_eq!(*kind, m.kind, "{}", m.name);
        let want = match m.unit {
            MetricUnit::Seconds => Unit::Seconds,
            MetricUnit::Count => Unit::Count,
            other => panic!("{other:?}"),
        };
        assert_eq!(*unit, Some(want), "{}", m.name);
        assert_eq!(description, m.description);
    }
}
