//! `Group`: several deployments (regions), the best one active. Callers use one
//! `Database` and one `Subscriber`; the group moves them between members on health
//! checks, tripped breakers, disconnects, failback and manual failover.
//!
//! Every decision is the core's (`core/`), taken on the group's supervisor thread;
//! the methods here send it inputs and read what it published.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver};

use super::checks::{failback_check, health_check};
use super::core::{Core, Input, MemberSpec, Settings, START_GRACE};
use super::events::GroupEvent;
use super::group_supervisor;
use super::inbox::{ask, Message, INBOX_BOUND};
use super::member::{GroupMember, Member};
use super::options::GroupOptions;
use super::shared::{GroupGuard, GroupShared};
use crate::client::{Client, MemberSetup};
use crate::clock::deadline_after;
use crate::commands::Database;
use crate::error::{Error, ErrorKind, Result};

/// A group of deployments served as one: the best member is active, and callers'
/// commands and subscriptions follow it.
///
/// ```no_run
/// use resilient_redis::availability::{Group, GroupOptions, Member};
/// use resilient_redis::prelude::*;
/// let group = Group::connect(
///     vec![
///         Member::new("redis://us-east.example:6379").with_name("US East").with_weight(10),
///         Member::new("redis://us-west.example:6379").with_name("US West").with_weight(5),
///     ],
///     GroupOptions::default(),
/// )?;
/// let db = group.database();
/// db.set("k", "v")?;
/// for event in group.events().try_iter() { println!("{event:?}"); }
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone)]
pub struct Group {
    guard: Arc<GroupGuard>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("members", &*self.shared().members.read())
            .field("active", &self.active().map(|m| m.name().to_string()))
            .finish()
    }
}

