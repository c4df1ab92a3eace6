//! Property tests: no input panics or allocates past the limits, and every value
//! round-trips whatever the split.

use super::tests::{same, ChunkedReader, Rng};
use super::*;
use crate::error::{Error, ErrorKind};
use crate::resp::{encode_value, encode_value_resp2};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[^\r\n]{0,16}".prop_map(Value::SimpleString),
        "[^\r\n]{0,16}".prop_map(Value::Error),
        any::<i64>().prop_map(Value::Int),
        vec(any::<u8>(), 0..40).prop_map(Value::BulkString),
        Just(Value::Nil),
        any::<f64>()
            .prop_filter("NaN never equals itself", |d| !d.is_nan())
            .prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        "-?[0-9]{1,40}".prop_map(Value::BigNumber),
        "(?s).{0,16}".prop_map(Value::BulkError),
        ("[a-z]{3}", vec(any::<u8>(), 0..40))
            .prop_map(|(format, text)| Value::VerbatimString { format, text }),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec(inner.clone(), 0..6).prop_map(Value::Set),
            vec(inner.clone(), 0..6).prop_map(Value::Push),
            vec((inner.clone(), inner.clone()), 0..4).prop_map(Value::Map),
            (vec((inner.clone(), inner.clone()), 0..3), inner).prop_map(|(attributes, data)| {
                Value::Attribute {
                    data: Box::new(data),
                    attributes,
                }
            }),
        ]
    })
}

/// Fragments that make random input reach deep decoder states, not just the
/// type-byte check.
fn resp_ish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(&b"\r\n"[..]),
        Just(&b"*"[..]),
        Just(&b"$"[..]),
        Just(&b"%"[..]),
        Just(&b"~"[..]),
        Just(&b">"[..]),
        Just(&b"|"[..]),
        Just(&b"="[..]),
        Just(&b"!"[..]),
        Just(&b";"[..]),
        Just(&b"."[..]),
        Just(&b"?"[..]),
        Just(&b"_"[..]),
        Just(&b"-1"[..]),
        Just(&b"0"[..]),
        Just(&b"1"[..]),
        Just(&b"2"[..]),
        Just(&b"4"[..]),
        Just(&b"70000"[..]),
        Just(&b"999999999999"[..]),
        Just(&b"txt:"[..]),
        Just(&b":5"[..]),
        Just(&b"+x"[..]),
        Just(&b"\n"[..]),
    ];
    prop_oneof![
        vec(any::<u8>(), 0..256),
        vec(token, 0..80).prop_map(|tokens| tokens.concat()),
    ]
}

/// Splits `wire` at the given points (in any order, repeats allowed).
fn pieces<'a>(wire: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(wire.len() + 1)).collect();
    at.push(0);
    at.push(wire.len());
    at.sort_unstable();
    at.windows(2).filter_map(|w| wire.get(w[0]..w[1])).collect()
}

/// Feeds the pieces, decoding after each, and checks the allocation bounds as it goes.
/// Stops at the first error (the decoder is then poisoned).
fn feed_checked(d: &mut Decoder, parts: &[&[u8]]) -> std::result::Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for part in parts {
        d.feed(part);
        loop {
            let decoded = d.decode();
            assert!(d.stack.len() <= d.limits.max_depth);
            if let Some(p) = d.bulk.as_ref().and_then(|b| b.payload.as_ref()) {
                assert!(p.data.capacity() <= d.limits.max_bulk_len);
            }
            match decoded {
                Ok(Some(v)) => out.push(v),
                Ok(None) => break,
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Protocol);
                    assert!(d.decode().is_err(), "stays poisoned");
                    return Err(e);
                }
            }
        }
    }
    Ok(out)
}

fn encode_all(values: &[Value]) -> Vec<u8> {
    let mut wire = Vec::new();
    for v in values {
        encode_value(&mut wire, v);
    }
    wire
}

fn all_same(got: &[Value], want: &[Value]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| same(g, w))
}

/// Whether `got` is what a RESP2 server sends for `orig`.
fn resp2_matches(got: &Value, orig: &Value) -> bool {
    let all = |g: &[Value], o: &mut dyn Iterator<Item = &Value>| {
        let o: Vec<&Value> = o.collect();
        g.len() == o.len() && g.iter().zip(o).all(|(g, o)| resp2_matches(g, o))
    };
    match (orig, got) {
        (Value::Attribute { data, .. }, g) => resp2_matches(g, data),
        (Value::Array(o) | Value::Set(o) | Value::Push(o), Value::Array(g)) => {
            all(g, &mut o.iter())
        }
        (Value::Map(o), Value::Array(g)) => all(g, &mut o.iter().flat_map(|(k, v)| [k, v])),
        (Value::Double(d), Value::BulkString(b)) => {
            std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                == Some(*d)
        }
        (Value::Boolean(b), Value::Int(i)) => *i == i64::from(*b),
        (Value::BigNumber(n), Value::BulkString(b)) => n.as_bytes() == b.as_slice(),
        (Value::BulkError(e), Value::Error(g)) => e.replace(['\r', '\n'], " ") == *g,
        (Value::VerbatimString { text, .. }, Value::BulkString(b)) => text == b,
        (o, g) => o == g,
    }
}

