//! Commands and batches that span nodes: multi-key commands split per slot and
//! reassembled in the caller's order, batches pipelined per node and answered in the
//! caller's order, transactions kept whole on one slot.

use std::collections::BTreeMap;

use super::cluster_router::{single_slot, ClusterRouter, MAX_REDIRECTS};
use super::key_slot;
use crate::command::Cmd;
use crate::config::Endpoint;
use crate::connection::{Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// How a multi-key command is split and its replies combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SplitKind {
    /// MGET: an array, in key order.
    Values,
    /// DEL, UNLINK, EXISTS, TOUCH: the sum of the counts.
    Sum,
    /// MSET: `OK` when every part is.
    Pairs,
}

/// Whether a command may be split across slots (by name; every argument a key, or
/// key-value pairs for MSET).
pub(super) fn splittable(cmd: &Cmd) -> Option<SplitKind> {
    let name = cmd.name().to_ascii_uppercase();
    match name.as_str() {
        "MGET" => Some(SplitKind::Values),
        "DEL" | "UNLINK" | "EXISTS" | "TOUCH" => Some(SplitKind::Sum),
        "MSET" => Some(SplitKind::Pairs),
        _ => None,
    }
}

/// Runs a multi-key command whose keys span slots as one command per slot, pipelined
/// per node, and combines the replies as the unsplit command would have answered.
pub(super) fn run(
    router: &ClusterRouter,
    cmd: &Cmd,
    kind: SplitKind,
    deadline: Deadline,
) -> Result<Value> {
    let args = cmd.args();
    let step = if kind == SplitKind::Pairs { 2 } else { 1 };
    if args.is_empty() || args.len() % step != 0 {
        return Err(
            Error::new(ErrorKind::InvalidInput, "wrong number of arguments")
                .with_command(cmd.name()),
        );
    }
    // Slot -> (positions of its keys, the sub-command).
    let mut by_slot: BTreeMap<u16, (Vec<usize>, Cmd)> = BTreeMap::new();
    for (i, chunk) in args.chunks(step).enumerate() {
        let slot = key_slot(chunk[0]);
        let entry = by_slot.entry(slot).or_insert_with(|| {
            (
                Vec::new(),
                Cmd::new(cmd.name().to_string()).flags(category_flags(cmd)),
            )
        });
        entry.0.push(i);
        entry.1.push_key(chunk[0]);
        if step == 2 {
            entry.1.push_arg(chunk[1]);
        }
    }
    let (positions, parts): (Vec<Vec<usize>>, Vec<Cmd>) = by_slot.into_values().unzip();
    let replies = batch(router, &parts, deadline)?;
    match kind {
        SplitKind::Values => {
            let mut out = vec![Value::Nil; args.len()];
            for (pos, reply) in positions.iter().zip(replies) {
                let items = match reply {
                    Value::Array(items) if items.len() == pos.len() => items,
                    other => return Err(part_error(other, cmd)),
                };
                for (&p, item) in pos.iter().zip(items) {
                    out[p] = item;
                }
            }
            Ok(Value::Array(out))
        }
        SplitKind::Sum => {
            let mut total = 0i64;
            for reply in replies {
                match reply {
                    Value::Int(n) => total += n,
                    other => return Err(part_error(other, cmd)),
                }
            }
            Ok(Value::Int(total))
        }
        SplitKind::Pairs => {
            for reply in replies {
                if reply.is_error() {
                    return Err(part_error(reply, cmd));
                }
            }
            Ok(Value::SimpleString("OK".into()))
        }
    }
}

fn category_flags(cmd: &Cmd) -> crate::command::CommandFlags {
    use crate::command::{CommandFlags as F, RetryCategory as C};
    match cmd.retry_category() {
        C::Always => F::RETRY_ALWAYS,
        C::Connection => F::RETRY_CONNECTION,
        C::ReadOnly => F::RETRY_READ_ONLY,
        C::WriteChecked => F::RETRY_WRITE_CHECKED,
        C::WriteLastWins => F::RETRY_WRITE_LAST_WINS,
        C::WriteAccumulating => F::RETRY_WRITE_ACCUMULATING,
        C::ServerAdmin => F::RETRY_SERVER_ADMIN,
        C::Never => F::RETRY_NEVER,
    }
}

