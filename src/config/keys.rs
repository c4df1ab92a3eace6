//! The option keys shared by option strings and URL queries: their names, the syntax of
//! their values, and the checks that can only run once every key has been seen.
//!
//! Owns: `OptionKey` (the one list of keys, in the order `Display` writes them) and `Settings`
//! (options being assembled). Must never: quote a value in an error, nor anything at all
//! from an item after an unquoted password: a password holding a comma (or, in a URL
//! query, an `&`) spills into the next items, so they may be part of the secret.

use std::path::PathBuf;
use std::time::Duration;

use super::parse::{config_error, endpoint_from, Position};
use super::{
    BacklogPolicy, MaintNotifications, MovingEndpointType, Options, Protocol, Secret, TlsOptions,
};
use crate::error::Result;

/// One option key. `ALL` fixes the order of the documentation table and of `Display`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OptionKey {
    Password,
    User,
    Name,
    DefaultDatabase,
    Ssl,
    SslHost,
    SslCaFile,
    SslCert,
    SslKey,
    SslVerify,
    ConnectTimeout,
    SyncTimeout,
    KeepAlive,
    Protocol,
    AbortConnect,
    Backlog,
    BacklogLimit,
    ReconnectMin,
    ReconnectMax,
    BlockingPool,
    ReplicaReads,
    MaintNotifications,
    MaintRelaxedTimeout,
    MaintRelaxedWindowMax,
    MaintPostEventRelaxed,
    MaintMovingEndpointType,
    Defaults,
    ServiceName,
    SentinelUser,
    SentinelPassword,
}

impl OptionKey {
    /// Every key, in `Display` order.
    pub(super) const ALL: [OptionKey; 30] = [
        OptionKey::Password,
        OptionKey::User,
        OptionKey::Name,
        OptionKey::DefaultDatabase,
        OptionKey::Ssl,
        OptionKey::SslHost,
        OptionKey::SslCaFile,
        OptionKey::SslCert,
        OptionKey::SslKey,
        OptionKey::SslVerify,
        OptionKey::ConnectTimeout,
        OptionKey::SyncTimeout,
        OptionKey::KeepAlive,
        OptionKey::Protocol,
        OptionKey::AbortConnect,
        OptionKey::Backlog,
        OptionKey::BacklogLimit,
        OptionKey::ReconnectMin,
        OptionKey::ReconnectMax,
        OptionKey::BlockingPool,
        OptionKey::ReplicaReads,
        OptionKey::MaintNotifications,
        OptionKey::MaintRelaxedTimeout,
        OptionKey::MaintRelaxedWindowMax,
        OptionKey::MaintPostEventRelaxed,
        OptionKey::MaintMovingEndpointType,
        OptionKey::Defaults,
        OptionKey::ServiceName,
        OptionKey::SentinelUser,
        OptionKey::SentinelPassword,
    ];

    /// The canonical spelling, as documented and as `Display` writes it.
    pub(super) fn name(self) -> &'static str {
        match self {
            OptionKey::Password => "password",
            OptionKey::User => "user",
            OptionKey::Name => "name",
            OptionKey::DefaultDatabase => "defaultDatabase",
            OptionKey::Ssl => "ssl",
            OptionKey::SslHost => "sslHost",
            OptionKey::SslCaFile => "sslCaFile",
            OptionKey::SslCert => "sslCert",
            OptionKey::SslKey => "sslKey",
            OptionKey::SslVerify => "sslVerify",
            OptionKey::ConnectTimeout => "connectTimeout",
            OptionKey::SyncTimeout => "syncTimeout",
            OptionKey::KeepAlive => "keepAlive",
            OptionKey::Protocol => "protocol",
            OptionKey::AbortConnect => "abortConnect",
            OptionKey::ReplicaReads => "replicaReads",
            OptionKey::Backlog => "backlog",
            OptionKey::BacklogLimit => "backlogLimit",
            OptionKey::ReconnectMin => "reconnectMin",
            OptionKey::ReconnectMax => "reconnectMax",
            OptionKey::BlockingPool => "blockingPool",
            OptionKey::MaintNotifications => "maintNotifications",
            OptionKey::MaintRelaxedTimeout => "maintRelaxedTimeout",
            OptionKey::MaintRelaxedWindowMax => "maintRelaxedWindowMax",
            OptionKey::MaintPostEventRelaxed => "maintPostEventRelaxed",
            OptionKey::MaintMovingEndpointType => "maintMovingEndpointType",
            OptionKey::Defaults => "defaults",
            OptionKey::ServiceName => "serviceName",
            OptionKey::SentinelUser => "sentinelUser",
            OptionKey::SentinelPassword => "sentinelPassword",
        }
    }

    fn lookup(name: &str) -> Option<OptionKey> {
        OptionKey::ALL
            .into_iter()
            .find(|key| key.name().eq_ignore_ascii_case(name))
    }

    /// Keys whose value is a secret: never written back, and what follows an unquoted
    /// one may be its tail.
    fn is_secret(self) -> bool {
        matches!(self, OptionKey::Password | OptionKey::SentinelPassword)
    }

    /// The keys that refine TLS and mean nothing without it.
    fn needs_tls(self) -> bool {
        matches!(
            self,
            OptionKey::SslHost
                | OptionKey::SslCaFile
                | OptionKey::SslCert
                | OptionKey::SslKey
                | OptionKey::SslVerify
        )
    }
}

