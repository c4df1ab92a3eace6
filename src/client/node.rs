//! `Node`: one server of a deployment: its interactive connection (replaced on
//! reconnect), its lanes beside it for callers that find it busy, its subscription
//! connection (opened on demand), the backlog of callers waiting while it is down, and
//! its pool of dedicated connections for blocking commands.
//!
//! Owns: what a caller sees of one server. Must never: reconnect on a caller's thread
//! (the supervisor does that), or resend a request that may have reached the server.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::dedicated::DedicatedPool;
use super::events::{ClientEvent, EventBus};
use super::lane_rule::{takes_a_lane, LaneTrial, Regime};
use super::link::{why_disconnected, Link};
use super::maintenance::NodeMaintenance;
use crate::config::{BacklogPolicy, Endpoint};
use crate::connection::reply_slot::Outcome;
use crate::connection::{Connection, ConnectionConfig, Deadline, RequestError, Traffic};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::metrics;
use crate::pubsub::{Key, MessageKind};
use crate::resp::{write_arg, write_command_header};

/// Where [`Node::on_a_lane`] left a caller's request.
enum OnLane {
    /// Answered (or failed after it may have reached the server) on a lane.
    Answered(Result<Outcome>),
    /// To be sent on the shared connection; `Some`: timed from then for the trial,
    /// under the regime it was timing.
    Shared(Option<(Regime, Instant)>),
}

pub(crate) struct Node {
    pub(crate) endpoint: Endpoint,
    pub(crate) interactive: Link,
    pub(crate) pubsub: Link,
    /// Backlog waiters park here until a connection is installed or the node closes.
    wait_lock: Mutex<()>,
    available: Condvar,
    backlog_waiting: AtomicUsize,
    pub(crate) blocking: Arc<DedicatedPool>,
    /// Connections beside the interactive one, each taken by one call at a time.
    pub(crate) lanes: Arc<DedicatedPool>,
    /// Whether a caller the lane rule allows a lane is served faster on one.
    lane_trial: LaneTrial,
    closed: AtomicBool,
    pub(crate) events: Arc<EventBus<ClientEvent>>,
    /// Maintenance actions (MOVING handoff, MIGRATED check, SMIGRATED slots).
    pub(crate) maintenance: Arc<NodeMaintenance>,
}

impl Node {
    pub(crate) fn new(
        config: ConnectionConfig,
        pubsub_config: ConnectionConfig,
        events: Arc<EventBus<ClientEvent>>,
        maintenance: Arc<NodeMaintenance>,
    ) -> Node {
        let blocking = Arc::new(DedicatedPool::blocking(config.clone()));
        let lanes = Arc::new(DedicatedPool::lanes(config.clone()));
        Node {
            endpoint: config.endpoint.clone(),
            interactive: Link::new(config),
            pubsub: Link::new(pubsub_config),
            wait_lock: Mutex::new(()),
            available: Condvar::new(),
            backlog_waiting: AtomicUsize::new(0),
            blocking,
            lanes,
            lane_trial: LaneTrial::new(),
            closed: AtomicBool::new(false),
            events,
            maintenance,
        }
    }

    /// The live interactive connection, if there is one.
    pub(crate) fn current(&self) -> Option<Arc<Connection>> {
        self.interactive.current()
    }

    /// Installs a fresh interactive connection and wakes the backlog.
    pub(crate) fn install(&self, conn: Connection) {
        if self.is_closed() {
            conn.close(FailureKind::ClosedByClient);
            return;
        }
        self.interactive.install(conn);
        let _guard = self.wait_lock.lock();
        self.available.notify_all();
    }

    /// Installs a handoff's replacement connection, waking the backlog, and hands back
    /// the one it replaces, still open, for the handoff to drain and close.
    pub(crate) fn swap_interactive(&self, conn: Connection) -> Option<Arc<Connection>> {
        if self.is_closed() {
            conn.close(FailureKind::ClosedByClient);
            return None;
        }
        let old = self.interactive.replace(conn);
        let _guard = self.wait_lock.lock();
        self.available.notify_all();
        old
    }

    /// Installs a fresh subscription connection and re-subscribes what it carries.
    pub(crate) fn install_pubsub(&self, conn: Connection, wanted: Vec<Key>) {
        if self.is_closed() {
            conn.close(FailureKind::ClosedByClient);
            return;
        }
        let conn = self.pubsub.install(conn);
        if !wanted.is_empty() {
            let frame = subscribe_frames(&wanted, true);
            if let Err(e) = conn.send_oneway(&frame) {
                log::debug!("{}: re-subscribing failed: {e}", self.endpoint);
            }
        }
    }

