//! Commands and batches that span nodes: multi-key commands split per slot and
//! reassembled in the caller's order, batches pipelined per node and answered in the
//! caller's order, transactions kept whole on one slot.
//!
//! A batch's part waiting for a node that lost its slots meanwhile (a dead master whose
//! replica was promoted) comes back unsent when the map changes, and its commands are
//! grouped again by the map as it is then, as single commands are; a transaction goes
//! to its slot's new owner the same way.

use std::collections::BTreeMap;

use super::cluster_router::{ClusterRouter, MAX_REDIRECTS};
use super::command_table::ResponsePolicy;
use super::key_slot;
use super::route::{self, Refusal, Route};
use crate::command::Cmd;
use crate::config::Endpoint;
use crate::connection::{Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// Runs a multi-key command whose keys span slots as one command per slot (`units`:
/// the argument range each key takes with it), pipelined per node, and combines the
/// replies as the unsplit command would have answered (`response`).
pub(super) fn run(
    router: &ClusterRouter,
    cmd: &Cmd,
    units: &[(usize, usize)],
    response: ResponsePolicy,
    deadline: Deadline,
) -> Result<Value> {
    let argv = cmd.argv();
    // Slot -> (positions of its keys, the part).
    let mut by_slot: BTreeMap<u16, (Vec<usize>, Cmd)> = BTreeMap::new();
    for (i, &(start, end)) in units.iter().enumerate() {
        let (Some(key), Some(args)) = (argv.get(start), argv.get(start + 1..end)) else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "wrong number of arguments",
            ));
        };
        let entry = by_slot
            .entry(key_slot(key))
            .or_insert_with(|| (Vec::new(), cmd.empty_like()));
        entry.0.push(i);
        entry.1.push_key(*key);
        for arg in args {
            entry.1.push_arg(*arg);
        }
    }
    let (positions, parts): (Vec<Vec<usize>>, Vec<Cmd>) = by_slot.into_values().unzip();
    let replies = batch(router, &parts, deadline)?
        .into_iter()
        .map(|r| r.and_then(|v| part_value(v, cmd)))
        .collect::<Result<Vec<Value>>>()?;
    match response {
        ResponsePolicy::Default => {
            let mut out = vec![Value::Nil; units.len()];
            for (pos, reply) in positions.iter().zip(replies) {
                let items = match reply {
                    Value::Array(items) if items.len() == pos.len() => items,
                    other => return Err(unexpected(&other, cmd)),
                };
                for (&p, item) in pos.iter().zip(items) {
                    out[p] = item;
                }
            }
            Ok(Value::Array(out))
        }
        ResponsePolicy::AggSum => {
            let mut total = 0i64;
            for reply in replies {
                match reply {
                    Value::Int(n) => total += n,
                    other => return Err(unexpected(&other, cmd)),
                }
            }
            Ok(Value::Int(total))
        }
        // `route` splits nothing else.
        _ => Ok(Value::SimpleString("OK".into())),
    }
}

/// A part's reply, its error reply as an error.
fn part_value(reply: Value, cmd: &Cmd) -> Result<Value> {
    match reply.error_message() {
        Some(m) => Err(Error::from_server_reply(m).with_command(cmd.name())),
        None => Ok(reply),
    }
}

fn unexpected(reply: &Value, cmd: &Cmd) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("a part answered {}", reply.type_name()),
    )
    .with_command(cmd.name())
}

/// A batch: commands grouped per node, each group pipelined in one write, replies put
/// back in the caller's order. A command redirected meanwhile is re-routed alone; one
/// meant for several nodes (keys across slots, every master) runs alone by its route;
/// one refused answers with its own error, without failing the rest.
pub(super) fn batch(
    router: &ClusterRouter,
    cmds: &[Cmd],
    deadline: Deadline,
) -> Result<Vec<Result<Value>>> {
    let table = router.state().command_table();
    let routes: Vec<Route> = cmds.iter().map(|c| route::decide(c, || &*table)).collect();
    let mut replies: Vec<Option<Result<Value>>> = vec![None; cmds.len()];
    let slot_of = |i: usize| match routes[i] {
        Route::Slot(slot) => Some(slot),
        _ => None,
    };
    let mut queue: Vec<usize> = (0..cmds.len())
        .filter(|&i| matches!(routes[i], Route::Slot(_) | Route::AnyMaster))
        .collect();
    for _ in 0..MAX_REDIRECTS {
        if queue.is_empty() {
            break;
        }
        let mut groups: BTreeMap<String, (Endpoint, Vec<usize>)> = BTreeMap::new();
        for i in queue.drain(..) {
            let endpoint = router.first_target(&cmds[i], slot_of(i))?;
            groups
                .entry(endpoint.to_string())
                .or_insert_with(|| (endpoint, Vec::new()))
                .1
                .push(i);
        }
        for (_, (endpoint, indexes)) in groups {
            let node = router.deployment().node_for(&endpoint)?;
            let frame = Cmd::concat(indexes.iter().map(|&i| &cmds[i]));
            let state = router.state();
            let stay = || {
                indexes
                    .iter()
                    .all(|&i| state.still_routes(slot_of(i), &endpoint))
            };
            // Each node's part runs under the call's own deadline, not what is left.
            match node.request_while(&frame, indexes.len(), deadline, Traffic::Caller, &stay) {
                Ok(outcome) => {
                    for (&i, v) in indexes.iter().zip(outcome.into_values()?) {
                        replies[i] = Some(Ok(v));
                    }
                }
                // Never sent, and the map moved some of its slots meanwhile: grouped
                // again by the map as it is now.
                Err(e) if e.is_unsent() && !stay() => {
                    log::debug!("{endpoint}: a batch's part re-routed after the map changed");
                    queue.extend(indexes);
                }
                Err(e) => return Err(e),
            }
        }
    }
    if !queue.is_empty() {
        return Err(Error::new(
            ErrorKind::Moved,
            format!("gave up after {MAX_REDIRECTS} re-routes"),
        ));
    }
    let mut out = Vec::with_capacity(cmds.len());
    for (i, reply) in replies.into_iter().enumerate() {
        let cmd = &cmds[i];
        let answer = match (reply, routes[i].clone()) {
            (Some(Ok(reply)), Route::Slot(_) | Route::AnyMaster) if is_redirect(&reply) => {
                Ok(follow_alone(router, cmd, slot_of(i), reply, deadline)?)
            }
            (Some(answer), _) => answer,
            (None, Route::Refused(refusal)) => Err(refusal.error(cmd.name())),
            (None, route) => router.send_routed(cmd, route, deadline),
        };
        out.push(answer.map_err(|e| e.with_command(cmd.name())));
    }
    Ok(out)
}