/// The providers `defaults=<name>` may name (maintenance.md §1). Matched by name only:
/// a configuration string must never be able to pick arbitrary code.
pub(super) const PROVIDERS: [&str; 4] = ["amr", "azure", "rediscloud", "enterprise"];

/// Options being assembled from items, plus what the end-of-input checks need.
pub(super) struct Settings {
    pub(super) options: Options,
    /// TLS required by a `rediss://`/`valkeys://` scheme.
    scheme_tls: bool,
    /// The last `ssl=` item and where it was.
    ssl: Option<(bool, Position)>,
    /// TLS details, kept apart until we know whether TLS is on at all: `ssl=true` may
    /// come after `sslHost=`.
    tls: TlsOptions,
    /// The first TLS detail key seen, to name it if TLS turns out to be off.
    first_tls_detail: Option<(OptionKey, Position)>,
    /// Where the last unquoted secret value was (an option-string item, a URL query
    /// item): every item after it may be its tail, so errors about them quote nothing.
    after_secret: Option<Position>,
    /// The keys set by items after an unquoted secret, for the end-of-input checks.
    keys_after_secret: Vec<OptionKey>,
}

impl Settings {
    pub(super) fn new(scheme_tls: bool) -> Settings {
        Settings {
            options: Options::default(),
            scheme_tls,
            ssl: None,
            tls: TlsOptions::default(),
            first_tls_detail: None,
            after_secret: None,
            keys_after_secret: Vec::new(),
        }
    }

    /// Adds an endpoint item; the error gives the position, not the text.
    pub(super) fn add_endpoint(&mut self, item: &str, at: Position) -> Result<()> {
        if let Some(secret) = self.after_secret {
            // Why refused even when it parses: `h:6379,password=hun,ter2` would
            // otherwise connect to a server named `ter2`, sending a piece of the
            // password to DNS and writing it in `Display`.
            return Err(config_error(format!(
                "an endpoint at {at} is refused (not shown: {}; or list the endpoints before the password)",
                secret_tail_hint(secret)
            )));
        }
        let endpoint = endpoint_from(item)
            .map_err(|why| config_error(format!("bad endpoint at {at}: {why}")))?;
        self.options.endpoints.push(endpoint);
        Ok(())
    }

    /// Applies `name=value` (name matched case-insensitively); `quoted` when the value
    /// was written in double quotes (so it cannot have spilled into later items).
    pub(super) fn apply(
        &mut self,
        name: &str,
        value: &str,
        quoted: bool,
        at: Position,
    ) -> Result<()> {
        if name.is_empty() {
            return Err(config_error(format!(
                "missing key before '=' at {at}{}",
                self.not_shown()
            )));
        }
        let Some(key) = OptionKey::lookup(name) else {
            if self.after_secret.is_some() {
                return Err(config_error(format!(
                    "unknown option key at {at}{}",
                    self.not_shown()
                )));
            }
            // Quoted: the caller needs to see what was not understood, and with no
            // unquoted password before it, this item cannot be a piece of one.
            return Err(config_error(format!(
                "unknown option key '{}' at {at}",
                name.escape_debug()
            )));
        };
        self.apply_key(key, value, at)?;
        if key.is_secret() && !quoted && matches!(at, Position::Item(_) | Position::QueryItem(_)) {
            self.after_secret = Some(at);
        }
        Ok(())
    }

