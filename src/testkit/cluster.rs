//! `FakeCluster`: several fake nodes sharing one slot map, each with its own store
//! holding only its slots' keys; `-MOVED`, `-CROSSSLOT`, `-ASK` with `ASKING` during a
//! migration, removing a node the way `CLUSTER FORGET` does, adding one; over plain TCP
//! or TLS (every node's certificate from one issuer). The `CLUSTER` commands that show
//! the slot map are [`cluster_cmds`](super::cluster_cmds)'.
//!
//! Owns: the slot map, migrations and the redirect decision. Must never: take a node's
//! store lock while holding the topology lock (the order is store, then topology).

use std::io;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use super::maintenance::{self, Notification};
use super::reply::{err, Reply};
use super::rng;
use super::server::ServerInner;
use super::session::Session;
use super::slots::{self, key_slot, SLOTS};
use super::store::Dbs;
use super::table::{Spec, SHARD_CHANNELS};
use super::tls::FakeIssuer;
use super::FakeServer;

/// One node of the slot map.
pub(crate) struct NodeEntry {
    pub id: String,
    pub addr: SocketAddr,
    server: Weak<ServerInner>,
    pub removed: bool,
    /// Its config epoch, as `CLUSTER NODES` shows it: raised past every other when it
    /// takes slots over (as `CLUSTER SETSLOT ... NODE` does on the importing node).
    pub epoch: u64,
}

/// A slot migration in progress.
#[derive(Clone)]
pub(crate) struct Migration {
    pub slots: RangeInclusive<u16>,
    pub from: usize,
    pub to: usize,
    announce: bool,
}

/// The slot map: an owner per slot, the nodes, the migration in progress.
pub(crate) struct Topology {
    pub slots: Vec<Option<usize>>,
    pub nodes: Vec<NodeEntry>,
    pub migration: Option<Migration>,
}

/// What the nodes of one fake cluster share.
pub(crate) struct ClusterState {
    pub topo: Mutex<Topology>,
    /// The deployment's one sequence counter for notifications.
    pub seq: Arc<AtomicU64>,
    /// Migrations end without the unsolicited `sunsubscribe` (a client's fallback).
    quiet_sunsubscribe: std::sync::atomic::AtomicBool,
}

impl ClusterState {
    /// The servers of nodes still in the cluster.
    pub(crate) fn live_servers(&self) -> Vec<Arc<ServerInner>> {
        self.topo
            .lock()
            .nodes
            .iter()
            .filter(|n| !n.removed)
            .filter_map(|n| n.server.upgrade())
            .collect()
    }
}

/// A node's link to its cluster.
#[derive(Clone)]
pub(crate) struct ClusterLink {
    pub state: Arc<ClusterState>,
    pub index: usize,
}

fn node_id() -> String {
    format!(
        "{:016x}{:016x}{:08x}",
        rng::next(),
        rng::next(),
        rng::next() as u32
    )
}

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// The cluster redirect for a request, if any (`MOVED`, `ASK`, `CROSSSLOT`,
/// `TRYAGAIN`, `CLUSTERDOWN`). Runs with the node's store locked, so "is the key
/// still here" and the command that follows see the same data.
pub(crate) fn redirect(
    session: &Session,
    spec: &Spec,
    args: &[Vec<u8>],
    dbs: &mut MutexGuard<'_, Dbs>,
    now: Instant,
) -> Option<Reply> {
    let link = session.server.cluster.get()?;
    let keys = spec.key_args(args);
    let first = keys.first()?;
    let slot = key_slot(first);
    if keys.iter().any(|k| key_slot(k) != slot) {
        return Some(err(CROSSSLOT));
    }
    let topo = link.state.topo.lock();
    let me = link.index;
    let migration = topo.migration.as_ref().filter(|m| m.slots.contains(&slot));
    match topo.slots[slot as usize] {
        None => Some(err("CLUSTERDOWN Hash slot not served")),
        Some(owner) if owner == me => {
            let m = migration.filter(|m| m.from == me && !spec.has(SHARD_CHANNELS))?;
            let db = &mut dbs.dbs[0];
            let present = keys.iter().filter(|k| db.exists(k, now)).count();
            if present == keys.len() {
                None
            } else if present == 0 {
                let target = topo.nodes[m.to].addr;
                Some(err(format!("ASK {slot} {target}")))
            } else {
                Some(err(
                    "TRYAGAIN Multiple keys request during rehashing of slot",
                ))
            }
        }
        Some(owner) => {
            if session.asking && migration.is_some_and(|m| m.to == me) {
                return None;
            }
            Some(err(format!("MOVED {slot} {}", topo.nodes[owner].addr)))
        }
    }
}

