//! The one error type of the crate and its classifications.
//!
//! Owns: `Error`, `ErrorKind` (what went wrong, classified for retries and circuit
//! breaking), `FailureKind` (why a connection failed) and `MaintenanceKind` (which
//! announced maintenance was in force). Must never: carry a command's arguments, a
//! password or any other secret; errors name the endpoint and the command name only.

use std::fmt;
use std::io;
use std::sync::Arc;

/// The underlying error a classified one came from (shared: `Error` is `Clone`).
type Source = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A classified error: what went wrong, where (endpoint), and for which command (name only).
///
/// ```
/// use resilient_redis::{Error, ErrorKind};
/// let e = Error::new(ErrorKind::Timeout, "no reply within 5000 ms");
/// assert!(e.is_transient());
/// assert_eq!(e.kind(), ErrorKind::Timeout);
/// ```
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    detail: String,
    endpoint: Option<String>,
    command: Option<String>,
    failure: Option<FailureKind>,
    maintenance: MaintenanceKind,
    unsent: bool,
    /// What it came from (an I/O error, a TLS error), for `std::error::Error::source`.
    source: Option<Source>,
}

/// What went wrong, classified so that retries and circuit breakers can decide on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The connection was closed (by the peer, by us, or it was never open).
    ConnectionClosed,
    /// An I/O error on the socket.
    Io,
    /// No reply within the caller's timeout.
    Timeout,
    /// Could not connect: refused, unreachable, a name that does not resolve, or no
    /// connection within the connect timeout (a reply's timeout is `Timeout`).
    Connect,
    /// The server is loading its dataset (`-LOADING`).
    Loading,
    /// A script is running and the server is busy (`-BUSY`).
    Busy,
    /// A cluster slot is being migrated; try again (`-TRYAGAIN`).
    TryAgain,
    /// The cluster is down (`-CLUSTERDOWN`).
    ClusterDown,
    /// The slot moved permanently (`-MOVED`).
    Moved,
    /// The slot is being migrated; ask the other node (`-ASK`).
    Ask,
    /// Keys of one command hash to different slots (`-CROSSSLOT` or detected before sending).
    CrossSlot,
    /// A write was sent to a replica (`-READONLY`).
    ReadOnly,
    /// The master is down (`-MASTERDOWN`).
    MasterDown,
    /// Operation against a key holding the wrong kind of value (`-WRONGTYPE`).
    WrongType,
    /// The server does not know the command.
    UnknownCommand,
    /// EVALSHA of a script the server does not have (`-NOSCRIPT`).
    NoScript,
    /// A script raised an error.
    Script,
    /// Authentication failed or is required (`-WRONGPASS`, `-NOAUTH`, `-NOPERM`).
    Auth,
    /// Any other error reply from the server (`-ERR ...` and unknown prefixes).
    Server,
    /// The transaction was aborted because EXEC saw `-EXECABORT`.
    ExecAbort,
    /// The peer broke the protocol (malformed frame, absurd length, too deep nesting).
    Protocol,
    /// A reply could not be converted to the type the caller asked for.
    TypeMismatch,
    /// Bad configuration: an unknown key, a bad value, a URL that cannot be parsed.
    Config,
    /// TLS setup or handshake failure (certificate, trust, SNI).
    Tls,
    /// The caller asked for something the client cannot do (e.g. a bad argument).
    InvalidInput,
    /// Too many commands are waiting for the connection to come back.
    BacklogFull,
    /// The client or group has been closed.
    Closed,
    /// No member of an availability group could take the call (each member's cause is
    /// in the detail); transient: a member may come back, or another take over.
    Unavailable,
}

