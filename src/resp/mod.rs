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
pub use encoder::{encode_value, encode_value_resp2};
pub use value::Value;

// Not part of the API (hidden, may change in any release): the command encoder's
// pieces, public only so the codec benchmark (`benches/codec_instructions.rs`) can
// count their instructions. Commands are built with `Cmd`/`CmdBuilder`.
#[doc(hidden)]
pub use encoder::{write_arg, write_command_header, write_int_arg};
