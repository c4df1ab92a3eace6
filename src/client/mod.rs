//! `Client`: the multiplexer for one deployment: its server connection(s), the
//! supervisor that keeps them up, events, and the router behind `Database`.
//!
//! Owns: the life of a deployment's connections. Must never: leave a thread running
//! after `close()` or after the last handle is dropped.

mod blocking;
pub(crate) mod events;
mod link;
pub(crate) mod node;
mod router;
mod supervisor;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

pub use events::{ClientEvent, EVENT_QUEUE_BOUND};

use crate::clock;
use crate::commands::Database;
use crate::config::Options;
use crate::connection::timeouts::ServerTimeouts;
use crate::connection::tls;
use crate::connection::{Connection, ConnectionConfig, ConnectionInfo, PushHandler};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::pubsub::{self, Registry, Subscriber};
use crate::resp::Value;
use events::EventBus;
use node::Node;
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
    handle: Arc<ClientHandle>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.handle.inner.options.to_string())
            .finish()
    }
}

/// Dropping the last handle shuts the client down.
pub(crate) struct ClientHandle {
    pub(crate) inner: Arc<ClientInner>,
}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        self.inner.shutdown();
    }
}

pub(crate) struct ClientInner {
    pub(crate) options: Arc<Options>,
    pub(crate) node: Arc<Node>,
    events: Arc<EventBus<ClientEvent>>,
    wake: Sender<Wake>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

impl Client {
    /// Connects to a deployment given as a `redis://` URL, an option string or `Options`.
    ///
    /// With `abortConnect=true` (the default) this fails when the first connection
    /// cannot be made; with `false` it returns at once and connects in the background,
    /// commands waiting in the backlog meanwhile.
    pub fn connect(options: impl IntoOptions) -> Result<Client> {
        let options = options.into_options()?;
        let endpoint = match options.endpoints.as_slice() {
            [] => return Err(Error::new(ErrorKind::Config, "no endpoint given")),
            [first, ..] => first.clone(),
        };
        let options = Arc::new(options);
        let tls = match &options.tls {
            Some(t) => Some(Arc::new(tls::setup(t, &endpoint.host)?)),
            None => None,
        };
        let events = Arc::new(EventBus::new());
        // Bounded: a wake-up that finds the channel full is redundant anyway.
        let (wake_tx, wake_rx) = bounded(16);
        let failure_events = events.clone();
        let failure_wake = wake_tx.clone();
        let on_failure = Arc::new(move |info: &ConnectionInfo, kind: FailureKind, e: &Error| {
            if kind != FailureKind::ClosedByClient {
                failure_events.publish(ClientEvent::ConnectionFailed {
                    endpoint: info.endpoint.clone(),
                    failure: kind,
                    error: e.clone(),
                });
            }
            let _ = failure_wake.try_send(Wake::ConnectionLost);
        });
        let config = ConnectionConfig {
            endpoint,
            options: options.clone(),
            tls,
            timeouts: Arc::new(ServerTimeouts::new(clock::system())),
            on_push: None,
            on_failure: Some(on_failure.clone()),
            role: "",
            subscriber: false,
        };
        let registry = Arc::new(Registry::new());
        let pubsub_config = ConnectionConfig {
            on_push: Some(pubsub_push_handler(registry.clone(), wake_tx.clone())),
            on_failure: Some({
                let registry = registry.clone();
                Arc::new(move |info: &ConnectionInfo, kind: FailureKind, e: &Error| {
                    registry.forget_confirmations();
                    on_failure(info, kind, e);
                })
            }),
            role: "-pubsub",
            subscriber: true,
            ..config.clone()
        };
        let node = Arc::new(Node::new(config, pubsub_config, registry, events.clone()));
        match Connection::open(&node.interactive.config) {
            Ok(conn) => node.install(conn),
            Err(e) if options.abort_connect => return Err(e),
            Err(e) => log::warn!(
                "{}: not connected yet ({e}); retrying in the background",
                node.endpoint
            ),
        }
        let sup_nodes = vec![node.clone()];
        let supervisor = std::thread::Builder::new()
            .name(format!("rr-supervisor {}", node.endpoint))
            .spawn(move || supervisor::run(sup_nodes, wake_rx))
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start the supervisor: {e}")))?;
        let inner = Arc::new(ClientInner {
            options,
            node,
            events,
            wake: wake_tx,
            supervisor: Mutex::new(Some(supervisor)),
            closed: AtomicBool::new(false),
        });
        Ok(Client {
            handle: Arc::new(ClientHandle { inner }),
        })
    }

    /// A handle for running commands (cheap; clones share everything).
    pub fn database(&self) -> Database {
        Database::new(Arc::new(router::Standalone::new(self.handle.clone())))
    }

    /// Subscribes and publishes (see [`Subscriber`]).
    pub fn subscriber(&self) -> Subscriber {
        Subscriber::new(
            self.handle.inner.node.registry.clone(),
            Arc::new(router::Standalone::new(self.handle.clone())),
            self.database(),
            self.handle.inner.options.command_timeout,
        )
    }

    /// A new receiver of this client's events (bounded: a slow reader loses the
    /// newest events rather than slowing the client; see [`EVENT_QUEUE_BOUND`]).
    pub fn events(&self) -> Receiver<ClientEvent> {
        self.handle.inner.events.subscribe()
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.handle.inner.options
    }

    /// Whether the interactive connection is up.
    pub fn is_connected(&self) -> bool {
        self.handle.inner.node.current().is_some()
    }

    /// Closes every connection and ends every thread of this client; commands fail
    /// with `ErrorKind::Closed` afterwards. Idempotent.
    pub fn close(&self) {
        self.handle.inner.shutdown();
    }
}

/// Routes pub/sub pushes into the registry; a subscription the server ended while we
/// still want it goes to the supervisor to be re-established.
fn pubsub_push_handler(registry: Arc<Registry>, wake: Sender<Wake>) -> PushHandler {
    Arc::new(
        move |info: &ConnectionInfo, frame: Value| match pubsub::parse(&frame) {
            Some(frame) => {
                if let Some(key) = registry.apply(frame) {
                    let _ = wake.try_send(Wake::Resubscribe(key));
                }
            }
            None => match frame.error_message() {
                Some(m) => log::warn!("{}: subscription refused: {m}", info.endpoint),
                None => log::trace!("{}: push frame ignored", info.endpoint),
            },
        },
    )
}

impl ClientInner {
    fn shutdown(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.wake.try_send(Wake::Shutdown);
        self.node.close();
        let supervisor = self.supervisor.lock().take();
        if let Some(t) = supervisor {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
