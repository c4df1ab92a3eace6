//! URLs: schemes, user info, hosts, database path, query.

use std::path::PathBuf;
use std::time::Duration;

use super::{assert_round_trips, parse, parse_err};
use crate::config::{Endpoint, Protocol, TlsOptions};

#[test]
fn host_alone() {
    let o = parse("redis://localhost");
    assert_eq!(o.endpoints, vec![Endpoint::new("localhost", 6379)]);
    assert!(o.tls.is_none());
    assert_eq!(o.database, 0);
    assert!(o.user.is_none() && o.password.is_none());
}

#[test]
fn host_port_and_database() {
    let o = parse("redis://cache:6380/3");
    assert_eq!(o.endpoints, vec![Endpoint::new("cache", 6380)]);
    assert_eq!(o.database, 3);
    assert_eq!(parse("redis://h/").database, 0);
    assert_eq!(parse("redis://h/4294967295").database, u32::MAX);
}

#[test]
fn schemes_and_tls() {
    for (url, tls) in [
        ("redis://h", false),
        ("valkey://h", false),
        ("rediss://h", true),
        ("valkeys://h", true),
        ("REDISS://h", true),
        ("Redis://h", false),
    ] {
        let o = parse(url);
        assert_eq!(o.tls.is_some(), tls, "{url}");
        if tls {
            assert_eq!(o.tls, Some(TlsOptions::default()), "{url}");
        }
    }
}

#[test]
fn user_and_password() {
    let o = parse("redis://app:pw@h");
    assert_eq!(o.user.as_deref(), Some("app"));
    assert_eq!(o.password.unwrap().expose(), "pw");

    let o = parse("redis://:pw@h");
    assert!(o.user.is_none());
    assert_eq!(o.password.unwrap().expose(), "pw");

    let o = parse("redis://app@h");
    assert_eq!(o.user.as_deref(), Some("app"));
    assert!(o.password.is_none());

    let o = parse("redis://app:@h");
    assert!(o.password.is_none(), "an empty password counts as none");
    let o = parse("redis://:@h");
    assert!(o.user.is_none() && o.password.is_none());
}

#[test]
fn password_may_hold_colons_and_unencoded_at_signs() {
    let o = parse("redis://u:a:b@c@h:1");
    assert_eq!(o.user.as_deref(), Some("u"));
    assert_eq!(o.password.unwrap().expose(), "a:b@c");
    assert_eq!(o.endpoints, vec![Endpoint::new("h", 1)]);
}

#[test]
fn user_and_password_are_percent_decoded() {
    let o = parse("redis://%41lice%3A:p%40ss%3Aw%2Fd%3F%23%25+%2C@h");
    assert_eq!(o.user.as_deref(), Some("Alice:"));
    assert_eq!(o.password.unwrap().expose(), "p@ss:w/d?#%+,");
    let o = parse("redis://:%E2%82%AC@h");
    assert_eq!(o.password.unwrap().expose(), "€");
}

#[test]
fn bad_percent_encoding_is_an_error_naming_the_part() {
    assert!(parse_err("redis://:ab%zz@h").contains("URL password"));
    assert!(parse_err("redis://:ab%4@h").contains("two hex digits"));
    assert!(parse_err("redis://u%@h").contains("URL user"));
    assert!(parse_err("redis://:%ff@h").contains("UTF-8"));
    assert!(parse_err("redis://h?name=%zz").contains("query item 1"));
}

#[test]
fn several_hosts_and_ipv6() {
    let o = parse("rediss://u:p@h1:7000,h2,[::1]:7002,[::2]/2");
    assert_eq!(
        o.endpoints,
        vec![
            Endpoint::new("h1", 7000),
            Endpoint::new("h2", 6379),
            Endpoint::new("::1", 7002),
            Endpoint::new("::2", 6379),
        ]
    );
    assert_eq!(o.database, 2);
    assert!(o.tls.is_some());
}

