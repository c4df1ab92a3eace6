//! Re-authentication in place: when the credentials provider's generation moves (a
//! token renewed, a password rotated), every live connection of the deployment sends
//! `AUTH` with the new credentials through its own queue (one frame, so it never
//! interleaves with a caller's command), without closing anything. Idle dedicated
//! (blocking) connections are recycled instead, and a subscribed RESP2 connection,
//! where the server refuses `AUTH`, keeps what it has until it reconnects.
//!
//! The supervisor only notices the change (an atomic read per tick); the sending and
//! waiting happen on an `rr-reauth` worker.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::deployment::Deployment;
use super::events::ClientEvent;
use crate::config::Protocol;
use crate::connection::slot::Outcome;
use crate::connection::Connection;
use crate::error::Error;
use crate::resp::{write_arg, write_command_header};

/// What a deployment remembers of re-authentication.
#[derive(Debug, Default)]
pub(crate) struct ReauthState {
    /// The provider generation every live connection has been brought to.
    done: AtomicU64,
    /// A worker is under way.
    running: AtomicBool,
    /// The provider failed: (failures in a row, when to ask it again).
    backoff: Mutex<(u32, Option<Instant>)>,
}

impl ReauthState {
    /// Connections about to open take the provider's credentials of `generation`.
    pub(crate) fn starting_at(generation: u64) -> ReauthState {
        ReauthState {
            done: AtomicU64::new(generation),
            running: AtomicBool::new(false),
            backoff: Mutex::new((0, None)),
        }
    }
}

/// Starts a worker when the provider's credentials changed since the last round.
pub(crate) fn check(deployment: &Arc<Deployment>) {
    let Some(provider) = deployment.options.credentials.clone() else {
        return;
    };
    let state = &deployment.reauth;
    let generation = provider.generation();
    if generation == state.done.load(Ordering::Acquire)
        || state.backoff.lock().1.is_some_and(|at| Instant::now() < at)
        || state.running.swap(true, Ordering::AcqRel)
    {
        return;
    }
    let d = deployment.clone();
    let spawned = std::thread::Builder::new()
        .name("rr-reauth".to_string())
        .spawn(move || {
            match provider.credentials() {
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
                    reauthenticate(&d, &frame, secret);
                    d.reauth.done.store(generation, Ordering::Release);
                    *d.reauth.backoff.lock() = (0, None);
                }
                // Asked again with back-off while the current credentials still serve.
                Err(error) => {
                    let mut backoff = d.reauth.backoff.lock();
                    backoff.0 = backoff.0.saturating_add(1);
                    let delay = super::supervisor::backoff(
                        backoff.0,
                        d.options.reconnect_min_delay,
                        d.options.reconnect_max_delay,
                        super::supervisor::jitter_fraction(),
                    );
                    backoff.1 = Some(crate::connection::deadline_after(Instant::now(), delay));
                    log::warn!(
                        "the credentials provider failed ({error}); asking again in {delay:?}"
                    );
                    d.events.publish(ClientEvent::CredentialsUnavailable {
                        error,
                        attempt: backoff.0,
                    });
                }
            }
            d.reauth.running.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        state.running.store(false, Ordering::Release);
        log::warn!("cannot start a re-authentication thread: {e}");
    }
}

fn reauthenticate(deployment: &Deployment, frame: &[u8], secret: &str) {
    let timeout = deployment.options.command_timeout;
    for node in deployment.nodes() {
        let subscribed = node
            .pubsub
            .current()
            .filter(|c| c.info().protocol == Protocol::Resp3);
        for conn in node.current().into_iter().chain(subscribed) {
            if let Err(error) = auth(&conn, frame, timeout) {
                let error = error.redacting(secret);
                log::warn!("{}: re-authentication failed: {error}", node.endpoint);
                deployment
                    .events
                    .publish(ClientEvent::ReauthenticationFailed {
                        endpoint: node.endpoint.clone(),
                        error,
                    });
            }
        }
        // Dedicated connections take new credentials by being opened afresh.
        node.blocking.recycle();
    }
}

fn auth(conn: &Connection, frame: &[u8], timeout: std::time::Duration) -> crate::Result<()> {
    let outcome = conn
        .request(frame, 1, crate::connection::Deadline::after(timeout), false)
        .map_err(|e| match e {
            crate::connection::RequestError::Failed(e)
            | crate::connection::RequestError::Unsent(e) => e,
        })?;
    match outcome {
        Outcome::One(reply) => match reply.error_message() {
            Some(m) => Err(Error::from_server_reply(m).with_command("AUTH")),
            None => Ok(()),
        },
        Outcome::Failed(e) => Err(e),
        Outcome::Many(_) => Ok(()),
    }
}
