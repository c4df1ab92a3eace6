//! `parse_endpoint`: host forms, IPv6, ports.

use crate::config::parse::parse_endpoint;
use crate::config::Endpoint;

fn ok(s: &str) -> Endpoint {
    parse_endpoint(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn host_and_port() {
    assert_eq!(
        ok("cache.example.com:6380"),
        Endpoint::new("cache.example.com", 6380)
    );
    assert_eq!(ok("10.0.0.1:1"), Endpoint::new("10.0.0.1", 1));
    assert_eq!(ok("h:65535"), Endpoint::new("h", 65535));
    assert_eq!(ok("h:06379"), Endpoint::new("h", 6379));
}

#[test]
fn host_alone_gets_the_default_port() {
    assert_eq!(ok("localhost"), Endpoint::new("localhost", 6379));
    assert_eq!(
        ok("my_host-1.internal"),
        Endpoint::new("my_host-1.internal", 6379)
    );
}

#[test]
fn surrounding_whitespace_is_ignored() {
    assert_eq!(ok("  h:1 \t"), Endpoint::new("h", 1));
}

#[test]
fn bracketed_ipv6_with_and_without_port() {
    assert_eq!(ok("[::1]:6380"), Endpoint::new("::1", 6380));
    assert_eq!(ok("[::1]"), Endpoint::new("::1", 6379));
    assert_eq!(ok("[2001:db8::7]:7000"), Endpoint::new("2001:db8::7", 7000));
    assert_eq!(
        ok("[::ffff:10.0.0.1]:1"),
        Endpoint::new("::ffff:10.0.0.1", 1)
    );
}

#[test]
fn bare_ipv6_is_a_host_on_the_default_port() {
    assert_eq!(ok("::1"), Endpoint::new("::1", 6379));
    assert_eq!(ok("2001:db8::1"), Endpoint::new("2001:db8::1", 6379));
    // Ambiguous on purpose: this is a valid address, so it is taken as one (documented).
    assert_eq!(ok("::1:6380"), Endpoint::new("::1:6380", 6379));
}

#[test]
fn display_brackets_ipv6_so_it_parses_back() {
    for s in ["[::1]:6380", "h:1", "[2001:db8::1]:6379"] {
        assert_eq!(ok(s).to_string(), s);
        assert_eq!(ok(&ok(s).to_string()), ok(s));
    }
}

#[test]
fn rejects_malformed_endpoints() {
    let cases = [
        ("", "empty"),
        ("   ", "empty"),
        (":6379", "host is empty"),
        ("h:", "port"),
        ("h:0", "port"),
        ("h:65536", "port"),
        ("h:99999999999999999999", "port"),
        ("h:abc", "port"),
        ("h:+80", "port"),
        ("h:-1", "port"),
        ("ho st:1", "whitespace"),
        ("h :1", "whitespace"),
        ("h:1 2", "whitespace"),
        ("[::1", "closed"),
        ("[::1]x", "':port'"),
        ("[::1]:", "port"),
        ("[::1]:0", "port"),
        ("[nothost]:1", "IPv6"),
        ("[]:1", "IPv6"),
        ("a:b:c", "brackets"),
        ("fe80::1%eth0", "brackets"),
        ("h/x:1", "character"),
        ("u@h:1", "character"),
        ("h,i", "character"),
    ];
    for (s, why) in cases {
        let e = parse_endpoint(s).expect_err(s);
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(e.detail().contains(why), "{s:?}: {e}");
    }
}

#[test]
fn parse_endpoint_errors_quote_the_endpoint() {
    // Safe here (an endpoint alone is not a secret), and it helps the caller.
    let e = parse_endpoint("h:0").unwrap_err();
    assert!(e.detail().contains("\"h:0\""), "{e}");
}
