//! Tests of configuration parsing and `Display`, grouped by concern.

mod display;
mod endpoint;
mod keys;
mod option_string;
mod props;
mod providers;
mod secrets;
mod url;

use crate::config::Options;
use crate::error::ErrorKind;

/// Parses `s`, panicking with the error (never a secret: see `secrets`) on failure.
fn parse(s: &str) -> Options {
    Options::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

/// Parses `s`, which must fail with a configuration error, and returns the detail.
fn parse_err(s: &str) -> String {
    match Options::parse(s) {
        Ok(o) => panic!("{s:?} should not parse, got {o:?}"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Config, "{s:?}: {e}");
            e.detail().to_string()
        }
    }
}

/// `Options` has no `PartialEq`: compare `Debug` output, without the password (which
/// `Display` drops on purpose; its `Debug` is redacted anyway), and without the record
/// of explicit settings where no provider applies (it only matters against one, and
/// `Display` writes a setting pinned to a default only then).
fn comparable(o: &Options) -> String {
    let mut o = o.clone();
    o.password = None;
    if o.provider().is_none() {
        o.explicit = crate::config::Explicit::default();
    }
    format!("{o:?}")
}

/// Asserts that `o` survives `Display` then `parse`, password aside.
fn assert_round_trips(o: &Options) {
    let text = o.to_string();
    let back = Options::parse(&text)
        .unwrap_or_else(|e| panic!("Display output {text:?} should parse: {e}"));
    assert_eq!(comparable(&back), comparable(o), "through {text:?}");
}
