//! `Options::parse` (URLs and option strings) on arbitrary text.
//!
//! Properties:
//! - no panic; every error is `ErrorKind::Config`;
//! - a password never shows in `Display` or `Debug` of the options, nor in the error
//!   when the input carries it (the input is also parsed with a marked password added,
//!   as an option-string item and in a URL's userinfo);
//! - what parses survives `Display` then `parse` (password aside), except for the
//!   values `Display` documents as unwritable (empty, a comma, surrounding whitespace).
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilient_redis::{ErrorKind, Options};

/// `Options` has no `PartialEq`: its `Debug` without the password, and without the
/// record of which settings were explicit when no provider applies (it only matters
/// against one, and `Display` writes a setting pinned to a default only then; the
/// crate's own `comparable` in `src/config/tests` does the same).
fn comparable(o: &Options) -> String {
    let mut o = o.clone();
    o.password = None;
    let text = format!("{o:?}");
    if o.provider().is_some() {
        return text;
    }
    match text.find(", explicit: Explicit {") {
        Some(start) => match text[start..].find('}') {
            Some(len) => format!("{}{}", &text[..start], &text[start + len + 1..]),
            None => text,
        },
        None => text,
    }
}

/// Whether a text value can be written by `Display` and read back.
fn writable(s: &str) -> bool {
    !s.is_empty() && !s.contains(',') && s.trim() == s
}

fn round_trips_expected(o: &Options) -> bool {
    let texts = [
        o.user.as_deref(),
        o.client_name.as_deref(),
        o.tls.as_ref().and_then(|t| t.server_name.as_deref()),
    ];
    let paths = o.tls.as_ref().map(|t| {
        [&t.ca_file, &t.client_cert_file, &t.client_key_file]
            .into_iter()
            .flatten()
            .all(|p| p.to_str().is_some_and(writable))
    });
    texts.into_iter().flatten().all(writable) && paths.unwrap_or(true)
}

fn check(input: &str, password: Option<&str>) {
    match Options::parse(input) {
        Ok(o) => {
            let shown = [o.to_string(), format!("{o:?}"), format!("{o:#?}")];
            if let Some(p) = o.password.as_ref().map(|p| p.expose().to_string()) {
                // A password that also occurs elsewhere in the options (a host equal to
                // it) may show there: only an appearance the rest cannot explain leaks.
                let mut without = o.clone();
                without.password = None;
                let rest = format!("{without} {without:?} {without:#?}");
                if p.len() >= 4 && !rest.contains(&p) {
                    for s in &shown {
                        assert!(!s.contains(&p), "password {p:?} shown in {s:?}");
                    }
                }
            }
            if round_trips_expected(&o) {
                let text = o.to_string();
                let back = Options::parse(&text)
                    .unwrap_or_else(|e| panic!("Display output {text:?} does not parse: {e}"));
                assert_eq!(comparable(&back), comparable(&o), "through {text:?}");
            }
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Config, "{input:?}: {e}");
            if let Some(p) = password {
                let text = format!("{e} {e:?}");
                assert!(!text.contains(p), "password {p:?} in the error for {input:?}: {text}");
            }
        }
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check(text, None);
    // The same text with a marked password placed in it: the mark cannot come from
    // anywhere but the password, so seeing it in an error is a leak.
    let password = format!("Zq{:08x}Pw", text.len().wrapping_mul(0x9E37_79B9));
    if !text.contains(&password) {
        check(&format!("{text},password={password}"), Some(&password));
        check(&format!("password={password},{text}"), Some(&password));
        let url_tail = text.strip_prefix("redis://").unwrap_or(text);
        check(&format!("redis://u:{}@{url_tail}", percent_encode(&password)), Some(&password));
    }
});
