//! The client against one server (real or fake): commands from many threads, timeouts,
//! recovery, authentication and credentials that change, pub/sub, TLS, resolution,
//! retries, the differential run against redis-rs, secrets kept out of every log line
//! and message. One test binary; each module was its own test file.

#[path = "../support/mod.rs"]
mod support;

mod client_core;
mod close_ends_streams;
mod differential;
mod lanes;
mod pubsub;
mod redis_compat;
mod resolver;
mod retry;
mod secrets;
mod tls;
mod token_renewal;