impl ErrorKind {
    /// Whether a later attempt (on this server or another) may succeed.
    ///
    /// Transient faults are retried by `RetryPolicy` and counted by circuit breakers;
    /// application errors (WRONGTYPE, unknown command, a script error) are not.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectionClosed
                | ErrorKind::Io
                | ErrorKind::Timeout
                | ErrorKind::Connect
                | ErrorKind::Loading
                | ErrorKind::Busy
                | ErrorKind::TryAgain
                | ErrorKind::ClusterDown
                | ErrorKind::MasterDown
                | ErrorKind::ReadOnly
                | ErrorKind::BacklogFull
                | ErrorKind::Unavailable
        )
    }

    /// Whether this kind says the connection itself is unusable (as opposed to one reply).
    pub fn is_connection_level(self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectionClosed
                | ErrorKind::Io
                | ErrorKind::Connect
                | ErrorKind::Protocol
                | ErrorKind::Tls
        )
    }

    /// Classifies an error reply by its first word, as the server sends it.
    pub fn from_server_code(code: &str) -> ErrorKind {
        match code {
            "LOADING" => ErrorKind::Loading,
            "BUSY" => ErrorKind::Busy,
            "TRYAGAIN" => ErrorKind::TryAgain,
            "CLUSTERDOWN" => ErrorKind::ClusterDown,
            "MOVED" => ErrorKind::Moved,
            "ASK" => ErrorKind::Ask,
            "CROSSSLOT" => ErrorKind::CrossSlot,
            "READONLY" => ErrorKind::ReadOnly,
            "MASTERDOWN" => ErrorKind::MasterDown,
            "WRONGTYPE" => ErrorKind::WrongType,
            "NOSCRIPT" => ErrorKind::NoScript,
            "WRONGPASS" | "NOAUTH" | "NOPERM" => ErrorKind::Auth,
            "EXECABORT" => ErrorKind::ExecAbort,
            _ => ErrorKind::Server,
        }
    }
}

/// Why a physical connection failed, reported in `ClientEvent::ConnectionFailed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The socket reported an error.
    SocketFailure,
    /// The peer closed the socket.
    SocketClosed,
    /// The connection stopped answering: closed once every call in flight on it was
    /// past its own deadline, or a group's health check found its member hung.
    Timeout,
    /// Could not connect, or the handshake failed.
    ConnectFailed,
    /// Authentication was refused during the handshake.
    AuthenticationFailure,
    /// The peer broke the protocol.
    ProtocolFailure,
    /// A circuit breaker tripped and closed the connection.
    CircuitBreaker,
    /// The connection was recycled to follow an announced MOVING.
    MaintenanceHandoff,
    /// The client closed it on purpose.
    ClosedByClient,
}

/// Which announced maintenance was in force on a server when something happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum MaintenanceKind {
    /// No announced maintenance.
    #[default]
    None,
    /// The endpoint is moving (`MOVING`).
    Moving,
    /// A shard is migrating (`MIGRATING`).
    Migrating,
    /// A shard is failing over (`FAILING_OVER`).
    FailingOver,
    /// Cluster slots are migrating (`SMIGRATING`).
    SlotMigrating,
    /// A maintenance operation just ended; timeouts are still relaxed for its tail.
    Settling,
}

impl Error {
    /// A new error of `kind` with a human-readable detail (never a secret or argument).
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Error {
        Error {
            kind,
            detail: detail.into(),
            endpoint: None,
            command: None,
            failure: None,
            maintenance: MaintenanceKind::None,
            unsent: false,
            source: None,
        }
    }

    /// Attaches the error this one came from, returned by
    /// [`std::error::Error::source`] (an I/O error, a TLS error, a provider's own
    /// error). Its text must hold no secret: it is shown wherever the chain is printed.
    ///
    /// ```
    /// use std::error::Error as _;
    /// use resilient_redis::{Error, ErrorKind};
    /// let io = std::io::Error::new(std::io::ErrorKind::Other, "identity service unreachable");
    /// let e = Error::new(ErrorKind::Auth, "no token").with_source(io);
    /// assert_eq!(e.source().unwrap().to_string(), "identity service unreachable");
    /// ```
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Error {
        self.source = Some(Arc::new(source));
        self
    }

    /// Marks an error whose command never reached the server (safe to send elsewhere).
    pub(crate) fn unsent(mut self) -> Error {
        self.unsent = true;
        self
    }

    /// Whether the command never reached the server.
    pub(crate) fn is_unsent(&self) -> bool {
        self.unsent
    }

    /// An error reply from the server, classified by its code (`WRONGTYPE ...`).
    pub fn from_server_reply(message: &str) -> Error {
        let code = message.split(' ').next().unwrap_or("");
        let mut kind = ErrorKind::from_server_code(code);
        if kind == ErrorKind::Server && is_unknown_command(message) {
            kind = ErrorKind::UnknownCommand;
        }
        if kind == ErrorKind::Server && code == "ERR" && message.contains("Error running script") {
            kind = ErrorKind::Script;
        }
        // The server quotes the arguments of a command it does not know; arguments can
        // be secrets, so that part is cut.
        let message = match message.find(", with args beginning with:") {
            Some(i) => &message[..i],
            None => message,
        };
        Error::new(kind, redact_quoted(message))
    }

