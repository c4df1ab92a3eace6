//! Every option key of option strings and URL queries, each declared once below: its
//! name, how a value is read into `Options`, what `Display` writes back, and its row of
//! the key table in the `Options::parse` documentation.
//!
//! Owns: `OptionKey` and its declarations, in the order `Display` writes keys and the
//! table lists them. Everything else iterates them: `Settings` (option strings and URL
//! queries) looks keys up here, `Display` writes them in this order, the rustdoc table
//! is generated from them, and a test holds `docs/configuration.md` to the same rows.
//! Must never: let a key be declared anywhere else (CONTRIBUTING.md: how to add one).

use super::options::Secret;
use super::parse::Position;
use super::provider::ProviderSays;
use super::settings::Settings;
use super::values::*;
use super::Options;

/// The providers `defaults=<name>` may name (maintenance.md §1). Matched by name only:
/// a configuration string must never be able to pick arbitrary code.
pub(super) const PROVIDERS: [&str; 4] = ["amr", "azure", "rediscloud", "enterprise"];

/// How a key's value is handled beyond storing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Plain,
    /// Never written back, and what follows an unquoted one may be its tail.
    Secret,
    /// Refines TLS and means nothing without it: an error unless TLS is on.
    TlsDetail,
}

/// One key's declaration.
pub(super) struct KeySpec {
    /// The canonical spelling, as documented and as `Display` writes it; matched
    /// case-insensitively.
    pub(super) name: &'static str,
    pub(super) role: Role,
    /// What a good value looks like, as an error says it ("expected ...").
    pub(super) expected: &'static str,
    /// Stores a value; `None` when it is not one `expected` describes (nothing stored).
    pub(super) parse: fn(&mut Settings, &str, Position) -> Option<()>,
    /// What `Display` writes, given the options and `Options::default()`: `None` when
    /// the value is the default (or a provider's, re-derived on parsing).
    pub(super) display: fn(&Options, &Options) -> Option<String>,
    /// The documentation row: meaning, unit or values, default. The rustdoc table is
    /// `key_table!()`, made from the same literals; the tests read this copy.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) doc: [&'static str; 3],
}

/// Declares the keys: `OptionKey` (one variant per key), `OptionKey::ALL`, the
/// `KeySpec` of each, and `key_table!()`, the documentation table as a literal (for
/// `#[doc = ...]`, which takes no constant).
macro_rules! option_keys {
    ($(
        $variant:ident {
            name: $name:literal,
            doc: [$meaning:literal, $values:literal, $default:literal],
            $($field:ident: $value:expr),+ $(,)?
        }
    )+) => {
        /// One option key; its declaration is [`OptionKey::spec`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(super) enum OptionKey {
            $($variant,)+
        }

        impl OptionKey {
            /// Every key, in `Display` order.
            pub(super) const ALL: [OptionKey; [$($name),+].len()] = [$(OptionKey::$variant),+];
        }

        /// The declarations, in the order of `OptionKey::ALL`.
        static SPECS: [KeySpec; OptionKey::ALL.len()] = [$(
            KeySpec { name: $name, doc: [$meaning, $values, $default], $($field: $value),+ },
        )+];

        /// The key table of the `Options::parse` documentation, as a string literal.
        macro_rules! key_table {
            () => {
                concat!(
                    "| Key | Meaning | Unit / values | Default |\n",
                    "|-----|---------|---------------|---------|\n",
                    $("| `", $name, "` | ", $meaning, " | ", $values, " | ", $default, " |\n",)+
                )
            };
        }
        pub(super) use key_table;
    };
}

impl OptionKey {
    /// Its declaration.
    pub(super) fn spec(self) -> &'static KeySpec {
        &SPECS[self as usize]
    }

    /// The canonical spelling, as documented and as `Display` writes it.
    pub(super) fn name(self) -> &'static str {
        self.spec().name
    }

    /// The key spelled `name`, in any case.
    pub(super) fn lookup(name: &str) -> Option<OptionKey> {
        OptionKey::ALL
            .into_iter()
            .find(|key| key.name().eq_ignore_ascii_case(name))
    }
}