/// A fake Redis Cluster of masters on 127.0.0.1 (no replicas), sharing one slot map.
/// Over TLS with [`start_tls`](Self::start_tls) or
/// [`start_with_issuer`](Self::start_with_issuer): every node (added ones too) serves
/// a certificate from the one issuer, so redirects and handoffs between nodes verify.
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use resilient_redis::testkit::{key_slot, FakeCluster};
/// let cluster = FakeCluster::start(3)?;
/// let owner = cluster.slot_owner(key_slot(b"foo")).unwrap();
/// assert_eq!(owner, 2); // slot 12182 is in the third of three even splits
/// # }
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct FakeCluster {
    state: Arc<ClusterState>,
    nodes: Vec<FakeServer>,
    issuer: Option<FakeIssuer>,
}

impl std::fmt::Debug for FakeCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeCluster")
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

impl FakeCluster {
    /// Starts `masters` nodes (at least 1) with the 16384 slots split evenly, in order.
    pub fn start(masters: usize) -> io::Result<FakeCluster> {
        FakeCluster::start_nodes(masters, None)
    }

    /// Like [`start`](Self::start), serving TLS under an issuer minted for the cluster
    /// ([`issuer`](Self::issuer) hands it to the test).
    pub fn start_tls(masters: usize) -> io::Result<FakeCluster> {
        FakeCluster::start_nodes(masters, Some(FakeIssuer::new()?))
    }

    /// Like [`start`](Self::start), serving TLS with certificates `issuer` signs (shared
    /// with other fakes of the test: a client trusting it reaches all of them).
    pub fn start_with_issuer(masters: usize, issuer: &FakeIssuer) -> io::Result<FakeCluster> {
        FakeCluster::start_nodes(masters, Some(issuer.clone()))
    }

    /// The issuer of its nodes' certificates; `None` over plain TCP.
    pub fn issuer(&self) -> Option<&FakeIssuer> {
        self.issuer.as_ref()
    }

    fn start_nodes(masters: usize, issuer: Option<FakeIssuer>) -> io::Result<FakeCluster> {
        let masters = masters.max(1);
        let state = Arc::new(ClusterState {
            topo: Mutex::new(Topology {
                slots: vec![None; SLOTS as usize],
                nodes: Vec::new(),
                migration: None,
            }),
            seq: Arc::new(AtomicU64::new(0)),
            quiet_sunsubscribe: Default::default(),
        });
        let mut cluster = FakeCluster {
            state,
            nodes: Vec::new(),
            issuer,
        };
        for _ in 0..masters {
            cluster.add_node()?;
        }
        // As `redis-cli --cluster create` splits them: 3 masters get 0-5460,
        // 5461-10922 and 10923-16383.
        let mut topo = cluster.state.topo.lock();
        let per = SLOTS as f64 / masters as f64;
        let (mut first, mut cursor) = (0usize, 0.0f64);
        for i in 0..masters {
            let mut last = (cursor + per - 1.0).round() as usize;
            if last >= SLOTS as usize || i == masters - 1 {
                last = SLOTS as usize - 1;
            }
            for owner in &mut topo.slots[first..=last] {
                *owner = Some(i);
            }
            first = last + 1;
            cursor += per;
        }
        drop(topo);
        Ok(cluster)
    }

