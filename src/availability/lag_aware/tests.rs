//! The decision table with scripted answers: which requests are made, in which order,
//! and what each answer makes of the probe. No network.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::decide::{check, Answer, Cache, Failure, LagOutcome, Rest};
use super::options::{LagAwareOptions, LagCheckMode, RestCredentials};
use crate::availability::ProbeResult;

/// Answers in order, and remembers what was asked.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    asked: Mutex<Vec<String>>,
}

impl Script {
    fn new(answers: Vec<Answer>) -> Script {
        Script {
            answers: Mutex::new(answers.into()),
            asked: Mutex::new(Vec::new()),
        }
    }
    fn asked(&self) -> Vec<String> {
        self.asked.lock().clone()
    }
}

impl Rest for Script {
    fn get(&self, base: &str, path: &str, c: &RestCredentials, _: Instant) -> Answer {
        assert_eq!(base, "https://c1.example:9443");
        assert_eq!(c.user, "viewer");
        self.asked.lock().push(path.to_string());
        self.answers
            .lock()
            .pop_front()
            .unwrap_or(Answer::Failed(Failure::Transport("script ran out".into())))
    }
}

fn ok(body: &str) -> Answer {
    status(200, body)
}

fn status(code: u16, body: &str) -> Answer {
    Answer::Status {
        code,
        location: None,
        body: body.as_bytes().to_vec(),
    }
}

const LISTING: &str = r#"[{"uid":7,"endpoints":[{"dns_name":"redis-12000.c1.example","addr":["10.0.0.5"],"port":12000}]}]"#;
const BEHIND: &str = r#"{"error_code":"bdb_endpoint_unavailable","description":"lag"}"#;

fn options() -> LagAwareOptions {
    LagAwareOptions::new(|| Some(RestCredentials::new("viewer", "pw")))
}

fn run(options: &LagAwareOptions, script: &Script, cache: &Cache) -> LagOutcome {
    check(
        script,
        options,
        cache,
        "https://c1.example:9443",
        ("redis-12000.c1.example", 12000),
        Instant::now() + Duration::from_secs(5),
    )
}

fn once(options: &LagAwareOptions, answers: Vec<Answer>) -> (LagOutcome, Vec<String>) {
    let script = Script::new(answers);
    let outcome = run(options, &script, &Cache::default());
    (outcome, script.asked())
}

