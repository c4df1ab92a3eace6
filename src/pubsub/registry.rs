//! The registry of a client's subscriptions: which names are wanted (so they can be
//! re-established after a reconnect), which the server has confirmed, and where each
//! message goes.
//!
//! Delivery runs on the reader thread and must never block it: every subscription has
//! a bounded queue, and when it is full the OLDEST message is dropped and counted, so a
//! slow consumer loses its own backlog and never delays other subscriptions, commands,
//! or the connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};

use super::message::{Message, MessageKind, PubSubFrame};
use crate::config::Endpoint;

/// Messages a subscription may leave unread before the oldest is dropped.
pub const SUBSCRIPTION_QUEUE_BOUND: usize = 4096;

pub(crate) type Key = (MessageKind, Vec<u8>);

struct Sink {
    id: u64,
    tx: Sender<Message>,
    // Held so the sender side can drop the oldest message when the queue is full.
    oldest: Receiver<Message>,
    dropped: Arc<AtomicU64>,
}

#[derive(Default)]
struct Entry {
    /// The servers whose confirmation is current (`None`: a server not named, in
    /// tests). Usually one; every master for a keyspace-notification subscription in
    /// a cluster. An unsubscribe from another server (the node a sharded
    /// subscription just left) is stale and must not undo it.
    confirmed_on: Vec<Option<Endpoint>>,
    /// The server refused it (`-NOPERM`, for example): the message, for the caller
    /// waiting for a confirmation that will not come.
    refused: Option<String>,
    sinks: Vec<Sink>,
}

impl Entry {
    fn confirmed(&self) -> bool {
        !self.confirmed_on.is_empty()
    }
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    next_id: u64,
    /// Set by `close`: every queue's sender is gone and no new one is handed out.
    closed: bool,
}

/// How the server answered a subscription request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Confirmed,
    /// Its error reply (`NOPERM ...`).
    Refused(String),
    /// Nothing within the deadline, or the registry closed.
    None,
}

/// What a new registration hands back to the subscription.
pub(crate) struct Registration {
    pub id: u64,
    pub rx: Receiver<Message>,
    pub dropped: Arc<AtomicU64>,
    /// Whether the name was new (so a SUBSCRIBE must be sent).
    pub first: bool,
}

#[derive(Default)]
pub(crate) struct Registry {
    inner: Mutex<Inner>,
    confirmed: Condvar,
}

impl Registry {
    pub(crate) fn new() -> Registry {
        Registry::default()
    }

    pub(crate) fn register(&self, key: Key) -> Registration {
        let (tx, rx) = bounded(SUBSCRIPTION_QUEUE_BOUND);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut inner = self.inner.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        if inner.closed {
            // The client is closed: the queue is born ended (its sender dropped here),
            // and nothing is to be sent to a server.
            return Registration {
                id,
                rx,
                dropped,
                first: false,
            };
        }
        let entry = inner.entries.entry(key).or_default();
        let first = entry.sinks.is_empty();
        if first {
            // A fresh request: an earlier refusal says nothing about this one.
            entry.refused = None;
        }
        entry.sinks.push(Sink {
            id,
            tx,
            oldest: rx.clone(),
            dropped: dropped.clone(),
        });
        Registration {
            id,
            rx,
            dropped,
            first,
        }
    }

    /// Removes one subscription; true when it was the last for its name (so an
    /// UNSUBSCRIBE should be sent).
    pub(crate) fn unregister(&self, key: &Key, id: u64) -> bool {
        let mut inner = self.inner.lock();
        let Some(entry) = inner.entries.get_mut(key) else {
            return false;
        };
        entry.sinks.retain(|s| s.id != id);
        if entry.sinks.is_empty() {
            inner.entries.remove(key);
            return true;
        }
        false
    }

    /// The client closed: drops every queue's sender so that `recv` and `iter` on every
    /// subscription end (after the messages already queued), wakes any caller waiting
    /// for a confirmation, and makes later registrations ended from the start.
    /// Idempotent.
    pub(crate) fn close(&self) {
        let entries = {
            let mut inner = self.inner.lock();
            inner.closed = true;
            std::mem::take(&mut inner.entries)
        };
        self.confirmed.notify_all();
        // Dropped outside the lock; the senders go with the entries.
        drop(entries);
    }

    /// Whether `close` was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }

