//! Redis Cluster: the slot map, the identity map (a node answers to its address and
//! its announced hostname: one node), topology refresh, redirects and retirement.
//!
//! Owns: which node serves a slot. Must never: let a burst of MOVED replies cause a
//! burst of topology queries (refreshes are coalesced), or count our own traffic
//! (handshakes, heartbeats, topology queries) as work that keeps a node from retiring.
//!
//! Failovers: while a slot's owner is unreachable the topology is re-read with a short
//! back-off until the cluster names another owner or the node answers again (see
//! `refresh`); callers waiting in a dead owner's backlog are woken by every refresh
//! and re-routed when their slot moved; a node that has just become an owner is
//! dialled at once rather than after its reconnect back-off.
//!
//! Where a command goes (`route`) follows the command table a node publishes
//! (`command_table`): keys found for known commands, a keyless command to any master
//! or to every master or node by its request policy (`fan_out`), replies combined by
//! its response policy (`aggregate`), keys across slots split (`split`). Pub/sub in
//! `subscriptions`; the map itself in `slot_map`; what is asked of a node in `queries`.

mod aggregate;
mod cluster_router;
mod command_table;
mod fan_out;
pub(crate) mod hash_slot;
mod queries;
mod refresh;
mod route;
mod slot_map;
mod split;
mod subscriptions;
pub(crate) mod topology;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

pub(crate) use cluster_router::ClusterRouter;
use command_table::CommandTable;
pub use hash_slot::{key_slot, SLOT_COUNT};
use queries::load_command_table;
pub(crate) use queries::query_topology;
use slot_map::SlotMap;
pub(crate) use subscriptions::{reroute_subscriptions, subscriptions_for};

use super::deployment::Deployment;
use super::node::Node;
use crate::config::Endpoint;
use crate::pubsub::Key;
use topology::Topology;

/// A node absent from this many consecutive topologies has left the cluster.
pub(crate) const ABSENT_REFRESHES_BEFORE_RETIRING: u32 = 3;
/// The longest a retiring node waits for caller work in flight before it is closed.
pub(crate) const RETIREMENT_DRAIN: Duration = Duration::from_secs(5);
/// Refreshes that try to read a node's command table before the built-in one is kept
/// for good (a server whose ACL refuses `COMMAND` would refuse it every time).
const COMMAND_TABLE_ATTEMPTS: u32 = 3;

/// Counters for diagnostics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterStats {
    /// `-MOVED` replies followed.
    pub moved: u64,
    /// `-ASK` replies followed.
    pub ask: u64,
    /// `-TRYAGAIN` / `-CLUSTERDOWN` replies waited out.
    pub try_again: u64,
    /// Topology refreshes completed.
    pub refreshes: u64,
    /// Nodes retired after leaving the cluster.
    pub retired: u64,
    /// `SMIGRATED` triplets whose source was the node that sent them (acted on).
    pub slot_migrations: u64,
    /// `SMIGRATED` triplets about other nodes' slots (ignored: otherwise the whole
    /// fleet re-reads the topology whenever any shard moves).
    pub slot_migrations_ignored: u64,
}

pub(crate) struct ClusterState {
    map: RwLock<SlotMap>,
    /// Alias (any name a node answers to) to its canonical endpoint.
    aliases: RwLock<HashMap<Endpoint, Endpoint>>,
    refresh_requested: AtomicBool,
    /// When the refresh an `SMIGRATED` asked for starts (jittered); set once until it
    /// starts, so a burst of notifications makes one refresh.
    migration_refresh_at: Mutex<Option<Instant>>,
    plan: Mutex<refresh::RefreshPlan>,
    /// When each node was last dialled early for having become an owner.
    hurried: Mutex<HashMap<Endpoint, Instant>>,
    absent: Mutex<HashMap<Endpoint, u32>>,
    /// Every node some topology listed: one never listed was added by a redirect or a
    /// notification alone (an `SMIGRATED` target, perhaps an address only the cluster's
    /// insides can reach).
    listed_ever: Mutex<std::collections::HashSet<Endpoint>>,
    retiring: Mutex<Vec<(Arc<Node>, Instant)>>,
    /// Which node carries each sharded (and plain) subscription.
    sub_routes: Mutex<HashMap<Key, Endpoint>>,
    /// Which masters carry each keyspace-notification subscription (held on every
    /// master: see `subscriptions`).
    spread_routes: Mutex<HashMap<Key, Vec<Endpoint>>>,
    moved: AtomicU64,
    ask: AtomicU64,
    try_again: AtomicU64,
    refreshes: AtomicU64,
    retired: AtomicU64,
    slot_migrations: AtomicU64,
    slot_migrations_ignored: AtomicU64,
    pick: AtomicU64,
    /// A topology worker is under way (one at a time).
    refreshing: AtomicBool,
    /// Key positions and request/response policies: the built-in table until a node's
    /// own is read.
    commands: RwLock<Arc<CommandTable>>,
    /// Attempts left to read a node's command table (a server that refuses it keeps
    /// the built-in one).
    command_table_attempts: AtomicU32,
}

