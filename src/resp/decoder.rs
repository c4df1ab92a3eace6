//! Incremental RESP2/RESP3 decoder.
//!
//! Owns: turning bytes, as they arrive in any pieces, into complete [`Value`] frames.
//! Must never: panic on any input, re-parse a frame from its start when more bytes
//! arrive, allocate beyond [`Limits`] (a declared length is a claim, not a budget), or
//! copy a large bulk payload more than once after the socket read.
//!
//! State between calls: the unconsumed bytes (`buf[start..end]`), how far the current
//! header line has been scanned for its LF, a stack of partially built aggregates,
//! and the bulk payload being received (if any). Each byte is looked at a bounded
//! number of times however the frame is split, so decoding is linear in its size.
//!
//! Large bulk strings (`$N` with N ≥ [`LARGE_BULK`] not all buffered yet) get their
//! own `Vec` of capacity exactly N, and [`Decoder::read_from`] reads the socket
//! straight into it. `#![forbid(unsafe_code)]` rules out reading into uninitialised
//! spare capacity, so the Vec is zero-filled ahead of the read in steps of 256 KiB: a
//! memset per step, but no second copy of the payload, no reallocation, and memory
//! committed only as the payload actually arrives (a peer that declares 512 MiB and
//! sends nothing costs address space, not RAM). What arrived in the read buffer with
//! the header is moved into the Vec once; the payload is never copied again.

use super::header::{parse_double, parse_i64, parse_len, protocol, text, text_from_vec, Len};
use super::partial::{BulkKind, Finished, PairKind, Partial, Payload, PendingBulk, SeqKind};
use super::Value;
use crate::error::Result;
use std::io::{self, Read};

/// Limits that keep a hostile or broken peer from making us allocate without bound.
///
/// Not `#[non_exhaustive]`, on purpose: the way to set one limit is struct update
/// syntax (`Limits { max_depth: 16, ..Limits::default() }`), which keeps compiling when
/// a limit is added and which `#[non_exhaustive]` would forbid outside this crate.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest bulk string accepted (Redis's own `proto-max-bulk-len` default: 512 MiB).
    pub max_bulk_len: usize,
    /// Largest element count accepted for one aggregate.
    pub max_aggregate_len: usize,
    /// Deepest nesting accepted.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_aggregate_len: 1 << 28,
            max_depth: 128,
        }
    }
}

/// A bulk payload at least this large, not yet all buffered, is received into its own
/// Vec (read directly from the socket) instead of through the read buffer.
const LARGE_BULK: usize = 64 * 1024;
/// Size of the read buffer when first needed.
const READ_BUF: usize = 32 * 1024;
/// `read_from` makes at least this much room before reading into the buffer.
const MIN_READ: usize = 8 * 1024;
/// An empty buffer grown past this (a huge `feed`) is released rather than kept.
const MAX_IDLE_BUF: usize = 256 * 1024;
/// Longest header line (type byte, text, CRLF excluded) accepted.
const MAX_LINE: usize = 64 * 1024;
/// Once less than this much of a large payload is missing, read it through the buffer
/// so its tail, the CRLF and the next replies come in one read call.
const DIRECT_READ_MIN: usize = 4 * 1024;

/// Outcome of one decoding step.
enum Step {
    /// More bytes are needed.
    NeedMore,
    /// State advanced (a header read, a chunk appended) without a value to place.
    Progress,
    /// A complete value, to be placed into the enclosing aggregate (or returned).
    Value(Value),
}

/// Incremental decoder: feed it bytes (or let it read the socket) and take frames out.
///
/// ```
/// use resilient_redis::resp::{Decoder, Value};
/// let mut d = Decoder::new();
/// d.feed(b"*2\r\n$3\r\nfoo\r");
/// assert_eq!(d.decode().unwrap(), None);
/// d.feed(b"\n:7\r\n");
/// let want = Value::Array(vec![Value::BulkString(b"foo".to_vec()), Value::Int(7)]);
/// assert_eq!(d.decode().unwrap(), Some(want));
/// ```
///
/// After a protocol error the decoder is poisoned: every later `decode` fails, since
/// the stream can no longer be trusted to be in step (the connection must be closed).
#[derive(Default)]
pub struct Decoder {
    limits: Limits,
    /// Storage; always initialised to its full length, `start..end` unconsumed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// How much of `buf[start..end]` is known to hold no LF (the header line so far).
    scanned: usize,
    stack: Vec<Partial>,
    bulk: Option<PendingBulk>,
    /// Bytes already consumed into the frame being decoded (for `buffered`).
    frame_bytes: usize,
    poisoned: bool,
    #[cfg(test)]
    pub(crate) stats: CopyStats,
}

