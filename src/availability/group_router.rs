//! The router behind a group's `Database`: every command to the active member.
//!
//! The group holds the backlog: a command that could not be sent (its member is down,
//! and member clients fail fast) waits for the group to change (another member
//! active, or this one back) and goes to whichever member serves then, within the
//! caller's timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::member::GroupMember;
use super::shared::GroupGuard;
use crate::client::Router;
use crate::clock::deadline_after;
use crate::command::Cmd;
use crate::connection::CallTimeout;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

pub(crate) struct GroupRouter {
    // Holding the guard keeps the group alive while any `Database` exists.
    guard: Arc<GroupGuard>,
}

impl GroupRouter {
    pub(crate) fn new(guard: Arc<GroupGuard>) -> GroupRouter {
        GroupRouter { guard }
    }

    fn active(&self) -> Option<(GroupMember, Arc<dyn Router>)> {
        let m = self.guard.0.active()?;
        let router = m.inner.database.get()?.router().clone();
        Some((m, router))
    }

    fn unavailable(&self) -> Error {
        let closed = self.guard.0.is_closed();
        Error::new(
            if closed {
                ErrorKind::Closed
            } else {
                ErrorKind::Unavailable
            },
            if closed {
                "the group is closed".to_string()
            } else {
                format!(
                    "no member of the group is available ({})",
                    self.guard.0.member_causes()
                )
            },
        )
    }

    /// Runs `f` on the active member's router, re-routing a command that could not be
    /// sent to whichever member serves once the group has changed, until the deadline.
    /// Every member is given the call's own start and timeout, never what is left of
    /// it: a member relaxes the call from its start while maintenance is announced
    /// there, and relaxing a remainder again would add the group's wait to it.
    fn route<T>(
        &self,
        call: CallTimeout,
        f: impl Fn(&dyn Router, CallTimeout) -> Result<T>,
    ) -> Result<T> {
        let group = &self.guard.0;
        // Fixed by the first member that serves (its command timeout when the caller
        // set none), then kept whichever member serves next.
        let mut timeout = call.timeout;
        loop {
            let seen = group.generation();
            let error = match self.active() {
                Some((member, router)) => {
                    let total = *timeout.get_or_insert_with(|| {
                        member
                            .client()
                            .map_or(Duration::from_secs(5), |c| c.options().command_timeout)
                    });
                    let call = CallTimeout {
                        timeout: Some(total),
                        ..call
                    };
                    match f(&*router, call) {
                        Err(e) if e.is_unsent() => e,
                        other => return other,
                    }
                }
                None => self.unavailable(),
            };
            // The group's own wait is unrelaxed: which member's maintenance would count?
            let deadline = deadline_after(call.started, timeout.unwrap_or(Duration::from_secs(5)));
            if group.is_closed() || !group.wait_changed(seen, deadline) {
                return Err(error);
            }
        }
    }
}

impl Router for GroupRouter {
    fn send(&self, cmd: &Cmd, call: CallTimeout) -> Result<Value> {
        self.route(call, |r, c| r.send(cmd, c))
    }

    fn active_member(&self) -> Option<(u64, String)> {
        self.guard
            .0
            .active()
            .map(|m| (m.id(), m.name().to_string()))
    }

    fn change_generation(&self) -> Option<u64> {
        Some(self.guard.0.generation())
    }

    fn wait_change(&self, seen: u64, timeout: Duration) -> bool {
        self.guard
            .0
            .wait_changed(seen, deadline_after(Instant::now(), timeout))
    }

    fn member_router(&self, id: u64) -> Option<Arc<dyn Router>> {
        let m = self.guard.0.member(id)?;
        Some(m.inner.database.get()?.router().clone())
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        call: CallTimeout,
        atomic: bool,
    ) -> Result<Vec<Result<Value>>> {
        self.route(call, |r, c| r.send_many(cmds, c, atomic))
    }

    fn scan_page(
        &self,
        walk: &mut crate::client::walk::KeyspaceWalk,
        options: &[Vec<u8>],
        call: CallTimeout,
    ) -> Result<Option<Vec<Value>>> {
        // A walk covers one member's keyspace: begun on another, it starts over.
        let (member, router) = self.active().ok_or_else(|| self.unavailable())?;
        walk.on_member(member.id());
        router.scan_page(walk, options, call)
    }

    fn leased(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        match self.active() {
            Some((_, router)) => router.leased(key, timeout),
            None => Err(self.unavailable()),
        }
    }
}
