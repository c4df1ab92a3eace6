//! Routing commands in a cluster: by the slot of their keys, following `-MOVED` (map
//! updated, refresh requested) and `-ASK` (`ASKING` then the command, map untouched),
//! waiting out `-TRYAGAIN`/`-CLUSTERDOWN` within the caller's timeout. Redirect loops
//! end after a bound with a classified error.
//!
//! A call waiting for a disconnected node is re-routed by the map as it is when the map
//! changes (a promoted replica took its slot); `-READONLY` (a stale map sent a write to
//! a demoted master) asks for a refresh, so a retry goes by the new map.
//!
//! Where a command goes is decided first (`route`): by its keys, or for a keyless one
//! by its request policy; commands for every master go through `fan_out`, keys across
//! slots through `split`.

use std::time::{Duration, Instant};

use super::super::deployment::Deployment;
use super::fan_out::{self, Reach};
use super::route::{self, Route};
use super::{split, ClusterState};
use crate::command::{Cmd, RetryCategory};
use crate::config::Endpoint;
use crate::connection::reply_slot::Outcome;
use crate::connection::{CallTimeout, Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// Redirects followed for one command before giving up (a healthy migration needs 2).
pub(crate) const MAX_REDIRECTS: usize = 16;

/// Routing for one call, borrowing the deployment and its cluster state.
pub(crate) struct ClusterRouter<'a> {
    deployment: &'a Deployment,
    state: &'a ClusterState,
}

/// Where one command goes and how.
pub(super) struct Target {
    pub endpoint: Endpoint,
    pub asking: bool,
}

