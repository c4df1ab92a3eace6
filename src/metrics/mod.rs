//! Metrics for operators: counters, gauges and histograms through the
//! [`metrics`](https://docs.rs/metrics) facade, behind the crate's `metrics` feature
//! (off by default). Install any recorder (a Prometheus or StatsD exporter,
//! `metrics-util`'s `DebuggingRecorder`) and the client reports to it; without one, the
//! facade discards everything.
//!
//! Names follow the OpenTelemetry database-client semantic conventions where they
//! apply (`db.client.operation.duration`, `db.client.connection.*`, the
//! `db.system.name`, `db.operation.name`, `error.type` and `server.*` attributes); what
//! only this client has (reconnects, breakers, failovers, maintenance) is under
//! `resilient_redis.`. [`CATALOGUE`] declares every metric once (name, kind, unit,
//! labels, description); the repository's `docs/metrics.md` lists them with the values
//! each label takes.
//!
//! ```
//! use resilient_redis::metrics::{MetricKind, CATALOGUE, OPERATION_DURATION};
//! let duration = CATALOGUE.iter().find(|m| m.name == OPERATION_DURATION).unwrap();
//! assert_eq!(duration.kind, MetricKind::Histogram);
//! // Descriptions and units go to the recorder installed now (every client's
//! // construction does this too): call it after installing a recorder late.
//! resilient_redis::metrics::describe();
//! ```
//!
//! Owns: the metrics' names, labels and the functions the rest of the crate records
//! through (one small function per event, called where the event happens). Must never:
//! put a key, a command argument, a password, a URL or anything else unbounded or
//! secret in a label value (endpoints are `host` and `port`, member names are the
//! user's own labels, command names are cut to their first word and checked); record
//! on a caller's path beyond one measurement per completed call (and, only while its
//! server is down, the backlog's wait); cost anything with the feature
//! off: every recording function is then an empty `#[inline(always)]` body and the
//! values callers hold (`Stopwatch`, `BacklogWait`) are zero-sized, so nothing is
//! timed, counted or allocated.

mod calls;
mod connections;
mod group;
mod maintenance;

#[cfg(feature = "metrics")]
use std::borrow::Cow;

pub(crate) use calls::{operation_finished, Stopwatch};
pub(crate) use connections::{
    backlog_timed_out, breaker_tripped, connection_created, connection_failed, reconnected,
    BacklogWait,
};
pub(crate) use group::{active_member_changed, check_completed, member_health_changed};
pub(crate) use maintenance::{handoff_finished, notification_received, relaxed_window_entered};

/// Duration of one operation (a command, with its retries; a batch or a transaction as
/// one), successful or not. OpenTelemetry's `db.client.operation.duration`.
pub const OPERATION_DURATION: &str = "db.client.operation.duration";
/// Time to open a connection (socket, TLS, handshake), for every connection opened.
pub const CONNECTION_CREATE_TIME: &str = "db.client.connection.create_time";
/// Callers waiting in a server's backlog for its connection to come back.
pub const CONNECTION_PENDING_REQUESTS: &str = "db.client.connection.pending_requests";
/// Callers whose deadline passed while they waited in the backlog.
pub const CONNECTION_TIMEOUTS: &str = "db.client.connection.timeouts";
/// Reconnect attempts of a connection that had been up, by outcome.
pub const RECONNECTS: &str = "resilient_redis.client.reconnects";
/// Connections lost, by why (a circuit breaker and a maintenance handoff included).
pub const CONNECTION_FAILURES: &str = "resilient_redis.client.connection.failures";
/// Circuit breakers that tripped (each closed its connection).
pub const BREAKER_TRIPS: &str = "resilient_redis.client.breaker.trips";
/// Changes of a group's active member, by reason.
pub const ACTIVE_MEMBER_CHANGES: &str = "resilient_redis.group.active_member.changes";
/// 1 for the member a group serves from, 0 for a member that stopped serving.
pub const MEMBER_ACTIVE: &str = "resilient_redis.group.member.active";
/// A member taken out of rotation or put back.
pub const MEMBER_HEALTH_CHANGES: &str = "resilient_redis.group.member.health_changes";
/// Verdicts of health checks and failback checks.
pub const CHECKS: &str = "resilient_redis.group.checks";
/// Maintenance notifications received, by kind.
pub const NOTIFICATIONS: &str = "resilient_redis.maintenance.notifications";
/// A server's timeouts entering a relaxed state (a window opening, or its tail).
pub const RELAXED_WINDOWS: &str = "resilient_redis.maintenance.relaxed_windows";
/// Handoffs after a `MOVING` or a `MIGRATED`, by outcome.
pub const HANDOFFS: &str = "resilient_redis.maintenance.handoffs";
/// Time from a `MOVING` or `MIGRATED` to the end of its handoff.
pub const HANDOFF_DURATION: &str = "resilient_redis.maintenance.handoff.duration";

