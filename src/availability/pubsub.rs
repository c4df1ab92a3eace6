//! Pub/sub across a group: every subscription is made on every member (members added
//! later included, so it is in place before traffic moves), only messages from the
//! active member are delivered, and publishing goes to the active member. Seen from
//! the caller it is pub/sub with the active member alone, through failovers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Select, Sender};
use parking_lot::Mutex;

use super::member::GroupMember;
use super::shared::{GroupGuard, MemberFollower};
use crate::commands::{Cmd, Database, RetryCategory};
use crate::error::{Error, ErrorKind, Result};
use crate::pubsub::{Message, MessageKind, Subscription};

/// Subscribes and publishes through a group (see [`super::Group::subscriber`]): the
/// same calls as [`crate::pubsub::Subscriber`].
#[derive(Clone)]
pub struct GroupSubscriber {
    guard: Arc<GroupGuard>,
    db: Database,
}

impl std::fmt::Debug for GroupSubscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupSubscriber").finish_non_exhaustive()
    }
}

impl GroupSubscriber {
    pub(crate) fn new(guard: Arc<GroupGuard>, db: Database) -> GroupSubscriber {
        GroupSubscriber { guard, db }
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

    /// Subscribes with a callback run for every message from the active member, on a
    /// dedicated thread. Dropping the guard unsubscribes and ends it (so does closing
    /// the group).
    pub fn subscribe_with<F>(
        &self,
        kind: MessageKind,
        name: impl AsRef<[u8]>,
        callback: F,
    ) -> Result<GroupCallbackSubscription>
    where
        F: FnMut(Message) + Send + 'static,
    {
        let sub = self.add(kind, name.as_ref())?;
        let parts = sub.parts.clone();
        let thread = crate::pubsub::spawn_callback(
            "rr-group-pubsub-cb",
            name.as_ref(),
            move || sub.recv().ok(),
            callback,
        )?;
        Ok(GroupCallbackSubscription {
            parts,
            thread: Some(thread),
        })
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
        let group = &self.guard.0;
        let (changed_tx, changed_rx) = bounded(1);
        let parts = Arc::new(Parts {
            kind,
            name: name.to_vec(),
            parts: Mutex::new(Vec::new()),
            changed_tx,
            changed_rx,
            ended: AtomicBool::new(false),
            from_passive: AtomicU64::new(0),
        });
        // Following first: a member added meanwhile is subscribed once, not missed.
        let follower: Arc<dyn MemberFollower> = parts.clone();
        group.follow(Arc::downgrade(&follower));
        let active = group.active();
        for member in group.members.read().clone() {
            let Some(client) = member.client() else {
                continue;
            };
            let part = if active.as_ref() == Some(&member) {
                client.subscriber().add(kind, name)?
            } else {
                client.subscriber().add_unconfirmed(kind, name)
            };
            parts.insert(member.id(), part);
        }
        Ok(GroupSubscription {
            guard: self.guard.clone(),
            parts,
        })
    }
}

/// One group subscription's per-member subscriptions, kept in step with the members.
struct Parts {
    kind: MessageKind,
    name: Vec<u8>,
    parts: Mutex<Vec<(u64, Subscription)>>,
    /// Wakes a receiver waiting on the old set of members.
    changed_tx: Sender<()>,
    changed_rx: Receiver<()>,
    /// Unsubscribed (a callback guard dropped) or the group closed.
    ended: AtomicBool,
    /// Messages not delivered because their member was not active when they arrived.
    from_passive: AtomicU64,
}

impl Parts {
    fn insert(&self, id: u64, part: Subscription) {
        let mut parts = self.parts.lock();
        if !parts.iter().any(|(m, _)| *m == id) {
            parts.push((id, part));
        }
        drop(parts);
        let _ = self.changed_tx.try_send(());
    }

    /// Messages dropped because a member's queue was full, over every member.
    fn dropped(&self) -> u64 {
        self.parts.lock().iter().map(|(_, p)| p.dropped()).sum()
    }

    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.parts.lock().clear();
        let _ = self.changed_tx.try_send(());
    }
}

impl MemberFollower for Parts {
    fn member_added(&self, member: &GroupMember) {
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        if let Some(client) = member.client() {
            let part = client.subscriber().add_unconfirmed(self.kind, &self.name);
            self.insert(member.id(), part);
        }
    }

    fn member_removed(&self, id: u64) {
        self.parts.lock().retain(|(m, _)| *m != id);
        let _ = self.changed_tx.try_send(());
    }

