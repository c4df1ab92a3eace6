//! Properties: no input panics the parser; every valid option set round-trips.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

use proptest::prelude::*;
use proptest::sample::select;

use super::assert_round_trips;
use crate::config::keys::PROVIDERS;
use crate::config::Options;

/// A value an option string can carry unquoted: printable ASCII without ',' or spaces,
/// not starting with '"'.
const PLAIN: &str = "[!#-+\\--~][!-+\\--~]{0,15}";

/// Any text (no control characters): written quoted, it may hold commas, quotes,
/// backslashes and surrounding whitespace.
const ANY_TEXT: &str = "[\\PC,\"\\\\ ]{1,16}";

/// `v` in double quotes with `"` and `\` escaped: the documented quoting, written here
/// independently of the code under test.
fn quoted(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

fn endpoint() -> impl Strategy<Value = String> {
    let port = prop_oneof![Just(None), (1u16..).prop_map(Some)];
    let host = "[a-z][a-z0-9.-]{0,12}";
    prop_oneof![
        (host, port.clone()).prop_map(|(h, p)| match p {
            Some(p) => format!("{h}:{p}"),
            None => h,
        }),
        (any::<[u16; 8]>(), port).prop_map(|(segments, p)| {
            let ip = Ipv6Addr::from(segments);
            match p {
                Some(p) => format!("[{ip}]:{p}"),
                None => ip.to_string(),
            }
        }),
        any::<[u8; 4]>().prop_map(|[a, b, c, d]| format!("{a}.{b}.{c}.{d}")),
    ]
}

fn boolean() -> impl Strategy<Value = String> {
    select(&["true", "false", "YES", "no", "1", "0"][..]).prop_map(String::from)
}

fn truthy() -> impl Strategy<Value = String> {
    select(&["true", "Yes", "1"][..]).prop_map(String::from)
}

fn millis() -> impl Strategy<Value = String> {
    prop_oneof![1u64..100_000, 1u64..].prop_map(|n| n.to_string())
}

/// Seconds with 0 to 9 fractional digits, never zero.
fn seconds() -> impl Strategy<Value = String> {
    (0u64..1_000_000, "[0-9]{0,9}").prop_filter_map("zero", |(secs, fraction)| {
        let zero = secs == 0 && fraction.bytes().all(|b| b == b'0');
        let text = if fraction.is_empty() {
            secs.to_string()
        } else {
            format!("{secs}.{fraction}")
        };
        (!zero).then_some(text)
    })
}

fn choice(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    select(options).prop_map(String::from)
}

/// `key=value` items, valid alone and together (TLS details come with `ssl=true`,
/// `reconnectMin` is not above `reconnectMax`).
fn items() -> impl Strategy<Value = Vec<(String, String)>> {
    let single = prop_oneof![
        PLAIN.prop_map(|v| ("user".to_string(), v)),
        ANY_TEXT.prop_map(|v| ("user".to_string(), quoted(&v))),
        PLAIN.prop_map(|v| ("name".to_string(), v)),
        any::<u32>().prop_map(|v| ("defaultDatabase".to_string(), v.to_string())),
        boolean().prop_map(|v| ("ssl".to_string(), v)),
        millis().prop_map(|v| ("connectTimeout".to_string(), v)),
        millis().prop_map(|v| ("syncTimeout".to_string(), v)),
        millis().prop_map(|v| ("keepAlive".to_string(), v)),
        choice(&["resp2", "RESP3", "2", "3"]).prop_map(|v| ("protocol".to_string(), v)),
        boolean().prop_map(|v| ("abortConnect".to_string(), v)),
        choice(&["queue", "failfast", "FailFast"]).prop_map(|v| ("backlog".to_string(), v)),
        (1usize..).prop_map(|v| ("backlogLimit".to_string(), v.to_string())),
        (1usize..100).prop_map(|v| ("blockingPool".to_string(), v.to_string())),
        choice(&["disabled", "auto", "Enabled"])
            .prop_map(|v| ("maintNotifications".to_string(), v)),
        seconds().prop_map(|v| ("maintRelaxedTimeout".to_string(), v)),
        seconds().prop_map(|v| ("maintRelaxedWindowMax".to_string(), v)),
        seconds().prop_map(|v| ("maintPostEventRelaxed".to_string(), v)),
        choice(&[
            "internal-ip",
            "internal-fqdn",
            "external-ip",
            "External-FQDN",
            "none"
        ])
        .prop_map(|v| ("maintMovingEndpointType".to_string(), v)),
        select(&PROVIDERS[..]).prop_map(|v| ("defaults".to_string(), v.to_ascii_uppercase())),
    ];
    let reconnect = (1u64..10_000, 1u64..10_000).prop_map(|(a, b)| {
        vec![
            ("reconnectMin".to_string(), a.min(b).to_string()),
            ("reconnectMax".to_string(), a.max(b).to_string()),
        ]
    });
    let tls = (
        truthy(),
        proptest::option::of(PLAIN),
        proptest::option::of(ANY_TEXT.prop_map(|v| quoted(&v))),
        proptest::option::of((PLAIN, ANY_TEXT.prop_map(|v| quoted(&v)))),
        proptest::option::of(boolean()),
    )
        .prop_map(|(on, host, ca, pair, verify)| {
            let mut items = vec![("ssl".to_string(), on)];
            items.extend(host.map(|v| ("sslHost".to_string(), v)));
            items.extend(ca.map(|v| ("sslCaFile".to_string(), v)));
            if let Some((cert, key)) = pair {
                items.push(("sslCert".to_string(), cert));
                items.push(("sslKey".to_string(), key));
            }
            items.extend(verify.map(|v| ("sslVerify".to_string(), v)));
            items
        });
    (
        proptest::collection::vec(single, 0..8),
        proptest::option::of(reconnect),
        proptest::option::of(tls),
    )
        .prop_map(|(mut items, reconnect, tls)| {
            // A later plain `ssl=false` would turn the TLS details into an error.
            if tls.is_some() {
                items.retain(|(k, _)| k != "ssl");
            }
            items.extend(reconnect.into_iter().flatten());
            items.extend(tls.into_iter().flatten());
            items
        })
}

/// An option string: endpoints, key items (keys in random case), a password, shuffled.
/// The password holds any text, commas and quotes included, so it is quoted; an
/// unquoted one (plain text) goes last, as endpoints may not follow it.
fn option_string() -> impl Strategy<Value = (String, String)> {
    (
        proptest::collection::vec(endpoint(), 1..4),
        items(),
        prop_oneof!["[A-Za-z0-9]{8,16}", ANY_TEXT],
        any::<u64>(),
    )
        .prop_flat_map(|(endpoints, items, password, case_bits)| {
            let password = format!("Pw#{password}");
            let mut pieces = endpoints;
            for (i, (key, value)) in items.into_iter().enumerate() {
                let key = match (case_bits >> (2 * (i % 32))) & 3 {
                    0 => key.to_ascii_lowercase(),
                    1 => key.to_ascii_uppercase(),
                    _ => key,
                };
                pieces.push(format!("{key}={value}"));
            }
            let plain = password
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'#');
            let last = if plain && case_bits & (1 << 63) != 0 {
                Some(format!("password={password}"))
            } else {
                pieces.push(format!("password={}", quoted(&password)));
                None
            };
            (Just(pieces).prop_shuffle(), Just(last), Just(password))
        })
        .prop_map(|(mut pieces, last, password)| {
            pieces.extend(last);
            (pieces.join(","), password)
        })
}

fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        let _ = Options::parse(&s);
    }

    #[test]
    fn url_shaped_text_never_panics(
        s in "(redis|rediss|valkey|http|x)://[a-zA-Z0-9:@%/?#&=,.\\[\\] +é-]{0,48}"
    ) {
        let _ = Options::parse(&s);
    }

    #[test]
    fn option_shaped_text_never_panics(s in "[a-zA-Z0-9:@%/?#&=,.\\[\\] é-]{0,64}") {
        let _ = Options::parse(&s);
    }

    #[test]
    fn known_keys_with_arbitrary_values_never_panic(
        key in select(&crate::config::keys::OptionKey::ALL[..]),
        value in any::<String>(),
    ) {
        let _ = Options::parse(&format!("h,ssl=true,{}={value}", key.name()));
        let _ = Options::parse(&format!("redis://h?{}={}", key.name(), url_encode(&value)));
    }

    #[test]
    fn generated_option_strings_round_trip((s, password) in option_string()) {
        let o = Options::parse(&s).map_err(|e| TestCaseError::fail(format!("{s:?}: {e}")))?;
        prop_assert_eq!(o.password.as_ref().map(|p| p.expose()), Some(password.as_str()));
        let text = o.to_string();
        prop_assert!(!text.contains(&password), "password in {}", text);
        assert_round_trips(&o);
        // Display is a fixed point: writing the re-parsed options gives the same text.
        prop_assert_eq!(Options::parse(&text).unwrap().to_string(), text);
    }

    /// Whatever text surrounds it, a password never shows in an error or in the
    /// options' `Display`/`Debug` (the mark cannot come from anywhere else).
    #[test]
    fn a_password_in_arbitrary_text_never_shows(
        text in "[a-zA-Z0-9:@%/?#&=,.\\[\\] é-]{0,48}",
        at_start in any::<bool>(),
        in_url in any::<bool>(),
    ) {
        const MARK: &str = "Zq7Secret9Pw";
        let input = match (in_url, at_start) {
            (true, _) => format!("redis://u:{MARK}@{}", text.trim_start_matches("redis://")),
            (false, true) => format!("password={MARK},{text}"),
            (false, false) => format!("{text},password={MARK}"),
        };
        prop_assume!(!text.contains(MARK));
        match Options::parse(&input) {
            Ok(o) => {
                for shown in [o.to_string(), format!("{o:?}"), format!("{o:#?}")] {
                    prop_assert!(!shown.contains(MARK), "{:?} shows {:?}", input, shown);
                }
            }
            Err(e) => {
                let shown = format!("{e} {e:?}");
                prop_assert!(!shown.contains(MARK), "{:?} fails with {:?}", input, shown);
            }
        }
    }

    #[test]
    fn any_password_survives_percent_encoding(password in "\\PC{1,24}", user in "[a-z]{0,8}") {
        let url = format!("redis://{}:{}@h", url_encode(&user), url_encode(&password));
        let o = Options::parse(&url).map_err(|e| TestCaseError::fail(format!("{url:?}: {e}")))?;
        prop_assert_eq!(o.password.as_ref().map(|p| p.expose()), Some(password.as_str()));
        prop_assert_eq!(o.user.as_deref(), (!user.is_empty()).then_some(user.as_str()));
    }
}
