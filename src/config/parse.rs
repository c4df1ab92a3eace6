//! The entry point from text to `Options`, and endpoints (`host:port`).
//!
//! Owns: `Options::parse` and its documentation (the key table in it is generated from
//! the declarations in `keys`), `parse_endpoint`, and `Position`, which is how errors
//! point at the offending part of the input.
//! Must never: put user text that may hold a password into an error. Errors point with a
//! position and a key name instead of quoting the value.

use std::fmt;
use std::net::Ipv6Addr;

use super::{keys, option_string, url, Endpoint, Options};
use crate::error::{Error, ErrorKind, Result};

/// The port used when an endpoint names none.
pub(super) const DEFAULT_PORT: u16 = 6379;

/// Parses one endpoint: `host:port`, `host` (port 6379), `[v6]:port`, `[v6]`, or a bare
/// IPv6 literal such as `::1` (port 6379).
///
/// A bare IPv6 literal is read as an address only when the whole text parses as one, so
/// `::1:6380` is the address `::1:6380` on port 6379, not `::1` on port 6380: give a port
/// to an IPv6 address with brackets. Surrounding whitespace is ignored; whitespace inside,
/// an empty host, a port that is not a number from 1 to 65535 are errors.
pub(crate) fn parse_endpoint(s: &str) -> Result<Endpoint> {
    // Quoting is safe here (unlike in option strings): this text is an endpoint and
    // nothing else, so it cannot hold the tail of a password.
    endpoint_from(s).map_err(|problem| config_error(format!("bad endpoint {:?}: {problem}", s)))
}

/// `parse_endpoint` without the error wrapping: the reason only, so that callers which
/// must not quote the text (option strings, URLs) can add a position instead.
pub(super) fn endpoint_from(s: &str) -> std::result::Result<Endpoint, &'static str> {
    let s = s.trim();
    if s.is_empty() {
        return Err("the endpoint is empty");
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("an endpoint may not contain whitespace");
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (literal, after) = rest
            .split_once(']')
            .ok_or("a '[' must be closed by ']' around an IPv6 address")?;
        if literal.parse::<Ipv6Addr>().is_err() {
            return Err("brackets must hold an IPv6 address");
        }
        let port = match after {
            "" => DEFAULT_PORT,
            _ => parse_port(
                after
                    .strip_prefix(':')
                    .ok_or("expected ':port' after ']'")?,
            )?,
        };
        return Ok(Endpoint::new(literal, port));
    }
    if s.parse::<Ipv6Addr>().is_ok() {
        return Ok(Endpoint::new(s, DEFAULT_PORT));
    }
    let (host, port) = match s.split_once(':') {
        Some((_, port)) if port.contains(':') => {
            return Err("an IPv6 address with a port must be in brackets, like [::1]:6380")
        }
        Some((host, port)) => (host, parse_port(port)?),
        None => (s, DEFAULT_PORT),
    };
    if host.is_empty() {
        return Err("the host is empty");
    }
    // Why these: each is a delimiter of URLs or option strings, so a host holding one is
    // a mis-split input (often a password with an unencoded '@' or '/'), not a host.
    if host.contains(['/', '?', '#', '@', ',', '=', '[', ']', '%', '"']) {
        return Err("the host contains a character no host name can hold");
    }
    Ok(Endpoint::new(host, port))
}

fn parse_port(p: &str) -> std::result::Result<u16, &'static str> {
    const EXPECTED: &str = "the port must be a number from 1 to 65535";
    // Why the digit check: `u16::from_str` accepts a leading '+'.
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(EXPECTED);
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(EXPECTED),
        Ok(port) => Ok(port),
    }
}

