//! `FaultContext`: what happened to one operation, handed to circuit breakers and
//! retry policies so they decide on a classification, never on an error's text.

use crate::command::RetryCategory;
use crate::config::Endpoint;
use crate::error::{Error, ErrorKind, FailureKind, MaintenanceKind};

/// The outcome of one operation, classified.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct FaultContext {
    /// The error's kind; `None` when the operation succeeded. A circuit breaker's
    /// accumulator sees `None` for an error its `is_failure` does not count either (an
    /// application error such as WRONGTYPE): that kind is in `application_error`.
    pub error_kind: Option<ErrorKind>,
    /// An error reply that is the application's, not the connection's (WRONGTYPE, an
    /// unknown command, a script error): set, with `error_kind` `None`, in what a
    /// circuit breaker's accumulator observes.
    pub application_error: Option<ErrorKind>,
    /// The connection failure behind it, if any.
    pub failure_kind: Option<FailureKind>,
    /// Announced maintenance in force when it happened.
    pub maintenance: MaintenanceKind,
    /// The command's retry category, when known.
    pub category: Option<RetryCategory>,
    /// Which attempt this was (1 for the first).
    pub attempt: u32,
    /// The group member it ran on (its name), when in a group.
    pub member: Option<String>,
    /// The server it ran on.
    pub endpoint: Option<Endpoint>,
}

impl FaultContext {
    /// A success.
    pub fn success() -> FaultContext {
        FaultContext::default()
    }

    /// A context describing `error`.
    pub fn from_error(error: &Error) -> FaultContext {
        FaultContext {
            error_kind: Some(error.kind()),
            failure_kind: error.failure(),
            maintenance: error.maintenance(),
            ..FaultContext::default()
        }
    }

    /// A context for an error reply's kind.
    pub fn from_kind(kind: ErrorKind) -> FaultContext {
        FaultContext {
            error_kind: Some(kind),
            ..FaultContext::default()
        }
    }

    /// The same outcome seen by a circuit breaker that does not count it: a success
    /// whose error kind is kept in `application_error`.
    pub(crate) fn as_application_error(&self) -> FaultContext {
        FaultContext {
            error_kind: None,
            failure_kind: None,
            application_error: self.error_kind,
            ..self.clone()
        }
    }

    /// Whether anything went wrong at all (an application error included).
    pub fn is_fault(&self) -> bool {
        self.error_kind.is_some() || self.application_error.is_some()
    }

    /// Whether this is a transient or connection-level fault: what breakers count and
    /// retries consider. Application errors (WRONGTYPE, a script error) are not.
    pub fn is_transient(&self) -> bool {
        self.error_kind
            .is_some_and(|k| k.is_transient() || k.is_connection_level())
    }
}
