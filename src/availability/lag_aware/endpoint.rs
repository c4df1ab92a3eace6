//! Where to ask and what to ask about: the REST endpoint derived from the database
//! host, and the database found by host and port in a filtered listing.

use serde_json::Value;

/// The REST API port of a Redis Enterprise cluster.
pub(crate) const REST_PORT: u16 = 9443;

/// `https://{cluster}:9443` from a database host `redis-{port}.{cluster}`: strip the
/// `redis-{port}.` label. The cluster name resolves to the master node, the only one
/// that answers every route; measured, the other nodes answer the management routes
/// with a 307 to the master's internal address, which a client cannot reach.
///
/// The label must name the database's own port, so a host that merely starts with
/// `redis-1.` is not mistaken for a cluster name.
pub(crate) fn derive_rest_endpoint(host: &str, port: u16) -> Result<String, String> {
    let cannot = || {
        format!(
            "cannot derive the REST endpoint from host {host}: expected redis-{port}.{{cluster}} \
             (set LagAwareOptions::rest_endpoint)"
        )
    };
    let (label, cluster) = host.split_once('.').ok_or_else(cannot)?;
    let expected = format!("redis-{port}");
    if !label.eq_ignore_ascii_case(&expected) || cluster.is_empty() || cluster.ends_with('.') {
        return Err(cannot());
    }
    Ok(format!("https://{cluster}:{REST_PORT}"))
}

/// A base URL as given: `https://` only (Basic credentials never travel in clear), no
/// trailing slash.
pub(crate) fn normalize_base(url: &str) -> Result<String, String> {
    let trimmed = url.trim().trim_end_matches('/');
    let shown = || without_userinfo(url);
    let rest = trimmed
        .get(..8)
        .filter(|s| s.eq_ignore_ascii_case("https://"))
        .map(|_| &trimmed[8..])
        .ok_or_else(|| format!("the REST endpoint {} is not an https:// URL", shown()))?;
    if rest.contains('@') {
        return Err(format!(
            "the REST endpoint {} carries credentials: give them to \
             LagAwareOptions::new instead",
            shown()
        ));
    }
    if rest.is_empty() || rest.contains(['/', '?', '#']) {
        return Err(format!(
            "the REST endpoint {} must be scheme, host and port only",
            shown()
        ));
    }
    Ok(format!("https://{rest}"))
}

/// A URL fit to show: credentials before an `@` (`https://user:pw@host`) replaced.
pub(crate) fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}<redacted>{}", &rest[at..]),
        None => url.to_string(),
    }
}

/// What the discovery listing says of one database.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Discovery {
    Found(u64),
    NotFound { databases: usize },
    Ambiguous(Vec<u64>),
}

/// Picks, from `GET /v1/bdbs?fields=uid,endpoints`, the database with an endpoint whose
/// `dns_name` is `host` (case-insensitive) or whose `addr` holds it, on `port`.
pub(crate) fn discover(body: &Value, host: &str, port: u16) -> Result<Discovery, String> {
    let list = body
        .as_array()
        .ok_or("the database listing is not a JSON array")?;
    let mut found: Vec<u64> = Vec::new();
    for bdb in list {
        let uid = bdb
            .get("uid")
            .and_then(uid_of)
            .ok_or("a database in the listing has no numeric uid")?;
        let endpoints = bdb
            .get("endpoints")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if endpoints.iter().any(|e| endpoint_matches(e, host, port)) && !found.contains(&uid) {
            found.push(uid);
        }
    }
    Ok(match found.as_slice() {
        [] => Discovery::NotFound {
            databases: list.len(),
        },
        [uid] => Discovery::Found(*uid),
        _ => Discovery::Ambiguous(found),
    })
}

fn uid_of(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str()?.parse().ok())
}

fn endpoint_matches(endpoint: &Value, host: &str, port: u16) -> bool {
    let port_ok = endpoint
        .get("port")
        .and_then(Value::as_u64)
        .is_some_and(|p| p == u64::from(port));
    if !port_ok {
        return false;
    }
    let by_name = endpoint
        .get("dns_name")
        .and_then(Value::as_str)
        .is_some_and(|n| n.trim_end_matches('.').eq_ignore_ascii_case(host));
    let by_addr = endpoint
        .get("addr")
        .and_then(Value::as_array)
        .is_some_and(|addrs| {
            addrs
                .iter()
                .filter_map(Value::as_str)
                .any(|a| a.eq_ignore_ascii_case(host))
        });
    by_name || by_addr
}