#[test]
fn query_keys_are_option_keys() {
    let o = parse("redis://h?syncTimeout=250&name=app&PROTOCOL=resp3&maintRelaxedTimeout=2.5");
    assert_eq!(o.command_timeout, Duration::from_millis(250));
    assert_eq!(o.client_name.as_deref(), Some("app"));
    assert_eq!(o.protocol, Some(Protocol::Resp3));
    assert_eq!(o.maint_relaxed_timeout, Duration::from_millis(2500));
    // Empty query and empty items are fine.
    parse("redis://h?");
    parse("redis://h/1?&&syncTimeout=1&");
}

#[test]
fn query_values_are_percent_decoded_and_plus_is_kept() {
    let o = parse("rediss://h?sslCaFile=/etc/my%20ca.pem&password=a+b%26c");
    assert_eq!(
        o.tls.unwrap().ca_file,
        Some(PathBuf::from("/etc/my ca.pem"))
    );
    assert_eq!(o.password.unwrap().expose(), "a+b&c");
}

#[test]
fn query_overrides_the_url_parts() {
    let o = parse("redis://u:p@h/1?defaultDatabase=2&user=v&password=q");
    assert_eq!(o.database, 2);
    assert_eq!(o.user.as_deref(), Some("v"));
    assert_eq!(o.password.unwrap().expose(), "q");
}

#[test]
fn tls_through_the_query() {
    let o = parse("redis://h?ssl=true&sslHost=cache.example.com&sslVerify=false");
    let tls = o.tls.unwrap();
    assert_eq!(tls.server_name.as_deref(), Some("cache.example.com"));
    assert!(!tls.verify);
    let o = parse("rediss://h?sslHost=x&ssl=true");
    assert!(o.tls.is_some());
}

#[test]
fn ssl_false_contradicts_rediss() {
    let e = parse_err("rediss://h?ssl=false");
    assert!(e.contains("ssl=false") && e.contains("query item 1"), "{e}");
    assert!(parse_err("valkeys://h?ssl=no").contains("rediss://"));
}

#[test]
fn tls_details_without_tls_are_errors() {
    let e = parse_err("redis://h?name=a&sslHost=x");
    assert!(e.contains("'sslHost' at query item 2 needs TLS"), "{e}");
}

#[test]
fn unknown_query_key_is_named_with_its_position() {
    assert_eq!(
        parse_err("redis://h?syncTimeout=1&fooBar=2"),
        "unknown option key 'fooBar' at query item 2"
    );
    assert!(parse_err("redis://h?syncTimeout").contains("expected key=value at query item 1"));
    assert!(parse_err("redis://h?syncTimeout=x").contains("'syncTimeout' at query item 1"));
}

#[test]
fn commas_in_query_values_are_kept_and_written_back_quoted() {
    let o = parse("redis://h?name=a%2Cb&sslCaFile=%22x&ssl=true");
    assert_eq!(o.client_name.as_deref(), Some("a,b"));
    assert_eq!(
        o.to_string(),
        r#"h:6379,name="a,b",ssl=true,sslCaFile="\"x""#
    );
    assert_round_trips(&o);
    let o = parse("redis://h?password=a%2Cb");
    assert_eq!(o.password.unwrap().expose(), "a,b");
}

/// An unencoded '&' cuts a query password: nothing after it is quoted in an error.
#[test]
fn items_after_a_query_password_are_not_quoted() {
    for (url, expected) in [
        (
            "redis://h?password=ab&Qx7=f",
            "unknown option key at query item 2",
        ),
        (
            "redis://h?password=ab&Qx7",
            "expected key=value at query item 2",
        ),
        (
            "redis://h?password=ab&syncTimeout=Qx7",
            "bad value at query item 2",
        ),
        (
            "redis://h?password=ab&Qx7=%zz",
            "bad percent-encoding at query item 2",
        ),
    ] {
        let e = parse_err(url);
        assert!(e.starts_with(expected), "{url}: {e}");
        assert!(e.contains("%26"), "{url}: {e}");
        assert!(
            !e.contains("Qx7") && !e.contains("syncTimeout"),
            "{url}: {e}"
        );
    }
    // Before the password, keys are named as usual.
    assert!(parse_err("redis://h?fooBar=1&password=ab").contains("'fooBar'"));
}

