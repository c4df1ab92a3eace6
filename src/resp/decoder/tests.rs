//! Decoder unit tests: every type, every split, limits, `read_from` and the captures.

use super::*;
use crate::resp::{encode_value, encode_value_resp2};

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn enc(v: &Value) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_value(&mut buf, v);
    buf
}

/// Equality that also holds for NaN doubles (same wire form).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    a == b || enc(a) == enc(b)
}

fn assert_same(got: &[Value], want: &[Value], how: &str) {
    let equal = got.len() == want.len() && got.iter().zip(want).all(|(g, w)| same(g, w));
    assert!(equal, "{how}: got {got:?}, want {want:?}");
}

/// Decodes everything available; panics on a protocol error.
fn drain(d: &mut Decoder, out: &mut Vec<Value>) {
    while let Some(v) = d.decode().expect("valid frame") {
        out.push(v);
    }
}

fn decode_pieces<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> (Vec<Value>, usize) {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for piece in pieces {
        d.feed(piece);
        drain(&mut d, &mut out);
    }
    (out, d.buffered())
}

/// Whole, byte by byte, and in every two-piece split: all must give `want` and leave
/// nothing behind.
fn assert_every_split(wire: &[u8], want: &[Value]) {
    let (got, left) = decode_pieces([wire]);
    assert_same(&got, want, "whole");
    assert_eq!(left, 0, "whole leaves nothing");
    let (got, left) = decode_pieces(wire.chunks(1));
    assert_same(&got, want, "byte by byte");
    assert_eq!(left, 0, "byte by byte leaves nothing");
    for at in 0..=wire.len() {
        let (a, b) = wire.split_at(at);
        let (got, left) = decode_pieces([a, b]);
        assert_same(&got, want, &format!("split at {at}"));
        assert_eq!(left, 0);
    }
}

fn attr(pairs: Vec<(Value, Value)>, data: Value) -> Value {
    Value::Attribute {
        data: Box::new(data),
        attributes: pairs,
    }
}