// The table. `parse` reads a value with a syntax of `values` and stores it (`None`: a
// bad value); `display` gives what to write, or `None` to write nothing.
option_keys! {
    Password {
        name: "password",
        doc: ["Password (`AUTH`); never printed", "text", "none"],
        role: Role::Secret,
        expected: TEXT,
        parse: |s, v, _| put_some(&mut s.options.password, text(v).map(Secret::new)),
        display: never,
    }
    User {
        name: "user",
        doc: ["ACL user name", "text", "none (`default`)"],
        role: Role::Plain,
        expected: TEXT,
        parse: |s, v, _| put_some(&mut s.options.user, text(v)),
        display: |o, _| o.user.clone(),
    }
    Name {
        name: "name",
        doc: [
            "Client name (`CLIENT SETNAME`); no spaces or special characters",
            "text",
            "none"
        ],
        role: Role::Plain,
        expected: NAME,
        parse: |s, v, _| put_some(&mut s.options.client_name, client_name(v)),
        display: |o, _| o.client_name.clone(),
    }
    DefaultDatabase {
        name: "defaultDatabase",
        doc: ["Database to `SELECT`", "0 to 4294967295", "0"],
        role: Role::Plain,
        expected: DATABASE,
        parse: |s, v, _| put(&mut s.options.database, whole(v)),
        display: |o, d| differs(o.database, d.database, to_text),
    }
    Ssl {
        name: "ssl",
        doc: ["TLS on or off", "boolean", "false (true for `rediss://`)"],
        role: Role::Plain,
        expected: BOOL,
        parse: |s, v, at| put_some(&mut s.ssl, boolean(v).map(|on| (on, at))),
        display: |o, _| match o.provider_tls() {
            ProviderSays::Omit => None,
            ProviderSays::WritePinnedDefault => Some("false".to_string()),
            ProviderSays::Nothing => o.tls.as_ref().map(|_| "true".to_string()),
        },
    }
    SslHost {
        name: "sslHost",
        doc: ["Name to verify and send as SNI", "host name", "the endpoint host"],
        role: Role::TlsDetail,
        expected: HOST,
        parse: |s, v, _| put_some(&mut s.tls.server_name, host_name(v)),
        display: |o, _| o.tls.as_ref()?.server_name.clone(),
    }
    SslCaFile {
        name: "sslCaFile",
        doc: [
            "PEM file of CA certificates to trust instead of the public roots",
            "path",
            "public roots"
        ],
        role: Role::TlsDetail,
        expected: PATH,
        parse: |s, v, _| put_some(&mut s.tls.ca_file, path(v)),
        display: |o, _| Some(o.tls.as_ref()?.ca_file.as_ref()?.display().to_string()),
    }
    SslCert {
        name: "sslCert",
        doc: ["PEM client certificate chain (mutual TLS); needs `sslKey`", "path", "none"],
        role: Role::TlsDetail,
        expected: PATH,
        parse: |s, v, _| put_some(&mut s.tls.client_cert_file, path(v)),
        display: |o, _| Some(o.tls.as_ref()?.client_cert_file.as_ref()?.display().to_string()),
    }
    SslKey {
        name: "sslKey",
        doc: ["PEM private key of `sslCert`; needs `sslCert`", "path", "none"],
        role: Role::TlsDetail,
        expected: PATH,
        parse: |s, v, _| put_some(&mut s.tls.client_key_file, path(v)),
        display: |o, _| Some(o.tls.as_ref()?.client_key_file.as_ref()?.display().to_string()),
    }
    SslVerify {
        name: "sslVerify",
        doc: [
            "Verify the server certificate (false logs a warning, once per client)",
            "boolean",
            "true"
        ],
        role: Role::TlsDetail,
        expected: BOOL,
        parse: |s, v, _| put(&mut s.tls.verify, boolean(v)),
        display: |o, _| (!o.tls.as_ref()?.verify).then(|| "false".to_string()),
    }
    ConnectTimeout {
        name: "connectTimeout",
        doc: ["Time to connect and complete the handshake", "ms", "5000"],
        role: Role::Plain,
        expected: MILLIS,
        parse: |s, v, _| put(&mut s.options.connect_timeout, millis(v)),
        display: |o, d| differs(o.connect_timeout, d.connect_timeout, millis_text),
    }
    SyncTimeout {
        name: "syncTimeout",
        doc: ["Default time a command waits for its reply", "ms", "5000"],
        role: Role::Plain,
        expected: MILLIS,
        parse: |s, v, _| put(&mut s.options.command_timeout, millis(v)),
        display: |o, d| differs(o.command_timeout, d.command_timeout, millis_text),
    }
    KeepAlive {
        name: "keepAlive",
        doc: ["An idle connection is sent a heartbeat `PING` after this (an idle lane or blocking connection is closed instead, and opened again when next wanted)", "ms", "10000"],
        role: Role::Plain,
        expected: MILLIS,
        parse: |s, v, _| put(&mut s.options.keep_alive, millis(v)),
        display: |o, d| differs(o.keep_alive, d.keep_alive, millis_text),
    }
    Protocol {
        name: "protocol",
        doc: ["Force a RESP version", "`resp2`, `resp3`, `2`, `3`", "RESP3, falling back to RESP2"],
        role: Role::Plain,
        expected: PROTOCOL,
        parse: |s, v, _| {
            put_some(&mut s.options.protocol, protocol(v))?;
            s.options.explicit.protocol = true;
            Some(())
        },
        display: |o, _| match o.provider_protocol() {
            ProviderSays::Omit => None,
            _ => o.protocol.map(protocol_name),
        },
    }
    AbortConnect {
        name: "abortConnect",
        doc: ["Fail `connect` when the first connection cannot be made", "boolean", "true"],
        role: Role::Plain,
        expected: BOOL,
        parse: |s, v, _| put(&mut s.options.abort_connect, boolean(v)),
        display: |o, d| differs(o.abort_connect, d.abort_connect, to_text),
    }
    Backlog {
        name: "backlog",
        doc: ["What commands do while disconnected", "`queue`, `failfast`", "`queue`"],
        role: Role::Plain,
        expected: BACKLOG,
        parse: |s, v, _| put(&mut s.options.backlog, backlog(v)),
        display: |o, d| differs(o.backlog, d.backlog, backlog_name),
    }
    BacklogLimit {
        name: "backlogLimit",
        doc: ["How many callers may wait for the connection at once", "count, at least 1", "10000"],
        role: Role::Plain,
        expected: COUNT,
        parse: |s, v, _| put(&mut s.options.backlog_limit, count(v)),
        display: |o, d| differs(o.backlog_limit, d.backlog_limit, to_text),
    }
    ReconnectMin {
        name: "reconnectMin",
        doc: ["First reconnect delay (doubles up to `reconnectMax`)", "ms", "100"],
        role: Role::Plain,
        expected: MILLIS,
        parse: |s, v, _| put(&mut s.options.reconnect_min_delay, millis(v)),
        display: |o, d| differs(o.reconnect_min_delay, d.reconnect_min_delay, millis_text),
    }
    ReconnectMax {
        name: "reconnectMax",
        doc: ["Longest reconnect delay; not below `reconnectMin`", "ms", "5000"],
        role: Role::Plain,
        expected: MILLIS,
        parse: |s, v, _| put(&mut s.options.reconnect_max_delay, millis(v)),
        display: |o, d| differs(o.reconnect_max_delay, d.reconnect_max_delay, millis_text),
    }
    BlockingPool {
        name: "blockingPool",
        doc: ["Connections for blocking commands, per server", "count, at least 1", "4"],
        role: Role::Plain,
        expected: COUNT,
        parse: |s, v, _| put(&mut s.options.blocking_pool_size, count(v)),
        display: |o, d| differs(o.blocking_pool_size, d.blocking_pool_size, to_text),
    }
    Lanes {
        name: "lanes",
        doc: [
            "Connections per server beside the shared one, for callers that find it busy",
            "count, 0 to 8 (0: off)",
            "1"
        ],
        role: Role::Plain,
        expected: LANE_COUNT,
        parse: |s, v, _| put(&mut s.options.lanes, lane_count(v)),
        display: |o, d| differs(o.lanes, d.lanes, to_text),
    }
    ReplicaReads {
        name: "replicaReads",
        doc: [
            "Send read-only commands to replicas (cluster: with `READONLY`; \
             primary/replica and Sentinel: by role)",
            "boolean",
            "false"
        ],
        role: Role::Plain,
        expected: BOOL,
        parse: |s, v, _| put(&mut s.options.replica_reads, boolean(v)),
        display: |o, d| differs(o.replica_reads, d.replica_reads, to_text),
    }
    MaintNotifications {
        name: "maintNotifications",
        doc: [
            "Maintenance notifications opt-in (`enabled` means *required*)",
            "`disabled`, `auto`, `enabled`",
            "`disabled`"
        ],
        role: Role::Plain,
        expected: MAINT_MODE,
        parse: |s, v, _| {
            put(&mut s.options.maint_notifications, maint_mode(v))?;
            s.options.explicit.maint = true;
            Some(())
        },
        display: |o, d| match o.provider_maint() {
            ProviderSays::Omit => None,
            ProviderSays::WritePinnedDefault => Some(maint_mode_name(o.maint_notifications)),
            ProviderSays::Nothing => {
                differs(o.maint_notifications, d.maint_notifications, maint_mode_name)
            }
        },
    }
    MaintRelaxedTimeout {
        name: "maintRelaxedTimeout",
        doc: ["Command timeout during maintenance (a floor)", "**seconds**", "10"],
        role: Role::Plain,
        expected: SECONDS,
        parse: |s, v, _| put(&mut s.options.maint_relaxed_timeout, seconds(v)),
        display: |o, d| differs(o.maint_relaxed_timeout, d.maint_relaxed_timeout, seconds_text),
    }
    MaintRelaxedWindowMax {
        name: "maintRelaxedWindowMax",
        doc: [
            "Backstop for a relaxed window nothing closes",
            "**seconds**",
            "3 × relaxed timeout"
        ],
        role: Role::Plain,
        expected: SECONDS,
        parse: |s, v, _| put_some(&mut s.options.maint_relaxed_window_max, seconds(v)),
        display: |o, _| o.maint_relaxed_window_max.map(seconds_text),
    }
    MaintPostEventRelaxed {
        name: "maintPostEventRelaxed",
        doc: ["Relaxed tail after a closing notification", "**seconds**", "2 × relaxed timeout"],
        role: Role::Plain,
        expected: SECONDS,
        parse: |s, v, _| put_some(&mut s.options.maint_post_event_relaxed, seconds(v)),
        display: |o, _| o.maint_post_event_relaxed.map(seconds_text),
    }
    MaintMovingEndpointType {
        name: "maintMovingEndpointType",
        doc: [
            "Address form `MOVING` should carry",
            "`internal-ip`, `internal-fqdn`, `external-ip`, `external-fqdn`, `none`",
            "detected"
        ],
        role: Role::Plain,
        expected: MOVING_TYPE,
        parse: |s, v, _| put_some(&mut s.options.maint_moving_endpoint_type, moving_type(v)),
        display: |o, _| o.maint_moving_endpoint_type.map(|t| t.as_str().to_string()),
    }
    Defaults {
        name: "defaults",
        doc: [
            "Provider whose deployment defaults apply ([`Options::provider`]): \
             they fill in only what is not set",
            "`amr`, `azure`, `rediscloud`, `enterprise`",
            "recognised from the host"
        ],
        role: Role::Plain,
        expected: PROVIDER,
        parse: |s, v, _| put_some(&mut s.options.defaults, provider(v)),
        display: |o, _| o.defaults.clone(),
    }
    ServiceName {
        name: "serviceName",
        doc: [
            "Redis Sentinel: the service (master) name; the endpoints are then the sentinels",
            "text without spaces",
            "none"
        ],
        role: Role::Plain,
        expected: SERVICE,
        parse: |s, v, _| put_some(&mut s.options.service_name, service_name(v)),
        display: |o, _| o.service_name.clone(),
    }
    SentinelUser {
        name: "sentinelUser",
        doc: ["ACL user for the sentinels (the data nodes use `user`)", "text", "none"],
        role: Role::Plain,
        expected: TEXT,
        parse: |s, v, _| put_some(&mut s.options.sentinel_user, text(v)),
        display: |o, _| o.sentinel_user.clone(),
    }
    SentinelPassword {
        name: "sentinelPassword",
        doc: [
            "Password for the sentinels (the data nodes use `password`); never printed",
            "text",
            "none"
        ],
        role: Role::Secret,
        expected: TEXT,
        parse: |s, v, _| put_some(&mut s.options.sentinel_password, text(v).map(Secret::new)),
        display: never,
    }
}
