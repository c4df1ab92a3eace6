//! `Member`: one deployment of a group, described (a plain value the user builds);
//! `GroupMember`: that deployment once it has joined, with what the group shows of
//! its health and measured latency, and its run-time changes.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::RwLock;

use super::core::{Input, MemberView};
use super::health::HealthCheck;
use super::inbox::{Inbox, Message};
use super::target::ProbeResult;
use crate::client::Client;
use crate::commands::Database;
use crate::config::Options;
use crate::error::Result;

/// How a member's deployment is given.
#[derive(Clone, Debug)]
enum Spec {
    Text(String),
    Options(Box<Options>),
}

static NEXT_MEMBER: AtomicU64 = AtomicU64::new(1);

pub(crate) struct Inner {
    pub(crate) id: u64,
    spec: Spec,
    name: String,
    /// The weight as last set (the group's core decides with its own copy).
    weight: AtomicU32,
    pub(crate) health_check: Option<HealthCheck>,
    pub(crate) failback_check: Option<HealthCheck>,
    pub(crate) local_failover: Option<Duration>,
    pub(crate) client: OnceLock<Client>,
    pub(crate) database: OnceLock<Database>,
    /// Where run-time changes go once the member belongs to a group.
    pub(crate) inbox: OnceLock<Inbox>,
    /// What the group's core published about this member (written by the group's
    /// supervisor only).
    pub(crate) view: RwLock<MemberView>,
}

/// A member of a running group: what [`Group::members`](super::Group::members),
/// [`Group::active`](super::Group::active), [`Group::add`](super::Group::add) and
/// the group's events hand out. Cheap to clone; clones are the same member. It shows
/// the member's health and measured latency, and takes run-time changes (weight,
/// reset); the description it was made from is a [`Member`].
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use resilient_redis::availability::{Group, GroupOptions, Member};
/// use resilient_redis::testkit::FakeServer;
/// let east = FakeServer::start()?;
/// let group = Group::connect(
///     vec![Member::new(east.url()).with_name("US East").with_weight(10)],
///     GroupOptions::default(),
/// )?;
/// let member = group.member("US East").expect("listed");
/// member.set_weight(3);
/// assert_eq!(member.weight(), 3);
/// # group.close();
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct GroupMember {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember")
            .field("name", &self.inner.name)
            .field("weight", &self.weight())
            .field("unhealthy", &self.is_unhealthy())
            .field("provisional", &self.is_provisional())
            .finish()
    }
}

impl PartialEq for GroupMember {
    fn eq(&self, other: &GroupMember) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for GroupMember {}

/// One deployment of a group (a region), described: built from a URL, an option
/// string or `Options`, with a name, a weight and, when they differ from the group's,
/// its own checks. A plain value: every setter applies, whatever was cloned before.
/// Once it joins a group, the group hands out a [`GroupMember`] for it.
///
/// Setters are `with_*` because the plain names are the getters (`name()`,
/// `weight()`), which Rust cannot overload.
///
/// ```
/// use resilient_redis::availability::Member;
/// let east = Member::new("us-east.example:6379").with_name("US East").with_weight(10);
/// assert_eq!(east.name(), "US East");
/// assert_eq!(east.weight(), 10);
/// ```
#[derive(Clone)]
pub struct Member {
    spec: Spec,
    name: String,
    weight: u32,
    health_check: Option<HealthCheck>,
    failback_check: Option<HealthCheck>,
    local_failover: Option<Duration>,
}

/// Not the spec: its text may hold a password.
impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("weight", &self.weight)
            .field("own_health_check", &self.health_check.is_some())
            .field("failback_check", &self.failback_check.is_some())
            .field("local_failover", &self.local_failover)
            .finish()
    }
}

impl Member {
    /// A member from a `redis://` URL or an option string (parsed when it joins).
    pub fn new(spec: impl Into<String>) -> Member {
        let spec = spec.into();
        let name = default_name(&spec);
        Member::build(Spec::Text(spec), name)
    }

    /// A member from `Options`.
    pub fn from_options(options: Options) -> Member {
        let name = options
            .endpoints
            .first()
            .map_or_else(|| "member".to_string(), ToString::to_string);
        Member::build(Spec::Options(Box::new(options)), name)
    }

    fn build(spec: Spec, name: String) -> Member {
        Member {
            spec,
            name,
            weight: 1,
            health_check: None,
            failback_check: None,
            local_failover: None,
        }
    }

    /// Sets the name shown in events and logs.
    pub fn with_name(mut self, name: impl Into<String>) -> Member {
        self.name = name.into();
        self
    }

    /// Sets the starting weight (higher is preferred; default 1).
    pub fn with_weight(mut self, weight: u32) -> Member {
        self.weight = weight;
        self
    }

    /// Overrides the group's health check for this member.
    pub fn with_health_check(mut self, check: HealthCheck) -> Member {
        self.health_check = Some(check);
        self
    }

    /// Sets this member's failback check (overriding the group's): asked before traffic
    /// moves *to* it, never of it while it serves. Only `Healthy` makes it eligible.
    ///
    /// ```
    /// use resilient_redis::availability::{HealthCheck, LagAwareOptions, Member, RestCredentials};
    /// let east = Member::new("redis-12000.cluster-east.example:12000").with_failback_check(
    ///     HealthCheck::lag_aware(LagAwareOptions::new(|| {
    ///         Some(RestCredentials::new("monitor@example.com", "secret"))
    ///     })),
    /// );
    /// # let _ = east;
    /// ```
    pub fn with_failback_check(mut self, check: HealthCheck) -> Member {
        self.failback_check = Some(check);
        self
    }

