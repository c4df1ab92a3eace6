//! Pub/sub: `Subscriber`, subscriptions (plain, pattern, sharded) and their delivery.
//!
//! Sits below `client` (whose supervisor re-subscribes from the registry) and publishes
//! through the `Publisher` trait, which `commands::Database` implements from above.
//!
//! Owns: what is subscribed and where messages go. Must never: run user code or block
//! on the reader thread (callbacks run on their own thread; queues are bounded and drop
//! the oldest message when full), or lose a subscription across a reconnect.

mod message;
mod registry;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

pub(crate) use message::parse;
pub use message::{Message, MessageKind};
pub use registry::SUBSCRIPTION_QUEUE_BOUND;
pub(crate) use registry::{Key, Registry};

use crate::clock::deadline_after;
use crate::command::{Cmd, RetryCategory};
use crate::error::{Error, ErrorKind, Result};

/// Where subscribe and unsubscribe frames go: the deployment's subscription
/// connection(s), opened on demand.
pub(crate) trait PubSubLinks: Send + Sync {
    /// Sends SUBSCRIBE (or UNSUBSCRIBE) for one name on the connection(s) that carry it.
    fn send(&self, key: &Key, subscribe: bool) -> Result<()>;

    /// How many servers carry `key` once subscribed (each confirms it): one, or every
    /// master of a cluster for keyspace notifications.
    fn carriers(&self, _key: &Key) -> usize {
        1
    }
}

/// Whether `key` names keyspace notifications (`__keyspace@<db>__:<key>`,
/// `__keyevent@<db>__:<event>`, or a pattern such as `__key*__:*`): each server
/// publishes those of its own keys only, so in a cluster they are held on every master.
pub(crate) fn is_keyspace_notification(key: &Key) -> bool {
    let name = key.1.as_slice();
    match key.0 {
        MessageKind::Channel => {
            name.starts_with(b"__keyspace@") || name.starts_with(b"__keyevent@")
        }
        MessageKind::Pattern => name.starts_with(b"__key"),
        MessageKind::Sharded => false,
    }
}

/// Where `PUBLISH` goes: the client's (or group's) `Database`, which implements this in
/// `commands`, a layer above this one.
pub(crate) trait Publisher: Send + Sync {
    /// Runs a `PUBLISH` or `SPUBLISH`: the number of subscribers that received it.
    fn publish(&self, cmd: &Cmd) -> Result<i64>;
}

struct Inner {
    registry: Arc<Registry>,
    links: Arc<dyn PubSubLinks>,
    publisher: Arc<dyn Publisher>,
    timeout: Duration,
}

/// Subscribes and publishes. Clone it freely; subscriptions end when dropped.
///
/// Closing the client ends every subscription: `recv`, `iter` and callbacks end
/// after the messages already queued, and `subscribe` fails with `ErrorKind::Closed`.
///
/// Subscriptions are re-established by themselves after a reconnect. Messages are
/// queued per subscription (bounded by [`SUBSCRIPTION_QUEUE_BOUND`]; when full, the
/// oldest is dropped and counted in [`Subscription::dropped`]).
///
/// ```no_run
/// use resilient_redis::Client;
/// let client = Client::connect("redis://127.0.0.1:6379")?;
/// let sub = client.subscriber();
/// let news = sub.subscribe("news")?;
/// sub.publish("news", "hello")?;
/// let msg = news.recv_timeout(std::time::Duration::from_secs(1))?;
/// assert_eq!(msg.payload, b"hello");
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone)]
pub struct Subscriber {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber").finish_non_exhaustive()
    }
}

impl Subscriber {
    pub(crate) fn new(
        registry: Arc<Registry>,
        links: Arc<dyn PubSubLinks>,
        publisher: Arc<dyn Publisher>,
        timeout: Duration,
    ) -> Subscriber {
        Subscriber {
            inner: Arc::new(Inner {
                registry,
                links,
                publisher,
                timeout,
            }),
        }
    }

    /// `SUBSCRIBE channel`: returns once the server confirmed it.
    pub fn subscribe(&self, channel: impl AsRef<[u8]>) -> Result<Subscription> {
        self.add(MessageKind::Channel, channel.as_ref())
    }

