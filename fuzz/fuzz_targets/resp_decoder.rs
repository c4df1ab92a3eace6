//! The RESP2/RESP3 decoder on arbitrary bytes.
//!
//! Properties checked on every input (the first byte chooses limits and how the rest
//! is split into reads; the rest is the wire):
//! - no panic, no allocation past the limits (an absurd declared length is an error);
//! - every error is `ErrorKind::Protocol` and poisons the decoder;
//! - the split does not matter: fed whole, fed in chunks, or read through `read_from`
//!   in chunks, the same frames come out and the same inputs fail;
//! - every decoded frame re-encodes to bytes that decode back to a frame with the same
//!   encoding (the encoder and decoder agree on everything the decoder produces).
#![no_main]

use std::io::Read;

use libfuzzer_sys::fuzz_target;
use resilient_redis::resp::{encode_value, Decoder, Limits, Value};
use resilient_redis::ErrorKind;

/// What a decoding run produced: the frames (as their encodings, since `Double(NaN)`
/// never equals itself) and whether it ended in a protocol error.
#[derive(Debug, PartialEq)]
struct Outcome {
    frames: Vec<Vec<u8>>,
    failed: bool,
}

fn encoded(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(&mut out, v);
    out
}

/// Decodes everything available; `true` when the decoder failed (and must stay failed).
fn drain(d: &mut Decoder, out: &mut Outcome) -> bool {
    loop {
        match d.decode() {
            Ok(Some(v)) => out.frames.push(encoded(&v)),
            Ok(None) => return false,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
                assert!(d.decode().is_err(), "a failed decoder must stay failed");
                out.failed = true;
                return true;
            }
        }
    }
}

fn fed(limits: Limits, wire: &[u8], chunk: usize) -> Outcome {
    let mut d = Decoder::with_limits(limits);
    let mut out = Outcome { frames: Vec::new(), failed: false };
    for piece in wire.chunks(chunk.max(1)) {
        d.feed(piece);
        if drain(&mut d, &mut out) {
            break;
        }
    }
    out
}

/// A socket that returns at most `chunk` bytes per read.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn read(limits: Limits, wire: &[u8], chunk: usize) -> Outcome {
    let mut d = Decoder::with_limits(limits);
    let mut out = Outcome { frames: Vec::new(), failed: false };
    let mut r = Chunked { data: wire, chunk: chunk.max(1) };
    loop {
        if drain(&mut d, &mut out) {
            return out;
        }
        match d.read_from(&mut r) {
            Ok(0) => return out,
            Ok(_) => {}
            Err(e) => panic!("in-memory read failed: {e}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, wire)) = data.split_first() else {
        return;
    };
    let limits = if ctl & 1 == 0 {
        Limits::default()
    } else {
        Limits { max_bulk_len: 1 << 16, max_aggregate_len: 16, max_depth: 6 }
    };
    let chunk = 1 + usize::from(ctl >> 1) % 16;

    let whole = fed(limits, wire, wire.len());
    assert_eq!(fed(limits, wire, chunk), whole, "chunks of {chunk}");
    assert_eq!(read(limits, wire, chunk), whole, "read_from in chunks of {chunk}");

    for frame in &whole.frames {
        let mut d = Decoder::new();
        d.feed(frame);
        let again = match d.decode() {
            Ok(Some(v)) => v,
            other => panic!("re-encoded frame {frame:?} does not decode: {other:?}"),
        };
        assert_eq!(d.buffered(), 0, "re-encoded frame {frame:?} has trailing bytes");
        assert_eq!(&encoded(&again), frame, "encoding is not stable");
    }
});
