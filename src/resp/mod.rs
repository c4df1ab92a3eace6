//! RESP2 and RESP3: the decoded `Value`, a command encoder that writes straight into
//! the outgoing buffer, and an incremental decoder.
//!
//! Owns: bytes <-> frames. Must never: do IO other than the one `read_from` call the
//! reader thread makes, panic on any input, or allocate beyond the stated limits.

mod decoder;
mod encoder;
mod header;
mod partial;
mod value;

pub use decoder::{Decoder, Limits};
pub use encoder::{
    encode_value, encode_value_resp2, write_arg, write_command_header, write_int_arg,
};
pub use value::Value;
