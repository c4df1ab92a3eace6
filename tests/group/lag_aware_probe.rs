//! The lag-aware probe against the fake Redis Enterprise REST API: every row of the
//! spec's table and every switch of the fake, with the reason each outcome gives, the
//! log line it writes, and no secret in either.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use resilient_redis::availability::{
    CertificatePins, LagAware, LagAwareOptions, LagCheckMode, LagOutcome, ProbeResult,
    RestCredentials,
};
use resilient_redis::testkit::FakeRestApi;
use resilient_redis::Endpoint;

const TIMEOUT: Duration = Duration::from_secs(3);
const HOST: &str = "redis-12000.cluster.local";

/// Every log record so far (`support::logs`: every level, ureq's and rustls' included),
/// as `LEVEL [target] text`.
fn logged() -> Vec<String> {
    support::logs::lines()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn api() -> (FakeRestApi, u64) {
    support::logs::capture();
    let api = FakeRestApi::start().unwrap();
    let uid = api.add_database(HOST, "127.0.0.1", 12000);
    (api, uid)
}

fn trusting(api: &FakeRestApi) -> LagAwareOptions {
    let (user, password) = api.credentials();
    LagAwareOptions::new(move || Some(RestCredentials::new(user.clone(), password.clone())))
        .rest_endpoint(api.url())
        .trust_issuer_pem(api.certificate_pem().as_bytes())
        .unwrap()
}

fn db() -> Endpoint {
    Endpoint::new(HOST, 12000)
}

fn ask(options: LagAwareOptions) -> LagOutcome {
    LagAware::new(options).check_endpoint(&db(), TIMEOUT)
}

fn starts(outcome: &LagOutcome, prefix: &str) {
    let text = outcome.to_string();
    assert!(
        text.starts_with(prefix),
        "{text:?} should start with {prefix:?}"
    );
    assert_eq!(outcome.result(), ProbeResult::Inconclusive, "{outcome:?}");
}

#[test]
fn caught_up_is_healthy_through_filtered_reads_only_and_discovery_is_remembered() {
    let (api, _) = api();
    let probe = LagAware::new(trusting(&api));
    assert_eq!(probe.check_endpoint(&db(), TIMEOUT), LagOutcome::CaughtUp);
    assert_eq!(
        api.requests(),
        [
            "GET /v1/bdbs?fields=uid,endpoints",
            "GET /v1/bdbs/1?fields=crdt",
            "GET /v1/bdbs/1/availability?extend_check=lag",
        ]
    );
    api.clear_requests();
    assert_eq!(probe.check_endpoint(&db(), TIMEOUT), LagOutcome::CaughtUp);
    assert_eq!(
        api.requests(),
        ["GET /v1/bdbs/1/availability?extend_check=lag"]
    );
    // Found by address too (the member may be configured by IP).
    let by_ip = LagAware::new(trusting(&api));
    let outcome = by_ip.check_endpoint(&Endpoint::new("127.0.0.1", 12000), TIMEOUT);
    assert_eq!(outcome, LagOutcome::CaughtUp);
    assert!(api.unfiltered_reads().is_empty());
}

#[test]
fn lagging_fails_the_lag_question_while_plain_availability_stays_up() {
    let (api, uid) = api();
    api.set_lagging(uid, true);
    let outcome = ask(trusting(&api));
    assert_eq!(
        outcome,
        LagOutcome::Behind {
            error_code: "bdb_endpoint_unavailable".into()
        }
    );
    assert_eq!(outcome.result(), ProbeResult::Unhealthy);
    let plain = ask(trusting(&api).mode(LagCheckMode::Availability));
    assert_eq!(
        plain,
        LagOutcome::Available {
            active_active: None
        }
    );
    api.set_lagging(uid, false);
    assert_eq!(ask(trusting(&api)), LagOutcome::CaughtUp);
}

#[test]
fn no_tolerance_is_sent_by_default_and_a_set_one_is_honoured() {
    let (api, uid) = api();
    api.set_lag(uid, Duration::from_millis(1000));
    // None sent: the cluster's own 100 ms applies, and 1 s is over it.
    assert!(matches!(ask(trusting(&api)), LagOutcome::Behind { .. }));
    assert!(api.requests().iter().all(|r| !r.contains("tolerance")));
    let lenient = trusting(&api).lag_tolerance(Duration::from_secs(600));
    assert_eq!(ask(lenient), LagOutcome::CaughtUp);
    let strict = trusting(&api).lag_tolerance(Duration::from_millis(100));
    assert!(matches!(ask(strict), LagOutcome::Behind { .. }));
    assert!(api.requests().contains(
        &"GET /v1/bdbs/1/availability?extend_check=lag&availability_lag_tolerance_ms=600000"
            .to_string()
    ));
}

#[test]
fn a_database_that_is_not_active_active_is_never_asked_the_lag_question() {
    let (api, uid) = api();
    api.set_active_active(uid, false);
    // Asked the lag question, this database would say unavailable whatever the lag.
    let outcome = ask(trusting(&api));
    assert_eq!(
        outcome,
        LagOutcome::Available {
            active_active: Some(false)
        }
    );
    assert_eq!(outcome.result(), ProbeResult::Healthy);
    assert!(api.requests().iter().all(|r| !r.contains("extend_check")));
}

#[test]
fn an_unavailable_database_is_unhealthy_in_both_modes() {
    let (api, uid) = api();
    api.set_unavailable(uid, true);
    let lag = ask(trusting(&api));
    assert_eq!(lag.result(), ProbeResult::Unhealthy, "{lag:?}");
    let plain = ask(trusting(&api).mode(LagCheckMode::Availability));
    assert_eq!(
        plain,
        LagOutcome::Unavailable {
            error_code: "bdb_unavailable".into()
        }
    );
}

#[test]
fn the_local_form_and_a_given_database_id_answer_the_same() {
    let (api, uid) = api();
    let local = trusting(&api).local_endpoint_form(true).database_id(uid);
    assert_eq!(ask(local.clone()), LagOutcome::CaughtUp);
    api.set_lagging(uid, true);
    assert!(matches!(ask(local), LagOutcome::Behind { .. }));
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| !r.starts_with("GET /v1/bdbs?")),
        "{requests:?}"
    );
    assert!(requests.contains(&format!(
        "GET /v1/local/bdbs/{uid}/endpoint/availability?extend_check=lag"
    )));
}

