//! Operations: `db.client.operation.duration`, one measurement per completed call
//! (a command with all its retries, a batch, a transaction), taken in `Database`.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

use std::borrow::Cow;

use crate::error::ErrorKind;

/// When something started; zero-sized with the feature off, so the clock is never read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stopwatch {
    #[cfg(feature = "metrics")]
    started: std::time::Instant,
}

impl Stopwatch {
    /// Starts measuring (reads the clock only with the feature on).
    #[inline(always)]
    pub(crate) fn start() -> Stopwatch {
        Stopwatch {
            #[cfg(feature = "metrics")]
            started: std::time::Instant::now(),
        }
    }

    /// Seconds since `start`.
    #[cfg(feature = "metrics")]
    pub(crate) fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// An operation ended: `name` is the command's name as given (cut to a bounded label
/// here), `error` its error's kind when it failed.
// `&Cow`, not `&str`: a borrowed name is `'static` and becomes a label without a copy.
#[allow(clippy::ptr_arg)]
#[inline(always)]
pub(crate) fn operation_finished(
    stopwatch: Stopwatch,
    name: &Cow<'static, str>,
    error: Option<ErrorKind>,
) {
    #[cfg(feature = "metrics")]
    {
        use super::label::{DB_OPERATION_NAME, DB_SYSTEM_NAME, ERROR_TYPE};
        use ::metrics::Label;
        let seconds = stopwatch.seconds();
        let mut labels = Vec::with_capacity(3);
        labels.push(Label::from_static_parts(DB_SYSTEM_NAME, "redis"));
        labels.push(Label::new(DB_OPERATION_NAME, operation_name(name)));
        if let Some(kind) = error {
            labels.push(Label::from_static_parts(ERROR_TYPE, error_type(kind)));
        }
        ::metrics::histogram!(super::OPERATION_DURATION, labels).record(seconds);
    }
}

/// The longest command name kept as a label; anything longer is `OTHER`.
#[cfg(feature = "metrics")]
const NAME_MAX: usize = 32;

/// A bounded `db.operation.name`: the first word, uppercase, if it is a plain word of
/// at most 32 characters; `OTHER` otherwise. Only the first word: `Cmd::new` sends
/// each word of its name as an argument, so a name like `"GET user:42"` carries a key
/// in its second word. A typed command's static name is used without a copy.
#[cfg(feature = "metrics")]
#[allow(clippy::ptr_arg)] // the `Cow` says whether the name is `'static`
pub(crate) fn operation_name(name: &Cow<'static, str>) -> Cow<'static, str> {
    fn first_word(s: &str) -> &str {
        s.split(' ').find(|w| !w.is_empty()).unwrap_or("")
    }
    let word = first_word(name);
    let plain = !word.is_empty()
        && word.len() <= NAME_MAX
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'|'));
    if !plain {
        return Cow::Borrowed("OTHER");
    }
    match name {
        Cow::Borrowed(s) if !word.bytes().any(|b| b.is_ascii_lowercase()) => {
            Cow::Borrowed(first_word(s))
        }
        _ => Cow::Owned(word.to_ascii_uppercase()),
    }
}

/// `error.type`: the `ErrorKind` variant's name.
#[cfg(feature = "metrics")]
pub(crate) fn error_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ConnectionClosed => "ConnectionClosed",
        ErrorKind::Io => "Io",
        ErrorKind::Timeout => "Timeout",
        ErrorKind::Connect => "Connect",
        ErrorKind::Loading => "Loading",
        ErrorKind::Busy => "Busy",
        ErrorKind::TryAgain => "TryAgain",
        ErrorKind::ClusterDown => "ClusterDown",
        ErrorKind::Moved => "Moved",
        ErrorKind::Ask => "Ask",
        ErrorKind::CrossSlot => "CrossSlot",
        ErrorKind::ReadOnly => "ReadOnly",
        ErrorKind::MasterDown => "MasterDown",
        ErrorKind::WrongType => "WrongType",
        ErrorKind::UnknownCommand => "UnknownCommand",
        ErrorKind::NoScript => "NoScript",
        ErrorKind::Script => "Script",
        ErrorKind::Auth => "Auth",
        ErrorKind::Server => "Server",
        ErrorKind::ExecAbort => "ExecAbort",
        ErrorKind::Protocol => "Protocol",
        ErrorKind::TypeMismatch => "TypeMismatch",
        ErrorKind::Config => "Config",
        ErrorKind::Tls => "Tls",
        ErrorKind::InvalidInput => "InvalidInput",
        ErrorKind::BacklogFull => "BacklogFull",
        ErrorKind::Closed => "Closed",
        ErrorKind::Unavailable => "Unavailable",
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use super::*;

    fn owned(s: &str) -> Cow<'static, str> {
        Cow::Owned(s.to_string())
    }

    #[test]
    fn operation_names_are_bounded_uppercase_first_words() {
        assert_eq!(operation_name(&Cow::Borrowed("GET")), "GET");
        assert!(matches!(
            operation_name(&Cow::Borrowed("CLIENT SETNAME")),
            Cow::Borrowed("CLIENT")
        ));
        assert_eq!(operation_name(&owned("incrby")), "INCRBY");
        assert_eq!(operation_name(&owned("GET user:42")), "GET");
        assert_eq!(operation_name(&owned("  ft.search  idx")), "FT.SEARCH");
        assert_eq!(operation_name(&owned("user:42")), "OTHER");
        assert_eq!(operation_name(&owned("")), "OTHER");
        assert_eq!(operation_name(&owned(&"A".repeat(33))), "OTHER");
        assert_eq!(operation_name(&owned("GÉT")), "OTHER");
    }

    #[test]
    fn error_types_are_the_variant_names() {
        for kind in [
            ErrorKind::Timeout,
            ErrorKind::WrongType,
            ErrorKind::BacklogFull,
        ] {
            assert_eq!(error_type(kind), format!("{kind:?}"));
        }
    }
}
