//! Re-authentication in place: when the credentials provider's generation moves (a
//! token renewed, a password rotated), every open connection of the deployment is
//! brought to the new credentials without a caller noticing:
//!
//! - interactive connections (every node: standalone, cluster, replicas) and RESP3
//!   subscription connections send `AUTH` through their own queue (one frame, so it
//!   never interleaves with a caller's command), and stay open;
//! - a RESP2 subscription connection, where the server refuses `AUTH` while
//!   subscribed, is replaced: the new one is opened with the new credentials first,
//!   then takes over the subscriptions;
//! - idle dedicated (blocking) connections are closed and reopened on demand; leased
//!   ones are closed when given back;
//! - connections being dialled, set aside as unresponsive, or drained after a handoff
//!   are not reachable: the round waits for them to be installed (then re-sent to) or
//!   to close.
//!
//! What counts is the census (see `connection::census`): every connection is counted
//! under the generation it authenticated with, from before its dial to its close. The
//! round is done, and `ClientEvent::Reauthenticated` raised, when the oldest generation
//! counted reaches the new one; until then the old credentials are still in use.
//!
//! The supervisor only looks (a few atomic reads per node per tick); the sending and
//! waiting happen on an `rr-reauth` worker. It also raises the provider's own failures
//! (a token it could not renew: `CredentialsProvider::renewal_failure`) as
//! `ClientEvent::CredentialsUnavailable`, once per failure and client: the provider
//! lives in `config`, below the client, and cannot raise events itself.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::deployment::Deployment;
use super::events::ClientEvent;
use super::node::Node;
use super::supervisor::Wake;
use crate::config::{CredentialsProvider, Protocol};
use crate::connection::census::AuthCensus;
use crate::connection::reply_slot::Outcome;
use crate::connection::{Connection, RequestError};
use crate::error::Error;
use crate::resp::{write_arg, write_command_header};

/// What a deployment remembers of re-authentication.
#[derive(Debug, Default)]
pub(crate) struct ReauthState {
    /// Every connection of the deployment, by the generation it authenticated with.
    pub(crate) census: Arc<AuthCensus>,
    /// The newest generation `Reauthenticated` was raised for.
    announced: AtomicU64,
    /// A worker is under way.
    running: AtomicBool,
    /// The provider or an `AUTH` failed: (failures in a row, when to try again).
    backoff: Mutex<(u32, Option<Instant>)>,
    /// The newest of the provider's own failures raised as an event (its sequence).
    failures_reported: AtomicU64,
}

impl ReauthState {
    /// Connections about to open take the provider's credentials of `generation`; the
    /// provider's failures up to `failures_seen` happened before the client (they are
    /// not raised).
    pub(crate) fn starting_at(generation: u64, failures_seen: u64) -> ReauthState {
        ReauthState {
            announced: AtomicU64::new(generation),
            failures_reported: AtomicU64::new(failures_seen),
            ..ReauthState::default()
        }
    }
}

/// The generation every open connection is on at least, and how many are open;
/// `None` without a provider.
pub(crate) fn floor(deployment: &Deployment) -> Option<(u64, usize)> {
    let provider = deployment.options.credentials.as_deref()?;
    Some(deployment.reauth.census.floor(provider))
}

/// Raises `Reauthenticated` once every connection reached a newer generation, and
/// starts a worker when a connection it can reach is behind the provider.
pub(crate) fn check(deployment: &Arc<Deployment>) {
    let Some(provider) = deployment.options.credentials.clone() else {
        return;
    };
    let state = &deployment.reauth;
    report_provider_failure(deployment, &*provider);
    announce(deployment, &*provider);
    let generation = provider.generation();
    if state.backoff.lock().1.is_some_and(|at| Instant::now() < at)
        || !reachable_behind(deployment, generation)
        || state.running.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let d = deployment.clone();
    let spawned = std::thread::Builder::new()
        .name("rr-reauth".to_string())
        .spawn(move || {
            run_round(&d, &*provider);
            d.reauth.running.store(false, Ordering::Release);
            // Look again at once: the round may be complete now.
            let _ = d.wake.try_send(Wake::WorkerDone);
        });
    if let Err(e) = spawned {
        state.running.store(false, Ordering::Release);
        log::warn!("cannot start a re-authentication thread: {e}");
    }
}

/// Raises the provider's own failure (a token it could not renew) once per client.
fn report_provider_failure(deployment: &Deployment, provider: &dyn CredentialsProvider) {
    let Some(failure) = provider.renewal_failure() else {
        return;
    };
    let reported = &deployment.reauth.failures_reported;
    if reported.fetch_max(failure.sequence, Ordering::AcqRel) < failure.sequence {
        deployment
            .events
            .publish(ClientEvent::CredentialsUnavailable {
                error: failure.error,
                attempt: failure.attempt,
            });
    }
}

fn announce(deployment: &Deployment, provider: &dyn CredentialsProvider) {
    let state = &deployment.reauth;
    let (generation, connections) = state.census.floor(provider);
    if state.announced.fetch_max(generation, Ordering::AcqRel) < generation {
        log::info!("credentials generation {generation} on all {connections} connections");
        deployment.events.publish(ClientEvent::Reauthenticated {
            generation,
            connections,
        });
    }
}

/// Whether a connection the worker can bring forward is behind `generation`.
fn reachable_behind(deployment: &Deployment, generation: u64) -> bool {
    let behind = |c: Option<Arc<Connection>>| {
        c.and_then(|c| c.auth_generation())
            .is_some_and(|g| g < generation)
    };
    deployment.nodes().iter().any(|n| {
        !n.is_closed()
            && (behind(n.current())
                || behind(n.pubsub.current())
                || n.blocking.holds_credentials_before(generation)
                || n.lanes.holds_credentials_before(generation))
    })
}

