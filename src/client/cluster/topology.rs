//! Reading the cluster's shape from `CLUSTER SHARDS` (Redis 7+) or `CLUSTER SLOTS`
//! (older servers): which node serves which slots, replicas, and every name a node
//! answers to (address, announced endpoint, hostname), for the identity map.
//!
//! Pure: values in, topology out; no IO, so every server shape is testable alone.

use crate::config::Endpoint;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

use super::hash_slot::SLOT_COUNT;

/// One node as the topology describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeInfo {
    pub id: Option<String>,
    /// The address to connect to.
    pub endpoint: Endpoint,
    /// Other names of the same node (ip, hostname), each with the port.
    pub aliases: Vec<Endpoint>,
    pub is_master: bool,
}

/// One shard: its slot ranges, its master and replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shard {
    pub slots: Vec<(u16, u16)>,
    pub master: NodeInfo,
    pub replicas: Vec<NodeInfo>,
}

/// The whole cluster as one query saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Topology {
    pub shards: Vec<Shard>,
    /// Nodes listed but not routed to, still counted as members (never retired):
    /// loading ones, and every node of a shard that owns slots but has no master
    /// online (mid-failover: one of its replicas is about to be promoted, or the
    /// master comes back). A failed node elsewhere (a master whose slots were taken
    /// over, a replica) is left out, and retired once absent long enough.
    pub unrouted: Vec<Endpoint>,
}

impl Topology {
    /// Every node listed (including masters that own no slots).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.shards
            .iter()
            .flat_map(|s| std::iter::once(&s.master).chain(&s.replicas))
    }

    /// Shard index owning each slot (`None` for an uncovered slot).
    pub(crate) fn slot_table(&self) -> Vec<Option<u16>> {
        let mut table = vec![None; SLOT_COUNT as usize];
        for (i, shard) in self.shards.iter().enumerate() {
            for &(start, end) in &shard.slots {
                for slot in start..=end.min(SLOT_COUNT - 1) {
                    table[slot as usize] = Some(i as u16);
                }
            }
        }
        table
    }
}

fn bad(detail: &str) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("unexpected cluster topology reply: {detail}"),
    )
}

pub(super) fn text(v: &Value) -> Option<String> {
    v.as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => text(other)?.parse().ok(),
    }
}

pub(super) fn items(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) | Value::Set(items) => Some(items),
        _ => None,
    }
}

