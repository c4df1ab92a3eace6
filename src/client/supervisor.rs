//! The supervisor: the one thread per client that runs timed work: reconnects with
//! exponential back-off and jitter, heartbeats on idle connections, and the check
//! that fails a connection which stopped answering.
//!
//! Reader and writer threads never sleep or reconnect; everything timed is here.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use std::collections::HashMap;

use super::cluster;
use super::deployment::Deployment;
use super::events::ClientEvent;
use super::link::Link;
use super::maintenance;
use super::node::Node;
use crate::config::Endpoint;
use crate::connection::reply_slot::ReplySlot;
use crate::connection::Connection;
use crate::metrics;
use crate::pubsub::Key;
use crate::resp::{write_arg, write_command_header};

/// What wakes the supervisor early.
pub(crate) enum Wake {
    /// A connection failed: reconnect now rather than at the next tick.
    ConnectionLost,
    /// A node was added: connect it now.
    NodeAdded,
    /// Something (a redirected subscription, CLUSTERDOWN) asks for a topology refresh.
    RefreshTopology,
    /// The server ended a subscription we still want (a sharded slot moved).
    Resubscribe(Key),
    /// A node's maintenance inbox has work (a handoff to start, slots that moved).
    Maintenance,
    /// A dial or topology worker finished: look again.
    WorkerDone,
    /// The client is closing.
    Shutdown,
}

/// Extra time past a request's timeout, with nothing read, before the connection is
/// set aside as unresponsive (and, for the requests still in flight on it, past their
/// own deadlines, before it is closed): the caller has already been told.
const DEAD_GRACE: Duration = Duration::from_millis(500);

/// Outstanding heartbeats of one deployment: per node endpoint, one per connection.
#[derive(Default)]
pub(crate) struct Heartbeats(HashMap<Endpoint, [Option<Arc<ReplySlot>>; 2]>);

