//! What a command answers, and how it goes on the wire for the connection's protocol.
//!
//! Owns: the reply shapes and the real server's common error texts. Must never: share
//! an encoded buffer between recipients (each frame is encoded for its connection).

use crate::resp::{encode_value, encode_value_resp2, Value};

/// A command's answer.
#[derive(Debug)]
pub(crate) enum Reply {
    /// One frame.
    Value(Value),
    /// RESP2 `*-1` (a null array), RESP3 `_`: BLPOP timeout, EXEC aborted by WATCH.
    NullArray,
    /// Several frames, one after another (e.g. one confirmation per subscribed channel).
    Frames(Vec<Value>),
    /// The reply, then the connection closes (`QUIT`).
    Close(Value),
}

impl From<Value> for Reply {
    fn from(v: Value) -> Reply {
        Reply::Value(v)
    }
}

impl Reply {
    /// The reply as one value, for an `EXEC` result array.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Reply::Value(v) | Reply::Close(v) => v,
            Reply::NullArray => Value::Nil,
            Reply::Frames(mut v) => v.pop().unwrap_or(Value::Nil),
        }
    }
}

/// Appends `v` to `buf` in the wire form of protocol `proto` (2 or 3).
pub(crate) fn encode(buf: &mut Vec<u8>, proto: u8, v: &Value) {
    if proto >= 3 {
        encode_value(buf, v);
    } else {
        encode_value_resp2(buf, v);
    }
}

/// Appends a whole reply to `buf`.
pub(crate) fn encode_reply(buf: &mut Vec<u8>, proto: u8, reply: &Reply) {
    match reply {
        Reply::Value(v) | Reply::Close(v) => encode(buf, proto, v),
        Reply::NullArray if proto >= 3 => buf.extend_from_slice(b"_\r\n"),
        Reply::NullArray => buf.extend_from_slice(b"*-1\r\n"),
        Reply::Frames(frames) => frames.iter().for_each(|f| encode(buf, proto, f)),
    }
}

pub(crate) fn ok() -> Reply {
    Reply::Value(Value::SimpleString("OK".into()))
}

pub(crate) fn simple(s: &str) -> Reply {
    Reply::Value(Value::SimpleString(s.into()))
}

pub(crate) fn int(i: i64) -> Reply {
    Reply::Value(Value::Int(i))
}

pub(crate) fn bulk(b: impl Into<Vec<u8>>) -> Reply {
    Reply::Value(Value::BulkString(b.into()))
}

pub(crate) fn nil() -> Reply {
    Reply::Value(Value::Nil)
}

pub(crate) fn array(items: Vec<Value>) -> Reply {
    Reply::Value(Value::Array(items))
}

pub(crate) fn bulk_value(b: &[u8]) -> Value {
    Value::BulkString(b.to_vec())
}

/// A text reply: verbatim (`=txt:`) in RESP3, a bulk string in RESP2 (INFO, CLIENT INFO,
/// CLUSTER NODES), as the real server sends them.
pub(crate) fn verbatim(text: String) -> Reply {
    Reply::Value(Value::VerbatimString {
        format: "txt".into(),
        text: text.into_bytes(),
    })
}

/// An error reply; `text` starts with its code (`ERR ...`, `WRONGTYPE ...`).
pub(crate) fn err(text: impl Into<String>) -> Reply {
    Reply::Value(Value::Error(text.into()))
}

pub(crate) fn syntax_error() -> Reply {
    err("ERR syntax error")
}

pub(crate) fn not_integer() -> Reply {
    err("ERR value is not an integer or out of range")
}

pub(crate) fn not_float() -> Reply {
    err("ERR value is not a valid float")
}

pub(crate) fn wrong_type() -> Reply {
    err("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// `ERR wrong number of arguments for 'get' command` (the name as the server spells it:
/// lowercase, `container|sub` for subcommands).
pub(crate) fn wrong_arity(fullname: &str) -> Reply {
    err(format!(
        "ERR wrong number of arguments for '{fullname}' command"
    ))
}

/// The real server's unknown-command text, trailing space included:
/// `ERR unknown command 'FOO', with args beginning with: 'a' 'b' `.
pub(crate) fn unknown_command(args: &[Vec<u8>]) -> Reply {
    let mut shown = String::new();
    for a in &args[1..] {
        if shown.len() >= 128 {
            break;
        }
        let room = 128 - shown.len();
        let text = String::from_utf8_lossy(a);
        let cut: String = text.chars().take(room).collect();
        shown.push_str(&format!("'{cut}' "));
    }
    let name: String = String::from_utf8_lossy(&args[0])
        .chars()
        .take(128)
        .collect();
    err(sanitize(&format!(
        "ERR unknown command '{name}', with args beginning with: {shown}"
    )))
}

/// `ERR unknown subcommand 'x'. Try CLIENT HELP.`
pub(crate) fn unknown_subcommand(container: &str, sub: &[u8]) -> Reply {
    let sub: String = String::from_utf8_lossy(sub).chars().take(128).collect();
    err(sanitize(&format!(
        "ERR unknown subcommand '{sub}'. Try {container} HELP."
    )))
}

/// Error texts go on one line: the server replaces line breaks with spaces.
fn sanitize(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// Parses an integer argument the way the server does (`string2ll`: no spaces, no `+`).
pub(crate) fn parse_int(arg: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(arg).ok()?;
    if s.is_empty() || s.starts_with('+') || (s.len() > 1 && s.starts_with('0')) {
        return if s == "0" { Some(0) } else { None };
    }
    if s.starts_with("-0") {
        return None;
    }
    s.parse().ok()
}

/// Parses a float argument (`inf`, `-inf` and `+inf` accepted; NaN refused).
pub(crate) fn parse_float(arg: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(arg).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let v: f64 = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => s.parse().ok()?,
    };
    if v.is_nan() {
        None
    } else {
        Some(v)
    }
}

/// Formats a double the way the server writes one as text (`3`, `1.5`, `inf`).
pub(crate) fn format_float(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == v.trunc() && v.abs() < 1e17 {
        return format!("{}", v as i64);
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_text_matches_the_server() {
        let args: Vec<Vec<u8>> = vec![b"FOO".to_vec(), b"a".to_vec(), b"b".to_vec()];
        match unknown_command(&args) {
            Reply::Value(Value::Error(e)) => assert_eq!(
                e,
                "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn integers_parse_like_string2ll() {
        assert_eq!(parse_int(b"42"), Some(42));
        assert_eq!(parse_int(b"-7"), Some(-7));
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"+1"), None);
        assert_eq!(parse_int(b"01"), None);
        assert_eq!(parse_int(b" 1"), None);
        assert_eq!(format_float(3.0), "3");
        assert_eq!(format_float(1.5), "1.5");
    }
}