#[test]
fn rejected_credentials_are_inconclusive_for_401_and_403() {
    let (api, _) = api();
    let wrong = LagAwareOptions::new(|| Some(RestCredentials::new("admin@cluster.local", "nope")))
        .rest_endpoint(api.url())
        .trust_issuer_pem(api.certificate_pem().as_bytes())
        .unwrap();
    starts(&ask(wrong), "credentials: 401");
    api.set_auth_failure(Some(403));
    starts(&ask(trusting(&api)), "credentials: 403");
    api.set_auth_failure(Some(401));
    starts(&ask(trusting(&api)), "credentials: 401");
    starts(
        &ask(LagAwareOptions::new(|| None).rest_endpoint(api.url())),
        "credentials: the credentials callback gave none",
    );
}

#[test]
fn credentials_are_re_read_for_every_request_so_a_rotation_is_picked_up() {
    let (api, _) = api();
    let current = Arc::new(Mutex::new(api.credentials()));
    let calls = Arc::new(AtomicUsize::new(0));
    let (seen, counted) = (current.clone(), calls.clone());
    let probe = LagAware::new(
        LagAwareOptions::new(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            let (u, p) = seen.lock().clone();
            Some(RestCredentials::new(u, p))
        })
        .rest_endpoint(api.url())
        .trust_issuer_pem(api.certificate_pem().as_bytes())
        .unwrap(),
    );
    assert_eq!(probe.check_endpoint(&db(), TIMEOUT), LagOutcome::CaughtUp);
    assert_eq!(calls.load(Ordering::Relaxed), api.requests().len());
    api.set_credentials("admin@cluster.local", "rotated");
    starts(&probe.check_endpoint(&db(), TIMEOUT), "credentials: 401");
    *current.lock() = ("admin@cluster.local".into(), "rotated".into());
    assert_eq!(probe.check_endpoint(&db(), TIMEOUT), LagOutcome::CaughtUp);
}

