//! `Group`: several deployments (regions), the best one active. Callers use one
//! `Database` and one `Subscriber`; the group moves them between members on health
//! checks, tripped breakers, disconnects, failback and manual failover.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Active-member changes remembered for pub/sub delivery decisions.
const HISTORY: usize = 64;

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::{Mutex, RwLock};

use super::breaker::CircuitBreaker;
use super::events::{ChangeReason, GroupEvent};
use super::failback;
use super::health::HealthCheck;
use super::member::Member;
use super::selection::{select, Candidate};
use super::supervisor;
use crate::client::events::EventBus;
use crate::client::supervisor::Wake;
use crate::client::{Client, MemberSetup};
use crate::clock::{self, Clock};
use crate::commands::Database;
use crate::error::{Error, ErrorKind, Result};

/// Settings of a group.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GroupOptions {
    /// The health check of every member (a member may override it).
    pub health_check: HealthCheck,
    /// The circuit breaker on every member connection.
    pub circuit_breaker: CircuitBreaker,
    /// How long a member must have been free of failures before it is put back in
    /// rotation automatically (0: at once; `Duration::MAX`: only by hand).
    pub failback_delay: Duration,
    /// The failback check of every member (a member may override it): asked of members
    /// that are not active, only `Healthy` makes them eligible. `None` (the default):
    /// every member is eligible and selection is exactly as without the feature.
    pub failback_check: Option<HealthCheck>,
    /// The clock health and failback timing use.
    pub clock: Arc<dyn Clock>,
}

impl Default for GroupOptions {
    fn default() -> GroupOptions {
        GroupOptions {
            health_check: HealthCheck::default(),
            circuit_breaker: CircuitBreaker::default(),
            failback_delay: Duration::ZERO,
            failback_check: None,
            clock: clock::system(),
        }
    }
}

impl GroupOptions {
    /// Sets the health check.
    pub fn health_check(mut self, check: HealthCheck) -> Self {
        self.health_check = check;
        self
    }
    /// Sets the circuit breaker.
    pub fn circuit_breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.circuit_breaker = breaker;
        self
    }
    /// Sets the failback delay.
    pub fn failback_delay(mut self, delay: Duration) -> Self {
        self.failback_delay = delay;
        self
    }
    /// Sets the failback check of every member (e.g. [`HealthCheck::lag_aware`]).
    pub fn failback_check(mut self, check: HealthCheck) -> Self {
        self.failback_check = Some(check);
        self
    }
    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

pub(crate) struct GroupInner {
    pub(crate) options: GroupOptions,
    pub(crate) members: RwLock<Vec<Member>>,
    active: RwLock<Option<Member>>,
    preferred: Mutex<Option<Member>>,
    /// Serialises re-selection so two passes never interleave their events.
    selecting: Mutex<()>,
    /// Bumped when the active member changes or a member (dis)connects; callers whose
    /// command could not be sent wait on it (the group's backlog).
    generation: Mutex<u64>,
    changed: parking_lot::Condvar,
    pub(crate) events: EventBus<GroupEvent>,
    /// Recent changes of the active member (time, member id), newest last, so pub/sub
    /// can tell which member was active when a message arrived.
    history: Mutex<VecDeque<(Instant, Option<u64>)>>,
    pub(crate) wake: Sender<Wake>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
    pub(crate) closed: AtomicBool,
}

/// Dropping the last handle (group, databases, subscribers) closes the group.
pub(crate) struct Handle(pub(crate) Arc<GroupInner>);

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.close();
    }
}

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
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("members", &*self.inner().members.read())
            .field("active", &self.active().map(|m| m.name().to_string()))
            .finish()
    }
}

impl Group {
    /// Connects every member (in the background for those that are down) and starts
    /// the group's supervisor. Fails when no member can be reached within the members'
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
    ///         .health_check(HealthCheck { interval: Duration::from_secs(1), ..HealthCheck::default() })
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
        // Bounded: wake-ups that find it full are redundant.
        let (wake_tx, wake_rx) = bounded(256);
        let inner = Arc::new(GroupInner {
            options,
            members: RwLock::new(Vec::new()),
            active: RwLock::new(None),
            preferred: Mutex::new(None),
            selecting: Mutex::new(()),
            generation: Mutex::new(0),
            changed: parking_lot::Condvar::new(),
            events: EventBus::new(),
            history: Mutex::new(VecDeque::with_capacity(HISTORY)),
            wake: wake_tx,
            supervisor: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        for m in &members {
            inner.join(m)?;
        }
        *inner.members.write() = members;
        let connect_timeout = inner
            .members
            .read()
            .iter()
            .filter_map(|m| m.client().map(|c| c.options().connect_timeout))
            .max()
            .unwrap_or(Duration::from_secs(5));
        let group = Group {
            handle: Arc::new(Handle(inner.clone())),
        };
        let weak = Arc::downgrade(&inner);
        let thread = std::thread::Builder::new()
            .name("rr-group-supervisor".to_string())
            .spawn(move || supervisor::run(weak, wake_rx))
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start the supervisor: {e}")))?;
        *inner.supervisor.lock() = Some(thread);
        let changes = inner.events.subscribe();
        inner.reselect(ChangeReason::Initial);
        // Members that were down connect in the background; the supervisor re-selects
        // as they come up. Wait (bounded) for the first active member.
        let deadline =
            crate::connection::deadline_after(std::time::Instant::now(), connect_timeout);
        while group.active().is_none() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || changes.recv_timeout(left).is_err() {
                break;
            }
        }
        if group.active().is_none() {
            return Err(Error::new(
                ErrorKind::Connect,
                "no member of the group could be reached",
            ));
        }
        Ok(group)
    }