fn run_round(d: &Deployment, provider: &dyn CredentialsProvider) {
    // Read before the credentials: a provider that moves meanwhile leaves connections
    // counted one generation behind what they hold, and the next round catches up.
    let generation = provider.generation();
    let provider_error = match provider.credentials() {
        Ok(credentials) => {
            let mut frame = Vec::new();
            let secret = credentials.secret().expose();
            match credentials.user_name() {
                Some(user) => {
                    write_command_header(&mut frame, 3);
                    write_arg(&mut frame, b"AUTH");
                    write_arg(&mut frame, user.as_bytes());
                }
                None => {
                    write_command_header(&mut frame, 2);
                    write_arg(&mut frame, b"AUTH");
                }
            }
            write_arg(&mut frame, secret.as_bytes());
            let round = Round {
                deployment: d,
                frame: &frame,
                secret,
                generation,
            };
            let failures = d
                .nodes()
                .iter()
                .filter(|n| !n.is_closed() && !d.is_closed())
                .map(|n| round.node(n))
                .sum::<usize>();
            if failures == 0 {
                *d.reauth.backoff.lock() = (0, None);
                return;
            }
            // Each refusal was its own `ReauthenticationFailed`.
            None
        }
        Err(error) => Some(error),
    };
    // Tried again with back-off while the current credentials still serve.
    let mut backoff = d.reauth.backoff.lock();
    backoff.0 = backoff.0.saturating_add(1);
    let delay = super::supervisor::backoff(
        backoff.0,
        d.options.reconnect_min_delay,
        d.options.reconnect_max_delay,
        super::supervisor::jitter_fraction(),
    );
    backoff.1 = Some(crate::clock::deadline_after(Instant::now(), delay));
    if let Some(error) = provider_error {
        log::warn!("the credentials provider failed ({error}); asking again in {delay:?}");
        d.events.publish(ClientEvent::CredentialsUnavailable {
            error,
            attempt: backoff.0,
        });
    }
}

/// One worker's pass with the credentials of `generation`.
struct Round<'a> {
    deployment: &'a Deployment,
    frame: &'a [u8],
    secret: &'a str,
    generation: u64,
}

impl Round<'_> {
    /// Brings `node`'s connections forward; how many could not be.
    fn node(&self, node: &Node) -> usize {
        let behind = |c: &Arc<Connection>| c.auth_generation().is_some_and(|g| g < self.generation);
        let mut failures = 0;
        if let Some(conn) = node.current().filter(behind) {
            failures += usize::from(!self.auth(node, &conn));
        }
        if let Some(conn) = node.pubsub.current().filter(behind) {
            let ok = match conn.info().protocol {
                Protocol::Resp3 => self.auth(node, &conn),
                Protocol::Resp2 => self.replace_subscription(node, &conn),
            };
            failures += usize::from(!ok);
        }
        // Dedicated connections take the new credentials by being opened afresh.
        let closed = node.blocking.retire_credentials_before(self.generation)
            + node.lanes.retire_credentials_before(self.generation);
        if closed > 0 {
            log::debug!(
                "{}: closed {closed} idle dedicated connections on older credentials",
                node.endpoint
            );
        }
        failures
    }

    /// `AUTH` on a live connection; `false` when refused or unanswered.
    fn auth(&self, node: &Node, conn: &Connection) -> bool {
        let timeout = self.deployment.options.command_timeout;
        match auth(conn, self.frame, timeout) {
            Ok(()) => {
                conn.reauthenticated(self.generation);
                true
            }
            // Closed or replaced meanwhile (its failure is its own event): whatever
            // replaces it authenticates afresh.
            Err(_) if conn.is_closed() => true,
            Err(None) => true,
            Err(Some(error)) => {
                self.failed(node, error);
                false
            }
        }
    }

    /// Opens a subscription connection with the new credentials and moves the
    /// subscriptions to it (the old one is closed once the new one is in place).
    fn replace_subscription(&self, node: &Node, old: &Arc<Connection>) -> bool {
        let _open = node.pubsub.open_lock.lock();
        let still = node.pubsub.current().is_some_and(|c| Arc::ptr_eq(&c, old));
        if !still || node.is_closed() {
            return true;
        }
        match Connection::open(&node.pubsub.config) {
            Ok(conn) => {
                log::debug!(
                    "{}: subscription connection replaced for new credentials (RESP2 refuses AUTH while subscribed)",
                    node.endpoint
                );
                node.install_pubsub(conn, self.deployment.subscriptions_for(node));
                true
            }
            Err(error) => {
                self.failed(node, error);
                false
            }
        }
    }

    fn failed(&self, node: &Node, error: Error) {
        let error = error.redacting(self.secret);
        log::warn!("{}: re-authentication failed: {error}", node.endpoint);
        self.deployment
            .events
            .publish(ClientEvent::ReauthenticationFailed {
                endpoint: node.endpoint.clone(),
                error,
            });
    }
}

/// `Err(None)`: never sent (the connection refuses new requests: set aside or being
/// drained, so it is on its way out).
fn auth(conn: &Connection, frame: &[u8], timeout: Duration) -> Result<(), Option<Error>> {
    let outcome = conn
        .request(
            frame,
            1,
            crate::connection::Deadline::after(timeout),
            crate::connection::Traffic::Internal,
        )
        .map_err(|e| match e {
            RequestError::Failed(e) => Some(e),
            RequestError::Unsent(_) => None,
        })?;
    match outcome {
        Outcome::One(reply) => match reply.error_message() {
            Some(m) => Err(Some(Error::from_server_reply(m).with_command("AUTH"))),
            None => Ok(()),
        },
        Outcome::Failed(e) => Err(Some(e)),
        Outcome::Many(_) => Ok(()),
    }
}
