//! Maintenance notifications as Redis Enterprise sends them (see the maintenance
//! spec and `wire-captures.md`): opt-in per connection, one sequence counter per
//! deployment shared across types, a frame encoded per recipient, MOVING's window
//! that ends with every connection of the node closed, re-sent MOVING to connections
//! that opt in while the window is open, and the retained last MIGRATED / FAILED_OVER
//! replayed right after the opt-in `+OK`, in the same write.
//!
//! Owns: what is sent, to whom, and when. Must never: send to a connection that did
//! not opt in or does not speak RESP3, replay an opening notification (only shard-scoped
//! completions are retained), or share one encoded frame between recipients.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::reply::{self, bulk_value, err, ok, Reply};
use super::rng;
use super::server::ServerInner;
use super::session::Ctx;
use super::{FakeServer, OptIn};
use crate::resp::Value;

/// A maintenance notification.
///
/// Shard ids are opaque strings (sent as the stringified JSON array `["27"]`); slot
/// lists use the server's notation (`8892-8991`, `1,5-9`); endpoints are `host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notification {
    /// `MOVING <seq> <seconds> <endpoint|null>`: the endpoint is moving; after
    /// `seconds` plus a slack the server closes every connection of the node.
    Moving {
        /// Declared window in seconds.
        seconds: u64,
        /// The new endpoint, or `None` (sent as RESP3 null `_`, as every observed one was).
        endpoint: Option<String>,
    },
    /// `MIGRATING <seq> <seconds> <shards>`
    Migrating {
        /// Expected duration in seconds.
        seconds: u64,
        /// Shard ids.
        shards: Vec<String>,
    },
    /// `MIGRATED <seq> <shards>` (retained and replayed on opt-in).
    Migrated {
        /// Shard ids.
        shards: Vec<String>,
    },
    /// `FAILING_OVER <seq> <seconds> <shards>`
    FailingOver {
        /// Expected duration in seconds.
        seconds: u64,
        /// Shard ids.
        shards: Vec<String>,
    },
    /// `FAILED_OVER <seq> <shards>` (retained and replayed on opt-in).
    FailedOver {
        /// Shard ids.
        shards: Vec<String>,
    },
    /// `SMIGRATING <seq> <slots>`
    SMigrating {
        /// Slot list, e.g. `8892-8991`.
        slots: String,
    },
    /// `SMIGRATED <seq> [[source, target, slots], ...]`
    SMigrated {
        /// `(source host:port, target host:port, slot list)` triplets.
        triplets: Vec<(String, String, String)>,
    },
}

fn shard_list(shards: &[String]) -> Value {
    let items: Vec<String> = shards
        .iter()
        .map(|s| serde_json::Value::String(s.clone()).to_string())
        .collect();
    bulk_value(format!("[{}]", items.join(",")).as_bytes())
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl Notification {
    /// `MOVING` with no new endpoint.
    pub fn moving(seconds: u64) -> Notification {
        Notification::Moving {
            seconds,
            endpoint: None,
        }
    }

    /// `MIGRATING seconds ["shard", ...]`
    pub fn migrating(seconds: u64, shards: &[&str]) -> Notification {
        Notification::Migrating {
            seconds,
            shards: strings(shards),
        }
    }

    /// `MIGRATED ["shard", ...]`
    pub fn migrated(shards: &[&str]) -> Notification {
        Notification::Migrated {
            shards: strings(shards),
        }
    }

    /// `FAILING_OVER seconds ["shard", ...]`
    pub fn failing_over(seconds: u64, shards: &[&str]) -> Notification {
        Notification::FailingOver {
            seconds,
            shards: strings(shards),
        }
    }

    /// `FAILED_OVER ["shard", ...]`
    pub fn failed_over(shards: &[&str]) -> Notification {
        Notification::FailedOver {
            shards: strings(shards),
        }
    }

    /// The type element (`MOVING`, `SMIGRATED`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Notification::Moving { .. } => "MOVING",
            Notification::Migrating { .. } => "MIGRATING",
            Notification::Migrated { .. } => "MIGRATED",
            Notification::FailingOver { .. } => "FAILING_OVER",
            Notification::FailedOver { .. } => "FAILED_OVER",
            Notification::SMigrating { .. } => "SMIGRATING",
            Notification::SMigrated { .. } => "SMIGRATED",
        }
    }

    /// The push frame with sequence id `seq`, shaped as captured from real servers
    /// (type as a bulk string, `:seq`, then the kind's elements).
    pub fn to_frame(&self, seq: u64) -> Value {
        let mut items = vec![bulk_value(self.kind().as_bytes()), Value::Int(seq as i64)];
        match self {
            Notification::Moving { seconds, endpoint } => {
                items.push(Value::Int(*seconds as i64));
                items.push(
                    endpoint
                        .as_ref()
                        .map_or(Value::Nil, |e| bulk_value(e.as_bytes())),
                );
            }
            Notification::Migrating { seconds, shards }
            | Notification::FailingOver { seconds, shards } => {
                items.push(Value::Int(*seconds as i64));
                items.push(shard_list(shards));
            }
            Notification::Migrated { shards } | Notification::FailedOver { shards } => {
                items.push(shard_list(shards));
            }
            Notification::SMigrating { slots } => items.push(bulk_value(slots.as_bytes())),
            Notification::SMigrated { triplets } => items.push(Value::Array(
                triplets
                    .iter()
                    .map(|(s, t, slots)| {
                        Value::Array(vec![
                            bulk_value(s.as_bytes()),
                            bulk_value(t.as_bytes()),
                            bulk_value(slots.as_bytes()),
                        ])
                    })
                    .collect(),
            )),
        }
        Value::Push(items)
    }

    /// Shard-scoped completions are what Enterprise retains and replays on opt-in.
    fn retained(&self) -> bool {
        matches!(
            self,
            Notification::Migrated { .. } | Notification::FailedOver { .. }
        )
    }
}

