//! `Options`: everything that configures one deployment's client, with defaults.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// One `host:port` a client may connect to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// Host name or address literal (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// A new endpoint.
    pub fn new(host: impl Into<String>, port: u16) -> Endpoint {
        Endpoint {
            host: host.into(),
            port,
        }
    }
}

/// Writes `host:port`, with IPv6 literals in brackets.
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A password or other secret: never shown by `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The RESP version to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2: no `HELLO`.
    Resp2,
    /// RESP3 via `HELLO 3`.
    Resp3,
}

/// Whether to opt in to maintenance notifications (see [`crate::maintenance`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MaintNotifications {
    /// Never ask (the default: most servers have never heard of the subcommand).
    #[default]
    Disabled,
    /// Ask on every connection; a refusal (or a server that cannot speak RESP3) is
    /// absorbed, logged once per endpoint at debug level, and the connection works
    /// without them, for its whole life.
    Auto,
    /// **Required**, not merely "on": a connection is refused, with an error saying
    /// why, when the server refuses the subcommand, answers `HELLO 3` in RESP2, or the
    /// configuration cannot ask (`protocol=resp2`). On Redis Enterprise a cluster-level
    /// flag decides whether the subcommand exists at all.
    Enabled,
}

/// Which form of address a `MOVING` notification should carry. The server defines
/// the list, so it may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MovingEndpointType {
    /// `internal-ip`
    InternalIp,
    /// `internal-fqdn`
    InternalFqdn,
    /// `external-ip`
    ExternalIp,
    /// `external-fqdn`
    ExternalFqdn,
    /// `none`
    None,
}

impl MovingEndpointType {
    /// The wire name (`internal-ip`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MovingEndpointType::InternalIp => "internal-ip",
            MovingEndpointType::InternalFqdn => "internal-fqdn",
            MovingEndpointType::ExternalIp => "external-ip",
            MovingEndpointType::ExternalFqdn => "external-fqdn",
            MovingEndpointType::None => "none",
        }
    }
}

/// What a command does while the connection is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BacklogPolicy {
    /// Wait (up to the command's timeout) for the connection to come back.
    #[default]
    Queue,
    /// Fail at once with `ErrorKind::ConnectionClosed`.
    FailFast,
}

/// TLS settings. Certificates are verified unless `verify` is turned off explicitly.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsOptions {
    /// The name to verify and send as SNI (`sslHost`); defaults to the endpoint host.
    pub server_name: Option<String>,
    /// A PEM file of CA certificates to trust instead of the public roots (`sslCaFile`).
    pub ca_file: Option<PathBuf>,
    /// PEM CA certificates to trust, given in memory (a trusted issuer).
    pub ca_pem: Option<Vec<u8>>,
    /// A PEM client certificate chain for mutual TLS (`sslCert`).
    pub client_cert_file: Option<PathBuf>,
    /// The PEM private key of the client certificate (`sslKey`).
    pub client_key_file: Option<PathBuf>,
    /// Verify the server's certificate (`sslVerify`, default true). Turning it off logs a
    /// warning on every connect.
    pub verify: bool,
}

impl Default for TlsOptions {
    fn default() -> TlsOptions {
        TlsOptions {
            server_name: None,
            ca_file: None,
            ca_pem: None,
            client_cert_file: None,
            client_key_file: None,
            verify: true,
        }
    }
}

/// Configuration of one deployment's client.
///
/// Start from `Options::default()` and chain its setters (`.endpoint(..)`,
/// `.command_timeout(..)`), parse it from a URL or an option string with
/// [`Options::parse`], or set fields.
///
/// ```
/// use resilient_redis::Options;
/// let o = Options::parse("127.0.0.1:6379,password=secret,syncTimeout=2000").unwrap();
/// assert_eq!(o.command_timeout.as_millis(), 2000);
/// assert!(!o.to_string().contains("secret"));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Servers to connect to (for a cluster, seed nodes).
    pub endpoints: Vec<Endpoint>,
    /// ACL user name (`user`).
    pub user: Option<String>,
    /// Password (`password`): never printed.
    pub password: Option<Secret>,
    /// Database index to `SELECT` (`defaultDatabase`, or the URL path).
    pub database: u32,
    /// `CLIENT SETNAME` value (`name`).
    pub client_name: Option<String>,
    /// TLS settings; `None` for plain TCP (`ssl`, `rediss://`).
    pub tls: Option<TlsOptions>,
    /// Time allowed to connect and complete the handshake (`connectTimeout`, ms; 5000).
    pub connect_timeout: Duration,
    /// Default time a command waits for its reply (`syncTimeout`, ms; 5000).
    pub command_timeout: Duration,
    /// A connection idle this long is sent a heartbeat `PING` (`keepAlive`, ms; 10000).
    pub keep_alive: Duration,
    /// Forced protocol (`protocol=resp2|resp3`); `None` tries RESP3 and falls back.
    pub protocol: Option<Protocol>,
    /// Fail `connect` when the first connection cannot be made (`abortConnect`; true).
    /// When false, the client is returned at once and keeps trying in the background.
    pub abort_connect: bool,
    /// What commands do while disconnected (`backlog=queue|failfast`).
    pub backlog: BacklogPolicy,
    /// How many callers may wait for the connection at once (`backlogLimit`; 10000).
    pub backlog_limit: usize,
    /// First reconnect delay (`reconnectMin`, ms; 100); doubles up to `reconnect_max_delay`.
    pub reconnect_min_delay: Duration,
    /// Longest reconnect delay (`reconnectMax`, ms; 5000).
    pub reconnect_max_delay: Duration,
    /// Dedicated connections for blocking commands, per server (`blockingPool`; 4).
    pub blocking_pool_size: usize,
    /// Connections per server beside the shared one, taken by a caller that finds the
    /// shared one busy so that with a handful of threads each is often alone on a
    /// connection and reads its own reply (`lanes`; 1; 0 turns them off). Opened in
    /// the background when first wanted.
    pub lanes: usize,
    /// Read-only commands go to replicas (`replicaReads`; false: replicas may lag, so
    /// this is opt-in): in a cluster their connections send `READONLY`; in a
    /// primary/replica or Sentinel deployment they go to a replica whose `ROLE` (or
    /// sentinel) says so, else to the primary.
    pub replica_reads: bool,
    /// Maintenance notifications opt-in (`maintNotifications`).
    pub maint_notifications: MaintNotifications,
    /// Relaxed command timeout during maintenance (`maintRelaxedTimeout`, seconds; 10).
    pub maint_relaxed_timeout: Duration,
    /// Backstop for a relaxed window with no closing notification
    /// (`maintRelaxedWindowMax`, seconds; default 3 x relaxed timeout).
    pub maint_relaxed_window_max: Option<Duration>,
    /// Tail after a closing notification (`maintPostEventRelaxed`, seconds; default
    /// 2 x relaxed timeout).
    pub maint_post_event_relaxed: Option<Duration>,
    /// `moving-endpoint-type` to ask for (`maintMovingEndpointType`); detected when unset.
    pub maint_moving_endpoint_type: Option<MovingEndpointType>,
    /// A provider chosen explicitly with `defaults=<name>` (see [`Options::provider`]).
    pub defaults: Option<String>,
    /// Redis Sentinel: the service (master) name to ask the sentinels for
    /// (`serviceName`, or the path of a `redis+sentinel://` URL). When set, `endpoints`
    /// are the sentinels, not the data nodes.
    pub service_name: Option<String>,
    /// ACL user for the sentinels (`sentinelUser`); the data nodes use `user`.
    pub sentinel_user: Option<String>,
    /// Password for the sentinels (`sentinelPassword`): never printed.
    pub sentinel_password: Option<Secret>,
    /// How every connection resolves its endpoint's host name (`None`: the system
    /// resolver, [`SystemResolver`](crate::resolve::SystemResolver)). Code only: no
    /// option-string key. Tests inject `testkit::ScriptedResolver` to move a record.
    pub resolver: Option<std::sync::Arc<dyn crate::resolve::Resolver>>,
    /// Where every connection gets its credentials when it authenticates (see
    /// [`CredentialsProvider`](super::CredentialsProvider)); takes the place of `user`
    /// and `password`. Code only: no option-string key, and never written by `Display`.
    pub credentials: Option<std::sync::Arc<dyn super::CredentialsProvider>>,
    /// Which provider-defaultable settings were given explicitly.
    pub(crate) explicit: Explicit,
}

