//! Redis Sentinel: asking the sentinels for a service's primary, following their
//! `+switch-master` announcements, keeping the list of sentinels and replicas current.
//!
//! Owns: the sentinel connections (one for queries, one subscribed to
//! `+switch-master`), both driven by the `rr-sentinel <service>` worker (see
//! `roles`). Must never: treat a sentinel that is down or answers wrongly as fatal
//! (it is skipped), or show the sentinel password anywhere.

pub(crate) mod parse;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::deployment::Deployment;
use super::roles::decide::Role;
use super::roles::{self, Msg, Roles};
use crate::clock;
use crate::config::{Endpoint, MaintNotifications, Options, Protocol};
use crate::connection::reply_slot::Outcome;
use crate::connection::transport::Dial;
use crate::connection::{
    tls, Connection, ConnectionConfig, ConnectionInfo, Deadline, PushHandler, Traffic,
};
use crate::error::{Error, ErrorKind, Result};
use crate::maintenance::timeouts::ServerTimeouts;
use crate::resp::{write_arg, write_command_header, Value};

/// How long one sentinel query may take: a hung sentinel is skipped, not waited for.
const QUERY_TIMEOUT: Duration = Duration::from_millis(1000);
/// How often the sentinels are asked again while subscribed (the subscription tells
/// us of a switch at once; this is the backstop for an announcement missed while the
/// subscription was being re-opened).
const POLL_SUBSCRIBED: Duration = Duration::from_secs(5);
/// ... and while no subscription is up.
const POLL_UNSUBSCRIBED: Duration = Duration::from_millis(500);

/// How long after a switch a sentinel naming the old primary is taken as one that
/// has not caught up: sentinels learn a new configuration from each other's hello
/// messages (every 2 s), so one may answer with the old primary for a few seconds
/// after another announced the switch. Measured on loopback: this flipped the client
/// back to the dead primary for one check.
const STALE_WINDOW: Duration = Duration::from_secs(10);

/// Whether a sentinel's `answer` is one that has not caught up with the switch away
/// from `left` (made at the instant given), at `now`.
pub(crate) fn is_stale(
    answer: &Endpoint,
    left: Option<&(Endpoint, Instant)>,
    now: Instant,
    window: Duration,
) -> bool {
    left.is_some_and(|(old, at)| old == answer && now.saturating_duration_since(*at) < window)
}

/// The options of a connection to a sentinel: the sentinel's credentials, database 0,
/// RESP2 (every sentinel version speaks it), no maintenance notifications.
pub(crate) fn sentinel_options(options: &Options) -> Options {
    let mut o = options.clone();
    o.user = options.sentinel_user.clone();
    o.password = options.sentinel_password.clone();
    // The provider is the data nodes' (it takes the place of `user`/`password`, not
    // of `sentinelUser`/`sentinelPassword`); the handshake would otherwise prefer it.
    o.credentials = None;
    o.database = 0;
    o.protocol = Some(Protocol::Resp2);
    o.maint_notifications = MaintNotifications::Disabled;
    o.service_name = None;
    o
}

/// A connection configuration for one sentinel.
fn config_for(
    options: &Arc<Options>,
    endpoint: &Endpoint,
    on_push: Option<PushHandler>,
    warned: &Arc<AtomicBool>,
) -> Result<ConnectionConfig> {
    let tls = match &options.tls {
        Some(t) => Some(Arc::new(tls::setup(t, &endpoint.host, warned.clone())?)),
        None => None,
    };
    let subscriber = on_push.is_some();
    Ok(ConnectionConfig {
        endpoint: endpoint.clone(),
        options: options.clone(),
        tls,
        timeouts: Arc::new(ServerTimeouts::new(clock::system())),
        on_push,
        on_failure: None,
        role: if subscriber {
            "-sentinel-sub"
        } else {
            "-sentinel"
        },
        subscriber,
        readonly: false,
        breaker: None,
        dial: Arc::new(Dial::default()),
        census: None,
        company: Default::default(),
    })
}

fn frame(args: &[&[u8]]) -> Vec<u8> {
    let mut f = Vec::new();
    write_command_header(&mut f, args.len());
    for a in args {
        write_arg(&mut f, a);
    }
    f
}

