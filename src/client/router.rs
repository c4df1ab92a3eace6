//! `Router`, the seam a `Database` sends through (defined here, below `commands`, so a
//! layer that routes implements it without reaching up), and the router behind a
//! client's `Database` and `Subscriber`: a standalone server gets every command; a
//! cluster routes by slot (see `cluster/`). Blocking commands go to a leased
//! connection either way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cluster::ClusterRouter;
use super::dedicated::Lease;
use super::roles::{is_readonly, Roles};
use super::walk::{self, KeyspaceWalk};
use super::{ClientGuard, Deployment};
use crate::command::{Cmd, RetryCategory};
use crate::config::BacklogPolicy;
use crate::connection::reply_slot::Outcome;
use crate::connection::{CallTimeout, Deadline, Traffic};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::pubsub::{Key, PubSubLinks};
use crate::resp::Value;

/// Where a `Database` sends its commands: one deployment, a cluster slot map, or the
/// active member of a group.
pub(crate) trait Router: Send + Sync {
    /// Sends one command and returns its reply (error replies included, unconverted).
    /// `call` carries the call's start: every layer bounds the call from it, so time
    /// spent in one (a group's backlog) is never given again by the next.
    fn send(&self, cmd: &Cmd, call: CallTimeout) -> Result<Value>;

    /// Sends commands pipelined and returns one answer each, in order: its reply
    /// (error replies included), or the error that kept that command alone from
    /// getting one (a cluster: keys across slots, a node of several that failed).
    /// `atomic`: a MULTI/EXEC transaction, which must go whole to one connection.
    fn send_many(
        &self,
        cmds: &[Cmd],
        call: CallTimeout,
        atomic: bool,
    ) -> Result<Vec<Result<Value>>>;

    /// A router bound to one dedicated connection (on the server owning `key`), for a
    /// sequence that must not share its connection: WATCH, reads, MULTI/EXEC.
    fn leased(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>>;

    /// The next page of keys of a walk over the whole keyspace (`SCAN` on every master
    /// in turn, see `walk`); `None` once the walk is complete. `options` follow the
    /// cursor (`MATCH`, `COUNT`, `TYPE`).
    fn scan_page(
        &self,
        _walk: &mut KeyspaceWalk,
        _options: &[Vec<u8>],
        _call: CallTimeout,
    ) -> Result<Option<Vec<Value>>> {
        Err(Error::new(
            ErrorKind::InvalidInput,
            "a keyspace walk cannot run on a dedicated connection",
        ))
    }

    /// The group member serving now (id, name); `None` outside a group.
    fn active_member(&self) -> Option<(u64, String)> {
        None
    }

    /// The router of one group member, whether it serves or not (a retry decided
    /// "same server" stays on the member it was made on); `None` outside a group.
    fn member_router(&self, _id: u64) -> Option<Arc<dyn Router>> {
        None
    }

    /// A counter that moves whenever the group changes (its active member, a member's
    /// connection); `None` outside a group.
    fn change_generation(&self) -> Option<u64> {
        None
    }

    /// Waits up to `timeout` for the change generation to move past `seen`; whether
    /// it did (a retry waiting for a failover wakes at once instead of polling).
    fn wait_change(&self, _seen: u64, _timeout: Duration) -> bool {
        false
    }
}

pub(crate) struct DeploymentRouter {
    // Holding the guard keeps the client alive while any `Database` exists.
    guard: Arc<ClientGuard>,
}

impl DeploymentRouter {
    pub(crate) fn new(guard: Arc<ClientGuard>) -> DeploymentRouter {
        DeploymentRouter { guard }
    }

    fn primary(&self) -> Result<Arc<super::node::Node>> {
        self.guard
            .inner
            .deployment
            .primary()
            .ok_or_else(|| Error::new(ErrorKind::Closed, "the client has no server"))
    }
}

impl Router for DeploymentRouter {
    fn send(&self, cmd: &Cmd, call: CallTimeout) -> Result<Value> {
        let deployment = &self.guard.inner.deployment;
        if let Some(state) = deployment.cluster() {
            return ClusterRouter::new(deployment, &state).send(cmd, call);
        }
        let deadline = call.deadline(deployment.options.command_timeout);
        if let (Some(roles), None) = (deployment.active_roles(), cmd.block_time()) {
            let read = cmd.retry_category() == RetryCategory::ReadOnly;
            return send_by_role(
                deployment,
                roles,
                cmd.frame(),
                1,
                deadline,
                read,
                &|o| matches!(o, Outcome::One(v) if is_readonly(v)),
            )
            .and_then(single)
            .map_err(|e| e.with_command(cmd.name()));
        }
        send_to_node(&*self.primary()?, cmd, deadline)
    }

