//! `Client`: the multiplexer for one deployment: its server connection(s), the
//! supervisor that keeps them up, events, and the router behind `Database`.
//!
//! Owns: the life of a deployment's connections. Must never: leave a thread running
//! after `close()` or after the last handle is dropped.

pub mod cluster;
mod dedicated;
mod deployment;
pub(crate) mod events;
mod lane_rule;
mod link;
mod maintenance;
pub(crate) mod node;
mod node_router;
mod reauth;
pub(crate) mod roles;
mod router;
pub(crate) use router::Router;
pub(crate) mod sentinel;
pub(crate) mod status;
pub(crate) mod supervisor;
pub(crate) mod walk;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver};
use parking_lot::Mutex;

pub use events::{ClientEvent, EVENT_QUEUE_BOUND};

pub use cluster::ClusterStats;
pub use node_router::{NodeInfo, NodeRole};
pub use status::{ClientStatus, NodeStatus};

use crate::config::{Endpoint, Options};
use crate::connection::reply_slot::Outcome;
use crate::connection::{Connection, Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::pubsub::{Publisher, Subscriber};
use crate::resp::{write_arg, write_command_header, Value};
pub(crate) use deployment::Deployment;
pub(crate) use node::Node;
use supervisor::Wake;

/// Anything `Client::connect` accepts: a URL, an option string, or `Options`.
pub trait IntoOptions {
    /// Converts into options.
    fn into_options(self) -> Result<Options>;
}

impl IntoOptions for Options {
    fn into_options(self) -> Result<Options> {
        Ok(self)
    }
}

impl IntoOptions for &Options {
    fn into_options(self) -> Result<Options> {
        Ok(self.clone())
    }
}

impl IntoOptions for &str {
    fn into_options(self) -> Result<Options> {
        Options::parse(self)
    }
}

impl IntoOptions for String {
    fn into_options(self) -> Result<Options> {
        Options::parse(&self)
    }
}

impl IntoOptions for &String {
    fn into_options(self) -> Result<Options> {
        Options::parse(self)
    }
}

/// A client for one Redis deployment, shared by every thread that uses it.
///
/// One multiplexed connection per server carries every caller's commands; concurrent
/// calls are pipelined automatically. Clone it freely: clones share the connection.
/// Dropping the last clone (and every `Database` made from it), or calling `close`,
/// ends all its threads.
///
/// ```no_run
/// use resilient_redis::prelude::*;
/// let client = Client::connect("redis://127.0.0.1:6379")?;
/// let db = client.database();
/// db.set("k", "v")?;
/// let v: Option<String> = db.get("k")?;
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    guard: Arc<ClientGuard>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.guard.inner.options.to_string())
            .finish()
    }
}

/// Dropping the last guard (held by the client, its databases and subscribers) shuts
/// the client down.
pub(crate) struct ClientGuard {
    pub(crate) inner: Arc<ClientInner>,
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.inner.shutdown();
    }
}

pub(crate) struct ClientInner {
    pub(crate) options: Arc<Options>,
    pub(crate) deployment: Arc<Deployment>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

impl Client {
    /// Connects to a deployment given as a `redis://` URL, an option string or `Options`.
    ///
    /// A standalone server or a Redis Cluster: a cluster is recognised from the seed
    /// node (the `HELLO` reply, or `INFO cluster`) and its topology read from it.
    /// With several endpoints, each is tried in turn as the seed.
    ///
    /// With `abortConnect=true` (the default) this fails when no connection can be
    /// made; with `false` it returns at once and connects in the background, commands
    /// waiting in the backlog meanwhile.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use resilient_redis::{Client, Options};
    /// // A URL (`rediss://` for TLS; several hosts seed a cluster) ...
    /// let a = Client::connect("redis://app:secret@cache.example:6379/0")?;
    /// // ... an option string (every key is listed on `Options::parse`) ...
    /// let b = Client::connect("cache.example:6379,password=secret,ssl=true,syncTimeout=2000")?;
    /// // ... or options built in code.
    /// let c = Client::connect(
    ///     Options::default()
    ///         .endpoint("cache.example:6379")
    ///         .command_timeout(Duration::from_secs(2)),
    /// )?;
    /// # let _ = (a, b, c);
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn connect(options: impl IntoOptions) -> Result<Client> {
        Client::connect_with(options.into_options()?, None)
    }

