//! The slot map: which master serves each hash slot, the replicas of each, the members
//! listed but not routed to; and what routing asks of it (a slot's owner, a replica
//! for a read, whether a waiting call still belongs where it waits, every master).
//!
//! Owns: reading and updating the map (a refresh replaces it whole, `-MOVED` and
//! `SMIGRATED` assign one slot). Must never: take another lock while holding its own.

use super::ClusterState;
use crate::config::Endpoint;

/// One node as the slot map lists it (see [`ClusterState::roles`]).
pub(crate) struct ListedNode {
    pub endpoint: Endpoint,
    pub is_master: bool,
    /// Inclusive slot ranges.
    pub slots: Vec<(u16, u16)>,
}

pub(super) struct SlotMap {
    /// Master endpoint (canonical) per shard, and replicas.
    pub(super) shards: Vec<(Endpoint, Vec<Endpoint>)>,
    pub(super) table: Vec<Option<u16>>,
    /// Members listed but not routed to (loading: a replica whose offset the cluster
    /// has not seen yet looks so for a while after it synced; mid-failover).
    pub(super) unrouted: Vec<Endpoint>,
}

impl SlotMap {
    /// The masters that own at least one slot, and whether some slot has no owner.
    pub(super) fn owners(&self) -> (Vec<Endpoint>, bool) {
        let mut owns = vec![false; self.shards.len()];
        let mut uncovered = false;
        for entry in &self.table {
            match entry.and_then(|i| owns.get_mut(i as usize)) {
                Some(o) => *o = true,
                None => uncovered = true,
            }
        }
        let owners = self
            .shards
            .iter()
            .zip(owns)
            .filter(|(_, owns)| *owns)
            .map(|(s, _)| s.0.clone())
            .collect();
        (owners, uncovered)
    }
}

impl ClusterState {
    /// Every master the map lists (owning slots or not).
    pub(crate) fn masters(&self) -> Vec<Endpoint> {
        self.map.read().shards.iter().map(|s| s.0.clone()).collect()
    }

    /// Every replica the map lists.
    pub(crate) fn replicas(&self) -> Vec<Endpoint> {
        let map = self.map.read();
        map.shards
            .iter()
            .flat_map(|s| s.1.iter().cloned())
            .collect()
    }

    /// Every member listed but not routed to (loading, or of a shard mid-failover):
    /// a command meant for every node goes to these too.
    pub(crate) fn unrouted(&self) -> Vec<Endpoint> {
        self.map.read().unrouted.clone()
    }

    /// Whether the map lists `endpoint` as a master.
    pub(crate) fn is_master(&self, endpoint: &Endpoint) -> bool {
        self.map.read().shards.iter().any(|s| s.0 == *endpoint)
    }

    /// Whether the map lists `endpoint` as a replica.
    pub(crate) fn is_replica(&self, endpoint: &Endpoint) -> bool {
        self.map
            .read()
            .shards
            .iter()
            .any(|s| s.1.contains(endpoint))
    }

    /// Every node the map lists: its role, its master's slot ranges (for a replica,
    /// the ones it copies).
    pub(crate) fn roles(&self) -> Vec<ListedNode> {
        let map = self.map.read();
        let mut ranges: Vec<Vec<(u16, u16)>> = vec![Vec::new(); map.shards.len()];
        for (slot, owner) in map.table.iter().enumerate() {
            let Some(list) = owner.and_then(|i| ranges.get_mut(i as usize)) else {
                continue;
            };
            let slot = slot as u16;
            match list.last_mut() {
                Some(last) if last.1 + 1 == slot => last.1 = slot,
                _ => list.push((slot, slot)),
            }
        }
        let mut out = Vec::new();
        for ((master, replicas), slots) in map.shards.iter().zip(ranges) {
            let listed = |endpoint: &Endpoint, is_master| ListedNode {
                endpoint: endpoint.clone(),
                is_master,
                slots: slots.clone(),
            };
            out.push(listed(master, true));
            out.extend(replicas.iter().map(|r| listed(r, false)));
        }
        out
    }

    /// The master serving `slot`, if the map knows one.
    pub(crate) fn master_for(&self, slot: u16) -> Option<Endpoint> {
        let map = self.map.read();
        let shard = (*map.table.get(slot as usize)?)?;
        map.shards.get(shard as usize).map(|s| s.0.clone())
    }

    /// Whether a call for `slot` (`None`: keyless) that was sent to `endpoint` still
    /// belongs there by the map as it is now: its owner or one of the owner's replicas
    /// (a keyless call: any master). An uncovered slot keeps it where it is.
    pub(crate) fn still_routes(&self, slot: Option<u16>, endpoint: &Endpoint) -> bool {
        let map = self.map.read();
        match slot {
            Some(slot) => match map.table.get(slot as usize).copied().flatten() {
                Some(shard) => map
                    .shards
                    .get(shard as usize)
                    .is_some_and(|(m, r)| m == endpoint || r.contains(endpoint)),
                None => true,
            },
            None => map.shards.is_empty() || map.shards.iter().any(|s| s.0 == *endpoint),
        }
    }

    /// A replica serving `slot` (spread by a rotating pick), else its master.
    pub(crate) fn replica_for(&self, slot: u16, pick: usize) -> Option<Endpoint> {
        let map = self.map.read();
        let shard = (*map.table.get(slot as usize)?)?;
        let (master, replicas) = map.shards.get(shard as usize)?;
        if replicas.is_empty() {
            return Some(master.clone());
        }
        replicas.get(pick % replicas.len()).cloned()
    }

    /// Any master (for keyless commands).
    pub(crate) fn any_master(&self, pick: usize) -> Option<Endpoint> {
        let map = self.map.read();
        let owners: Vec<&Endpoint> = map.shards.iter().map(|s| &s.0).collect();
        if owners.is_empty() {
            return None;
        }
        owners.get(pick % owners.len()).map(|e| (*e).clone())
    }

    /// Records that `slot` is served by `target` now (without asking for a refresh).
    pub(crate) fn assign(&self, slot: u16, target: &Endpoint) {
        let target = self.canonical(target);
        let mut map = self.map.write();
        let shard = match map.shards.iter().position(|s| s.0 == target) {
            Some(i) => i,
            None => {
                map.shards.push((target, Vec::new()));
                map.shards.len() - 1
            }
        };
        if let Some(entry) = map.table.get_mut(slot as usize) {
            *entry = Some(shard as u16);
        }
    }

    /// The masters that own slots now, and whether some slot has no owner.
    pub(super) fn owners(&self) -> (Vec<Endpoint>, bool) {
        self.map.read().owners()
    }
}