    /// The error with every occurrence of `secret` in its detail replaced: for replies
    /// to commands that carried it (a proxy answering `AUTH` with "invalid password
    /// 'xyz'" unquoted or quoted differently).
    pub(crate) fn redacting(mut self, secret: &str) -> Error {
        if !secret.is_empty() && self.detail.contains(secret) {
            self.detail = self.detail.replace(secret, REDACTED);
        }
        self
    }

    /// The same error with another detail (kind, endpoint, command, failure and
    /// maintenance kept).
    pub(crate) fn with_detail(mut self, detail: impl Into<String>) -> Error {
        self.detail = detail.into();
        self
    }

    /// Attaches the endpoint the error happened on.
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Error {
        if self.endpoint.is_none() {
            self.endpoint = Some(endpoint.into());
        }
        self
    }

    /// Attaches the command name (never its arguments).
    pub fn with_command(mut self, command: impl Into<String>) -> Error {
        if self.command.is_none() {
            self.command = Some(command.into());
        }
        self
    }

    /// Attaches the connection failure kind that caused this error.
    pub fn with_failure(mut self, failure: FailureKind) -> Error {
        self.failure = Some(failure);
        self
    }

    /// Attaches the maintenance in force when the error happened.
    pub fn with_maintenance(mut self, maintenance: MaintenanceKind) -> Error {
        self.maintenance = maintenance;
        self
    }

    /// The classified kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether a later attempt may succeed (see [`ErrorKind::is_transient`]).
    pub fn is_transient(&self) -> bool {
        self.kind.is_transient()
    }

    /// The endpoint the error happened on, when known.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// The command name, when the error belongs to a command.
    pub fn command(&self) -> Option<&str> {
        self.command.as_deref()
    }

    /// The connection failure behind this error, when there was one.
    pub fn failure(&self) -> Option<FailureKind> {
        self.failure
    }

    /// The announced maintenance in force when it happened.
    pub fn maintenance(&self) -> MaintenanceKind {
        self.maintenance
    }

    /// The human-readable detail (for server errors: the server's message).
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// For `-MOVED`/`-ASK`: the slot and the `host:port` the server redirects to.
    pub fn redirect(&self) -> Option<(u16, &str)> {
        if !matches!(self.kind, ErrorKind::Moved | ErrorKind::Ask) {
            return None;
        }
        let mut words = self.detail.split(' ');
        words.next()?;
        let slot = words.next()?.parse().ok()?;
        let addr = words.next()?;
        Some((slot, addr))
    }
}

fn is_unknown_command(message: &str) -> bool {
    message.starts_with("ERR unknown command") || message.starts_with("ERR unknown subcommand")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.detail)?;
        if let Some(command) = &self.command {
            write!(f, " (command {command}")?;
            if let Some(endpoint) = &self.endpoint {
                write!(f, " on {endpoint}")?;
            }
            write!(f, ")")?;
        } else if let Some(endpoint) = &self.endpoint {
            write!(f, " (on {endpoint})")?;
        }
        if let Some(failure) = self.failure {
            write!(f, " [connection failure: {failure:?}]")?;
        }
        if self.maintenance != MaintenanceKind::None {
            write!(f, " [during maintenance: {:?}]", self.maintenance)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        let kind = match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ErrorKind::Timeout,
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::NotConnected => ErrorKind::ConnectionClosed,
            io::ErrorKind::ConnectionRefused => ErrorKind::Connect,
            _ => ErrorKind::Io,
        };
        Error::new(kind, e.to_string()).with_source(e)
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

const REDACTED: &str = "<redacted>";