#[test]
fn bad_database_path() {
    for url in [
        "redis://h/abc",
        "redis://h/1/2",
        "redis://h/-1",
        "redis://h/+1",
        "redis://h/4294967296",
    ] {
        assert!(parse_err(url).contains("database number"), "{url}");
    }
}

#[test]
fn unsupported_scheme_is_named() {
    let e = parse_err("http://h");
    assert!(e.contains("'http'") && e.contains("redis://"), "{e}");
    assert!(parse_err("redis+unix:///tmp/redis.sock").contains("'redis+unix'"));
}

#[test]
fn missing_or_bad_hosts() {
    assert!(parse_err("redis://").contains("no host"));
    assert!(parse_err("redis:///0").contains("no host"));
    assert!(parse_err("redis://u:p@").contains("no host"));
    assert!(parse_err("redis://u:p@/0").contains("no host"));
    assert!(parse_err("redis://h:0").contains("bad host 1"));
    assert!(parse_err("redis://h:1,h:x").contains("bad host 2"));
    assert!(parse_err("redis://h1,,h2").contains("bad host 2"));
    assert!(parse_err("redis://h:6379:1").contains("brackets"));
}

#[test]
fn fragments_are_rejected() {
    assert!(parse_err("redis://h#x").contains("fragment"));
    assert!(parse_err("redis://h/0?name=a#x").contains("fragment"));
}

#[test]
fn unencoded_slash_in_password_gets_a_hint() {
    let e = parse_err("redis://u:pa/ss@h");
    assert!(e.contains("percent-encode"), "{e}");
    let e = parse_err("redis://:pa?ss@h");
    assert!(e.contains("percent-encode"), "{e}");
}

#[test]
fn surrounding_whitespace_is_ignored() {
    assert_eq!(
        parse("  redis://h:1 \n").endpoints,
        vec![Endpoint::new("h", 1)]
    );
}

#[test]
fn sentinel_urls_name_the_sentinels_the_service_and_the_database() {
    let o = parse("redis+sentinel://app:pw@s1,s2:26380,[::1]/mymaster/2");
    assert_eq!(
        o.endpoints,
        vec![
            Endpoint::new("s1", 26379),
            Endpoint::new("s2", 26380),
            Endpoint::new("::1", 26379)
        ]
    );
    assert_eq!(o.service_name.as_deref(), Some("mymaster"));
    assert_eq!(o.database, 2);
    // The user info is the data nodes'; the sentinels' own come from the query.
    assert_eq!(o.user.as_deref(), Some("app"));
    assert!(o.sentinel_password.is_none());
    let o = parse("rediss+sentinel://s1/svc?sentinelUser=watcher&sentinelPassword=x%2Cy");
    assert!(o.tls.is_some());
    assert_eq!(o.database, 0);
    assert_eq!(o.sentinel_user.as_deref(), Some("watcher"));
    assert_eq!(o.sentinel_password.as_ref().unwrap().expose(), "x,y");
    assert_eq!(
        parse("valkey+sentinel://s/svc").service_name.as_deref(),
        Some("svc")
    );
    assert_round_trips(&parse(
        "redis+sentinel://s1:26379,s2:26380/mymaster/3?name=web",
    ));
}

#[test]
fn sentinel_urls_need_a_service_and_a_numeric_database() {
    for url in [
        "redis+sentinel://s1",
        "redis+sentinel://s1/",
        "redis+sentinel://s1//0",
    ] {
        assert!(parse_err(url).contains("service"), "{url}");
    }
    assert!(parse_err("redis+sentinel://s1/svc/x").contains("database number"));
    assert!(parse_err("redis+sentinel://s1/two%20words").contains("service name"));
}

#[test]
fn the_service_name_is_an_option_key_too() {
    let o = parse("s1:26379,s2:26379,serviceName=mymaster,sentinelUser=w,sentinelPassword=p");
    assert_eq!(o.service_name.as_deref(), Some("mymaster"));
    assert_eq!(o.endpoints.len(), 2);
    let shown = o.to_string();
    assert!(shown.contains("serviceName=mymaster") && shown.contains("sentinelUser=w"));
    assert!(!shown.contains("sentinelPassword"), "{shown}");
}