impl ClusterState {
    pub(crate) fn new() -> ClusterState {
        ClusterState {
            map: RwLock::new(SlotMap {
                shards: Vec::new(),
                table: vec![None; SLOT_COUNT as usize],
                unrouted: Vec::new(),
            }),
            aliases: RwLock::new(HashMap::new()),
            refresh_requested: AtomicBool::new(false),
            refreshing: AtomicBool::new(false),

            migration_refresh_at: Mutex::new(None),
            plan: Mutex::new(refresh::RefreshPlan::default()),
            hurried: Mutex::new(HashMap::new()),
            absent: Mutex::new(HashMap::new()),
            listed_ever: Mutex::new(std::collections::HashSet::new()),
            retiring: Mutex::new(Vec::new()),
            sub_routes: Mutex::new(HashMap::new()),
            spread_routes: Mutex::new(HashMap::new()),
            moved: AtomicU64::new(0),
            ask: AtomicU64::new(0),
            try_again: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
            retired: AtomicU64::new(0),
            slot_migrations: AtomicU64::new(0),
            slot_migrations_ignored: AtomicU64::new(0),
            pick: AtomicU64::new(0),
            commands: RwLock::new(CommandTable::builtin()),
            command_table_attempts: AtomicU32::new(COMMAND_TABLE_ATTEMPTS),
        }
    }

    /// The command table routing goes by now.
    pub(crate) fn command_table(&self) -> Arc<CommandTable> {
        self.commands.read().clone()
    }

    /// A rotating number, to spread keyless commands and replica reads.
    pub(crate) fn next_pick(&self) -> usize {
        self.pick.fetch_add(1, Ordering::Relaxed) as usize
    }

    pub(crate) fn stats(&self) -> ClusterStats {
        ClusterStats {
            moved: self.moved.load(Ordering::Relaxed),
            ask: self.ask.load(Ordering::Relaxed),
            try_again: self.try_again.load(Ordering::Relaxed),
            refreshes: self.refreshes.load(Ordering::Relaxed),
            retired: self.retired.load(Ordering::Relaxed),
            slot_migrations: self.slot_migrations.load(Ordering::Relaxed),
            slot_migrations_ignored: self.slot_migrations_ignored.load(Ordering::Relaxed),
        }
    }

    /// The canonical endpoint of a name a node answers to.
    pub(crate) fn canonical(&self, endpoint: &Endpoint) -> Endpoint {
        self.aliases
            .read()
            .get(endpoint)
            .cloned()
            .unwrap_or_else(|| endpoint.clone())
    }

    /// Follows a `-MOVED`: the slot now belongs to `target`; a refresh is requested
    /// (coalesced with any other) to learn the rest of the change.
    pub(crate) fn moved(&self, slot: u16, target: &Endpoint) {
        self.moved.fetch_add(1, Ordering::Relaxed);
        self.assign(slot, target);
        self.request_refresh();
    }