/// Which of the settings a provider may default were given explicitly, in an option
/// string, a URL or through the setters of `Options`: a provider's defaults never override
/// them, not even when they hold the library default (`ssl=false`). A field assigned
/// directly in code counts as set when it differs from the library default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Explicit {
    /// `ssl`, a `rediss://` scheme, `Options::tls` / `no_tls`.
    pub tls: bool,
    /// `protocol`, `Options::protocol`.
    pub protocol: bool,
    /// `maintNotifications`, `Options::maint_notifications`.
    pub maint: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            endpoints: Vec::new(),
            user: None,
            password: None,
            database: 0,
            client_name: None,
            tls: None,
            connect_timeout: Duration::from_millis(5000),
            command_timeout: Duration::from_millis(5000),
            keep_alive: Duration::from_millis(10_000),
            protocol: None,
            abort_connect: true,
            backlog: BacklogPolicy::Queue,
            backlog_limit: 10_000,
            reconnect_min_delay: Duration::from_millis(100),
            reconnect_max_delay: Duration::from_millis(5000),
            blocking_pool_size: 4,
            lanes: 1,
            replica_reads: false,
            maint_notifications: MaintNotifications::Disabled,
            maint_relaxed_timeout: Duration::from_secs(10),
            maint_relaxed_window_max: None,
            maint_post_event_relaxed: None,
            maint_moving_endpoint_type: None,
            defaults: None,
            service_name: None,
            sentinel_user: None,
            sentinel_password: None,
            resolver: None,
            credentials: None,
            explicit: Explicit::default(),
        }
    }
}

