//! §7: what an `SMIGRATED` does to a cluster client (its slot map and sharded
//! subscriptions). Run by the supervisor with the
//! triplets a node's connections received (reader threads only queue them).
//!
//! - Only triplets whose *source* is the node that sent them count (matched through
//!   the identity map: a node answers to its address and its announced hostname).
//!   Every node announces its own losses; reacting to the others' would make the
//!   whole fleet re-read the topology whenever any shard moves.
//! - The slots are assigned to their target at once, and the topology is re-read
//!   after a jitter of up to 1 s (not configurable), coalesced: the pending refresh is
//!   released when it starts, so ten notifications make one refresh.
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
use crate::maintenance::SlotMigration;

/// The longest delay before the refresh an `SMIGRATED` asks for.
const REFRESH_JITTER: Duration = Duration::from_secs(1);

/// Acts on the `SMIGRATED` triplets `node` received.
pub(crate) fn on_smigrated(state: &ClusterState, node: &Node, migrations: Vec<SlotMigration>) {
    let me = state.canonical(&node.endpoint);
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
