//! Command encoder and value encoder.
//!
//! Owns: writing commands (`*argc` then `$len` bulk arguments) straight into the
//! outgoing buffer, and writing any [`Value`] in RESP3 or RESP2 form (the fake server
//! and the tests). Must never: allocate on the command path beyond the output buffer
//! (integers are formatted on the stack), or write a frame that would put the peer
//! out of step.

use super::Value;
use std::io::Write;

const CRLF: &[u8] = b"\r\n";

/// Two ASCII digits for every value 0..100, so integers format two digits per division.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// A small stack buffer filled from its end, so a frame header (type byte, digits,
/// CRLF) is assembled without knowing its length first and appended in one copy.
struct Scratch {
    bytes: [u8; 32],
    at: usize,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            bytes: [0; 32],
            at: 32,
        }
    }

    /// Callers prepend at most 27 bytes (`$20\r\n-9223372036854775808\r\n`).
    fn prepend(&mut self, s: &[u8]) {
        self.at -= s.len();
        self.bytes[self.at..self.at + s.len()].copy_from_slice(s);
    }

    /// Two digits per division: the integer part of every header on the hot path.
    fn prepend_u64(&mut self, mut n: u64) {
        while n >= 100 {
            let pair = (n % 100) as usize * 2;
            n /= 100;
            self.prepend(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if n >= 10 {
            let pair = n as usize * 2;
            self.prepend(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            self.prepend(&[b'0' + n as u8]);
        }
    }

    /// `i64::MIN` works because the magnitude is taken as `u64`.
    fn prepend_i64(&mut self, n: i64) {
        self.prepend_u64(n.unsigned_abs());
        if n < 0 {
            self.prepend(b"-");
        }
    }

    fn len(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.at..]
    }
}

/// `<type><n>\r\n`, the header of every length-prefixed frame.
fn push_header(buf: &mut Vec<u8>, ty: u8, n: usize) {
    if n < 10 {
        // The common case on the hot path: argc and short arguments.
        buf.extend_from_slice(&[ty, b'0' + n as u8, b'\r', b'\n']);
        return;
    }
    if n < 100 {
        // Next most common: keys and small values.
        buf.extend_from_slice(&[
            ty,
            b'0' + (n / 10) as u8,
            b'0' + (n % 10) as u8,
            b'\r',
            b'\n',
        ]);
        return;
    }
    let mut s = Scratch::new();
    s.prepend(CRLF);
    s.prepend_u64(n as u64);
    s.prepend(&[ty]);
    buf.extend_from_slice(s.as_slice());
}

/// Writes the command header `*argc\r\n`.
pub fn write_command_header(buf: &mut Vec<u8>, argc: usize) {
    push_header(buf, b'*', argc);
}

/// Writes one command argument as a bulk string: `$len\r\narg\r\n`.
pub fn write_arg(buf: &mut Vec<u8>, arg: &[u8]) {
    // One reservation for header, payload and trailer keeps large arguments to a
    // single grow of the outgoing buffer. Exact, not padded: a padded reservation
    // grew a `SET` of a 32-byte value past `Cmd`'s first buffer (a `realloc` per
    // command, 15 % of building a batch).
    buf.reserve(bulk_len(arg.len()));
    push_header(buf, b'$', arg.len());
    buf.extend_from_slice(arg);
    buf.extend_from_slice(CRLF);
}

/// Bytes of a bulk string of `n` bytes: `$`, the digits of `n`, CRLF, payload, CRLF.
fn bulk_len(n: usize) -> usize {
    let digits = match n {
        0..=9 => 1,
        10..=99 => 2,
        100..=999 => 3,
        _ => n.ilog10() as usize + 1,
    };
    1 + digits + 2 + n + 2
}

/// Writes an integer argument as a bulk string (`$2\r\n42\r\n`), formatted on the
/// stack so the call does not allocate.
pub fn write_int_arg(buf: &mut Vec<u8>, n: i64) {
    let mut s = Scratch::new();
    s.prepend(CRLF);
    s.prepend_i64(n);
    let digits = s.len() - CRLF.len();
    s.prepend(CRLF);
    s.prepend_u64(digits as u64);
    s.prepend(b"$");
    buf.extend_from_slice(s.as_slice());
}

/// Writes a line-framed text (`+`, `-`, `(`). CR and LF cannot be framed in a line,
/// so they are written as spaces: a value built by hand must never desynchronise the
/// peer (the fake server writes whatever a test gives it).
fn push_line(buf: &mut Vec<u8>, ty: u8, text: &str) {
    buf.push(ty);
    let bytes = text.as_bytes();
    if bytes.iter().any(|&b| b == b'\r' || b == b'\n') {
        buf.extend(bytes.iter().map(|&b| match b {
            b'\r' | b'\n' => b' ',
            other => other,
        }));
    } else {
        buf.extend_from_slice(bytes);
    }
    buf.extend_from_slice(CRLF);
}

fn push_bulk(buf: &mut Vec<u8>, ty: u8, payload: &[u8]) {
    buf.reserve(payload.len() + 32);
    push_header(buf, ty, payload.len());
    buf.extend_from_slice(payload);
    buf.extend_from_slice(CRLF);
}

/// The text of a double as both protocols write it: `inf`, `-inf`, `nan`, or the
/// shortest text that parses back to the same `f64`. Exponent form outside
/// [1e-5, 1e16) keeps `1e300` from being written as 301 digits.
fn push_double_text(buf: &mut Vec<u8>, d: f64) {
    if d.is_nan() {
        buf.extend_from_slice(b"nan");
    } else if d.is_infinite() {
        buf.extend_from_slice(if d > 0.0 { b"inf" } else { b"-inf" });
    } else {
        let magnitude = d.abs();
        // Writing into a Vec cannot fail; Rust's float formatting is shortest
        // round-trip in both notations.
        let _ = if magnitude != 0.0 && !(1e-5..1e16).contains(&magnitude) {
            write!(buf, "{d:e}")
        } else {
            write!(buf, "{d}")
        };
    }
}

/// The verbatim format must be exactly three bytes for the `xxx:` prefix to frame;
/// anything else is written as `txt` rather than as a frame the peer cannot read.
fn verbatim_format(format: &str) -> &[u8] {
    if format.len() == 3 {
        format.as_bytes()
    } else {
        b"txt"
    }
}

/// Writes any value in RESP3 wire form.
///
/// Simple strings, errors and big numbers cannot carry CR or LF; they are written as
/// spaces. A verbatim format that is not three bytes is written as `txt`.
pub fn encode_value(buf: &mut Vec<u8>, v: &Value) {
    match v {
        Value::SimpleString(s) => push_line(buf, b'+', s),
        Value::Error(s) => push_line(buf, b'-', s),
        Value::Int(n) => {
            let mut s = Scratch::new();
            s.prepend(CRLF);
            s.prepend_i64(*n);
            s.prepend(b":");
            buf.extend_from_slice(s.as_slice());
        }
        Value::BulkString(b) => push_bulk(buf, b'$', b),
        Value::Array(items) => encode_items(buf, b'*', items, encode_value),
        Value::Nil => buf.extend_from_slice(b"_\r\n"),
        Value::Double(d) => {
            buf.push(b',');
            push_double_text(buf, *d);
            buf.extend_from_slice(CRLF);
        }
        Value::Boolean(b) => buf.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Value::BigNumber(n) => push_line(buf, b'(', n),
        Value::BulkError(s) => push_bulk(buf, b'!', s.as_bytes()),
        Value::VerbatimString { format, text } => {
            buf.reserve(text.len() + 36);
            push_header(buf, b'=', text.len() + 4);
            buf.extend_from_slice(verbatim_format(format));
            buf.push(b':');
            buf.extend_from_slice(text);
            buf.extend_from_slice(CRLF);
        }
        Value::Map(pairs) => encode_pairs(buf, b'%', pairs),
        Value::Set(items) => encode_items(buf, b'~', items, encode_value),
        Value::Attribute { data, attributes } => {
            encode_pairs(buf, b'|', attributes);
            encode_value(buf, data);
        }
        Value::Push(items) => encode_items(buf, b'>', items, encode_value),
    }
}

/// Writes a value as a RESP2 server would send it (for a client that did not say
/// `HELLO 3`): maps become flat arrays, sets and pushes arrays, doubles and big
/// numbers bulk strings, booleans `:1`/`:0`, nil `$-1`, bulk errors `-` errors,
/// verbatim strings a bulk of their text, and attributes are dropped (only the data
/// is written).
pub fn encode_value_resp2(buf: &mut Vec<u8>, v: &Value) {
    match v {
        Value::SimpleString(_) | Value::Error(_) | Value::Int(_) | Value::BulkString(_) => {
            encode_value(buf, v)
        }
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            encode_items(buf, b'*', items, encode_value_resp2)
        }
        Value::Nil => buf.extend_from_slice(b"$-1\r\n"),
        Value::Double(d) => {
            let mut text = Vec::with_capacity(24);
            push_double_text(&mut text, *d);
            push_bulk(buf, b'$', &text);
        }
        Value::Boolean(b) => buf.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
        Value::BigNumber(n) => push_bulk(buf, b'$', n.as_bytes()),
        Value::BulkError(s) => push_line(buf, b'-', s),
        Value::VerbatimString { text, .. } => push_bulk(buf, b'$', text),
        Value::Map(pairs) => {
            push_header(buf, b'*', pairs.len().saturating_mul(2));
            for (k, v) in pairs {
                encode_value_resp2(buf, k);
                encode_value_resp2(buf, v);
            }
        }
        Value::Attribute { data, .. } => encode_value_resp2(buf, data),
    }
}