    pub(crate) fn asked(&self) {
        self.ask.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn tried_again(&self) {
        self.try_again.fetch_add(1, Ordering::Relaxed);
    }

    /// Asks for a refresh; many requests before it starts make one refresh.
    pub(crate) fn request_refresh(&self) {
        self.refresh_requested.store(true, Ordering::Release);
    }

    /// Counts `SMIGRATED` triplets acted on (`mine`) and set aside as about other
    /// nodes (`ignored`), for [`ClusterStats`].
    pub(crate) fn count_slot_migrations(&self, mine: usize, ignored: usize) {
        self.slot_migrations
            .fetch_add(mine as u64, Ordering::Relaxed);
        self.slot_migrations_ignored
            .fetch_add(ignored as u64, Ordering::Relaxed);
    }

    /// Schedules the refresh an `SMIGRATED` asks for, `delay` from now, unless one is
    /// already pending (the burst coalesces before the delay).
    pub(crate) fn schedule_migration_refresh(&self, delay: Duration) {
        let mut at = self.migration_refresh_at.lock();
        if at.is_none() {
            *at = Some(Instant::now() + delay);
        }
    }

    /// Claims the one background refresh; `false` when one is under way already.
    pub(crate) fn begin_refresh(&self) -> bool {
        !self.refreshing.swap(true, Ordering::AcqRel)
    }

    /// Releases the claim of [`ClusterState::begin_refresh`].
    pub(crate) fn end_refresh(&self) {
        self.refreshing.store(false, Ordering::Release);
    }

    /// When the next refresh is due (at or before `now`: now), given whether the map is
    /// unsettled now (see `refresh::RefreshPlan`).
    pub(crate) fn next_refresh(&self, now: Instant, unsettled: bool) -> Instant {
        let migration_at = *self.migration_refresh_at.lock();
        let mut plan = self.plan.lock();
        match plan.observe(now, unsettled) {
            Some(true) => log::debug!(
                "a slot owner is unreachable or a slot has none: re-reading the topology until that changes"
            ),
            Some(false) => log::debug!("every slot has a reachable owner again"),
            None => {}
        }
        plan.next_due(
            now,
            self.refresh_requested.load(Ordering::Acquire),
            migration_at,
        )
    }

    /// Whether `endpoint` may be dialled early now (and records that it is).
    fn claim_hurry(&self, endpoint: &Endpoint, now: Instant) -> bool {
        let mut hurried = self.hurried.lock();
        if !refresh::may_hurry(hurried.get(endpoint).copied(), now) {
            return false;
        }
        hurried.insert(endpoint.clone(), now);
        true
    }

    /// Installs a topology: slot map, identity map, nodes to make; counts absences
    /// and returns the nodes that have now left the cluster.
    pub(crate) fn apply(&self, topology: &Topology, known: &[Endpoint]) -> Vec<Endpoint> {
        let mut aliases = HashMap::new();
        for node in topology.nodes() {
            for alias in &node.aliases {
                aliases.insert(alias.clone(), node.endpoint.clone());
            }
        }
        *self.aliases.write() = aliases;
        let shards = topology
            .shards
            .iter()
            .map(|s| {
                (
                    s.master.endpoint.clone(),
                    s.replicas.iter().map(|r| r.endpoint.clone()).collect(),
                )
            })
            .collect();
        *self.map.write() = SlotMap {
            shards,
            table: topology.slot_table(),
            unrouted: topology.unrouted.clone(),
        };
        self.refreshes.fetch_add(1, Ordering::Relaxed);
        // A node still listed (even without slots, even failed) is kept; one missing
        // from several topologies in a row has left.
        let listed: Vec<&Endpoint> = topology
            .nodes()
            .map(|n| &n.endpoint)
            .chain(&topology.unrouted)
            .collect();
        self.listed_ever
            .lock()
            .extend(listed.iter().map(|e| (*e).clone()));
        let mut absent = self.absent.lock();
        let mut gone = Vec::new();
        for endpoint in known {
            if listed.contains(&endpoint) {
                absent.remove(endpoint);
                continue;
            }
            let count = absent.entry(endpoint.clone()).or_insert(0);
            *count += 1;
            if *count >= ABSENT_REFRESHES_BEFORE_RETIRING {
                gone.push(endpoint.clone());
                absent.remove(endpoint);
            }
        }
        gone
    }

    /// Whether some topology ever listed `endpoint`.
    pub(crate) fn ever_listed(&self, endpoint: &Endpoint) -> bool {
        self.listed_ever.lock().contains(endpoint)
    }

    /// Starts retiring a node: it is closed once no caller work is in flight on it,
    /// or when the drain bound passes.
    pub(crate) fn retire(&self, node: Arc<Node>) {
        log::info!("{}: left the cluster; retiring", node.endpoint);
        self.retiring
            .lock()
            .push((node, Instant::now() + RETIREMENT_DRAIN));
    }

    /// Closes retiring nodes that are idle (caller work only) or out of time; returns
    /// their endpoints so the deployment forgets them.
    pub(crate) fn finish_retirements(&self) -> Vec<Endpoint> {
        let now = Instant::now();
        let mut retiring = self.retiring.lock();
        let mut done = Vec::new();
        retiring.retain(|(node, deadline)| {
            if node.caller_inflight() == 0 || now >= *deadline {
                node.close();
                done.push(node.endpoint.clone());
                false
            } else {
                true
            }
        });
        self.retired.fetch_add(done.len() as u64, Ordering::Relaxed);
        done
    }
}

/// One refresh pass, run by the supervisor: ask a live node, apply, make new nodes,
/// start retiring the ones that left, and move sharded subscriptions to their owners.
pub(crate) fn refresh(deployment: &Deployment, state: &ClusterState) -> bool {
    // Released when the refresh *starts*: requests made during it cause one more.
    state.refresh_requested.store(false, Ordering::Release);
    *state.migration_refresh_at.lock() = None;
    state.plan.lock().started(Instant::now());
    let timeout = deployment.options.command_timeout;
    let tls = deployment.options.tls.is_some();
    let nodes = deployment.nodes();
    let mut topology = None;
    for node in nodes.iter().filter(|n| n.current().is_some()) {
        match query_topology(node, timeout, tls) {
            Ok(t) if !t.shards.is_empty() => {
                topology = Some(t);
                load_command_table(state, node, timeout);
                break;
            }
            Ok(_) => log::debug!("{}: empty cluster topology", node.endpoint),
            Err(e) => log::debug!("{}: topology query failed: {e}", node.endpoint),
        }
    }
    let Some(topology) = topology else {
        log::debug!("topology refresh: no node answered");
        // Subscriptions whose slots a notification moved go where it said, since no
        // node could tell us better.
        reroute_subscriptions(deployment, state);
        return false;
    };
    if log::log_enabled!(log::Level::Debug) {
        let shards: Vec<String> = topology
            .shards
            .iter()
            .map(|s| {
                format!(
                    "{}+{}r/{}",
                    s.master.endpoint,
                    s.replicas.len(),
                    s.slots.len()
                )
            })
            .collect();
        log::debug!("topology refresh: {}", shards.join(" "));
    }
    let known: Vec<Endpoint> = nodes.iter().map(|n| n.endpoint.clone()).collect();
    let (owners_before, _) = state.owners();
    let gone = state.apply(&topology, &known);
    for info in topology.nodes() {
        if let Err(e) = deployment.node_for(&info.endpoint) {
            log::warn!("{}: cannot add node: {e}", info.endpoint);
        }
    }
    // A node that has just become an owner (a promoted replica, a restarted master
    // failed back to) is dialled now; callers waiting on a node that no longer owns
    // their slot are woken to go where it went.
    let (owners, _) = state.owners();
    for endpoint in owners.iter().filter(|o| !owners_before.contains(o)) {
        if let Some(node) = deployment.find(endpoint) {
            hurry_reconnect(deployment, state, &node);
        }
    }
    for node in deployment.nodes() {
        if node.current().is_none() {
            node.wake_backlog();
        }
    }
    for endpoint in gone {
        if let Some(node) = deployment.find(&endpoint) {
            state.retire(node);
        }
    }
    // A node no topology ever listed, that we cannot reach either (an `SMIGRATED`
    // target named by an internal address): nothing routes to it any more, so it is
    // not redialled until three periodic refreshes (90 s) have missed it.
    for node in deployment.nodes() {
        if !state.ever_listed(&node.endpoint) && node.current().is_none() {
            log::debug!(
                "{}: never in the topology and unreachable: retired",
                node.endpoint
            );
            state.retire(node);
        }
    }
    reroute_subscriptions(deployment, state);
    true
}

/// When the next refresh is due, judging now whether the map is unsettled: a slot
/// without an owner, or an owner without a live connection.
pub(crate) fn next_refresh(deployment: &Deployment, state: &ClusterState) -> Instant {
    let (owners, uncovered) = state.owners();
    let unsettled = uncovered
        || owners.iter().any(|e| {
            deployment
                .find(e)
                .is_none_or(|n| n.current().is_none() && !n.is_closed())
        });
    state.next_refresh(Instant::now(), unsettled)
}

/// Dials `node` at the supervisor's next pass instead of after its reconnect back-off,
/// when it has no connection: it has just become the owner of slots, and callers are
/// about to wait for it. Rate-limited per node, so a stale redirect to a dead node
/// cannot make the supervisor dial it in a loop.
pub(crate) fn hurry_reconnect(deployment: &Deployment, state: &ClusterState, node: &Node) {
    if node.current().is_some() || node.is_closed() {
        return;
    }
    if !state.claim_hurry(&node.endpoint, Instant::now()) {
        return;
    }
    node.interactive.reconnect.lock().next_at = None;
    log::debug!("{}: now a slot owner; reconnecting at once", node.endpoint);
    let _ = deployment.wake.try_send(super::supervisor::Wake::NodeAdded);
}

#[cfg(test)]
mod tests {
    use super::topology::{NodeInfo, Shard, Topology};
    use super::*;

