//! Client events and the bus that delivers them without ever blocking the sender.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use parking_lot::Mutex;

use crate::config::Endpoint;
use crate::error::{Error, FailureKind};
use crate::maintenance::MaintenanceEvent;

/// Something that happened to a client's connections.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ClientEvent {
    /// A connection failed (or was closed on purpose, e.g. by a circuit breaker).
    ConnectionFailed {
        /// The server.
        endpoint: Endpoint,
        /// Why.
        failure: FailureKind,
        /// The error, classified.
        error: Error,
    },
    /// A connection is back after a failure.
    ConnectionRestored {
        /// The server.
        endpoint: Endpoint,
    },
    /// An attempt to reconnect failed; the client keeps trying with back-off.
    ReconnectFailed {
        /// The server.
        endpoint: Endpoint,
        /// Which attempt this was (1-based).
        attempt: u32,
        /// The error, classified.
        error: Error,
    },
    /// A server announced maintenance (see [`crate::maintenance`]); raised once per
    /// event although every node sends its own copy.
    Maintenance(MaintenanceEvent),
    /// The client acted on a `MOVING` or `MIGRATED` (see
    /// [`HandoffReport`](crate::maintenance::HandoffReport)); a recycle is also reported
    /// as `ConnectionFailed` with `FailureKind::MaintenanceHandoff`, then restored.
    Handoff(crate::maintenance::HandoffReport),
    /// The credentials provider failed to give renewed credentials: when asked for
    /// them by a re-authentication round (it is asked again with back-off), or on its
    /// own, as reported by
    /// [`CredentialsProvider::renewal_failure`](crate::config::CredentialsProvider::renewal_failure)
    /// (a [`TokenCredentials`](crate::config::TokenCredentials) that cannot reach its
    /// identity service; it retries by itself, and the error's text says how long the
    /// token in use has left). Either way the connections keep the credentials they
    /// have.
    CredentialsUnavailable {
        /// The provider's error.
        error: Error,
        /// Failures in a row.
        attempt: u32,
    },
    /// Re-authenticating a live connection with renewed credentials failed (the
    /// connection keeps the credentials it had; the server decides when those end).
    /// Tried again with back-off (`reconnectMin` doubling up to `reconnectMax`) until
    /// it succeeds or the provider's generation moves again.
    ReauthenticationFailed {
        /// The server.
        endpoint: Endpoint,
        /// Why, classified (never the secret).
        error: Error,
    },
    /// Every open connection of the client (interactive, subscription and blocking
    /// connections, on every node, those being dialled or drained included) now holds
    /// the credentials of `generation` (see
    /// [`CredentialsProvider::generation`](crate::config::CredentialsProvider::generation))
    /// or newer, re-authenticated in place or opened afresh: nothing the client holds
    /// uses older credentials, so they may be revoked now. Raised once per generation
    /// reached (when several changes land within one round, for the newest only); see
    /// also [`Client::credentials_generation`](crate::Client::credentials_generation).
    Reauthenticated {
        /// The provider generation every open connection is on, at least.
        generation: u64,
        /// How many connections were open (or being opened) then.
        connections: usize,
    },
}

/// How many events a subscriber may leave unread before newer ones are dropped: a slow
/// consumer must never block a reader thread or the supervisor.
pub const EVENT_QUEUE_BOUND: usize = 1024;

/// Fans events out to every `events()` receiver.
///
/// Closing it drops every subscriber's sender, so a watcher looping on
/// `events.iter()` (or waiting in `recv`) ends instead of waiting forever.
pub(crate) struct EventBus<E> {
    /// `None` once closed: a later `subscribe` gets an already-ended receiver.
    subscribers: Mutex<Option<Vec<Sender<E>>>>,
    dropped: AtomicU64,
}

// Not derived: a derived default would be a closed bus (`None`).
impl<E: Clone> Default for EventBus<E> {
    fn default() -> EventBus<E> {
        EventBus::new()
    }
}

impl<E: Clone> EventBus<E> {
    pub(crate) fn new() -> EventBus<E> {
        EventBus {
            subscribers: Mutex::new(Some(Vec::new())),
            dropped: AtomicU64::new(0),
        }
    }

    /// A new receiver; after `close` it is already disconnected (its sender is
    /// dropped here), so `recv` and `iter` on it end at once.
    pub(crate) fn subscribe(&self) -> Receiver<E> {
        let (tx, rx) = bounded(EVENT_QUEUE_BOUND);
        if let Some(subs) = self.subscribers.lock().as_mut() {
            subs.push(tx);
        }
        rx
    }

    /// Ends every receiver (queued events stay readable, then they report
    /// disconnection) and every later one. Idempotent.
    pub(crate) fn close(&self) {
        // Dropped after the lock is released: nothing runs under it.
        let senders = self.subscribers.lock().take();
        drop(senders);
    }

    /// Whether `close` was called.
    #[allow(dead_code)] // read by tests (and by the group's close)
    pub(crate) fn is_closed(&self) -> bool {
        self.subscribers.lock().is_none()
    }

    /// Sends `event` to every subscriber; does nothing once closed.
    pub(crate) fn publish(&self, event: E) {
        let mut guard = self.subscribers.lock();
        let Some(subs) = guard.as_mut() else {
            return;
        };
        subs.retain(|tx| match tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Events dropped because a subscriber's queue was full.
    #[allow(dead_code)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_subscriber_never_blocks_and_a_gone_one_is_removed() {
        let bus = EventBus::new();
        let slow = bus.subscribe();
        let gone = bus.subscribe();
        drop(gone);
        for i in 0..(EVENT_QUEUE_BOUND + 10) {
            bus.publish(i);
        }
        assert_eq!(slow.len(), EVENT_QUEUE_BOUND);
        assert_eq!(bus.dropped(), 10);
        assert_eq!(bus.subscribers.lock().as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn close_ends_every_receiver_and_later_ones() {
        let bus = EventBus::new();
        let early = bus.subscribe();
        bus.publish(1);
        bus.close();
        bus.close();
        assert!(bus.is_closed());
        // What was queued before the close is still delivered, then the end.
        assert_eq!(early.recv(), Ok(1));
        assert!(early.recv().is_err());
        let late = bus.subscribe();
        assert_eq!(late.iter().count(), 0);
        bus.publish(2);
        assert!(late.try_recv().is_err());
    }
}
