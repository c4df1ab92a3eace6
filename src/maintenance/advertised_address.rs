//! `AdvertisedAddressProbe`: one primitive for the two DNS questions a maintenance
//! raises, both of which reduce to "what does the record say now, and is my address
//! in it":
//!
//! - "what replaces the address we are leaving" (`MOVING`): measured, the first answer
//!   still names the retiring address in every run with one A record (DNS followed
//!   4.4 to 9.7 s after the notification, once 18.7 s, after the socket closed), and the
//!   5 s TTL is what makes polling work: several attempts fit in a 15 s window.
//! - "are we still advertised" (`MIGRATED`): on the shrink path a node is dropped from
//!   DNS ~21 s in and its socket closed silently ~35 s in, with nothing announced.
//!
//! Pure apart from the resolver and the clock, both injected: no in-process fake can
//! move a real DNS record, so the tests script one.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::config::Endpoint;
use crate::resolve::Resolver;

/// How a poll for a replacement address ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplacementPoll {
    /// The record named `addr`, another address than the one being left, at lookup
    /// number `attempts` (1: the first answer already named it).
    Found {
        /// The replacement.
        addr: SocketAddr,
        /// Lookups made, this one included.
        attempts: u32,
    },
    /// The budget ran out with the record naming only the address being left (or
    /// nothing, or failing): a result, not an error. The server closes the socket
    /// anyway and the reconnect resolves then; guessing would be worse.
    Expired {
        /// Lookups made.
        attempts: u32,
    },
    /// Stopped before the budget ran out (the client is closing, or a newer event
    /// superseded this one).
    Cancelled,
}

impl ReplacementPoll {
    /// The replacement, if one was found.
    pub fn found(self) -> Option<SocketAddr> {
        match self {
            ReplacementPoll::Found { addr, .. } => Some(addr),
            _ => None,
        }
    }
}

/// Asks a [`Resolver`] what a name advertises, once or by polling.
#[derive(Clone, Debug)]
pub struct AdvertisedAddressProbe {
    resolver: Arc<dyn Resolver>,
    clock: Arc<dyn Clock>,
    interval: Duration,
}

impl AdvertisedAddressProbe {
    /// A probe asking `resolver`, waiting `interval` between lookups by `clock` (a
    /// manual clock makes a poll run without sleeping).
    pub fn new(
        resolver: Arc<dyn Resolver>,
        clock: Arc<dyn Clock>,
        interval: Duration,
    ) -> AdvertisedAddressProbe {
        AdvertisedAddressProbe {
            resolver,
            clock,
            interval,
        }
    }

    /// The clock the probe waits by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// What the record names now.
    pub fn lookup(&self, endpoint: &Endpoint) -> io::Result<Vec<SocketAddr>> {
        self.resolver.resolve(&endpoint.host, endpoint.port)
    }

    /// Polls until the record names an address other than `leaving`, or `budget`
    /// passes: `Some(addr)`, or `None` on expiry. A zero budget still gets one lookup
    /// (a zero window means "act now", not "do nothing"); a lookup that fails
    /// mid-poll is retried at the next interval.
    pub fn replacement(
        &self,
        endpoint: &Endpoint,
        leaving: SocketAddr,
        budget: Duration,
    ) -> Option<SocketAddr> {
        let clock = self.clock.clone();
        self.poll_replacement(endpoint, leaving, budget, &mut |d| {
            clock.sleep(d);
            true
        })
        .found()
    }

    /// [`replacement`](Self::replacement) with the wait between lookups supplied:
    /// `pause(d)` waits up to `d` and returns `false` to cancel the poll.
    pub fn poll_replacement(
        &self,
        endpoint: &Endpoint,
        leaving: SocketAddr,
        budget: Duration,
        pause: &mut dyn FnMut(Duration) -> bool,
    ) -> ReplacementPoll {
        let deadline = crate::clock::deadline_after(self.clock.now(), budget);
        let mut attempts = 0u32;
        loop {
            attempts = attempts.saturating_add(1);
            match self.lookup(endpoint) {
                // "Any address that is not the one being retired": a live sibling is
                // at least as good as the newcomer, and available now.
                Ok(addrs) => {
                    if let Some(addr) = addrs.into_iter().find(|a| *a != leaving) {
                        return ReplacementPoll::Found { addr, attempts };
                    }
                }
                Err(e) => log::debug!("{endpoint}: lookup {attempts} failed ({e}); retrying"),
            }
            let now = self.clock.now();
            if now >= deadline {
                return ReplacementPoll::Expired { attempts };
            }
            if !pause(self.interval.min(deadline - now)) {
                return ReplacementPoll::Cancelled;
            }
        }
    }

    /// Whether the record still names `addr`: `None` when it cannot tell (the lookup
    /// failed, or named nothing for a moment), which must never be read as "no": one
    /// DNS blip would otherwise recycle every healthy connection at once.
    pub fn still_advertised(&self, endpoint: &Endpoint, addr: SocketAddr) -> Option<bool> {
        match self.lookup(endpoint) {
            Ok(addrs) if addrs.is_empty() => None,
            Ok(addrs) => Some(addrs.contains(&addr)),
            Err(e) => {
                log::debug!("{endpoint}: cannot tell whether {addr} is advertised ({e})");
                None
            }
        }
    }
}