/// The label keys (attribute names). Values are bounded and never secret: see each.
pub mod label {
    /// Always `redis`.
    pub const DB_SYSTEM_NAME: &str = "db.system.name";
    /// The command's name, uppercase, its first word only (`GET`, `CLIENT`); `BATCH`
    /// for a pipelined batch, `MULTI` for a transaction; `OTHER` for a name that is not
    /// a plain word of at most 32 characters.
    pub const DB_OPERATION_NAME: &str = "db.operation.name";
    /// On failure only: the [`ErrorKind`](crate::ErrorKind) variant (`Timeout`,
    /// `ConnectionClosed`, `WrongType`, ...).
    pub const ERROR_TYPE: &str = "error.type";
    /// The server's host name or address, as configured or discovered (never a URL).
    pub const SERVER_ADDRESS: &str = "server.address";
    /// The server's port.
    pub const SERVER_PORT: &str = "server.port";
    /// `host:port` of the server (one multiplexed connection per server: its "pool").
    pub const POOL_NAME: &str = "db.client.connection.pool.name";
    /// Reconnects: `ok` or `error`. Handoffs: how the handoff ended (`StepSideways`,
    /// `RecordMoved`, `StillStale`, `ConnectTo`, `Nothing`, `NotConnected`,
    /// `NoLongerAdvertised`, `StillAdvertised`, `Cancelled`).
    pub const OUTCOME: &str = "outcome";
    /// The [`FailureKind`](crate::FailureKind) variant (`SocketClosed`, `Timeout`,
    /// `CircuitBreaker`, `MaintenanceHandoff`, ...).
    pub const FAILURE: &str = "failure";
    /// A group member's name; `none` when there is none.
    pub const MEMBER: &str = "member";
    /// The member that served before a change; `none` at the start.
    pub const FROM: &str = "from";
    /// The member that serves after a change; `none` when no member is available.
    pub const TO: &str = "to";
    /// The [`ChangeReason`](crate::availability::ChangeReason) variant.
    pub const REASON: &str = "reason";
    /// `true` when the member was put back, `false` when taken out.
    pub const HEALTHY: &str = "healthy";
    /// `health` or `failback`.
    pub const CHECK: &str = "check";
    /// The [`ProbeResult`](crate::availability::ProbeResult) variant: `Healthy`,
    /// `Unhealthy` or `Inconclusive`.
    pub const VERDICT: &str = "verdict";
    /// The notification as servers send it: `MOVING`, `MIGRATING`, `MIGRATED`,
    /// `FAILING_OVER`, `FAILED_OVER`, `SMIGRATING`, `SMIGRATED`.
    pub const KIND: &str = "kind";
    /// The [`MaintenanceKind`](crate::MaintenanceKind) put in force: `Moving`,
    /// `Migrating`, `FailingOver`, `SlotMigrating` or `Settling`.
    pub const MAINTENANCE: &str = "maintenance";
    /// What prompted a handoff: `MOVING`, `MIGRATED` or `FAILED_OVER`.
    pub const TRIGGER: &str = "trigger";
    /// `done` (the connections moved), `failed` (the new connection could not be
    /// opened; the old one was kept) or `none` (nothing to move).
    pub const RECYCLE: &str = "recycle";
}

