//! The router behind a group's `Database`: every command to the active member.
//!
//! The group holds the backlog: a command that could not be sent (its member is down,
//! and member clients fail fast) waits for the group to change (another member
//! active, or this one back) and goes to whichever member serves then, within the
//! caller's timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::member::Member;
use super::shared::Handle;
use crate::commands::{Cmd, Router};
use crate::connection::deadline_after;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

pub(crate) struct GroupRouter {
    // Holding the handle keeps the group alive while any `Database` exists.
    handle: Arc<Handle>,
}

impl GroupRouter {
    pub(crate) fn new(handle: Arc<Handle>) -> GroupRouter {
        GroupRouter { handle }
    }

    fn active(&self) -> Option<(Member, Arc<dyn Router>)> {
        let m = self.handle.0.active()?;
        let router = m.inner.database.get()?.router().clone();
        Some((m, router))
    }

    fn unavailable(&self) -> Error {
        let closed = self.handle.0.is_closed();
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
                    self.handle.0.member_causes()
                )
            },
        )
    }

    /// Runs `f` on the active member's router, re-routing a command that could not be
    /// sent to whichever member serves once the group has changed, until the deadline.
    fn route<T>(
        &self,
        timeout: Option<Duration>,
        f: impl Fn(&dyn Router, Option<Duration>) -> Result<T>,
    ) -> Result<T> {
        let group = &self.handle.0;
        let mut deadline = None;
        loop {
            let seen = group.generation();
            let error = match self.active() {
                Some((member, router)) => {
                    let total = timeout.unwrap_or_else(|| {
                        member
                            .client()
                            .map_or(Duration::from_secs(5), |c| c.options().command_timeout)
                    });
                    let deadline =
                        *deadline.get_or_insert_with(|| deadline_after(Instant::now(), total));
                    let left = deadline.saturating_duration_since(Instant::now());
                    match f(&*router, Some(left.max(Duration::from_millis(1)))) {
                        Err(e) if e.is_unsent() => e,
                        other => return other,
                    }
                }
                None => self.unavailable(),
            };
            let deadline = *deadline.get_or_insert_with(|| {
                deadline_after(Instant::now(), timeout.unwrap_or(Duration::from_secs(5)))
            });
            if group.is_closed() || !group.wait_changed(seen, deadline) {
                return Err(error);
            }
        }
    }
}

impl Router for GroupRouter {
    fn send(&self, cmd: &Cmd, timeout: Option<Duration>) -> Result<Value> {
        self.route(timeout, |r, t| r.send(cmd, t))
    }

    fn active_member(&self) -> Option<(u64, String)> {
        self.handle
            .0
            .active()
            .map(|m| (m.id(), m.name().to_string()))
    }

    fn change_generation(&self) -> Option<u64> {
        Some(self.handle.0.generation())
    }

    fn wait_change(&self, seen: u64, timeout: Duration) -> bool {
        self.handle
            .0
            .wait_changed(seen, deadline_after(Instant::now(), timeout))
    }

    fn member_router(&self, id: u64) -> Option<Arc<dyn Router>> {
        let m = self.handle.0.member(id)?;
        Some(m.inner.database.get()?.router().clone())
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        timeout: Option<Duration>,
        atomic: bool,
    ) -> Result<Vec<Value>> {
        self.route(timeout, |r, t| r.send_many(cmds, t, atomic))
    }

    fn leased(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        match self.active() {
            Some((_, router)) => router.leased(key, timeout),
            None => Err(self.unavailable()),
        }
    }
}
