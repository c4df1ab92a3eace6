//! Connections: opened, lost, reconnected, tripped by a breaker, and the backlog of
//! callers waiting for one. None of these runs per request: they are recorded where a
//! connection opens or fails, and where a caller starts and stops waiting in a backlog
//! (only while the server is disconnected).
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

use super::Stopwatch;
use crate::error::FailureKind;

/// A connection to `host:port` was opened (socket, TLS, handshake) in the time since
/// `stopwatch` started.
#[inline(always)]
pub(crate) fn connection_created(host: &str, port: u16, stopwatch: Stopwatch) {
    #[cfg(feature = "metrics")]
    ::metrics::histogram!(super::CONNECTION_CREATE_TIME, pool_labels(host, port))
        .record(stopwatch.seconds());
}

/// The supervisor tried to reconnect a connection that had been up.
#[inline(always)]
pub(crate) fn reconnected(host: &str, port: u16, ok: bool) {
    #[cfg(feature = "metrics")]
    {
        let mut labels = super::server_labels(host, port);
        let outcome = if ok { "ok" } else { "error" };
        labels.push(::metrics::Label::from_static_parts(
            super::label::OUTCOME,
            outcome,
        ));
        ::metrics::counter!(super::RECONNECTS, labels).increment(1);
    }
}

/// A connection to `host:port` failed or was closed for `failure` (not called for a
/// close by the client itself).
#[inline(always)]
pub(crate) fn connection_failed(host: &str, port: u16, failure: FailureKind) {
    #[cfg(feature = "metrics")]
    {
        let mut labels = super::server_labels(host, port);
        labels.push(::metrics::Label::from_static_parts(
            super::label::FAILURE,
            failure_name(failure),
        ));
        ::metrics::counter!(super::CONNECTION_FAILURES, labels).increment(1);
    }
}

/// A circuit breaker tripped and closed its connection to `host:port`.
#[inline(always)]
pub(crate) fn breaker_tripped(host: &str, port: u16) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(super::BREAKER_TRIPS, super::server_labels(host, port)).increment(1);
}

/// A caller's deadline passed while it waited in `host:port`'s backlog.
#[inline(always)]
pub(crate) fn backlog_timed_out(host: &str, port: u16) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(super::CONNECTION_TIMEOUTS, pool_labels(host, port)).increment(1);
}

/// One caller waiting in a server's backlog: counted in
/// `db.client.connection.pending_requests` from `enter` until dropped. Zero-sized with
/// the feature off.
#[must_use = "the caller counts as waiting until this is dropped"]
pub(crate) struct BacklogWait {
    #[cfg(feature = "metrics")]
    gauge: ::metrics::Gauge,
}

impl BacklogWait {
    /// A caller starts waiting for `host:port`'s connection.
    #[inline(always)]
    pub(crate) fn enter(host: &str, port: u16) -> BacklogWait {
        #[cfg(feature = "metrics")]
        let gauge = ::metrics::gauge!(super::CONNECTION_PENDING_REQUESTS, pool_labels(host, port));
        #[cfg(feature = "metrics")]
        gauge.increment(1.0);
        BacklogWait {
            #[cfg(feature = "metrics")]
            gauge,
        }
    }
}

#[cfg(feature = "metrics")]
impl Drop for BacklogWait {
    fn drop(&mut self) {
        self.gauge.decrement(1.0);
    }
}

/// `db.client.connection.pool.name` with `server.address` and `server.port`.
#[cfg(feature = "metrics")]
fn pool_labels(host: &str, port: u16) -> Vec<::metrics::Label> {
    let mut labels = super::server_labels(host, port);
    labels.push(::metrics::Label::new(
        super::label::POOL_NAME,
        super::pool_name(host, port),
    ));
    labels
}

/// The `FailureKind` variant's name.
#[cfg(feature = "metrics")]
fn failure_name(failure: FailureKind) -> &'static str {
    match failure {
        FailureKind::SocketFailure => "SocketFailure",
        FailureKind::SocketClosed => "SocketClosed",
        FailureKind::Timeout => "Timeout",
        FailureKind::ConnectFailed => "ConnectFailed",
        FailureKind::AuthenticationFailure => "AuthenticationFailure",
        FailureKind::ProtocolFailure => "ProtocolFailure",
        FailureKind::CircuitBreaker => "CircuitBreaker",
        FailureKind::MaintenanceHandoff => "MaintenanceHandoff",
        FailureKind::ClosedByClient => "ClosedByClient",
    }
}
