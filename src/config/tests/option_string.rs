//! Option strings: items, endpoints, positions, duplicates, cross-key checks.

use std::time::Duration;

use super::{parse, parse_err};
use crate::config::{Endpoint, Options};

#[test]
fn endpoints_only() {
    let o = parse("h1:7000,h2,[::1]:7002,::2");
    assert_eq!(
        o.endpoints,
        vec![
            Endpoint::new("h1", 7000),
            Endpoint::new("h2", 6379),
            Endpoint::new("::1", 7002),
            Endpoint::new("::2", 6379),
        ]
    );
    assert_eq!(
        comparable_without_endpoints(&o),
        comparable_without_endpoints(&Options::default())
    );
}

fn comparable_without_endpoints(o: &Options) -> String {
    let mut o = o.clone();
    o.endpoints.clear();
    format!("{o:?}")
}

#[test]
fn endpoints_and_keys_mixed_in_any_order() {
    let o = parse("syncTimeout=250,h1:1,user=app,h2:2");
    assert_eq!(
        o.endpoints,
        vec![Endpoint::new("h1", 1), Endpoint::new("h2", 2)]
    );
    assert_eq!(o.command_timeout, Duration::from_millis(250));
    assert_eq!(o.user.as_deref(), Some("app"));
}

#[test]
fn whitespace_around_items_keys_and_values_is_trimmed() {
    let o = parse("  h:1 ,\tsyncTimeout = 250 , name= app\n");
    assert_eq!(o.endpoints, vec![Endpoint::new("h", 1)]);
    assert_eq!(o.command_timeout, Duration::from_millis(250));
    assert_eq!(o.client_name.as_deref(), Some("app"));
}

#[test]
fn keys_are_case_insensitive() {
    let o = parse("h,SYNCTIMEOUT=1,ConnectTimeout=2,keepalive=3,DEFAULTS=AMR");
    assert_eq!(o.command_timeout, Duration::from_millis(1));
    assert_eq!(o.connect_timeout, Duration::from_millis(2));
    assert_eq!(o.keep_alive, Duration::from_millis(3));
    assert_eq!(o.defaults.as_deref(), Some("amr"));
}

#[test]
fn last_duplicate_wins() {
    let o = parse("h,syncTimeout=1,syncTimeout=2,ssl=false,ssl=true,ssl=true");
    assert_eq!(o.command_timeout, Duration::from_millis(2));
    assert!(o.tls.is_some());
    assert!(parse("h,ssl=true,ssl=false").tls.is_none());
}

#[test]
fn only_the_first_equals_sign_splits() {
    let o = parse("h,password=a=b=,name=x=y");
    assert_eq!(o.password.unwrap().expose(), "a=b=");
    assert_eq!(o.client_name.as_deref(), Some("x=y"));
}

#[test]
fn empty_items_are_ignored_but_counted() {
    let o = parse("h,,syncTimeout=1,");
    assert_eq!(o.command_timeout, Duration::from_millis(1));
    assert_eq!(
        parse_err("h,,fooBar=1"),
        "unknown option key 'fooBar' at item 3"
    );
}

#[test]
fn unknown_key_is_named_with_its_position() {
    assert_eq!(
        parse_err("h:6379,syncTimeout=1,fooBar=2"),
        "unknown option key 'fooBar' at item 3"
    );
    // Near misses are not guessed at.
    assert!(parse_err("h,db=1").contains("'db' at item 2"));
    assert!(parse_err("h,ssl_host=x").contains("'ssl_host'"));
    assert!(parse_err("h,=1").contains("missing key before '=' at item 2"));
}

#[test]
fn bad_value_names_key_position_and_expectation() {
    assert_eq!(
        parse_err("h,name=a,syncTimeout=soon"),
        "bad value for 'syncTimeout' at item 3: expected a whole number of milliseconds greater than zero"
    );
}

#[test]
fn bad_endpoint_item_gives_its_position() {
    let e = parse_err("h:1,syncTimeout=5,h:0");
    assert_eq!(
        e,
        "bad endpoint at item 3: the port must be a number from 1 to 65535"
    );
    assert!(parse_err("h,ho st").contains("item 2"));
}

#[test]
fn at_least_one_endpoint_is_required() {
    assert!(parse_err("syncTimeout=1,name=a").contains("no endpoint"));
    assert!(parse_err(",,").contains("no endpoint"));
    assert!(parse_err("").contains("empty configuration"));
    assert!(parse_err("  \n").contains("empty configuration"));
}

#[test]
fn reconnect_min_above_max_is_an_error() {
    let e = parse_err("h,reconnectMin=300,reconnectMax=200");
    assert_eq!(
        e,
        "reconnectMin (300 ms) is greater than reconnectMax (200 ms)"
    );
    // Also against the default maximum (5000 ms).
    assert!(parse_err("h,reconnectMin=6000").contains("reconnectMax (5000 ms)"));
    let o = parse("h,reconnectMin=200,reconnectMax=200");
    assert_eq!(o.reconnect_min_delay, o.reconnect_max_delay);
    let o = parse("h,reconnectMax=50,reconnectMin=20");
    assert_eq!(o.reconnect_min_delay, Duration::from_millis(20));
}

#[test]
fn ssl_details_need_ssl_true_in_any_order() {
    let o = parse("h,sslHost=cache.example.com,sslCaFile=/ca.pem,ssl=true");
    let tls = o.tls.unwrap();
    assert_eq!(tls.server_name.as_deref(), Some("cache.example.com"));
    assert!(tls.verify);

    for (s, key, at) in [
        ("h,sslHost=x", "sslHost", "item 2"),
        ("h,sslCaFile=/ca.pem", "sslCaFile", "item 2"),
        ("h,name=a,sslVerify=true", "sslVerify", "item 3"),
        ("h,sslVerify=false,sslHost=x", "sslVerify", "item 2"),
        ("h,ssl=false,sslHost=x", "sslHost", "item 3"),
        ("h,sslHost=x,ssl=true,ssl=false", "sslHost", "item 2"),
    ] {
        let e = parse_err(s);
        assert!(
            e.contains(&format!("'{key}' at {at} needs TLS")),
            "{s}: {e}"
        );
    }
    assert!(parse("h,ssl=false").tls.is_none());
}

#[test]
fn client_certificate_and_key_go_together() {
    let o = parse("h,ssl=true,sslCert=/c.pem,sslKey=/k.pem");
    let tls = o.tls.unwrap();
    assert!(tls.client_cert_file.is_some() && tls.client_key_file.is_some());
    assert!(parse_err("h,ssl=true,sslCert=/c.pem").contains("'sslCert' needs 'sslKey'"));
    assert!(parse_err("h,ssl=true,sslKey=/k.pem").contains("'sslKey' needs 'sslCert'"));
}

#[test]
fn a_value_containing_scheme_like_text_is_not_a_url() {
    let o = parse("h,ssl=true,sslCaFile=file://ca.pem");
    assert!(o.tls.unwrap().ca_file.is_some());
}