    /// `PSUBSCRIBE pattern` (glob-style).
    ///
    /// Keyspace notifications (`__keyspace@0__:*`, `__keyevent@0__:expired`, `__key*`)
    /// are published by each server for its own keys: in a cluster such a pattern or
    /// channel is held on every master (following the topology: a promoted replica
    /// gets it, a demoted master drops it), and this returns once every master has
    /// confirmed it. The servers only publish them when `notify-keyspace-events` is
    /// set (`db.config_set("notify-keyspace-events", "KEA")` reaches every node).
    pub fn psubscribe(&self, pattern: impl AsRef<[u8]>) -> Result<Subscription> {
        self.add(MessageKind::Pattern, pattern.as_ref())
    }

    /// `SSUBSCRIBE channel` (sharded: on the node that owns the channel's slot).
    pub fn ssubscribe(&self, channel: impl AsRef<[u8]>) -> Result<Subscription> {
        self.add(MessageKind::Sharded, channel.as_ref())
    }

    /// Subscribes with a callback run for every message on a dedicated thread (never
    /// on the connection's reader thread). Dropping the guard unsubscribes and ends it.
    pub fn subscribe_with<F>(
        &self,
        kind: MessageKind,
        name: impl AsRef<[u8]>,
        callback: F,
    ) -> Result<CallbackSubscription>
    where
        F: FnMut(Message) + Send + 'static,
    {
        let sub = self.add(kind, name.as_ref())?;
        let rx = sub.rx.clone();
        let thread = spawn_callback(
            "rr-pubsub-cb",
            name.as_ref(),
            move || rx.recv().ok(),
            callback,
        )?;
        Ok(CallbackSubscription {
            sub: Some(sub),
            thread: Some(thread),
        })
    }

    /// `PUBLISH channel payload`: the number of subscribers that received it.
    pub fn publish(&self, channel: impl AsRef<[u8]>, payload: impl AsRef<[u8]>) -> Result<i64> {
        let cmd = Cmd::typed("PUBLISH", RetryCategory::WriteAccumulating)
            .arg(channel.as_ref())
            .arg(payload.as_ref());
        self.inner.publisher.publish(&cmd)
    }

    /// `SPUBLISH channel payload` (sharded: routed by the channel's slot).
    pub fn spublish(&self, channel: impl AsRef<[u8]>, payload: impl AsRef<[u8]>) -> Result<i64> {
        let cmd = Cmd::typed("SPUBLISH", RetryCategory::WriteAccumulating)
            .key(channel.as_ref())
            .arg(payload.as_ref());
        self.inner.publisher.publish(&cmd)
    }

    /// Registers a subscription without waiting for the server to confirm it (a group
    /// subscribes on members that may be down; they confirm when they come back).
    pub(crate) fn add_unconfirmed(&self, kind: MessageKind, name: &[u8]) -> Subscription {
        let key: Key = (kind, name.to_vec());
        let reg = self.inner.registry.register(key.clone());
        if reg.first {
            if let Err(e) = self.inner.links.send(&key, true) {
                log::debug!("SUBSCRIBE deferred until reconnect: {e}");
            }
        }
        Subscription {
            key,
            id: reg.id,
            rx: reg.rx,
            dropped: reg.dropped,
            subscriber: self.clone(),
        }
    }

    pub(crate) fn add(&self, kind: MessageKind, name: &[u8]) -> Result<Subscription> {
        if self.inner.registry.is_closed() {
            return Err(closed_client().with_command(kind.subscribe_command()));
        }
        let key: Key = (kind, name.to_vec());
        let reg = self.inner.registry.register(key.clone());
        let sub = Subscription {
            key: key.clone(),
            id: reg.id,
            rx: reg.rx,
            dropped: reg.dropped,
            subscriber: self.clone(),
        };
        let deadline = deadline_after(Instant::now(), self.inner.timeout);
        if reg.first {
            // A send that fails (not connected) is not final: the supervisor
            // re-subscribes every wanted name when the connection comes back.
            if let Err(e) = self.inner.links.send(&key, true) {
                log::debug!("SUBSCRIBE deferred until reconnect: {e}");
            }
        }
        let servers = self.inner.links.carriers(&key);
        let answer = self.inner.registry.wait_answer(&key, servers, deadline);
        if answer == registry::Answer::Confirmed {
            Ok(sub)
        } else if let registry::Answer::Refused(reason) = answer {
            // The server's own reason (`NOPERM`, ...), not a timeout.
            Err(Error::from_server_reply(&reason).with_command(kind.subscribe_command()))
        } else if self.inner.registry.is_closed() {
            // Closed while waiting: say so at once rather than as a timeout.
            Err(closed_client().with_command(kind.subscribe_command()))
        } else {
            Err(Error::new(
                ErrorKind::Timeout,
                format!("the server did not confirm {}", kind.subscribe_command()),
            )
            .with_command(kind.subscribe_command()))
        }
    }

