//! Every key with good and bad values.

use std::path::PathBuf;
use std::time::Duration;

use super::{parse, parse_err};
use crate::config::keys::{key_table, OptionKey};
use crate::config::{BacklogPolicy, MaintNotifications, MovingEndpointType, Options, Protocol};

/// Parses `h,<key>=<value>` (with `ssl=true` first for the keys that need TLS).
fn with(key: &str, value: &str) -> Options {
    parse(&format!("h,ssl=true,{key}={value}"))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn text_keys() {
    assert_eq!(with("password", "p w!").password.unwrap().expose(), "p w!");
    assert_eq!(with("user", "app").user.as_deref(), Some("app"));
    assert_eq!(
        with("name", "web-1:a.b").client_name.as_deref(),
        Some("web-1:a.b")
    );
}

#[test]
fn default_database() {
    assert_eq!(with("defaultDatabase", "0").database, 0);
    assert_eq!(with("defaultDatabase", "15").database, 15);
    assert_eq!(with("defaultDatabase", "4294967295").database, u32::MAX);
}

#[test]
fn booleans_in_every_spelling() {
    for (value, expected) in [
        ("true", true),
        ("TRUE", true),
        ("yes", true),
        ("Yes", true),
        ("1", true),
        ("false", false),
        ("False", false),
        ("no", false),
        ("NO", false),
        ("0", false),
    ] {
        assert_eq!(
            with("abortConnect", value).abort_connect,
            expected,
            "{value}"
        );
        assert_eq!(
            with("sslVerify", value).tls.unwrap().verify,
            expected,
            "{value}"
        );
        let o = parse(&format!("h,ssl={value}"));
        assert_eq!(o.tls.is_some(), expected, "{value}");
    }
}

#[test]
fn tls_keys() {
    let tls = parse("h,ssl=true,sslHost=cache.example.com,sslCaFile=/etc/ca.pem,sslCert=/c.pem,sslKey=/k.pem,sslVerify=false")
        .tls
        .unwrap();
    assert_eq!(tls.server_name.as_deref(), Some("cache.example.com"));
    assert_eq!(tls.ca_file, Some(PathBuf::from("/etc/ca.pem")));
    assert_eq!(tls.client_cert_file, Some(PathBuf::from("/c.pem")));
    assert_eq!(tls.client_key_file, Some(PathBuf::from("/k.pem")));
    assert!(!tls.verify);
    assert!(tls.ca_pem.is_none());
}

#[test]
fn millisecond_durations() {
    assert_eq!(with("connectTimeout", "1").connect_timeout, ms(1));
    assert_eq!(with("syncTimeout", "2500").command_timeout, ms(2500));
    assert_eq!(with("keepAlive", "60000").keep_alive, ms(60_000));
    assert_eq!(with("reconnectMin", "5").reconnect_min_delay, ms(5));
    assert_eq!(
        with("reconnectMax", "60000").reconnect_max_delay,
        ms(60_000)
    );
    assert_eq!(
        with("syncTimeout", "18446744073709551615").command_timeout,
        ms(u64::MAX)
    );
}

#[test]
fn second_durations_may_be_fractional() {
    let o = with("maintRelaxedTimeout", "2.5");
    assert_eq!(o.maint_relaxed_timeout, ms(2500));
    assert_eq!(
        with("maintRelaxedTimeout", "30").maint_relaxed_timeout,
        Duration::from_secs(30)
    );
    assert_eq!(
        with("maintRelaxedWindowMax", "45").maint_relaxed_window_max,
        Some(Duration::from_secs(45))
    );
    assert_eq!(
        with("maintPostEventRelaxed", "0.25").maint_post_event_relaxed,
        Some(ms(250))
    );
    assert_eq!(
        with("maintPostEventRelaxed", "0.000000001").maint_post_event_relaxed,
        Some(Duration::from_nanos(1))
    );
    assert_eq!(
        with("maintRelaxedTimeout", "007.50").maint_relaxed_timeout,
        ms(7500)
    );
}

#[test]
fn choices() {
    assert_eq!(with("protocol", "resp2").protocol, Some(Protocol::Resp2));
    assert_eq!(with("protocol", "RESP3").protocol, Some(Protocol::Resp3));
    assert_eq!(with("protocol", "2").protocol, Some(Protocol::Resp2));
    assert_eq!(with("protocol", "3").protocol, Some(Protocol::Resp3));
    assert_eq!(with("backlog", "queue").backlog, BacklogPolicy::Queue);
    assert_eq!(with("backlog", "FailFast").backlog, BacklogPolicy::FailFast);
    for (value, mode) in [
        ("disabled", MaintNotifications::Disabled),
        ("Auto", MaintNotifications::Auto),
        ("ENABLED", MaintNotifications::Enabled),
    ] {
        assert_eq!(with("maintNotifications", value).maint_notifications, mode);
    }
    for t in [
        MovingEndpointType::InternalIp,
        MovingEndpointType::InternalFqdn,
        MovingEndpointType::ExternalIp,
        MovingEndpointType::ExternalFqdn,
        MovingEndpointType::None,
    ] {
        assert_eq!(
            with("maintMovingEndpointType", t.as_str()).maint_moving_endpoint_type,
            Some(t)
        );
        let upper = t.as_str().to_ascii_uppercase();
        assert_eq!(
            with("maintMovingEndpointType", &upper).maint_moving_endpoint_type,
            Some(t)
        );
    }
}

#[test]
fn counts() {
    assert_eq!(with("backlogLimit", "1").backlog_limit, 1);
    assert_eq!(with("backlogLimit", "500").backlog_limit, 500);
    assert_eq!(with("blockingPool", "1").blocking_pool_size, 1);
    assert_eq!(with("blockingPool", "16").blocking_pool_size, 16);
    assert_eq!(with("lanes", "0").lanes, 0);
    assert_eq!(with("lanes", "8").lanes, 8);
}

#[test]
fn providers_are_stored_lowercase() {
    for (value, stored) in [
        ("amr", "amr"),
        ("AZURE", "azure"),
        ("RedisCloud", "rediscloud"),
        ("enterprise", "enterprise"),
    ] {
        assert_eq!(with("defaults", value).defaults.as_deref(), Some(stored));
    }
}

/// Bad values for every key: each error names the key, its position (item 3, after
/// `h` and `ssl=true`) and what was expected.
#[test]
fn bad_values_for_every_key() {
    let bad: &[(OptionKey, &[&str])] = &[
        (OptionKey::Password, &[""]),
        (OptionKey::User, &[""]),
        (
            OptionKey::Name,
            &["", "two words", "tab\there", "é", "bell\u{7}"],
        ),
        (
            OptionKey::DefaultDatabase,
            &["", "-1", "+1", "x", "1.0", "4294967296"],
        ),
        (OptionKey::Ssl, &["", "on", "2", "truee", "t"]),
        (OptionKey::SslHost, &["", "a b"]),
        (OptionKey::SslCaFile, &[""]),
        (OptionKey::SslCert, &[""]),
        (OptionKey::SslKey, &[""]),
        (OptionKey::SslVerify, &["", "off", "y"]),
        (
            OptionKey::ConnectTimeout,
            &["", "0", "-5", "+5", "1.5", "5s", "18446744073709551616"],
        ),
        (OptionKey::SyncTimeout, &["0", "abc", "1e3"]),
        (OptionKey::KeepAlive, &["0", " 1x"]),
        (OptionKey::Protocol, &["", "resp1", "4", "resp", "RESP 3"]),
        (OptionKey::AbortConnect, &["", "maybe"]),
        (OptionKey::Backlog, &["", "fail-fast", "drop"]),
        (OptionKey::BacklogLimit, &["", "0", "-1", "1.5"]),
        (OptionKey::ReconnectMin, &["0", "x"]),
        (OptionKey::ReconnectMax, &["0", "x"]),
        (OptionKey::BlockingPool, &["0", "", "many"]),
        (OptionKey::Lanes, &["", "9", "-1", "one"]),
        (OptionKey::ReplicaReads, &["", "sometimes"]),
        (OptionKey::MaintNotifications, &["", "on", "true", "enable"]),
        (
            OptionKey::MaintRelaxedTimeout,
            &[
                "",
                "0",
                "0.0",
                "-1",
                "+1",
                ".5",
                "2.",
                "1.2.3",
                "1e1",
                "inf",
                "NaN",
                "1.0000000001",
                "10s",
            ],
        ),
        (OptionKey::MaintRelaxedWindowMax, &["0", "abc", "1:5"]),
        (
            OptionKey::MaintPostEventRelaxed,
            &["0", "-0.5", "18446744073709551616"],
        ),
        (
            OptionKey::MaintMovingEndpointType,
            &["", "internal", "internal_ip", "ip"],
        ),
        (
            OptionKey::Defaults,
            &["", "aws", "redis", "Microsoft.Azure", "amr-x"],
        ),
        (OptionKey::ServiceName, &["", "two words", "tab\there"]),
        (OptionKey::SentinelUser, &[""]),
        (OptionKey::SentinelPassword, &[""]),
    ];
    assert_eq!(
        bad.len(),
        OptionKey::ALL.len(),
        "every key has bad values listed"
    );
    for (key, values) in bad {
        for value in *values {
            let text = format!("h,ssl=true,{}={value}", key.name());
            let e = parse_err(&text);
            let expected = format!("bad value for '{}' at item 3: expected ", key.name());
            assert!(e.starts_with(&expected), "{text:?}: {e}");
        }
    }
}

#[test]
fn error_does_not_quote_the_bad_value() {
    let e = parse_err("h,name=distinctive_value,syncTimeout=distinctive_value");
    assert!(!e.contains("distinctive_value"), "{e}");
}

/// The `Options::parse` table is generated from the declarations: a row per key, in
/// `Display` order.
#[test]
fn every_key_is_documented_in_the_parse_table() {
    let table = key_table!();
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), OptionKey::ALL.len());
    for (row, key) in rows.iter().zip(OptionKey::ALL) {
        let start = format!("| `{}` |", key.name());
        assert!(
            row.starts_with(&start),
            "{row} should document {}",
            key.name()
        );
    }
}

