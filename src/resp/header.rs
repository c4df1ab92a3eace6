//! Header fields: the numbers, doubles and texts read from one header line.
//!
//! Owns: parsing what follows a type byte. Must never: panic on any bytes, or quote
//! refused bytes in an error (a reply may carry a secret).

use crate::error::{Error, ErrorKind, Result};

/// The decoder's one error kind: the peer broke the protocol.
pub(super) fn protocol(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::Protocol, detail)
}

/// A declared length: `N`, `-1` (null) or `?` (streamed).
pub(super) enum Len {
    N(usize),
    Null,
    Streamed,
}

/// Parses an optionally signed decimal `i64`; `None` for anything else (empty,
/// stray bytes, overflow).
pub(super) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        // Accumulating negatively reaches i64::MIN without overflowing.
        n = n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if negative {
        Some(n)
    } else {
        n.checked_neg()
    }
}

pub(super) fn parse_len(s: &[u8], what: &str) -> Result<Len> {
    if s == b"?" {
        return Ok(Len::Streamed);
    }
    match parse_i64(s) {
        Some(-1) => Ok(Len::Null),
        Some(n) if n >= 0 => usize::try_from(n)
            .map(Len::N)
            .map_err(|_| protocol(format!("{what} length does not fit in memory"))),
        Some(_) => Err(protocol(format!("negative {what} length other than -1"))),
        None => Err(protocol(format!("{what} length is not a number"))),
    }
}

pub(super) fn parse_double(s: &[u8]) -> Result<f64> {
    let bad = || protocol("double is not a number");
    let text = std::str::from_utf8(s).map_err(|_| bad())?;
    match text {
        "inf" | "+inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "nan" | "-nan" => Ok(f64::NAN),
        // Rust also accepts "infinity", "NaN" and the like: harmless spellings.
        _ => text.parse().map_err(|_| bad()),
    }
}

pub(super) fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

pub(super) fn text_from_vec(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