struct MovingWindow {
    id: u64,
    seconds: u64,
    endpoint: Option<String>,
    opened: Instant,
    closes_at: Instant,
}

#[derive(Default)]
struct MaintInner {
    moving: Option<MovingWindow>,
    retained: Option<(Notification, u64)>,
    slack: Option<Duration>,
    /// The MOVING close turned off (`set_moving_close(false)`).
    no_close: bool,
    /// Retention turned off (`set_retain_completions(false)`).
    no_retention: bool,
}

/// Maintenance state of one server.
pub(crate) struct MaintState {
    pub seq: Arc<AtomicU64>,
    inner: Mutex<MaintInner>,
    cond: Condvar,
}

impl MaintState {
    pub(crate) fn new(seq: Arc<AtomicU64>) -> MaintState {
        MaintState {
            seq,
            inner: Mutex::new(MaintInner::default()),
            cond: Condvar::new(),
        }
    }

    /// Wakes MOVING timers (shutdown).
    pub(crate) fn wake(&self) {
        let _g = self.inner.lock();
        self.cond.notify_all();
    }

    fn next_id(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }
}

/// Default slack after a MOVING window: measured closes landed 0.7 to 4.1 s after the
/// declared 15 s; the fake draws 2-4 s, so tests assert acting within the window, never
/// that the socket survives to its end.
fn default_slack() -> Duration {
    Duration::from_secs(2) + rng::duration_below(Duration::from_secs(2))
}

/// Sends `frame` to every opted-in RESP3 connection; returns how many got it.
fn broadcast(server: &ServerInner, frame: &Value) -> usize {
    let hung = server.faults.is_hung();
    let mut sent = 0;
    for conn in server.connections() {
        let eligible = {
            let st = conn.state.lock();
            st.opted_in && st.proto >= 3
        };
        if eligible {
            // Encoded per recipient by `push`: no buffer is shared.
            conn.push(frame, hung);
            sent += 1;
        }
    }
    sent
}

/// Sends notification `n` with id `id` from `server` (window and retention included).
pub(crate) fn deliver(server: &Arc<ServerInner>, n: &Notification, id: u64) {
    record(server, n, id);
    broadcast(server, &n.to_frame(id));
}

/// Sends `burst` (notifications with their ids) from `server` in one write per
/// connection, as a server's event loop flushes what one iteration produced.
fn deliver_burst(server: &Arc<ServerInner>, burst: &[(Notification, u64)]) {
    for (n, id) in burst {
        record(server, n, *id);
    }
    let hung = server.faults.is_hung();
    for conn in server.connections() {
        let proto = {
            let st = conn.state.lock();
            (st.opted_in && st.proto >= 3).then_some(st.proto)
        };
        if let Some(proto) = proto {
            let mut buf = Vec::new();
            for (n, id) in burst {
                reply::encode(&mut buf, proto, &n.to_frame(*id));
            }
            conn.send(&buf, Instant::now(), hung);
        }
    }
}