    fn group_closed(&self) {
        self.end();
    }
}

/// A subscription on every member, delivering the active member's messages only.
pub struct GroupSubscription {
    guard: Arc<GroupGuard>,
    parts: Arc<Parts>,
}

impl std::fmt::Debug for GroupSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupSubscription")
            .field("kind", &self.parts.kind)
            .field("name", &String::from_utf8_lossy(&self.parts.name))
            .finish()
    }
}

impl GroupSubscription {
    /// Waits for the next message from the active member; an error once the group is
    /// closed.
    pub fn recv(&self) -> Result<Message> {
        self.next(None)
    }

    /// Waits up to `timeout` for the next message from the active member; messages
    /// from other members are dropped as they are met.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Message> {
        self.next(Some(crate::clock::deadline_after(Instant::now(), timeout)))
    }

    /// The next message from the active member, if one is queued.
    pub fn try_recv(&self) -> Option<Message> {
        self.recv_timeout(Duration::ZERO).ok()
    }

    /// Messages as they come; ends when the group closes.
    pub fn iter(&self) -> impl Iterator<Item = Message> + '_ {
        std::iter::from_fn(move || self.recv().ok())
    }

    /// Messages dropped because a member's queue for this subscription was full.
    pub fn dropped(&self) -> u64 {
        self.parts.dropped()
    }

    /// Messages not delivered because the member they came from was not the active one
    /// when the client received them (counted as they are met, by `recv` and friends).
    /// The cut is the client's receipt: a message a member sent just before it became
    /// active, still unread at the switch, is delivered.
    pub fn from_passive(&self) -> u64 {
        self.parts.from_passive.load(Ordering::Relaxed)
    }

    /// What this subscription is to.
    pub fn kind(&self) -> MessageKind {
        self.parts.kind
    }

    /// Unsubscribes on every member now (the same as dropping it).
    pub fn unsubscribe(self) {}

    fn next(&self, deadline: Option<Instant>) -> Result<Message> {
        let group = &self.guard.0;
        loop {
            if self.parts.ended.load(Ordering::Acquire) || group.is_closed() {
                return Err(Error::new(ErrorKind::Closed, "the subscription has ended"));
            }
            // Receivers of the members now; a change of members wakes the select.
            let receivers: Vec<(u64, Receiver<Message>)> = self
                .parts
                .parts
                .lock()
                .iter()
                .map(|(id, p)| (*id, p.receiver().clone()))
                .collect();
            let mut select = Select::new();
            for (_, rx) in &receivers {
                select.recv(rx);
            }
            let changed = select.recv(&self.parts.changed_rx);
            let op = match deadline {
                Some(d) => select
                    .select_deadline(d)
                    .map_err(|_| Error::new(ErrorKind::Timeout, "no message within the timeout"))?,
                None => select.select(),
            };
            let index = op.index();
            if index == changed {
                let _ = op.recv(&self.parts.changed_rx);
                continue;
            }
            let Some((member, rx)) = receivers.get(index) else {
                continue;
            };
            let Ok(message) = op.recv(rx) else {
                // That member's subscription ended (its client closed): stop waiting on it.
                let gone = *member;
                self.parts.parts.lock().retain(|(m, _)| *m != gone);
                continue;
            };
            // Decided by who was active when the message arrived, not when it is read:
            // a message from a then-passive member must not surface after a failover.
            if group.was_active(*member, message.received_at) {
                return Ok(message);
            }
            self.parts.from_passive.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A group subscription whose messages go to a callback on its own thread (see
/// [`GroupSubscriber::subscribe_with`]). Dropping it unsubscribes and ends the thread.
pub struct GroupCallbackSubscription {
    parts: Arc<Parts>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for GroupCallbackSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCallbackSubscription")
            .field("kind", &self.parts.kind)
            .finish_non_exhaustive()
    }
}

impl GroupCallbackSubscription {
    /// Messages dropped because a member's queue for this subscription was full.
    pub fn dropped(&self) -> u64 {
        self.parts.dropped()
    }

    /// Messages not delivered because their member was not active when they arrived
    /// (see [`GroupSubscription::from_passive`]).
    pub fn from_passive(&self) -> u64 {
        self.parts.from_passive.load(Ordering::Relaxed)
    }
}

impl Drop for GroupCallbackSubscription {
    fn drop(&mut self) {
        self.parts.end();
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}