/// What kind of instrument a metric is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricKind {
    /// Only goes up.
    Counter,
    /// Goes up and down (an up-down counter in OpenTelemetry's terms).
    Gauge,
    /// A distribution of measurements.
    Histogram,
}

/// The unit of a metric's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricUnit {
    /// Seconds (durations, as OpenTelemetry asks).
    Seconds,
    /// A count of things.
    Count,
}

/// One metric, declared once: what [`describe`] tells the recorder and what
/// `docs/metrics.md` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metric {
    /// The name.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// The unit of its values.
    pub unit: MetricUnit,
    /// The label keys it may carry (see [`label`]).
    pub labels: &'static [&'static str],
    /// What it measures and when it moves.
    pub description: &'static str,
}

use label::*;

const SERVER: [&str; 2] = [SERVER_ADDRESS, SERVER_PORT];

/// Every metric the client records.
pub const CATALOGUE: &[Metric] = &[
    Metric {
        name: OPERATION_DURATION,
        kind: MetricKind::Histogram,
        unit: MetricUnit::Seconds,
        labels: &[DB_SYSTEM_NAME, DB_OPERATION_NAME, ERROR_TYPE],
        description: "Duration of one operation (a command with its retries, a batch, a \
                      transaction), recorded when it completes; error.type on failure.",
    },
    Metric {
        name: CONNECTION_CREATE_TIME,
        kind: MetricKind::Histogram,
        unit: MetricUnit::Seconds,
        labels: &[POOL_NAME, SERVER[0], SERVER[1]],
        description: "Time to open a connection: socket, TLS and handshake.",
    },
    Metric {
        name: CONNECTION_PENDING_REQUESTS,
        kind: MetricKind::Gauge,
        unit: MetricUnit::Count,
        labels: &[POOL_NAME, SERVER[0], SERVER[1]],
        description: "Callers waiting in a server's backlog for its connection to come back.",
    },
    Metric {
        name: CONNECTION_TIMEOUTS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[POOL_NAME, SERVER[0], SERVER[1]],
        description: "Callers whose deadline passed while they waited in the backlog.",
    },
    Metric {
        name: RECONNECTS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[SERVER[0], SERVER[1], OUTCOME],
        description: "Reconnect attempts of a connection that had been up.",
    },
    Metric {
        name: CONNECTION_FAILURES,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[SERVER[0], SERVER[1], FAILURE],
        description: "Connections lost (closed by the client on purpose: not counted).",
    },
    Metric {
        name: BREAKER_TRIPS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[SERVER[0], SERVER[1]],
        description: "Circuit breakers that tripped and closed their connection.",
    },
    Metric {
        name: ACTIVE_MEMBER_CHANGES,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[FROM, TO, REASON],
        description: "Changes of a group's active member (the first choice included).",
    },
    Metric {
        name: MEMBER_ACTIVE,
        kind: MetricKind::Gauge,
        unit: MetricUnit::Count,
        labels: &[MEMBER],
        description: "1 for the member a group serves from, 0 once it stopped serving.",
    },
    Metric {
        name: MEMBER_HEALTH_CHANGES,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[MEMBER, HEALTHY],
        description: "A member taken out of rotation (healthy=false) or put back (true).",
    },
    Metric {
        name: CHECKS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[MEMBER, CHECK, VERDICT],
        description: "Verdicts of health checks and failback checks, one per check run.",
    },
    Metric {
        name: NOTIFICATIONS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[SERVER[0], SERVER[1], KIND],
        description: "Maintenance notifications received, once per server and event \
                      (copies on a server's other connections and replays not counted).",
    },
    Metric {
        name: RELAXED_WINDOWS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[SERVER[0], SERVER[1], MAINTENANCE],
        description: "A server's timeouts entering a relaxed state: a window opening \
                      (or changing kind), or its tail after a closing notification.",
    },
    Metric {
        name: HANDOFFS,
        kind: MetricKind::Counter,
        unit: MetricUnit::Count,
        labels: &[SERVER[0], SERVER[1], TRIGGER, OUTCOME, RECYCLE],
        description: "Handoffs after a MOVING or a MIGRATED, by how they ended.",
    },
    Metric {
        name: HANDOFF_DURATION,
        kind: MetricKind::Histogram,
        unit: MetricUnit::Seconds,
        labels: &[SERVER[0], SERVER[1], TRIGGER, OUTCOME],
        description: "Time from the notification to the end of its handoff.",
    },
];

