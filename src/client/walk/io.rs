//! Sending a walk's pages: picking the node for the first slot no run has covered,
//! taking its snapshot, `SCAN` page by page, the snapshot again at the end (see the
//! module above for what the snapshots decide).
//!
//! Runs on the caller's thread, one page per call, each call bounded by the caller's
//! timeout: a run that cannot go on (its node died, lost its slots, was demoted) is
//! dropped and the walk goes on by the slot map as it is then, within that call's
//! time. A page never waits for a node that the map no longer names.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{KeyspaceWalk, NodeSnapshot};
use crate::client::cluster::ClusterState;
use crate::client::{Deployment, Node};
use crate::config::Endpoint;
use crate::connection::reply_slot::Outcome;
use crate::connection::{CallTimeout, Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::{write_arg, write_command_header, Value};

/// Pause before looking again at a slot map that does not name the node the walk
/// needs yet (a failover being read, an uncovered slot).
const MAP_PAUSE: Duration = Duration::from_millis(20);

/// Where a walk goes: a deployment (every master of a cluster, or its one server), or
/// one node of it (`Client::on_node`).
pub(crate) enum Scope<'a> {
    Deployment(&'a Deployment),
    Node(&'a Deployment, &'a Endpoint),
}

/// The next page of keys; `None` once the walk is complete. `options` follow the
/// cursor (`MATCH p`, `COUNT n`, `TYPE t`).
pub(crate) fn page(
    scope: Scope<'_>,
    walk: &mut KeyspaceWalk,
    options: &[Vec<u8>],
    call: CallTimeout,
) -> Result<Option<Vec<Value>>> {
    let deployment = match scope {
        Scope::Deployment(d) | Scope::Node(d, _) => d,
    };
    let deadline = call.deadline(deployment.options.command_timeout);
    let cluster = match scope {
        Scope::Deployment(d) => d.cluster(),
        Scope::Node(..) => None,
    };
    let mut last_error = None;
    // Each turn makes progress or pauses (`MAP_PAUSE`); the caller's deadline ends it.
    loop {
        if walk.is_finished() {
            return Ok(None);
        }
        if Instant::now() >= deadline.unrelaxed() {
            break;
        }
        let step = match walk.current().cloned() {
            None => start_run(scope_node(&scope), cluster.as_deref(), walk, deadline),
            Some(scan) => next_page(
                deployment,
                cluster.as_deref(),
                walk,
                &scan.endpoint,
                scan.cursor,
                options,
                deadline,
            ),
        };
        match step {
            Ok(Some(keys)) => return Ok(Some(keys)),
            Ok(None) => {}
            // A fault that another run may not meet: the run is dropped, the map
            // re-read, and the walk goes on (within this call's time).
            Err(e) if transient(&e) && cluster.is_some() => {
                log::debug!("keyspace walk: a run dropped: {e}");
                walk.abandon();
                if let Some(state) = &cluster {
                    state.request_refresh();
                }
                std::thread::sleep(MAP_PAUSE);
                last_error = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        Error::new(
            ErrorKind::Timeout,
            "the keyspace walk found no node to go on with within the timeout",
        )
    }))
}

fn transient(e: &Error) -> bool {
    e.is_transient() || e.is_unsent()
}

/// The deployment and the fixed node, if the walk is bound to one.
fn scope_node<'a>(scope: &Scope<'a>) -> (&'a Deployment, Option<&'a Endpoint>) {
    match *scope {
        Scope::Deployment(d) => (d, None),
        Scope::Node(d, e) => (d, Some(e)),
    }
}

/// Begins a run on the node the walk needs next: the master of the first uncovered
/// slot (a cluster), the one node (`on_node`), or the primary. `Ok(None)` either way.
fn start_run(
    (deployment, fixed): (&Deployment, Option<&Endpoint>),
    cluster: Option<&ClusterState>,
    walk: &mut KeyspaceWalk,
    deadline: Deadline,
) -> Result<Option<Vec<Value>>> {
    let Some(state) = cluster else {
        let node = match fixed {
            Some(e) => deployment.find(e),
            None => deployment.primary(),
        }
        .ok_or_else(|| Error::new(ErrorKind::Closed, "the node is no longer known"))?;
        let snapshot = snapshot(&node, false, deadline, &|| true)?;
        walk.begin(node.endpoint.clone(), snapshot)?;
        return Ok(None);
    };
    let Some(slot) = walk.next_uncovered() else {
        walk.finish();
        return Ok(None);
    };
    let Some(owner) = state.master_for(slot) else {
        // An uncovered slot: the map is re-read until a node serves it.
        state.request_refresh();
        std::thread::sleep(MAP_PAUSE);
        return Err(Error::new(
            ErrorKind::ClusterDown,
            format!("no node serves slot {slot}: the keyspace walk cannot cover it"),
        ));
    };
    let node = deployment.node_for(&owner)?;
    let still = || state.master_for(slot).as_ref() == Some(&owner);
    let start = snapshot(&node, true, deadline, &still)?;
    if !start.is_master || !start.owns(slot) {
        // The map is behind the cluster (a failover or a migration not read yet).
        state.request_refresh();
        std::thread::sleep(MAP_PAUSE);
        return Ok(None);
    }
    walk.begin(owner, start)?;
    Ok(None)
}

