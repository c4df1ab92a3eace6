//! `Display` for `Options`: the option-string form, which `Options::parse` reads back.
//!
//! Owns: the form (endpoints, then `key=value` items, quoted where needed); what each
//! key writes, and in which unit, is its declaration's `display` (`keys`). Must never:
//! write the password, masked or not, and must never write a provider's values, only
//! the provider's name when it was chosen.

use std::fmt;

use super::keys::{OptionKey, Role};
use super::option_string::quote_if_needed;
use super::Options;

/// Writes `endpoints,key=value,...`: the endpoints, then every key whose value differs
/// from `Options::default()`, in a fixed order (that of the table in [`Options::parse`]).
///
/// - The password is never written; `Options::parse(&o.to_string())` gives back `o`
///   without its password.
/// - `defaults=<name>` is written only when a provider was chosen by name, and a
///   provider's values never are: where a provider applies ([`Options::provider`]), a
///   setting holding the value the provider fills in is omitted (parsing the string
///   again re-derives it), and a setting given explicitly is written even when it holds
///   the library default (`ssl=false`, `maintNotifications=disabled`), so that it stays
///   pinned against the provider.
/// - TLS is written as `ssl=true` plus the `ssl*` keys that are set. In-memory CA
///   certificates (`TlsOptions::ca_pem`) have no option-string form and are omitted.
/// - Durations are written in their key's unit: whole milliseconds (rounded up, so a
///   timeout set in code to less than a millisecond is never written as zero), and
///   seconds with a fraction where needed for the `maint*` keys.
/// - Values are written as they are, or in double quotes (`"` and `\` escaped) when they
///   would not read back otherwise: a value holding a comma, starting with a quote, or
///   starting or ending with whitespace. Empty values and durations set in code to zero
///   cannot be read back (`parse` refuses them).
impl fmt::Display for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let defaults = Options::default();
        let mut separator = "";
        for endpoint in &self.endpoints {
            write!(f, "{separator}{endpoint}")?;
            separator = ",";
        }
        for key in OptionKey::ALL {
            let spec = key.spec();
            // Secrets are never written, whatever their declaration says.
            if spec.role == Role::Secret {
                continue;
            }
            if let Some(value) = (spec.display)(self, &defaults) {
                write!(f, "{separator}{}={}", spec.name, quote_if_needed(&value))?;
                separator = ",";
            }
        }
        Ok(())
    }
}