#[test]
fn a_slow_management_plane_is_inconclusive_by_the_deadline() {
    let (api, _) = api();
    api.set_delay(Duration::from_secs(5));
    let started = Instant::now();
    let outcome = LagAware::new(trusting(&api)).check_endpoint(&db(), Duration::from_millis(300));
    starts(&outcome, "timeout:");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_server_that_never_finishes_the_handshake_is_inconclusive_by_the_deadline() {
    let (api, _) = api();
    // The redirect target accepts connections and never says a word.
    let mute = trusting(&api).rest_endpoint(api.redirect_target());
    let started = Instant::now();
    let outcome = LagAware::new(mute).check_endpoint(&db(), Duration::from_millis(300));
    starts(&outcome, "timeout:");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_redirect_is_reported_with_its_target_and_never_followed() {
    let (api, _) = api();
    api.redirect_to_unreachable(true);
    let started = Instant::now();
    let outcome = ask(trusting(&api));
    let target = format!("{}/v1/bdbs?fields=uid,endpoints", api.redirect_target());
    assert_eq!(
        outcome,
        LagOutcome::Redirect {
            status: 307,
            target: target.clone()
        }
    );
    starts(&outcome, &format!("redirect: 307 to {target}"));
    assert!(started.elapsed() < Duration::from_secs(2), "did not hang");
    assert_eq!(api.redirect_target_connections(), 0, "followed");
}

#[test]
fn malformed_bodies_are_inconclusive() {
    let (api, uid) = api();
    api.malformed_bodies(true);
    starts(
        &ask(trusting(&api)),
        "body: the database listing answer is not JSON",
    );
    api.set_unavailable(uid, true);
    let plain = trusting(&api)
        .mode(LagCheckMode::Availability)
        .database_id(uid);
    starts(
        &ask(plain),
        "body: unexpected status 503 to the availability request",
    );
}

#[test]
fn a_management_plane_that_is_down_is_inconclusive() {
    let (api, _) = api();
    let options = trusting(&api);
    api.shutdown();
    starts(&ask(options), "transport:");
    let empty = FakeRestApi::start().unwrap();
    let unknown = LagAware::new(trusting(&empty));
    starts(
        &unknown.check_endpoint(&Endpoint::new("redis-1.other", 1), TIMEOUT),
        "database: none of the 0 databases",
    );
    let underivable = LagAwareOptions::new(|| Some(RestCredentials::new("u", "p")));
    starts(
        &LagAware::new(underivable).check_endpoint(&Endpoint::new("127.0.0.1", 6379), TIMEOUT),
        "configuration: cannot derive the REST endpoint from host 127.0.0.1",
    );
}

#[test]
fn strict_mode_fails_and_records_unfiltered_reads_which_the_probe_never_makes() {
    let (api, uid) = api();
    let (user, password) = api.credentials();
    let raw = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::new_with_certs(&[
                    ureq::tls::Certificate::from_pem(api.certificate_pem().as_bytes()).unwrap(),
                ]))
                .build(),
        )
        .build()
        .new_agent();
    let auth = format!("Basic {}", base64(format!("{user}:{password}").as_bytes()));
    let get = |path: &str| {
        let mut r = raw
            .get(&format!("{}{path}", api.url()))
            .header("Authorization", &auth)
            .call()
            .unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    };
    assert_eq!(get("/v1/bdbs").0, 400, "strict: refused");
    api.set_strict(false);
    let (status, body) = get(&format!("/v1/bdbs/{uid}"));
    assert_eq!(status, 200);
    assert!(
        body.contains("secret-password"),
        "why reads must be filtered: {body}"
    );
    assert_eq!(
        api.unfiltered_reads(),
        ["/v1/bdbs", format!("/v1/bdbs/{uid}").as_str()]
    );
    // The probe, through every kind of question, never makes one.
    let probe = FakeRestApi::start().unwrap();
    let uid = probe.add_database(HOST, "127.0.0.1", 12000);
    for options in [
        trusting(&probe),
        trusting(&probe).mode(LagCheckMode::Availability),
        trusting(&probe).local_endpoint_form(true),
        trusting(&probe).database_id(uid),
    ] {
        assert_eq!(ask(options).result(), ProbeResult::Healthy);
    }
    assert!(probe.unfiltered_reads().is_empty());
}