/// Wire bytes and the value they decode to, covering every type and form.
fn fixtures() -> Vec<(&'static [u8], Value)> {
    vec![
        (b"+OK\r\n", Value::SimpleString("OK".into())),
        (b"+\r\n", Value::SimpleString(String::new())),
        (b"-ERR unknown\r\n", Value::Error("ERR unknown".into())),
        (
            b"-MOVED 15296 127.0.0.1:6380\r\n",
            Value::Error("MOVED 15296 127.0.0.1:6380".into()),
        ),
        (b":0\r\n", Value::Int(0)),
        (b":-42\r\n", Value::Int(-42)),
        (b":+7\r\n", Value::Int(7)),
        (b":9223372036854775807\r\n", Value::Int(i64::MAX)),
        (b":-9223372036854775808\r\n", Value::Int(i64::MIN)),
        (b"$3\r\nfoo\r\n", bulk("foo")),
        (b"$0\r\n\r\n", bulk("")),
        (b"$4\r\na\r\nb\r\n", bulk("a\r\nb")),
        (b"$-1\r\n", Value::Nil),
        (b"*-1\r\n", Value::Nil),
        (b"_\r\n", Value::Nil),
        (b"*0\r\n", Value::Array(vec![])),
        (
            b"*2\r\n$3\r\nfoo\r\n:1\r\n",
            Value::Array(vec![bulk("foo"), Value::Int(1)]),
        ),
        (
            b"*2\r\n*1\r\n*0\r\n*2\r\n$-1\r\n_\r\n",
            Value::Array(vec![
                Value::Array(vec![Value::Array(vec![])]),
                Value::Array(vec![Value::Nil, Value::Nil]),
            ]),
        ),
        (b",1.5\r\n", Value::Double(1.5)),
        (b",-0.25\r\n", Value::Double(-0.25)),
        (b",1.0000000000000001e+16\r\n", Value::Double(1e16)),
        (b",inf\r\n", Value::Double(f64::INFINITY)),
        (b",-inf\r\n", Value::Double(f64::NEG_INFINITY)),
        (b",nan\r\n", Value::Double(f64::NAN)),
        (b"#t\r\n", Value::Boolean(true)),
        (b"#f\r\n", Value::Boolean(false)),
        (
            b"(3492890328409238509324850943850943825024385\r\n",
            Value::BigNumber("3492890328409238509324850943850943825024385".into()),
        ),
        (b"(-1\r\n", Value::BigNumber("-1".into())),
        (
            b"!21\r\nSYNTAX invalid syntax\r\n",
            Value::BulkError("SYNTAX invalid syntax".into()),
        ),
        (
            b"=15\r\ntxt:Some string\r\n",
            Value::VerbatimString {
                format: "txt".into(),
                text: b"Some string".to_vec(),
            },
        ),
        (
            b"=4\r\nmkd:\r\n",
            Value::VerbatimString {
                format: "mkd".into(),
                text: vec![],
            },
        ),
        (
            b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
            Value::Map(vec![
                (Value::SimpleString("first".into()), Value::Int(1)),
                (Value::SimpleString("second".into()), Value::Int(2)),
            ]),
        ),
        (b"%0\r\n", Value::Map(vec![])),
        (
            b"~2\r\n:1\r\n#f\r\n",
            Value::Set(vec![Value::Int(1), Value::Boolean(false)]),
        ),
        (b"~0\r\n", Value::Set(vec![])),
        (
            b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n",
            attr(
                vec![(
                    Value::SimpleString("key-popularity".into()),
                    Value::Map(vec![(bulk("a"), Value::Double(0.19))]),
                )],
                Value::Array(vec![Value::Int(2039123), Value::Int(9543892)]),
            ),
        ),
        (
            b"*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n:2\r\n",
            Value::Array(vec![
                attr(
                    vec![(Value::SimpleString("ttl".into()), Value::Int(3600))],
                    Value::Int(1),
                ),
                Value::Int(2),
            ]),
        ),
        (b"|0\r\n:5\r\n", attr(vec![], Value::Int(5))),
        (
            b"|1\r\n:1\r\n:2\r\n|1\r\n:3\r\n:4\r\n+x\r\n",
            attr(
                vec![(Value::Int(1), Value::Int(2))],
                attr(
                    vec![(Value::Int(3), Value::Int(4))],
                    Value::SimpleString("x".into()),
                ),
            ),
        ),
        (
            b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
            Value::Push(vec![bulk("message"), bulk("ch"), bulk("hello")]),
        ),
        (b">0\r\n", Value::Push(vec![])),
        (
            b"$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n",
            bulk("Hello word"),
        ),
        (b"$?\r\n;0\r\n", bulk("")),
        (
            b"*?\r\n:1\r\n$?\r\n;2\r\nab\r\n;0\r\n.\r\n",
            Value::Array(vec![Value::Int(1), bulk("ab")]),
        ),
        (b"*?\r\n.\r\n", Value::Array(vec![])),
        (
            b"~?\r\n:1\r\n*?\r\n.\r\n.\r\n",
            Value::Set(vec![Value::Int(1), Value::Array(vec![])]),
        ),
        (
            b"%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n",
            Value::Map(vec![
                (Value::SimpleString("a".into()), Value::Int(1)),
                (Value::SimpleString("b".into()), Value::Int(2)),
            ]),
        ),
        (
            b"|?\r\n:1\r\n:2\r\n.\r\n:3\r\n",
            attr(vec![(Value::Int(1), Value::Int(2))], Value::Int(3)),
        ),
        // RESP3 PING on a subscribed connection: an array, not a pub/sub push.
        (
            b"*2\r\n$4\r\npong\r\n$0\r\n\r\n",
            Value::Array(vec![bulk("pong"), bulk("")]),
        ),
    ]
}

#[test]
fn every_fixture_decodes_the_same_at_every_split() {
    for (wire, want) in fixtures() {
        assert_every_split(wire, std::slice::from_ref(&want));
    }
}

#[test]
fn all_fixtures_as_one_stream_byte_by_byte() {
    let (wires, want): (Vec<_>, Vec<_>) = fixtures().into_iter().unzip();
    let stream = wires.concat();
    let (got, left) = decode_pieces(stream.chunks(1));
    assert_same(&got, &want, "stream");
    assert_eq!(left, 0);
    let (got, _) = decode_pieces(stream.chunks(7));
    assert_same(&got, &want, "stream in 7-byte pieces");
}

#[test]
fn every_type_round_trips_through_encode_value() {
    let mut everything = Vec::new();
    for (_, value) in fixtures() {
        let wire = enc(&value);
        let (got, left) = decode_pieces([wire.as_slice()]);
        assert_same(&got, std::slice::from_ref(&value), "round trip");
        assert_eq!(left, 0);
        everything.push(value);
    }
    let nested = Value::Push(vec![
        Value::Map(vec![(
            Value::Set(everything.clone()),
            Value::Array(everything.clone()),
        )]),
        attr(
            vec![(Value::Nil, Value::Boolean(true))],
            Value::Array(everything),
        ),
    ]);
    assert_every_split(&enc(&nested), &[nested]);
}

