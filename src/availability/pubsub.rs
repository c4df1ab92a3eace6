//! Pub/sub across a group: every subscription is made on every member (so it is in
//! place before traffic moves), only messages from the active member are delivered,
//! and publishing goes to the active member. Seen from the caller it is pub/sub with
//! the active member alone, through failovers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Select;

use super::group::Handle;
use crate::commands::{Cmd, Database, RetryCategory};
use crate::error::{Error, ErrorKind, Result};
use crate::pubsub::{Message, MessageKind, Subscription};

/// Subscribes and publishes through a group (see [`super::Group::subscriber`]).
///
/// Members added after a subscription was made do not carry it; subscribe again
/// after adding members.
#[derive(Clone)]
pub struct GroupSubscriber {
    handle: Arc<Handle>,
    db: Database,
}

impl GroupSubscriber {
    pub(crate) fn new(handle: Arc<Handle>, db: Database) -> GroupSubscriber {
        GroupSubscriber { handle, db }
    }

    /// `SUBSCRIBE` on every member; returns once the active member confirmed it.
    pub fn subscribe(&self, channel: impl AsRef<[u8]>) -> Result<GroupSubscription> {
        self.add(MessageKind::Channel, channel.as_ref())
    }

    /// `PSUBSCRIBE` on every member.
    pub fn psubscribe(&self, pattern: impl AsRef<[u8]>) -> Result<GroupSubscription> {
        self.add(MessageKind::Pattern, pattern.as_ref())
    }

    /// `SSUBSCRIBE` on every member.
    pub fn ssubscribe(&self, channel: impl AsRef<[u8]>) -> Result<GroupSubscription> {
        self.add(MessageKind::Sharded, channel.as_ref())
    }

    /// `PUBLISH` to the active member.
    pub fn publish(&self, channel: impl AsRef<[u8]>, payload: impl AsRef<[u8]>) -> Result<i64> {
        let cmd = Cmd::typed("PUBLISH", RetryCategory::WriteAccumulating)
            .arg(channel.as_ref())
            .arg(payload.as_ref());
        self.db.query(&cmd)
    }

    /// `SPUBLISH` to the active member.
    pub fn spublish(&self, channel: impl AsRef<[u8]>, payload: impl AsRef<[u8]>) -> Result<i64> {
        let cmd = Cmd::typed("SPUBLISH", RetryCategory::WriteAccumulating)
            .key(channel.as_ref())
            .arg(payload.as_ref());
        self.db.query(&cmd)
    }

    fn add(&self, kind: MessageKind, name: &[u8]) -> Result<GroupSubscription> {
        let group = &self.handle.0;
        let active = group.active();
        let mut parts = Vec::new();
        for member in group.members.read().iter() {
            let Some(client) = member.client() else {
                continue;
            };
            let sub = client.subscriber();
            let part = if active.as_ref() == Some(member) {
                sub.add(kind, name)?
            } else {
                sub.add_unconfirmed(kind, name)
            };
            parts.push((member.inner.id, part));
        }
        Ok(GroupSubscription {
            handle: self.handle.clone(),
            parts,
        })
    }
}

/// A subscription on every member, delivering the active member's messages only.
pub struct GroupSubscription {
    handle: Arc<Handle>,
    parts: Vec<(u64, Subscription)>,
}

impl GroupSubscription {
    /// Waits up to `timeout` for the next message from the active member; messages
    /// from other members are dropped as they are met.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Message> {
        let deadline = crate::connection::deadline_after(Instant::now(), timeout);
        loop {
            let mut select = Select::new();
            for (_, part) in &self.parts {
                select.recv(part.receiver());
            }
            let op = match select.select_deadline(deadline) {
                Ok(op) => op,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        "no message within the timeout",
                    ))
                }
            };
            let index = op.index();
            let Some((member, part)) = self.parts.get(index) else {
                return Err(Error::new(ErrorKind::Closed, "the subscription has ended"));
            };
            let message = op
                .recv(part.receiver())
                .map_err(|_| Error::new(ErrorKind::Closed, "the subscription has ended"))?;
            // Decided by who was active when the message arrived, not when it is read:
            // a message from a then-passive member must not surface after a failover.
            if self.handle.0.was_active(*member, message.received_at) {
                return Ok(message);
            }
        }
    }

    /// The next message from the active member, if one is queued.
    pub fn try_recv(&self) -> Option<Message> {
        self.recv_timeout(Duration::ZERO).ok()
    }
}