fn query(conn: &Connection, args: &[&[u8]]) -> Result<Value> {
    match conn.request(
        &frame(args),
        1,
        Deadline::after(QUERY_TIMEOUT),
        Traffic::Internal,
    ) {
        Ok(Outcome::One(v)) => match v.error_message() {
            Some(m) => Err(Error::from_server_reply(m)),
            None => Ok(v),
        },
        Ok(_) => Err(Error::new(ErrorKind::Protocol, "unexpected reply shape")),
        Err(crate::connection::RequestError::Failed(e))
        | Err(crate::connection::RequestError::Unsent(e)) => Err(e),
    }
}

/// What one sentinel says of the service.
pub(crate) struct Answer {
    pub primary: Endpoint,
    pub sentinels: Vec<Endpoint>,
    pub replicas: Vec<Endpoint>,
}

/// Asks one sentinel (on an open connection) for the primary, the other sentinels and
/// the replicas. An error when it does not know the service or answers wrongly.
fn ask(conn: &Connection, service: &str) -> Result<Answer> {
    let s = service.as_bytes();
    let reply = query(conn, &[b"SENTINEL", b"GET-MASTER-ADDR-BY-NAME", s])?;
    let primary = parse::master_addr(&reply).ok_or_else(|| {
        Error::new(
            ErrorKind::Server,
            "the sentinel does not know the service (or answered in a form not understood)",
        )
    })?;
    // Optional extras: an old sentinel without REPLICAS still gives the primary.
    let sentinels = query(conn, &[b"SENTINEL", b"SENTINELS", s])
        .map(|v| parse::instances(&v))
        .unwrap_or_default();
    let replicas = query(conn, &[b"SENTINEL", b"REPLICAS", s])
        .map(|v| parse::instances(&v))
        .unwrap_or_default();
    Ok(Answer {
        primary,
        sentinels,
        replicas,
    })
}

/// Asks the sentinels in turn (`sentinels` reordered: the one that answered first),
/// on fresh connections; for the first connection of a client.
pub(crate) fn ask_any(
    options: &Options,
    sentinels: &mut Vec<Endpoint>,
    warned: &Arc<AtomicBool>,
) -> Result<Answer> {
    let service = options
        .service_name
        .clone()
        .ok_or_else(|| Error::new(ErrorKind::Config, "no service name"))?;
    let opts = Arc::new(sentinel_options(options));
    let mut last = None;
    for i in 0..sentinels.len() {
        let endpoint = sentinels[i].clone();
        let answer = config_for(&opts, &endpoint, None, warned)
            .and_then(|cfg| Connection::open(&cfg))
            .and_then(|conn| {
                let a = ask(&conn, &service);
                conn.close(crate::error::FailureKind::ClosedByClient);
                conn.join();
                a
            });
        match answer {
            Ok(a) => {
                let first = sentinels.remove(i);
                sentinels.insert(0, first);
                return Ok(a);
            }
            Err(e) => {
                log::debug!("sentinel {endpoint} skipped: {e}");
                last = Some(e.with_endpoint(endpoint.to_string()));
            }
        }
    }
    Err(match last {
        Some(e) => Error::new(
            ErrorKind::Connect,
            format!("no sentinel could name the primary of the service (the last: {e})"),
        ),
        None => Error::new(ErrorKind::Connect, "no sentinel given"),
    })
}

/// Adds the sentinels an answer named that are not known yet (bounded: 64 at most).
fn merge(known: &mut Vec<Endpoint>, found: &[Endpoint]) {
    for e in found {
        if known.len() >= 64 {
            break;
        }
        if !known.contains(e) {
            known.push(e.clone());
        }
    }
}

/// The sentinel side of the `rr-sentinel` worker.
pub(crate) struct SentinelWatch {
    service: String,
    options: Arc<Options>,
    sentinels: Vec<Endpoint>,
    /// The query connection, to the sentinel that answered last.
    conn: Option<(Endpoint, Connection)>,
    /// The primary last switched away from, and when: for `STALE_WINDOW` after, a
    /// sentinel that still names it has not caught up (see `is_stale`).
    left: Option<(Endpoint, Instant)>,
    /// The `+switch-master` subscription.
    sub: Option<Connection>,
    next_sub_attempt: Instant,
    /// Round-robin start of the next subscription attempt.
    sub_next: usize,
    next_poll: Instant,
    tx: Sender<Msg>,
    warned: Arc<AtomicBool>,
}

