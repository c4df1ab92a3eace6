//! The router behind a standalone client's `Database`: every command to the one
//! server, blocking commands to a leased connection.

use std::sync::Arc;
use std::time::Duration;

use super::ClientHandle;
use crate::commands::{Cmd, Router};
use crate::connection::slot::Outcome;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

pub(crate) struct Standalone {
    // Holding the handle keeps the client alive while any `Database` exists.
    handle: Arc<ClientHandle>,
}

impl Standalone {
    pub(crate) fn new(handle: Arc<ClientHandle>) -> Standalone {
        Standalone { handle }
    }
}

impl Router for Standalone {
    fn send(&self, cmd: &Cmd, timeout: Option<Duration>) -> Result<Value> {
        let inner = &self.handle.inner;
        let timeout = timeout.unwrap_or(inner.options.command_timeout);
        let node = &inner.node;
        let result = match cmd.block_time() {
            Some(block) => node.blocking.run(cmd.frame(), timeout, block),
            None => node.request(cmd.frame(), 1, timeout, true).and_then(single),
        };
        result.map_err(|e| e.with_command(cmd.name()))
    }

    fn send_many(&self, cmds: &[Cmd], timeout: Option<Duration>) -> Result<Vec<Value>> {
        let inner = &self.handle.inner;
        let timeout = timeout.unwrap_or(inner.options.command_timeout);
        let mut frame = Vec::with_capacity(cmds.iter().map(|c| c.frame().len()).sum());
        for c in cmds {
            frame.extend_from_slice(c.frame());
        }
        let name = cmds.first().map_or("", |c| c.name());
        match inner.node.request(&frame, cmds.len(), timeout, true) {
            Ok(Outcome::Many(v)) => Ok(v),
            Ok(Outcome::One(v)) => Ok(vec![v]),
            Ok(Outcome::Failed(e)) | Err(e) => Err(e.with_command(name)),
        }
    }
}

impl crate::pubsub::PubSubLinks for Standalone {
    fn send(&self, key: &crate::pubsub::Key, subscribe: bool) -> Result<()> {
        self.handle.inner.node.send_subscription(key, subscribe)
    }
}

fn single(outcome: Outcome) -> Result<Value> {
    match outcome {
        Outcome::One(v) => Ok(v),
        Outcome::Failed(e) => Err(e),
        Outcome::Many(_) => Err(Error::new(
            ErrorKind::Protocol,
            "several replies to one command",
        )),
    }
}
