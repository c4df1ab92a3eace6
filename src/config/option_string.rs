//! Option strings: `host:port,key=value,...`.
//!
//! Owns: splitting the string into items and telling endpoints from `key=value` pairs.
//! Must never: quote an item in an error (see `keys`: any item may hold part of a
//! password that contained a comma).

use super::keys::Settings;
use super::parse::Position;
use super::Options;
use crate::error::Result;

/// Parses an option string (see `Options::parse` for the syntax).
pub(super) fn parse_option_string(s: &str) -> Result<Options> {
    let mut settings = Settings::new(false);
    for (index, item) in s.split(',').enumerate() {
        let at = Position::Item(index + 1);
        let item = item.trim();
        // Why skip: a trailing comma is common in strings assembled by templates and
        // carries nothing. It still counts, so "item 3" is the third comma-separated
        // piece the user sees.
        if item.is_empty() {
            continue;
        }
        match item.split_once('=') {
            Some((key, value)) => settings.apply(key.trim(), value.trim(), at)?,
            None => settings.add_endpoint(item, at)?,
        }
    }
    settings.finish()
}
