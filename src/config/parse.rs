//! URL and option-string parsing (stub: being written).
use super::{Endpoint, Options};
use crate::error::Result;
pub(crate) fn parse_endpoint(_s: &str) -> Result<Endpoint> {
    todo!()
}
impl Options {
    /// Parses a URL or option string.
    pub fn parse(_s: &str) -> Result<Options> {
        todo!()
    }
}
impl std::fmt::Display for Options {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        todo!()
    }
}
