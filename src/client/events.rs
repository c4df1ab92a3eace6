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
}

/// How many events a subscriber may leave unread before newer ones are dropped: a slow
/// consumer must never block a reader thread or the supervisor.
pub const EVENT_QUEUE_BOUND: usize = 1024;

/// Fans events out to every `events()` receiver.
#[derive(Default)]
pub(crate) struct EventBus<E> {
    subscribers: Mutex<Vec<Sender<E>>>,
    dropped: AtomicU64,
}

impl<E: Clone> EventBus<E> {
    pub(crate) fn new() -> EventBus<E> {
        EventBus {
            subscribers: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        }
    }

    pub(crate) fn subscribe(&self) -> Receiver<E> {
        let (tx, rx) = bounded(EVENT_QUEUE_BOUND);
        self.subscribers.lock().push(tx);
        rx
    }

    pub(crate) fn publish(&self, event: E) {
        let mut subs = self.subscribers.lock();
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
        assert_eq!(bus.subscribers.lock().len(), 1);
    }
}