    /// Every name wanted now, for re-subscribing after a reconnect.
    pub(crate) fn wanted(&self) -> Vec<Key> {
        self.inner.lock().entries.keys().cloned().collect()
    }

    pub(crate) fn is_confirmed(&self, key: &Key) -> bool {
        self.inner
            .lock()
            .entries
            .get(key)
            .is_some_and(Entry::confirmed)
    }

    /// The subscription connection to `server` was lost: what it confirmed is not
    /// confirmed any more.
    pub(crate) fn forget_confirmations(&self, server: &Endpoint) {
        for entry in self.inner.lock().entries.values_mut() {
            entry
                .confirmed_on
                .retain(|c| c.as_ref().is_some_and(|c| c != server));
        }
    }

    /// Waits until a server confirmed `key` or `deadline` passes.
    #[cfg(test)]
    pub(crate) fn wait_confirmed(&self, key: &Key, deadline: Instant) -> bool {
        matches!(self.wait_answer(key, 1, deadline), Answer::Confirmed)
    }

    /// Waits until `servers` servers confirmed `key`, one refused it, or `deadline`
    /// passes.
    pub(crate) fn wait_answer(&self, key: &Key, servers: usize, deadline: Instant) -> Answer {
        let enough = |e: &Entry| e.confirmed_on.len() >= servers.max(1);
        let mut inner = self.inner.lock();
        loop {
            if inner.closed {
                return Answer::None;
            }
            match inner.entries.get(key) {
                Some(e) if enough(e) => return Answer::Confirmed,
                Some(e) if e.refused.is_some() => {
                    return Answer::Refused(e.refused.clone().unwrap_or_default())
                }
                None => return Answer::None,
                Some(_) => {}
            }
            if self.confirmed.wait_until(&mut inner, deadline).timed_out() {
                return match inner.entries.get(key) {
                    Some(e) if enough(e) => Answer::Confirmed,
                    _ => Answer::None,
                };
            }
        }
    }

    /// The server refused a subscription request on a connection (error replies do
    /// not name the channel): every subscription not confirmed yet is marked refused,
    /// so its waiting caller gets the server's reason instead of a timeout.
    pub(crate) fn refused(&self, message: &str) {
        let mut inner = self.inner.lock();
        for entry in inner.entries.values_mut().filter(|e| !e.confirmed()) {
            entry.refused = Some(message.to_string());
        }
        drop(inner);
        self.confirmed.notify_all();
    }

    /// Applies one pub/sub frame from an unnamed server (tests).
    #[cfg(test)]
    pub(crate) fn apply(&self, frame: PubSubFrame) -> Option<Key> {
        self.apply_from(frame, None)
    }

    /// Applies one pub/sub frame received from `from`; returns the name of a
    /// subscription the server ended on its own while we still want it and no other
    /// server still carries (to be re-established). An unsubscribe from a server that
    /// is not among those that confirmed it is stale (a slot migration's `SUNSUBSCRIBE`
    /// arriving after the subscription already moved) and is ignored: acting on it
    /// would re-subscribe what is already in place.
    pub(crate) fn apply_from(&self, frame: PubSubFrame, from: Option<&Endpoint>) -> Option<Key> {
        match frame {
            PubSubFrame::Message(message) => {
                self.deliver(message);
                None
            }
            PubSubFrame::Subscribed(kind, name) => {
                let mut inner = self.inner.lock();
                let key = (kind, name);
                let spread = super::is_keyspace_notification(&key);
                if let Some(e) = inner.entries.get_mut(&key) {
                    let from = from.cloned();
                    // Held on several servers only when it is a keyspace-notification
                    // one in a cluster; any other is carried by the last to confirm.
                    if !spread {
                        e.confirmed_on.clear();
                    }
                    if !e.confirmed_on.contains(&from) {
                        e.confirmed_on.push(from);
                    }
                    e.refused = None;
                }
                self.confirmed.notify_all();
                None
            }
            PubSubFrame::Unsubscribed(kind, name) => {
                let key = (kind, name);
                let mut inner = self.inner.lock();
                let entry = inner.entries.get_mut(&key)?;
                let from = from.cloned();
                let stale =
                    entry.confirmed() && from.is_some() && !entry.confirmed_on.contains(&from);
                if stale {
                    return None;
                }
                entry.confirmed_on.retain(|c| *c != from);
                // Still wanted and carried nowhere: the server dropped it (a sharded
                // slot moved).
                (!entry.confirmed()).then_some(key)
            }
        }
    }