/// Where large payload bytes came from, so tests can prove the single-copy claim.
#[cfg(test)]
#[derive(Default, Debug)]
pub(crate) struct CopyStats {
    /// Bytes read from the socket straight into a payload Vec.
    pub(crate) direct: usize,
    /// Bytes copied from the read buffer into a payload Vec.
    pub(crate) from_buffer: usize,
}

impl Decoder {
    /// A decoder with default limits.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// A decoder with the given limits.
    pub fn with_limits(limits: Limits) -> Decoder {
        Decoder {
            limits,
            ..Decoder::default()
        }
    }

    /// Appends bytes received by other means than [`read_from`](Self::read_from).
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if self.poisoned {
            return;
        }
        if self.start == self.end {
            if let Some(PendingBulk {
                len,
                payload: Some(p),
                ..
            }) = &mut self.bulk
            {
                let (now, later) = bytes.split_at(len.saturating_sub(p.filled).min(bytes.len()));
                p.append(now);
                self.frame_bytes = self.frame_bytes.saturating_add(now.len());
                bytes = later;
            }
        }
        if bytes.is_empty() {
            return;
        }
        self.reserve(bytes.len());
        if let Some(dst) = self.buf.get_mut(self.end..self.end + bytes.len()) {
            dst.copy_from_slice(bytes);
            self.end += bytes.len();
        }
    }

    /// The next complete frame; `Ok(None)` when more bytes are needed.
    ///
    /// Errors are always [`ErrorKind::Protocol`](crate::ErrorKind::Protocol) and
    /// poison the decoder.
    pub fn decode(&mut self) -> Result<Option<Value>> {
        if self.poisoned {
            return Err(protocol("decoder unusable after an earlier protocol error"));
        }
        let decoded = self.decode_frame();
        if decoded.is_err() {
            self.poison();
        }
        decoded
    }

    /// Makes one `read` call on `r` into the decoder and returns its result (`Ok(0)`
    /// is end of stream). A large bulk payload in progress (64 KiB or more) is read
    /// straight into the Vec that becomes the value: at most the part that came with
    /// its header goes through the read buffer (one copy), the rest is not copied.
    pub fn read_from<R: Read + ?Sized>(&mut self, r: &mut R) -> io::Result<usize> {
        if self.poisoned {
            // Keep the connection drainable without keeping what it sends.
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
        }
        if self.start == self.end {
            if let Some(PendingBulk {
                len,
                payload: Some(p),
                ..
            }) = &mut self.bulk
            {
                let missing = len.saturating_sub(p.filled);
                if missing >= DIRECT_READ_MIN {
                    let n = p.read_direct(r, missing)?;
                    self.frame_bytes = self.frame_bytes.saturating_add(n);
                    #[cfg(test)]
                    {
                        self.stats.direct += n;
                    }
                    return Ok(n);
                }
            }
        }
        self.reserve(MIN_READ);
        let Some(dst) = self.buf.get_mut(self.end..) else {
            return Ok(0);
        };
        let n = r.read(dst)?.min(dst.len());
        self.end += n;
        Ok(n)
    }

    /// Bytes received and not yet returned as part of a complete frame: the unparsed
    /// buffer plus whatever of a partial frame has already been consumed. Zero exactly
    /// when the decoder sits between frames, so a non-zero value at end of stream
    /// means the peer closed mid-frame.
    pub fn buffered(&self) -> usize {
        (self.end - self.start).saturating_add(self.frame_bytes)
    }

    fn poison(&mut self) {
        self.poisoned = true;
        self.stack = Vec::new();
        self.bulk = None;
        self.buf = Vec::new();
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        self.frame_bytes = 0;
    }

    fn decode_frame(&mut self) -> Result<Option<Value>> {
        loop {
            let step = if self.bulk.is_some() {
                self.continue_bulk()?
            } else {
                match self.next_line()? {
                    Some((from, to)) => self.header(from, to)?,
                    None => Step::NeedMore,
                }
            };
            match step {
                Step::NeedMore => return Ok(None),
                Step::Progress => {}
                Step::Value(v) => {
                    if let Some(frame) = self.place(v)? {
                        self.frame_done();
                        return Ok(Some(frame));
                    }
                }
            }
        }
    }

    fn frame_done(&mut self) {
        self.frame_bytes = 0;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > MAX_IDLE_BUF {
                self.buf = Vec::new();
            }
        }
    }

    /// Puts a value into the innermost partial aggregate, completing as many levels
    /// as it finishes; the value itself when it is a whole top-level frame.
    fn place(&mut self, mut v: Value) -> Result<Option<Value>> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                return Ok(Some(v));
            };
            match top.accept(v, self.limits.max_aggregate_len)? {
                None => return Ok(None),
                Some(Finished::Value(done)) => {
                    self.stack.pop();
                    v = done;
                }
                Some(Finished::Annotate(attributes)) => {
                    *top = Partial::Annotated { attributes };
                    return Ok(None);
                }
            }
        }
    }

    /// Consumes the next CRLF-terminated line; the range of its content.
    fn next_line(&mut self) -> Result<Option<(usize, usize)>> {
        let from = self.start + self.scanned;
        let unscanned = self.buf.get(from..self.end).unwrap_or_default();
        let Some(at) = unscanned.iter().position(|&b| b == b'\n') else {
            self.scanned = self.end - self.start;
            if self.scanned > MAX_LINE + 1 {
                return Err(protocol(format!(
                    "header line longer than {MAX_LINE} bytes without CRLF"
                )));
            }
            return Ok(None);
        };
        let lf = from + at;
        if lf - self.start > MAX_LINE + 1 {
            return Err(protocol(format!(
                "header line longer than {MAX_LINE} bytes"
            )));
        }
        if lf == self.start || self.buf.get(lf - 1) != Some(&b'\r') {
            return Err(protocol("header line ends in LF without CR"));
        }
        let line = (self.start, lf - 1);
        self.frame_bytes = self.frame_bytes.saturating_add(lf + 1 - self.start);
        self.start = lf + 1;
        self.scanned = 0;
        Ok(Some(line))
    }

    /// Acts on one header line.
    fn header(&mut self, from: usize, to: usize) -> Result<Step> {
        let line = self.buf.get(from..to).unwrap_or_default();
        let Some((&ty, rest)) = line.split_first() else {
            return Err(protocol("empty header line"));
        };
        if ty != b';' && matches!(self.stack.last(), Some(Partial::Streamed { .. })) {
            return Err(protocol("streamed string interrupted by a non-chunk frame"));
        }
        let value = match ty {
            b'+' => Value::SimpleString(text(rest)),
            b'-' => Value::Error(text(rest)),
            b':' => Value::Int(parse_i64(rest).ok_or_else(|| protocol("integer is not a number"))?),
            b'_' if rest.is_empty() => Value::Nil,
            b'_' => return Err(protocol("null frame with content")),
            b',' => Value::Double(parse_double(rest)?),
            b'#' => match rest {
                b"t" => Value::Boolean(true),
                b"f" => Value::Boolean(false),
                _ => return Err(protocol("boolean is neither t nor f")),
            },
            b'(' => {
                let digits = rest
                    .strip_prefix(b"-")
                    .or(rest.strip_prefix(b"+"))
                    .unwrap_or(rest);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(protocol("big number is not a number"));
                }
                Value::BigNumber(text(rest))
            }
            b'$' | b'!' | b'=' => {
                let len = parse_len(rest, "bulk")?;
                return self.start_bulk(ty, len);
            }
            b'*' | b'~' | b'%' | b'>' | b'|' => {
                let len = parse_len(rest, "aggregate")?;
                return self.start_aggregate(ty, len);
            }
            b';' => {
                let len = parse_len(rest, "chunk")?;
                return self.chunk(len);
            }
            b'.' if rest.is_empty() => return self.end_stream(),
            b'.' => return Err(protocol("stream end marker with content")),
            other => {
                return Err(protocol(format!("unknown RESP type byte 0x{other:02x}")));
            }
        };
        Ok(Step::Value(value))
    }

    fn start_bulk(&mut self, ty: u8, len: Len) -> Result<Step> {
        let len = match (len, ty) {
            (Len::N(n), _) => n,
            (Len::Null, b'$') => return Ok(Step::Value(Value::Nil)),
            (Len::Streamed, b'$') => {
                self.push_partial(Partial::Streamed { data: Vec::new() })?;
                return Ok(Step::Progress);
            }
            (Len::Null, _) => return Err(protocol("null length on a bulk error or verbatim")),
            (Len::Streamed, _) => {
                return Err(protocol("streamed form of a bulk error or verbatim string"))
            }
        };
        self.check_bulk_len(len)?;
        let kind = match ty {
            b'$' => BulkKind::String,
            b'!' => BulkKind::Error,
            _ if len < 4 => return Err(protocol("verbatim string shorter than its prefix")),
            _ => BulkKind::Verbatim(None),
        };
        self.bulk = Some(PendingBulk {
            kind,
            len,
            payload: None,
        });
        Ok(Step::Progress)
    }

    fn check_bulk_len(&self, len: usize) -> Result<()> {
        if len > self.limits.max_bulk_len {
            return Err(protocol(format!(
                "bulk length {len} exceeds the limit of {}",
                self.limits.max_bulk_len
            )));
        }
        Ok(())
    }

    fn start_aggregate(&mut self, ty: u8, len: Len) -> Result<Step> {
        let remaining = match len {
            Len::N(n) if n > self.limits.max_aggregate_len => {
                return Err(protocol(format!(
                    "aggregate of {n} elements exceeds the limit of {}",
                    self.limits.max_aggregate_len
                )));
            }
            Len::N(n) => Some(n),
            Len::Streamed => None,
            Len::Null if ty == b'*' => return Ok(Step::Value(Value::Nil)),
            Len::Null => return Err(protocol("null length on a non-array aggregate")),
        };
        if remaining == Some(0) {
            // An empty aggregate is still a nesting level: `*0` at depth 129 is as deep.
            self.check_depth()?;
            return Ok(match ty {
                b'~' => Step::Value(Value::Set(Vec::new())),
                b'>' => Step::Value(Value::Push(Vec::new())),
                b'%' => Step::Value(Value::Map(Vec::new())),
                b'|' => {
                    self.stack.push(Partial::Annotated {
                        attributes: Vec::new(),
                    });
                    Step::Progress
                }
                _ => Step::Value(Value::Array(Vec::new())),
            });
        }
        self.push_partial(match ty {
            b'*' => Partial::seq(SeqKind::Array, remaining),
            b'~' => Partial::seq(SeqKind::Set, remaining),
            b'>' => Partial::seq(SeqKind::Push, remaining),
            b'%' => Partial::pairs(PairKind::Map, remaining),
            _ => Partial::pairs(PairKind::Attribute, remaining),
        })?;
        Ok(Step::Progress)
    }

    fn check_depth(&self) -> Result<()> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(protocol(format!(
                "nesting deeper than the limit of {}",
                self.limits.max_depth
            )));
        }
        Ok(())
    }

    fn push_partial(&mut self, partial: Partial) -> Result<()> {
        self.check_depth()?;
        self.stack.push(partial);
        Ok(())
    }

    /// `;N` inside a streamed string; `;0` ends it.
    fn chunk(&mut self, len: Len) -> Result<Step> {
        let Some(Partial::Streamed { data }) = self.stack.last_mut() else {
            return Err(protocol("chunk outside a streamed string"));
        };
        match len {
            Len::N(0) => {
                let data = std::mem::take(data);
                self.stack.pop();
                Ok(Step::Value(Value::BulkString(data)))
            }
            Len::N(n) => {
                let total = data.len().saturating_add(n);
                self.check_bulk_len(total)?;
                self.bulk = Some(PendingBulk {
                    kind: BulkKind::Chunk,
                    len: n,
                    payload: None,
                });
                Ok(Step::Progress)
            }
            _ => Err(protocol("chunk length is not a number")),
        }
    }

    fn end_stream(&mut self) -> Result<Step> {
        let Some(top) = self.stack.pop() else {
            return Err(protocol("'.' outside a streamed aggregate"));
        };
        match top.end_stream()? {
            Finished::Value(v) => Ok(Step::Value(v)),
            Finished::Annotate(attributes) => {
                self.stack.push(Partial::Annotated { attributes });
                Ok(Step::Progress)
            }
        }
    }

    /// Advances the pending bulk with whatever is buffered.
    fn continue_bulk(&mut self) -> Result<Step> {
        let Some(mut bulk) = self.bulk.take() else {
            return Ok(Step::Progress);
        };
        let step = self.advance_bulk(&mut bulk)?;
        if matches!(step, Step::NeedMore) {
            self.bulk = Some(bulk);
        }
        Ok(step)
    }

    fn advance_bulk(&mut self, bulk: &mut PendingBulk) -> Result<Step> {
        if bulk.kind == BulkKind::Verbatim(None) {
            // Read the `xxx:` prefix apart, so the text lands in its Vec with no
            // second copy to strip it off.
            let Some(&[a, b, c, sep]) = self.unconsumed().get(..4) else {
                return Ok(Step::NeedMore);
            };
            if sep != b':' {
                return Err(protocol("verbatim string without its 'xxx:' format prefix"));
            }
            bulk.kind = BulkKind::Verbatim(Some([a, b, c]));
            bulk.len = bulk.len.saturating_sub(4);
            self.consume(4);
        }
        let len = bulk.len;
        let avail = self.end - self.start;
        if bulk.payload.is_none() {
            if avail >= len.saturating_add(2) {
                let data = self.unconsumed().get(..len).unwrap_or_default().to_vec();
                self.consume(len);
                return self.end_bulk(bulk.kind, data);
            }
            if len < LARGE_BULK {
                // Small: wait in the read buffer, which grows to hold it.
                return Ok(Step::NeedMore);
            }
            // Fallible, so a declared length the allocator refuses closes the
            // connection instead of aborting the process.
            let mut data = Vec::new();
            data.try_reserve_exact(len)
                .map_err(|_| protocol(format!("cannot reserve {len} bytes for a bulk payload")))?;
            bulk.payload = Some(Payload { data, filled: 0 });
        }
        let Some(payload) = &mut bulk.payload else {
            return Ok(Step::NeedMore);
        };
        let missing = len.saturating_sub(payload.filled);
        if missing > 0 && avail > 0 {
            let take = missing.min(avail);
            payload.append(self.unconsumed().get(..take).unwrap_or_default());
            self.consume(take);
            #[cfg(test)]
            {
                self.stats.from_buffer += take;
            }
        }
        if payload.filled < len || self.end - self.start < 2 {
            return Ok(Step::NeedMore);
        }
        let mut data = std::mem::take(&mut payload.data);
        data.truncate(len);
        self.end_bulk(bulk.kind, data)
    }

    /// Checks and consumes the CRLF after a payload, and turns the payload into a value.
    fn end_bulk(&mut self, kind: BulkKind, data: Vec<u8>) -> Result<Step> {
        if self.unconsumed().get(..2) != Some(b"\r\n") {
            return Err(protocol("bulk payload not followed by CRLF"));
        }
        self.consume(2);
        let value = match kind {
            BulkKind::String => Value::BulkString(data),
            BulkKind::Error => Value::BulkError(text_from_vec(data)),
            BulkKind::Verbatim(format) => Value::VerbatimString {
                format: text(&format.unwrap_or(*b"txt")),
                text: data,
            },
            BulkKind::Chunk => {
                let Some(Partial::Streamed { data: whole }) = self.stack.last_mut() else {
                    return Err(protocol("chunk outside a streamed string"));
                };
                if whole.is_empty() {
                    *whole = data;
                } else {
                    whole.extend_from_slice(&data);
                }
                return Ok(Step::Progress);
            }
        };
        Ok(Step::Value(value))
    }

    /// The received bytes not yet consumed. Always slice through this: the storage
    /// beyond `end` holds stale bytes from earlier reads.
    fn unconsumed(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or_default()
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.frame_bytes = self.frame_bytes.saturating_add(n);
    }

    /// Makes room for `n` more bytes after `end`: reuse, then compact, then grow.
    fn reserve(&mut self, n: usize) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
        }
        if self.buf.len() - self.end >= n {
            return;
        }
        if self.start > 0 {
            // Only the unconsumed tail moves: at most one partial line or small bulk.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < n {
            let want = (self.end + n).max(self.buf.len() * 2).max(READ_BUF);
            self.buf.resize(want, 0);
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod error_tests;

#[cfg(test)]
mod props;
