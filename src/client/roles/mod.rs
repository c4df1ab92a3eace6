//! Primary/replica deployments (several endpoints, not a cluster) and Redis Sentinel
//! services: which node is the primary now, which are replicas, and the worker that
//! keeps it current.
//!
//! Owns: the routing target of a role-aware deployment (`Roles`) and the `rr-roles` /
//! `rr-sentinel` worker thread that finds it (`ROLE` on every node, or the sentinels'
//! answer confirmed by `ROLE`). Must never: run on a reader or writer thread, loop on
//! `-READONLY` (re-checks are paced by `decide::Pacer`), or outlive `close()`.

pub(crate) mod decide;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::{Condvar, Mutex, RwLock};

use super::deployment::Deployment;
use super::node::Node;
use super::sentinel::SentinelWatch;
use super::supervisor::Wake;
use crate::config::Endpoint;
use crate::connection::reply_slot::Outcome;
use crate::connection::{Connection, Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::{write_arg, write_command_header};
use decide::{choose_primary, parse_role, Pacer, Role};

/// Messages to the roles worker. Bounded (64): a message that finds the queue full is
/// redundant (a re-check is already queued).
pub(crate) enum Msg {
    /// A `-READONLY` reply or a lost primary: re-check the roles (paced).
    Recheck,
    /// A sentinel announced a new primary (`+switch-master`).
    SwitchMaster(Endpoint),
    /// The client is closing.
    Shutdown,
}

/// How long a `ROLE` (or a sentinel query) may take: a hung server must not hold the
/// worker past the next check.
const QUERY_TIMEOUT: Duration = Duration::from_millis(1000);
/// Re-checks while no primary is found: 50 ms, doubling to 1 s (a Sentinel failover
/// takes about `down-after-milliseconds` plus an election: seconds).
const RECHECK_MIN: Duration = Duration::from_millis(50);
const RECHECK_MAX: Duration = Duration::from_millis(1000);
/// Routine checks while all is well (catches a `REPLICAOF NO ONE` nobody announced).
const ROUTINE_EVERY: Duration = Duration::from_secs(2);

/// The routing target of a role-aware deployment.
pub(crate) struct Roles {
    /// Role routing is in force (a standalone deployment: decided once the first node
    /// answered; a cluster seed list never turns it on).
    active: AtomicBool,
    primary: RwLock<Option<Arc<Node>>>,
    replicas: RwLock<Vec<Arc<Node>>>,
    /// Bumped on every change of primary: callers waiting for the old one re-route.
    generation: AtomicU64,
    changed_lock: Mutex<()>,
    changed: Condvar,
    pick: AtomicUsize,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// Role checks and switches followed, for `status` and the tests.
    pub(crate) switches: AtomicU64,
}

impl Roles {
    pub(crate) fn new(sentinel: bool) -> Roles {
        let (tx, rx) = bounded(64);
        Roles {
            active: AtomicBool::new(sentinel),
            primary: RwLock::new(None),
            replicas: RwLock::new(Vec::new()),
            generation: AtomicU64::new(0),
            changed_lock: Mutex::new(()),
            changed: Condvar::new(),
            pick: AtomicUsize::new(0),
            tx,
            rx,
            worker: Mutex::new(None),
            switches: AtomicU64::new(0),
        }
    }

    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The node routed to for writes, if one is known.
    pub(crate) fn primary(&self) -> Option<Arc<Node>> {
        self.primary.read().clone()
    }

    /// A connected replica for a read (rotating), if any.
    pub(crate) fn replica(&self) -> Option<Arc<Node>> {
        let replicas = self.replicas.read();
        let n = replicas.len();
        if n == 0 {
            return None;
        }
        let start = self.pick.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|i| &replicas[(start + i) % n])
            .find(|r| r.current().is_some())
            .cloned()
    }

    /// Asks the worker for a role re-check (never blocks).
    pub(crate) fn request_recheck(&self) {
        let _ = self.tx.try_send(Msg::Recheck);
    }

    pub(crate) fn sender(&self) -> Sender<Msg> {
        self.tx.clone()
    }

    /// Waits until the primary changes from generation `seen`, or `deadline`; true when
    /// it changed.
    pub(crate) fn wait_changed(&self, seen: u64, deadline: Instant) -> bool {
        let mut guard = self.changed_lock.lock();
        while self.generation() == seen {
            if self.changed.wait_until(&mut guard, deadline).timed_out() {
                return self.generation() != seen;
            }
        }
        true
    }

    /// Routes writes to `node` (or to nobody: a failover in progress). Callers waiting
    /// in the old primary's backlog are nudged so they re-route.
    fn set_primary(&self, node: Option<Arc<Node>>) {
        let old = {
            let mut primary = self.primary.write();
            let same = match (&*primary, &node) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if same {
                return;
            }
            std::mem::replace(&mut *primary, node.clone())
        };
        match &node {
            Some(n) => log::info!("primary is now {}", n.endpoint),
            None => log::info!("no primary known (a failover in progress?)"),
        }
        if node.is_some() {
            self.switches.fetch_add(1, Ordering::Relaxed);
        }
        {
            let _guard = self.changed_lock.lock();
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.changed.notify_all();
        }
        if let Some(old) = old {
            old.wake_backlog();
        }
    }

    fn set_replicas(&self, nodes: Vec<Arc<Node>>) {
        *self.replicas.write() = nodes;
    }

    /// Stops the worker (without waiting: see `join`).
    pub(crate) fn stop(&self) {
        let _ = self.tx.try_send(Msg::Shutdown);
        let _guard = self.changed_lock.lock();
        self.changed.notify_all();
    }

    pub(crate) fn join(&self) {
        let worker = self.worker.lock().take();
        if let Some(t) = worker {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// Starts the worker of a deployment that may be role-aware: `rr-sentinel <service>`
/// for a Sentinel service, `rr-roles <first endpoint>` for several endpoints (it ends
/// at once if they turn out to be a cluster).
pub(crate) fn start(deployment: &Arc<Deployment>) -> Result<()> {
    let Some(roles) = deployment.roles() else {
        return Ok(());
    };
    let name = match &deployment.options.service_name {
        Some(service) => format!("rr-sentinel {service}"),
        None => format!(
            "rr-roles {}",
            deployment
                .options
                .endpoints
                .first()
                .map(|e| e.to_string())
                .unwrap_or_default()
        ),
    };
    let d = deployment.clone();
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || run(d))
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start the roles worker: {e}")))?;
    *roles.worker.lock() = Some(thread);
    Ok(())
}

/// Right after the first node connected (on the thread that connects): when the
/// deployment is standalone with several endpoints, connect the others and route to
/// the primary by `ROLE` before the first command.
pub(crate) fn discover_now(deployment: &Deployment) {
    let Some(roles) = deployment.roles() else {
        return;
    };
    if deployment.options.service_name.is_some() || !deployment.mode_known() {
        return;
    }
    if deployment.cluster().is_some() {
        return;
    }
    activate_plain(deployment, &roles, true);
    check_plain(deployment, &roles);
}

/// Makes a node for every configured endpoint (dialing them now when `dial`) and
/// turns role routing on.
fn activate_plain(deployment: &Deployment, roles: &Roles, dial: bool) {
    for endpoint in &deployment.options.endpoints {
        if deployment.find(endpoint).is_some() {
            continue;
        }
        let Ok(node) = deployment.make_node(endpoint.clone()) else {
            continue;
        };
        if dial {
            if let Ok(conn) = Connection::open(&node.interactive.config) {
                node.install(conn);
            }
        }
        deployment.push(node);
    }
    roles.active.store(true, Ordering::Release);
    let _ = deployment.wake.try_send(Wake::NodeAdded);
}

/// The worker loop.
fn run(deployment: Arc<Deployment>) {
    let Some(roles) = deployment.roles() else {
        return;
    };
    let mut pacer = Pacer::new(RECHECK_MIN, RECHECK_MAX);
    let mut sentinel = deployment
        .options
        .service_name
        .as_ref()
        .map(|service| SentinelWatch::new(&deployment, service.clone(), roles.sender()));
    let mut recheck = true;
    let mut next_routine = Instant::now();
    loop {
        if deployment.is_closed() {
            break;
        }
        if sentinel.is_none() && !roles.is_active() {
            // Several endpoints: wait until the first node says standalone or cluster.
            if deployment.mode_known() {
                if deployment.cluster().is_some() {
                    return;
                }
                activate_plain(&deployment, &roles, false);
            }
        }
        let now = Instant::now();
        let primary_down = roles.primary().is_none_or(|p| p.current().is_none());
        if roles.is_active() && (recheck || primary_down || now >= next_routine) {
            let due = if now >= next_routine {
                now
            } else {
                pacer.next_at(now)
            };
            if due <= now {
                let found = match &mut sentinel {
                    Some(s) => s.check(&deployment, &roles, recheck),
                    None => check_plain(&deployment, &roles),
                };
                pacer.ran(Instant::now(), found && !primary_down_now(&roles));
                recheck = false;
                next_routine = Instant::now() + ROUTINE_EVERY;
            }
        }
        if let Some(s) = &mut sentinel {
            s.keep_subscribed(&deployment);
        }
        let now = Instant::now();
        let wait = if recheck || roles.primary().is_none_or(|p| p.current().is_none()) {
            pacer.next_at(now).saturating_duration_since(now)
        } else {
            next_routine.saturating_duration_since(now)
        }
        .clamp(Duration::from_millis(10), Duration::from_millis(250));
        match roles.rx.recv_timeout(wait) {
            Ok(Msg::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Msg::Recheck) => recheck = true,
            Ok(Msg::SwitchMaster(endpoint)) => {
                if let Some(s) = &mut sentinel {
                    s.switch_to(&deployment, &roles, endpoint);
                    // Confirmed by ROLE once connected, at the pace of a re-check.
                    recheck = true;
                    pacer = Pacer::new(RECHECK_MIN, RECHECK_MAX);
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
    if let Some(s) = sentinel {
        s.close();
    }
}

fn primary_down_now(roles: &Roles) -> bool {
    roles.primary().is_none_or(|p| p.current().is_none())
}

/// `ROLE` on one node's live connection.
pub(crate) fn role_of(node: &Node) -> Option<Role> {
    let conn = node.current()?;
    let mut frame = Vec::with_capacity(16);
    write_command_header(&mut frame, 1);
    write_arg(&mut frame, b"ROLE");
    match conn.request(&frame, 1, Deadline::after(QUERY_TIMEOUT), Traffic::Internal) {
        Ok(Outcome::One(v)) if v.is_error() => Some(Role::Unanswered),
        Ok(Outcome::One(v)) => parse_role(&v),
        _ => None,
    }
}

/// One role check of a primary/replica deployment: `ROLE` on every connected node,
/// then the primary chosen from the answers. True when a primary is known after it.
fn check_plain(deployment: &Deployment, roles: &Roles) -> bool {
    let nodes = deployment.nodes();
    let mut observed = Vec::new();
    for node in &nodes {
        if let Some(role) = role_of(node) {
            observed.push((node.endpoint.clone(), role));
        }
    }
    let current = roles.primary().map(|p| p.endpoint.clone());
    let chosen = choose_primary(current.as_ref(), &observed);
    let find = |e: &Endpoint| nodes.iter().find(|n| n.endpoint == *e).cloned();
    let replicas = observed
        .iter()
        .filter(|(_, r)| matches!(r, Role::Replica { .. }))
        .filter_map(|(e, _)| find(e))
        .collect();
    roles.set_replicas(replicas);
    match chosen {
        Some(endpoint) => {
            roles.set_primary(find(&endpoint));
            true
        }
        None => {
            // Nobody says master: a write now would only meet -READONLY. Keep routing
            // to the last primary while it is up (it may be the only one that answers
            // slowly); forget it once it is down.
            if primary_down_now(roles) {
                roles.set_primary(None);
            }
            false
        }
    }
}

/// Routes to `endpoint` at once (a sentinel said so), making its node when new and
/// cutting its reconnect back-off so the supervisor dials it now.
pub(crate) fn route_to(deployment: &Deployment, roles: &Roles, endpoint: &Endpoint) -> bool {
    let Ok(node) = deployment.node_for(endpoint) else {
        return false;
    };
    if node.current().is_none() {
        node.interactive.reconnect.lock().next_at = None;
        let _ = deployment.wake.try_send(Wake::NodeAdded);
    }
    roles.set_primary(Some(node));
    true
}

/// Sets the replicas of a Sentinel service (nodes made as needed) and forgets the
/// nodes that are neither the primary nor a replica in use.
pub(crate) fn set_sentinel_replicas(deployment: &Deployment, roles: &Roles, replicas: &[Endpoint]) {
    let mut nodes = Vec::new();
    if deployment.options.replica_reads {
        for e in replicas {
            if let Ok(n) = deployment.node_for(e) {
                nodes.push(n);
            }
        }
    }
    roles.set_replicas(nodes);
    prune(deployment, roles);
}

/// Forgets (and closes) the nodes of a Sentinel service that are neither the primary
/// nor a replica in use: an old primary is never dialed again (when it comes back it
/// claims to be a master until the sentinels reconfigure it).
pub(crate) fn prune(deployment: &Deployment, roles: &Roles) {
    let primary = roles.primary();
    let replicas = roles.replicas.read().clone();
    for node in deployment.nodes() {
        let keep = primary.as_ref().is_some_and(|p| Arc::ptr_eq(p, &node))
            || replicas.iter().any(|n| Arc::ptr_eq(n, &node));
        if !keep {
            log::debug!(
                "{}: no longer primary nor replica in use: closing",
                node.endpoint
            );
            deployment.remove(&node.endpoint);
            node.wake_backlog();
            node.close();
        }
    }
}

/// Whether a reply is `-READONLY` (a write reached a replica; it was not executed).
pub(crate) fn is_readonly(v: &crate::resp::Value) -> bool {
    v.error_message().is_some_and(|m| m.starts_with("READONLY"))
}
