//! §7: what an `SMIGRATED` does to a cluster client (its slot map and sharded
//! subscriptions). Run by the supervisor with the
//! triplets a node's connections received (reader threads only queue them).
//!
//! - Only triplets whose *source* is the node that sent them count (matched through
//!   the identity map: a node answers to its address and its announced hostname).
//!   Every node announces its own losses; reacting to the others' would make the
//!   whole fleet re-read the topology whenever any shard moves.
//! - The slots are assigned to their target at once when a topology has listed that
//!   target (a node the cluster publishes, so one the client can dial); a target no
//!   topology named (perhaps an address only the cluster's insides can reach) gets
//!   nothing until a topology confirms it: meanwhile the old owner's `-MOVED` names the
//!   address the cluster publishes. Either way the topology is re-read after a jitter
//!   of up to 1 s (not configurable), coalesced: the pending refresh is released when
//!   it starts, so ten notifications make one refresh.
//! - Sharded subscriptions in those slots move after the jitter, with that refresh, by
//!   the topology the cluster publishes: the address a `-MOVED` from the old owner
//!   would name, which the client can dial, where the triplet's target may be an
//!   internal address it cannot. Only when no node answers the refresh do they go to
//!   the target the triplet names. It is a fallback: the server also ends them with an
//!   unsolicited `SUNSUBSCRIBE`, whose path may already have moved them; only a
//!   subscription still attached to this node (the notification overtook the
//!   `SUNSUBSCRIBE`) or to none (stranded) moves here, once. Ordinary pub/sub is not
//!   slot-bound and stays put.

use std::time::Duration;

use crate::client::cluster::ClusterState;
use crate::client::supervisor::jitter_fraction;
use crate::client::Node;
use crate::config::Endpoint;
use crate::maintenance::SlotMigration;

/// The longest delay before the refresh an `SMIGRATED` asks for.
const REFRESH_JITTER: Duration = Duration::from_secs(1);

/// Acts on the `SMIGRATED` triplets `node` received.
pub(crate) fn on_smigrated(state: &ClusterState, node: &Node, migrations: Vec<SlotMigration>) {
    apply(state, &node.endpoint, migrations);
}

/// Acts on the triplets the node at `receiver` sent.
fn apply(state: &ClusterState, receiver: &Endpoint, migrations: Vec<SlotMigration>) {
    let me = state.canonical(receiver);
    let (mine, others): (Vec<SlotMigration>, Vec<SlotMigration>) = migrations
        .into_iter()
        .partition(|m| state.canonical(&m.source) == me);
    if !others.is_empty() {
        log::debug!(
            "{me}: {} SMIGRATED triplets about other nodes ignored",
            others.len()
        );
        state.count_slot_migrations(0, others.len());
    }
    if mine.is_empty() {
        return;
    }
    state.count_slot_migrations(mine.len(), 0);
    for m in &mine {
        let target = state.canonical(&m.target);
        if !state.ever_listed(&target) {
            // Never in a topology: perhaps an address the client cannot dial, and
            // commands for these slots would wait for it. The refresh decides.
            log::info!(
                "{me}: slots {} moved to {}, a node no topology listed: kept until the topology confirms it",
                m.slots_text,
                m.target
            );
            continue;
        }
        log::info!("{me}: slots {} moved to {}", m.slots_text, m.target);
        for range in &m.slots {
            for slot in range.clone() {
                state.assign(slot, &m.target);
            }
        }
    }
    // The jittered refresh moves the sharded subscriptions of those slots (see above).
    state.schedule_migration_refresh(REFRESH_JITTER.mul_f64(jitter_fraction()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::cluster::topology::{NodeInfo, Shard, Topology};

    fn ep(port: u16) -> Endpoint {
        Endpoint::new("10.0.0.1", port)
    }

    fn triplet(
        source: u16,
        target: Endpoint,
        slots: std::ops::RangeInclusive<u16>,
    ) -> SlotMigration {
        SlotMigration {
            source: ep(source),
            target,
            slots_text: format!("{}-{}", slots.start(), slots.end()),
            slots: vec![slots],
        }
    }

    #[test]
    fn slots_go_at_once_only_to_a_target_a_topology_listed() {
        let state = ClusterState::new();
        let master = |port, slots| Shard {
            slots,
            master: NodeInfo {
                id: None,
                endpoint: ep(port),
                aliases: Vec::new(),
                is_master: true,
            },
            replicas: Vec::new(),
        };
        state.apply(
            &Topology {
                shards: vec![
                    master(7000, vec![(0, 8191)]),
                    master(7001, vec![(8192, 16383)]),
                ],
                unrouted: Vec::new(),
            },
            &[],
        );
        // To a listed node: at once.
        apply(&state, &ep(7000), vec![triplet(7000, ep(7001), 0..=99)]);
        assert_eq!(state.master_for(50), Some(ep(7001)));
        // To an address no topology named: the map waits for the topology.
        let internal = Endpoint::new("192.168.77.1", 7002);
        apply(&state, &ep(7000), vec![triplet(7000, internal, 100..=199)]);
        assert_eq!(state.master_for(150), Some(ep(7000)));
        assert_eq!(state.stats().slot_migrations, 2);
    }
}
