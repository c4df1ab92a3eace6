//! `Deployment`: the set of nodes a client talks to (one for a standalone server, every
//! known node of a cluster), and how a node is made for an endpoint.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::Sender;
use parking_lot::RwLock;

use super::cluster::ClusterState;
use super::events::{ClientEvent, EventBus};
use super::maintenance::NodeMaintenance;
use super::node::Node;
use super::roles::Roles;
use super::supervisor::Wake;
use super::{MemberSignal, Notify};
use crate::clock;
use crate::config::{Endpoint, Options};
use crate::connection::company::Company;
use crate::connection::transport::Dial;
use crate::connection::{tls, ConnectionConfig, ConnectionInfo, PushHandler};
use crate::error::{Error, FailureKind, Result};
use crate::maintenance::timeouts::ServerTimeouts;
use crate::maintenance::{EventRing, ServerMaintenance};
use crate::metrics;
use crate::policy::BreakerPolicy;
use crate::pubsub::{self, Registry};
use crate::resp::Value;

pub(crate) struct Deployment {
    pub(crate) options: Arc<Options>,
    pub(crate) events: Arc<EventBus<ClientEvent>>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) wake: Sender<Wake>,
    nodes: RwLock<Vec<Arc<Node>>>,
    pub(crate) cluster: RwLock<Option<Arc<ClusterState>>>,
    mode_known: AtomicBool,
    closed: AtomicBool,
    /// Set by a group: the breaker for every interactive connection.
    pub(crate) breaker: Option<Arc<dyn BreakerPolicy>>,
    /// Set by a group: told at once when an interactive connection fails or comes up,
    /// or a breaker trips on one.
    pub(crate) notify: Option<Notify>,
    /// Raises each maintenance event once although every node sends its own copy.
    maint_ring: Arc<EventRing>,
    /// Re-authentication of live connections when the credentials change.
    pub(crate) reauth: super::reauth::ReauthState,
    /// Whether `sslVerify=false` has been warned about (once per client).
    tls_unverified_warned: Arc<AtomicBool>,
    /// The client's callers waiting for a reply, on any of its connections.
    company: Arc<Company>,
    /// Primary/replica routing: a Sentinel service, or several endpoints that turn out
    /// not to be a cluster (see `roles`).
    roles: Option<Arc<Roles>>,
}

impl Deployment {
    pub(crate) fn new(options: Arc<Options>, wake: Sender<Wake>) -> Deployment {
        let credentials_generation = options.credentials.as_ref().map_or(0, |p| p.generation());
        let credentials_failures = options
            .credentials
            .as_ref()
            .and_then(|p| p.renewal_failure())
            .map_or(0, |f| f.sequence);
        Deployment {
            events: Arc::new(EventBus::new()),
            registry: Arc::new(Registry::new()),
            wake,
            nodes: RwLock::new(Vec::new()),
            cluster: RwLock::new(None),
            mode_known: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            breaker: None,
            notify: None,
            maint_ring: Arc::new(EventRing::new()),
            reauth: super::reauth::ReauthState::starting_at(
                credentials_generation,
                credentials_failures,
            ),
            tls_unverified_warned: Arc::new(AtomicBool::new(false)),
            company: Arc::default(),
            roles: (options.service_name.is_some() || options.endpoints.len() > 1)
                .then(|| Arc::new(Roles::new(options.service_name.is_some()))),
            options,
        }
    }

    /// The role routing of a primary/replica or Sentinel deployment, if this may be one.
    pub(crate) fn roles(&self) -> Option<Arc<Roles>> {
        self.roles.clone()
    }

    /// The role routing when it is in force.
    pub(crate) fn active_roles(&self) -> Option<&Arc<Roles>> {
        self.roles.as_ref().filter(|r| r.is_active())
    }

    /// Whether role routing is in force and knows no primary now (a primary/replica
    /// or Sentinel deployment whose primary died, its replica not promoted yet): it
    /// cannot take a write, whatever its replicas answer. [`Deployment::primary`] then
    /// falls back to the first node, which may be a replica: a group's health check
    /// asks this first, so it never passes on a replica.
    pub(crate) fn knows_no_primary(&self) -> bool {
        self.active_roles().is_some_and(|r| r.primary().is_none())
    }

    /// Whether every node's interactive connection is up.
    pub(crate) fn is_connected(&self) -> bool {
        if let Some(roles) = self.active_roles() {
            // A replica that is down does not make a primary/replica deployment down.
            return roles.primary().is_some_and(|p| p.current().is_some());
        }
        let nodes = self.nodes();
        !nodes.is_empty() && nodes.iter().all(|n| n.current().is_some())
    }

    /// Tells a group whether the interactive connections are all up, after one came
    /// up or an attempt failed (nothing outside a group).
    pub(crate) fn signal_connection(&self) {
        if let Some(notify) = &self.notify {
            notify(MemberSignal::Connection {
                up: self.is_connected(),
            });
        }
    }