#[test]
fn resp2_downgrade_decodes_to_resp2_shapes() {
    let value = Value::Array(vec![
        Value::Map(vec![(bulk("k"), Value::Double(2.5))]),
        Value::Set(vec![Value::Boolean(true), Value::Boolean(false)]),
        Value::Nil,
        Value::BigNumber("12345678901234567890".into()),
        Value::BulkError("ERR bad".into()),
        Value::VerbatimString {
            format: "txt".into(),
            text: b"info".to_vec(),
        },
        attr(vec![(bulk("a"), bulk("b"))], Value::Int(3)),
        Value::Push(vec![bulk("message")]),
        Value::Double(f64::INFINITY),
    ]);
    let want = Value::Array(vec![
        Value::Array(vec![bulk("k"), bulk("2.5")]),
        Value::Array(vec![Value::Int(1), Value::Int(0)]),
        Value::Nil,
        bulk("12345678901234567890"),
        Value::Error("ERR bad".into()),
        bulk("info"),
        Value::Int(3),
        Value::Array(vec![bulk("message")]),
        bulk("inf"),
    ]);
    let mut wire = Vec::new();
    encode_value_resp2(&mut wire, &value);
    assert!(
        !wire.iter().any(|b| b",#_(!=%~|>".contains(b)),
        "only RESP2 type bytes"
    );
    assert_every_split(&wire, &[want]);
}

/// The captures in `wire-captures.md`, byte for byte (the SMIGRATED addresses and
/// slots are stand-ins of the captured lengths: 20, 18 and 9 bytes).
#[test]
fn wire_captures_decode_to_pushes() {
    let source = "192.168.101.17:13001";
    let target = "10.0.101.244:13002";
    let slots = "8892-8991";
    assert_eq!((source.len(), target.len(), slots.len()), (20, 18, 9));
    let smigrated = format!(
        ">3\r\n$9\r\nSMIGRATED\r\n:19\r\n*1\r\n*3\r\n$20\r\n{source}\r\n$18\r\n{target}\r\n$9\r\n{slots}\r\n"
    );
    let captures: Vec<(&[u8], Vec<Value>)> = vec![
        (
            b">3\r\n$10\r\nSMIGRATING\r\n:18\r\n$9\r\n8892-8991\r\n",
            vec![bulk("SMIGRATING"), Value::Int(18), bulk("8892-8991")],
        ),
        (
            smigrated.as_bytes(),
            vec![
                bulk("SMIGRATED"),
                Value::Int(19),
                Value::Array(vec![Value::Array(vec![
                    bulk(source),
                    bulk(target),
                    bulk(slots),
                ])]),
            ],
        ),
        (
            b">4\r\n$6\r\nMOVING\r\n:0\r\n:15\r\n_\r\n",
            vec![bulk("MOVING"), Value::Int(0), Value::Int(15), Value::Nil],
        ),
        (
            b">4\r\n$9\r\nMIGRATING\r\n:0\r\n:2\r\n$6\r\n[\"27\"]\r\n",
            vec![
                bulk("MIGRATING"),
                Value::Int(0),
                Value::Int(2),
                bulk("[\"27\"]"),
            ],
        ),
        (
            b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n",
            vec![bulk("MIGRATED"), Value::Int(1), bulk("[\"27\"]")],
        ),
        (
            b">4\r\n$12\r\nFAILING_OVER\r\n:0\r\n:2\r\n$6\r\n[\"21\"]\r\n",
            vec![
                bulk("FAILING_OVER"),
                Value::Int(0),
                Value::Int(2),
                bulk("[\"21\"]"),
            ],
        ),
        (
            b">3\r\n$11\r\nFAILED_OVER\r\n:1\r\n$6\r\n[\"21\"]\r\n",
            vec![bulk("FAILED_OVER"), Value::Int(1), bulk("[\"21\"]")],
        ),
    ];
    for (wire, items) in captures {
        assert_every_split(wire, &[Value::Push(items)]);
    }
}

/// Deterministic xorshift, so failures reproduce.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// A socket stand-in that hands out its bytes in random-size pieces.
pub(super) struct ChunkedReader {
    pub(super) data: Vec<u8>,
    pub(super) pos: usize,
    pub(super) rng: Rng,
    pub(super) max_chunk: usize,
}

impl Read for ChunkedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = 1 + self.rng.below(self.max_chunk);
        let n = want.min(buf.len()).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

pub(super) fn read_all(d: &mut Decoder, r: &mut ChunkedReader) -> Vec<Value> {
    let mut out = Vec::new();
    while d.read_from(r).expect("in-memory read") > 0 {
        drain(d, &mut out);
    }
    out
}

#[test]
fn read_from_in_random_chunks() {
    let (wires, want): (Vec<_>, Vec<_>) = fixtures().into_iter().unzip();
    let stream = wires.concat().repeat(50);
    let want: Vec<Value> = (0..50).flat_map(|_| want.iter().cloned()).collect();
    for (seed, max_chunk) in [(1, 1), (2, 3), (3, 17), (4, 4096), (5, 100_000)] {
        let mut d = Decoder::new();
        let mut r = ChunkedReader {
            data: stream.clone(),
            pos: 0,
            rng: Rng(seed),
            max_chunk,
        };
        assert_same(&read_all(&mut d, &mut r), &want, "read_from");
        assert_eq!(d.buffered(), 0);
        assert!(d.buf.len() <= READ_BUF, "buffer stays at its working size");
    }
}

