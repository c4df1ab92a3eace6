//! `redis://` URLs (and `rediss://`, `valkey://`, `valkeys://`).
//!
//! Owns: splitting a URL into scheme, user info, hosts, database and query, and
//! percent-decoding. Must never: quote any part of the URL in an error but its scheme.
//! A password holding an unencoded `/`, `?` or `#` lands in the hosts, path or query,
//! so any of them may be part of a secret.

use super::keys::OptionKey;
use super::parse::{config_error, endpoint_from, Position};
use super::settings::Settings;
use super::Options;
use crate::error::Result;

/// Splits `scheme://rest` when `s` starts with something shaped like a URL scheme.
///
/// Why the shape check: an option string may contain `://` in a value
/// (`sslCaFile=file://...`), but never before a ',' or '=' as a scheme would be.
pub(super) fn split_scheme(s: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = s.split_once("://")?;
    let shaped = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    shaped.then_some((scheme, rest))
}

/// Parses the URL after its scheme (see `Options::parse` for the syntax).
pub(super) fn parse_url(scheme: &str, rest: &str) -> Result<Options> {
    let (scheme_tls, sentinel) = match scheme.to_ascii_lowercase().as_str() {
        "redis" | "valkey" => (false, false),
        "rediss" | "valkeys" => (true, false),
        "redis+sentinel" | "valkey+sentinel" => (false, true),
        "rediss+sentinel" | "valkeys+sentinel" => (true, true),
        _ => {
            return Err(config_error(format!(
                "unsupported URL scheme '{scheme}': expected redis://, rediss://, valkey://, valkeys://, or redis+sentinel:// (rediss+sentinel://)"
            )))
        }
    };
    // As in RFC 3986, the authority ends at the first '/', '?' or '#'.
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    // An '@' after the authority is almost always a password with an unencoded '/', '?'
    // or '#' in it: say so, since the error cannot show what it saw.
    let hint = if tail.contains('@') {
        " (if the password contains '/', '?' or '#', percent-encode them as %2F, %3F, %23)"
    } else {
        ""
    };
    let fail = |problem: String| config_error(format!("{problem}{hint}"));

    let mut settings = Settings::new(scheme_tls);
    // Why the last '@': passwords with an unencoded '@' are common, hosts never hold one.
    let hosts = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            apply_userinfo(&mut settings, userinfo)?;
            hosts
        }
        None => authority,
    };
    if hosts.is_empty() {
        return Err(fail("the URL names no host".to_string()));
    }
    for (index, host) in hosts.split(',').enumerate() {
        let mut endpoint = endpoint_from(host)
            .map_err(|why| fail(format!("bad host {} in the URL: {why}", index + 1)))?;
        if sentinel && !has_port(host) {
            endpoint.port = SENTINEL_PORT;
        }
        settings.options.endpoints.push(endpoint);
    }

    if tail.contains('#') {
        return Err(fail("URL fragments ('#') are not supported".to_string()));
    }
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let path = path.strip_prefix('/').unwrap_or(path);
    let db = if sentinel {
        // `/service[/db]`, the form other clients write. An '@' there is a password
        // with an unencoded '/' (a service name never holds one): taken as the
        // service name, it would be written by Display and sent to the sentinels.
        if tail.contains('@') {
            return Err(fail(
                "the URL path holds an '@' (not shown: it may be part of a password)".to_string(),
            ));
        }
        let (service, db) = path.split_once('/').unwrap_or((path, ""));
        let service = percent_decode(service)
            .map_err(|why| fail(format!("bad percent-encoding in the service name: {why}")))?;
        if service.is_empty() {
            return Err(fail(
                "a redis+sentinel:// URL names its service in the path, like /mymaster".to_string(),
            ));
        }
        settings
            .apply_key(OptionKey::ServiceName, &service, Position::Path)
            .map_err(|_| {
                fail("the service name in the URL path may not hold spaces".to_string())
            })?;
        db
    } else {
        path
    };
    if !db.is_empty() {
        settings
            .apply_key(OptionKey::DefaultDatabase, db, Position::Path)
            .map_err(|_| fail("the URL path must be a database number, like /0".to_string()))?;
    }
    if let Some(query) = query {
        apply_query(&mut settings, query)?;
    }
    settings.finish()
}