    fn inner(&self) -> &Arc<GroupInner> {
        &self.handle.0
    }

    /// A handle for commands, always routed to the active member.
    pub fn database(&self) -> Database {
        Database::new(Arc::new(super::router::GroupRouter::new(
            self.handle.clone(),
        )))
    }

    /// Subscribes on every member, delivers from the active member only, publishes to
    /// the active member: pub/sub as if talking to the active member alone.
    pub fn subscriber(&self) -> super::pubsub::GroupSubscriber {
        super::pubsub::GroupSubscriber::new(self.handle.clone(), self.database())
    }

    /// The members, as passed in (and added since).
    pub fn members(&self) -> Vec<Member> {
        self.inner().members.read().clone()
    }

    /// The member serving now.
    pub fn active(&self) -> Option<Member> {
        self.inner().active()
    }

    /// A snapshot of every member (weight, health, latency, failback verdict, which one
    /// is active) whose `Display` is a readable table (see [`GroupStatus`](super::GroupStatus)).
    pub fn status(&self) -> super::GroupStatus {
        super::GroupStatus::of(self)
    }

    /// Makes `member` the explicit choice (weight and latency ignored) until
    /// `try_failover_to(None)`, the group closes, or it disconnects. Clears its unhealthy
    /// flag. `false` when it is not in the group or not connected. `None` removes the
    /// override and returns whether there was one.
    pub fn try_failover_to(&self, member: Option<&Member>) -> bool {
        let inner = self.inner();
        match member {
            None => {
                let had = inner.preferred.lock().take().is_some();
                inner.reselect(ChangeReason::Manual);
                had
            }
            Some(m) => {
                if !inner.members.read().contains(m) || !m.is_connected() {
                    return false;
                }
                m.reset_unhealthy();
                // The operator's choice stands in for a passed failback check.
                m.inner.failback.vouch();
                *inner.preferred.lock() = Some(m.clone());
                inner.reselect(ChangeReason::Manual);
                true
            }
        }
    }

    /// Connects a member and adds it to the group.
    pub fn add(&self, member: Member) -> Result<()> {
        let inner = self.inner();
        if inner.members.read().contains(&member) {
            return Ok(());
        }
        inner.join(&member)?;
        inner.members.write().push(member.clone());
        inner.events.publish(GroupEvent::MemberAdded(member));
        let _ = inner.wake.try_send(Wake::NodeAdded);
        inner.reselect(ChangeReason::MemberAdded);
        Ok(())
    }

    /// Removes a member (closing its connections); whether it was in the group.
    pub fn remove(&self, member: &Member) -> bool {
        let inner = self.inner();
        let removed = {
            let mut members = inner.members.write();
            let before = members.len();
            members.retain(|m| m != member);
            members.len() != before
        };
        if !removed {
            return false;
        }
        {
            let mut preferred = inner.preferred.lock();
            if preferred.as_ref() == Some(member) {
                *preferred = None;
            }
        }
        inner.reselect(ChangeReason::MemberRemoved);
        if let Some(client) = member.client() {
            client.close();
        }
        inner
            .events
            .publish(GroupEvent::MemberRemoved(member.clone()));
        true
    }

    /// A new receiver of group events (bounded: a slow reader loses the newest events,
    /// never delays selection).
    pub fn events(&self) -> Receiver<GroupEvent> {
        self.inner().events.subscribe()
    }

    /// Closes every member and ends every thread. Idempotent.
    pub fn close(&self) {
        self.inner().close();
    }
}

