//! resilient-redis: a synchronous, thread-based Redis client.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
mod error;
pub mod resp;

pub use config::{Endpoint, Options};
pub use error::{Error, ErrorKind, FailureKind, MaintenanceKind, Result};
