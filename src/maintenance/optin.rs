//! Logging an `auto` opt-in that did not take, once per endpoint.
//!
//! Why once, and at debug level: on servers without the subcommand (Redis OSS, Valkey)
//! every connection of every client would otherwise log it, and users of other clients
//! had to turn the feature off to silence their logs. The memory is process-wide, so a
//! second client to the same endpoint stays quiet too.

use std::collections::HashSet;
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::config::Endpoint;

/// Endpoints remembered; past this, further endpoints are logged at trace level only
/// (bounded: a client fed an endless stream of cluster nodes must not grow it forever).
const REMEMBERED: usize = 4096;

fn logged() -> &'static Mutex<HashSet<String>> {
    static LOGGED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LOGGED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Logs that maintenance notifications are unavailable on `endpoint` (`auto` mode, so
/// the connection goes on without them), the first time only. Returns whether it logged.
pub(crate) fn note_unavailable_once(endpoint: &Endpoint, why: &str) -> bool {
    let key = endpoint.to_string();
    let first = {
        let mut set = logged().lock();
        if set.contains(&key) {
            false
        } else if set.len() < REMEMBERED {
            set.insert(key);
            true
        } else {
            log::trace!("{endpoint}: maintenance notifications unavailable ({why})");
            return false;
        }
    };
    if first {
        log::debug!(
            "{endpoint}: maintenance notifications unavailable ({why}); \
             maintNotifications=auto goes on without them (logged once per endpoint)"
        );
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_endpoint() {
        let a = Endpoint::new("optin-test-a.invalid", 1);
        let b = Endpoint::new("optin-test-b.invalid", 1);
        assert!(note_unavailable_once(&a, "refused"));
        assert!(!note_unavailable_once(&a, "refused"));
        assert!(!note_unavailable_once(&a, "RESP2"));
        assert!(note_unavailable_once(&b, "refused"));
    }
}
