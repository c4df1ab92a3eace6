//! What the client asks a cluster node about the cluster: its topology (`CLUSTER
//! SHARDS`, or `CLUSTER SLOTS` before 7.0) and its command table (`COMMAND`, once).
//! Internal traffic: never counted as caller work, so it never keeps a node from
//! retiring.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::command_table::{self, CommandTable};
use super::topology::{self, Topology};
use super::ClusterState;
use crate::client::Node;
use crate::connection::reply_slot::Outcome;
use crate::connection::{Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::{write_arg, write_command_header, Value};

/// One command to one node, as internal traffic (never caller work: it never makes a
/// node look busy), and its reply.
fn ask_node(node: &Node, args: &[&[u8]], timeout: Duration) -> Result<Value> {
    let mut frame = Vec::new();
    write_command_header(&mut frame, args.len());
    for a in args {
        write_arg(&mut frame, a);
    }
    let conn = node
        .current()
        .ok_or_else(|| Error::new(ErrorKind::ConnectionClosed, "not connected"))?;
    match conn.request(&frame, 1, Deadline::after(timeout), Traffic::Internal) {
        Ok(Outcome::One(v)) => Ok(v),
        Ok(Outcome::Failed(e)) => Err(e),
        Ok(Outcome::Many(_)) => Err(Error::new(ErrorKind::Protocol, "several replies")),
        Err(crate::connection::RequestError::Failed(e))
        | Err(crate::connection::RequestError::Unsent(e)) => Err(e),
    }
}

/// Reads the topology from one node: `CLUSTER SHARDS`, falling back to `CLUSTER SLOTS`
/// on servers before 7.0.
pub(crate) fn query_topology(node: &Node, timeout: Duration, tls: bool) -> Result<Topology> {
    let reply = ask_node(node, &[b"CLUSTER", b"SHARDS"], timeout)?;
    match reply.error_message() {
        None => topology::parse_shards(&reply, &node.endpoint, tls),
        Some(_) => {
            let reply = ask_node(node, &[b"CLUSTER", b"SLOTS"], timeout)?;
            if let Some(m) = reply.error_message() {
                return Err(Error::from_server_reply(m).with_command("CLUSTER SLOTS"));
            }
            topology::parse_slots(&reply, &node.endpoint)
        }
    }
}

/// Reads `node`'s command table (`COMMAND`) when the built-in one is still in use and
/// attempts are left; a server without policy tips (before 7.0) keeps the built-in
/// policies with its own key positions.
pub(super) fn load_command_table(state: &ClusterState, node: &Node, timeout: Duration) {
    if state.command_table().is_from_server()
        || state
            .command_table_attempts
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_err()
    {
        return;
    }
    let reply = match ask_node(node, &[b"COMMAND"], timeout) {
        Ok(reply) => reply,
        Err(e) => {
            log::debug!("{}: COMMAND failed: {e}", node.endpoint);
            return;
        }
    };
    if let Some(m) = reply.error_message() {
        // Refused (an ACL, a proxy): it would be refused again.
        log::info!(
            "{}: COMMAND refused ({m}); routing by the built-in command table",
            node.endpoint
        );
        state.command_table_attempts.store(0, Ordering::Release);
        return;
    }
    match command_table::parse_command_reply(&reply) {
        Ok(table) => {
            let table = if table.has_policies() {
                table
            } else {
                table.with_policies_of(&CommandTable::builtin())
            };
            log::debug!(
                "{}: {} commands in the command table",
                node.endpoint,
                table.len()
            );
            *state.commands.write() = Arc::new(table);
        }
        Err(e) => log::debug!("{}: COMMAND reply unreadable: {e}", node.endpoint),
    }
}