    /// Sends SUBSCRIBE/UNSUBSCRIBE for one name on the subscription connection,
    /// opening it (on the caller's thread) when there is none.
    pub(crate) fn send_subscription(
        &self,
        key: &Key,
        subscribe: bool,
        carried: impl FnOnce() -> Vec<Key>,
    ) -> Result<()> {
        if let Some(conn) = self.pubsub.current() {
            return conn.send_oneway(&subscribe_frames(std::slice::from_ref(key), subscribe));
        }
        if !subscribe || self.is_closed() {
            return Ok(());
        }
        let _open = self.pubsub.open_lock.lock();
        if let Some(conn) = self.pubsub.current() {
            return conn.send_oneway(&subscribe_frames(std::slice::from_ref(key), true));
        }
        // A fresh connection re-subscribes everything it carries, this name included.
        let conn = Connection::open(&self.pubsub.config)?;
        let mut keys = carried();
        if !keys.contains(key) {
            keys.push(key.clone());
        }
        self.install_pubsub(conn, keys);
        Ok(())
    }

    /// The server was found hung on the interactive connection (its oldest call went
    /// `stalled` without a reply byte): every other connection to it is suspect too.
    /// The subscription connection (plain and sharded subscriptions alike) carries no
    /// calls that would show a hang, and only its heartbeat, after `keepAlive` of
    /// silence plus a timeout, would find it out: meanwhile its subscriber hears
    /// nothing (seen in the soak: a group failed back to a member whose half-open
    /// subscription stayed silent 5.8 s). So it is closed now, and the supervisor
    /// redials it at once and re-subscribes what it carried. Not spared for having
    /// read something lately: a half-open socket still delivers what was in flight
    /// when it broke (a test caught exactly that, 2 runs in 30). Idle blocking
    /// connections are closed too; one leased now ends with its call.
    pub(crate) fn found_hung(&self, stalled: Duration) {
        if let Some(conn) = self.pubsub.current() {
            log::warn!(
                "{}: no reply for {stalled:?}: replacing the subscription connection too",
                self.endpoint
            );
            conn.close(FailureKind::Timeout);
        }
        self.blocking.recycle();
        self.lanes.recycle();
    }

