//! The `moving-endpoint-type` to ask for when `maintMovingEndpointType` is not set.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::config::MovingEndpointType;

/// The address form `MOVING` should carry for a connection to `host` (as configured),
/// reached at `peer`, with or without TLS.
///
/// - Address literal: `*-ip`; host name: `*-fqdn`; TLS: always `*-fqdn`, because a
///   certificate names hosts, not addresses, so an address could not be verified.
/// - `internal-*` when the peer (the literal itself, else the address we connected to)
///   is private, loopback, link-local or in 100.64/10 (carrier-grade NAT, used by cloud
///   VPCs); `external-*` otherwise, and when the peer is unknown.
pub(crate) fn detect(host: &str, peer: Option<IpAddr>, tls: bool) -> MovingEndpointType {
    let literal = host.parse::<IpAddr>().ok();
    let internal = literal.or(peer).is_some_and(is_internal);
    let fqdn = tls || literal.is_none();
    match (internal, fqdn) {
        (true, true) => MovingEndpointType::InternalFqdn,
        (true, false) => MovingEndpointType::InternalIp,
        (false, true) => MovingEndpointType::ExternalFqdn,
        (false, false) => MovingEndpointType::ExternalIp,
    }
}

fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_internal(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4_internal(v4),
            None => v6_internal(v6),
        },
    }
}

fn v4_internal(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private() || ip.is_loopback() || ip.is_link_local() || (a == 100 && (b & 0xc0) == 64)
}

fn v6_internal(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        // fc00::/7, unique local
        || (first & 0xfe00) == 0xfc00
        // fe80::/10, link-local
        || (first & 0xffc0) == 0xfe80
}

#[cfg(test)]
mod tests {
    use super::*;
    use MovingEndpointType::{ExternalFqdn, ExternalIp, InternalFqdn, InternalIp};

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn literals_give_ip_names_give_fqdn_and_tls_prefers_fqdn() {
        assert_eq!(detect("10.0.0.5", None, false), InternalIp);
        assert_eq!(detect("10.0.0.5", None, true), InternalFqdn);
        assert_eq!(detect("8.8.8.8", None, false), ExternalIp);
        assert_eq!(detect("8.8.8.8", None, true), ExternalFqdn);
        assert_eq!(
            detect("db.example.com", ip("10.1.2.3"), false),
            InternalFqdn
        );
        assert_eq!(
            detect("db.example.com", ip("52.1.2.3"), false),
            ExternalFqdn
        );
        assert_eq!(detect("db.example.com", None, false), ExternalFqdn);
    }

    #[test]
    fn internal_ranges() {
        for internal in [
            "127.0.0.1",
            "10.255.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.10.10",
            "100.64.0.1",
            "100.127.255.255",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_internal(internal.parse().unwrap()), "{internal}");
        }
        for external in [
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "8.8.8.8",
            "2001:db8::1",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_internal(external.parse().unwrap()), "{external}");
        }
    }
}