fn part_error(reply: Value, cmd: &Cmd) -> Error {
    match reply.error_message() {
        Some(m) => Error::from_server_reply(m),
        None => Error::new(
            ErrorKind::Protocol,
            format!("a part answered {}", reply.type_name()),
        ),
    }
    .with_command(cmd.name())
}

/// A batch: commands grouped per node, each group pipelined in one write, replies put
/// back in the caller's order; a command redirected meanwhile is re-routed alone.
pub(super) fn batch(
    router: &ClusterRouter,
    cmds: &[Cmd],
    deadline: Deadline,
) -> Result<Vec<Value>> {
    let mut replies: Vec<Option<Value>> = vec![None; cmds.len()];
    let mut groups: BTreeMap<String, (Endpoint, Vec<usize>)> = BTreeMap::new();
    for (i, cmd) in cmds.iter().enumerate() {
        match router.first_target(cmd) {
            Ok(endpoint) => {
                groups
                    .entry(endpoint.to_string())
                    .or_insert_with(|| (endpoint, Vec::new()))
                    .1
                    .push(i);
            }
            // A command whose keys span slots answers with its own error, like the
            // server's CROSSSLOT, without failing the rest of the batch.
            Err(e) => replies[i] = Some(Value::Error(format!("CROSSSLOT {}", e.detail()))),
        }
    }
    for (_, (endpoint, indexes)) in groups {
        let node = router.deployment().node_for(&endpoint)?;
        let frame = Cmd::concat(indexes.iter().map(|&i| &cmds[i]));
        // Each node's part runs under the call's own deadline, not what is left of it.
        let values = node
            .request(&frame, indexes.len(), deadline, Traffic::Caller)?
            .into_values()?;
        for (&i, v) in indexes.iter().zip(values) {
            replies[i] = Some(v);
        }
    }
    let mut out = Vec::with_capacity(cmds.len());
    for (i, reply) in replies.into_iter().enumerate() {
        let reply = reply.unwrap_or(Value::Nil);
        let redirected = reply.error_message().is_some_and(|m| {
            m.starts_with("MOVED ") || m.starts_with("ASK ") || m.starts_with("TRYAGAIN")
        });
        if redirected {
            out.push(follow_alone(router, &cmds[i], reply, deadline)?);
        } else {
            out.push(reply);
        }
    }
    Ok(out)
}

/// Finishes one batched command whose reply was a redirect.
fn follow_alone(
    router: &ClusterRouter,
    cmd: &Cmd,
    first: Value,
    deadline: Deadline,
) -> Result<Value> {
    let mut reply = first;
    let mut from = router.first_target(cmd)?;
    for attempt in 0..MAX_REDIRECTS {
        match router.follow(cmd, &reply, &from, attempt, deadline)? {
            None => return Ok(reply),
            Some(target) => {
                from = target.endpoint.clone();
                reply = router.send_to(cmd, &target, deadline)?;
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
/// moved, EXEC aborted and nothing ran, so it is sent once more to the new owner.
pub(super) fn transaction(
    router: &ClusterRouter,
    cmds: &[Cmd],
    deadline: Deadline,
) -> Result<Vec<Value>> {
    let mut slot = None;
    for cmd in cmds {
        if let Some(s) = single_slot(cmd)? {
            match slot {
                None => slot = Some(s),
                Some(first) if first != s => {
                    return Err(Error::new(
                        ErrorKind::CrossSlot,
                        "a transaction (and its WATCH) must keep to keys of one slot",
                    ))
                }
                Some(_) => {}
            }
        }
    }
    let mut endpoint = match slot.and_then(|s| router.state().master_for(s)) {
        Some(e) => e,
        None => router.first_target(&cmds[0])?,
    };
    let frame = Cmd::concat(cmds);
    for _ in 0..2 {
        let node = router.deployment().node_for(&endpoint)?;
        let replies = node
            .request(&frame, cmds.len(), deadline, Traffic::Caller)?
            .into_values()?;
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
                router.state().moved(s, &target);
                endpoint = router.state().canonical(&target);
            }
            None => return Ok(replies),
        }
    }
    Err(Error::new(
        ErrorKind::Moved,
        "the transaction's slot kept moving",
    ))
}