    /// Whether standalone-or-cluster has been decided.
    pub(crate) fn mode_known(&self) -> bool {
        self.mode_known.load(Ordering::Acquire)
    }

    pub(crate) fn set_mode_known(&self) {
        self.mode_known.store(true, Ordering::Release);
    }

    /// Every node known now.
    pub(crate) fn nodes(&self) -> Vec<Arc<Node>> {
        self.nodes.read().clone()
    }

    /// The first node (the standalone server, or the seed a cluster was found from);
    /// in a primary/replica or Sentinel deployment, the primary when one is known.
    pub(crate) fn primary(&self) -> Option<Arc<Node>> {
        if let Some(p) = self.active_roles().and_then(|r| r.primary()) {
            return Some(p);
        }
        self.nodes.read().first().cloned()
    }

    pub(crate) fn cluster(&self) -> Option<Arc<ClusterState>> {
        self.cluster.read().clone()
    }

    /// The node for `endpoint`, made (not yet connected) when unknown.
    pub(crate) fn node_for(&self, endpoint: &Endpoint) -> Result<Arc<Node>> {
        if let Some(n) = self.find(endpoint) {
            return Ok(n);
        }
        let node = self.make_node(endpoint.clone())?;
        let mut nodes = self.nodes.write();
        if let Some(n) = nodes.iter().find(|n| n.endpoint == *endpoint) {
            return Ok(n.clone());
        }
        nodes.push(node.clone());
        drop(nodes);
        // The supervisor connects it at once.
        let _ = self.wake.try_send(Wake::NodeAdded);
        Ok(node)
    }

    pub(crate) fn find(&self, endpoint: &Endpoint) -> Option<Arc<Node>> {
        self.nodes
            .read()
            .iter()
            .find(|n| n.endpoint == *endpoint)
            .cloned()
    }

