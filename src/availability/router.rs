//! The router behind a group's `Database`: every command to the active member.

use std::sync::Arc;
use std::time::Duration;

use super::group::Handle;
use crate::commands::{Cmd, Router};
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

    fn active_router(&self) -> Result<Arc<dyn Router>> {
        let group = &self.handle.0;
        group
            .active()
            .and_then(|m| m.inner.database.get().map(|db| db.router().clone()))
            .ok_or_else(|| {
                Error::new(
                    if group.closed.load(std::sync::atomic::Ordering::Acquire) {
                        ErrorKind::Closed
                    } else {
                        ErrorKind::ConnectionClosed
                    },
                    "no member of the group is available",
                )
            })
    }
}

impl Router for GroupRouter {
    fn send(&self, cmd: &Cmd, timeout: Option<Duration>) -> Result<Value> {
        self.active_router()?.send(cmd, timeout)
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        timeout: Option<Duration>,
        atomic: bool,
    ) -> Result<Vec<Value>> {
        self.active_router()?.send_many(cmds, timeout, atomic)
    }
}
