//! The decoded form of every RESP2 and RESP3 frame.

use std::fmt;

/// One RESP2 or RESP3 frame, as decoded.
///
/// Strings that are text by protocol (simple strings, errors, big numbers, verbatim
/// format) are kept as `String` (invalid UTF-8 replaced); bulk payloads stay bytes.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// `+OK`
    SimpleString(String),
    /// `-ERR ...`: an error reply (RESP2 and RESP3).
    Error(String),
    /// `:42`
    Int(i64),
    /// `$3\r\nfoo`
    BulkString(Vec<u8>),
    /// `*N`
    Array(Vec<Value>),
    /// `$-1`, `*-1` or RESP3 `_`.
    Nil,
    /// RESP3 `,1.5` (also `inf`, `-inf`, `nan`).
    Double(f64),
    /// RESP3 `#t` / `#f`.
    Boolean(bool),
    /// RESP3 `(3492890328409238509324850943850943825024385`, kept as its digits.
    BigNumber(String),
    /// RESP3 `!21\r\nSYNTAX invalid syntax`.
    BulkError(String),
    /// RESP3 `=15\r\ntxt:Some string`.
    VerbatimString {
        /// The three-letter format (`txt`, `mkd`).
        format: String,
        /// The text after the `xxx:` prefix.
        text: Vec<u8>,
    },
    /// RESP3 `%N`: key/value pairs in wire order.
    Map(Vec<(Value, Value)>),
    /// RESP3 `~N`.
    Set(Vec<Value>),
    /// RESP3 `|N` attributes followed by the value they annotate.
    Attribute {
        /// The annotated value.
        data: Box<Value>,
        /// The attribute pairs.
        attributes: Vec<(Value, Value)>,
    },
    /// RESP3 `>N`: an out-of-band push (pub/sub message, maintenance notification).
    Push(Vec<Value>),
}

impl Value {
    /// Whether this is an error reply (`-` or `!`).
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error(_) | Value::BulkError(_))
    }

    /// The text of an error reply, if this is one.
    pub fn error_message(&self) -> Option<&str> {
        match self {
            Value::Error(m) | Value::BulkError(m) => Some(m),
            _ => None,
        }
    }

    /// The bytes of a string-like value (simple, bulk, verbatim), if this is one.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::SimpleString(s) => Some(s.as_bytes()),
            Value::BulkString(b) => Some(b),
            Value::VerbatimString { text, .. } => Some(text),
            _ => None,
        }
    }

    /// A short name of the frame type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::SimpleString(_) => "simple string",
            Value::Error(_) => "error",
            Value::Int(_) => "integer",
            Value::BulkString(_) => "bulk string",
            Value::Array(_) => "array",
            Value::Nil => "nil",
            Value::Double(_) => "double",
            Value::Boolean(_) => "boolean",
            Value::BigNumber(_) => "big number",
            Value::BulkError(_) => "bulk error",
            Value::VerbatimString { .. } => "verbatim string",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
            Value::Attribute { .. } => "attribute",
            Value::Push(_) => "push",
        }
    }
}

/// Shows bulk payloads as text where printable and truncates long ones, so a 16 MiB
/// value in a log line or a failed assertion stays readable.
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 64;
        match self {
            Value::SimpleString(s) => write!(f, "+{s:?}"),
            Value::Error(s) => write!(f, "-{s:?}"),
            Value::Int(i) => write!(f, ":{i}"),
            Value::BulkString(b) => {
                let shown = &b[..b.len().min(SHOWN)];
                write!(f, "${:?}", String::from_utf8_lossy(shown))?;
                if b.len() > SHOWN {
                    write!(f, "..({} bytes)", b.len())?;
                }
                Ok(())
            }
            Value::Array(items) => f.debug_list().entries(items).finish(),
            Value::Nil => write!(f, "nil"),
            Value::Double(d) => write!(f, ",{d}"),
            Value::Boolean(b) => write!(f, "#{b}"),
            Value::BigNumber(n) => write!(f, "({n}"),
            Value::BulkError(s) => write!(f, "!{s:?}"),
            Value::VerbatimString { format, text } => {
                write!(f, "={format}:{:?}", String::from_utf8_lossy(text))
            }
            Value::Map(pairs) => f
                .debug_map()
                .entries(pairs.iter().map(|(k, v)| (k, v)))
                .finish(),
            Value::Set(items) => f.debug_set().entries(items).finish(),
            Value::Attribute { data, attributes } => f
                .debug_struct("Attribute")
                .field("attributes", attributes)
                .field("data", data)
                .finish(),
            Value::Push(items) => {
                write!(f, ">")?;
                f.debug_list().entries(items).finish()
            }
        }
    }
}
