//! The servers a client knows as a caller sees them (`Client::nodes`: address, role,
//! slots), and the router behind a `Database` bound to one of them
//! (`Client::on_node`, `Client::for_each_master`): every command to that server and
//! nowhere else, for what is asked of one server (`INFO`, `MEMORY STATS`, `CLIENT
//! LIST`, `SCAN` of its own keys).
//!
//! Owns: which node a bound command goes to. Must never: follow a redirect to another
//! node (a `-MOVED` is the caller's answer: they asked for this node).

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use super::router::{answers, send_to_node, LeasedRouter, Router};
use super::walk::{self, KeyspaceWalk};
use super::{ClientGuard, Deployment, Node};
use crate::command::Cmd;
use crate::config::Endpoint;
use crate::connection::reply_slot::Outcome;
use crate::connection::{CallTimeout, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// What a server does in its deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeRole {
    /// Takes writes: a cluster master (with or without slots), the primary of a
    /// primary/replica or Sentinel deployment, a standalone server.
    Master,
    /// Copies a master.
    Replica,
    /// Not known (yet): a node the cluster's topology does not list (a redirect's
    /// target not confirmed), or one whose role has not been read.
    Unknown,
}

/// One server a client knows (see [`Client::nodes`](super::Client::nodes)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeInfo {
    /// Its address.
    pub endpoint: Endpoint,
    /// What it does.
    pub role: NodeRole,
    /// In a cluster, the hash slots it serves (a replica: the ones its master owns),
    /// as inclusive ranges in order; empty elsewhere and for a master without slots.
    pub slots: Vec<RangeInclusive<u16>>,
    /// Whether its interactive connection is up.
    pub connected: bool,
}

/// Every node of `deployment`, in the client's order (the seed first).
pub(crate) fn node_infos(deployment: &Deployment) -> Vec<NodeInfo> {
    let cluster = deployment.cluster().map(|s| s.roles());
    let primary = deployment.active_roles().and_then(|r| r.primary());
    deployment
        .nodes()
        .iter()
        .map(|node| {
            let (role, slots) = match (&cluster, &primary) {
                (Some(roles), _) => match roles.iter().find(|l| l.endpoint == node.endpoint) {
                    Some(listed) => (
                        if listed.is_master {
                            NodeRole::Master
                        } else {
                            NodeRole::Replica
                        },
                        listed.slots.iter().map(|&(a, b)| a..=b).collect(),
                    ),
                    None => (NodeRole::Unknown, Vec::new()),
                },
                (None, Some(p)) if Arc::ptr_eq(p, node) => (NodeRole::Master, Vec::new()),
                (None, Some(_)) => (NodeRole::Replica, Vec::new()),
                (None, None) if deployment.active_roles().is_some() => {
                    (NodeRole::Unknown, Vec::new())
                }
                (None, None) => (NodeRole::Master, Vec::new()),
            };
            NodeInfo {
                endpoint: node.endpoint.clone(),
                role,
                slots,
                connected: node.current().is_some(),
            }
        })
        .collect()
}

/// Every command to one node.
pub(crate) struct NodeRouter {
    guard: Arc<ClientGuard>,
    endpoint: Endpoint,
}

impl NodeRouter {
    /// A router for the node `endpoint` names (an alias of a cluster node included);
    /// an error when the client knows no such node.
    pub(crate) fn new(guard: Arc<ClientGuard>, endpoint: &Endpoint) -> Result<NodeRouter> {
        let deployment = &guard.inner.deployment;
        let endpoint = match deployment.cluster() {
            Some(state) => state.canonical(endpoint),
            None => endpoint.clone(),
        };
        if deployment.find(&endpoint).is_none() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{endpoint} is not a node of this client (see Client::nodes)"),
            ));
        }
        Ok(NodeRouter { guard, endpoint })
    }

    fn node(&self) -> Result<Arc<Node>> {
        self.guard
            .inner
            .deployment
            .find(&self.endpoint)
            .ok_or_else(|| {
                Error::new(ErrorKind::Closed, "the node left the deployment")
                    .with_endpoint(self.endpoint.to_string())
            })
    }

    fn timeout(&self) -> Duration {
        self.guard.inner.deployment.options.command_timeout
    }
}

impl Router for NodeRouter {
    fn send(&self, cmd: &Cmd, call: CallTimeout) -> Result<Value> {
        send_to_node(&*self.node()?, cmd, call.deadline(self.timeout()))
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        call: CallTimeout,
        _atomic: bool,
    ) -> Result<Vec<Result<Value>>> {
        let deadline = call.deadline(self.timeout());
        self.node()?
            .request(&Cmd::concat(cmds), cmds.len(), deadline, Traffic::Caller)
            .and_then(Outcome::into_values)
            .map(answers)
    }

    fn leased(&self, _key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        let timeout = timeout.unwrap_or(self.timeout());
        Ok(Arc::new(LeasedRouter::new(
            self.node()?.blocking.lease_for(timeout)?,
            timeout,
            self.guard.clone(),
        )))
    }

    fn scan_page(
        &self,
        walk: &mut KeyspaceWalk,
        options: &[Vec<u8>],
        call: CallTimeout,
    ) -> Result<Option<Vec<Value>>> {
        let deployment = &self.guard.inner.deployment;
        walk::io::page(
            walk::io::Scope::Node(deployment, &self.endpoint),
            walk,
            options,
            call,
        )
    }
}