    /// Applies a value to a known key.
    pub(super) fn apply_key(&mut self, key: OptionKey, value: &str, at: Position) -> Result<()> {
        let hidden = self.not_shown();
        let bad = |expected: &str| {
            if hidden.is_empty() {
                config_error(format!(
                    "bad value for '{}' at {at}: expected {expected}",
                    key.name()
                ))
            } else {
                // Not even the key: which key matched says what the password holds.
                config_error(format!("bad value at {at}{hidden}"))
            }
        };
        if self.after_secret.is_some() {
            self.keys_after_secret.push(key);
        }
        if key.needs_tls() && self.first_tls_detail.is_none() {
            self.first_tls_detail = Some((key, at));
        }
        let o = &mut self.options;
        match key {
            OptionKey::Password => {
                o.password = Some(Secret::new(text(value).ok_or_else(|| bad(TEXT))?))
            }
            OptionKey::User => o.user = Some(text(value).ok_or_else(|| bad(TEXT))?),
            OptionKey::Name => o.client_name = Some(client_name(value).ok_or_else(|| bad(NAME))?),
            OptionKey::DefaultDatabase => o.database = whole(value).ok_or_else(|| bad(DATABASE))?,
            OptionKey::Ssl => self.ssl = Some((boolean(value).ok_or_else(|| bad(BOOL))?, at)),
            OptionKey::SslHost => {
                self.tls.server_name = Some(host_name(value).ok_or_else(|| bad(HOST))?)
            }
            OptionKey::SslCaFile => self.tls.ca_file = Some(path(value).ok_or_else(|| bad(PATH))?),
            OptionKey::SslCert => {
                self.tls.client_cert_file = Some(path(value).ok_or_else(|| bad(PATH))?)
            }
            OptionKey::SslKey => {
                self.tls.client_key_file = Some(path(value).ok_or_else(|| bad(PATH))?)
            }
            OptionKey::SslVerify => self.tls.verify = boolean(value).ok_or_else(|| bad(BOOL))?,
            OptionKey::ConnectTimeout => {
                o.connect_timeout = millis(value).ok_or_else(|| bad(MILLIS))?
            }
            OptionKey::SyncTimeout => {
                o.command_timeout = millis(value).ok_or_else(|| bad(MILLIS))?
            }
            OptionKey::KeepAlive => o.keep_alive = millis(value).ok_or_else(|| bad(MILLIS))?,
            OptionKey::Protocol => {
                o.protocol = Some(protocol(value).ok_or_else(|| bad(PROTOCOL))?);
                o.explicit.protocol = true;
            }
            OptionKey::AbortConnect => o.abort_connect = boolean(value).ok_or_else(|| bad(BOOL))?,
            OptionKey::ReplicaReads => o.replica_reads = boolean(value).ok_or_else(|| bad(BOOL))?,
            OptionKey::Backlog => o.backlog = backlog(value).ok_or_else(|| bad(BACKLOG))?,
            OptionKey::BacklogLimit => o.backlog_limit = count(value).ok_or_else(|| bad(COUNT))?,
            OptionKey::ReconnectMin => {
                o.reconnect_min_delay = millis(value).ok_or_else(|| bad(MILLIS))?
            }
            OptionKey::ReconnectMax => {
                o.reconnect_max_delay = millis(value).ok_or_else(|| bad(MILLIS))?
            }
            OptionKey::BlockingPool => {
                o.blocking_pool_size = count(value).ok_or_else(|| bad(COUNT))?
            }
            OptionKey::MaintNotifications => {
                o.maint_notifications = maint_mode(value).ok_or_else(|| bad(MAINT_MODE))?;
                o.explicit.maint = true;
            }
            OptionKey::MaintRelaxedTimeout => {
                o.maint_relaxed_timeout = seconds(value).ok_or_else(|| bad(SECONDS))?
            }
            OptionKey::MaintRelaxedWindowMax => {
                o.maint_relaxed_window_max = Some(seconds(value).ok_or_else(|| bad(SECONDS))?)
            }
            OptionKey::MaintPostEventRelaxed => {
                o.maint_post_event_relaxed = Some(seconds(value).ok_or_else(|| bad(SECONDS))?)
            }
            OptionKey::MaintMovingEndpointType => {
                o.maint_moving_endpoint_type =
                    Some(moving_type(value).ok_or_else(|| bad(MOVING_TYPE))?)
            }
            OptionKey::Defaults => o.defaults = Some(provider(value).ok_or_else(|| bad(PROVIDER))?),
            OptionKey::ServiceName => {
                o.service_name = Some(service_name(value).ok_or_else(|| bad(SERVICE))?)
            }
            OptionKey::SentinelUser => {
                o.sentinel_user = Some(text(value).ok_or_else(|| bad(TEXT))?)
            }
            OptionKey::SentinelPassword => {
                o.sentinel_password = Some(Secret::new(text(value).ok_or_else(|| bad(TEXT))?))
            }
        }
        Ok(())
    }