    fn ep(port: u16) -> Endpoint {
        Endpoint::new("10.0.0.1", port)
    }

    fn node(port: u16, is_master: bool) -> NodeInfo {
        NodeInfo {
            id: None,
            endpoint: ep(port),
            aliases: Vec::new(),
            is_master,
        }
    }

    /// Two shards: 7000 (replica 7001) owns 0-8191; 7002 (no replica) owns 8192-16000;
    /// 16001-16383 are uncovered; 7003 is failed.
    fn state() -> ClusterState {
        let state = ClusterState::new();
        let topology = Topology {
            shards: vec![
                Shard {
                    slots: vec![(0, 8191)],
                    master: node(7000, true),
                    replicas: vec![node(7001, false)],
                },
                Shard {
                    slots: vec![(8192, 16000)],
                    master: node(7002, true),
                    replicas: Vec::new(),
                },
            ],
            unrouted: vec![ep(7003)],
        };
        state.apply(&topology, &[]);
        state
    }

    #[test]
    fn owners_and_uncovered_slots() {
        let state = state();
        assert_eq!(state.owners(), (vec![ep(7000), ep(7002)], true));
        // Covering the rest settles it.
        for slot in 16001..SLOT_COUNT {
            state.assign(slot, &ep(7002));
        }
        assert_eq!(state.owners(), (vec![ep(7000), ep(7002)], false));
        // A master that lost its last slot is no longer an owner.
        for slot in 0..8192 {
            state.assign(slot, &ep(7002));
        }
        assert_eq!(state.owners(), (vec![ep(7002)], false));
    }