    /// Caller work in flight on the interactive connection and its lanes (our own
    /// traffic excluded).
    pub(crate) fn caller_inflight(&self) -> usize {
        self.current().map_or(0, |c| c.caller_inflight()) + self.lanes.leased()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends a request, waiting in the backlog (up to the deadline) while the node has
    /// no live connection. A request is resent only when it was never written.
    pub(crate) fn request(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
    ) -> Result<Outcome> {
        self.request_while(frame, replies, deadline, traffic, &|| true)
    }

    /// The call's deadline as it applies on this server now (relaxed from the call's
    /// start while a maintenance window is in force here).
    pub(crate) fn deadline_at(&self, deadline: &Deadline) -> Instant {
        deadline.on(&self.interactive.config.timeouts)
    }

    /// [`Node::request`] for a call that may come to belong elsewhere while it waits
    /// for this node's connection (a cluster slot that moved, a primary that moved):
    /// `still_routed` is asked again each time the node is woken
    /// ([`Node::wake_backlog`]); once false, the request comes back unsent
    /// (`ErrorKind::ConnectionClosed`, marked unsent) for the router to send elsewhere.
    pub(crate) fn request_while(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
        still_routed: &dyn Fn() -> bool,
    ) -> Result<Outcome> {
        loop {
            if self.is_closed() {
                return Err(self.closed_error());
            }
            if Instant::now() >= self.deadline_at(&deadline) {
                // Never sent: a request its caller is already told timed out must not
                // run on the server afterwards.
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "timed out before the request could be sent ({} ms)",
                        deadline.start().elapsed().as_millis()
                    ),
                )
                .with_endpoint(self.endpoint.to_string())
                .with_maintenance(maintenance_in_force(self)));
            }
            if let Some(conn) = self.current() {
                let timed = match self.on_a_lane(&conn, frame, replies, deadline, traffic) {
                    OnLane::Answered(done) => return done,
                    OnLane::Shared(timed) => timed,
                };
                // The same deadline, fixed at the call's start: the connection relaxes
                // it from there (re-reading the window as it waits), never from now.
                match conn.request(frame, replies, deadline, traffic) {
                    Ok(outcome) => {
                        if let Some(timed) = timed {
                            self.record_trial(timed);
                        }
                        if traffic.is_caller() {
                            self.observe_error_replies(&conn, &outcome);
                        }
                        return Ok(outcome);
                    }
                    Err(RequestError::Failed(e)) => return Err(e),
                    // A handoff replaced it while we were sending (it refuses new
                    // requests but is not closed): go to the new one, also under
                    // `backlog=failfast`, since the node is connected.
                    Err(RequestError::Unsent(_))
                        if !conn.is_closed()
                            && self.current().is_some_and(|c| !Arc::ptr_eq(&c, &conn)) =>
                    {
                        continue
                    }
                    Err(RequestError::Unsent(_)) => {}
                }
            }
            // A relaxed window (maintenance) also covers the wait for the reconnect it
            // announced; re-read each turn.
            self.wait_for_connection(self.deadline_at(&deadline), still_routed)?;
        }
    }

    /// Sends a caller's request on an idle lane when the interactive connection `conn`
    /// already carries another caller's, the rule allows it ([`takes_a_lane`]) and the
    /// trial found a lane faster here ([`LaneTrial`]): then both read their own replies
    /// instead of one reading for the other. Otherwise the request goes on `conn` (no
    /// lane idle, the lane closed before the request reached it, or the pair is faster
    /// together), timed when the trial is timing.
    fn on_a_lane(
        &self,
        conn: &Arc<Connection>,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
    ) -> OnLane {
        let others = self.interactive.config.company.waiting();
        let lanes = self.lanes.bound();
        // Where the rule can apply: a caller, and every caller could be alone.
        if !traffic.is_caller() || !takes_a_lane(1, others, lanes) {
            return OnLane::Shared(None);
        }
        let timed = self.lane_trial.timing().map(|r| (r, Instant::now()));
        let regime = if takes_a_lane(conn.caller_inflight(), others, lanes) {
            self.lane_trial.choose()
        } else {
            Regime::Shared
        };
        let lane = match regime {
            Regime::Lane => self.lanes.try_lease(),
            Regime::Shared => None,
        };
        let Some(lane) = lane else {
            return OnLane::Shared(timed);
        };
        let result = lane.request(frame, replies, deadline, traffic);
        if let (Ok(_), Some(timed)) = (&result, timed) {
            self.record_trial(timed);
        }
        // The node's breaker sees every call, whichever connection carried it.
        conn.observe(&result);
        if let Ok(outcome) = &result {
            self.observe_error_replies(conn, outcome);
        }
        self.lanes.end_call(lane, &result);
        match result {
            Ok(outcome) => OnLane::Answered(Ok(outcome)),
            Err(RequestError::Failed(e)) => OnLane::Answered(Err(e)),
            Err(RequestError::Unsent(_)) => OnLane::Shared(None),
        }
    }

    /// Feeds the circuit breaker the error replies inside a pipelined request (a batch,
    /// a transaction), each as the same reply alone would be: a transient one
    /// (`-LOADING`, `-BUSY`, ...) as a failure, an application one (`-WRONGTYPE`,
    /// `-EXECABORT`) as a success carrying its kind. The connection has counted the
    /// round trip once already, as a success for coming back whole (or as a failure,
    /// when it did not); without this, a server answering every batch with `-LOADING`
    /// never tripped a breaker that a single `-LOADING`d command would. Replies nested
    /// in `EXEC`'s array are those of commands that ran, and are not looked at.
    fn observe_error_replies(&self, conn: &Connection, outcome: &Outcome) {
        let Outcome::Many(replies) = outcome else {
            return;
        };
        if self.interactive.config.breaker.is_none() {
            return;
        }
        for reply in replies.iter().filter(|r| r.is_error()) {
            conn.observe(&Ok(Outcome::One(reply.clone())));
        }
    }

    /// A call timed for the lane trial was answered.
    fn record_trial(&self, (regime, sent): (Regime, Instant)) {
        let now = Instant::now();
        self.lane_trial
            .record(regime, now.saturating_duration_since(sent), now);
    }

    /// Wakes the callers waiting in the backlog to ask again whether they still belong
    /// here (the cluster's slot map changed, or the primary moved).
    pub(crate) fn wake_backlog(&self) {
        let _guard = self.wait_lock.lock();
        self.available.notify_all();
    }

    fn wait_for_connection(
        &self,
        deadline: Instant,
        still_routed: &dyn Fn() -> bool,
    ) -> Result<()> {
        let options = &self.interactive.config.options;
        if options.backlog == BacklogPolicy::FailFast {
            let (why, failure) = why_disconnected(self.interactive.last_error().as_ref());
            return Err(Error::new(
                ErrorKind::ConnectionClosed,
                format!("not connected (backlog=failfast){why}"),
            )
            .with_endpoint(self.endpoint.to_string())
            .with_failure(failure)
            .with_maintenance(maintenance_in_force(self))
            .unsent());
        }
        let waiting = self.backlog_waiting.fetch_add(1, Ordering::AcqRel) + 1;
        let _count = Decrement(&self.backlog_waiting);
        let (host, port) = (&self.endpoint.host, self.endpoint.port);
        if waiting > options.backlog_limit {
            return Err(Error::new(
                ErrorKind::BacklogFull,
                format!(
                    "{} callers already wait for the connection (backlogLimit)",
                    options.backlog_limit
                ),
            )
            .with_endpoint(self.endpoint.to_string()));
        }
        let _waiting = metrics::BacklogWait::enter(host, port);
        let mut guard = self.wait_lock.lock();
        while self.current().is_none() && !self.is_closed() {
            // Checked under the lock `wake_backlog` takes, so no wake-up is missed.
            if !still_routed() {
                return Err(Error::new(
                    ErrorKind::ConnectionClosed,
                    "not connected, and the call now belongs to another node",
                )
                .with_endpoint(self.endpoint.to_string())
                .unsent());
            }
            if self.available.wait_until(&mut guard, deadline).timed_out() {
                if self.current().is_some() {
                    break;
                }
                metrics::backlog_timed_out(host, port);
                let (why, failure) = why_disconnected(self.interactive.last_error().as_ref());
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("timed out waiting for a connection{why}"),
                )
                .with_endpoint(self.endpoint.to_string())
                .with_failure(failure)
                .with_maintenance(maintenance_in_force(self)));
            }
        }
        Ok(())
    }

    fn closed_error(&self) -> Error {
        Error::new(ErrorKind::Closed, "the client is closed")
            .with_endpoint(self.endpoint.to_string())
    }

    /// Callers currently waiting for the connection.
    #[allow(dead_code)]
    pub(crate) fn backlog_len(&self) -> usize {
        self.backlog_waiting.load(Ordering::Relaxed)
    }

    /// Closes every connection and wakes every waiter; nothing reconnects afterwards.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.maintenance.cancel();
        {
            // Taken so an on-demand open in progress finishes before we close.
            let _open = self.pubsub.open_lock.lock();
            self.pubsub.close();
        }
        self.interactive.close();
        self.blocking.close();
        self.lanes.close();
        let _guard = self.wait_lock.lock();
        self.available.notify_all();
    }
}