/// The supervisor loop of a client (a group member's too: each member has its own,
/// so one member's reconnect never delays another's).
pub(crate) fn run(deployment: Arc<Deployment>, wake: Receiver<Wake>) {
    let mut heartbeats = Heartbeats::default();
    loop {
        if deployment.is_closed() {
            return;
        }
        tick(&deployment, &mut heartbeats);
        match wake.recv_timeout(next_wait(&deployment)) {
            Ok(Wake::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(w) => handle_wake(&deployment, &w),
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// How long the loop may wait before the next due piece of work.
pub(crate) fn next_wait(deployment: &Deployment) -> Duration {
    let tick = (deployment.options.keep_alive / 4)
        .clamp(Duration::from_millis(50), Duration::from_millis(250));
    // A cluster re-reads its topology on its own schedule (every 100-250 ms while a
    // slot's owner is unreachable).
    let tick = match deployment.cluster() {
        Some(state) => tick.min(
            cluster::next_refresh(deployment, &state).saturating_duration_since(Instant::now()),
        ),
        None => tick,
    };
    deployment
        .nodes()
        .iter()
        .flat_map(|n| [&n.interactive, &n.pubsub])
        .filter_map(|l| l.reconnect.lock().next_at)
        .map(|at| at.saturating_duration_since(Instant::now()))
        .min()
        .map_or(tick, |d| d.min(tick))
}

/// Acts on a wake-up.
pub(crate) fn handle_wake(deployment: &Deployment, wake: &Wake) {
    match wake {
        Wake::Resubscribe(key) => resubscribe(deployment, key),
        Wake::ConnectionLost | Wake::RefreshTopology => {
            if let Some(state) = deployment.cluster() {
                state.request_refresh();
            }
        }
        // The tick that follows every wake-up does the work.
        Wake::NodeAdded | Wake::Maintenance | Wake::WorkerDone | Wake::Shutdown => {}
    }
}

/// One pass of timed work: heartbeats, dead-connection checks, reconnects, cluster
/// refresh and retirement.
pub(crate) fn tick(deployment: &Arc<Deployment>, heartbeats: &mut Heartbeats) {
    let nodes = deployment.nodes();
    heartbeats
        .0
        .retain(|e, _| nodes.iter().any(|n| n.endpoint == *e));
    for node in &nodes {
        if node.is_closed() {
            continue;
        }
        node.interactive.sweep_draining(DEAD_GRACE);
        node.pubsub.sweep_draining(DEAD_GRACE);
        // Lanes and blocking connections get no heartbeat: one idle as long as a
        // heartbeat's interval is closed instead (a lane is reopened in the background
        // when next wanted, a blocking connection on its next lease).
        let keep_alive = node.interactive.config.options.keep_alive;
        node.lanes.retire_idle(keep_alive);
        node.blocking.retire_idle(keep_alive);
        let [interactive_beat, pubsub_beat] =
            heartbeats.0.entry(node.endpoint.clone()).or_default();
        match node.current() {
            Some(conn) => {
                if let Some(stalled) = watch(node, &node.interactive, &conn, interactive_beat) {
                    // Found hung by its calls: its other connections are suspect too
                    // (the subscription connection is replaced below, in this pass).
                    node.found_hung(stalled);
                }
            }
            None => dial(deployment, node, Which::Interactive),
        }
        match node.pubsub.current() {
            Some(conn) => {
                // Found hung itself, it says nothing of the others: their own calls do.
                let _ = watch(node, &node.pubsub, &conn, pubsub_beat);
            }
            None => {
                if !deployment.subscriptions_for(node).is_empty() {
                    dial(deployment, node, Which::Pubsub);
                }
            }
        }
    }
    maintenance_pass(deployment, &nodes);
    super::reauth::check(deployment);
    if let Some(state) = deployment.cluster() {
        if cluster::next_refresh(deployment, &state) <= Instant::now() {
            refresh_in_background(deployment, &state);
        }
        for endpoint in state.finish_retirements() {
            deployment.remove(&endpoint);
        }
    }
}

/// Starts the handoff worker of every node whose maintenance inbox has a task (the
/// waiting happens there, never on this thread), and acts on the slots an `SMIGRATED`
/// moved (cheap: no waiting, the refresh it asks for is scheduled).
fn maintenance_pass(deployment: &Deployment, nodes: &[Arc<Node>]) {
    for node in nodes {
        let migrations = node.maintenance.take_migrations();
        if !migrations.is_empty() {
            match deployment.cluster() {
                Some(state) => maintenance::on_smigrated(&state, node, migrations),
                None => log::debug!("{}: SMIGRATED outside a cluster ignored", node.endpoint),
            }
        }
        if !node.is_closed() && node.maintenance.claim_worker() {
            maintenance::worker::spawn(
                node.clone(),
                maintenance::worker::Ctx {
                    options: deployment.options.clone(),
                    events: deployment.events.clone(),
                    cluster: deployment.cluster(),
                },
            );
        }
    }
}

/// Re-establishes a subscription the server ended: in a cluster after re-reading
/// where its slot lives now (on the topology worker), on a standalone server on the
/// same connection.
fn resubscribe(deployment: &Deployment, key: &Key) {
    match deployment.cluster() {
        Some(state) => {
            // The refresh (on the topology worker) re-sends what the server ended.
            state.request_refresh();
        }
        None => {
            if let Some(node) = deployment.primary() {
                let registry = deployment.registry.clone();
                if let Err(e) = node.send_subscription(key, true, move || registry.wanted()) {
                    log::debug!("{}: re-subscribing failed: {e}", node.endpoint);
                }
            }
        }
    }
}

/// Heartbeat on an idle connection, and setting aside one that stopped answering;
/// returns how long its oldest request went without a reply byte when it did.
///
/// Slow is not dead: a connection whose oldest request is past its deadline with
/// nothing read takes no new requests and a replacement is dialled, but it is closed
/// only once every request still in flight on it is past its own deadline, so a
/// neighbour's short timeout never fails a request given a longer one.
fn watch(
    node: &Node,
    link: &Link,
    conn: &Arc<Connection>,
    heartbeat: &mut Option<Arc<ReplySlot>>,
) -> Option<Duration> {
    if conn.is_unresponsive(DEAD_GRACE) {
        log::warn!(
            "{}: no answer within the timeout: dialling a replacement, draining this one",
            node.endpoint
        );
        let stalled = conn.stalled_for();
        link.set_aside(conn);
        *heartbeat = None;
        return Some(stalled);
    }
    if let Some(slot) = heartbeat {
        // Still waiting for the last heartbeat's reply: nothing more to do.
        slot.try_take()?;
        *heartbeat = None;
    }
    let options = &link.config.options;
    if conn.idle_for() >= options.keep_alive && !conn.has_pending() {
        let mut frame = Vec::with_capacity(14);
        write_command_header(&mut frame, 1);
        write_arg(&mut frame, b"PING");
        // Heartbeats are never relaxed: a dead server must be noticed during maintenance too.
        let timeout = options.keep_alive.min(options.command_timeout);
        *heartbeat = conn.request_detached(&frame, timeout).ok();
    }
    None
}

/// Which of a node's links a dial is for.
#[derive(Clone, Copy)]
enum Which {
    Interactive,
    Pubsub,
}

/// Dials a link whose back-off allows on a worker thread of its own (`rr-dial …`), one
/// at a time per link, so a server that hangs in its handshake (bounded only by
/// `connectTimeout`) never holds up another server's reconnect, a topology refresh or
/// a heartbeat. The worker installs what it opened and wakes the supervisor.
fn dial(deployment: &Arc<Deployment>, node: &Arc<Node>, which: Which) {
    let link = match which {
        Which::Interactive => &node.interactive,
        Which::Pubsub => &node.pubsub,
    };
    if link
        .reconnect
        .lock()
        .next_at
        .is_some_and(|at| at > Instant::now())
        || link.dialing.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let (d, n) = (deployment.clone(), node.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("rr-dial {}", node.endpoint))
        .spawn(move || {
            // A node forgotten meanwhile (an old primary a Sentinel switch pruned, a
            // retired cluster node) is never dialed again.
            let listed = d.find(&n.endpoint).is_some_and(|x| Arc::ptr_eq(&x, &n));
            match which {
                _ if n.is_closed() || !listed => {}
                Which::Interactive => match reconnect_if_due(&n, &n.interactive) {
                    Some(Ok(conn)) => {
                        n.install(conn);
                        d.signal_connection();
                        super::detect_cluster(&d);
                        if let Some(state) = d.cluster() {
                            state.request_refresh();
                        }
                    }
                    Some(Err(())) => d.signal_connection(),
                    None => {}
                },
                Which::Pubsub => {
                    // A caller may be opening it on demand right now: one link, never
                    // two (the second would replace one whose subscriptions are
                    // confirmed).
                    let _open = n.pubsub.open_lock.lock();
                    if n.pubsub.current().is_none() && !n.is_closed() {
                        if let Some(Ok(conn)) = reconnect_if_due(&n, &n.pubsub) {
                            n.install_pubsub(conn, d.subscriptions_for(&n));
                        }
                    }
                }
            }
            let link = match which {
                Which::Interactive => &n.interactive,
                Which::Pubsub => &n.pubsub,
            };
            link.dialing.store(false, Ordering::Release);
            let _ = d.wake.try_send(Wake::WorkerDone);
        });
    if let Err(e) = spawned {
        link.dialing.store(false, Ordering::Release);
        log::warn!("{}: cannot start a dial thread: {e}", node.endpoint);
    }
}

/// Re-reads the cluster topology on a worker thread (`rr-topology`), one at a time: a
/// node that hangs holds up that query (bounded by the command timeout), never the
/// supervisor's other work.
fn refresh_in_background(deployment: &Arc<Deployment>, state: &Arc<cluster::ClusterState>) {
    if !state.begin_refresh() {
        return;
    }
    let (d, s) = (deployment.clone(), state.clone());
    let spawned = std::thread::Builder::new()
        .name("rr-topology".to_string())
        .spawn(move || {
            // It also moves subscriptions whose slot moved (see `cluster::refresh`).
            cluster::refresh(&d, &s);
            s.end_refresh();
            let _ = d.wake.try_send(Wake::WorkerDone);
        });
    if let Err(e) = spawned {
        state.end_refresh();
        log::warn!("cannot start a topology thread: {e}");
    }
}

/// Opens a connection for `link` when its back-off allows (`None`: not yet); the
/// caller installs it. A failed attempt is published and scheduled again here.
fn reconnect_if_due(node: &Node, link: &Link) -> Option<Result<Connection, ()>> {
    let now = Instant::now();
    if link.reconnect.lock().next_at.is_some_and(|at| at > now) {
        return None;
    }
    match Connection::open(&link.config) {
        Ok(conn) => {
            let restored = {
                let mut st = link.reconnect.lock();
                st.attempt = 0;
                st.next_at = None;
                st.last_error = None;
                st.was_connected
            };
            log::info!("{}: connected", node.endpoint);
            if restored {
                metrics::reconnected(&node.endpoint.host, node.endpoint.port, true);
                node.events.publish(ClientEvent::ConnectionRestored {
                    endpoint: node.endpoint.clone(),
                });
            }
            Some(Ok(conn))
        }
        Err(error) => {
            let mut st = link.reconnect.lock();
            st.attempt = st.attempt.saturating_add(1);
            st.last_error = Some(error.clone());
            let options = &link.config.options;
            let delay = backoff(
                st.attempt,
                options.reconnect_min_delay,
                options.reconnect_max_delay,
                jitter_fraction(),
            );
            st.next_at = Some(crate::clock::deadline_after(Instant::now(), delay));
            log::debug!(
                "{}: reconnect attempt {} failed ({error}); next in {delay:?}",
                node.endpoint,
                st.attempt
            );
            if st.was_connected {
                metrics::reconnected(&node.endpoint.host, node.endpoint.port, false);
            }
            node.events.publish(ClientEvent::ReconnectFailed {
                endpoint: node.endpoint.clone(),
                attempt: st.attempt,
                error,
            });
            Some(Err(()))
        }
    }
}

/// Delay before reconnect attempt `attempt + 1`: `min * 2^(attempt-1)` capped at `max`,
/// then scaled by a jitter in [0.5, 1.0] so a fleet of clients does not reconnect in
/// lock-step after a shared outage.
pub(crate) fn backoff(attempt: u32, min: Duration, max: Duration, jitter: f64) -> Duration {
    let exp = attempt.saturating_sub(1).min(30);
    let raw = min.saturating_mul(1u32 << exp).min(max);
    raw.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// A pseudo-random fraction in [0, 1): jitter only needs to differ between clients
/// and attempts, not to be unpredictable.
pub(crate) use crate::clock::jitter_fraction;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_jitters_down() {
        let (min, max) = (Duration::from_millis(100), Duration::from_millis(5000));
        assert_eq!(backoff(1, min, max, 1.0), Duration::from_millis(100));
        assert_eq!(backoff(2, min, max, 1.0), Duration::from_millis(200));
        assert_eq!(backoff(4, min, max, 1.0), Duration::from_millis(800));
        assert_eq!(backoff(20, min, max, 1.0), max);
        assert_eq!(backoff(u32::MAX, min, max, 1.0), max);
        assert_eq!(backoff(1, min, max, 0.0), Duration::from_millis(50));
    }

    #[test]
    fn jitter_is_a_fraction() {
        for _ in 0..100 {
            let j = jitter_fraction();
            assert!((0.0..1.0).contains(&j));
        }
    }
}