    #[test]
    fn whether_a_waiting_call_still_belongs_where_it_waits() {
        let state = state();
        let table = [
            // (slot, where it waits, still routed there)
            (Some(5), 7000, true),
            (Some(5), 7001, true), // a replica read
            (Some(5), 7002, false),
            (Some(9000), 7000, false),
            (Some(16100), 7000, true), // uncovered: stay
            (None, 7002, true),        // keyless: any master
            (None, 7001, false),
        ];
        for (slot, port, want) in table {
            assert_eq!(
                state.still_routes(slot, &ep(port)),
                want,
                "{slot:?} on {port}"
            );
        }
        // The promotion: 7001 takes slot 5; a call waiting on 7000 moves.
        state.assign(5, &ep(7001));
        assert!(!state.still_routes(Some(5), &ep(7000)));
        assert!(state.still_routes(Some(5), &ep(7001)));
    }

    #[test]
    fn an_unrouted_node_is_not_retired_and_a_forgotten_one_is() {
        let state = ClusterState::new();
        let known = [ep(7000), ep(7003), ep(7009)];
        let topology = Topology {
            shards: vec![Shard {
                slots: vec![(0, 16383)],
                master: node(7000, true),
                replicas: Vec::new(),
            }],
            unrouted: vec![ep(7003)],
        };
        let mut gone = Vec::new();
        for _ in 0..ABSENT_REFRESHES_BEFORE_RETIRING {
            gone.extend(state.apply(&topology, &known));
        }
        assert_eq!(gone, vec![ep(7009)]);
    }

    #[test]
    fn hurrying_is_claimed_once_a_second_per_node() {
        let state = ClusterState::new();
        let now = Instant::now();
        assert!(state.claim_hurry(&ep(7000), now));
        assert!(!state.claim_hurry(&ep(7000), now + Duration::from_millis(500)));
        assert!(state.claim_hurry(&ep(7001), now));
        assert!(state.claim_hurry(&ep(7000), now + Duration::from_secs(1)));
    }
}