    /// The checks that need the whole input: an endpoint, TLS coherence, reconnect bounds.
    pub(super) fn finish(mut self) -> Result<Options> {
        if self.options.endpoints.is_empty() {
            return Err(config_error(
                "no endpoint given: add at least one host[:port] item",
            ));
        }
        let tls_on = match self.ssl {
            Some((false, at)) if self.scheme_tls => {
                let (what, hidden) = match self.hidden_after_secret(&[OptionKey::Ssl]) {
                    Some(hidden) => (format!("a setting at {at}"), hidden),
                    None => (format!("'ssl=false' at {at}"), String::new()),
                };
                return Err(config_error(format!(
                    "{what} contradicts the rediss:// (or valkeys://) scheme{hidden}"
                )));
            }
            Some((on, _)) => on || self.scheme_tls,
            None => self.scheme_tls,
        };
        // Explicit either way: `ssl=false` must beat a provider's TLS default.
        self.options.explicit.tls = self.ssl.is_some() || self.scheme_tls;
        if tls_on {
            let pair_hidden = self.hidden_after_secret(&[OptionKey::SslCert, OptionKey::SslKey]);
            match (
                &self.tls.client_cert_file,
                &self.tls.client_key_file,
                pair_hidden,
            ) {
                (Some(_), None, None) => {
                    return Err(config_error("'sslCert' needs 'sslKey' (its private key)"))
                }
                (None, Some(_), None) => {
                    return Err(config_error(
                        "'sslKey' needs 'sslCert' (the certificate it belongs to)",
                    ))
                }
                (Some(_), None, Some(hidden)) | (None, Some(_), Some(hidden)) => {
                    return Err(config_error(format!(
                        "a client certificate and its private key go together{hidden}"
                    )))
                }
                _ => {}
            }
            self.options.tls = Some(std::mem::take(&mut self.tls));
        } else if let Some((key, at)) = self.first_tls_detail {
            let (what, hidden) = match self.hidden_after_secret(&[key]) {
                Some(hidden) => (format!("the setting at {at}"), hidden),
                None => (format!("'{}' at {at}", key.name()), String::new()),
            };
            return Err(config_error(format!(
                "{what} needs TLS: add ssl=true or use a rediss:// URL (without TLS it would do nothing){hidden}"
            )));
        }
        let (min, max) = (
            self.options.reconnect_min_delay,
            self.options.reconnect_max_delay,
        );
        if min > max {
            let reconnect = [OptionKey::ReconnectMin, OptionKey::ReconnectMax];
            if let Some(hidden) = self.hidden_after_secret(&reconnect) {
                return Err(config_error(format!(
                    "the minimum reconnect delay is greater than the maximum{hidden}"
                )));
            }
            return Err(config_error(format!(
                "reconnectMin ({} ms) is greater than reconnectMax ({} ms)",
                min.as_millis(),
                max.as_millis()
            )));
        }
        Ok(self.options)
    }

    /// What an error about the current item says instead of quoting it, when it
    /// follows an unquoted secret; empty otherwise.
    pub(super) fn not_shown(&self) -> String {
        self.after_secret
            .map(|secret| format!(" (not shown: {})", secret_tail_hint(secret)))
            .unwrap_or_default()
    }

    /// `Some(what to say instead)` when any of `keys` was set after an unquoted secret.
    fn hidden_after_secret(&self, keys: &[OptionKey]) -> Option<String> {
        let secret = self.after_secret?;
        keys.iter()
            .any(|k| self.keys_after_secret.contains(k))
            .then(|| format!(" (not shown: {})", secret_tail_hint(secret)))
    }
}