/// What sending `n` leaves behind: a retained completion, an open MOVING window.
fn record(server: &Arc<ServerInner>, n: &Notification, id: u64) {
    let mut inner = server.maint.inner.lock();
    if n.retained() && !inner.no_retention {
        inner.retained = Some((n.clone(), id));
    }
    if let Notification::Moving { seconds, endpoint } = n {
        let slack = inner.slack.unwrap_or_else(default_slack);
        let now = Instant::now();
        let closes_at = now + Duration::from_secs(*seconds) + slack;
        inner.moving = Some(MovingWindow {
            id,
            seconds: *seconds,
            endpoint: endpoint.clone(),
            opened: now,
            closes_at,
        });
        let timer_server = server.clone();
        let started = server.spawn("mov", move || moving_timer(timer_server, id, closes_at));
        if let Err(e) = started {
            log::warn!("fake server: cannot start the MOVING timer: {e}");
        }
    }
}

/// Closes every connection of the node when the MOVING window (plus slack) is over.
fn moving_timer(server: Arc<ServerInner>, id: u64, closes_at: Instant) {
    {
        let mut inner = server.maint.inner.lock();
        while Instant::now() < closes_at {
            if server.is_shutdown() {
                return;
            }
            server.maint.cond.wait_until(&mut inner, closes_at);
        }
        if inner.moving.as_ref().is_some_and(|w| w.id == id) {
            inner.moving = None;
        }
        if inner.no_close {
            return;
        }
    }
    if !server.is_shutdown() {
        server.close_all();
    }
}

const ENDPOINT_TYPES: &[&str] = &[
    "internal-ip",
    "internal-fqdn",
    "external-ip",
    "external-fqdn",
    "none",
];

/// `CLIENT MAINT_NOTIFICATIONS ON|OFF [moving-endpoint-type <type>]`
pub(crate) fn client_maint_notifications(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let server = ctx.s.server.clone();
    if server.opt_in() == OptIn::Refuse {
        return err("ERR CLIENT MAINT_NOTIFICATIONS is disabled on this cluster");
    }
    let on = match String::from_utf8_lossy(&args[2])
        .to_ascii_uppercase()
        .as_str()
    {
        "ON" => true,
        "OFF" => false,
        _ => return reply::syntax_error(),
    };
    let mut endpoint_type = None;
    let mut i = 3;
    while i < args.len() {
        let opt = String::from_utf8_lossy(&args[i]).to_ascii_lowercase();
        if opt == "moving-endpoint-type" && i + 1 < args.len() {
            let t = String::from_utf8_lossy(&args[i + 1]).to_ascii_lowercase();
            if !ENDPOINT_TYPES.contains(&t.as_str()) {
                return err(format!("ERR invalid moving-endpoint-type '{t}'"));
            }
            endpoint_type = Some(t);
            i += 2;
        } else {
            return reply::syntax_error();
        }
    }
    if !on {
        let mut st = ctx.s.conn.state.lock();
        st.opted_in = false;
        st.moving_endpoint_type = None;
        return ok();
    }
    if ctx.in_exec {
        let mut st = ctx.s.conn.state.lock();
        st.opted_in = true;
        st.moving_endpoint_type = endpoint_type;
        return ok();
    }
    // Under the maintenance lock, so a notification sent concurrently either reaches
    // this connection after its +OK or is re-sent/replayed here, never lost or ahead.
    let inner = server.maint.inner.lock();
    let mut frames = vec![Value::SimpleString("OK".into())];
    if ctx.s.proto >= 3 {
        if let Some((n, id)) = &inner.retained {
            frames.push(n.to_frame(*id));
        }
        if let Some(w) = inner
            .moving
            .as_ref()
            .filter(|w| Instant::now() < w.closes_at)
        {
            let declared_end = w.opened + Duration::from_secs(w.seconds);
            let left = declared_end.saturating_duration_since(Instant::now());
            let again = Notification::Moving {
                seconds: left.as_secs() + u64::from(left.subsec_nanos() > 0),
                endpoint: w.endpoint.clone(),
            };
            frames.push(again.to_frame(w.id));
        }
    }
    ctx.s.emit(&Reply::Frames(frames));
    {
        let mut st = ctx.s.conn.state.lock();
        st.opted_in = true;
        st.moving_endpoint_type = endpoint_type;
    }
    drop(inner);
    Reply::Frames(Vec::new())
}

