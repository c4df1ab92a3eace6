//! The syntaxes of option values, both ways: reading a value (`None` when it is not
//! one; the caller names the key and the position, never the text) and writing one
//! back for `Display` so that it reads back the same.
//!
//! Owns: what each kind of value looks like, and the words errors use to say so.
//! Must never: accept a value a lenient parser would (a leading `+`, an exponent, `inf`),
//! since `Display` must round-trip and a mistyped setting must not pass in silence.

use std::path::PathBuf;
use std::time::Duration;

use super::keys::PROVIDERS;
use super::{BacklogPolicy, MaintNotifications, MovingEndpointType, Options, Protocol};

// What each kind of value should look like, as the error messages say it.
pub(super) const TEXT: &str = "a non-empty value";
pub(super) const NAME: &str = "a non-empty client name of printable characters without spaces";
pub(super) const HOST: &str = "a host name without spaces";
pub(super) const PATH: &str = "a file path";
pub(super) const DATABASE: &str = "a database index from 0 to 4294967295";
pub(super) const BOOL: &str = "true, false, yes, no, 1 or 0";
pub(super) const MILLIS: &str = "a whole number of milliseconds greater than zero";
pub(super) const SECONDS: &str = "a number of seconds greater than zero, like 10 or 2.5";
pub(super) const COUNT: &str = "a whole number of at least 1";
pub(super) const LANE_COUNT: &str = "a whole number from 0 to 8";
pub(super) const PROTOCOL: &str = "resp2, resp3, 2 or 3";
pub(super) const BACKLOG: &str = "queue or failfast";
pub(super) const MAINT_MODE: &str = "disabled, auto or enabled";
pub(super) const MOVING_TYPE: &str =
    "internal-ip, internal-fqdn, external-ip, external-fqdn or none";
pub(super) const PROVIDER: &str = "one of amr, azure, rediscloud, enterprise";
pub(super) const SERVICE: &str = "a service name of printable characters without spaces";

pub(super) fn text(v: &str) -> Option<String> {
    (!v.is_empty()).then(|| v.to_string())
}

/// Why so strict: `CLIENT SETNAME` refuses any character outside `!`..=`~`, and that
/// refusal would otherwise surface only at connect time, on every connection.
pub(super) fn client_name(v: &str) -> Option<String> {
    let printable = v.chars().all(|c| ('!'..='~').contains(&c));
    (!v.is_empty() && printable).then(|| v.to_string())
}

/// A Sentinel service name: sent as one argument and matched against the words of a
/// `+switch-master` message, so it cannot hold a space.
pub(super) fn service_name(v: &str) -> Option<String> {
    client_name(v)
}

pub(super) fn host_name(v: &str) -> Option<String> {
    let ok = !v.is_empty() && !v.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then(|| v.to_string())
}

pub(super) fn path(v: &str) -> Option<PathBuf> {
    (!v.is_empty()).then(|| PathBuf::from(v))
}

/// Digits only: `str::parse` would also take a leading '+'.
pub(super) fn whole<T: std::str::FromStr>(v: &str) -> Option<T> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

pub(super) fn count(v: &str) -> Option<usize> {
    whole::<usize>(v).filter(|&n| n >= 1)
}

/// Lanes beside the shared connection: none turns them off; more than a few would be a
/// pool, which the shared connection's pipelining makes unnecessary.
pub(super) fn lane_count(v: &str) -> Option<usize> {
    whole::<usize>(v).filter(|&n| n <= 8)
}

/// Why zero is refused for every duration: a zero timeout fails every connect or
/// command at once, and a zero reconnect delay doubles to zero forever (a busy loop).
pub(super) fn millis(v: &str) -> Option<Duration> {
    whole::<u64>(v)
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

/// Seconds as `digits[.digits]`, exact to the nanosecond (so `Display` round-trips);
/// no sign, exponent, `inf` or `NaN`, which `f64` parsing would let through.
pub(super) fn seconds(v: &str) -> Option<Duration> {
    let (whole_part, fraction) = v.split_once('.').unwrap_or((v, ""));
    if v.ends_with('.') || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs = whole::<u64>(whole_part)?;
    let nanos = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<9}").parse::<u32>().ok()?
    };
    let d = Duration::new(secs, nanos);
    (!d.is_zero()).then_some(d)
}