impl GroupInner {
    pub(crate) fn active(&self) -> Option<Member> {
        self.active.read().clone()
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
            if self.closed.load(Ordering::Acquire)
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

    /// Connects a member's client, wired to this group's supervisor and breaker.
    fn join(self: &Arc<Self>, member: &Member) -> Result<()> {
        if member.client().is_some() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("member {} already belongs to a group", member.name()),
            ));
        }
        let weak = Arc::downgrade(self);
        let tripped = member.clone();
        let setup = MemberSetup {
            wake: self.wake.clone(),
            breaker: self.options.circuit_breaker.policy(),
            on_breaker_trip: Arc::new(move || {
                // The fast path: out of rotation now, not at the next health check.
                if let Some(group) = weak.upgrade() {
                    group.member_failed(&tripped, ChangeReason::CircuitBreaker);
                }
            }),
        };
        let client = Client::connect_member(member.options()?, setup)?;
        let db = client.database();
        let _ = member.inner.client.set(client);
        let _ = member.inner.database.set(db);
        Ok(())
    }

    /// A member failed a check or tripped a breaker: flag it, move traffic.
    pub(crate) fn member_failed(&self, member: &Member, reason: ChangeReason) {
        let now = self.options.clock.now();
        if member.mark_unhealthy(now) {
            log::warn!("member {} is unhealthy ({reason:?})", member.name());
            self.events.publish(GroupEvent::MemberHealthChanged {
                member: member.clone(),
                healthy: false,
            });
        }
        self.reselect(reason);
    }

    /// A member passed a check: back in rotation when its failback delay has passed.
    pub(crate) fn member_passed(&self, member: &Member) {
        let now = self.options.clock.now();
        if member.try_clear(now, self.options.failback_delay) {
            log::info!("member {} is healthy again", member.name());
            self.events.publish(GroupEvent::MemberHealthChanged {
                member: member.clone(),
                healthy: true,
            });
            self.reselect(ChangeReason::Failback);
        }
    }

    /// Chooses the active member again and announces a change.
    pub(crate) fn reselect(&self, reason: ChangeReason) {
        let _one_at_a_time = self.selecting.lock();
        let members = self.members.read().clone();
        {
            // An override ends when its member disconnects (automatic fallback).
            let mut preferred = self.preferred.lock();
            if preferred.as_ref().is_some_and(|p| !p.is_connected()) {
                *preferred = None;
            }
        }
        let preferred = self.preferred.lock().clone();
        let current = self.active();
        // Only when some member has a failback check does eligibility enter in.
        let gated = failback::any_check(&self.options, &members);
        let kept = failback::kept(current.as_ref());
        let live = |m: &Member| m.is_connected() && !m.is_unhealthy();
        let mut candidates: Vec<Candidate> = members
            .iter()
            .map(|m| Candidate {
                available: live(m) && (!gated || failback::eligible(&self.options, m, kept)),
                weight: m.weight(),
                latency: m.latency(),
            })
            .collect();
        let index_of =
            |m: &Option<Member>| m.as_ref().and_then(|m| members.iter().position(|x| x == m));
        let mut chosen = select(&candidates, index_of(&current), index_of(&preferred));
        // Kept while its own first verdict is under way: still provisional.
        let mut provisional =
            chosen.is_some() && chosen == index_of(&current) && failback::pending(kept);
        if chosen.is_none() && gated {
            // The liveness fallback: nobody eligible, serve from the best live member.
            for (c, m) in candidates.iter_mut().zip(&members) {
                c.available = live(m);
            }
            chosen = select(&candidates, index_of(&current), index_of(&preferred));
            provisional = chosen.is_some();
        }
        let next = match chosen {
            Some(i) => members.get(i).cloned(),
            // Nobody is available: keep serving from the current member if it is still
            // in the group (its own backlog and reconnects may yet save the call).
            None => current.clone().filter(|c| members.contains(c)),
        };
        let after = if gated {
            failback::settle(
                &self.options,
                &members,
                current.as_ref(),
                next.as_ref(),
                provisional,
                chosen.is_some(),
            )
        } else {
            Vec::new()
        };
        if next != current {
            *self.active.write() = next.clone();
            {
                let mut history = self.history.lock();
                if history.len() == HISTORY {
                    history.pop_front();
                }
                history.push_back((Instant::now(), next.as_ref().map(|m| m.inner.id)));
            }
            self.bump();
            let reason = if current.is_none() && reason != ChangeReason::MemberRemoved {
                ChangeReason::Initial
            } else {
                reason
            };
            log::info!(
                "active member: {} -> {} ({reason:?})",
                current.as_ref().map_or("none", |m| m.name()),
                next.as_ref().map_or("none", |m| m.name())
            );
            self.events.publish(GroupEvent::ActiveChanged {
                previous: current,
                current: next,
                reason,
            });
        }
        for event in after {
            self.events.publish(event);
        }
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let _ = self.wake.try_send(Wake::Shutdown);
        if let Some(t) = self.supervisor.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        for m in self.members.read().iter() {
            if let Some(c) = m.client() {
                c.close();
            }
        }
        *self.active.write() = None;
        self.bump();
    }
}