/// Describes every metric (unit and description) to the recorder installed now.
///
/// Every `Client` (each member of a group too) calls it when it is built; call it
/// yourself after installing a recorder later than that. Without the `metrics`
/// feature it does nothing.
pub fn describe() {
    #[cfg(feature = "metrics")]
    for m in CATALOGUE {
        let unit = match m.unit {
            MetricUnit::Seconds => ::metrics::Unit::Seconds,
            MetricUnit::Count => ::metrics::Unit::Count,
        };
        match m.kind {
            MetricKind::Counter => ::metrics::describe_counter!(m.name, unit, m.description),
            MetricKind::Gauge => ::metrics::describe_gauge!(m.name, unit, m.description),
            MetricKind::Histogram => {
                ::metrics::describe_histogram!(m.name, unit, m.description)
            }
        }
    }
}

/// The `server.address` and `server.port` labels.
#[cfg(feature = "metrics")]
fn server_labels(host: &str, port: u16) -> Vec<::metrics::Label> {
    vec![
        ::metrics::Label::new(SERVER_ADDRESS, host.to_string()),
        ::metrics::Label::new(SERVER_PORT, port.to_string()),
    ]
}

/// `host:port`, an IPv6 literal in brackets (as `Endpoint` prints it).
#[cfg(feature = "metrics")]
fn pool_name(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A label value that is `none` when absent.
#[cfg(feature = "metrics")]
fn or_none(value: Option<&str>) -> Cow<'static, str> {
    value.map_or(Cow::Borrowed("none"), |v| Cow::Owned(v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_declared_once_with_known_labels() {
        let mut names: Vec<&str> = CATALOGUE.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CATALOGUE.len(), "a name declared twice");
        for m in CATALOGUE {
            assert!(!m.labels.is_empty(), "{} has no labels", m.name);
            assert!(
                m.name.starts_with("db.client.") || m.name.starts_with("resilient_redis."),
                "{}: OpenTelemetry's name or ours",
                m.name
            );
        }
    }

    /// `docs/metrics.md` has a row for every metric, naming its kind, unit and every
    /// label key, and no row for a metric that does not exist.
    #[test]
    fn the_metrics_guide_lists_every_metric_with_its_labels() {
        let guide = include_str!("../../docs/metrics.md");
        for m in CATALOGUE {
            let row = guide
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", m.name)))
                .unwrap_or_else(|| panic!("docs/metrics.md has no row for {}", m.name));
            let kind = match m.kind {
                MetricKind::Counter => "counter",
                MetricKind::Gauge => "gauge",
                MetricKind::Histogram => "histogram",
            };
            let unit = match m.unit {
                MetricUnit::Seconds => "s",
                MetricUnit::Count => "count",
            };
            assert!(
                row.contains(&format!("| {kind} | {unit} |")),
                "{}: kind and unit",
                m.name
            );
            for l in m.labels {
                assert!(row.contains(&format!("`{l}`")), "{}: label {l}", m.name);
            }
        }
        let rows = guide
            .lines()
            .filter(|l| {
                l.starts_with("| `")
                    && ["counter", "gauge", "histogram"]
                        .iter()
                        .any(|k| l.contains(&format!(" | {k} | ")))
            })
            .count();
        assert_eq!(
            rows,
            CATALOGUE.len(),
            "a row for a metric that does not exist"
        );
    }

    /// With the feature off, what callers hold is zero-sized: nothing is timed.
    #[cfg(not(feature = "metrics"))]
    #[test]
    fn off_the_values_callers_hold_are_zero_sized() {
        assert_eq!(std::mem::size_of::<Stopwatch>(), 0);
        assert_eq!(std::mem::size_of::<BacklogWait>(), 0);
    }
}