#[test]
fn a_16_mib_bulk_is_read_straight_into_its_vec() {
    const N: usize = 16 * 1024 * 1024;
    let payload: Vec<u8> = (0..N).map(|i| (i % 251) as u8).collect();
    let mut wire = format!("+before\r\n${N}\r\n").into_bytes();
    wire.extend_from_slice(&payload);
    wire.extend_from_slice(b"\r\n+OK\r\n");
    let mut d = Decoder::new();
    let mut r = ChunkedReader {
        data: wire,
        pos: 0,
        rng: Rng(99),
        max_chunk: 256 * 1024,
    };
    let got = read_all(&mut d, &mut r);
    assert_eq!(got.len(), 3);
    let Value::BulkString(data) = &got[1] else {
        panic!("not a bulk: {:?}", got[1])
    };
    assert!(*data == payload, "payload intact");
    // Capacity exactly N: allocated once at the header, never grown or reallocated.
    assert_eq!(data.capacity(), N);
    // Only what arrived with the header (one read buffer at most) and the last few KiB
    // went through the read buffer; the rest was read straight into the Vec.
    assert_eq!(d.stats.direct + d.stats.from_buffer, N);
    assert!(
        d.stats.from_buffer <= READ_BUF + DIRECT_READ_MIN,
        "{:?}",
        d.stats
    );
    assert_eq!(got[2], Value::SimpleString("OK".into()));
    assert_eq!(d.buffered(), 0);
}

#[test]
fn a_large_bulk_fed_in_pieces_also_lands_in_one_allocation() {
    let n = LARGE_BULK * 3 + 5;
    let mut wire = format!("${n}\r\n").into_bytes();
    wire.extend(std::iter::repeat_n(b'x', n));
    wire.extend_from_slice(b"\r\n");
    let (got, left) = decode_pieces(wire.chunks(1000));
    assert_eq!(left, 0);
    let [Value::BulkString(data)] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert_eq!((data.len(), data.capacity()), (n, n));
}

#[test]
fn large_verbatim_and_bulk_error_keep_their_payload_whole() {
    let n = LARGE_BULK * 2;
    let text = vec![b'y'; n];
    let values = [
        Value::VerbatimString {
            format: "txt".into(),
            text: text.clone(),
        },
        Value::BulkError("E".repeat(n)),
        Value::BulkString(text),
    ];
    let wire: Vec<u8> = values.iter().flat_map(enc).collect();
    let mut d = Decoder::new();
    let mut r = ChunkedReader {
        data: wire,
        pos: 0,
        rng: Rng(7),
        max_chunk: 50_000,
    };
    assert_same(&read_all(&mut d, &mut r), &values, "large payloads");
}

#[test]
fn the_decoder_can_move_to_the_reader_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Decoder>();
}

#[test]
fn buffered_counts_a_partial_frame() {
    let mut d = Decoder::new();
    assert_eq!(d.buffered(), 0);
    d.feed(b"*2\r\n:1\r\n:");
    assert_eq!(d.decode().unwrap(), None);
    assert_eq!(d.buffered(), 9);
    d.feed(b"2\r\n+x");
    assert!(d.decode().unwrap().is_some());
    assert_eq!(d.buffered(), 2);
}

#[test]
fn buffer_compacts_across_many_frames() {
    let mut d = Decoder::new();
    let frame = b"*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n:12345\r\n";
    let mut out = Vec::new();
    for _ in 0..50_000 {
        d.feed(&frame[..20]);
        drain(&mut d, &mut out);
        d.feed(&frame[20..]);
        drain(&mut d, &mut out);
    }
    assert_eq!(out.len(), 50_000);
    assert!(d.buf.len() <= READ_BUF, "buffer grew to {}", d.buf.len());
}

#[test]
fn long_inputs_in_tiny_pieces_decode_in_linear_time() {
    // A quadratic decoder (re-parsing from the frame start) takes minutes here.
    let n = 200_000;
    let mut wire = format!("*{n}\r\n").into_bytes();
    for i in 0..n {
        wire.extend_from_slice(format!(":{i}\r\n").as_bytes());
    }
    let line = "x".repeat(60_000);
    wire.extend_from_slice(format!("+{line}\r\n").as_bytes());
    let (got, left) = decode_pieces(wire.chunks(3));
    assert_eq!(left, 0);
    assert!(matches!(&got[0], Value::Array(items) if items.len() == n));
    assert_eq!(got[1], Value::SimpleString(line));
}