    /// A group member's client: created at once without dialing (its own supervisor
    /// thread connects it, so a member that hangs delays nobody), it tells the group
    /// how its connections fare, and they carry the group's circuit breaker.
    pub(crate) fn connect_member(options: Options, setup: MemberSetup) -> Result<Client> {
        let mut options = options;
        options.abort_connect = false;
        // The group keeps the backlog: a command for a member that is down comes back
        // unsent at once and the group routes it to whichever member serves next,
        // instead of waiting out its timeout in the old member's queue.
        options.backlog = crate::config::BacklogPolicy::FailFast;
        Client::connect_with(options, Some(setup))
    }

    fn connect_with(options: Options, member: Option<MemberSetup>) -> Result<Client> {
        // Each client (cheap: a few calls, once per client), so a recorder installed
        // after the first client still learns units and descriptions.
        crate::metrics::describe();
        // Once, on a copy: the caller's options stay as written (see `Options::provider`).
        let options = Arc::new(options.with_provider_defaults());
        if options.endpoints.is_empty() {
            return Err(Error::new(ErrorKind::Config, "no endpoint given"));
        }
        // Here, not at the first dial: a group member dials on its supervisor thread,
        // which drops a configuration error (the group would report only "no member
        // could be reached").
        crate::connection::tls::check_built(&options)?;
        // Bounded: a wake-up that finds the channel full is redundant anyway.
        let (wake_tx, wake_rx) = bounded(64);
        let mut deployment = Deployment::new(options.clone(), wake_tx);
        let in_group = member.is_some();
        if let Some(m) = member {
            deployment.breaker = m.breaker;
            deployment.notify = Some(m.notify);
        }
        let deployment = Arc::new(deployment);
        // What TLS files and certificates can only get wrong by configuration (a
        // missing CA file, a key that does not parse), before any dial: a member would
        // otherwise never come up, silently (its dial runs on its supervisor thread).
        deployment.check_tls()?;
        if !in_group {
            connect_first(&deployment)?;
        }
        // The primary/replica (or Sentinel) worker: it asks the nodes' roles (or the
        // sentinels) off the supervisor and data threads.
        if let Err(e) = roles::start(&deployment) {
            deployment.close();
            for node in deployment.nodes() {
                node.close();
            }
            return Err(e);
        }
        let name = options.endpoints[0].to_string();
        let sup = deployment.clone();
        let thread = std::thread::Builder::new()
            .name(format!("rr-supervisor {name}"))
            .spawn(move || {
                if in_group {
                    // A member dials here, not on the thread that joined it.
                    if connect_first(&sup).is_err() {
                        return;
                    }
                }
                supervisor::run(sup, wake_rx)
            })
            .map_err(|e| {
                // The roles worker (if any) must not outlive a client never returned.
                deployment.close();
                if let Some(roles) = deployment.roles() {
                    roles.stop();
                    roles.join();
                }
                Error::new(ErrorKind::Io, format!("cannot start the supervisor: {e}"))
            })?;
        let supervisor = Some(thread);
        let inner = Arc::new(ClientInner {
            options,
            deployment,
            supervisor: Mutex::new(supervisor),
            closed: AtomicBool::new(false),
        });
        Ok(Client {
            guard: Arc::new(ClientGuard { inner }),
        })
    }

    // `database()` and `subscriber()` need `Database`, from the layer above, so they
    // are defined there (commands/client_handles.rs), from these two.

    /// The router behind this client's `Database`s.
    pub(crate) fn router(&self) -> Arc<dyn Router> {
        Arc::new(router::DeploymentRouter::new(self.guard.clone()))
    }

    /// A `Subscriber` whose `PUBLISH` goes through `publisher`.
    pub(crate) fn subscriber_publishing_to(&self, publisher: Arc<dyn Publisher>) -> Subscriber {
        Subscriber::new(
            self.guard.inner.deployment.registry.clone(),
            Arc::new(router::DeploymentRouter::new(self.guard.clone())),
            publisher,
            self.guard.inner.options.command_timeout,
        )
    }

    /// A new receiver of this client's events (bounded: a slow reader loses the
    /// newest events rather than slowing the client; see [`EVENT_QUEUE_BOUND`]).
    pub fn events(&self) -> Receiver<ClientEvent> {
        self.guard.inner.deployment.events.subscribe()
    }