#[test]
fn log_lines_say_exactly_why_and_never_hold_a_secret() {
    let (api, _) = api();
    api.set_credentials("admin@cluster.local", "Very-Secret-Password");
    let options = LagAwareOptions::new(|| {
        Some(RestCredentials::new(
            "admin@cluster.local",
            "Very-Secret-Password-wrong",
        ))
    })
    .rest_endpoint(api.url())
    .trust_issuer_pem(api.certificate_pem().as_bytes())
    .unwrap();
    let outcome = ask(options);
    let line = format!("lag-aware probe of {HOST}:12000: inconclusive: {outcome}");
    let logs = logged();
    assert!(
        logs.iter()
            .any(|l| l.starts_with("WARN") && l.ends_with(&line)),
        "{line}\n{logs:#?}"
    );
    // Once per change: the same outcome again is logged at debug level only.
    let probe = LagAware::new(
        LagAwareOptions::new(|| Some(RestCredentials::new("admin@cluster.local", "x")))
            .rest_endpoint(api.url())
            .trust_issuer_pem(api.certificate_pem().as_bytes())
            .unwrap(),
    );
    // An endpoint no other test uses (the 401 comes before discovery), so the count
    // is not disturbed by tests running beside this one.
    let lonely = Endpoint::new("redis-7777.once.local", 7777);
    for _ in 0..3 {
        probe.check_endpoint(&lonely, TIMEOUT);
    }
    let warnings = logged()
        .iter()
        .filter(|l| l.starts_with("WARN") && l.contains("redis-7777.once.local"))
        .count();
    assert_eq!(warnings, 1);
    let logs = logged();
    let encoded = base64(b"admin@cluster.local:Very-Secret-Password-wrong");
    for l in &logs {
        assert!(
            !l.contains("Very-Secret") && !l.contains(&encoded),
            "secret in {l}"
        );
    }
}

#[test]
fn pin_on_first_use_is_keyed_by_host() {
    let (api, _) = api();
    let pins = Arc::new(CertificatePins::new());
    let pinned = |api: &FakeRestApi| {
        let (user, password) = api.credentials();
        LagAwareOptions::new(move || Some(RestCredentials::new(user.clone(), password.clone())))
            .rest_endpoint(api.url())
            .pin_on_first_use(pins.clone())
    };
    assert_eq!(ask(pinned(&api)), LagOutcome::CaughtUp);
    assert_eq!(pins.pinned("127.0.0.1"), Some(api.certificate_der()));
    // Another certificate on the same host (another port): refused.
    let other = FakeRestApi::start().unwrap();
    other.add_database(HOST, "127.0.0.1", 12000);
    starts(
        &ask(pinned(&other)),
        "certificate: 127.0.0.1 presented another certificate",
    );
    assert!(pins.forget("127.0.0.1"));
    assert_eq!(ask(pinned(&other)), LagOutcome::CaughtUp);
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[(n >> (18 - 6 * i)) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}
