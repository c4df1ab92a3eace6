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

#[test]
fn quoted_values_hold_commas_quotes_backslashes_and_whitespace() {
    let o = parse(r#"h:1, password = "hun,ter2" , user=" a\"b\\c ",name=web"#);
    assert_eq!(o.password.as_ref().unwrap().expose(), "hun,ter2");
    assert_eq!(o.user.as_deref(), Some(r#" a"b\c "#));
    assert_eq!(o.client_name.as_deref(), Some("web"));
    assert_eq!(o.endpoints, vec![Endpoint::new("h", 1)]);
    // A quoted password is whole: endpoints may follow it.
    let o = parse(r#"password="a,b",h2:2"#);
    assert_eq!(o.endpoints, vec![Endpoint::new("h2", 2)]);
    // A quoted value is still checked like any other.
    assert!(
        parse_err(r#"h,syncTimeout=" 250""#).starts_with("bad value for 'syncTimeout' at item 2")
    );
    assert!(parse_err(r#"h,user="""#).starts_with("bad value for 'user' at item 2"));
}

#[test]
fn malformed_quoted_values_give_their_position_only() {
    for (s, expected) in [
        (
            r#"h,password="Qx7,Zy8"#,
            "unterminated quoted value at item 2",
        ),
        (
            r#"h,password="Qx7"Zy8,name=a"#,
            "unexpected text after the closing quote at item 2",
        ),
        (
            r#"h,password="Qx7\Zy8""#,
            "bad escape in the quoted value at item 2",
        ),
    ] {
        let e = parse_err(s);
        assert!(e.starts_with(expected), "{s}: {e}");
        assert!(!e.contains("Qx7") && !e.contains("Zy8"), "{s}: {e}");
    }
}

/// The issue's reports: a comma in an unquoted password made its tail an endpoint
/// (`ter2` went to DNS and to `Display`) or an unknown key quoted in the error.
#[test]
fn nothing_after_an_unquoted_password_is_quoted_or_taken_as_an_endpoint() {
    for (s, expected) in [
        (
            "cache.example:6379,password=hun,Qx7",
            "an endpoint at item 3 is refused",
        ),
        (
            "cache.example:6379,password=hun,Qx7:6380",
            "an endpoint at item 3 is refused",
        ),
        (
            "cache.example:6379,password=hun,Qx7 2",
            "an endpoint at item 3 is refused",
        ),
        ("h,password=abc,Qx7=f", "unknown option key at item 3"),
        ("h,password=abc,,Qx7=f", "unknown option key at item 4"),
        ("h,password=abc,=f", "missing key before '=' at item 3"),
        ("h,password=abc,syncTimeout=Qx7", "bad value at item 3"),
        (
            "h,password=abc,sslHost=Qx7",
            "the setting at item 3 needs TLS",
        ),
        (
            "h,password=abc,reconnectMin=9000",
            "the minimum reconnect delay is greater",
        ),
        (
            "h,password=abc,ssl=true,sslCert=Qx7",
            "a client certificate and its private key",
        ),
        (
            "h,password=abc,Qx7=\"f",
            "unterminated quoted value at item 3",
        ),
    ] {
        let e = parse_err(s);
        assert!(e.starts_with(expected), "{s}: {e}");
        for fragment in [
            "Qx7",
            "syncTimeout",
            "sslHost",
            "reconnectMin",
            "9000",
            "sslCert",
        ] {
            assert!(!e.contains(fragment), "{s}: {fragment:?} in {e}");
        }
        if !expected.starts_with("unterminated") {
            assert!(
                e.contains("password at item 2") && e.contains(r#"password="...""#),
                "{s}: {e}"
            );
        }
    }
    // rediss:// with ssl=false after a query password.
    let e = parse_err("rediss://h?password=abc&ssl=false");
    assert!(
        e.starts_with("a setting at query item 2 contradicts"),
        "{e}"
    );
    // Quoting the password (or putting it last) brings the details back.
    assert_eq!(
        parse_err(r#"h,password="abc",de=f"#),
        "unknown option key 'de' at item 3"
    );
    assert!(
        parse_err(r#"h,password="abc",syncTimeout=x"#).starts_with("bad value for 'syncTimeout'")
    );
    assert!(parse_err("h,de=f,password=abc").contains("'de' at item 2"));
}
