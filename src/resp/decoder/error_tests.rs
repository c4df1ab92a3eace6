//! Decoder tests for what it must refuse: malformed frames and inputs past the limits.

use super::*;
use crate::error::{Error, ErrorKind};
use crate::resp::partial::{Partial, PREALLOC_CAP};

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn first_error(wire: &[u8], limits: Limits) -> Error {
    let mut d = Decoder::with_limits(limits);
    d.feed(wire);
    loop {
        match d.decode() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no error for {:?}", String::from_utf8_lossy(wire)),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Protocol);
                // Poisoned from now on, and still no panic.
                assert!(d.decode().is_err());
                d.feed(b"+OK\r\n");
                assert!(d.decode().is_err());
                return e;
            }
        }
    }
}

#[test]
fn malformed_frames_are_classified_protocol_errors() {
    let cases: &[(&[u8], &str)] = &[
        (b"?what\r\n", "unknown RESP type byte 0x3f"),
        (b"\r\n", "empty header line"),
        (b"$abc\r\n", "bulk length is not a number"),
        (b"$\r\n", "bulk length is not a number"),
        (b"$-2\r\n", "negative bulk length"),
        (b"*-5\r\n", "negative aggregate length"),
        (b"$99999999999999999999\r\n", "not a number"),
        (b"+OK\n", "LF without CR"),
        (b"\n", "LF without CR"),
        (b":12a\r\n", "integer is not a number"),
        (b":\r\n", "integer is not a number"),
        (b",1.5x\r\n", "double is not a number"),
        (b"#x\r\n", "boolean"),
        (b"(12a\r\n", "big number"),
        (b"_x\r\n", "null frame with content"),
        (b"$3\r\nfooXY", "not followed by CRLF"),
        (b"=3\r\ntxt\r\n", "shorter than its prefix"),
        (b"=5\r\ntxt-x\r\n", "format prefix"),
        (b"!-1\r\n", "null length"),
        (b"%-1\r\n", "null length"),
        (b"!?\r\n", "streamed form"),
        (b";4\r\n", "chunk outside a streamed string"),
        (b"$?\r\n:1\r\n", "interrupted"),
        (b"$?\r\n;?\r\n", "chunk length"),
        (b"$?\r\n;-1\r\n", "chunk length"),
        (b".\r\n", "outside a streamed aggregate"),
        (b"*1\r\n.\r\n", "outside a streamed aggregate"),
        (b"%?\r\n:1\r\n.\r\n", "between a key and its value"),
        (b".x\r\n", "end marker with content"),
    ];
    for (wire, needle) in cases {
        let e = first_error(wire, Limits::default());
        assert!(
            e.detail().contains(needle),
            "{:?}: {e}",
            String::from_utf8_lossy(wire)
        );
    }
}

#[test]
fn errors_never_quote_the_payload() {
    let e = first_error(b"$6\r\nsecretXX", Limits::default());
    assert!(!e.to_string().contains("secret"), "{e}");
    let e = first_error(b"*1\r\n:hunter2\r\n", Limits::default());
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[test]
fn a_declared_length_of_2_pow_40_is_an_error_not_an_allocation() {
    for wire in [
        &b"$1099511627776\r\n"[..],
        b"!1099511627776\r\n",
        b"=1099511627776\r\n",
    ] {
        let e = first_error(wire, Limits::default());
        assert!(e.detail().contains("exceeds the limit"), "{e}");
    }
    let e = first_error(b"*1099511627776\r\n", Limits::default());
    assert!(e.detail().contains("exceeds the limit"), "{e}");
    let e = first_error(b"$?\r\n;1099511627776\r\n", Limits::default());
    assert!(e.detail().contains("exceeds the limit"), "{e}");
}

#[test]
fn limits_are_enforced() {
    let small = Limits {
        max_bulk_len: 10,
        max_aggregate_len: 3,
        max_depth: 2,
    };
    first_error(b"$11\r\n", small);
    first_error(b"*4\r\n", small);
    first_error(b"%4\r\n", small);
    first_error(b"*?\r\n:1\r\n:2\r\n:3\r\n:4\r\n", small);
    first_error(b"$?\r\n;6\r\naaaaaa\r\n;5\r\n", small);
    first_error(b"*1\r\n*1\r\n*0\r\n", small);
    first_error(b"|1\r\n:1\r\n:1\r\n|1\r\n:1\r\n:1\r\n|0\r\n", small);
    // Exactly at the limits is fine.
    let mut d = Decoder::with_limits(small);
    d.feed(b"$10\r\n0123456789\r\n*3\r\n*0\r\n:1\r\n:2\r\n");
    assert_eq!(d.decode().unwrap(), Some(bulk("0123456789")));
    assert!(d.decode().unwrap().is_some());
}

#[test]
fn depth_128_is_accepted_and_129_refused() {
    let nested = |depth: usize| {
        let mut wire = b"*1\r\n".repeat(depth - 1);
        wire.extend_from_slice(b"*0\r\n");
        wire
    };
    let mut d = Decoder::new();
    d.feed(&nested(128));
    assert!(d.decode().unwrap().is_some());
    let e = first_error(&nested(129), Limits::default());
    assert!(
        e.detail().contains("nesting deeper than the limit of 128"),
        "{e}"
    );
}

#[test]
fn long_lines_without_crlf_are_refused() {
    let mut d = Decoder::new();
    let mut wire = b"+".to_vec();
    wire.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
    for piece in wire.chunks(4096) {
        d.feed(piece);
        if let Err(e) = d.decode() {
            assert!(e.detail().contains("without CRLF"), "{e}");
            return;
        }
    }
    panic!("a line longer than {MAX_LINE} bytes was accepted");
}

#[test]
fn declared_counts_do_not_preallocate() {
    let mut d = Decoder::new();
    d.feed(b"*200000000\r\n:1\r\n");
    assert_eq!(d.decode().unwrap(), None);
    let Some(Partial::Seq { items, .. }) = d.stack.first() else {
        panic!("no partial")
    };
    assert!(items.capacity() <= PREALLOC_CAP);
    // A large declared bulk reserves address space, but commits nothing until bytes arrive.
    let mut d = Decoder::new();
    d.feed(b"$500000000\r\n");
    assert_eq!(d.decode().unwrap(), None);
    let reserved = d
        .bulk
        .as_ref()
        .and_then(|b| b.payload.as_ref())
        .map(|p| p.data.len());
    assert_eq!(reserved, Some(0), "capacity reserved, nothing committed");
}
