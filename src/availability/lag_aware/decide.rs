//! The probe's decisions, apart from the wire: which requests to make, in which order,
//! and what each answer means. Tested with scripted answers; `http.rs` does the IO.
//!
//! Could-not-ask is always Inconclusive, never Unhealthy: a management-plane problem
//! (credentials, certificate, redirect, timeout, an unreadable answer) must not fail
//! anything over.

use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use super::endpoint::{crdt_of, discover, Discovery};
use super::options::{LagAwareOptions, LagCheckMode, RestCredentials};
use crate::availability::ProbeResult;

/// What one REST call came to.
#[derive(Debug)]
pub(crate) enum Answer {
    /// An HTTP answer (redirects are returned, never followed).
    Status {
        code: u16,
        location: Option<String>,
        body: Vec<u8>,
    },
    /// No HTTP answer.
    Failed(Failure),
}

/// Why a call got no HTTP answer.
#[derive(Debug)]
pub(crate) enum Failure {
    Timeout,
    Certificate(String),
    Transport(String),
}

/// The wire: one `GET` of `path_and_query` under `base`, by `deadline`.
pub(crate) trait Rest {
    fn get(
        &self,
        base: &str,
        path_and_query: &str,
        credentials: &RestCredentials,
        deadline: Instant,
    ) -> Answer;
}

/// What a lag-aware probe found, and so why it reported what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LagOutcome {
    /// 200 to the lag question: available and caught up (Healthy).
    CaughtUp,
    /// 200 to the plain availability question (Healthy): asked in
    /// [`LagCheckMode::Availability`], or of a database that is not Active-Active.
    Available {
        /// Whether the database is Active-Active (`None`: not asked).
        active_active: Option<bool>,
    },
    /// The cluster answered the lag question: not available or behind (Unhealthy).
    /// The same `error_code` (`bdb_endpoint_unavailable`) means both.
    Behind {
        /// The cluster's `error_code`.
        error_code: String,
    },
    /// The cluster answered the plain question: not available (Unhealthy).
    Unavailable {
        /// The cluster's `error_code`.
        error_code: String,
    },
    /// Could not ask: no credentials, or the cluster refused them (401/403).
    Credentials(String),
    /// Could not ask: the certificate was not trusted.
    Certificate(String),
    /// Could not ask: the cluster refused the question itself with a 4xx (other than
    /// 401/403, which are [`Credentials`](Self::Credentials), and 404, which is
    /// [`DatabaseNotFound`](Self::DatabaseNotFound)): a parameter it does not take,
    /// a cluster too old for the lag question, too many requests. That says nothing
    /// of the database, so it must not fail it over, even with an `error_code`: only
    /// a 503 is the cluster saying "not available" or "behind".
    Rejected {
        /// The status.
        status: u16,
        /// The cluster's `error_code`, when its answer carried one.
        error_code: Option<String>,
    },
    /// Could not ask: a redirect (never followed), with its target.
    Redirect {
        /// The status.
        status: u16,
        /// Where it pointed (`Location`).
        target: String,
    },
    /// Could not ask: no answer by the deadline.
    Timeout(String),
    /// Could not ask: an answer that could not be understood.
    Body(String),
    /// Could not ask: no database has the member's endpoint, or the id is unknown.
    DatabaseNotFound(String),
    /// Could not ask: no connection, or it broke.
    Transport(String),
    /// Could not ask: the options cannot work for this member.
    Config(String),
}

impl LagOutcome {
    /// The probe result this outcome stands for.
    pub fn result(&self) -> ProbeResult {
        match self {
            LagOutcome::CaughtUp | LagOutcome::Available { .. } => ProbeResult::Healthy,
            LagOutcome::Behind { .. } | LagOutcome::Unavailable { .. } => ProbeResult::Unhealthy,
            _ => ProbeResult::Inconclusive,
        }
    }
}

