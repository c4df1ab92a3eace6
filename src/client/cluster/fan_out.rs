//! Sending a command to every master (`DBSIZE`, `KEYS`, `FLUSHDB`) or every node
//! (`SCRIPT LOAD`, `CONFIG SET`) and combining the replies (`aggregate`).
//!
//! The targets are the masters (and replicas) the slot map lists when the command is
//! sent. A node that stops being one while the command waits for its connection (a
//! dead master whose replica was promoted) gets nothing, and whoever took its place
//! gets the command instead; a node that answered keeps its answer. Each node is
//! given the call's own deadline. Nodes are asked one after the other: a call to
//! every master costs a round trip per master.

use super::aggregate::{self, Answer};
use super::cluster_router::{ClusterRouter, MAX_REDIRECTS};
use super::command_table::ResponsePolicy;
use super::ClusterState;
use crate::command::Cmd;
use crate::config::Endpoint;
use crate::connection::reply_slot::Outcome;
use crate::connection::{Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// Which nodes a fan-out goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    Masters,
    /// Masters, replicas, and members not routed to (a replica the cluster still
    /// lists as loading, a node of a shard mid-failover): every node a setting or a
    /// script must reach before it may serve.
    AllNodes,
}

impl Reach {
    pub(super) fn of(replicas: bool) -> Reach {
        if replicas {
            Reach::AllNodes
        } else {
            Reach::Masters
        }
    }

    /// The nodes it covers by the map as it is now.
    pub(super) fn targets(self, state: &ClusterState) -> Vec<Endpoint> {
        let mut out = state.masters();
        if self == Reach::AllNodes {
            out.extend(state.replicas());
            for e in state.unrouted() {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        out
    }

    fn covers(self, state: &ClusterState, endpoint: &Endpoint) -> bool {
        state.is_master(endpoint)
            || (self == Reach::AllNodes
                && (state.is_replica(endpoint) || state.unrouted().contains(endpoint)))
    }
}

/// Runs `cmd` on every node `reach` covers and combines the replies by `response`.
pub(super) fn run(
    router: &ClusterRouter,
    cmd: &Cmd,
    reach: Reach,
    response: ResponsePolicy,
    deadline: Deadline,
) -> Result<Value> {
    let state = router.state();
    let mut answers: Vec<Answer> = Vec::new();
    for _ in 0..MAX_REDIRECTS {
        let mut targets = reach.targets(state);
        if targets.is_empty() {
            // No map yet: the seed is the one node known.
            targets.extend(router.deployment().primary().map(|n| n.endpoint.clone()));
        }
        let pending: Vec<Endpoint> = targets
            .into_iter()
            .filter(|t| !answers.iter().any(|(e, _)| e == t))
            .collect();
        if pending.is_empty() {
            break;
        }
        let mut left = false;
        for endpoint in pending {
            let still = || reach.covers(state, &endpoint) || state.masters().is_empty();
            match ask(router, cmd, &endpoint, deadline, &still) {
                // It stopped being a target while the command waited for it: whoever
                // took its place is asked in the next round.
                Err(e) if e.is_unsent() && !still() => left = true,
                answer => answers.push((endpoint, answer)),
            }
        }
        if !left {
            break;
        }
    }
    if answers.is_empty() {
        return Err(Error::new(ErrorKind::ClusterDown, "no node is known").with_command(cmd.name()));
    }
    aggregate::combine(response, cmd.name(), answers)
}

/// One node's reply to `cmd`, waiting in its backlog while `still` holds.
fn ask(
    router: &ClusterRouter,
    cmd: &Cmd,
    endpoint: &Endpoint,
    deadline: Deadline,
    still: &dyn Fn() -> bool,
) -> Result<Value> {
    let node = router.deployment().node_for(endpoint)?;
    match node.request_while(cmd.frame(), 1, deadline, Traffic::Caller, still)? {
        Outcome::One(v) => Ok(v),
        Outcome::Failed(e) => Err(e),
        Outcome::Many(_) => Err(Error::new(ErrorKind::Protocol, "several replies")),
    }
    .map_err(|e| e.with_endpoint(endpoint.to_string()))
}
