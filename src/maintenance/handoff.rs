//! The handoff a `MOVING` asks for, decided without a server: the endpoint's form, the
//! address being left, the window and a resolver in; a decision out. The client acts
//! on it (jitter, drain, recycle) on a worker thread; keeping the decision pure is what
//! lets every branch be tested against a scripted DNS timeline.
//!
//! Measured, relative to `MOVING` (Redis Enterprise 8.0/8.6): the endpoint moves
//! server-side at +8.6 s; DNS follows at +4.4 to +9.7 s (once +18.7 s, after the close);
//! the server closes the socket at +15.7 to +19.1 s against a declared 15 s window; TTL
//! 5 s. So the first answer still names the address being retired when the record has
//! one address, and the window is a floor with slack, not a deadline.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use super::advertised_address::{AdvertisedAddressProbe, ReplacementPoll};
use crate::config::Endpoint;
use crate::resolve::is_address_literal;

/// What to do about one `MOVING`, for one node.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandoffDecision {
    /// A host name whose first answer already named a live sibling (several A records,
    /// the common case: 2 for all-nodes, 3 for all-master-shards): step sideways at
    /// once; any proxy of the database serves the same data.
    StepSideways(SocketAddr),
    /// A host name whose record named only the retiring address at first and moved
    /// to `to` at lookup number `attempts`.
    RecordMoved {
        /// The new address.
        to: SocketAddr,
        /// Lookups made.
        attempts: u32,
    },
    /// A host name whose record still named only the retiring address when the window
    /// ended: a normal outcome (measured once: DNS moved 3 s after the close). The
    /// server closes, we reconnect and resolve then.
    StillStale {
        /// Lookups made.
        attempts: u32,
    },
    /// The notification named a new endpoint: a different endpoint, connect there.
    ConnectTo(Endpoint),
    /// An address literal and no new endpoint: nothing to re-resolve and nowhere
    /// named to go; the relaxed window covers the reconnect after the close.
    Nothing,
    /// Not connected: nothing to move.
    NotConnected,
    /// Stopped before deciding (the client is closing, or a newer event superseded it).
    Cancelled,
}

impl HandoffDecision {
    /// Where the connections go, when the decision moves them to an address.
    pub fn target(&self) -> Option<SocketAddr> {
        match self {
            HandoffDecision::StepSideways(a) | HandoffDecision::RecordMoved { to: a, .. } => {
                Some(*a)
            }
            _ => None,
        }
    }
}

impl fmt::Display for HandoffDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandoffDecision::StepSideways(a) => {
                write!(f, "stepped sideways to {a}, a sibling already advertised")
            }
            HandoffDecision::RecordMoved { to, attempts } => {
                write!(f, "the record moved to {to} (lookup {attempts})")
            }
            HandoffDecision::StillStale { attempts } => write!(
                f,
                "the record still names the retiring address after {attempts} lookups; \
                 reconnecting after the server closes"
            ),
            HandoffDecision::ConnectTo(e) => write!(f, "connecting to the named endpoint {e}"),
            HandoffDecision::Nothing => {
                f.write_str("an address and no new endpoint: nothing to re-resolve")
            }
            HandoffDecision::NotConnected => f.write_str("not connected: nothing to move"),
            HandoffDecision::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// Decides the handoff for a node reached through `endpoint`, connected now to
/// `current`, told by a `MOVING` with `new_endpoint` and `window` left to act in.
/// `pause(d)` waits between lookups and returns `false` to cancel.
pub fn decide_handoff(
    endpoint: &Endpoint,
    current: Option<SocketAddr>,
    new_endpoint: Option<&Endpoint>,
    window: Duration,
    probe: &AdvertisedAddressProbe,
    pause: &mut dyn FnMut(Duration) -> bool,
) -> HandoffDecision {
    // A server naming itself is no new endpoint (the placeholders are already `None`).
    if let Some(e) = new_endpoint.filter(|e| *e != endpoint) {
        return HandoffDecision::ConnectTo(e.clone());
    }
    if is_address_literal(&endpoint.host) {
        return HandoffDecision::Nothing;
    }
    let Some(leaving) = current else {
        return HandoffDecision::NotConnected;
    };
    match probe.poll_replacement(endpoint, leaving, window, pause) {
        ReplacementPoll::Found { addr, attempts: 1 } => HandoffDecision::StepSideways(addr),
        ReplacementPoll::Found { addr, attempts } => {
            HandoffDecision::RecordMoved { to: addr, attempts }
        }
        ReplacementPoll::Expired { attempts } => HandoffDecision::StillStale { attempts },
        ReplacementPoll::Cancelled => HandoffDecision::Cancelled,
    }
}

/// The longest jitter before acting on a window: a fraction of it (a 2 s window must
/// not spend half of itself waiting), capped at 1 s (a 15 s window does not justify a
/// long wait when DNS has been seen moving after four seconds).
pub fn max_jitter(window: Duration) -> Duration {
    (window / 10).min(Duration::from_secs(1))
}

/// The jitter for `fraction` in [0, 1) of the largest allowed.
pub fn jitter(window: Duration, fraction: f64) -> Duration {
    max_jitter(window).mul_f64(fraction.clamp(0.0, 1.0))
}

/// How often to look the record up during a window: several lookups fit in a 15 s
/// window against a 5 s TTL; a short (test) window is polled faster.
pub fn poll_interval(window: Duration) -> Duration {
    (window / 15).clamp(Duration::from_millis(50), Duration::from_secs(1))
}