    /// Node `i` (in order of creation; removed nodes keep their index).
    pub fn node(&self, i: usize) -> &FakeServer {
        &self.nodes[i]
    }

    /// Every node ever started, removed ones included.
    pub fn nodes(&self) -> &[FakeServer] {
        &self.nodes
    }

    /// A seed URL (node 0): `rediss://…` over TLS.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// The node owning `slot`, if any.
    pub fn slot_owner(&self, slot: u16) -> Option<usize> {
        self.state
            .topo
            .lock()
            .slots
            .get(slot as usize)
            .copied()
            .flatten()
    }

    /// The node owning `key`'s slot.
    pub fn owner_of_key(&self, key: &[u8]) -> Option<usize> {
        self.slot_owner(key_slot(key))
    }

    /// Starts a node that owns no slots (as after `CLUSTER MEET`) and returns it.
    pub fn add_node(&mut self) -> io::Result<&FakeServer> {
        let index = self.nodes.len();
        let link = ClusterLink {
            state: self.state.clone(),
            index,
        };
        let mut builder = FakeServer::builder();
        if let Some(issuer) = &self.issuer {
            builder = builder.tls(issuer);
        }
        let server = builder.start_in_cluster(link)?;
        self.state.topo.lock().nodes.push(NodeEntry {
            id: node_id(),
            addr: server.addr(),
            server: Arc::downgrade(&server.inner),
            removed: false,
            epoch: index as u64 + 1,
        });
        self.nodes.push(server);
        Ok(&self.nodes[index])
    }

    /// Removes node `i` from the cluster's view, as `CLUSTER FORGET` on every node
    /// does: refused while it owns slots (move them away first). The node keeps
    /// running (and serving redirects to its former peers) until it is shut down.
    pub fn remove_node(&self, i: usize) -> Result<(), String> {
        let mut topo = self.state.topo.lock();
        let Some(node) = topo.nodes.get(i) else {
            return Err(format!("ERR Unknown node {i}"));
        };
        if node.removed {
            return Err(format!("ERR Unknown node {}", node.id));
        }
        if topo.slots.contains(&Some(i)) {
            return Err("ERR Can't forget a node that still owns slots".into());
        }
        topo.nodes[i].removed = true;
        Ok(())
    }

    /// Starts moving `slots` (inclusive, as the server writes them) from node `from` to
    /// node `to`: keys still on `from` are served there; a key not there gets
    /// `-ASK <slot> <to>`, and `to` serves it after `ASKING`. With `announce`, `from`
    /// sends `SMIGRATING <slots>` to its opted-in connections.
    pub fn begin_migration(
        &self,
        slots: RangeInclusive<u16>,
        from: usize,
        to: usize,
        announce: bool,
    ) -> Result<(), String> {
        {
            let mut topo = self.state.topo.lock();
            if topo.migration.is_some() {
                return Err("a migration is already in progress".into());
            }
            if from == to || to >= topo.nodes.len() || topo.nodes[to].removed {
                return Err(format!("cannot migrate from node {from} to node {to}"));
            }
            if *slots.end() >= SLOTS || slots.is_empty() {
                return Err(format!("bad slot range {slots:?}"));
            }
            if slots.clone().any(|s| topo.slots[s as usize] != Some(from)) {
                return Err(format!("node {from} does not own every slot of {slots:?}"));
            }
            topo.migration = Some(Migration {
                slots: slots.clone(),
                from,
                to,
                announce,
            });
        }
        if announce {
            let id = self.nodes[from]
                .inner
                .maint
                .seq
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let n = Notification::SMigrating {
                slots: slots::range_text(&slots),
            };
            maintenance::deliver(&self.nodes[from].inner, &n, id);
        }
        Ok(())
    }