impl SentinelWatch {
    pub(crate) fn new(deployment: &Deployment, service: String, tx: Sender<Msg>) -> SentinelWatch {
        SentinelWatch {
            service,
            options: Arc::new(sentinel_options(&deployment.options)),
            sentinels: deployment.options.endpoints.clone(),
            conn: None,
            left: None,
            sub: None,
            next_sub_attempt: Instant::now(),
            sub_next: 0,
            next_poll: Instant::now(),
            tx,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// One answer from the first sentinel that gives one (the query connection kept).
    fn ask(&mut self) -> Option<Answer> {
        let now = Instant::now();
        let mut tried = None;
        if let Some((endpoint, conn)) = self.conn.take() {
            if !conn.is_closed() {
                match ask(&conn, &self.service) {
                    Ok(a) if !is_stale(&a.primary, self.left.as_ref(), now, STALE_WINDOW) => {
                        self.conn = Some((endpoint, conn));
                        return Some(a);
                    }
                    Ok(a) => log::debug!(
                        "sentinel {endpoint} still names {} (not caught up with the switch): asking another",
                        a.primary
                    ),
                    Err(_) => {}
                }
            }
            conn.close(crate::error::FailureKind::ClosedByClient);
            tried = Some(endpoint);
        }
        let n = self.sentinels.len();
        // Start after the sentinel just tried, so a stale one is asked last.
        let start = tried
            .as_ref()
            .and_then(|t| self.sentinels.iter().position(|e| e == t))
            .map_or(0, |i| i + 1);
        for k in 0..n {
            let endpoint = self.sentinels[(start + k) % n].clone();
            if tried.as_ref() == Some(&endpoint) {
                continue;
            }
            let conn = match config_for(&self.options, &endpoint, None, &self.warned)
                .and_then(|cfg| Connection::open(&cfg))
            {
                Ok(c) => c,
                Err(e) => {
                    log::debug!("sentinel {endpoint} skipped: {e}");
                    continue;
                }
            };
            match ask(&conn, &self.service) {
                Ok(a) if !is_stale(&a.primary, self.left.as_ref(), now, STALE_WINDOW) => {
                    self.conn = Some((endpoint, conn));
                    return Some(a);
                }
                Ok(a) => {
                    log::debug!(
                        "sentinel {endpoint} still names {} (stale): skipped",
                        a.primary
                    );
                    conn.close(crate::error::FailureKind::ClosedByClient);
                }
                Err(e) => {
                    log::debug!("sentinel {endpoint} skipped: {e}");
                    conn.close(crate::error::FailureKind::ClosedByClient);
                }
            }
        }
        None
    }

    /// A check: ask the sentinels when due, when asked to (`force`: a `-READONLY`
    /// reply, a lost primary), or when the primary is unknown or down; route to their
    /// primary, and confirm it by `ROLE`. True when the primary is known and confirmed.
    pub(crate) fn check(&mut self, deployment: &Deployment, roles: &Roles, force: bool) -> bool {
        let primary = roles.primary();
        let confirmed = primary
            .as_ref()
            .is_some_and(|p| confirms(roles::role_of(p)));
        let now = Instant::now();
        if confirmed && !force && now < self.next_poll {
            return true;
        }
        self.next_poll = now
            + if self.sub.is_some() {
                POLL_SUBSCRIBED
            } else {
                POLL_UNSUBSCRIBED
            };
        let Some(answer) = self.ask() else {
            log::warn!(
                "service {}: no sentinel answered; keeping the current primary",
                self.service
            );
            return confirmed;
        };
        merge(&mut self.sentinels, &answer.sentinels);
        self.note_switch(roles, &answer.primary);
        roles::route_to(deployment, roles, &answer.primary);
        roles::set_sentinel_replicas(deployment, roles, &answer.replicas);
        roles
            .primary()
            .is_some_and(|p| confirms(roles::role_of(&p)))
    }

    /// A sentinel announced a switch: route there at once.
    pub(crate) fn switch_to(&mut self, deployment: &Deployment, roles: &Roles, endpoint: Endpoint) {
        log::info!(
            "service {}: sentinel announced the new primary {endpoint}",
            self.service
        );
        self.note_switch(roles, &endpoint);
        roles::route_to(deployment, roles, &endpoint);
        // The primary left is forgotten now, not at the next check: a sentinel that has
        // not caught up may delay that check, and the old primary must not be dialed
        // when it comes back.
        roles::prune(deployment, roles);
        // The replicas (and what to forget) are read again at the next check.
        self.next_poll = Instant::now();
    }

    /// Records the primary being left when routing moves to `to`.
    fn note_switch(&mut self, roles: &Roles, to: &Endpoint) {
        if let Some(from) = roles.primary().map(|p| p.endpoint.clone()) {
            if from != *to {
                self.left = Some((from, Instant::now()));
            }
        }
    }

    /// Keeps one subscription to `+switch-master` open, moving to the next sentinel
    /// when the one subscribed to fails.
    pub(crate) fn keep_subscribed(&mut self, _deployment: &Deployment) {
        if self.sub.as_ref().is_some_and(|c| !c.is_closed()) {
            return;
        }
        if let Some(old) = self.sub.take() {
            old.join();
            // Something may have been missed while it was down.
            self.next_poll = Instant::now();
        }
        let now = Instant::now();
        if now < self.next_sub_attempt || self.sentinels.is_empty() {
            return;
        }
        let n = self.sentinels.len();
        for k in 0..n {
            let endpoint = self.sentinels[(self.sub_next + k) % n].clone();
            let handler = switch_handler(self.service.clone(), self.tx.clone());
            let opened = config_for(&self.options, &endpoint, Some(handler), &self.warned)
                .and_then(|cfg| Connection::open(&cfg))
                .and_then(|conn| {
                    conn.send_oneway(&frame(&[b"SUBSCRIBE", b"+switch-master"]))?;
                    Ok(conn)
                });
            match opened {
                Ok(conn) => {
                    log::debug!(
                        "service {}: subscribed to sentinel {endpoint}",
                        self.service
                    );
                    self.sub = Some(conn);
                    self.sub_next = (self.sub_next + k + 1) % n;
                    return;
                }
                Err(e) => log::debug!("sentinel {endpoint}: cannot subscribe: {e}"),
            }
        }
        self.next_sub_attempt = now + POLL_UNSUBSCRIBED;
    }

    pub(crate) fn close(self) {
        let query = self.conn.map(|(_, c)| c);
        for conn in [query, self.sub].into_iter().flatten() {
            conn.close(crate::error::FailureKind::ClosedByClient);
            conn.join();
        }
    }
}

/// Whether a node's `ROLE` confirms what the sentinels say: `master`, or no `ROLE`
/// command at all (a proxy, a test double: the sentinels' word is all there is).
pub(crate) fn confirms(role: Option<Role>) -> bool {
    matches!(role, Some(Role::Primary | Role::Unanswered))
}

/// The subscription's push handler (on its reader thread: it only parses and queues).
fn switch_handler(service: String, tx: Sender<Msg>) -> PushHandler {
    Arc::new(move |_info: &ConnectionInfo, frame: Value| {
        if let Some(endpoint) = parse::switch_master(&frame, &service) {
            let _ = tx.try_send(Msg::SwitchMaster(endpoint));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentinel_naming_the_primary_just_left_is_stale_for_a_while() {
        let t0 = Instant::now();
        let (a, b) = (Endpoint::new("h", 1), Endpoint::new("h", 2));
        let w = Duration::from_secs(10);
        let left = (a.clone(), t0);
        // (answer, left, seconds after the switch, stale)
        let table = [
            (&a, Some(&left), 0, true),
            (&a, Some(&left), 9, true),
            (&a, Some(&left), 10, false),
            (&b, Some(&left), 0, false),
            (&a, None, 0, false),
        ];
        for (answer, left, secs, stale) in table {
            let now = t0 + Duration::from_secs(secs);
            assert_eq!(
                is_stale(answer, left, now, w),
                stale,
                "{answer} after {secs} s"
            );
        }
    }

    #[test]
    fn sentinels_use_their_own_credentials_never_the_data_nodes_provider() {
        use crate::config::{Credentials, RotatingCredentials};
        let provider = RotatingCredentials::new(Credentials::user("app", "token"));
        let o = Options {
            credentials: Some(Arc::new(provider)),
            sentinel_user: Some("watch".to_string()),
            ..Options::default()
        };
        let s = sentinel_options(&o);
        assert!(s.credentials.is_none());
        assert_eq!(s.user.as_deref(), Some("watch"));
    }
}
