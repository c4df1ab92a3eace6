//! A walk over a deployment's whole keyspace with `SCAN`: every master of a cluster in
//! turn with its own cursor, or the one server of any other deployment. The decision
//! core lives here, free of sockets (tested as a table); `io` sends the pages.
//!
//! The guarantee: every key present for the whole walk is returned at least once
//! (keys may come more than once; a key created or deleted meanwhile may or may not
//! come). It rests on `SCAN`'s own guarantee on one server, which holds only for one
//! run of one server process from cursor 0 to cursor 0, and on marking a slot done
//! only when one such run covered it throughout:
//!
//! - A node's run counts for a slot when the node said, before the run and after it,
//!   that it was a master owning that slot, with no migration of it in progress, the
//!   same config epoch (a node's epoch rises whenever it takes slots over, by
//!   migration or failover: a slot it lost and got back mid-run fails this test), and
//!   the same `run_id` (a restarted server is another process, whose dictionary a
//!   cursor does not describe). Any other slot waits for a later run.
//! - A run that cannot finish (its node died, was demoted, stopped owning the slot the
//!   walk went to it for) is dropped and counts for nothing; the walk goes on from the
//!   slot map as it is then. A replica promoted mid-run is scanned from cursor 0, not
//!   from its old master's cursor: `SCAN` cursors are positions in one process's hash
//!   table, whose hash seed is random per process, so a cursor from another process
//!   would skip keys.
//! - A slot that no run can confirm (its owner keeps changing, a migration never ends)
//!   ends the walk with an error after [`RUNS_PER_SLOT`] runs, never with a silent
//!   subset.

pub(crate) mod io;
mod snapshot;

pub(crate) use snapshot::NodeSnapshot;

use crate::client::cluster::SLOT_COUNT;
use crate::config::Endpoint;
use crate::error::{Error, ErrorKind, Result};

/// Runs of nodes begun while one slot stayed the first not covered, before the walk
/// gives up on it. A failover mid-run costs one; a migration in progress a few.
pub(crate) const RUNS_PER_SLOT: u32 = 6;

/// One run of `SCAN` on one node, cursor 0 to cursor 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeScan {
    pub endpoint: Endpoint,
    pub cursor: u64,
    start: NodeSnapshot,
}

/// Where a walk is: the slots covered, the run in progress.
#[derive(Clone, Debug)]
pub(crate) struct KeyspaceWalk {
    /// One bit per hash slot: covered by a completed run.
    covered: Box<[u64; SLOT_COUNT as usize / 64]>,
    current: Option<NodeScan>,
    finished: bool,
    /// The first uncovered slot and how many runs began while it was.
    stalled: Option<(u16, u32)>,
    /// The group member walked (its keyspace is its own copy).
    member: Option<u64>,
}

impl Default for KeyspaceWalk {
    fn default() -> KeyspaceWalk {
        KeyspaceWalk::new()
    }
}

impl KeyspaceWalk {
    pub(crate) fn new() -> KeyspaceWalk {
        KeyspaceWalk {
            covered: Box::new([0; SLOT_COUNT as usize / 64]),
            current: None,
            finished: false,
            stalled: None,
            member: None,
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// The run in progress.
    pub(crate) fn current(&self) -> Option<&NodeScan> {
        self.current.as_ref()
    }

    fn cover(&mut self, slot: u16) {
        self.covered[slot as usize / 64] |= 1 << (slot % 64);
    }

    /// The first slot no run has covered yet (`None`: the walk is complete).
    pub(crate) fn next_uncovered(&self) -> Option<u16> {
        let (word, bits) = self
            .covered
            .iter()
            .enumerate()
            .find(|(_, w)| **w != u64::MAX)?;
        Some(word as u16 * 64 + bits.trailing_ones() as u16)
    }

    /// Ends the walk (every slot covered, or the one server's run complete).
    pub(crate) fn finish(&mut self) {
        self.finished = true;
        self.current = None;
    }

    /// Starts a run on `endpoint`, which said `start` before it. An error when the
    /// slot the walk is at has had [`RUNS_PER_SLOT`] runs already.
    pub(crate) fn begin(&mut self, endpoint: Endpoint, start: NodeSnapshot) -> Result<()> {
        let at = self.next_uncovered().unwrap_or(0);
        let runs = match self.stalled {
            Some((slot, n)) if slot == at => n + 1,
            _ => 1,
        };
        if runs > RUNS_PER_SLOT {
            return Err(Error::new(
                ErrorKind::TryAgain,
                format!(
                    "the keyspace walk could not cover slot {at} in {RUNS_PER_SLOT} runs: its \
                     owner kept changing or its migration did not end; keys of that slot may \
                     be missing, so the walk stops here"
                ),
            ));
        }
        self.stalled = Some((at, runs));
        self.current = Some(NodeScan {
            endpoint,
            cursor: 0,
            start,
        });
        Ok(())
    }

    /// A page of the run came back with `next` as its cursor; whether the run is
    /// complete (the node's snapshot is then taken and given to `complete`).
    pub(crate) fn page(&mut self, next: u64) -> bool {
        match &mut self.current {
            Some(scan) => {
                scan.cursor = next;
                next == 0
            }
            None => false,
        }
    }

    /// Drops the run in progress: it counts for nothing.
    pub(crate) fn abandon(&mut self) {
        self.current = None;
    }

    /// The run in progress completed and its node said `end` after it: in a cluster
    /// (`cluster`), the slots it covered throughout are marked (see the module doc);
    /// elsewhere the walk is complete when the server is the same process.
    pub(crate) fn complete(&mut self, end: &NodeSnapshot, cluster: bool) {
        let Some(scan) = self.current.take() else {
            return;
        };
        let start = &scan.start;
        if !cluster {
            if start.run_id == end.run_id {
                self.finish();
            }
            return;
        }
        let same = start.is_master
            && end.is_master
            && start.epoch == end.epoch
            && start.run_id == end.run_id;
        if !same {
            return;
        }
        for slot in 0..SLOT_COUNT {
            if start.owns(slot) && end.owns(slot) && !start.moving(slot) && !end.moving(slot) {
                self.cover(slot);
            }
        }
        if self.next_uncovered().is_none() {
            self.finish();
        }
    }

    /// In a group: the walk belongs to member `id`; a walk begun on another member
    /// starts over (another member's keyspace is another copy).
    pub(crate) fn on_member(&mut self, id: u64) {
        if self.member.is_some_and(|m| m != id) {
            *self = KeyspaceWalk::new();
        }
        self.member = Some(id);
    }
}

#[cfg(test)]
mod tests;