/// The port sentinels listen on unless told otherwise.
const SENTINEL_PORT: u16 = 26379;

/// Whether a host item of a URL gives its port (`h:1`, `[::1]:1`; not `h`, `[::1]`).
fn has_port(item: &str) -> bool {
    let item = item.trim();
    match item.strip_prefix('[') {
        Some(rest) => rest.contains("]:"),
        None => item.contains(':') && item.parse::<std::net::Ipv6Addr>().is_err(),
    }
}

/// `user[:password]`, percent-decoded; an empty user or password counts as absent.
fn apply_userinfo(settings: &mut Settings, userinfo: &str) -> Result<()> {
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let user = percent_decode(user)
        .map_err(|why| config_error(format!("bad percent-encoding in the URL user: {why}")))?;
    let password = percent_decode(password)
        .map_err(|why| config_error(format!("bad percent-encoding in the URL password: {why}")))?;
    if !user.is_empty() {
        settings.apply_key(OptionKey::User, &user, Position::UserInfo)?;
    }
    if !password.is_empty() {
        settings.apply_key(OptionKey::Password, &password, Position::UserInfo)?;
    }
    Ok(())
}

/// `key=value&...`, each part percent-decoded, then applied like an option-string item.
fn apply_query(settings: &mut Settings, query: &str) -> Result<()> {
    for (index, item) in query.split('&').enumerate() {
        let at = Position::QueryItem(index + 1);
        if item.trim().is_empty() {
            continue;
        }
        let hidden = settings.not_shown();
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| config_error(format!("expected key=value at {at}{hidden}")))?;
        let decode = |part: &str| {
            percent_decode(part)
                .map_err(|why| config_error(format!("bad percent-encoding at {at}: {why}{hidden}")))
        };
        // Never quoted: a URL writes any character with percent-encoding instead.
        settings.apply(decode(key)?.trim(), decode(value)?.trim(), false, at)?;
    }
    Ok(())
}

/// Decodes `%XX` escapes. `+` stays `+` (it means space only in HTML forms, and
/// base64-style passwords hold real plus signs). The result must be UTF-8.
pub(super) fn percent_decode(s: &str) -> std::result::Result<String, &'static str> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |j: usize| bytes.get(j).and_then(|&b| (b as char).to_digit(16));
            match (hex(i + 1), hex(i + 2)) {
                (Some(high), Some(low)) => out.push((high * 16 + low) as u8),
                _ => return Err("a '%' must be followed by two hex digits"),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the decoded text is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decode_decodes_escapes_and_keeps_plus() {
        assert_eq!(percent_decode("a%40b%3Ac%2f+d").unwrap(), "a@b:c/+d");
        assert_eq!(percent_decode("%E2%82%AC").unwrap(), "€");
        assert_eq!(percent_decode("").unwrap(), "");
        assert_eq!(percent_decode("plain").unwrap(), "plain");
    }

    #[test]
    fn percent_decode_rejects_bad_escapes() {
        for bad in ["%", "%4", "%zz", "%4g", "abc%", "%%41", "%ff", "%C3"] {
            assert!(percent_decode(bad).is_err(), "{bad}");
        }
        // A multi-byte character right after '%' must not be taken apart.
        assert!(percent_decode("%é1").is_err());
    }

    #[test]
    fn split_scheme_only_takes_scheme_shaped_prefixes() {
        assert_eq!(split_scheme("redis://h"), Some(("redis", "h")));
        assert_eq!(split_scheme("h:1,sslCaFile=file://x"), None);
        assert_eq!(split_scheme("1x://h"), None);
        assert_eq!(split_scheme("h:6379"), None);
    }
}