impl fmt::Display for LagOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LagOutcome::CaughtUp => f.write_str("available and caught up"),
            LagOutcome::Available {
                active_active: Some(false),
            } => f.write_str("available (not Active-Active: no lag question asked)"),
            LagOutcome::Available { .. } => f.write_str("available (lag not asked)"),
            LagOutcome::Behind { error_code } => {
                write!(f, "not caught up or not available ({error_code})")
            }
            LagOutcome::Unavailable { error_code } => write!(f, "not available ({error_code})"),
            LagOutcome::Credentials(m) => write!(f, "credentials: {m}"),
            LagOutcome::Certificate(m) => write!(f, "certificate: {m}"),
            LagOutcome::Rejected { status, error_code } => write!(
                f,
                "rejected: {status} to the availability question ({}): the cluster refused \
                 the question, which says nothing of the database",
                error_code.as_deref().unwrap_or("no error_code")
            ),
            LagOutcome::Redirect { status, target } => write!(
                f,
                "redirect: {status} to {target}, not followed (only the cluster's master \
                 answers every route; point rest_endpoint at the cluster name)"
            ),
            LagOutcome::Timeout(m) => write!(f, "timeout: {m}"),
            LagOutcome::Body(m) => write!(f, "body: {m}"),
            LagOutcome::DatabaseNotFound(m) => write!(f, "database: {m}"),
            LagOutcome::Transport(m) => write!(f, "transport: {m}"),
            LagOutcome::Config(m) => write!(f, "configuration: {m}"),
        }
    }
}

/// What discovery learnt of one endpoint: the uid and, once asked, Active-Active.
/// Neither changes for the life of a database; a 404 forgets them (recreated database).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Known {
    uid: Option<u64>,
    crdt: Option<bool>,
}

/// Discovery results per (host, port).
pub(crate) type Cache = Mutex<HashMap<(String, u16), Known>>;

/// One probe of the database at `host:port` through the REST API at `base`.
pub(crate) fn check(
    rest: &dyn Rest,
    options: &LagAwareOptions,
    cache: &Cache,
    base: &str,
    (host, port): (&str, u16),
    deadline: Instant,
) -> LagOutcome {
    let key = (host.to_ascii_lowercase(), port);
    let mut known = cache.lock().get(&key).copied().unwrap_or_default();
    let call = |path: &str, what: &str| -> Result<(u16, Vec<u8>), LagOutcome> {
        let Some(credentials) = (options.credentials)() else {
            return Err(LagOutcome::Credentials(
                "the credentials callback gave none".into(),
            ));
        };
        if Instant::now() >= deadline {
            return Err(LagOutcome::Timeout(format!(
                "no time left for the {what} request"
            )));
        }
        classify(rest.get(base, path, &credentials, deadline), what)
    };
    let uid = match options.database_id.or(known.uid) {
        Some(uid) => uid,
        None => {
            let (code, body) = match call("/v1/bdbs?fields=uid,endpoints", "database listing") {
                Ok(a) => a,
                Err(o) => return o,
            };
            if code != 200 {
                return unexpected(code, &body, "database listing");
            }
            let listing = match json(&body, "database listing") {
                Ok(v) => v,
                Err(o) => return o,
            };
            match discover(&listing, host, port) {
                Ok(Discovery::Found(uid)) => uid,
                Ok(Discovery::NotFound { databases }) => {
                    return LagOutcome::DatabaseNotFound(format!(
                        "none of the {databases} databases has endpoint {host}:{port}"
                    ))
                }
                Ok(Discovery::Ambiguous(uids)) => {
                    return LagOutcome::DatabaseNotFound(format!(
                        "databases {uids:?} all have endpoint {host}:{port}; set database_id"
                    ))
                }
                Err(e) => return LagOutcome::Body(e),
            }
        }
    };
    known.uid = Some(uid);
    let lag = options.mode == LagCheckMode::Lag;
    if lag && known.crdt.is_none() {
        let path = format!("/v1/bdbs/{uid}?fields=crdt");
        let (code, body) = match call(&path, "Active-Active lookup") {
            Ok(a) => a,
            Err(o) => return o,
        };
        if code == 404 {
            cache.lock().remove(&key);
            return LagOutcome::DatabaseNotFound(format!("database {uid} is unknown (404)"));
        }
        if code != 200 {
            return unexpected(code, &body, "Active-Active lookup");
        }
        match json(&body, "Active-Active lookup")
            .and_then(|v| crdt_of(&v).map_err(LagOutcome::Body))
        {
            Ok(crdt) => known.crdt = Some(crdt),
            Err(o) => return o,
        }
    }
    cache.lock().insert(key.clone(), known);
    let ask_lag = lag && known.crdt == Some(true);
    let path = availability_path(options, uid, ask_lag);
    let (code, body) = match call(&path, "availability") {
        Ok(a) => a,
        Err(o) => return o,
    };
    match code {
        200..=299 if ask_lag => LagOutcome::CaughtUp,
        200..=299 => LagOutcome::Available {
            active_active: known.crdt,
        },
        404 => {
            cache.lock().remove(&key);
            LagOutcome::DatabaseNotFound(format!("database {uid} is unknown (404)"))
        }
        400..=499 => LagOutcome::Rejected {
            status: code,
            error_code: error_code(&body),
        },
        503 => match error_code(&body) {
            Some(error_code) if ask_lag => LagOutcome::Behind { error_code },
            Some(error_code) => LagOutcome::Unavailable { error_code },
            None => unexpected(code, &body, "availability"),
        },
        _ => unexpected(code, &body, "availability"),
    }
}

