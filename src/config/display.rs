//! `Display` for `Options`: the option-string form, which `Options::parse` reads back.
//!
//! Owns: choosing what to write (only what differs from the defaults) and how (each
//! duration in its key's unit). Must never: write the password, masked or not, and
//! must never write a provider's values, only the provider's name when it was chosen.

use std::fmt;
use std::time::Duration;

use super::keys::OptionKey;
use super::option_string::quote_if_needed;
use super::provider::ProviderSays;
use super::{BacklogPolicy, MaintNotifications, Options, Protocol};

/// Writes `endpoints,key=value,...`: the endpoints, then every key whose value differs
/// from `Options::default()`, in a fixed order (that of the table in [`Options::parse`]).
///
/// - The password is never written; `Options::parse(&o.to_string())` gives back `o`
///   without its password.
/// - `defaults=<name>` is written only when a provider was chosen by name, and a
///   provider's values never are: where a provider applies ([`Options::provider`]), a
///   setting holding the value the provider fills in is omitted (parsing the string
///   again re-derives it), and a setting given explicitly is written even when it holds
///   the library default (`ssl=false`, `maintNotifications=disabled`), so that it stays
///   pinned against the provider.
/// - TLS is written as `ssl=true` plus the `ssl*` keys that are set. In-memory CA
///   certificates (`TlsOptions::ca_pem`) have no option-string form and are omitted.
/// - Durations are written in their key's unit: whole milliseconds (rounded up, so a
///   timeout set in code to less than a millisecond is never written as zero), and
///   seconds with a fraction where needed for the `maint*` keys.
/// - Values are written as they are, or in double quotes (`"` and `\` escaped) when they
///   would not read back otherwise: a value holding a comma, starting with a quote, or
///   starting or ending with whitespace. Empty values and durations set in code to zero
///   cannot be read back (`parse` refuses them).
impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let defaults = Options::default();
        let mut separator = "";
        for endpoint in &self.endpoints {
            write!(f, "{separator}{endpoint}")?;
            separator = ",";
        }
        for key in OptionKey::ALL {
            if let Some(value) = value_to_write(self, &defaults, key) {
                write!(f, "{separator}{}={}", key.name(), quote_if_needed(&value))?;
                separator = ",";
            }
        }
        Ok(())
    }
}

/// The value to write for `key`, or `None` when it is the default (or a secret).
fn value_to_write(o: &Options, defaults: &Options, key: OptionKey) -> Option<String> {
    let tls = o.tls.as_ref();
    let differs = |value: Duration, default: Duration| (value != default).then(|| millis(value));
    match key {
        OptionKey::Password => None,
        OptionKey::User => o.user.clone(),
        OptionKey::Name => o.client_name.clone(),
        OptionKey::DefaultDatabase => {
            (o.database != defaults.database).then(|| o.database.to_string())
        }
        OptionKey::Ssl => match o.provider_tls() {
            ProviderSays::Omit => None,
            ProviderSays::WritePinnedDefault => Some("false".to_string()),
            ProviderSays::Nothing => tls.map(|_| "true".to_string()),
        },
        OptionKey::SslHost => tls?.server_name.clone(),
        OptionKey::SslCaFile => tls?.ca_file.as_ref().map(|p| p.display().to_string()),
        OptionKey::SslCert => tls?
            .client_cert_file
            .as_ref()
            .map(|p| p.display().to_string()),
        OptionKey::SslKey => tls?
            .client_key_file
            .as_ref()
            .map(|p| p.display().to_string()),
        OptionKey::SslVerify => (!tls?.verify).then(|| "false".to_string()),
        OptionKey::ConnectTimeout => differs(o.connect_timeout, defaults.connect_timeout),
        OptionKey::SyncTimeout => differs(o.command_timeout, defaults.command_timeout),
        OptionKey::KeepAlive => differs(o.keep_alive, defaults.keep_alive),
        OptionKey::Protocol if o.provider_protocol() == ProviderSays::Omit => None,
        OptionKey::Protocol => o.protocol.map(|p| {
            match p {
                Protocol::Resp2 => "resp2",
                Protocol::Resp3 => "resp3",
            }
            .to_string()
        }),
        OptionKey::ReplicaReads => {
            (o.replica_reads != defaults.replica_reads).then(|| o.replica_reads.to_string())
        }
        OptionKey::AbortConnect => {
            (o.abort_connect != defaults.abort_connect).then(|| o.abort_connect.to_string())
        }
        OptionKey::Backlog => (o.backlog != defaults.backlog).then(|| {
            match o.backlog {
                BacklogPolicy::Queue => "queue",
                BacklogPolicy::FailFast => "failfast",
            }
            .to_string()
        }),
        OptionKey::BacklogLimit => {
            (o.backlog_limit != defaults.backlog_limit).then(|| o.backlog_limit.to_string())
        }
        OptionKey::ReconnectMin => differs(o.reconnect_min_delay, defaults.reconnect_min_delay),
        OptionKey::ReconnectMax => differs(o.reconnect_max_delay, defaults.reconnect_max_delay),
        OptionKey::BlockingPool => (o.blocking_pool_size != defaults.blocking_pool_size)
            .then(|| o.blocking_pool_size.to_string()),
        OptionKey::MaintNotifications => match o.provider_maint() {
            ProviderSays::Omit => None,
            ProviderSays::WritePinnedDefault => Some(maint_mode(o.maint_notifications)),
            ProviderSays::Nothing => (o.maint_notifications != defaults.maint_notifications)
                .then(|| maint_mode(o.maint_notifications)),
        },
        OptionKey::MaintRelaxedTimeout => (o.maint_relaxed_timeout
            != defaults.maint_relaxed_timeout)
            .then(|| seconds(o.maint_relaxed_timeout)),
        OptionKey::MaintRelaxedWindowMax => o.maint_relaxed_window_max.map(seconds),
        OptionKey::MaintPostEventRelaxed => o.maint_post_event_relaxed.map(seconds),
        OptionKey::MaintMovingEndpointType => {
            o.maint_moving_endpoint_type.map(|t| t.as_str().to_string())
        }
        OptionKey::Defaults => o.defaults.clone(),
        OptionKey::ServiceName => o.service_name.clone(),
        OptionKey::SentinelUser => o.sentinel_user.clone(),
        OptionKey::SentinelPassword => None,
    }
}

fn maint_mode(m: MaintNotifications) -> String {
    match m {
        MaintNotifications::Disabled => "disabled",
        MaintNotifications::Auto => "auto",
        MaintNotifications::Enabled => "enabled",
    }
    .to_string()
}

/// Whole milliseconds, rounded up: rounding down could write `0`, which parses as an
/// error, and would shorten a timeout.
fn millis(d: Duration) -> String {
    d.as_nanos().div_ceil(1_000_000).to_string()
}

/// Seconds with as many fractional digits as needed (`10`, `2.5`, `0.000000001`).
fn seconds(d: Duration) -> String {
    match d.subsec_nanos() {
        0 => d.as_secs().to_string(),
        nanos => {
            let fraction = format!("{nanos:09}");
            format!("{}.{}", d.as_secs(), fraction.trim_end_matches('0'))
        }
    }
}
