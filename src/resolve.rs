//! Name resolution as a dependency: every connection resolves its endpoint through a
//! [`Resolver`], so the handoff that follows a `MOVING` (which turns entirely on a DNS
//! record *changing*) can be tested with a scripted resolver instead of real DNS, and
//! an application can plug in its own (a service-discovery client, a pinned map).
//!
//! Resolution runs on the thread that connects: a caller opening a subscription, the
//! supervisor reconnecting, or a handoff worker. Never on a reader or writer thread.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Turns a host name into the socket addresses to try, in order.
///
/// Implementations must be cheap to share (`Arc`) and safe to call from several
/// threads at once. `Options::resolver` installs one; `None` means [`SystemResolver`].
pub trait Resolver: Send + Sync + fmt::Debug {
    /// The addresses `host` names now, each with `port` (a resolver may answer with
    /// other ports, e.g. to map one name onto several local test servers). An empty
    /// answer is allowed and means "names nothing right now"; callers treat it like a
    /// failure to connect, never as proof that an address went away.
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The operating system's resolver (`getaddrinfo`, through the `dns-lookup` crate),
/// which honours `/etc/hosts`, `nsswitch` and the local cache. An address literal
/// resolves to itself without a lookup.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let ips = dns_lookup::lookup_host(host)?;
        // getaddrinfo answers once per socket type: keep each address once, in order.
        let mut out: Vec<SocketAddr> = Vec::with_capacity(ips.len());
        for ip in ips {
            let addr = SocketAddr::new(ip, port);
            if !out.contains(&addr) {
                out.push(addr);
            }
        }
        Ok(out)
    }
}

/// The resolver used when none is given.
pub fn system() -> Arc<dyn Resolver> {
    Arc::new(SystemResolver)
}

/// Whether `host` is an address literal (nothing to re-resolve) rather than a name.
pub fn is_address_literal(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_resolve_to_themselves_and_localhost_resolves() {
        let r = SystemResolver;
        assert_eq!(
            r.resolve("10.0.0.7", 6379).unwrap(),
            vec!["10.0.0.7:6379".parse().unwrap()]
        );
        assert_eq!(
            r.resolve("::1", 7000).unwrap(),
            vec!["[::1]:7000".parse().unwrap()]
        );
        let local = r.resolve("localhost", 6380).unwrap();
        assert!(!local.is_empty());
        assert!(local
            .iter()
            .all(|a| a.port() == 6380 && a.ip().is_loopback()));
        assert!(is_address_literal("127.0.0.1") && !is_address_literal("db.example"));
    }
}