/// Everything `read_from` in random chunks makes of `wire`: the frames, and whether it
/// ended in a protocol error.
fn read_checked(limits: Limits, wire: &[u8], seed: u64, max_chunk: usize) -> (Vec<Value>, bool) {
    let mut d = Decoder::with_limits(limits);
    let mut r = ChunkedReader {
        data: wire.to_vec(),
        pos: 0,
        rng: Rng(seed),
        max_chunk,
    };
    let mut got = Vec::new();
    loop {
        loop {
            match d.decode() {
                Ok(Some(v)) => got.push(v),
                Ok(None) => break,
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Protocol);
                    return (got, true);
                }
            }
        }
        if d.read_from(&mut r).expect("in-memory read") == 0 {
            return (got, false);
        }
    }
}

/// The frames decoded before the end or the first error, and whether there was one.
fn outcome(d: &mut Decoder, parts: &[&[u8]]) -> (Vec<Value>, bool) {
    let mut got = Vec::new();
    for part in parts {
        d.feed(part);
        loop {
            match d.decode() {
                Ok(Some(v)) => got.push(v),
                Ok(None) => break,
                Err(_) => return (got, true),
            }
        }
    }
    (got, false)
}

proptest! {
    /// Not only valid encodings: whatever the bytes, the split into reads changes
    /// neither the frames that come out nor whether (and after which frame) it fails.
    #[test]
    fn arbitrary_bytes_decode_the_same_whatever_the_split(
        bytes in resp_ish_bytes(),
        cuts in vec(any::<Index>(), 0..6),
        seed in 1u64..,
        max_chunk in 1usize..32,
        small in any::<bool>(),
    ) {
        let limits = if small {
            Limits { max_bulk_len: 64, max_aggregate_len: 8, max_depth: 4 }
        } else {
            Limits::default()
        };
        let (whole, whole_failed) = outcome(&mut Decoder::with_limits(limits), &[&bytes]);
        let (split, split_failed) = outcome(&mut Decoder::with_limits(limits), &pieces(&bytes, &cuts));
        prop_assert!(all_same(&split, &whole) && split_failed == whole_failed,
            "split: {:?} {}, whole: {:?} {}", split, split_failed, whole, whole_failed);
        let (read, read_failed) = read_checked(limits, &bytes, seed, max_chunk);
        prop_assert!(all_same(&read, &whole) && read_failed == whole_failed,
            "read_from: {:?} {}, whole: {:?} {}", read, read_failed, whole, whole_failed);
    }

    /// Whatever a peer sends, what the decoder makes of it the encoder writes back as
    /// a frame that decodes to the same thing (the testkit relies on this pairing).
    #[test]
    fn decoded_frames_re_encode_stably(bytes in resp_ish_bytes()) {
        let (frames, _) = outcome(&mut Decoder::new(), &[&bytes]);
        for v in &frames {
            let wire = encode_all(std::slice::from_ref(v));
            let mut d = Decoder::new();
            let again = feed_checked(&mut d, &[&wire]).expect("a re-encoded frame decodes");
            prop_assert_eq!(again.len(), 1);
            prop_assert_eq!(encode_all(&again), wire);
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in resp_ish_bytes(), cuts in vec(any::<Index>(), 0..4)) {
        let mut d = Decoder::new();
        let _ = feed_checked(&mut d, &[&bytes]);
        let small = Limits { max_bulk_len: 100_000, max_aggregate_len: 8, max_depth: 4 };
        let mut d = Decoder::with_limits(small);
        let _ = feed_checked(&mut d, &pieces(&bytes, &cuts));
        let mut d = Decoder::with_limits(small);
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        let _ = feed_checked(&mut d, &bytewise);
    }

    #[test]
    fn values_round_trip(values in vec(value(), 1..4)) {
        let wire = encode_all(&values);
        let mut d = Decoder::new();
        let got = feed_checked(&mut d, &[&wire]).expect("valid encoding");
        prop_assert!(all_same(&got, &values), "got {:?}\nwant {:?}", got, values);
        prop_assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn any_split_decodes_the_same(values in vec(value(), 1..4), cuts in vec(any::<Index>(), 0..6)) {
        let wire = encode_all(&values);
        let mut d = Decoder::new();
        let got = feed_checked(&mut d, &pieces(&wire, &cuts)).expect("valid encoding");
        prop_assert!(all_same(&got, &values), "got {:?}\nwant {:?}", got, values);
        prop_assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn read_from_in_any_chunking_decodes_the_same(
        values in vec(value(), 1..4),
        seed in 1u64..,
        max_chunk in 1usize..64,
    ) {
        let wire = encode_all(&values);
        let mut d = Decoder::new();
        let mut r = ChunkedReader { data: wire, pos: 0, rng: Rng(seed), max_chunk };
        let mut got = Vec::new();
        while d.read_from(&mut r).expect("in-memory read") > 0 {
            while let Some(v) = d.decode().expect("valid encoding") {
                got.push(v);
            }
        }
        prop_assert!(all_same(&got, &values), "got {:?}\nwant {:?}", got, values);
    }

    #[test]
    fn resp2_downgrade_decodes_to_the_resp2_shape(v in value()) {
        let mut wire = Vec::new();
        encode_value_resp2(&mut wire, &v);
        let mut d = Decoder::new();
        let got = feed_checked(&mut d, &[&wire]).expect("valid encoding");
        prop_assert_eq!(got.len(), 1);
        prop_assert!(resp2_matches(&got[0], &v), "got {:?}\nfrom {:?}", got[0], v);
    }
}
