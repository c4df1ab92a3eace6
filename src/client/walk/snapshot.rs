//! What a node says about itself before and after a run of `SCAN`: its own line of
//! `CLUSTER NODES` (role, config epoch, slots, migrations in progress) and the
//! `run_id` of `INFO server`.
//!
//! Pure: reply texts in, a snapshot out.

use crate::error::{Error, ErrorKind, Result};

/// A node's view of itself at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeSnapshot {
    pub is_master: bool,
    pub epoch: u64,
    /// Slot ranges it owns, inclusive.
    pub slots: Vec<(u16, u16)>,
    /// Slots it is migrating away or importing.
    pub migrating: Vec<u16>,
    /// The server process.
    pub run_id: String,
}

impl NodeSnapshot {
    pub(crate) fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(a, b)| a <= slot && slot <= b)
    }

    pub(crate) fn moving(&self, slot: u16) -> bool {
        self.migrating.contains(&slot)
    }

    /// A snapshot of a server outside a cluster: its process alone.
    pub(crate) fn of_server(info: &str) -> Result<NodeSnapshot> {
        Ok(NodeSnapshot {
            run_id: run_id(info)?,
            ..NodeSnapshot::default()
        })
    }

    /// A cluster node's snapshot from its `CLUSTER NODES` and `INFO server` replies.
    pub(crate) fn of_cluster_node(nodes: &str, info: &str) -> Result<NodeSnapshot> {
        let bad = |what: &str| Error::new(ErrorKind::Protocol, format!("CLUSTER NODES: {what}"));
        let line = nodes
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(2)
                    .is_some_and(|f| f.contains("myself"))
            })
            .ok_or_else(|| bad("no line for the node itself"))?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 {
            return Err(bad("a short line"));
        }
        let is_master = fields[2].split(',').any(|f| f == "master");
        let epoch = fields[6]
            .parse()
            .map_err(|_| bad("a config epoch that is not a number"))?;
        let mut slots = Vec::new();
        let mut migrating = Vec::new();
        for field in &fields[8..] {
            if let Some(inner) = field.strip_prefix('[') {
                // `[slot->-id]` (migrating away) or `[slot-<-id]` (importing).
                let slot = inner
                    .split("->-")
                    .next()
                    .and_then(|s| s.split("-<-").next());
                if let Some(slot) = slot.and_then(|s| s.parse().ok()) {
                    migrating.push(slot);
                }
                continue;
            }
            let (a, b) = field.split_once('-').unwrap_or((field, field));
            match (a.parse::<u16>(), b.parse::<u16>()) {
                (Ok(a), Ok(b)) if a <= b => slots.push((a, b)),
                _ => return Err(bad("a slot range that cannot be read")),
            }
        }
        Ok(NodeSnapshot {
            is_master,
            epoch,
            slots,
            migrating,
            run_id: run_id(info)?,
        })
    }
}

fn run_id(info: &str) -> Result<String> {
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .map(|id| id.trim().to_string())
        .ok_or_else(|| Error::new(ErrorKind::Protocol, "INFO server has no run_id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\ntcp_port:7000\r\n";

    #[test]
    fn a_cluster_node_reads_its_own_line() {
        let nodes = "\
07c3 127.0.0.1:30002@40002 master - 0 1426238316232 2 connected 5461-10922\n\
67ed 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 5462 [5463->-292f] [5464-<-e7d1]\n\
292f 127.0.0.1:30003@40003 slave 07c3 0 1426238318243 3 connected\n";
        let s = NodeSnapshot::of_cluster_node(nodes, INFO).unwrap();
        assert!(s.is_master);
        assert_eq!(s.epoch, 1);
        assert_eq!(s.slots, vec![(0, 5460), (5462, 5462)]);
        assert_eq!(s.migrating, vec![5463, 5464]);
        assert_eq!(s.run_id, "abc123");
        assert!(s.owns(5460) && s.owns(5462) && !s.owns(5461));
        assert!(s.moving(5463) && !s.moving(5462));
    }

    #[test]
    fn a_replica_and_broken_replies() {
        let replica = "292f 127.0.0.1:30003@40003 myself,slave 07c3 0 0 3 connected\n";
        let s = NodeSnapshot::of_cluster_node(replica, INFO).unwrap();
        assert!(!s.is_master && s.slots.is_empty());
        for bad in [
            "",
            "67ed 127.0.0.1:1@2 master - 0 0 1 connected\n",
            "67ed 127.0.0.1:1@2 myself,master - 0 0 x connected\n",
            "67ed 127.0.0.1:1@2 myself,master - 0 0 1 connected 9-3\n",
        ] {
            assert!(NodeSnapshot::of_cluster_node(bad, INFO).is_err(), "{bad}");
        }
        assert!(NodeSnapshot::of_cluster_node(replica, "# Server\r\n").is_err());
        assert_eq!(NodeSnapshot::of_server(INFO).unwrap().run_id, "abc123");
    }
}