    fn remove(&self, key: &Key, id: u64) {
        if self.inner.registry.unregister(key, id) {
            if let Err(e) = self.inner.links.send(key, false) {
                log::debug!("{} not sent: {e}", key.0.unsubscribe_command());
            }
        }
    }
}

/// One subscription: a bounded queue of messages. Unsubscribes when dropped.
pub struct Subscription {
    key: Key,
    id: u64,
    rx: Receiver<Message>,
    dropped: Arc<AtomicU64>,
    subscriber: Subscriber,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("kind", &self.key.0)
            .field("name", &String::from_utf8_lossy(&self.key.1))
            .finish()
    }
}

impl Subscription {
    /// Waits for the next message; `ErrorKind::Closed` once the client is closed (or
    /// its last handle dropped) and the messages queued before that are read.
    pub fn recv(&self) -> Result<Message> {
        self.rx.recv().map_err(|_| closed())
    }

    /// Waits up to `timeout` for the next message.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Message> {
        self.rx.recv_timeout(timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => {
                Error::new(ErrorKind::Timeout, "no message within the timeout")
            }
            RecvTimeoutError::Disconnected => closed(),
        })
    }

    /// The next message if one is queued.
    pub fn try_recv(&self) -> Option<Message> {
        self.rx.try_recv().ok()
    }

    /// Messages as they come; ends when the client is closed (after the messages
    /// queued before that), so a `for` loop over it on a thread of its own ends too.
    pub fn iter(&self) -> impl Iterator<Item = Message> + '_ {
        self.rx.iter()
    }

    /// The underlying receiver, for `crossbeam_channel::select!`.
    pub fn receiver(&self) -> &Receiver<Message> {
        &self.rx
    }

    /// Messages dropped because this subscription's queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// What this subscription is to.
    pub fn kind(&self) -> MessageKind {
        self.key.0
    }

    /// Unsubscribes now (the same as dropping it).
    pub fn unsubscribe(self) {}
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscriber.remove(&self.key, self.id);
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the subscription has ended")
}

fn closed_client() -> Error {
    Error::new(ErrorKind::Closed, "the client is closed")
}

/// Runs `callback` for every message `next` yields, on a thread of its own named
/// `{prefix} {name}` (never on a connection's reader thread); the thread ends when
/// `next` yields nothing (the subscription ended).
pub(crate) fn spawn_callback<F>(
    prefix: &str,
    name: &[u8],
    mut next: impl FnMut() -> Option<Message> + Send + 'static,
    mut callback: F,
) -> Result<JoinHandle<()>>
where
    F: FnMut(Message) + Send + 'static,
{
    std::thread::Builder::new()
        .name(format!("{prefix} {}", String::from_utf8_lossy(name)))
        .spawn(move || {
            while let Some(msg) = next() {
                callback(msg);
            }
        })
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start a thread: {e}")))
}

/// A subscription whose messages go to a callback on its own thread.
pub struct CallbackSubscription {
    sub: Option<Subscription>,
    thread: Option<JoinHandle<()>>,
}

impl CallbackSubscription {
    /// Messages dropped because the callback fell behind.
    pub fn dropped(&self) -> u64 {
        self.sub.as_ref().map_or(0, Subscription::dropped)
    }
}

impl Drop for CallbackSubscription {
    fn drop(&mut self) {
        // Unsubscribing drops the queue's sender, which ends the callback thread.
        drop(self.sub.take());
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