    /// For a member that fails over inside itself (a Sentinel-managed primary and its
    /// replicas, a cluster whose replicas are promoted): how long the group holds it as
    /// live after its connection is lost, waiting for its own new primary, before it
    /// moves traffic to another member. Calls made meanwhile wait in the group's
    /// backlog within their own timeout. Set it to about the time its own failover
    /// takes (Sentinel: `down-after-milliseconds` plus the election). Default: none,
    /// traffic moves at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilient_redis::availability::Member;
    /// let region = Member::new("redis+sentinel://s1:26379,s2:26379/mymaster")
    ///     .with_local_failover(Duration::from_secs(5));
    /// # let _ = region;
    /// ```
    pub fn with_local_failover(mut self, grace: Duration) -> Member {
        self.local_failover = Some(grace);
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The starting weight.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// The member of a group this description becomes when it joins.
    pub(crate) fn into_group_member(self) -> GroupMember {
        GroupMember {
            inner: Arc::new(Inner {
                id: NEXT_MEMBER.fetch_add(1, Ordering::Relaxed),
                spec: self.spec,
                name: self.name,
                weight: AtomicU32::new(self.weight),
                health_check: self.health_check,
                failback_check: self.failback_check,
                local_failover: self.local_failover,
                client: OnceLock::new(),
                database: OnceLock::new(),
                inbox: OnceLock::new(),
                view: RwLock::new(MemberView::default()),
            }),
        }
    }
}

impl GroupMember {
    /// Whether it is active only through the liveness fallback: no live member passed
    /// its failback check, so the group serves from the best live one and leaves it for
    /// an eligible member as soon as one exists.
    pub fn is_provisional(&self) -> bool {
        self.inner.view.read().provisional
    }

    /// The latest verdict of its failback check since it last stopped being active or
    /// live (`None`: not asked since, or no failback check).
    pub fn failback_result(&self) -> Option<ProbeResult> {
        self.inner.view.read().failback_result
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The weight now.
    pub fn weight(&self) -> u32 {
        self.inner.weight.load(Ordering::Relaxed)
    }

    /// Changes the weight; the group re-selects at once.
    pub fn set_weight(&self, weight: u32) {
        self.inner.weight.store(weight, Ordering::Relaxed);
        self.tell(Input::Weight {
            id: self.inner.id,
            weight,
        });
    }

    /// Whether its connection is up (for a cluster: to every known node).
    pub fn is_connected(&self) -> bool {
        self.inner.client.get().is_some_and(Client::is_connected)
    }

    /// Whether a failed health check, a lost connection or a tripped breaker took it
    /// out of rotation.
    pub fn is_unhealthy(&self) -> bool {
        self.inner.view.read().unhealthy
    }

    /// Its measured round-trip time, as selection ranks it: the lowest of its last
    /// five samples, each the fastest of three timed `PING`s after a passed health
    /// check (restarted when its connection is replaced); `None` until measured.
    pub fn latency(&self) -> Option<Duration> {
        self.inner.view.read().latency
    }

    /// Puts it back in rotation now, whatever the failback delay.
    pub fn reset_unhealthy(&self) {
        self.tell(Input::ResetUnhealthy(self.inner.id));
    }

    /// The member's own client (once it has joined a group).
    pub fn client(&self) -> Option<&Client> {
        self.inner.client.get()
    }

    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    pub(crate) fn options(&self) -> Result<Options> {
        match &self.inner.spec {
            Spec::Text(s) => Options::parse(s),
            Spec::Options(o) => Ok((**o).clone()),
        }
    }

    /// Sends a run-time change to the group's core (nothing before it joins one).
    fn tell(&self, input: Input) {
        if let Some(inbox) = self.inner.inbox.get() {
            let _ = inbox.send(Message::Input(input));
        }
    }
}

/// The first endpoint of the parsed spec. Never a piece of the raw text: its first
/// item may be `password=...`, and the name shows in events, logs and `status()`.
fn default_name(spec: &str) -> String {
    Options::parse(spec)
        .ok()
        .and_then(|o| o.endpoints.first().map(ToString::to_string))
        .unwrap_or_else(|| "member".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_name_is_the_endpoint_never_the_secret() {
        let m = Member::new("redis://:secret@h1:6379/0");
        assert_eq!(m.name(), "h1:6379");
        let m = Member::new("h2:6380,password=\"sec,ret\"");
        assert_eq!(m.name(), "h2:6380");
        // An endpoint after an unquoted password is refused: no name from it.
        let m = Member::new("password=secret,h3:6380");
        assert_eq!(m.name(), "member");
    }

    #[test]
    fn every_setter_applies_whatever_was_cloned_before() {
        let m = Member::new("h:1").with_weight(4);
        let copy = m.clone();
        let m = m.with_weight(9).with_name("east");
        assert_eq!((m.weight(), m.name()), (9, "east"));
        assert_eq!((copy.weight(), copy.name()), (4, "h:1"));
        let joined = m.into_group_member();
        assert_eq!(joined.weight(), 9);
        assert_eq!(joined.latency(), None);
        assert!(!joined.is_unhealthy());
    }

    #[test]
    fn debug_never_shows_the_spec() {
        let m = Member::new("redis://:hunter2@h1:6379/0");
        assert!(!format!("{m:?}").contains("hunter2"));
    }
}