    fn leased(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        self.lease(key, timeout)
    }

    fn scan_page(
        &self,
        walk: &mut KeyspaceWalk,
        options: &[Vec<u8>],
        call: CallTimeout,
    ) -> Result<Option<Vec<Value>>> {
        let deployment = &self.guard.inner.deployment;
        walk::io::page(walk::io::Scope::Deployment(deployment), walk, options, call)
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        call: CallTimeout,
        atomic: bool,
    ) -> Result<Vec<Result<Value>>> {
        let deployment = &self.guard.inner.deployment;
        if let Some(state) = deployment.cluster() {
            return ClusterRouter::new(deployment, &state).send_many(cmds, call, atomic);
        }
        let deadline = call.deadline(deployment.options.command_timeout);
        let name = cmds.first().map_or("", |c| c.name());
        if let Some(roles) = deployment.active_roles() {
            let reads = cmds
                .iter()
                .all(|c| c.retry_category() == RetryCategory::ReadOnly);
            let refused = |o: &Outcome| refused_by_replica(cmds, o);
            return send_by_role(
                deployment,
                roles,
                &Cmd::concat(cmds),
                cmds.len(),
                deadline,
                reads && !atomic,
                &refused,
            )
            .and_then(Outcome::into_values)
            .map(answers)
            .map_err(|e| e.with_command(name));
        }
        self.primary()?
            .request(&Cmd::concat(cmds), cmds.len(), deadline, Traffic::Caller)
            .and_then(Outcome::into_values)
            .map(answers)
            .map_err(|e| e.with_command(name))
    }
}

impl DeploymentRouter {
    fn lease(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        let deployment = &self.guard.inner.deployment;
        let timeout = timeout.unwrap_or(deployment.options.command_timeout);
        let node = match (deployment.cluster(), key) {
            (Some(state), Some(key)) => {
                let slot = crate::client::cluster::key_slot(key);
                match state.master_for(slot) {
                    Some(e) => deployment.node_for(&e)?,
                    None => self.primary()?,
                }
            }
            _ => self.primary()?,
        };
        Ok(Arc::new(LeasedRouter::new(
            node.blocking.lease_for(timeout)?,
            timeout,
            self.guard.clone(),
        )))
    }
}

/// Every command on one leased dedicated connection.
pub(crate) struct LeasedRouter {
    lease: Lease,
    timeout: Duration,
    _guard: Arc<ClientGuard>,
}

impl LeasedRouter {
    pub(crate) fn new(lease: Lease, timeout: Duration, guard: Arc<ClientGuard>) -> LeasedRouter {
        LeasedRouter {
            lease,
            timeout,
            _guard: guard,
        }
    }
}

impl Router for LeasedRouter {
    fn send(&self, cmd: &Cmd, call: CallTimeout) -> Result<Value> {
        let deadline = call
            .deadline(self.timeout)
            .extended(Some(cmd.block_time().unwrap_or_default()));
        self.lease
            .request(cmd.frame(), 1, deadline)
            .and_then(single)
            .map_err(|e| {
                e.with_command(cmd.name())
                    .with_endpoint(self.lease.endpoint())
            })
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        call: CallTimeout,
        _atomic: bool,
    ) -> Result<Vec<Result<Value>>> {
        self.lease
            .request(&Cmd::concat(cmds), cmds.len(), call.deadline(self.timeout))?
            .into_values()
            .map(answers)
    }

    fn leased(&self, _key: Option<&[u8]>, _timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        Err(Error::new(
            ErrorKind::InvalidInput,
            "already on a dedicated connection",
        ))
    }
}

impl PubSubLinks for DeploymentRouter {
    fn carriers(&self, key: &Key) -> usize {
        let deployment = &self.guard.inner.deployment;
        match deployment.cluster() {
            Some(state) => ClusterRouter::new(deployment, &state).carriers(key),
            None => 1,
        }
    }