#[test]
fn active_active_and_caught_up_is_healthy_after_filtered_discovery() {
    let (o, asked) = once(
        &options(),
        vec![ok(LISTING), ok(r#"{"crdt":true}"#), ok("{}")],
    );
    assert_eq!(o, LagOutcome::CaughtUp);
    assert_eq!(o.result(), ProbeResult::Healthy);
    assert_eq!(
        asked,
        [
            "/v1/bdbs?fields=uid,endpoints",
            "/v1/bdbs/7?fields=crdt",
            "/v1/bdbs/7/availability?extend_check=lag"
        ]
    );
}

#[test]
fn behind_is_unhealthy_and_the_tolerance_is_sent_only_when_set() {
    let opts = options().lag_tolerance(Duration::from_millis(250));
    let (o, asked) = once(
        &opts,
        vec![ok(LISTING), ok(r#"{"crdt":true}"#), status(503, BEHIND)],
    );
    assert_eq!(
        o,
        LagOutcome::Behind {
            error_code: "bdb_endpoint_unavailable".into()
        }
    );
    assert_eq!(o.result(), ProbeResult::Unhealthy);
    assert_eq!(
        asked[2],
        "/v1/bdbs/7/availability?extend_check=lag&availability_lag_tolerance_ms=250"
    );
}

#[test]
fn a_database_that_is_not_active_active_gets_the_plain_question() {
    let (o, asked) = once(
        &options(),
        vec![ok(LISTING), ok(r#"{"crdt":false}"#), ok("")],
    );
    assert_eq!(
        o,
        LagOutcome::Available {
            active_active: Some(false)
        }
    );
    assert_eq!(asked[2], "/v1/bdbs/7/availability");
    let (o, _) = once(
        &options(),
        vec![ok(LISTING), ok(r#"{"crdt":false}"#), status(503, BEHIND)],
    );
    assert_eq!(o.result(), ProbeResult::Unhealthy);
    assert!(matches!(o, LagOutcome::Unavailable { .. }));
}

#[test]
fn availability_mode_skips_the_crdt_lookup_and_a_given_id_skips_discovery() {
    let opts = options().mode(LagCheckMode::Availability).database_id(9);
    let (o, asked) = once(&opts, vec![ok("{}")]);
    assert_eq!(
        o,
        LagOutcome::Available {
            active_active: None
        }
    );
    assert_eq!(asked, ["/v1/bdbs/9/availability"]);
    let local = options().database_id(9).local_endpoint_form(true);
    let (_, asked) = once(&local, vec![ok(r#"{"crdt":true}"#), ok("{}")]);
    assert_eq!(
        asked,
        [
            "/v1/bdbs/9?fields=crdt",
            "/v1/local/bdbs/9/endpoint/availability?extend_check=lag"
        ]
    );
}

#[test]
fn discovery_and_crdt_are_remembered_and_a_404_forgets_them() {
    let opts = options();
    let cache = Cache::default();
    let first = Script::new(vec![ok(LISTING), ok(r#"{"crdt":true}"#), ok("{}")]);
    assert_eq!(run(&opts, &first, &cache), LagOutcome::CaughtUp);
    let second = Script::new(vec![ok("{}")]);
    assert_eq!(run(&opts, &second, &cache), LagOutcome::CaughtUp);
    assert_eq!(second.asked(), ["/v1/bdbs/7/availability?extend_check=lag"]);
    let gone = Script::new(vec![status(404, r#"{"error_code":"bdb_not_found"}"#)]);
    let o = run(&opts, &gone, &cache);
    assert!(matches!(o, LagOutcome::DatabaseNotFound(_)), "{o:?}");
    assert_eq!(o.result(), ProbeResult::Inconclusive);
    let again = Script::new(vec![ok(LISTING), ok(r#"{"crdt":true}"#), ok("{}")]);
    assert_eq!(run(&opts, &again, &cache), LagOutcome::CaughtUp);
    assert_eq!(again.asked().len(), 3, "rediscovered");
}

#[test]
fn every_could_not_ask_is_inconclusive_and_says_why() {
    let redirect = Answer::Status {
        code: 307,
        location: Some("https://10.0.0.9:9443/v1/bdbs?fields=uid,endpoints".into()),
        body: Vec::new(),
    };
    let cases: Vec<(Vec<Answer>, &str)> = vec![
        (vec![status(401, "")], "credentials: 401"),
        (vec![status(403, "")], "credentials: 403"),
        (
            vec![redirect],
            "redirect: 307 to https://10.0.0.9:9443/v1/bdbs",
        ),
        (
            vec![Answer::Failed(Failure::Timeout)],
            "timeout: no answer to the database listing",
        ),
        (
            vec![Answer::Failed(Failure::Certificate("not trusted".into()))],
            "certificate: not trusted",
        ),
        (
            vec![Answer::Failed(Failure::Transport("I/O: refused".into()))],
            "transport: I/O: refused",
        ),
        (
            vec![ok("[{")],
            "body: the database listing answer is not JSON",
        ),
        (vec![ok("[]")], "database: none of the 0 databases"),
        (
            vec![ok(LISTING), ok(r#"{"uid":7}"#)],
            "body: the database answer has no boolean crdt",
        ),
        (
            vec![ok(LISTING), status(500, "")],
            "body: unexpected status 500 to the Active-Active",
        ),
        (
            vec![ok(LISTING), ok(r#"{"crdt":true}"#), status(503, "<html>")],
            "body: unexpected status 503 to the availability request (6 bytes, no error_code)",
        ),
        (
            vec![ok(LISTING), ok(r#"{"crdt":true}"#), status(500, BEHIND)],
            "body: unexpected status 500",
        ),
        (
            vec![ok(LISTING), ok(r#"{"crdt":true}"#), status(429, "")],
            "rejected: 429 to the availability question (no error_code)",
        ),
        // A 4xx is the cluster refusing the question, whatever error_code it carries:
        // only a 503 says the database is not available.
        (
            vec![ok(LISTING), ok(r#"{"crdt":true}"#), status(400, BEHIND)],
            "rejected: 400 to the availability question (bdb_endpoint_unavailable)",
        ),
        (
            vec![
                ok(LISTING),
                ok(r#"{"crdt":false}"#),
                status(422, r#"{"error_code":"invalid_parameter"}"#),
            ],
            "rejected: 422 to the availability question (invalid_parameter)",
        ),
    ];
    for (answers, why) in cases {
        let (o, _) = once(&options(), answers);
        assert_eq!(o.result(), ProbeResult::Inconclusive, "{o:?}");
        let text = o.to_string();
        assert!(text.starts_with(why), "{text:?} should start with {why:?}");
        assert!(!text.contains("pw"), "no secret in {text}");
    }
}

#[test]
fn credentials_are_read_before_every_request_and_none_is_inconclusive() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let opts = LagAwareOptions::new(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        Some(RestCredentials::new("viewer", "pw"))
    });
    let (o, _) = once(&opts, vec![ok(LISTING), ok(r#"{"crdt":true}"#), ok("{}")]);
    assert_eq!(o, LagOutcome::CaughtUp);
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    let none = LagAwareOptions::new(|| None);
    let (o, asked) = once(&none, vec![]);
    assert!(o
        .to_string()
        .starts_with("credentials: the credentials callback gave none"));
    assert!(asked.is_empty(), "nothing is sent without credentials");
}

#[test]
fn a_spent_deadline_sends_nothing() {
    let script = Script::new(vec![ok(LISTING)]);
    let o = check(
        &script,
        &options(),
        &Cache::default(),
        "https://c1.example:9443",
        ("redis-12000.c1.example", 12000),
        Instant::now(),
    );
    assert!(matches!(o, LagOutcome::Timeout(_)), "{o:?}");
    assert!(script.asked().is_empty());
}
