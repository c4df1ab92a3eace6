//! Configuration: `Options`, `redis://` URLs and option strings.
//!
//! Owns: turning user text into `Options` and back. Must never: print a secret, or
//! accept an unknown key or a bad value silently.

mod display;
mod keys;
mod option_string;
mod options;
mod parse;
mod url;

#[cfg(test)]
mod tests;

pub use options::{
    BacklogPolicy, Endpoint, MaintNotifications, MovingEndpointType, Options, OptionsBuilder,
    Protocol, Secret, TlsOptions,
};
pub(crate) use parse::parse_endpoint;