/// One page of the run on `endpoint`; at its end, the node's snapshot completes it.
fn next_page(
    deployment: &Deployment,
    cluster: Option<&ClusterState>,
    walk: &mut KeyspaceWalk,
    endpoint: &Endpoint,
    cursor: u64,
    options: &[Vec<u8>],
    deadline: Deadline,
) -> Result<Option<Vec<Value>>> {
    let still = || cluster.is_none_or(|s| s.is_master(endpoint));
    if !still() {
        // Demoted or gone by the map: this run cannot complete.
        walk.abandon();
        return Ok(None);
    }
    let node = deployment
        .find(endpoint)
        .ok_or_else(|| Error::new(ErrorKind::Closed, "the node is no longer known").unsent())?;
    if cluster.is_none()
        && deployment
            .primary()
            .is_some_and(|p| !Arc::ptr_eq(&p, &node))
    {
        // The primary moved (Sentinel): another server, another keyspace run.
        walk.abandon();
        return Ok(None);
    }
    let mut args: Vec<&[u8]> = vec![b"SCAN"];
    let cursor_text = cursor.to_string();
    args.push(cursor_text.as_bytes());
    args.extend(options.iter().map(Vec::as_slice));
    let reply = match request(&node, &[args], deadline, &still)?.pop() {
        Some(reply) => reply,
        None => return Err(Error::new(ErrorKind::Protocol, "no reply to SCAN")),
    };
    if let Some(m) = reply.error_message() {
        return Err(Error::from_server_reply(m).with_command("SCAN"));
    }
    let (next, keys) = scan_reply(reply)?;
    if walk.page(next) {
        let end = snapshot(&node, cluster.is_some(), deadline, &still)?;
        walk.complete(&end, cluster.is_some());
    }
    Ok(Some(keys))
}

/// `[cursor, [key, ...]]`
fn scan_reply(reply: Value) -> Result<(u64, Vec<Value>)> {
    let bad = || {
        Error::new(
            ErrorKind::Protocol,
            "SCAN answered something else than [cursor, keys]",
        )
    };
    let Value::Array(mut parts) = reply else {
        return Err(bad());
    };
    if parts.len() != 2 {
        return Err(bad());
    }
    let keys = match parts.pop() {
        Some(Value::Array(keys)) | Some(Value::Set(keys)) => keys,
        _ => return Err(bad()),
    };
    let cursor = parts
        .pop()
        .as_ref()
        .and_then(Value::as_bytes)
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    Ok((cursor, keys))
}

/// What `node` says of itself now (`CLUSTER NODES` and `INFO server` in one write).
fn snapshot(
    node: &Node,
    cluster: bool,
    deadline: Deadline,
    still: &dyn Fn() -> bool,
) -> Result<NodeSnapshot> {
    let info: &[&[u8]] = &[b"INFO", b"server"];
    let nodes: &[&[u8]] = &[b"CLUSTER", b"NODES"];
    let commands: Vec<Vec<&[u8]>> = if cluster {
        vec![nodes.to_vec(), info.to_vec()]
    } else {
        vec![info.to_vec()]
    };
    let replies = request(node, &commands, deadline, still)?;
    let texts = replies
        .iter()
        .map(|r| match r.error_message() {
            Some(m) => Err(Error::from_server_reply(m).with_endpoint(node.endpoint.to_string())),
            None => r
                .as_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .ok_or_else(|| Error::new(ErrorKind::Protocol, "a snapshot reply is not text")),
        })
        .collect::<Result<Vec<String>>>()?;
    match texts.as_slice() {
        [nodes, info] => NodeSnapshot::of_cluster_node(nodes, info),
        [info] => NodeSnapshot::of_server(info),
        _ => Err(Error::new(
            ErrorKind::Protocol,
            "a snapshot got the wrong number of replies",
        )),
    }
}

/// Sends `commands` pipelined to `node` as caller work, waiting in its backlog while
/// `still` holds; their replies.
fn request(
    node: &Node,
    commands: &[Vec<&[u8]>],
    deadline: Deadline,
    still: &dyn Fn() -> bool,
) -> Result<Vec<Value>> {
    let mut frame = Vec::new();
    for args in commands {
        write_command_header(&mut frame, args.len());
        for a in args {
            write_arg(&mut frame, a);
        }
    }
    node.request_while(&frame, commands.len(), deadline, Traffic::Caller, still)
        .and_then(Outcome::into_values)
        .map_err(|e| e.with_endpoint(node.endpoint.to_string()))
}
