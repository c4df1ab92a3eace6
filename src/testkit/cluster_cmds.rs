//! The cluster commands of a [`FakeCluster`](super::FakeCluster) node: `ASKING`,
//! `READONLY`/`READWRITE` and `CLUSTER SLOTS|SHARDS|NODES|MYID|KEYSLOT|INFO`, answered
//! from the slot map the nodes share, in the real server's shapes.
//!
//! Owns: how the topology is shown. Must never: change it (only `cluster` does).

use super::cluster::{ClusterLink, NodeEntry, Topology};
use super::reply::{self, bulk_value, err, int, ok, verbatim, Reply};
use super::session::Ctx;
use super::slots::{key_slot, SLOTS};
use crate::resp::Value;

fn cluster_of<'a>(ctx: &'a Ctx<'_, '_>) -> Result<&'a ClusterLink, Reply> {
    ctx.s
        .server
        .cluster
        .get()
        .ok_or_else(|| err("ERR This instance has cluster support disabled"))
}

/// `ASKING`
pub(crate) fn asking(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    if let Err(e) = cluster_of(ctx) {
        return e;
    }
    ctx.s.asking = true;
    ok()
}

/// `READONLY` / `READWRITE` (accepted; the fake has no replicas to read from).
pub(crate) fn readonly(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    match cluster_of(ctx) {
        Ok(_) => ok(),
        Err(e) => e,
    }
}

/// Contiguous runs of slots with the same owner: (start, end, owner).
fn runs(topo: &Topology) -> Vec<(u16, u16, usize)> {
    let mut out: Vec<(u16, u16, usize)> = Vec::new();
    for (slot, owner) in topo.slots.iter().enumerate() {
        let Some(owner) = *owner else { continue };
        match out.last_mut() {
            Some(last) if last.2 == owner && last.1 as usize + 1 == slot => last.1 = slot as u16,
            _ => out.push((slot as u16, slot as u16, owner)),
        }
    }
    out
}

fn node_value(n: &NodeEntry) -> Value {
    Value::Array(vec![
        bulk_value(n.addr.ip().to_string().as_bytes()),
        Value::Int(n.addr.port() as i64),
        bulk_value(n.id.as_bytes()),
        Value::Map(Vec::new()),
    ])
}

/// `CLUSTER SLOTS`: `[start, end, [ip, port, id, {}]]` per contiguous range.
pub(crate) fn cluster_slots(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let link = match cluster_of(ctx) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let topo = link.state.topo.lock();
    reply::array(
        runs(&topo)
            .into_iter()
            .map(|(a, b, owner)| {
                Value::Array(vec![
                    Value::Int(a as i64),
                    Value::Int(b as i64),
                    node_value(&topo.nodes[owner]),
                ])
            })
            .collect(),
    )
}

fn pair(k: &str, v: Value) -> (Value, Value) {
    (bulk_value(k.as_bytes()), v)
}

/// `CLUSTER SHARDS`: one map per master with its slot ranges and node.
pub(crate) fn cluster_shards(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let link = match cluster_of(ctx) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let topo = link.state.topo.lock();
    let all_runs = runs(&topo);
    let shards = topo
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.removed)
        .map(|(i, n)| {
            let slot_list = all_runs
                .iter()
                .filter(|r| r.2 == i)
                .flat_map(|r| [Value::Int(r.0 as i64), Value::Int(r.1 as i64)])
                .collect();
            let ip = n.addr.ip().to_string();
            let node = Value::Map(vec![
                pair("id", bulk_value(n.id.as_bytes())),
                pair("port", Value::Int(n.addr.port() as i64)),
                pair("ip", bulk_value(ip.as_bytes())),
                pair("endpoint", bulk_value(ip.as_bytes())),
                pair("role", bulk_value(b"master")),
                pair("replication-offset", Value::Int(0)),
                pair("health", bulk_value(b"online")),
            ]);
            Value::Map(vec![
                pair("slots", Value::Array(slot_list)),
                pair("nodes", Value::Array(vec![node])),
            ])
        })
        .collect();
    reply::array(shards)
}

/// `CLUSTER NODES`: one line per node, with migrating/importing markers.
pub(crate) fn cluster_nodes(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let link = match cluster_of(ctx) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let topo = link.state.topo.lock();
    let all_runs = runs(&topo);
    let mut out = String::new();
    for (i, n) in topo.nodes.iter().enumerate().filter(|(_, n)| !n.removed) {
        let flags = if i == link.index {
            "myself,master"
        } else {
            "master"
        };
        out.push_str(&format!(
            "{} {}:{}@{} {} - 0 0 {} connected",
            n.id,
            n.addr.ip(),
            n.addr.port(),
            n.addr.port() as u32 + 10000,
            flags,
            n.epoch
        ));
        for r in all_runs.iter().filter(|r| r.2 == i) {
            if r.0 == r.1 {
                out.push_str(&format!(" {}", r.0));
            } else {
                out.push_str(&format!(" {}-{}", r.0, r.1));
            }
        }
        if let Some(m) = &topo.migration {
            for s in m.slots.clone() {
                if m.from == i {
                    out.push_str(&format!(" [{s}->-{}]", topo.nodes[m.to].id));
                } else if m.to == i {
                    out.push_str(&format!(" [{s}-<-{}]", topo.nodes[m.from].id));
                }
            }
        }
        out.push('\n');
    }
    verbatim(out)
}

/// `CLUSTER MYID`
pub(crate) fn cluster_myid(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let link = match cluster_of(ctx) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let id = link.state.topo.lock().nodes[link.index].id.clone();
    reply::bulk(id)
}

/// `CLUSTER KEYSLOT key`
pub(crate) fn cluster_keyslot(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match cluster_of(ctx) {
        Ok(_) => int(key_slot(&args[2]) as i64),
        Err(e) => e,
    }
}

/// `CLUSTER INFO`
pub(crate) fn cluster_info(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let link = match cluster_of(ctx) {
        Ok(l) => l,
        Err(e) => return e,
    };
    let topo = link.state.topo.lock();
    let assigned = topo.slots.iter().filter(|s| s.is_some()).count();
    let known = topo.nodes.iter().filter(|n| !n.removed).count();
    let state = if assigned == SLOTS as usize {
        "ok"
    } else {
        "fail"
    };
    let current = topo.nodes.iter().map(|n| n.epoch).max().unwrap_or(0);
    verbatim(format!(
        "cluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{assigned}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{known}\r\ncluster_size:{known}\r\ncluster_current_epoch:{current}\r\ncluster_my_epoch:{}\r\n",
        topo.nodes[link.index].epoch
    ))
}