impl Group {
    /// Connects every member at once, each on its own thread, and returns as soon as
    /// the best member that is up can serve: members still connecting get a short
    /// grace (0.5 s after the first one is up) to be part of the first choice, and a
    /// member that hangs is never waited for: it takes traffic by the usual rules
    /// once it is up. Fails when no member can be reached within the members'
    /// connect timeout.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use resilient_redis::availability::{Group, GroupOptions, HealthCheck, Member};
    /// let group = Group::connect(
    ///     vec![
    ///         Member::new("rediss://eu.example:6380").with_name("eu").with_weight(10),
    ///         Member::new("rediss://us.example:6380").with_name("us").with_weight(5),
    ///     ],
    ///     GroupOptions::default()
    ///         .health_check(HealthCheck::default().interval(Duration::from_secs(1)))
    ///         .failback_delay(Duration::from_secs(60)),
    /// )?;
    /// println!("{}", group.status()); // members, weights, health, latency; `*` is active
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn connect(members: Vec<Member>, options: GroupOptions) -> Result<Group> {
        if members.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                "a group needs at least one member",
            ));
        }
        let core = Core::new(Settings {
            failback_delay: options.failback_delay,
            stall_threshold: options.stall_threshold,
        });
        let (inbox, inbox_rx) = bounded(INBOX_BOUND);
        let shared = Arc::new(GroupShared::new(options, inbox));
        // From here on, dropping `group` closes everything started so far.
        let group = Group {
            guard: Arc::new(GroupGuard(shared.clone())),
        };
        let weak = Arc::downgrade(&shared);
        let thread = std::thread::Builder::new()
            .name("rr-group-supervisor".to_string())
            .spawn(move || group_supervisor::run(weak, inbox_rx, core))
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start the supervisor: {e}")))?;
        *shared.supervisor.lock() = Some(thread);
        // Returned once the first choice is announced, so an events() receiver taken
        // after `connect` never sees the initial ActiveChanged.
        let changes = shared.events.subscribe();
        let members: Vec<GroupMember> =
            members.into_iter().map(Member::into_group_member).collect();
        for m in &members {
            join(&shared, m)?;
        }
        let connect_timeout = members
            .iter()
            .filter_map(|m| m.client().map(|c| c.options().connect_timeout))
            .max()
            .unwrap_or(Duration::from_secs(5));
        let deadline = deadline_after(Instant::now(), connect_timeout + START_GRACE);
        let chosen = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match changes.recv_timeout(left) {
                Ok(GroupEvent::ActiveChanged {
                    current: Some(_), ..
                }) => break true,
                Ok(_) => {}
                Err(_) => break false,
            }
        };
        if !chosen || shared.active().is_none() {
            return Err(Error::new(
                ErrorKind::Connect,
                format!(
                    "no member of the group could be reached ({})",
                    shared.member_causes()
                ),
            ));
        }
        Ok(group)
    }

    fn shared(&self) -> &Arc<GroupShared> {
        &self.guard.0
    }

    /// A handle for commands, always routed to the active member.
    pub fn database(&self) -> Database {
        Database::new(Arc::new(super::group_router::GroupRouter::new(
            self.guard.clone(),
        )))
    }

    /// Subscribes on every member (members added later too), delivers from the active
    /// member only, publishes to the active member: pub/sub as if talking to the
    /// active member alone.
    pub fn subscriber(&self) -> super::pubsub::GroupSubscriber {
        super::pubsub::GroupSubscriber::new(self.guard.clone(), self.database())
    }

    /// The members, as passed in (and added since).
    pub fn members(&self) -> Vec<GroupMember> {
        self.shared().members.read().clone()
    }

    /// The first member named `name`.
    pub fn member(&self, name: &str) -> Option<GroupMember> {
        self.shared()
            .members
            .read()
            .iter()
            .find(|m| m.name() == name)
            .cloned()
    }

    /// The member serving now.
    pub fn active(&self) -> Option<GroupMember> {
        self.shared().active()
    }

    /// A snapshot of every member (weight, health, latency, failback verdict, which one
    /// is active) whose `Display` is a readable table (see [`GroupStatus`](super::GroupStatus)).
    pub fn status(&self) -> super::GroupStatus {
        super::GroupStatus::of(&self.members(), self.active().as_ref())
    }

    /// Makes `member` the explicit choice (weight and latency ignored) until
    /// `try_failover_to(None)`, the group closes, or it disconnects. Clears its unhealthy
    /// flag and counts as a passed failback check. `false` when it is not in the group
    /// or not connected. `None` removes the override and returns whether there was one.
    /// Returns once the group has acted on it.
    pub fn try_failover_to(&self, member: Option<&GroupMember>) -> bool {
        let shared = self.shared();
        match member {
            None => ask(&shared.inbox, Input::Override(None)),
            Some(m) => {
                shared.members.read().contains(m)
                    && m.is_connected()
                    && ask(&shared.inbox, Input::Override(Some(m.id())))
            }
        }
    }

    /// Adds a member and connects it (on its own thread); returns it once its first
    /// connection attempt is over, bounded by its connect timeout. It takes traffic by
    /// the usual rules once it is up and has passed a health check.
    pub fn add(&self, member: Member) -> Result<GroupMember> {
        let shared = self.shared();
        let member = member.into_group_member();
        join(shared, &member)?;
        shared
            .events
            .publish(GroupEvent::MemberAdded(member.clone()));
        for follower in shared.followers() {
            follower.member_added(&member);
        }
        let timeout = member
            .client()
            .map_or(Duration::from_secs(5), |c| c.options().connect_timeout);
        let deadline = deadline_after(Instant::now(), timeout + START_GRACE);
        loop {
            let seen = shared.generation();
            if member.inner.view.read().settled || !shared.wait_changed(seen, deadline) {
                break;
            }
        }
        Ok(member)
    }

    /// Removes a member (closing its connections); whether it was in the group.
    pub fn remove(&self, member: &GroupMember) -> bool {
        let shared = self.shared();
        if !shared.members.read().contains(member)
            || !ask(&shared.inbox, Input::Removed(member.id()))
        {
            return false;
        }
        shared.members.write().retain(|m| m != member);
        for follower in shared.followers() {
            follower.member_removed(member.id());
        }
        if let Some(client) = member.client() {
            client.close();
        }
        shared
            .events
            .publish(GroupEvent::MemberRemoved(member.clone()));
        true
    }

    /// A new receiver of group events (bounded: a slow reader loses the newest events,
    /// never delays selection).
    pub fn events(&self) -> Receiver<GroupEvent> {
        self.shared().events.subscribe()
    }

    /// Closes every member and ends every thread. Idempotent.
    pub fn close(&self) {
        self.shared().close();
    }
}

/// Makes `member` part of the group: the core learns of it first (so its first
/// connection report finds it), then its client is created, dialing on its own thread.
fn join(shared: &Arc<GroupShared>, member: &GroupMember) -> Result<()> {
    let options = member.options()?;
    let _ = member.inner.inbox.set(shared.inbox.clone());
    let spec = MemberSpec {
        id: member.id(),
        weight: member.weight(),
        health_interval: health_check(&shared.options, member).interval,
        failback_interval: failback_check(&shared.options, member).map(|c| c.interval),
        local_failover: member.inner.local_failover,
    };
    let _ = shared.inbox.send(Message::Input(Input::Added(spec)));
    let id = member.id();
    let inbox = shared.inbox.clone();
    let setup = MemberSetup {
        breaker: shared.options.circuit_breaker.policy(),
        // try_send: a connection's thread never waits on the group; a report lost to a
        // full inbox is recovered by the supervisor's next poll.
        notify: Arc::new(move |signal| {
            let _ = inbox.try_send(Message::Signal(id, signal));
        }),
    };
    // Listed before its client exists, so its first report finds it.
    shared.members.write().push(member.clone());
    let client = match Client::connect_member(options, setup) {
        Ok(c) => c,
        Err(e) => {
            shared.members.write().retain(|m| m != member);
            let _ = shared.inbox.send(Message::Input(Input::Removed(id)));
            return Err(e);
        }
    };
    let db = client.database();
    let _ = member.inner.client.set(client);
    let _ = member.inner.database.set(db);
    Ok(())
}