/// SUBSCRIBE frames (or UNSUBSCRIBE), one command per kind.
pub(crate) fn subscribe_frames(keys: &[Key], subscribe: bool) -> Vec<u8> {
    let mut frame = Vec::new();
    for kind in [
        MessageKind::Channel,
        MessageKind::Pattern,
        MessageKind::Sharded,
    ] {
        let names: Vec<&[u8]> = keys
            .iter()
            .filter(|k| k.0 == kind)
            .map(|k| k.1.as_slice())
            .collect();
        if names.is_empty() {
            continue;
        }
        let command = if subscribe {
            kind.subscribe_command()
        } else {
            kind.unsubscribe_command()
        };
        // Sharded names go one per command: in a cluster, channels of one SSUBSCRIBE
        // must share a slot.
        let groups: Vec<Vec<&[u8]>> = if kind == MessageKind::Sharded {
            names.into_iter().map(|n| vec![n]).collect()
        } else {
            vec![names]
        };
        for group in groups {
            write_command_header(&mut frame, group.len() + 1);
            write_arg(&mut frame, command.as_bytes());
            for n in group {
                write_arg(&mut frame, n);
            }
        }
    }
    frame
}

/// The announced maintenance in force on `node`'s server, for its errors.
fn maintenance_in_force(node: &Node) -> crate::error::MaintenanceKind {
    node.interactive.config.timeouts.maintenance()
}

struct Decrement<'a>(&'a AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