/// Maintenance notifications.
impl FakeServer {
    /// Sends `n` to this server's opted-in RESP3 connections with the next id of the
    /// deployment's sequence counter (shared by all kinds, and by all nodes of a
    /// cluster); returns the id. MOVING also opens its window: re-sent to connections
    /// that opt in while it is open, and every connection (opted in or not) is closed
    /// after `seconds` plus the slack ([`set_moving_slack`](Self::set_moving_slack)).
    /// MIGRATED and FAILED_OVER are retained and replayed after each opt-in `+OK`
    /// (unless [`set_retain_completions(false)`](Self::set_retain_completions)).
    pub fn notify(&self, n: Notification) -> u64 {
        let id = self.inner.maint.next_id();
        deliver(&self.inner, &n, id);
        id
    }

    /// Like [`notify`](Self::notify) for several notifications at once, written in one
    /// write per connection (so a client reads them as one burst, as it would from a
    /// server that produced them in one event-loop iteration); returns their ids.
    pub fn notify_burst(&self, burst: Vec<Notification>) -> Vec<u64> {
        let burst: Vec<(Notification, u64)> = burst
            .into_iter()
            .map(|n| (n, self.inner.maint.next_id()))
            .collect();
        deliver_burst(&self.inner, &burst);
        burst.into_iter().map(|(_, id)| id).collect()
    }

    /// Like [`notify`](Self::notify) with a chosen sequence id (the counter is not
    /// advanced): for replays, duplicates and out-of-order ids.
    pub fn notify_with_id(&self, n: Notification, id: u64) {
        deliver(&self.inner, &n, id);
    }

    /// Sends any push frame (e.g. a malformed notification) to the opted-in RESP3
    /// connections, as is; returns how many got it. `frame` should be a
    /// `Value::Push` for a client to take it as out-of-band.
    pub fn notify_raw(&self, frame: crate::resp::Value) -> usize {
        broadcast(&self.inner, &frame)
    }

    /// Writes raw bytes to every opted-in RESP3 connection (for frames no `Value`
    /// can express); returns how many got them.
    pub fn notify_raw_bytes(&self, bytes: &[u8]) -> usize {
        let hung = self.inner.faults.is_hung();
        let mut sent = 0;
        for conn in self.inner.connections() {
            let eligible = {
                let st = conn.state.lock();
                st.opted_in && st.proto >= 3
            };
            if eligible {
                conn.send(bytes, Instant::now(), hung);
                sent += 1;
            }
        }
        sent
    }

    /// The slack added to MOVING windows before the server closes its connections
    /// (default: a random 2-4 s per MOVING, as measured; set it low for fast tests).
    pub fn set_moving_slack(&self, slack: Duration) {
        self.inner.maint.inner.lock().slack = Some(slack);
    }

    /// Whether a MOVING closes every connection of the node when its window (plus
    /// the slack) ends (the default, as measured). Off, the window still opens (and
    /// MOVING is re-sent to connections opting in meanwhile) but nothing is closed: the
    /// only thing that can replace a client's connection is then its own handoff.
    pub fn set_moving_close(&self, close: bool) {
        self.inner.maint.inner.lock().no_close = !close;
    }

    /// Whether a MOVING window is open (its connections not yet closed).
    pub fn moving_window_open(&self) -> bool {
        self.inner.maint.inner.lock().moving.is_some()
    }

    /// Forgets the retained MIGRATED / FAILED_OVER, so nothing is replayed on opt-in.
    pub fn clear_retained(&self) {
        self.inner.maint.inner.lock().retained = None;
    }

    /// Whether MIGRATED / FAILED_OVER are retained and replayed on opt-in (the
    /// default, as Enterprise does). `false` forgets what is retained and retains
    /// nothing more, for tests that would rather not reason about the replay.
    pub fn set_retain_completions(&self, on: bool) {
        let mut inner = self.inner.maint.inner.lock();
        inner.no_retention = !on;
        if !on {
            inner.retained = None;
        }
    }
}
