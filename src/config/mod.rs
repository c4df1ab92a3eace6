//! Configuration: `Options`, `redis://` URLs and option strings.
//!
//! Owns: turning user text into `Options` and back, and the registry of hosted
//! providers whose defaults fill in what the user left unset (here rather than in
//! `maintenance`, which sits above `config`). Must never: print a secret, or accept an
//! unknown key or a bad value silently.

mod credentials;
mod display;
mod keys;
mod option_string;
mod options;
mod parse;
mod provider;
mod provider_registry;
mod settings;
mod token;
mod url;
mod values;

#[cfg(test)]
mod tests;

pub use credentials::{Credentials, CredentialsProvider, RenewalFailure, RotatingCredentials};
#[cfg(test)]
pub(crate) use options::Explicit;
pub use options::{
    BacklogPolicy, Endpoint, MaintNotifications, MovingEndpointType, Options, Protocol, Secret,
    TlsOptions,
};
pub(crate) use parse::parse_endpoint;
pub use token::{Token, TokenCredentials, TokenCredentialsBuilder, TokenSource};

/// The names `defaults=<name>` accepts.
#[allow(dead_code)] // read by the provider registry's tests
pub(crate) fn provider_names() -> &'static [&'static str] {
    &keys::PROVIDERS
}
