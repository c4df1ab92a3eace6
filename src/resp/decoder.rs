//! Incremental RESP2/RESP3 decoder (stub: being written).
use super::Value;
use crate::error::Result;
use std::io::{self, Read};

/// Limits that keep a hostile or broken peer from making us allocate without bound.
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

/// Incremental decoder.
#[derive(Default)]
pub struct Decoder {
    _limits: Limits,
}

impl Decoder {
    /// A decoder with default limits.
    pub fn new() -> Decoder {
        Decoder::default()
    }
    /// A decoder with the given limits.
    pub fn with_limits(limits: Limits) -> Decoder {
        Decoder { _limits: limits }
    }
    /// Appends bytes.
    pub fn feed(&mut self, _bytes: &[u8]) {
        todo!()
    }
    /// Next complete frame.
    pub fn decode(&mut self) -> Result<Option<Value>> {
        todo!()
    }
    /// Reads once from `r`.
    pub fn read_from<R: Read + ?Sized>(&mut self, _r: &mut R) -> io::Result<usize> {
        todo!()
    }
    /// Bytes buffered and not yet decoded.
    pub fn buffered(&self) -> usize {
        0
    }
}