/// Key/value pairs from a RESP3 map or a RESP2 flat array.
pub(super) fn pairs(v: &Value) -> Option<Vec<(String, &Value)>> {
    match v {
        Value::Map(pairs) => Some(
            pairs
                .iter()
                .filter_map(|(k, v)| Some((text(k)?, v)))
                .collect(),
        ),
        Value::Array(items) => Some(
            items
                .chunks(2)
                .filter_map(|c| match c {
                    [k, v] => Some((text(k)?, v)),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }
}

fn slot(n: i64) -> Option<u16> {
    u16::try_from(n).ok().filter(|s| *s < SLOT_COUNT)
}

/// Parses `CLUSTER SHARDS`. `queried` is the node that answered: an empty or `?`
/// endpoint means "the address you reached me at".
pub(crate) fn parse_shards(reply: &Value, queried: &Endpoint, tls: bool) -> Result<Topology> {
    let mut topology = Topology::default();
    for shard in items(reply).ok_or_else(|| bad("CLUSTER SHARDS is not an array"))? {
        let fields = pairs(shard).ok_or_else(|| bad("a shard is not a map"))?;
        let mut slots = Vec::new();
        let mut master = None;
        let mut replicas = Vec::new();
        let mut failed = Vec::new();
        for (name, value) in fields {
            match name.as_str() {
                "slots" => {
                    let flat = items(value).ok_or_else(|| bad("slots is not an array"))?;
                    for pair in flat.chunks(2) {
                        if let [a, b] = pair {
                            match (int(a).and_then(slot), int(b).and_then(slot)) {
                                (Some(a), Some(b)) if a <= b => slots.push((a, b)),
                                _ => return Err(bad("slot out of range")),
                            }
                        }
                    }
                }
                "nodes" => {
                    for node in items(value).ok_or_else(|| bad("nodes is not an array"))? {
                        let Some((info, health)) = shard_node(node, queried, tls) else {
                            continue;
                        };
                        match health {
                            Health::Online if info.is_master => master = Some(info),
                            Health::Online => replicas.push(info),
                            Health::Loading => topology.unrouted.push(info.endpoint),
                            Health::Failed => failed.push(info.endpoint),
                        }
                    }
                }
                _ => {}
            }
        }
        match master {
            Some(master) => topology.shards.push(Shard {
                slots,
                master,
                replicas,
            }),
            None if !slots.is_empty() => {
                topology.unrouted.extend(failed);
                topology
                    .unrouted
                    .extend(replicas.into_iter().map(|r| r.endpoint));
            }
            None => {}
        }
    }
    Ok(topology)
}

/// A node's `health` in `CLUSTER SHARDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Health {
    /// `online` (or not given: servers that do not say).
    Online,
    /// `loading`, or a state this parser does not know: alive, not serving yet.
    Loading,
    /// `failed`.
    Failed,
}

fn shard_node(node: &Value, queried: &Endpoint, tls: bool) -> Option<(NodeInfo, Health)> {
    let fields = pairs(node)?;
    let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let port_key = if tls { "tls-port" } else { "port" };
    let port = get(port_key)
        .or_else(|| get("port"))
        .and_then(int)
        .and_then(|p| u16::try_from(p).ok())?;
    let ip = get("ip").and_then(text).filter(|s| !s.is_empty());
    let hostname = get("hostname").and_then(text).filter(|s| !s.is_empty());
    let announced = get("endpoint")
        .and_then(text)
        .filter(|s| !s.is_empty() && s != "?");
    let host = announced
        .clone()
        .or_else(|| ip.clone())
        .unwrap_or_else(|| queried.host.clone());
    let endpoint = Endpoint::new(host.clone(), port);
    let aliases = [ip, hostname, announced]
        .into_iter()
        .flatten()
        .filter(|h| *h != host)
        .map(|h| Endpoint::new(h, port))
        .collect();
    let is_master = get("role").and_then(text).as_deref() == Some("master");
    let health = match get("health").and_then(text).as_deref() {
        None | Some("online") => Health::Online,
        Some("failed" | "fail") => Health::Failed,
        Some(_) => Health::Loading,
    };
    let id = get("id").and_then(text);
    Some((
        NodeInfo {
            id,
            endpoint,
            aliases,
            is_master,
        },
        health,
    ))
}

/// Parses `CLUSTER SLOTS` (servers before 7.0). Nodes without slots are not listed.
pub(crate) fn parse_slots(reply: &Value, queried: &Endpoint) -> Result<Topology> {
    let mut topology = Topology::default();
    for range in items(reply).ok_or_else(|| bad("CLUSTER SLOTS is not an array"))? {
        let fields = items(range).ok_or_else(|| bad("a slot range is not an array"))?;
        let (Some(start), Some(end)) = (
            fields.first().and_then(int).and_then(slot),
            fields.get(1).and_then(int).and_then(slot),
        ) else {
            return Err(bad("slot out of range"));
        };
        let mut nodes = fields.iter().skip(2).filter_map(|n| slots_node(n, queried));
        let Some(master) = nodes.next() else { continue };
        let replicas: Vec<NodeInfo> = nodes
            .map(|mut n| {
                n.is_master = false;
                n
            })
            .collect();
        // One shard per master: merge ranges of a master listed several times.
        match topology
            .shards
            .iter_mut()
            .find(|s| s.master.endpoint == master.endpoint)
        {
            Some(shard) => shard.slots.push((start, end)),
            None => topology.shards.push(Shard {
                slots: vec![(start, end)],
                master,
                replicas,
            }),
        }
    }
    Ok(topology)
}

fn slots_node(node: &Value, queried: &Endpoint) -> Option<NodeInfo> {
    let fields = items(node)?;
    let host = fields
        .first()
        .and_then(text)
        .filter(|h| !h.is_empty() && h != "?")
        .unwrap_or_else(|| queried.host.clone());
    let port = fields
        .get(1)
        .and_then(int)
        .and_then(|p| u16::try_from(p).ok())?;
    let id = fields.get(2).and_then(text);
    let mut aliases = Vec::new();
    if let Some(extra) = fields.get(3).and_then(pairs) {
        for (k, v) in extra {
            if k == "hostname" || k == "ip" {
                if let Some(h) = text(v).filter(|h| !h.is_empty() && *h != host) {
                    aliases.push(Endpoint::new(h, port));
                }
            }
        }
    }
    Some(NodeInfo {
        id,
        endpoint: Endpoint::new(host, port),
        aliases,
        is_master: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn node(id: &str, port: i64, role: &str, hostname: &str) -> Value {
        Value::Map(vec![
            (bulk("id"), bulk(id)),
            (bulk("port"), Value::Int(port)),
            (bulk("ip"), bulk("10.0.0.1")),
            (bulk("endpoint"), bulk("10.0.0.1")),
            (bulk("hostname"), bulk(hostname)),
            (bulk("role"), bulk(role)),
            (bulk("health"), bulk("online")),
        ])
    }

    #[test]
    fn shards_with_hostnames_become_aliases_and_empty_shards_are_kept() {
        let reply = Value::Array(vec![
            Value::Map(vec![
                (
                    bulk("slots"),
                    Value::Array(vec![Value::Int(0), Value::Int(8191)]),
                ),
                (
                    bulk("nodes"),
                    Value::Array(vec![
                        node("a", 7000, "master", "node-a.example"),
                        node("b", 7001, "replica", ""),
                    ]),
                ),
            ]),
            Value::Map(vec![
                (bulk("slots"), Value::Array(vec![])),
                (
                    bulk("nodes"),
                    Value::Array(vec![node("c", 7002, "master", "")]),
                ),
            ]),
        ]);
        let t = parse_shards(&reply, &Endpoint::new("seed", 7000), false).unwrap();
        assert_eq!(t.shards.len(), 2);
        assert_eq!(t.shards[0].master.endpoint, Endpoint::new("10.0.0.1", 7000));
        assert_eq!(
            t.shards[0].master.aliases,
            vec![Endpoint::new("node-a.example", 7000)]
        );
        assert_eq!(t.shards[0].replicas.len(), 1);
        assert!(t.shards[1].slots.is_empty());
        assert!(t.unrouted.is_empty());
        let table = t.slot_table();
        assert_eq!(table[0], Some(0));
        assert_eq!(table[8192], None);
    }

    #[test]
    fn a_failed_master_leaves_its_slots_unowned_and_its_shard_listed_unrouted() {
        // (Redis says `failed`; `fail`, as CLUSTER NODES writes it, is read the same.)
        let with_health = |v: Value, health: &str| match v {
            Value::Map(mut pairs) => {
                pairs.retain(|(k, _)| k != &bulk("health"));
                pairs.push((bulk("health"), bulk(health)));
                Value::Map(pairs)
            }
            other => other,
        };
        // Between the node timeout and the promotion: the master is `fail`, its
        // replica not yet a master. Then a replica that is still loading.
        let reply = Value::Array(vec![Value::Map(vec![
            (
                bulk("slots"),
                Value::Array(vec![Value::Int(0), Value::Int(16383)]),
            ),
            (
                bulk("nodes"),
                Value::Array(vec![
                    with_health(node("a", 7000, "master", ""), "failed"),
                    node("b", 7001, "replica", ""),
                    with_health(node("c", 7002, "replica", ""), "loading"),
                ]),
            ),
        ])]);
        let t = parse_shards(&reply, &Endpoint::new("seed", 7000), false).unwrap();
        assert!(t.shards.is_empty());
        assert!(t.slot_table().iter().all(Option::is_none));
        // All three stay members: the replica is about to be promoted.
        assert_eq!(
            t.unrouted,
            vec![
                Endpoint::new("10.0.0.1", 7002),
                Endpoint::new("10.0.0.1", 7000),
                Endpoint::new("10.0.0.1", 7001),
            ]
        );
        // After the promotion the failed master is a shard of its own, without slots:
        // left out, so retired once absent long enough.
        let reply = Value::Array(vec![
            Value::Map(vec![
                (
                    bulk("slots"),
                    Value::Array(vec![Value::Int(0), Value::Int(16383)]),
                ),
                (
                    bulk("nodes"),
                    Value::Array(vec![node("b", 7001, "master", "")]),
                ),
            ]),
            Value::Map(vec![
                (bulk("slots"), Value::Array(vec![])),
                (
                    bulk("nodes"),
                    Value::Array(vec![with_health(node("a", 7000, "master", ""), "failed")]),
                ),
            ]),
        ]);
        let t = parse_shards(&reply, &Endpoint::new("seed", 7000), false).unwrap();
        assert_eq!(t.shards.len(), 1);
        assert_eq!(t.shards[0].master.endpoint, Endpoint::new("10.0.0.1", 7001));
        assert!(t.unrouted.is_empty());
        assert_eq!(t.nodes().count(), 1);
    }

    #[test]
    fn cluster_slots_merges_ranges_and_fills_missing_hosts() {
        let reply = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(100),
                Value::Array(vec![bulk(""), Value::Int(7000), bulk("id-a")]),
            ]),
            Value::Array(vec![
                Value::Int(200),
                Value::Int(300),
                Value::Array(vec![bulk(""), Value::Int(7000), bulk("id-a")]),
                Value::Array(vec![bulk("10.0.0.2"), Value::Int(7001), bulk("id-b")]),
            ]),
        ]);
        let t = parse_slots(&reply, &Endpoint::new("seed", 7000)).unwrap();
        assert_eq!(t.shards.len(), 1);
        assert_eq!(t.shards[0].master.endpoint, Endpoint::new("seed", 7000));
        assert_eq!(t.shards[0].slots, vec![(0, 100), (200, 300)]);
    }

    #[test]
    fn bad_replies_are_classified_not_panics() {
        let queried = Endpoint::new("seed", 7000);
        assert!(parse_shards(&Value::Int(1), &queried, false).is_err());
        let out_of_range = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(99999),
            Value::Array(vec![bulk("h"), Value::Int(1)]),
        ])]);
        assert_eq!(
            parse_slots(&out_of_range, &queried).unwrap_err().kind(),
            ErrorKind::Protocol
        );
    }
}