    /// The credentials generation (see
    /// [`CredentialsProvider::generation`](crate::config::CredentialsProvider::generation))
    /// every open connection of this client is on at least: interactive, subscription
    /// and blocking connections on every node, counted from before they dial until they
    /// close, so one being dialled or drained with older credentials holds it back.
    /// Once it reaches the generation a rotation moved to, no connection uses older
    /// credentials and they may be revoked (the moment is also raised as
    /// [`ClientEvent::Reauthenticated`]). Never ahead of the provider; `None` without a
    /// provider ([`Options::credentials`]).
    ///
    /// A call blocked on a dedicated connection (`BLPOP`, `XREAD BLOCK`) keeps its
    /// connection, and so its credentials, until it returns: with a block time of `0`
    /// the generation does not move until then.
    pub fn credentials_generation(&self) -> Option<u64> {
        reauth::floor(&self.guard.inner.deployment).map(|(generation, _)| generation)
    }

    /// The options in force: the ones given, with the defaults of their provider (see
    /// [`Options::provider`]) filled in where nothing was set. Their `Display` still
    /// writes none of the provider's values.
    pub fn options(&self) -> &Options {
        &self.guard.inner.options
    }

    /// Whether the interactive connection is up (for a cluster: to every known node).
    pub fn is_connected(&self) -> bool {
        self.guard.inner.deployment.is_connected()
    }

    /// Maintenance-notification state per server: whether the interactive connection
    /// is up and opted in (re-armed on every reconnect), and which announced
    /// maintenance has timeouts relaxed now. See [`crate::maintenance`].
    pub fn maintenance_status(&self) -> Vec<crate::maintenance::MaintenanceStatus> {
        self.guard
            .inner
            .deployment
            .nodes()
            .iter()
            .map(|n| {
                let conn = n.current();
                crate::maintenance::MaintenanceStatus {
                    endpoint: n.endpoint.clone(),
                    connected: conn.is_some(),
                    opted_in: conn.is_some_and(|c| c.maint_notifications()),
                    in_force: n.interactive.config.timeouts.maintenance(),
                    handoffs: n.maintenance.stats(),
                    last_handoff: n.maintenance.last(),
                }
            })
            .collect()
    }

    /// A snapshot of every server (connected, protocol, maintenance, backlog) and the
    /// cluster counters, whose `Display` is a readable table (see [`ClientStatus`]).
    pub fn status(&self) -> ClientStatus {
        ClientStatus::of(self)
    }

    /// Whether this client talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.guard.inner.deployment.cluster().is_some()
    }

    /// Cluster counters (redirects followed, refreshes, retirements); `None` when the
    /// deployment is not a cluster.
    pub fn cluster_stats(&self) -> Option<ClusterStats> {
        self.guard.inner.deployment.cluster().map(|c| c.stats())
    }