    /// The subscriptions `node` carries (re-sent on a fresh connection to it).
    pub(crate) fn subscriptions_for(&self, node: &Node) -> Vec<crate::pubsub::Key> {
        match self.cluster() {
            Some(state) => super::cluster::subscriptions_for(self, &state, &node.endpoint),
            None if self.primary().is_some_and(|p| p.endpoint == node.endpoint) => {
                self.registry.wanted()
            }
            None => Vec::new(),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Forgets a node (after it was drained and closed).
    pub(crate) fn remove(&self, endpoint: &Endpoint) {
        self.nodes.write().retain(|n| n.endpoint != *endpoint);
    }

    /// Adds an already made node (the first one, connected by `Client::connect`).
    pub(crate) fn push(&self, node: Arc<Node>) {
        self.nodes.write().push(node);
    }

    /// Builds a node: its interactive, subscription and blocking connection settings.
    /// Builds the TLS configuration for every configured endpoint and drops it: what a
    /// dial would find wrong with the files and certificates, said before any dial.
    pub(crate) fn check_tls(&self) -> Result<()> {
        let Some(t) = &self.options.tls else {
            return Ok(());
        };
        for endpoint in &self.options.endpoints {
            tls::setup(t, &endpoint.host, self.tls_unverified_warned.clone())?;
        }
        Ok(())
    }

    pub(crate) fn make_node(&self, endpoint: Endpoint) -> Result<Arc<Node>> {
        let options = self.options.clone();
        let tls = match &options.tls {
            Some(t) => Some(Arc::new(tls::setup(
                t,
                &endpoint.host,
                self.tls_unverified_warned.clone(),
            )?)),
            None => None,
        };
        let on_failure = failure_handler(self.events.clone(), self.wake.clone(), None);
        let on_interactive_failure =
            failure_handler(self.events.clone(), self.wake.clone(), self.notify.clone());
        // Shared by every connection to this server, across reconnects: a window opened
        // before a reconnect still covers the commands waiting for it.
        let timeouts = Arc::new(ServerTimeouts::new(clock::system()));
        let maint = Arc::new(ServerMaintenance::new(timeouts.clone(), &options));
        let maintenance = Arc::new(NodeMaintenance::new(endpoint.clone()));
        let dispatch = || MaintDispatch {
            server: maint.clone(),
            ring: self.maint_ring.clone(),
            events: self.events.clone(),
            maintenance: maintenance.clone(),
            wake: self.wake.clone(),
        };
        let config = ConnectionConfig {
            endpoint,
            options,
            tls,
            timeouts,
            on_push: Some(interactive_push_handler(dispatch())),
            on_failure: Some(on_interactive_failure),
            role: "",
            subscriber: false,
            // Replicas only serve reads after READONLY; harmless on a master.
            readonly: self.options.replica_reads && self.cluster().is_some(),
            breaker: self.breaker.clone(),
            dial: Arc::new(Dial::default()),
            census: Some(self.reauth.census.clone()),
            company: self.company.clone(),
        };
        let registry = self.registry.clone();
        let pubsub_config = ConnectionConfig {
            on_push: Some(pubsub_push_handler(
                registry.clone(),
                self.wake.clone(),
                dispatch(),
            )),
            on_failure: Some(Arc::new(
                move |info: &ConnectionInfo, kind: FailureKind, e: &Error| {
                    registry.forget_confirmations(&info.endpoint);
                    on_failure(info, kind, e);
                },
            )),
            role: "-pubsub",
            subscriber: true,
            breaker: None,
            ..config.clone()
        };
        Ok(Arc::new(Node::new(
            config,
            pubsub_config,
            self.events.clone(),
            maintenance,
        )))
    }
}

type FailureHook = Arc<dyn Fn(&ConnectionInfo, FailureKind, &Error) + Send + Sync>;

/// Publishes the failure, tells a group (for an interactive connection), and wakes
/// the supervisor to reconnect.
fn failure_handler(
    events: Arc<EventBus<ClientEvent>>,
    wake: Sender<Wake>,
    notify: Option<Notify>,
) -> FailureHook {
    Arc::new(move |info: &ConnectionInfo, kind: FailureKind, e: &Error| {
        if let Some(notify) = &notify {
            if kind == FailureKind::CircuitBreaker {
                notify(MemberSignal::BreakerTripped);
            }
            // A connection closed on purpose was replaced (or the client is closing):
            // that is no loss.
            if !matches!(
                kind,
                FailureKind::ClosedByClient | FailureKind::MaintenanceHandoff
            ) {
                notify(MemberSignal::Connection { up: false });
            }
        }
        let (host, port) = (&info.endpoint.host, info.endpoint.port);
        if kind == FailureKind::CircuitBreaker {
            metrics::breaker_tripped(host, port);
        }
        if kind != FailureKind::ClosedByClient {
            metrics::connection_failed(host, port, kind);
            events.publish(ClientEvent::ConnectionFailed {
                endpoint: info.endpoint.clone(),
                failure: kind,
                error: e.clone(),
            });
        }
        let _ = wake.try_send(Wake::ConnectionLost);
    })
}

/// Where a connection's maintenance notifications go: its server's state, the
/// client's de-duplication ring and events, and the node's handoff inbox (whose work
/// the supervisor starts: a reader thread only records it).
struct MaintDispatch {
    server: Arc<ServerMaintenance>,
    ring: Arc<EventRing>,
    events: Arc<EventBus<ClientEvent>>,
    maintenance: Arc<NodeMaintenance>,
    wake: Sender<Wake>,
}

impl MaintDispatch {
    /// Handles a maintenance notification; hands any other frame back.
    fn dispatch(&self, info: &ConnectionInfo, frame: Value) -> Option<Value> {
        match self.server.on_push_fresh(&self.ring, &info.endpoint, frame) {
            Ok(Some((event, raise))) => {
                // New for this server, raised or not: each node acts on its own copy.
                let work = self.maintenance.offer(&event, info.peer);
                if raise {
                    self.events.publish(ClientEvent::Maintenance(event));
                }
                if work {
                    let _ = self.wake.try_send(Wake::Maintenance);
                }
                None
            }
            Ok(None) => None,
            Err(frame) => Some(frame),
        }
    }
}

/// The interactive connection's pushes: maintenance notifications (nothing else is
/// expected there; anything else is dropped, never taken for a reply).
fn interactive_push_handler(maint: MaintDispatch) -> PushHandler {
    Arc::new(move |info: &ConnectionInfo, frame: Value| {
        if let Some(other) = maint.dispatch(info, frame) {
            log::trace!("{}: push frame ignored: {other:?}", info.endpoint);
        }
    })
}

/// Routes pub/sub pushes into the registry; a subscription the server ended while we
/// still want it (or refused with a redirect) goes to the supervisor to be
/// re-established. Maintenance notifications are dispatched first: their element 1 is
/// a sequence id, not a channel name.
fn pubsub_push_handler(
    registry: Arc<Registry>,
    wake: Sender<Wake>,
    maint: MaintDispatch,
) -> PushHandler {
    Arc::new(move |info: &ConnectionInfo, frame: Value| {
        let Some(frame) = maint.dispatch(info, frame) else {
            return;
        };
        match pubsub::parse(&frame) {
            Some(frame) => {
                if let Some(key) = registry.apply_from(frame, Some(&info.endpoint)) {
                    let _ = wake.try_send(Wake::Resubscribe(key));
                }
            }
            None => match frame.error_message() {
                Some(m) if m.starts_with("MOVED ") => {
                    log::debug!("{}: a subscription was redirected: {m}", info.endpoint);
                    let _ = wake.try_send(Wake::RefreshTopology);
                }
                Some(m) => {
                    log::warn!("{}: subscription refused: {m}", info.endpoint);
                    registry.refused(m);
                }
                None => log::trace!("{}: push frame ignored", info.endpoint),
            },
        }
    })
}