/// Setters that take and return `self`, named after the setting, so options are
/// written as one expression (the crate's one configuration idiom: a value, its
/// `Default`, and consuming setters):
///
/// ```
/// use resilient_redis::Options;
/// use std::time::Duration;
/// let o = Options::default()
///     .endpoint("127.0.0.1:6379")
///     .command_timeout(Duration::from_millis(250));
/// assert_eq!(o.endpoints[0].port, 6379);
/// ```
impl Options {
    /// Adds an endpoint given as `host:port` (`[v6]:port`; a missing port means 6379).
    /// An endpoint that cannot be parsed is kept as a host with port 6379 and rejected
    /// by `Client::connect` with a configuration error.
    pub fn endpoint(mut self, endpoint: &str) -> Self {
        let parsed = super::parse::parse_endpoint(endpoint)
            .unwrap_or_else(|_| Endpoint::new(endpoint, 6379));
        self.endpoints.push(parsed);
        self
    }
    /// ACL user.
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }
    /// Password.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(Secret::new(password));
        self
    }
    /// Database index.
    pub fn database(mut self, db: u32) -> Self {
        self.database = db;
        self
    }
    /// Client name.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = Some(name.into());
        self
    }
    /// TLS settings.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self.explicit.tls = true;
        self
    }
    /// Plain TCP, even where a provider's defaults would turn TLS on (the builder's
    /// counterpart of `ssl=false`).
    pub fn no_tls(mut self) -> Self {
        self.tls = None;
        self.explicit.tls = true;
        self
    }
    /// Connect timeout.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }
    /// Default command timeout.
    pub fn command_timeout(mut self, d: Duration) -> Self {
        self.command_timeout = d;
        self
    }
    /// Heartbeat interval for idle connections.
    pub fn keep_alive(mut self, d: Duration) -> Self {
        self.keep_alive = d;
        self
    }
    /// Forced protocol.
    pub fn protocol(mut self, p: Protocol) -> Self {
        self.protocol = Some(p);
        self.explicit.protocol = true;
        self
    }
    /// Whether `connect` fails when the first connection cannot be made.
    pub fn abort_connect(mut self, abort: bool) -> Self {
        self.abort_connect = abort;
        self
    }
    /// Backlog policy while disconnected.
    pub fn backlog(mut self, policy: BacklogPolicy) -> Self {
        self.backlog = policy;
        self
    }
    /// Reconnect back-off bounds.
    pub fn reconnect_delay(mut self, min: Duration, max: Duration) -> Self {
        self.reconnect_min_delay = min;
        self.reconnect_max_delay = max;
        self
    }
    /// Read-only commands go to replicas (see [`Options::replica_reads`]).
    pub fn replica_reads(mut self, on: bool) -> Self {
        self.replica_reads = on;
        self
    }
    /// Maintenance notifications opt-in (explicit: a provider's default never
    /// overrides it, `Disabled` included).
    pub fn maint_notifications(mut self, mode: MaintNotifications) -> Self {
        self.maint_notifications = mode;
        self.explicit.maint = true;
        self
    }
    /// Relaxed timeouts during maintenance: the relaxed command timeout (a floor),
    /// the backstop of a window nothing closes, and the tail after a closing
    /// notification (`None`: 3x and 2x the relaxed timeout).
    pub fn maint_relaxed_timeouts(
        mut self,
        relaxed: Duration,
        window_max: Option<Duration>,
        post_event: Option<Duration>,
    ) -> Self {
        self.maint_relaxed_timeout = relaxed;
        self.maint_relaxed_window_max = window_max;
        self.maint_post_event_relaxed = post_event;
        self
    }
    /// The credentials provider every connection asks when it authenticates (see
    /// [`Options::credentials`]).
    pub fn credentials(mut self, provider: std::sync::Arc<dyn super::CredentialsProvider>) -> Self {
        self.credentials = Some(provider);
        self
    }

    /// Redis Sentinel: the service name to ask the sentinels for; the endpoints given
    /// are then the sentinels (see [`Options::service_name`]).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }
    /// Redis Sentinel: the ACL user and password the sentinels want (the data nodes
    /// use `user` and `password`).
    pub fn sentinel_auth(mut self, user: Option<&str>, password: impl Into<String>) -> Self {
        self.sentinel_user = user.map(str::to_string);
        self.sentinel_password = Some(Secret::new(password));
        self
    }
    /// The resolver every connection uses (see [`Options::resolver`]).
    pub fn resolver(mut self, resolver: std::sync::Arc<dyn crate::resolve::Resolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }
}
