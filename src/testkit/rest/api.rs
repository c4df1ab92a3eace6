//! The routes of the fake Redis Enterprise REST API and the state behind them: what
//! each answer looks like, shaped after what the real API was measured to answer.

use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

/// The server's default lag tolerance when a request sets none (Redis Enterprise's
/// documented default).
const DEFAULT_TOLERANCE: Duration = Duration::from_millis(100);

/// One database of the fake cluster.
#[derive(Clone, Debug)]
pub(crate) struct Bdb {
    pub uid: u64,
    pub name: String,
    pub dns_name: String,
    pub addr: Vec<String>,
    pub port: u16,
    pub crdt: bool,
    pub available: bool,
    pub lag: Duration,
    /// Returned by unfiltered reads, as the real API does even to read-only roles.
    pub password: String,
}

/// The switches a test flips.
#[derive(Debug, Default)]
pub(crate) struct Switches {
    pub auth_failure: Option<u16>,
    pub delay: Duration,
    pub redirect: bool,
    pub malformed: bool,
    pub strict: bool,
}

/// Everything the routes read.
#[derive(Debug)]
pub(crate) struct ApiState {
    pub credentials: Mutex<(String, String)>,
    pub bdbs: Mutex<Vec<Bdb>>,
    pub switches: Mutex<Switches>,
    pub requests: Mutex<Vec<String>>,
    pub unfiltered: Mutex<Vec<String>>,
    /// Where a redirect points (a listener that accepts and never answers).
    pub redirect_base: String,
}

/// A parsed request: method, path, query pairs and the `Authorization` header.
#[derive(Debug, Default)]
pub(crate) struct Request {
    pub method: String,
    pub target: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub authorization: Option<String>,
}

impl Request {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An answer.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
}

fn respond(status: u16, body: Value) -> Response {
    Response {
        status,
        location: None,
        body: body.to_string(),
    }
}

fn error(status: u16, code: &str, description: &str) -> Response {
    respond(
        status,
        json!({"error_code": code, "description": description}),
    )
}

/// Answers one request (the delay is applied by the caller).
pub(crate) fn answer(state: &ApiState, req: &Request) -> Response {
    // Observability never includes the Authorization header.
    state
        .requests
        .lock()
        .push(format!("{} {}", req.method, req.target));
    let expected = {
        let (user, password) = &*state.credentials.lock();
        format!(
            "Basic {}",
            crate::availability::lag_aware::base64(format!("{user}:{password}").as_bytes())
        )
    };
    if req.authorization.as_deref() != Some(expected.as_str()) {
        return error(401, "unauthorized", "authentication required");
    }
    let switches = state.switches.lock();
    match switches.auth_failure {
        Some(403) => return error(403, "forbidden", "insufficient permissions"),
        Some(status) => return error(status, "unauthorized", "credentials expired"),
        None => {}
    }
    if switches.redirect {
        // What a non-master node answers: a redirect to the master's internal address.
        return Response {
            status: 307,
            location: Some(format!("{}{}", state.redirect_base, req.target)),
            body: String::new(),
        };
    }
    if req.method != "GET" {
        return error(405, "method_not_allowed", "only GET is served");
    }
    let malformed = switches.malformed;
    let strict = switches.strict;
    drop(switches);
    let segments: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["v1", "bdbs"] => read_bdbs(state, req, None, strict, malformed),
        ["v1", "bdbs", uid] => match uid.parse() {
            Ok(uid) => read_bdbs(state, req, Some(uid), strict, malformed),
            Err(_) => error(404, "bdb_not_found", "no such database"),
        },
        ["v1", "bdbs", uid, "availability"]
        | ["v1", "local", "bdbs", uid, "endpoint", "availability"] => {
            availability(state, req, uid, malformed)
        }
        _ => error(404, "not_found", "no such route"),
    }
}