/// Why something after the secret at `secret` is not shown, and how to write a secret
/// that holds the separator.
fn secret_tail_hint(secret: Position) -> String {
    match secret {
        Position::QueryItem(_) => format!(
            "it follows the password at {secret} and may be part of it: percent-encode an '&' in a password as %26"
        ),
        _ => format!(
            "it follows the unquoted password at {secret} and may be part of it: write a password that holds a comma in double quotes, password=\"...\""
        ),
    }
}

// What each kind of value should look like, as the error messages say it.
const TEXT: &str = "a non-empty value";
const NAME: &str = "a non-empty client name of printable characters without spaces";
const HOST: &str = "a host name without spaces";
const PATH: &str = "a file path";
const DATABASE: &str = "a database index from 0 to 4294967295";
const BOOL: &str = "true, false, yes, no, 1 or 0";
const MILLIS: &str = "a whole number of milliseconds greater than zero";
const SECONDS: &str = "a number of seconds greater than zero, like 10 or 2.5";
const COUNT: &str = "a whole number of at least 1";
const PROTOCOL: &str = "resp2, resp3, 2 or 3";
const BACKLOG: &str = "queue or failfast";
const MAINT_MODE: &str = "disabled, auto or enabled";
const MOVING_TYPE: &str = "internal-ip, internal-fqdn, external-ip, external-fqdn or none";
const PROVIDER: &str = "one of amr, azure, rediscloud, enterprise";
const SERVICE: &str = "a service name of printable characters without spaces";

fn text(v: &str) -> Option<String> {
    (!v.is_empty()).then(|| v.to_string())
}

/// Why so strict: `CLIENT SETNAME` refuses any character outside `!`..=`~`, and that
/// refusal would otherwise surface only at connect time, on every connection.
fn client_name(v: &str) -> Option<String> {
    let printable = v.chars().all(|c| ('!'..='~').contains(&c));
    (!v.is_empty() && printable).then(|| v.to_string())
}

/// A Sentinel service name: sent as one argument and matched against the words of a
/// `+switch-master` message, so it cannot hold a space.
fn service_name(v: &str) -> Option<String> {
    client_name(v)
}

fn host_name(v: &str) -> Option<String> {
    let ok = !v.is_empty() && !v.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then(|| v.to_string())
}

fn path(v: &str) -> Option<PathBuf> {
    (!v.is_empty()).then(|| PathBuf::from(v))
}

/// Digits only: `str::parse` would also take a leading '+'.
fn whole<T: std::str::FromStr>(v: &str) -> Option<T> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

fn count(v: &str) -> Option<usize> {
    whole::<usize>(v).filter(|&n| n >= 1)
}

/// Why zero is refused for every duration: a zero timeout fails every connect or
/// command at once, and a zero reconnect delay doubles to zero forever (a busy loop).
fn millis(v: &str) -> Option<Duration> {
    whole::<u64>(v)
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

/// Seconds as `digits[.digits]`, exact to the nanosecond (so `Display` round-trips);
/// no sign, exponent, `inf` or `NaN`, which `f64` parsing would let through.
fn seconds(v: &str) -> Option<Duration> {
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

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

fn protocol(v: &str) -> Option<Protocol> {
    match v.to_ascii_lowercase().as_str() {
        "resp2" | "2" => Some(Protocol::Resp2),
        "resp3" | "3" => Some(Protocol::Resp3),
        _ => None,
    }
}

fn backlog(v: &str) -> Option<BacklogPolicy> {
    match v.to_ascii_lowercase().as_str() {
        "queue" => Some(BacklogPolicy::Queue),
        "failfast" => Some(BacklogPolicy::FailFast),
        _ => None,
    }
}

fn maint_mode(v: &str) -> Option<MaintNotifications> {
    match v.to_ascii_lowercase().as_str() {
        "disabled" => Some(MaintNotifications::Disabled),
        "auto" => Some(MaintNotifications::Auto),
        "enabled" => Some(MaintNotifications::Enabled),
        _ => None,
    }
}

fn moving_type(v: &str) -> Option<MovingEndpointType> {
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

fn provider(v: &str) -> Option<String> {
    let lower = v.to_ascii_lowercase();
    PROVIDERS.contains(&lower.as_str()).then_some(lower)
}