/// `crdt` from `GET /v1/bdbs/{uid}?fields=crdt`.
pub(crate) fn crdt_of(body: &Value) -> Result<bool, String> {
    body.get("crdt")
        .and_then(Value::as_bool)
        .ok_or_else(|| "the database answer has no boolean crdt field".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_rest_endpoint_is_the_cluster_name_on_9443() {
        assert_eq!(
            derive_rest_endpoint("redis-12000.cluster1.example.com", 12000).unwrap(),
            "https://cluster1.example.com:9443"
        );
        assert_eq!(
            derive_rest_endpoint("REDIS-12000.Cluster1.local", 12000).unwrap(),
            "https://Cluster1.local:9443"
        );
        for (host, port) in [
            ("redis-12000.cluster1.example.com", 12001),
            ("redis-1.mycompany.com", 6379),
            ("10.0.0.5", 12000),
            ("localhost", 6379),
            ("redis-12000.", 12000),
            ("redis-12000", 12000),
        ] {
            let e = derive_rest_endpoint(host, port).unwrap_err();
            assert!(e.contains("rest_endpoint"), "{host}: {e}");
        }
    }

    #[test]
    fn a_given_endpoint_must_be_https_and_bare() {
        assert_eq!(
            normalize_base("https://c.example:9443/").unwrap(),
            "https://c.example:9443"
        );
        assert_eq!(
            normalize_base("HTTPS://127.0.0.1:1234").unwrap(),
            "https://127.0.0.1:1234"
        );
        assert!(normalize_base("http://c.example:9443").is_err());
        assert!(normalize_base("https://c.example:9443/v1").is_err());
        let e = normalize_base("https://user:pw@c.example").unwrap_err();
        assert!(!e.contains("pw"), "{e}");
        let e = normalize_base("http://user:pw@c.example/x").unwrap_err();
        assert!(!e.contains("pw"), "{e}");
        assert_eq!(
            without_userinfo("https://u:p@h:1/x@y"),
            "https://<redacted>@h:1/x@y"
        );
        assert_eq!(without_userinfo("https://h:1"), "https://h:1");
        assert!(normalize_base("https://").is_err());
    }

    fn listing() -> Value {
        json!([
            {"uid": 1, "endpoints": [{"uid": "1:1", "dns_name": "redis-12000.c1.local",
              "addr": ["10.0.0.5"], "port": 12000}]},
            {"uid": 2, "endpoints": [{"uid": "2:1", "dns_name": "redis-12001.c1.local",
              "addr": ["10.0.0.5", "10.0.0.6"], "port": 12001}]},
            {"uid": "3", "endpoints": []}
        ])
    }

    #[test]
    fn discovery_matches_name_or_address_and_port() {
        let l = listing();
        assert_eq!(
            discover(&l, "REDIS-12000.c1.local", 12000).unwrap(),
            Discovery::Found(1)
        );
        assert_eq!(
            discover(&l, "10.0.0.6", 12001).unwrap(),
            Discovery::Found(2)
        );
        assert_eq!(
            discover(&l, "10.0.0.5", 12000).unwrap(),
            Discovery::Found(1),
            "the address alone is ambiguous, the port decides"
        );
        assert_eq!(
            discover(&l, "redis-12000.c1.local", 12001).unwrap(),
            Discovery::NotFound { databases: 3 },
            "right name, wrong port"
        );
        assert_eq!(
            discover(&l, "redis-12000.c1", 12000).unwrap(),
            Discovery::NotFound { databases: 3 },
            "a prefix is not a match"
        );
    }

    #[test]
    fn discovery_refuses_what_it_cannot_read_or_tell_apart() {
        assert!(discover(&json!({"uid": 1}), "h", 1).is_err());
        assert!(discover(&json!([{"endpoints": []}]), "h", 1).is_err());
        let twice = json!([
            {"uid": 1, "endpoints": [{"dns_name": "h", "port": 1}]},
            {"uid": 2, "endpoints": [{"addr": ["h"], "port": 1}]}
        ]);
        assert_eq!(
            discover(&twice, "h", 1).unwrap(),
            Discovery::Ambiguous(vec![1, 2])
        );
        assert!(crdt_of(&json!({"crdt": true})).unwrap());
        assert!(!crdt_of(&json!({"uid": 1, "crdt": false})).unwrap());
        assert!(crdt_of(&json!({"uid": 1})).is_err());
        assert!(crdt_of(&json!({"crdt": "yes"})).is_err());
    }
}