/// `/v1/bdbs[/{uid}]?fields=…`: only the fields asked for; without `fields`, the whole
/// object, passwords included (recorded, and refused in strict mode).
fn read_bdbs(
    state: &ApiState,
    req: &Request,
    uid: Option<u64>,
    strict: bool,
    malformed: bool,
) -> Response {
    let fields: Option<Vec<&str>> = req
        .param("fields")
        .map(|f| f.split(',').filter(|s| !s.is_empty()).collect());
    if fields.is_none() {
        state.unfiltered.lock().push(req.target.clone());
        if strict {
            return error(
                400,
                "unfiltered_read",
                "strict fake: an unfiltered read returns database passwords",
            );
        }
    }
    if malformed {
        return Response {
            status: 200,
            location: None,
            body: r#"[{"uid": 1, "endpoints": [{"dns_name": "#.to_string(),
        };
    }
    let bdbs = state.bdbs.lock();
    let shape = |b: &Bdb| render(b, fields.as_deref());
    match uid {
        None => respond(200, Value::Array(bdbs.iter().map(shape).collect())),
        Some(uid) => match bdbs.iter().find(|b| b.uid == uid) {
            Some(b) => respond(200, shape(b)),
            None => error(404, "bdb_not_found", "no such database"),
        },
    }
}

fn render(b: &Bdb, fields: Option<&[&str]>) -> Value {
    let all = json!({
        "uid": b.uid,
        "name": b.name,
        "crdt": b.crdt,
        "status": "active",
        "port": b.port,
        "authentication_redis_pass": b.password,
        "endpoints": [{
            "uid": format!("{}:1", b.uid),
            "dns_name": b.dns_name,
            "addr": b.addr,
            "port": b.port,
            "addr_type": "external",
        }],
    });
    let Some(fields) = fields else { return all };
    let mut picked = Map::new();
    if let Value::Object(map) = all {
        for (k, v) in map {
            if fields.contains(&k.as_str()) {
                picked.insert(k, v);
            }
        }
    }
    Value::Object(picked)
}

/// `/availability`: 200 when available (and, asked with `extend_check=lag`, caught up
/// within the tolerance); otherwise 503 with the error code the real API sends, the
/// same for "behind" and for "not Active-Active".
fn availability(state: &ApiState, req: &Request, uid: &str, malformed: bool) -> Response {
    let Some(b) = uid
        .parse::<u64>()
        .ok()
        .and_then(|uid| state.bdbs.lock().iter().find(|b| b.uid == uid).cloned())
    else {
        return error(404, "bdb_not_found", "no such database");
    };
    let lag_question = req.param("extend_check") == Some("lag");
    let tolerance = req
        .param("availability_lag_tolerance_ms")
        .and_then(|t| t.parse().ok())
        .map_or(DEFAULT_TOLERANCE, Duration::from_millis);
    let failure = if !b.available {
        Some(("bdb_unavailable", "the database is not available"))
    } else if lag_question && !b.crdt {
        Some((
            "bdb_endpoint_unavailable",
            "lag check on a database that is not Active-Active",
        ))
    } else if lag_question && b.lag > tolerance {
        Some((
            "bdb_endpoint_unavailable",
            "replication lag over the tolerance",
        ))
    } else {
        None
    };
    match (failure, malformed) {
        (None, false) => respond(200, json!({})),
        (None, true) => Response {
            status: 200,
            location: None,
            body: "<html>OK".to_string(),
        },
        (Some(_), true) => Response {
            status: 503,
            location: None,
            body: "<html>Service Unavailable".to_string(),
        },
        (Some((code, description)), false) => error(503, code, description),
    }
}

/// Parses `GET /path?query HTTP/1.1` and its headers (no body: only GET is served).
pub(crate) fn parse(head: &str) -> Option<Request> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    let authorization = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_string());
    Some(Request {
        method,
        path: path.to_string(),
        target: target.clone(),
        query,
        authorization,
    })
}