/// Where in the input a key or value came from, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Position {
    /// The n-th comma-separated item of an option string (1-based, empty items counted).
    Item(usize),
    /// The n-th `&`-separated item of a URL query (1-based, empty items counted).
    QueryItem(usize),
    /// The `user:password@` part of a URL.
    UserInfo,
    /// The `/db` part of a URL.
    Path,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Item(n) => write!(f, "item {n}"),
            Position::QueryItem(n) => write!(f, "query item {n}"),
            Position::UserInfo => f.write_str("the URL user info"),
            Position::Path => f.write_str("the URL path"),
        }
    }
}

/// A configuration error with `detail`, which may name a key or a URL scheme but must
/// not hold any value, host or endpoint the user wrote.
pub(super) fn config_error(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::Config, detail)
}

impl Options {
    /// Parses a `redis://` URL or an option string.
    ///
    /// # URLs
    ///
    /// `redis://[user[:password]@]host[:port][,host2[:port2]...][/db][?key=value&...]`
    ///
    /// - `rediss://` turns TLS on with [`TlsOptions::default()`](crate::config::TlsOptions)
    ///   (certificates verified); `valkey://` and `valkeys://` are synonyms. The scheme is
    ///   case-insensitive.
    /// - User and password are percent-decoded (`%40` is `@`); a malformed escape is an
    ///   error. `redis://:password@host` gives a password alone. A `/`, `?` or `#` in a
    ///   password must be percent-encoded; an `@` need not be (the last `@` ends it).
    /// - `/db` must be a number; `/` alone means database 0.
    /// - The query takes the keys of the table below, percent-decoded (`+` stays `+`)
    ///   and trimmed like option-string items. They are applied after the rest of the
    ///   URL, so `?defaultDatabase=2` or `?password=...` override the path and the user
    ///   info. One exception:
    ///   `ssl=false` in a `rediss://` URL is an error, because the two contradict each
    ///   other and guessing wrong either drops TLS or fails every connect.
    /// - A fragment (`#...`) is an error.
    /// - **Redis Sentinel**: `redis+sentinel://[user[:password]@]sentinel1[:port],sentinel2[:port]/service[/db][?...]`
    ///   (`rediss+sentinel://` for TLS to the sentinels and the data nodes; `valkey+sentinel`
    ///   is a synonym). The hosts are the sentinels (port 26379 when none is given), the
    ///   first path segment is the service name (`serviceName`), the second the database.
    ///   User and password in the URL are those of the **data nodes**, as in other
    ///   clients' sentinel URLs; the sentinels' own are the query keys `sentinelUser` and
    ///   `sentinelPassword`.
    ///
    /// ```
    /// use resilient_redis::Options;
    /// let o = Options::parse("redis+sentinel://s1,s2:26380/mymaster/1?sentinelPassword=x").unwrap();
    /// assert_eq!(o.service_name.as_deref(), Some("mymaster"));
    /// assert_eq!((o.endpoints[0].port, o.endpoints[1].port, o.database), (26379, 26380, 1));
    /// assert!(!o.to_string().contains("sentinelPassword"));
    /// ```
    ///
    /// ```
    /// use resilient_redis::Options;
    /// let o = Options::parse("rediss://app:s3cr%40t@cache.example.com:6380/2?syncTimeout=250")
    ///     .unwrap();
    /// assert_eq!(o.user.as_deref(), Some("app"));
    /// assert_eq!(o.password.as_ref().unwrap().expose(), "s3cr@t");
    /// assert_eq!((o.endpoints[0].port, o.database), (6380, 2));
    /// assert!(o.tls.is_some());
    /// ```
    ///
    /// # Option strings
    ///
    /// Comma-separated items: an item holding `=` is `key=value`, any other item is an
    /// endpoint (`host[:port]`, `[v6]:port`; see below). At least one endpoint is needed.
    ///
    /// - Keys are case-insensitive. Whitespace around items, keys and values is trimmed.
    /// - A value may be written in **double quotes**, and must be when it holds a comma
    ///   (`password="hun,ter2"`), starts with `"`, or starts or ends with whitespace
    ///   that is part of it. Inside the quotes, `\"` is a quote and `\\` a backslash;
    ///   any other backslash is an error (a mistyped secret must not become another one
    ///   in silence); everything else, commas and whitespace included, is the value.
    ///   After the closing quote only whitespace may come before the next comma. This is
    ///   the quoting of `redis.conf` and `redis-cli` arguments, without their other
    ///   escapes. A value that does not start with `"` is taken as written (it may hold
    ///   `=`, `"` and `\`, but no comma): only the first `=` splits key from value.
    /// - An **unquoted `password`** may have been cut by a comma it held, its tail read
    ///   as further items. So no item after it is ever quoted in an error (errors give
    ///   its position and say why), and an endpoint after it is an error: list the
    ///   endpoints first, or quote the password. `host:6379,password=hun,ter2` is refused
    ///   (instead of connecting to a server named `ter2`).
    /// - A key given twice: the last one wins.
    /// - Empty items (a trailing comma) are ignored, but still counted in positions.
    ///
    /// ```
    /// use resilient_redis::Options;
    /// let o = Options::parse("10.0.0.1:6379, [::1]:6380, user=app, syncTimeout=250").unwrap();
    /// assert_eq!(o.endpoints.len(), 2);
    /// assert_eq!(o.command_timeout.as_millis(), 250);
    ///
    /// let o = Options::parse(r#"cache.example:6379,password="hun,ter2",name=web"#).unwrap();
    /// assert_eq!(o.password.as_ref().unwrap().expose(), "hun,ter2");
    /// assert_eq!(o.endpoints.len(), 1);
    ///
    /// let e = Options::parse("cache.example:6379,password=hun,ter2").unwrap_err();
    /// assert!(!e.to_string().contains("ter2"), "{e}");
    /// ```
    ///
    /// # Keys
    ///
    /// Every duration is in **milliseconds, except the `maint*` durations, which are in
    /// seconds** and may be fractional (`2.5`), as in the maintenance-notification
    /// settings of other clients. Durations must be greater than zero. Booleans are
    /// `true`/`false`, `yes`/`no` or `1`/`0`; names of choices are case-insensitive.
    ///
    #[doc = keys::key_table!()]
    ///
    /// The `ssl*` keys other than `ssl` itself need TLS on (`ssl=true` anywhere in the
    /// string, or a `rediss://` URL): without it they would silently do nothing, so they
    /// are an error naming the key. `defaults` is stored lowercase.
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::Config`](crate::ErrorKind::Config) error for: an unknown key (named,
    /// with its position: `unknown option key 'fooBar' at item 3`), a bad value (naming the
    /// key, the position and what was expected), a bad endpoint (its position), an
    /// endpoint after an unquoted password, a malformed quoted value, no endpoint,
    /// `reconnectMin` greater than `reconnectMax`, `sslCert` without `sslKey` or the
    /// reverse, and a URL that cannot be parsed. Errors quote key names and the URL
    /// scheme, never a value, a host or an endpoint item. Nothing of an item after an
    /// unquoted password is quoted, not even a key name, since a comma in the password
    /// (an `&` in a URL query) may have made it a piece of the password: such an error
    /// gives the position and says how to quote the password
    /// (`unknown option key at item 3 (not shown: it follows the unquoted password at
    /// item 2 and may be part of it: ...)`).
    ///
    /// # Writing back
    ///
    /// [`Options`]'s `Display` writes the option-string form, which parses back to the
    /// same options **without the password**: `Display` never writes it. Values that
    /// need quotes (see above) are written quoted.
    pub fn parse(s: &str) -> Result<Options> {
        let s = s.trim();
        if s.is_empty() {
            return Err(config_error(
                "empty configuration: expected a redis:// URL or an option string like 'host:6379,syncTimeout=1000'",
            ));
        }
        match url::split_scheme(s) {
            Some((scheme, rest)) => url::parse_url(scheme, rest),
            None => option_string::parse_option_string(s),
        }
    }
}
