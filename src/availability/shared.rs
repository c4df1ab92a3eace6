//! What a group's handles share: the members, the active member as the supervisor
//! last published it, the change generation callers wait on, events, and the inbox of
//! the supervisor that owns every decision.
//!
//! Owns: nothing that decides. Everything here is either a published copy of the
//! core's decisions (written by the supervisor only) or a way to reach it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, RwLock};

use super::events::GroupEvent;
use super::inbox::{Inbox, Message};
use super::member::GroupMember;
use super::options::GroupOptions;
use crate::client::events::EventBus;

/// Active-member changes remembered for pub/sub delivery decisions.
const HISTORY: usize = 64;

/// Something that follows the group's membership (a group subscription carries its
/// subscription to members added later).
pub(crate) trait MemberFollower: Send + Sync {
    /// `member` joined the group (its client exists).
    fn member_added(&self, member: &GroupMember);
    /// The member with this id left the group.
    fn member_removed(&self, id: u64);
    /// The group closed: whoever waits on it must stop.
    fn group_closed(&self);
}

pub(crate) struct GroupShared {
    pub(crate) options: GroupOptions,
    pub(crate) members: RwLock<Vec<GroupMember>>,
    active: RwLock<Option<GroupMember>>,
    /// Bumped when the active member changes or a member (dis)connects; callers whose
    /// command could not be sent wait on it (the group's backlog).
    generation: Mutex<u64>,
    changed: Condvar,
    pub(crate) events: EventBus<GroupEvent>,
    /// Recent changes of the active member (time, member id), newest last, so pub/sub
    /// can tell which member was active when a message arrived.
    history: Mutex<VecDeque<(Instant, Option<u64>)>>,
    pub(crate) inbox: Inbox,
    pub(crate) supervisor: Mutex<Option<JoinHandle<()>>>,
    pub(crate) closed: AtomicBool,
    followers: Mutex<Vec<Weak<dyn MemberFollower>>>,
}

impl GroupShared {
    pub(crate) fn new(options: GroupOptions, inbox: Inbox) -> GroupShared {
        GroupShared {
            options,
            members: RwLock::new(Vec::new()),
            active: RwLock::new(None),
            generation: Mutex::new(0),
            changed: Condvar::new(),
            events: EventBus::new(),
            history: Mutex::new(VecDeque::with_capacity(HISTORY)),
            inbox,
            supervisor: Mutex::new(None),
            closed: AtomicBool::new(false),
            followers: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn active(&self) -> Option<GroupMember> {
        self.active.read().clone()
    }

    /// The member with this id, if it is in the group.
    pub(crate) fn member(&self, id: u64) -> Option<GroupMember> {
        self.members.read().iter().find(|m| m.id() == id).cloned()
    }

    /// Publishes the core's choice (supervisor only) and remembers when it changed.
    pub(crate) fn set_active(&self, member: Option<GroupMember>) {
        let id = member.as_ref().map(GroupMember::id);
        *self.active.write() = member;
        let mut history = self.history.lock();
        if history.len() == HISTORY {
            history.pop_front();
        }
        history.push_back((Instant::now(), id));
    }

    /// The current change generation.
    pub(crate) fn generation(&self) -> u64 {
        *self.generation.lock()
    }

    /// Announces a change to callers waiting in the group's backlog.
    pub(crate) fn bump(&self) {
        *self.generation.lock() += 1;
        self.changed.notify_all();
    }

    /// Waits until the generation moves past `seen` or `deadline`; whether it moved.
    pub(crate) fn wait_changed(&self, seen: u64, deadline: Instant) -> bool {
        let mut generation = self.generation.lock();
        while *generation == seen {
            if self.is_closed()
                || self
                    .changed
                    .wait_until(&mut generation, deadline)
                    .timed_out()
            {
                return *generation != seen;
            }
        }
        true
    }

    /// Whether member `id` was the active member at `at`.
    pub(crate) fn was_active(&self, id: u64, at: Instant) -> bool {
        let history = self.history.lock();
        match history.iter().rev().find(|(t, _)| *t <= at) {
            Some((_, active)) => *active == Some(id),
            // Older than the history: only the oldest recorded state can tell.
            None => false,
        }
    }

    /// Why each member cannot serve, for an error that says no member could:
    /// `m0: cannot connect: Connection refused; m1: still connecting`.
    pub(crate) fn member_causes(&self) -> String {
        self.members
            .read()
            .iter()
            .map(|m| {
                let view = *m.inner.view.read();
                let cause = match m.client() {
                    _ if view.connected && view.unhealthy => "flagged unhealthy".to_string(),
                    _ if view.connected => "connected".to_string(),
                    Some(c) => match c.last_connect_error() {
                        Some(e) => e.to_string(),
                        None if !view.settled => "still connecting".to_string(),
                        None => "disconnected".to_string(),
                    },
                    None => "not started".to_string(),
                };
                format!("{}: {cause}", m.name())
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub(crate) fn follow(&self, follower: Weak<dyn MemberFollower>) {
        let mut followers = self.followers.lock();
        followers.retain(|f| f.strong_count() > 0);
        followers.push(follower);
    }

    /// The followers still alive.
    pub(crate) fn followers(&self) -> Vec<Arc<dyn MemberFollower>> {
        let mut followers = self.followers.lock();
        followers.retain(|f| f.strong_count() > 0);
        followers.iter().filter_map(Weak::upgrade).collect()
    }

    /// Ends the supervisor, closes every member (their hung dials overlap rather than
    /// add up), and wakes every waiting caller. Idempotent.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.inbox.send(Message::Shutdown);
        if let Some(t) = self.supervisor.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        let members = self.members.read().clone();
        for m in &members {
            if let Some(c) = m.client() {
                c.stop();
            }
        }
        for m in &members {
            if let Some(c) = m.client() {
                c.close();
            }
        }
        *self.active.write() = None;
        for follower in self.followers() {
            follower.group_closed();
        }
        // Ends every `events()` receiver (a `for e in events.iter()` watcher ends).
        self.events.close();
        self.bump();
    }
}

/// Dropping the last guard (held by the group, its databases and subscribers) closes
/// the group.
pub(crate) struct GroupGuard(pub(crate) Arc<GroupShared>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.0.close();
    }
}