/// The availability route, with the lag question and tolerance when asked.
pub(crate) fn availability_path(options: &LagAwareOptions, uid: u64, lag: bool) -> String {
    let mut path = if options.local_form {
        format!("/v1/local/bdbs/{uid}/endpoint/availability")
    } else {
        format!("/v1/bdbs/{uid}/availability")
    };
    if lag {
        path.push_str("?extend_check=lag");
        if let Some(t) = options.lag_tolerance {
            path.push_str(&format!("&availability_lag_tolerance_ms={}", t.as_millis()));
        }
    }
    path
}

fn error_code(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("error_code")?.as_str().map(str::to_string)
}

/// Maps what every call has in common: no answer, a redirect, refused credentials.
fn classify(answer: Answer, what: &str) -> Result<(u16, Vec<u8>), LagOutcome> {
    match answer {
        Answer::Failed(Failure::Timeout) => Err(LagOutcome::Timeout(format!(
            "no answer to the {what} request by the deadline"
        ))),
        Answer::Failed(Failure::Certificate(m)) => Err(LagOutcome::Certificate(m)),
        Answer::Failed(Failure::Transport(m)) => Err(LagOutcome::Transport(m)),
        Answer::Status { code, location, .. } if (300..400).contains(&code) => {
            Err(LagOutcome::Redirect {
                status: code,
                target: location.unwrap_or_else(|| "(no Location header)".to_string()),
            })
        }
        Answer::Status { code: 401, .. } => Err(LagOutcome::Credentials(format!(
            "401 to the {what} request: the cluster rejected the user or password"
        ))),
        Answer::Status { code: 403, .. } => Err(LagOutcome::Credentials(format!(
            "403 to the {what} request: the user's role may not make it"
        ))),
        Answer::Status { code, body, .. } => Ok((code, body)),
    }
}

fn json(body: &[u8], what: &str) -> Result<Value, LagOutcome> {
    serde_json::from_slice(body)
        .map_err(|e| LagOutcome::Body(format!("the {what} answer is not JSON ({e})")))
}

fn unexpected(code: u16, body: &[u8], what: &str) -> LagOutcome {
    let detail = match error_code(body) {
        Some(c) => format!("error_code {c}"),
        None => format!("{} bytes, no error_code", body.len()),
    };
    LagOutcome::Body(format!(
        "unexpected status {code} to the {what} request ({detail})"
    ))
}

/// A deadline `timeout` from now (saturating).
pub(crate) fn deadline(timeout: Duration) -> Instant {
    crate::clock::deadline_after(Instant::now(), timeout)
}