    /// Moves up to `max` keys of the migrating slots from the source to the target
    /// (as `MIGRATE` does); returns how many moved.
    pub fn move_keys(&self, max: usize) -> usize {
        let Some(m) = self.state.topo.lock().migration.clone() else {
            return 0;
        };
        let now = Instant::now();
        let (src, dst) = (&self.nodes[m.from].inner, &self.nodes[m.to].inner);
        let mut src_data = src.store.data.lock();
        let mut dst_data = dst.store.data.lock();
        let mut moved = 0;
        for db in 0..src_data.dbs.len() {
            let keys: Vec<Vec<u8>> = src_data.dbs[db]
                .keys(now)
                .into_iter()
                .filter(|k| m.slots.contains(&key_slot(k)))
                .take(max - moved)
                .collect();
            for k in keys {
                if let Some(entry) = src_data.dbs[db].remove(&k, now) {
                    dst_data.dbs[db].put_entry(k, entry);
                    moved += 1;
                }
            }
        }
        moved
    }

    /// Ends the migration: moves the remaining keys, gives the slots to the target
    /// (the source answers `-MOVED` from now on), unsubscribes the source's sharded
    /// subscribers of channels in those slots with an unsolicited `sunsubscribe`
    /// push (as the server does whenever it loses a slot), and, for an announced
    /// migration, sends `SMIGRATED [[source, target, slots]]` from the source.
    pub fn finish_migration(&self) -> Result<(), String> {
        let Some(m) = self.state.topo.lock().migration.clone() else {
            return Err("no migration in progress".into());
        };
        self.move_keys(usize::MAX);
        let src = &self.nodes[m.from].inner;
        {
            // Source store first, then topology: the lock order of every command.
            let _src_data = src.store.data.lock();
            let mut topo = self.state.topo.lock();
            for s in m.slots.clone() {
                topo.slots[s as usize] = Some(m.to);
            }
            topo.migration = None;
            let top = topo.nodes.iter().map(|n| n.epoch).max().unwrap_or(0);
            topo.nodes[m.to].epoch = top + 1;
        }
        if self.state.quiet_sunsubscribe.load(Ordering::Relaxed) {
            super::pubsub::forget_shard_channels(src, &m.slots);
        } else {
            super::pubsub::drop_shard_channels(src, &m.slots);
        }
        if m.announce {
            let n = Notification::SMigrated {
                triplets: vec![(
                    src.host_port(),
                    self.nodes[m.to].inner.host_port(),
                    slots::range_text(&m.slots),
                )],
            };
            let id = src
                .maint
                .seq
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            maintenance::deliver(src, &n, id);
        }
        Ok(())
    }

    /// Whether a finished migration tells the source's sharded subscribers with an
    /// unsolicited `sunsubscribe` (the default, as the server does). Off, their
    /// subscriptions silently stop delivering: what a client sees when `SMIGRATED`
    /// overtakes the `sunsubscribe`, so only its own fallback can move them.
    pub fn set_sunsubscribe_on_migration(&self, on: bool) {
        self.state.quiet_sunsubscribe.store(!on, Ordering::Relaxed);
    }

    /// `begin_migration` then `finish_migration`.
    pub fn migrate(
        &self,
        slots: RangeInclusive<u16>,
        from: usize,
        to: usize,
        announce: bool,
    ) -> Result<(), String> {
        self.begin_migration(slots, from, to, announce)?;
        self.finish_migration()
    }

    /// Sends `n` from every node still in the cluster, with the SAME sequence id (as
    /// every node broadcasts one event); returns the id.
    pub fn notify_all(&self, n: Notification) -> u64 {
        let id = self.nodes[0]
            .inner
            .maint
            .seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for server in self.state.live_servers() {
            maintenance::deliver(&server, &n, id);
        }
        id
    }

    /// Shuts every node down (also done on `Drop`).
    pub fn shutdown(&self) {
        for n in &self.nodes {
            n.shutdown();
        }
    }
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}