/// A default the table gives as a value (a number, `true`/`false`, or one word in
/// backticks) is the one `Options::default()` holds: written back, it is left out.
#[test]
fn documented_defaults_are_the_defaults() {
    let defaults = Options::default();
    let mut checked = 0;
    for key in OptionKey::ALL {
        let spec = key.spec();
        let documented = spec.doc[2].trim_matches('`');
        let is_value = documented.parse::<f64>().is_ok()
            || documented == "true"
            || documented == "false"
            || (spec.doc[2].starts_with('`') && !documented.contains(['`', ' ']));
        if !is_value {
            continue;
        }
        let o = parse(&format!("h,ssl=true,{}={documented}", key.name()));
        assert_eq!(
            (spec.display)(&o, &defaults),
            None,
            "{} is documented to default to {documented}",
            key.name()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} documented defaults checked");
}

/// docs/configuration.md carries the key table of `Options::parse` row for row (with
/// rustdoc's `[`links`]` written as plain code), so the guide cannot drift from the
/// declarations, and every key is in both.
#[test]
fn the_configuration_guide_has_the_parse_table_row_for_row() {
    let guide = include_str!("../../../docs/configuration.md");
    let table = key_table!().replace("[`", "`").replace("`]", "`");
    let rows: Vec<&str> = table.lines().collect();
    let lines: Vec<&str> = guide.lines().map(str::trim_end).collect();
    assert!(
        lines.windows(rows.len()).any(|w| w == rows.as_slice()),
        "docs/configuration.md lacks the Options::parse key table, row for row and in \
         order; the whole table, to paste:\n{table}"
    );
}
