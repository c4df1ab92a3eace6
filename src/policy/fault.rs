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

    /// Whether this outcome is a fault where it is seen: `error_kind` is set.
    ///
    /// A retry policy sees every failed attempt as a fault. A circuit breaker's
    /// accumulator sees an error its own [`is_failure`](crate::policy::Accumulator::is_failure)
    /// does not count (an application error such as `WRONGTYPE`, by default) as a
    /// success: `is_fault()` is false for it, and its kind is kept in
    /// `application_error`. So an accumulator that counts `is_fault()` counts exactly
    /// what its `is_failure` counts, as StackExchange.Redis's `IsFault` does (a breaker
    /// ported from there must not trip on `WRONGTYPE`).
    pub fn is_fault(&self) -> bool {
        self.error_kind.is_some()
    }

    /// Whether this outcome was an application error reply that the breaker seeing it
    /// does not count (`application_error` is set).
    pub fn is_application_error(&self) -> bool {
        self.application_error.is_some()
    }

    /// Whether this is a transient or connection-level fault: what breakers count and
    /// retries consider. Application errors (WRONGTYPE, a script error) are not.
    pub fn is_transient(&self) -> bool {
        self.error_kind
            .is_some_and(|k| k.is_transient() || k.is_connection_level())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a circuit breaker's accumulator is handed: an application error arrives
    /// as a success carrying its kind, and `is_fault()` is false for it, so a breaker
    /// ported from StackExchange.Redis (`if context.IsFault`) does not count it.
    #[test]
    fn an_application_error_is_no_fault_to_a_breaker_and_a_transient_one_is() {
        let wrongtype = FaultContext::from_kind(ErrorKind::WrongType);
        assert!(wrongtype.is_fault(), "to a retry policy: a failed attempt");
        let seen = wrongtype.as_application_error();
        assert!(!seen.is_fault());
        assert!(seen.is_application_error());
        assert_eq!(seen.application_error, Some(ErrorKind::WrongType));
        let loading = FaultContext::from_kind(ErrorKind::Loading);
        assert!(loading.is_fault() && loading.is_transient());
        assert!(!loading.is_application_error());
        assert!(!FaultContext::success().is_fault());
    }
}