    /// Re-reads the cluster topology now, on the calling thread (after resharding, for
    /// example); the supervisor also refreshes on MOVED, on connection loss and
    /// periodically. Does nothing for a standalone server. An error when no node could
    /// tell the topology (the map stays as it was).
    pub fn refresh_topology(&self) -> Result<()> {
        let deployment = &self.guard.inner.deployment;
        if let Some(state) = deployment.cluster() {
            let applied = cluster::refresh(deployment, &state);
            for endpoint in state.finish_retirements() {
                deployment.remove(&endpoint);
            }
            if !applied {
                return Err(Error::new(
                    ErrorKind::ConnectionClosed,
                    "no cluster node answered the topology query",
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn deployment(&self) -> &Arc<Deployment> {
        &self.guard.inner.deployment
    }

    /// The longest any interactive connection's oldest call in flight has gone
    /// without a reply byte (zero when nothing is in flight). Cheap: no IO.
    pub(crate) fn stalled_for(&self) -> std::time::Duration {
        self.guard
            .inner
            .deployment
            .nodes()
            .iter()
            .filter_map(|n| n.current())
            .map(|c| c.stalled_for())
            .max()
            .unwrap_or_default()
    }

    /// Closes the interactive connections whose calls have gone `threshold` without a
    /// reply byte (a group found the member hung): their callers get a connection
    /// failure at once, which a retry policy takes to the member serving now. The
    /// other connections to those servers go too (see [`node::Node::found_hung`]), so
    /// the member's subscriptions are live again before traffic can fail back to it.
    pub(crate) fn abandon_stalled(&self, threshold: std::time::Duration) {
        for node in self.guard.inner.deployment.nodes() {
            let Some(conn) = node.current() else { continue };
            let stalled = conn.stalled_for();
            if stalled >= threshold {
                log::warn!(
                    "{}: no reply for {stalled:?} and a failed health check: closing the connection",
                    node.endpoint,
                );
                conn.close(crate::error::FailureKind::Timeout);
                node.found_hung(stalled);
            }
        }
    }

    /// Why the client is not connected, when it is not: the last connection attempt's
    /// error of the first server that is down (refused, DNS, TLS, authentication).
    pub(crate) fn last_connect_error(&self) -> Option<Error> {
        self.guard
            .inner
            .deployment
            .nodes()
            .iter()
            .filter(|n| n.current().is_none())
            .find_map(|n| n.interactive.last_error())
    }

    /// Starts closing without waiting for the supervisor thread (a group stops every
    /// member first, then waits for them all, so hung dials overlap).
    pub(crate) fn stop(&self) {
        self.guard.inner.stop();
    }

    /// Every server known now: address, role, and in a cluster the slots it serves
    /// (the seed first). A cluster lists every master and replica its topology names;
    /// a primary/replica or Sentinel deployment its primary and the replicas found.
    ///
    /// ```no_run
    /// use resilient_redis::{Client, NodeRole};
    /// let client = Client::connect("redis://127.0.0.1:7000")?;
    /// for node in client.nodes() {
    ///     let slots: usize = node.slots.iter().map(|r| r.len()).sum();
    ///     println!("{} {:?} {slots} slots", node.endpoint, node.role);
    /// }
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn nodes(&self) -> Vec<NodeInfo> {
        node_router::node_infos(&self.guard.inner.deployment)
    }

    /// A router for one of this client's nodes (see `Client::on_node`, defined with
    /// `Database` in `commands`).
    pub(crate) fn node_router(&self, endpoint: &Endpoint) -> Result<Arc<dyn Router>> {
        Ok(Arc::new(node_router::NodeRouter::new(
            self.guard.clone(),
            endpoint,
        )?))
    }

    /// Closes every connection and ends every thread of this client; commands fail
    /// with `ErrorKind::Closed` afterwards. Idempotent.
    pub fn close(&self) {
        self.guard.inner.shutdown();
    }
}

/// What a group hands to its members' clients.
pub(crate) struct MemberSetup {
    pub breaker: Option<Arc<dyn crate::policy::BreakerPolicy>>,
    /// Told how the member's interactive connections fare (never blocks: it only
    /// queues a message for the group's supervisor).
    pub notify: Notify,
}

/// What a member's client tells its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberSignal {
    /// An interactive connection came up, failed, or an attempt to open one failed;
    /// `up`: whether every node's interactive connection is up now.
    Connection { up: bool },
    /// A circuit breaker tripped on an interactive connection.
    BreakerTripped,
}

/// The hook a member's client reports its [`MemberSignal`]s through.
pub(crate) type Notify = Arc<dyn Fn(MemberSignal) + Send + Sync>;

/// The first connection of a deployment: each endpoint in turn is tried as the seed
/// (a cluster is recognised from the first that answers). With `abortConnect=false`
/// (and for group members) a deployment nobody answers for is left to reconnect in the
/// background from its first endpoint.
fn connect_first(deployment: &Arc<Deployment>) -> Result<()> {
    if deployment.options.service_name.is_some() {
        return connect_first_sentinel(deployment);
    }
    let options = &deployment.options;
    let mut last_error = None;
    for endpoint in &options.endpoints {
        if deployment.is_closed() {
            return Err(Error::new(ErrorKind::Closed, "the client is closed"));
        }
        let node = deployment.make_node(endpoint.clone())?;
        match Connection::open(&node.interactive.config) {
            Ok(conn) => {
                node.install(conn);
                deployment.push(node);
                detect_cluster(deployment);
                // Several endpoints of one primary/replica deployment: route to the
                // primary by ROLE before the first command.
                roles::discover_now(deployment);
                deployment.signal_connection();
                return Ok(());
            }
            Err(e) => last_error = Some(e),
        }
    }
    let e = last_error
        .unwrap_or_else(|| Error::new(ErrorKind::Connect, "no endpoint could be reached"));
    if options.abort_connect {
        return Err(e);
    }
    log::warn!("not connected yet ({e}); retrying in the background");
    let node = deployment.make_node(options.endpoints[0].clone())?;
    node.interactive.reconnect.lock().last_error = Some(e);
    deployment.push(node);
    deployment.signal_connection();
    Ok(())
}

/// The first connection of a Sentinel service: the sentinels are asked in turn for
/// the primary (one that is down or answers wrongly is skipped), which is dialed and
/// its `ROLE` confirmed. With `abortConnect=false` (and for group members) a service
/// nobody can name yet is left to the `rr-sentinel` worker.
fn connect_first_sentinel(deployment: &Arc<Deployment>) -> Result<()> {
    let options = &deployment.options;
    deployment.set_mode_known();
    let Some(roles) = deployment.roles() else {
        return Err(Error::new(ErrorKind::Config, "no service name"));
    };
    let warned = Arc::new(AtomicBool::new(false));
    let mut sentinels = options.endpoints.clone();
    let mut last_error = None;
    // A sentinel may name a primary a moment before it is promoted, or one that just
    // died: ask again (twice) before giving up.
    for _ in 0..3 {
        if deployment.is_closed() {
            return Err(Error::new(ErrorKind::Closed, "the client is closed"));
        }
        let answer = match sentinel::ask_any(options, &mut sentinels, &warned) {
            Ok(a) => a,
            Err(e) => {
                last_error = Some(e);
                break;
            }
        };
        let node = deployment.node_for(&answer.primary)?;
        match Connection::open(&node.interactive.config) {
            Ok(conn) => {
                node.install(conn);
                match roles::role_of(&node) {
                    role if sentinel::confirms(role.clone()) => {
                        roles::route_to(deployment, &roles, &answer.primary);
                        roles::set_sentinel_replicas(deployment, &roles, &answer.replicas);
                        deployment.signal_connection();
                        return Ok(());
                    }
                    other => {
                        last_error = Some(
                            Error::new(
                                ErrorKind::ReadOnly,
                                format!(
                                    "the sentinels named a primary whose ROLE says {}",
                                    match other {
                                        Some(roles::decide::Role::Replica { .. }) => "replica",
                                        Some(_) => "something else",
                                        None => "nothing readable",
                                    }
                                ),
                            )
                            .with_endpoint(answer.primary.to_string()),
                        );
                    }
                }
            }
            Err(e) => last_error = Some(e),
        }
        std::thread::sleep(options.reconnect_min_delay);
    }
    let e = last_error
        .unwrap_or_else(|| Error::new(ErrorKind::Connect, "no sentinel could be reached"));
    if options.abort_connect {
        for node in deployment.nodes() {
            node.close();
        }
        return Err(e);
    }
    log::warn!("not connected yet ({e}); the sentinels are asked again in the background");
    deployment.signal_connection();
    Ok(())
}

/// Decides once whether the deployment is a cluster, from the first connected node:
/// its `HELLO` reply says `mode`, or (RESP2) `INFO cluster` says `cluster_enabled`.
/// A cluster gets its slot map read at once so the first commands route directly.
pub(crate) fn detect_cluster(deployment: &Deployment) {
    if deployment.mode_known() {
        return;
    }
    let Some(node) = deployment.primary() else {
        return;
    };
    let Some(conn) = node.current() else { return };
    let is_cluster = match conn.info().server_mode.as_deref() {
        Some(mode) => mode == "cluster",
        None => {
            let mut frame = Vec::new();
            write_command_header(&mut frame, 2);
            write_arg(&mut frame, b"INFO");
            write_arg(&mut frame, b"cluster");
            let timeout = deployment.options.command_timeout;
            match conn.request(&frame, 1, Deadline::after(timeout), Traffic::Internal) {
                Ok(Outcome::One(Value::BulkString(info))) => {
                    String::from_utf8_lossy(&info).contains("cluster_enabled:1")
                }
                Ok(Outcome::One(Value::VerbatimString { text, .. })) => {
                    String::from_utf8_lossy(&text).contains("cluster_enabled:1")
                }
                Ok(_) => false,
                // Not known yet: asked again after the next connect.
                Err(_) => return,
            }
        }
    };
    deployment.set_mode_known();
    if is_cluster {
        let state = Arc::new(cluster::ClusterState::new());
        *deployment.cluster.write() = Some(state.clone());
        cluster::refresh(deployment, &state);
    }
}

impl ClientInner {
    fn stop(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.deployment.close();
        let _ = self.deployment.wake.try_send(Wake::Shutdown);
        if let Some(roles) = self.deployment.roles() {
            roles.stop();
        }
        for node in self.deployment.nodes() {
            node.close();
        }
        // Ends every `events()` receiver and every subscription (their `iter` loops).
        self.deployment.events.close();
        self.deployment.registry.close();
    }

    fn shutdown(&self) {
        self.stop();
        if let Some(roles) = self.deployment.roles() {
            roles.join();
        }
        let supervisor = self.supervisor.lock().take();
        if let Some(t) = supervisor {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