    fn send(&self, key: &Key, subscribe: bool) -> Result<()> {
        let deployment = &self.guard.inner.deployment;
        if let Some(state) = deployment.cluster() {
            return ClusterRouter::new(deployment, &state).subscription(key, subscribe);
        }
        let registry = deployment.registry.clone();
        self.primary()?
            .send_subscription(key, subscribe, move || registry.wanted())
    }
}

/// Most `-READONLY` replies one call follows by re-routing: each one asks for a role
/// re-check and waits (a little longer each time) for the primary to change. Past
/// this, the reply goes to the caller: never a loop on `-READONLY`.
const READONLY_REROUTES: u32 = 3;

/// Sends to the primary of a primary/replica or Sentinel deployment (a read to a
/// replica when `replicaReads` asks), following a change of primary:
///
/// - waiting for the primary's connection, a caller is told when the primary moves
///   and goes to the new one (the request was never written);
/// - a `-READONLY` reply (the write reached a replica and was not executed, which
///   `refused` tells for the whole request) asks for a role re-check, waits for the
///   primary to change, and sends again, at most `READONLY_REROUTES` times;
/// - while no primary is known (a failover in progress) the caller waits for one, up
///   to its timeout (`backlog=failfast`: fails at once).
fn send_by_role(
    deployment: &Deployment,
    roles: &Roles,
    frame: &[u8],
    replies: usize,
    deadline: Deadline,
    read: bool,
    refused: &dyn Fn(&Outcome) -> bool,
) -> Result<Outcome> {
    let mut reroutes = 0u32;
    loop {
        if deployment.is_closed() {
            return Err(Error::new(ErrorKind::Closed, "the client is closed"));
        }
        let seen = roles.generation();
        let replica = (read && deployment.options.replica_reads)
            .then(|| roles.replica())
            .flatten();
        let Some(node) = replica.or_else(|| roles.primary()) else {
            if deployment.options.backlog == BacklogPolicy::FailFast {
                return Err(Error::new(
                    ErrorKind::ConnectionClosed,
                    "no primary known (a failover in progress; backlog=failfast)",
                )
                .with_failure(FailureKind::SocketClosed)
                .unsent());
            }
            roles.request_recheck();
            // No server known yet whose maintenance could relax it.
            if !roles.wait_changed(seen, deadline.unrelaxed()) {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    "timed out waiting for a primary (a failover in progress)",
                ));
            }
            continue;
        };
        if Instant::now() >= node.deadline_at(&deadline) {
            return Err(
                Error::new(ErrorKind::Timeout, "timed out waiting for the primary")
                    .with_endpoint(node.endpoint.to_string()),
            );
        }
        let moved = || roles.generation() != seen && !deployment.is_closed();
        // The call's own deadline, not what is left of it: the node relaxes it from
        // the call's start, so re-routes never add a relaxed timeout each.
        let result = node.request_while(frame, replies, deadline, Traffic::Caller, &|| {
            roles.generation() == seen && !deployment.is_closed()
        });
        match result {
            // Never written, and the primary moved: send to the new one.
            Err(e) if moved() && (e.is_unsent() || e.kind() == ErrorKind::Closed) => continue,
            Err(e) if e.is_unsent() => {
                roles.request_recheck();
                return Err(e);
            }
            Err(e) => {
                if e.kind().is_connection_level() {
                    roles.request_recheck();
                }
                return Err(e);
            }
            Ok(outcome) if refused(&outcome) && reroutes < READONLY_REROUTES => {
                reroutes += 1;
                roles.request_recheck();
                // Back-off: 100, 200, 400 ms at most per re-route, within the deadline.
                let pause = Duration::from_millis(100u64 << (reroutes - 1));
                let until = node.deadline_at(&deadline).min(Instant::now() + pause);
                roles.wait_changed(seen, until);
            }
            Ok(outcome) => return Ok(outcome),
        }
    }
}

/// Whether a pipelined request met a replica and nothing in it was executed but
/// reads: some reply is `-READONLY`, and every command that is not a read got an
/// error (so sending it all again writes nothing twice).
fn refused_by_replica(cmds: &[Cmd], outcome: &Outcome) -> bool {
    let Outcome::Many(replies) = outcome else {
        return matches!(outcome, Outcome::One(v) if is_readonly(v)) && cmds.len() == 1;
    };
    replies.iter().any(is_readonly)
        && replies.len() == cmds.len()
        && cmds.iter().zip(replies).all(|(c, r)| {
            c.retry_category() == RetryCategory::ReadOnly || r.error_message().is_some()
        })
}

/// Sends one command to `node` (a blocking one on a leased connection).
pub(crate) fn send_to_node(
    node: &super::node::Node,
    cmd: &Cmd,
    deadline: Deadline,
) -> Result<Value> {
    let result = match cmd.block_time() {
        Some(block) => node.blocking.run(cmd.frame(), deadline, block),
        None => node
            .request(cmd.frame(), 1, deadline, Traffic::Caller)
            .and_then(single),
    };
    result.map_err(|e| e.with_command(cmd.name()))
}

/// Replies as answers (each one a reply: nothing failed for one command alone).
pub(crate) fn answers(replies: Vec<Value>) -> Vec<Result<Value>> {
    replies.into_iter().map(Ok).collect()
}

pub(crate) fn single(outcome: Outcome) -> Result<Value> {
    match outcome {
        Outcome::One(v) => Ok(v),
        Outcome::Failed(e) => Err(e),
        Outcome::Many(_) => Err(Error::new(
            ErrorKind::Protocol,
            "several replies to one command",
        )),
    }
}