/// Replaces what a server error quotes (`'...'`) with `<redacted>`: servers quote the
/// values they refuse, and a value can be a secret (`ACL SETUSER` quotes a modifier
/// it cannot parse: a password given without its `>`; some proxies quote a refused
/// password). The name of an unknown command or subcommand stays: it is what the
/// message is about. A quote opens only after a space or a bracket, so the apostrophe
/// of "it's" is no quote.
fn redact_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find('\'') {
        let before = &rest[..open];
        let opens = before.is_empty() || before.ends_with([' ', '(', '[', '{', ':']);
        let after = &rest[open + 1..];
        let close = after
            .char_indices()
            .filter(|&(_, c)| c == '\'')
            .map(|(i, _)| i)
            .find(|&i| {
                after[i + 1..]
                    .chars()
                    .next()
                    .is_none_or(|c| c.is_whitespace() || ",.;:)]}".contains(c))
            });
        let (true, Some(close)) = (opens, close) else {
            out.push_str(&rest[..=open]);
            rest = after;
            continue;
        };
        out.push_str(before);
        let lower = before.to_ascii_lowercase();
        if lower.ends_with("unknown command ") || lower.ends_with("unknown subcommand ") {
            out.push_str(&rest[open..open + close + 2]);
        } else {
            out.push('\'');
            out.push_str(REDACTED);
            out.push('\'');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    #[test]
    fn an_io_error_stays_reachable_as_the_source() {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = Error::from(io).with_endpoint("h:1");
        assert_eq!(e.kind(), ErrorKind::Connect);
        let source = e.source().expect("a source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
        assert!(Error::new(ErrorKind::Timeout, "t").source().is_none());
    }

    use super::*;

    #[test]
    fn quoted_values_in_server_errors_are_redacted_but_command_names_stay() {
        let detail = |m: &str| Error::from_server_reply(m).detail().to_string();
        assert_eq!(
            detail("ERR Error in ACL SETUSER modifier 'Secret-1': Syntax error"),
            "ERR Error in ACL SETUSER modifier '<redacted>': Syntax error"
        );
        assert_eq!(
            detail("WRONGPASS invalid password 'it''s-secret'"),
            "WRONGPASS invalid password '<redacted>'"
        );
        assert_eq!(
            detail("ERR unknown command 'FOO', with args beginning with: 'secret' "),
            "ERR unknown command 'FOO'"
        );
        assert_eq!(
            detail("ERR unknown subcommand 'nope'. Try CLIENT HELP."),
            "ERR unknown subcommand 'nope'. Try CLIENT HELP."
        );
        let plain = "MISCONF it's unable to persist, don't write";
        assert_eq!(detail(plain), plain, "apostrophes are no quotes");
        assert_eq!(detail("ERR a 'b"), "ERR a 'b", "an unclosed quote is left");
        assert_eq!(
            detail("ERR x ('a', 'b')"),
            "ERR x ('<redacted>', '<redacted>')"
        );
    }

    #[test]
    fn a_known_secret_is_redacted_wherever_it_appears() {
        let e = Error::from_server_reply("WRONGPASS bad password pw123 for user x");
        assert_eq!(
            e.clone().redacting("pw123").detail(),
            "WRONGPASS bad password <redacted> for user x"
        );
        let detail = e.detail().to_string();
        assert_eq!(
            e.redacting("").detail(),
            detail,
            "an empty secret is no secret"
        );
    }

    #[test]
    fn server_replies_are_classified_by_code() {
        assert_eq!(
            Error::from_server_reply("WRONGTYPE Operation against a key").kind(),
            ErrorKind::WrongType
        );
        assert_eq!(
            Error::from_server_reply("ERR unknown command 'FOO', with args beginning with: ")
                .kind(),
            ErrorKind::UnknownCommand
        );
        assert_eq!(
            Error::from_server_reply("LOADING Redis is loading").kind(),
            ErrorKind::Loading
        );
        assert_eq!(Error::from_server_reply("").kind(), ErrorKind::Server);
        let moved = Error::from_server_reply("MOVED 15296 127.0.0.1:6380");
        assert_eq!(moved.redirect(), Some((15296, "127.0.0.1:6380")));
    }

    #[test]
    fn display_names_endpoint_and_command() {
        let e = Error::new(ErrorKind::Timeout, "no reply")
            .with_command("GET")
            .with_endpoint("127.0.0.1:6379");
        assert_eq!(
            e.to_string(),
            "Timeout: no reply (command GET on 127.0.0.1:6379)"
        );
    }

    #[test]
    fn application_errors_are_not_transient() {
        assert!(!ErrorKind::WrongType.is_transient());
        assert!(!ErrorKind::Script.is_transient());
        assert!(ErrorKind::Loading.is_transient());
    }
}
