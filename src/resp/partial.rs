//! Frames under construction: aggregates whose elements are still arriving, and the
//! bulk payload being received.
//!
//! Owns: what the decoder keeps between calls for a frame it has not finished.
//! Must never: reserve from a declared count more than [`PREALLOC_CAP`] elements.

use super::header::protocol;
use super::Value;
use crate::error::Result;
use std::io::{self, Read};

/// Zero-fill granularity for a large payload; see the decoder's module comment.
const ZERO_FILL_STEP: usize = 256 * 1024;
/// Cap on capacity reserved from a declared aggregate count before elements arrive.
pub(super) const PREALLOC_CAP: usize = 1024;

/// A bulk payload being received, in the Vec that becomes the value.
pub(super) struct Payload {
    /// Capacity is the declared length; `len()` runs ahead of `filled` by the part
    /// zero-filled for the next direct read.
    pub(super) data: Vec<u8>,
    pub(super) filled: usize,
}

impl Payload {
    /// Appends received bytes; the caller never passes more than the declared length.
    pub(super) fn append(&mut self, bytes: &[u8]) {
        let zeroed = self.data.len().saturating_sub(self.filled);
        let (over_zeroes, rest) = bytes.split_at(zeroed.min(bytes.len()));
        if let Some(dst) = self
            .data
            .get_mut(self.filled..self.filled + over_zeroes.len())
        {
            dst.copy_from_slice(over_zeroes);
        }
        self.data.extend_from_slice(rest);
        self.filled += bytes.len();
    }

    /// One read from the socket straight into the payload.
    pub(super) fn read_direct<R: Read + ?Sized>(
        &mut self,
        r: &mut R,
        missing: usize,
    ) -> io::Result<usize> {
        if self.data.len() == self.filled {
            self.data
                .resize(self.filled + missing.min(ZERO_FILL_STEP), 0);
        }
        let Some(dst) = self.data.get_mut(self.filled..) else {
            return Ok(0);
        };
        // Clamped: a misbehaving Read claiming more than it was given must not panic us.
        let n = r.read(dst)?.min(dst.len());
        self.filled += n;
        Ok(n)
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum BulkKind {
    /// `$`
    String,
    /// `!`
    Error,
    /// `=`; the format once its `xxx:` prefix has been read.
    Verbatim(Option<[u8; 3]>),
    /// `;` inside a streamed string.
    Chunk,
}

/// A bulk frame whose header has been read.
pub(super) struct PendingBulk {
    pub(super) kind: BulkKind,
    /// Payload length still to deliver (excluding the verbatim prefix once read).
    pub(super) len: usize,
    /// Set once the payload is received into its own Vec (large bulks only).
    pub(super) payload: Option<Payload>,
}

#[derive(Clone, Copy)]
pub(super) enum SeqKind {
    Array,
    Set,
    Push,
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum PairKind {
    Map,
    Attribute,
}

/// An aggregate whose header has been read and whose elements are still arriving.
/// `remaining: None` is a streamed aggregate (`*?`), ended by `.`.
pub(super) enum Partial {
    Seq {
        kind: SeqKind,
        remaining: Option<usize>,
        items: Vec<Value>,
    },
    Pairs {
        kind: PairKind,
        remaining: Option<usize>,
        pairs: Vec<(Value, Value)>,
        key: Option<Value>,
    },
    /// Attributes complete; waiting for the value they annotate.
    Annotated { attributes: Vec<(Value, Value)> },
    /// `$?`: chunks so far.
    Streamed { data: Vec<u8> },
}

/// What a partial turns into when its last element arrives.
pub(super) enum Finished {
    Value(Value),
    /// An attribute table: the next value is the one it annotates.
    Annotate(Vec<(Value, Value)>),
}

impl Partial {
    pub(super) fn seq(kind: SeqKind, remaining: Option<usize>) -> Partial {
        let cap = remaining.unwrap_or(0).min(PREALLOC_CAP);
        Partial::Seq {
            kind,
            remaining,
            items: Vec::with_capacity(cap),
        }
    }

    pub(super) fn pairs(kind: PairKind, remaining: Option<usize>) -> Partial {
        let cap = remaining.unwrap_or(0).min(PREALLOC_CAP);
        Partial::Pairs {
            kind,
            remaining,
            pairs: Vec::with_capacity(cap),
            key: None,
        }
    }

    /// Adds one element; `Some` when that completes the aggregate.
    pub(super) fn accept(&mut self, v: Value, max_len: usize) -> Result<Option<Finished>> {
        match self {
            Partial::Seq {
                kind,
                remaining,
                items,
            } => {
                items.push(v);
                if counted_down(remaining, items.len(), max_len)? {
                    return Ok(Some(Finished::Value(seq_value(
                        *kind,
                        std::mem::take(items),
                    ))));
                }
                Ok(None)
            }
            Partial::Pairs {
                kind,
                remaining,
                pairs,
                key,
            } => {
                let Some(k) = key.take() else {
                    *key = Some(v);
                    return Ok(None);
                };
                pairs.push((k, v));
                if counted_down(remaining, pairs.len(), max_len)? {
                    return Ok(Some(pairs_finished(*kind, std::mem::take(pairs))));
                }
                Ok(None)
            }
            Partial::Annotated { attributes } => Ok(Some(Finished::Value(Value::Attribute {
                data: Box::new(v),
                attributes: std::mem::take(attributes),
            }))),
            // Headers other than `;` are refused inside a streamed string before parsing.
            Partial::Streamed { .. } => Err(protocol("a value inside a streamed string")),
        }
    }

    /// The `.` that ends a streamed aggregate.
    pub(super) fn end_stream(self) -> Result<Finished> {
        match self {
            Partial::Seq {
                kind,
                remaining: None,
                items,
            } => Ok(Finished::Value(seq_value(kind, items))),
            Partial::Pairs {
                kind,
                remaining: None,
                pairs,
                key: None,
            } => Ok(pairs_finished(kind, pairs)),
            Partial::Pairs {
                remaining: None, ..
            } => Err(protocol("streamed map ended between a key and its value")),
            _ => Err(protocol("'.' outside a streamed aggregate")),
        }
    }
}

/// Counts one element in; whether the aggregate is now complete.
fn counted_down(remaining: &mut Option<usize>, have: usize, max_len: usize) -> Result<bool> {
    match remaining {
        Some(r) => {
            *r = r.saturating_sub(1);
            Ok(*r == 0)
        }
        None if have > max_len => Err(protocol(format!(
            "streamed aggregate longer than the limit of {max_len} elements"
        ))),
        None => Ok(false),
    }
}

pub(super) fn seq_value(kind: SeqKind, items: Vec<Value>) -> Value {
    match kind {
        SeqKind::Array => Value::Array(items),
        SeqKind::Set => Value::Set(items),
        SeqKind::Push => Value::Push(items),
    }
}

fn pairs_finished(kind: PairKind, pairs: Vec<(Value, Value)>) -> Finished {
    match kind {
        PairKind::Map => Finished::Value(Value::Map(pairs)),
        PairKind::Attribute => Finished::Annotate(pairs),
    }
}