    fn deliver(&self, message: Message) {
        let key_name = match message.kind {
            MessageKind::Pattern => message.pattern.clone().unwrap_or_default(),
            _ => message.channel.clone(),
        };
        let inner = self.inner.lock();
        let Some(entry) = inner.entries.get(&(message.kind, key_name)) else {
            return;
        };
        for sink in &entry.sinks {
            let mut msg = message.clone();
            loop {
                match sink.tx.try_send(msg) {
                    Ok(()) | Err(TrySendError::Disconnected(_)) => break,
                    Err(TrySendError::Full(back)) => {
                        msg = back;
                        if sink.oldest.try_recv().is_ok() {
                            sink.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ch: &str, n: usize) -> PubSubFrame {
        PubSubFrame::Message(Message {
            kind: MessageKind::Channel,
            channel: ch.as_bytes().to_vec(),
            pattern: None,
            payload: n.to_string().into_bytes(),
            received_at: Instant::now(),
        })
    }

    #[test]
    fn a_full_queue_drops_the_oldest_and_counts() {
        let r = Registry::new();
        let key = (MessageKind::Channel, b"c".to_vec());
        let reg = r.register(key.clone());
        for n in 0..SUBSCRIPTION_QUEUE_BOUND + 5 {
            r.apply(msg("c", n));
        }
        assert_eq!(reg.dropped.load(Ordering::Relaxed), 5);
        let first = reg.rx.try_recv().unwrap();
        assert_eq!(first.payload, b"5");
    }

    #[test]
    fn close_ends_every_queue_and_later_registrations() {
        let r = Arc::new(Registry::new());
        let key = (MessageKind::Channel, b"c".to_vec());
        let reg = r.register(key.clone());
        r.apply(msg("c", 1));
        let waiter = {
            let (r, key) = (r.clone(), key.clone());
            // Whether it starts waiting before or after the close, it must return.
            std::thread::spawn(move || {
                r.wait_confirmed(&key, Instant::now() + std::time::Duration::from_secs(30))
            })
        };
        r.close();
        r.close();
        assert!(
            !waiter.join().unwrap(),
            "a closed registry confirms nothing"
        );
        assert_eq!(reg.rx.recv().unwrap().payload, b"1");
        assert!(reg.rx.recv().is_err(), "ended after the queued message");
        assert!(r.is_closed());
        assert!(r.wanted().is_empty());
        let late = r.register(key.clone());
        assert!(!late.first, "nothing to subscribe on a closed client");
        assert!(late.rx.recv().is_err());
        assert!(!r.unregister(&key, late.id));
    }

    #[test]
    fn confirmations_and_server_side_unsubscribes() {
        let r = Registry::new();
        let key = (MessageKind::Sharded, b"{a}".to_vec());
        let a = r.register(key.clone());
        assert!(a.first);
        assert!(!r.register(key.clone()).first);
        r.apply(PubSubFrame::Subscribed(
            MessageKind::Sharded,
            b"{a}".to_vec(),
        ));
        assert!(r.wait_confirmed(&key, Instant::now()));
        let again = r.apply(PubSubFrame::Unsubscribed(
            MessageKind::Sharded,
            b"{a}".to_vec(),
        ));
        assert_eq!(again, Some(key.clone()));
        assert!(!r.wait_confirmed(&key, Instant::now()));
        assert!(!r.unregister(&key, a.id));
    }

    #[test]
    fn an_unsubscribe_from_the_node_a_subscription_left_is_stale() {
        let r = Registry::new();
        let key = (MessageKind::Sharded, b"{a}".to_vec());
        let _a = r.register(key.clone());
        let (old, new) = (Endpoint::new("h", 1), Endpoint::new("h", 2));
        let frame = |sub: bool| {
            if sub {
                PubSubFrame::Subscribed(MessageKind::Sharded, b"{a}".to_vec())
            } else {
                PubSubFrame::Unsubscribed(MessageKind::Sharded, b"{a}".to_vec())
            }
        };
        r.apply_from(frame(true), Some(&new));
        assert_eq!(r.apply_from(frame(false), Some(&old)), None);
        assert!(r.is_confirmed(&key));
        assert_eq!(r.apply_from(frame(false), Some(&new)), Some(key.clone()));
        assert!(!r.is_confirmed(&key));
    }
}