pub(super) fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

pub(super) fn protocol(v: &str) -> Option<Protocol> {
    match v.to_ascii_lowercase().as_str() {
        "resp2" | "2" => Some(Protocol::Resp2),
        "resp3" | "3" => Some(Protocol::Resp3),
        _ => None,
    }
}

pub(super) fn backlog(v: &str) -> Option<BacklogPolicy> {
    match v.to_ascii_lowercase().as_str() {
        "queue" => Some(BacklogPolicy::Queue),
        "failfast" => Some(BacklogPolicy::FailFast),
        _ => None,
    }
}

pub(super) fn maint_mode(v: &str) -> Option<MaintNotifications> {
    match v.to_ascii_lowercase().as_str() {
        "disabled" => Some(MaintNotifications::Disabled),
        "auto" => Some(MaintNotifications::Auto),
        "enabled" => Some(MaintNotifications::Enabled),
        _ => None,
    }
}

pub(super) fn moving_type(v: &str) -> Option<MovingEndpointType> {
    [
        MovingEndpointType::InternalIp,
        MovingEndpointType::InternalFqdn,
        MovingEndpointType::ExternalIp,
        MovingEndpointType::ExternalFqdn,
        MovingEndpointType::None,
    ]
    .into_iter()
    .find(|t| t.as_str().eq_ignore_ascii_case(v))
}

pub(super) fn provider(v: &str) -> Option<String> {
    let lower = v.to_ascii_lowercase();
    PROVIDERS.contains(&lower.as_str()).then_some(lower)
}

// Storing what was read.

/// Stores a value read, or stores nothing and says it was bad (`None`).
pub(super) fn put<T>(setting: &mut T, read: Option<T>) -> Option<()> {
    *setting = read?;
    Some(())
}

/// `put` for a setting that may be unset.
pub(super) fn put_some<T>(setting: &mut Option<T>, read: Option<T>) -> Option<()> {
    *setting = Some(read?);
    Some(())
}

// Writing back.

pub(super) fn protocol_name(p: Protocol) -> String {
    match p {
        Protocol::Resp2 => "resp2",
        Protocol::Resp3 => "resp3",
    }
    .to_string()
}

pub(super) fn backlog_name(b: BacklogPolicy) -> String {
    match b {
        BacklogPolicy::Queue => "queue",
        BacklogPolicy::FailFast => "failfast",
    }
    .to_string()
}

pub(super) fn maint_mode_name(m: MaintNotifications) -> String {
    match m {
        MaintNotifications::Disabled => "disabled",
        MaintNotifications::Auto => "auto",
        MaintNotifications::Enabled => "enabled",
    }
    .to_string()
}

/// Whole milliseconds, rounded up: rounding down could write `0`, which parses as an
/// error, and would shorten a timeout.
pub(super) fn millis_text(d: Duration) -> String {
    d.as_nanos().div_ceil(1_000_000).to_string()
}

/// Seconds with as many fractional digits as needed (`10`, `2.5`, `0.000000001`).
pub(super) fn seconds_text(d: Duration) -> String {
    match d.subsec_nanos() {
        0 => d.as_secs().to_string(),
        nanos => {
            let fraction = format!("{nanos:09}");
            format!("{}.{}", d.as_secs(), fraction.trim_end_matches('0'))
        }
    }
}

/// The value when it differs from the default, written by `write`.
pub(super) fn differs<T: PartialEq + Copy>(
    value: T,
    default: T,
    write: fn(T) -> String,
) -> Option<String> {
    (value != default).then(|| write(value))
}

/// The `display` of a secret: never written, masked or not.
pub(super) fn never(_: &Options, _: &Options) -> Option<String> {
    None
}

/// A number or a boolean, as `Display` writes it.
pub(super) fn to_text<T: ToString>(value: T) -> String {
    value.to_string()
}