impl<'a> ClusterRouter<'a> {
    pub(crate) fn new(deployment: &'a Deployment, state: &'a ClusterState) -> ClusterRouter<'a> {
        ClusterRouter { deployment, state }
    }

    pub(super) fn deployment(&self) -> &Deployment {
        self.deployment
    }

    pub(super) fn state(&self) -> &ClusterState {
        self.state
    }

    fn deadline(&self, call: CallTimeout) -> Deadline {
        call.deadline(self.deployment().options.command_timeout)
    }

    /// The call's deadline as it applies on `endpoint`'s server now (relaxed there by
    /// a maintenance window, from the call's start); unrelaxed for a node not known.
    pub(super) fn deadline_on(&self, deadline: &Deadline, endpoint: &Endpoint) -> Instant {
        self.deployment()
            .find(endpoint)
            .map_or_else(|| deadline.unrelaxed(), |n| n.deadline_at(deadline))
    }

    /// The node a command for `slot` goes to first: its slot's master (or a replica
    /// for reads when asked); any master for a keyless command (`None`).
    pub(super) fn first_target(&self, cmd: &Cmd, slot: Option<u16>) -> Result<Endpoint> {
        let pick = self.state.next_pick();
        let endpoint = match slot {
            Some(slot) => {
                let read = cmd.retry_category() == RetryCategory::ReadOnly;
                if read && self.deployment().options.replica_reads {
                    // A replica without a connection (down, or not dialled yet): the
                    // master serves the read rather than the call waiting for it.
                    self.state
                        .replica_for(slot, pick)
                        .filter(|e| {
                            self.deployment()
                                .find(e)
                                .is_some_and(|n| n.current().is_some())
                        })
                        .or_else(|| self.state.master_for(slot))
                } else {
                    self.state.master_for(slot)
                }
            }
            None => self.state.any_master(pick),
        };
        match endpoint {
            Some(e) => Ok(e),
            // No map yet (or an uncovered slot): the seed answers with a redirect.
            None => self
                .deployment()
                .primary()
                .map(|n| n.endpoint.clone())
                .ok_or_else(|| Error::new(ErrorKind::ClusterDown, "no node is known")),
        }
    }

    /// Sends one command to `target` and returns its reply, unconverted. Every hop gets
    /// the call's own deadline, never what is left of it (which the node would relax
    /// again from the hop: see `connection::deadline`).
    pub(super) fn send_to(
        &self,
        cmd: &Cmd,
        slot: Option<u16>,
        target: &Target,
        deadline: Deadline,
    ) -> Result<Value> {
        let node = self.deployment().node_for(&target.endpoint)?;
        if Instant::now() >= node.deadline_at(&deadline) {
            return Err(Error::new(
                ErrorKind::Timeout,
                "timed out while following redirects",
            ));
        }
        if let Some(block) = cmd.block_time() {
            return node.blocking.run(cmd.frame(), deadline, block);
        }
        if !target.asking {
            let stay = || self.state.still_routes(slot, &target.endpoint);
            return match node.request_while(cmd.frame(), 1, deadline, Traffic::Caller, &stay)? {
                Outcome::One(v) => Ok(v),
                Outcome::Failed(e) => Err(e),
                Outcome::Many(_) => Err(Error::new(ErrorKind::Protocol, "several replies")),
            };
        }
        // ASKING and the command in one write, so nothing can come between them.
        let asking = Cmd::typed("ASKING", RetryCategory::Connection);
        let mut frame = Vec::with_capacity(asking.frame().len() + cmd.frame().len());
        frame.extend_from_slice(asking.frame());
        frame.extend_from_slice(cmd.frame());
        match node.request(&frame, 2, deadline, Traffic::Caller)? {
            Outcome::Many(mut v) if v.len() == 2 => Ok(v.swap_remove(1)),
            Outcome::Failed(e) => Err(e),
            _ => Err(Error::new(
                ErrorKind::Protocol,
                "unexpected replies to ASKING",
            )),
        }
    }

    /// Sends one command to the node of `slot` (`None`: any master), following
    /// redirects until it gets a final reply.
    pub(super) fn route(&self, cmd: &Cmd, slot: Option<u16>, deadline: Deadline) -> Result<Value> {
        let mut target = Target {
            endpoint: self.first_target(cmd, slot)?,
            asking: false,
        };
        for attempt in 0..MAX_REDIRECTS {
            let reply = match self.send_to(cmd, slot, &target, deadline) {
                Ok(reply) => reply,
                // Never sent, and the map no longer routes the slot there (its owner
                // died and another was promoted meanwhile): go where it is served now.
                Err(e)
                    if e.is_unsent()
                        && !target.asking
                        && !self.state.still_routes(slot, &target.endpoint) =>
                {
                    log::debug!("{}: re-routed after the map changed", target.endpoint);
                    target = Target {
                        endpoint: self.first_target(cmd, slot)?,
                        asking: false,
                    };
                    continue;
                }
                Err(e) => return Err(e),
            };
            match self.follow(cmd, slot, &reply, &target.endpoint, attempt, deadline)? {
                Some(next) => target = next,
                None => return Ok(reply),
            }
        }
        Err(Error::new(
            ErrorKind::Moved,
            format!("gave up after {MAX_REDIRECTS} redirects"),
        ))
    }

    /// What a reply asks us to do next: `None` when it is final; a new target for
    /// MOVED/ASK; after a pause, the same target for TRYAGAIN and the map's for
    /// CLUSTERDOWN (the refresh it asked for may have moved the slot meanwhile).
    pub(super) fn follow(
        &self,
        cmd: &Cmd,
        slot: Option<u16>,
        reply: &Value,
        from: &Endpoint,
        attempt: usize,
        deadline: Deadline,
    ) -> Result<Option<Target>> {
        let Some(message) = reply.error_message() else {
            return Ok(None);
        };
        let err = Error::from_server_reply(message);
        match err.kind() {
            ErrorKind::Moved | ErrorKind::Ask => {
                let Some((slot, addr)) = err.redirect() else {
                    return Ok(None);
                };
                let endpoint = redirect_endpoint(addr, from)?;
                if err.kind() == ErrorKind::Moved {
                    self.state.moved(slot, &endpoint);
                    // The new owner may be a node we lost (a restarted master failed
                    // back to): dial it now, not after its reconnect back-off.
                    if let Some(node) = self.deployment.find(&self.state.canonical(&endpoint)) {
                        super::hurry_reconnect(self.deployment, self.state, &node);
                    }
                } else {
                    self.state.asked();
                }
                Ok(Some(Target {
                    endpoint: self.state.canonical(&endpoint),
                    asking: err.kind() == ErrorKind::Ask,
                }))
            }
            ErrorKind::TryAgain | ErrorKind::ClusterDown => {
                self.state.tried_again();
                if err.kind() == ErrorKind::ClusterDown {
                    self.state.request_refresh();
                }
                // Bounded by the caller's own deadline: 10 ms, 20 ms, ... up to 320 ms.
                let pause = Duration::from_millis(10 << attempt.min(5));
                let left = self
                    .deadline_on(&deadline, from)
                    .saturating_duration_since(Instant::now());
                if left <= pause {
                    return Ok(None);
                }
                std::thread::sleep(pause);
                let endpoint = match err.kind() {
                    ErrorKind::ClusterDown => self.first_target(cmd, slot)?,
                    _ => from.clone(),
                };
                Ok(Some(Target {
                    endpoint,
                    asking: false,
                }))
            }
            // A write reached a replica: the map is stale (a master was demoted). The
            // reply is final; a retry goes by the refreshed map.
            ErrorKind::ReadOnly => {
                self.state.request_refresh();
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

/// `host:port` from a redirect; an empty host means the node that answered.
fn redirect_endpoint(addr: &str, from: &Endpoint) -> Result<Endpoint> {
    if let Some(port) = addr.strip_prefix(':') {
        let port = port
            .parse()
            .map_err(|_| Error::new(ErrorKind::Protocol, "a redirect with a bad port"))?;
        return Ok(Endpoint::new(from.host.clone(), port));
    }
    crate::config::parse_endpoint(addr)
        .map_err(|_| Error::new(ErrorKind::Protocol, "a redirect to an unreadable address"))
}

impl ClusterRouter<'_> {
    /// Sends one command where its route says (split across slots, or to every
    /// master, where the command asks for it).
    pub(crate) fn send(&self, cmd: &Cmd, call: CallTimeout) -> Result<Value> {
        let deadline = self.deadline(call);
        let route = route::decide(cmd, || self.state.command_table());
        self.send_routed(cmd, route, deadline)
            .map_err(|e| e.with_command(cmd.name()))
    }

    /// Sends one command by a route already decided.
    pub(super) fn send_routed(&self, cmd: &Cmd, route: Route, deadline: Deadline) -> Result<Value> {
        match route {
            Route::Slot(slot) => self.route(cmd, Some(slot), deadline),
            Route::AnyMaster => self.route(cmd, None, deadline),
            Route::Fan { replicas, response } => {
                fan_out::run(self, cmd, Reach::of(replicas), response, deadline)
            }
            Route::Split { units, response } => split::run(self, cmd, &units, response, deadline),
            Route::Refused(refusal) => Err(refusal.error(cmd.name())),
        }
    }

    /// Sends a batch (per node) or a transaction (whole, on one slot).
    pub(crate) fn send_many(
        &self,
        cmds: &[Cmd],
        call: CallTimeout,
        atomic: bool,
    ) -> Result<Vec<Result<Value>>> {
        let deadline = self.deadline(call);
        if atomic {
            split::transaction(self, cmds, deadline).map(|v| v.into_iter().map(Ok).collect())
        } else {
            split::batch(self, cmds, deadline)
        }
    }
}
