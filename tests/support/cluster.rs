//! A real Redis Cluster of `redis-server` processes on ephemeral loopback ports,
//! created with `redis-cli --cluster create`, torn down on drop.

use std::process::Command;
use std::time::Duration;

use super::{wait_until, RedisServer};

pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

/// Runs `redis-cli` and returns its stdout (panics with stderr on failure).
pub fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run redis-cli (apt-get install -y redis-tools)");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn node_id(port: u16) -> String {
    cli(port, &["CLUSTER", "MYID"])
}

fn cluster_node(extra: &[&str]) -> Option<RedisServer> {
    let mut args = vec![
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "3000",
    ];
    args.extend_from_slice(extra);
    RedisServer::start_with(&args)
}

impl RedisCluster {
    /// `masters` masters with the slots split evenly; `None` only when skipped.
    pub fn start(masters: usize) -> Option<RedisCluster> {
        RedisCluster::start_with_replicas(masters, 0)
    }

    /// `masters` masters, each with `replicas` replicas.
    pub fn start_with_replicas(masters: usize, replicas: usize) -> Option<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..masters * (1 + replicas) {
            nodes.push(cluster_node(&[])?);
        }
        let addrs: Vec<String> = nodes.iter().map(|n| n.addr()).collect();
        let replicas = replicas.to_string();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", replicas.as_str(), "--cluster-yes"]);
        cli(nodes[0].port, &args);
        let cluster = RedisCluster { nodes };
        cluster.wait_ok();
        Some(cluster)
    }

    /// Waits until every node says the cluster is ok and agrees on all slots.
    pub fn wait_ok(&self) {
        let ok = wait_until(Duration::from_secs(30), || {
            self.nodes.iter().all(|n| {
                let info = cli(n.port, &["CLUSTER", "INFO"]);
                info.contains("cluster_state:ok") && info.contains("cluster_slots_assigned:16384")
            })
        });
        assert!(ok, "the cluster did not become ok");
    }

    /// Adds an empty master and waits until every node knows it.
    pub fn add_empty_master(&mut self) -> u16 {
        let node = cluster_node(&[]).expect("start node");
        let port = node.port;
        cli(
            self.nodes[0].port,
            &["CLUSTER", "MEET", "127.0.0.1", &port.to_string()],
        );
        let id = node_id(port);
        self.nodes.push(node);
        let known = wait_until(Duration::from_secs(30), || {
            self.nodes
                .iter()
                .all(|n| cli(n.port, &["CLUSTER", "NODES"]).contains(&id))
        });
        assert!(known, "the new node was not met by all");
        port
    }

    /// Moves `slot` (and its keys) from the node on `from` to the node on `to` the way
    /// `redis-cli --cluster reshard` does; `between` runs once the slot is MIGRATING and
    /// half of its keys have moved (so ASK redirects are live).
    pub fn migrate_slot(&self, slot: u16, from: u16, to: u16, mut between: impl FnMut()) {
        let (from_id, to_id) = (node_id(from), node_id(to));
        let s = slot.to_string();
        cli(to, &["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id]);
        cli(from, &["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id]);
        let keys_text = cli(from, &["CLUSTER", "GETKEYSINSLOT", &s, "100000"]);
        let keys: Vec<&str> = keys_text.lines().filter(|k| !k.is_empty()).collect();
        let (first, second) = keys.split_at(keys.len() / 2);
        let migrate = |batch: &[&str]| {
            if batch.is_empty() {
                return;
            }
            let port = to.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend_from_slice(batch);
            cli(from, &args);
        };
        migrate(first);
        between();
        migrate(second);
        for n in &self.nodes {
            cli(n.port, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]);
        }
    }

    /// The port of the node that owns `slot` now.
    pub fn owner_of(&self, slot: u16) -> u16 {
        // CLUSTER NODES lists each master's slot ranges after its 8th field.
        let nodes = cli(self.nodes[0].port, &["CLUSTER", "NODES"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            for range in fields.iter().skip(8) {
                let (a, b) = match range.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap_or(u16::MAX), b.parse().unwrap_or(0)),
                    None => {
                        let v = range.parse().unwrap_or(u16::MAX);
                        (v, v)
                    }
                };
                if a <= slot && slot <= b {
                    let addr = fields[1].split('@').next().unwrap_or("");
                    return addr
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                }
            }
        }
        panic!("no owner for slot {slot}");
    }
}