/// A reply the router follows for a single command: a redirect, or a pause and a
/// retry (`TRYAGAIN`; `CLUSTERDOWN`, which a cluster with full coverage answers for
/// every slot while one shard has no master).
fn is_redirect(reply: &Value) -> bool {
    reply.error_message().is_some_and(|m| {
        m.starts_with("MOVED ")
            || m.starts_with("ASK ")
            || m.starts_with("TRYAGAIN")
            || m.starts_with("CLUSTERDOWN")
    })
}

/// Finishes one batched command whose reply was a redirect.
fn follow_alone(
    router: &ClusterRouter,
    cmd: &Cmd,
    slot: Option<u16>,
    first: Value,
    deadline: Deadline,
) -> Result<Value> {
    let mut reply = first;
    let mut from = router.first_target(cmd, slot)?;
    for attempt in 0..MAX_REDIRECTS {
        match router.follow(cmd, slot, &reply, &from, attempt, deadline)? {
            None => return Ok(reply),
            Some(target) => {
                from = target.endpoint.clone();
                reply = router.send_to(cmd, slot, &target, deadline)?;
            }
        }
    }
    Err(Error::new(
        ErrorKind::Moved,
        format!("gave up after {MAX_REDIRECTS} redirects"),
    ))
}

/// A transaction: every key in one slot (else a clear error before sending), the
/// whole WATCH/MULTI/.../EXEC sent to that slot's master in one write. When the slot
/// moved, EXEC aborted and nothing ran, so it is sent once more to the new owner; while
/// it waits for a dead owner, a promotion sends it to the new one. A keyless command
/// in it answers for the node the transaction runs on.
pub(super) fn transaction(
    router: &ClusterRouter,
    cmds: &[Cmd],
    deadline: Deadline,
) -> Result<Vec<Value>> {
    let table = router.state().command_table();
    let mut slot = None;
    for cmd in cmds {
        let this = match route::decide(cmd, || &*table) {
            Route::Slot(s) => s,
            Route::Split { .. } | Route::Refused(Refusal::CrossSlot) => return Err(cross_slot()),
            _ => continue,
        };
        match slot {
            None => slot = Some(this),
            Some(first) if first != this => return Err(cross_slot()),
            Some(_) => {}
        }
    }
    let state = router.state();
    let mut endpoint = router.first_target(&cmds[0], slot)?;
    let frame = Cmd::concat(cmds);
    let mut moves = 0;
    while moves < 2 {
        let node = router.deployment().node_for(&endpoint)?;
        let stay = || state.still_routes(slot, &endpoint);
        let replies = match node.request_while(&frame, cmds.len(), deadline, Traffic::Caller, &stay)
        {
            Ok(outcome) => outcome.into_values()?,
            Err(e) if e.is_unsent() && !stay() => {
                endpoint = router.first_target(&cmds[0], slot)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let moved = replies.iter().find_map(|r| {
            let m = r.error_message()?;
            let e = Error::from_server_reply(m);
            (e.kind() == ErrorKind::Moved)
                .then(|| e.redirect().map(|(s, a)| (s, a.to_string())))
                .flatten()
        });
        match moved {
            Some((s, addr)) => {
                let target = crate::config::parse_endpoint(&addr).map_err(|_| {
                    Error::new(ErrorKind::Protocol, "a redirect to an unreadable address")
                })?;
                state.moved(s, &target);
                endpoint = state.canonical(&target);
                moves += 1;
            }
            None => return Ok(replies),
        }
    }
    Err(Error::new(
        ErrorKind::Moved,
        "the transaction's slot kept moving",
    ))
}

fn cross_slot() -> Error {
    Error::new(
        ErrorKind::CrossSlot,
        "a transaction (and its WATCH) must keep to keys of one slot",
    )
}
