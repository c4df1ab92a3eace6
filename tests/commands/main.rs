//! The typed commands against a real server, over RESP2 and RESP3. One test binary;
//! each module was its own test file.

#[path = "../support/mod.rs"]
mod support;

mod commands_batch;
mod commands_blocking;
mod commands_collections;
mod commands_scripting;
mod commands_streams;
mod commands_strings_keys;