fn encode_items(buf: &mut Vec<u8>, ty: u8, items: &[Value], each: fn(&mut Vec<u8>, &Value)) {
    push_header(buf, ty, items.len());
    for item in items {
        each(buf, item);
    }
}

fn encode_pairs(buf: &mut Vec<u8>, ty: u8, pairs: &[(Value, Value)]) {
    push_header(buf, ty, pairs.len());
    for (k, v) in pairs {
        encode_value(buf, k);
        encode_value(buf, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &Value) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_value(&mut buf, v);
        buf
    }

    fn enc2(v: &Value) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_value_resp2(&mut buf, v);
        buf
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn an_argument_reserves_exactly_what_it_writes() {
        for n in [0, 1, 9, 10, 32, 99, 100, 12_345, 1 << 20] {
            let arg = vec![b'v'; n];
            // A buffer with room for exactly that is not grown.
            let mut buf = Vec::with_capacity(bulk_len(n));
            let room = buf.capacity();
            write_arg(&mut buf, &arg);
            assert_eq!(buf.len(), bulk_len(n), "{n} bytes");
            assert_eq!(buf.capacity(), room, "{n} bytes: grown");
        }
    }

    #[test]
    fn headers_match_std_formatting_at_the_edges() {
        let edges = [
            0usize,
            1,
            9,
            10,
            11,
            42,
            99,
            100,
            101,
            999,
            1000,
            65_535,
            usize::MAX,
        ];
        for n in edges {
            let mut buf = Vec::new();
            write_command_header(&mut buf, n);
            assert_eq!(buf, format!("*{n}\r\n").into_bytes());
        }
        for n in [0usize, 9, 10, 99, 100, 1000] {
            let mut buf = Vec::new();
            write_arg(&mut buf, &vec![b'v'; n]);
            assert_eq!(&buf[..buf.len() - n - 2], format!("${n}\r\n").as_bytes());
        }
    }

    #[test]
    fn command_header_and_args() {
        let mut buf = Vec::new();
        write_command_header(&mut buf, 3);
        write_arg(&mut buf, b"SET");
        write_arg(&mut buf, b"");
        write_int_arg(&mut buf, -42);
        assert_eq!(buf, b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$3\r\n-42\r\n");
        buf.clear();
        write_command_header(&mut buf, 12345);
        assert_eq!(buf, b"*12345\r\n");
    }

    #[test]
    fn int_args_match_std_formatting_at_the_edges() {
        let edge = [0, 1, 9, 10, 99, 100, 101, 999, 1000, -1, -10, -100];
        let extremes = [i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1];
        let powers = (0..19).flat_map(|p| {
            let x = 10i64.pow(p);
            [x - 1, x, x + 1, -x]
        });
        for n in edge.into_iter().chain(extremes).chain(powers) {
            let mut buf = Vec::new();
            write_int_arg(&mut buf, n);
            let text = n.to_string();
            assert_eq!(buf, format!("${}\r\n{text}\r\n", text.len()).into_bytes());
            assert_eq!(enc(&Value::Int(n)), format!(":{text}\r\n").into_bytes());
        }
        let mut s = Scratch::new();
        s.prepend_u64(u64::MAX);
        assert_eq!(s.as_slice(), u64::MAX.to_string().as_bytes());
        for n in [9, 10, 99, 100, 12345, usize::MAX] {
            let mut buf = Vec::new();
            write_command_header(&mut buf, n);
            assert_eq!(buf, format!("*{n}\r\n").into_bytes());
        }
    }

    #[test]
    fn every_resp3_type_has_its_wire_form() {
        let cases: Vec<(Value, &[u8])> = vec![
            (Value::SimpleString("OK".into()), b"+OK\r\n"),
            (Value::Error("ERR bad".into()), b"-ERR bad\r\n"),
            (Value::Int(-7), b":-7\r\n"),
            (bulk("foo"), b"$3\r\nfoo\r\n"),
            (bulk(""), b"$0\r\n\r\n"),
            (Value::Array(vec![]), b"*0\r\n"),
            (Value::Nil, b"_\r\n"),
            (Value::Double(1.5), b",1.5\r\n"),
            (Value::Double(f64::INFINITY), b",inf\r\n"),
            (Value::Double(f64::NEG_INFINITY), b",-inf\r\n"),
            (Value::Double(f64::NAN), b",nan\r\n"),
            (Value::Double(1e300), b",1e300\r\n"),
            (Value::Double(0.1), b",0.1\r\n"),
            (Value::Boolean(true), b"#t\r\n"),
            (Value::Boolean(false), b"#f\r\n"),
            (Value::BigNumber("-123".into()), b"(-123\r\n"),
            (Value::BulkError("SYNTAX x".into()), b"!8\r\nSYNTAX x\r\n"),
            (
                Value::VerbatimString {
                    format: "txt".into(),
                    text: b"Some".to_vec(),
                },
                b"=8\r\ntxt:Some\r\n",
            ),
            (
                Value::Map(vec![(bulk("k"), Value::Int(1))]),
                b"%1\r\n$1\r\nk\r\n:1\r\n",
            ),
            (Value::Set(vec![Value::Int(1)]), b"~1\r\n:1\r\n"),
            (
                Value::Attribute {
                    data: Box::new(Value::Int(2)),
                    attributes: vec![(bulk("a"), Value::Nil)],
                },
                b"|1\r\n$1\r\na\r\n_\r\n:2\r\n",
            ),
            (Value::Push(vec![bulk("x")]), b">1\r\n$1\r\nx\r\n"),
        ];
        for (value, wire) in cases {
            assert_eq!(enc(&value), wire, "{value:?}");
        }
    }

    #[test]
    fn doubles_round_trip_through_their_text() {
        for d in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            1e-7,
            123456789.125,
            1e16,
            5e-324,
            f64::MAX,
            f64::MIN,
        ] {
            let mut text = Vec::new();
            push_double_text(&mut text, d);
            let back: f64 = std::str::from_utf8(&text).unwrap().parse().unwrap();
            assert_eq!(back.to_bits(), d.to_bits(), "{d}");
        }
    }

    #[test]
    fn line_frames_never_carry_cr_or_lf() {
        assert_eq!(enc(&Value::SimpleString("a\r\nb".into())), b"+a  b\r\n");
        assert_eq!(enc2(&Value::BulkError("x\ny".into())), b"-x y\r\n");
        let odd_format = Value::VerbatimString {
            format: "markdown".into(),
            text: vec![],
        };
        assert_eq!(enc(&odd_format), b"=4\r\ntxt:\r\n");
    }

    #[test]
    fn resp2_downgrade() {
        let cases: Vec<(Value, &[u8])> = vec![
            (Value::Nil, b"$-1\r\n"),
            (Value::Boolean(true), b":1\r\n"),
            (Value::Boolean(false), b":0\r\n"),
            (Value::Double(2.5), b"$3\r\n2.5\r\n"),
            (Value::Double(f64::NEG_INFINITY), b"$4\r\n-inf\r\n"),
            (Value::BigNumber("99".into()), b"$2\r\n99\r\n"),
            (Value::BulkError("ERR x".into()), b"-ERR x\r\n"),
            (
                Value::VerbatimString {
                    format: "txt".into(),
                    text: b"hi".to_vec(),
                },
                b"$2\r\nhi\r\n",
            ),
            (Value::Set(vec![Value::Nil]), b"*1\r\n$-1\r\n"),
            (Value::Push(vec![Value::Int(1)]), b"*1\r\n:1\r\n"),
            (
                Value::Map(vec![(bulk("k"), Value::Boolean(true))]),
                b"*2\r\n$1\r\nk\r\n:1\r\n",
            ),
            (
                Value::Attribute {
                    data: Box::new(Value::Array(vec![Value::Map(vec![])])),
                    attributes: vec![(bulk("a"), bulk("b"))],
                },
                b"*1\r\n*0\r\n",
            ),
            (Value::SimpleString("OK".into()), b"+OK\r\n"),
        ];
        for (value, wire) in cases {
            assert_eq!(enc2(&value), wire, "{value:?}");
        }
    }
}
