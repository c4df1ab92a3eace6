//! `ScriptedResolver`: DNS whose answers follow a timeline, for testing what the client
//! does while a record moves (a `MOVING` handoff turns entirely on DNS *changing*,
//! which no in-process server can arrange).
//!
//! The timeline is relative to an origin ([`restart`](ScriptedResolver::restart)) and
//! read from an injected clock: with a [`ManualClock`](crate::clock::ManualClock) a
//! test moves time by hand and never sleeps; with the system clock the record moves in
//! real time under a running client. [`set`](ScriptedResolver::set) changes an answer
//! at once (an explicit step).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::clock::{self, Clock};
use crate::resolve::Resolver;

/// One answer of a scripted record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// These addresses, in this order (their ports are used as given, so one name
    /// can map onto several local fake servers).
    Addrs(Vec<SocketAddr>),
    /// The name resolves, to nothing (a record momentarily empty).
    Empty,
    /// The lookup fails (a resolution blip).
    Fail,
}

impl Answer {
    /// `Addrs` from anything that lists socket addresses.
    pub fn addrs(addrs: impl IntoIterator<Item = SocketAddr>) -> Answer {
        Answer::Addrs(addrs.into_iter().collect())
    }
}

/// How many lookups are remembered for [`lookup_threads`](ScriptedResolver::lookup_threads).
const CALLS_KEPT: usize = 4096;

#[derive(Debug)]
struct Inner {
    clock: Arc<dyn Clock>,
    origin: Mutex<Instant>,
    /// Per host: `(offset from the origin, answer)`, sorted by offset.
    scripts: Mutex<HashMap<String, Vec<(Duration, Answer)>>>,
    /// `(host, thread name)` of each lookup, oldest first (bounded: `CALLS_KEPT`).
    calls: Mutex<Vec<(String, String)>>,
    counts: Mutex<HashMap<String, usize>>,
}

/// A [`Resolver`] whose answers follow a per-host timeline.
///
/// A host with no script, when it is an address literal, resolves to itself (so a
/// client with this resolver still reaches `127.0.0.1` fakes); any other unscripted
/// name fails to resolve. Before its first entry a timeline fails too.
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use resilient_redis::clock::ManualClock;
/// use resilient_redis::resolve::Resolver;
/// use resilient_redis::testkit::{Answer, ScriptedResolver};
///
/// let clock = ManualClock::new();
/// let dns = ScriptedResolver::with_clock(Arc::new(clock.clone()));
/// let old = "10.0.0.1:12000".parse().unwrap();
/// let new = "10.0.0.2:12000".parse().unwrap();
/// // DNS trails the MOVING: the old address for 6 s, a blip, then the new one.
/// dns.script("db.example", vec![
///     (Duration::ZERO, Answer::addrs([old])),
///     (Duration::from_secs(6), Answer::Fail),
///     (Duration::from_secs(7), Answer::addrs([new])),
/// ]);
/// assert_eq!(dns.resolve("db.example", 12000).unwrap(), vec![old]);
/// clock.advance(Duration::from_millis(6500));
/// assert!(dns.resolve("db.example", 12000).is_err());
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(dns.resolve("db.example", 12000).unwrap(), vec![new]);
/// assert_eq!(dns.lookups("db.example"), 3);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ScriptedResolver {
    inner: Arc<Inner>,
}

impl Default for ScriptedResolver {
    fn default() -> ScriptedResolver {
        ScriptedResolver::new()
    }
}

impl ScriptedResolver {
    /// A resolver on the system clock, its timeline starting now.
    pub fn new() -> ScriptedResolver {
        ScriptedResolver::with_clock(clock::system())
    }

    /// A resolver reading its timeline from `clock`, starting now.
    pub fn with_clock(clock: Arc<dyn Clock>) -> ScriptedResolver {
        let origin = clock.now();
        ScriptedResolver {
            inner: Arc::new(Inner {
                clock,
                origin: Mutex::new(origin),
                scripts: Mutex::new(HashMap::new()),
                calls: Mutex::new(Vec::new()),
                counts: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Replaces `host`'s timeline: `(offset from the origin, answer)` pairs.
    pub fn script(&self, host: &str, mut timeline: Vec<(Duration, Answer)>) {
        timeline.sort_by_key(|(at, _)| *at);
        self.inner
            .scripts
            .lock()
            .insert(host.to_ascii_lowercase(), timeline);
    }

    /// `host` answers `answer` from now on (an explicit step; replaces its timeline).
    pub fn set(&self, host: &str, answer: Answer) {
        let at = self.elapsed();
        self.script(host, vec![(at, answer)]);
    }

    /// Moves the origin to now: every timeline starts over (e.g. at the `MOVING`).
    pub fn restart(&self) {
        *self.inner.origin.lock() = self.inner.clock.now();
    }

    /// Time since the origin, by the resolver's clock.
    pub fn elapsed(&self) -> Duration {
        let origin = *self.inner.origin.lock();
        self.inner.clock.now().saturating_duration_since(origin)
    }

    /// How many lookups of `host` were made.
    pub fn lookups(&self, host: &str) -> usize {
        let host = host.to_ascii_lowercase();
        self.inner.counts.lock().get(&host).copied().unwrap_or(0)
    }

    /// The names of the threads that made lookups (of any host), oldest first: a test
    /// checks that no reader or writer thread ever resolved a name.
    pub fn lookup_threads(&self) -> Vec<String> {
        self.inner
            .calls
            .lock()
            .iter()
            .map(|(_, t)| t.clone())
            .collect()
    }

    fn record(&self, host: &str) {
        let thread = std::thread::current()
            .name()
            .unwrap_or("<unnamed>")
            .to_string();
        let mut calls = self.inner.calls.lock();
        if calls.len() >= CALLS_KEPT {
            calls.remove(0);
        }
        calls.push((host.to_string(), thread));
        drop(calls);
        *self
            .inner
            .counts
            .lock()
            .entry(host.to_string())
            .or_default() += 1;
    }
}

impl Resolver for ScriptedResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let host = host.to_ascii_lowercase();
        self.record(&host);
        let elapsed = self.elapsed();
        let scripts = self.inner.scripts.lock();
        let Some(timeline) = scripts.get(&host) else {
            return match host.parse::<IpAddr>() {
                Ok(ip) => Ok(vec![SocketAddr::new(ip, port)]),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no scripted record for {host}"),
                )),
            };
        };
        match timeline.iter().rev().find(|(at, _)| *at <= elapsed) {
            Some((_, Answer::Addrs(a))) => Ok(a.clone()),
            Some((_, Answer::Empty)) => Ok(Vec::new()),
            Some((_, Answer::Fail)) | None => Err(io::Error::other(format!(
                "scripted lookup failure for {host}"
            ))),
        }
    }
}
