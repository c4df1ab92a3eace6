//! `Database`: the handle callers use; the same type whether it came from a `Client`
//! or a `Group`, with a router behind it that picks the connection.

use std::sync::Arc;
use std::time::Duration;

use super::batch::{Batch, Transaction};
use super::cmd::Cmd;
use super::from_value::FromValue;
use super::Commands;
use crate::error::{Error, Result};
use crate::resp::Value;

/// Where a `Database` sends its commands: one deployment, a cluster slot map, or the
/// active member of a group.
pub(crate) trait Router: Send + Sync {
    /// Sends one command and returns its reply (error replies included, unconverted).
    fn send(&self, cmd: &Cmd, timeout: Option<Duration>) -> Result<Value>;

    /// Sends commands pipelined and returns one reply each, in order. `atomic`: a
    /// MULTI/EXEC transaction, which must go whole to one connection.
    fn send_many(
        &self,
        cmds: &[Cmd],
        timeout: Option<Duration>,
        atomic: bool,
    ) -> Result<Vec<Value>>;
}

/// A handle for running commands: `Clone + Send + Sync` and cheap to clone.
///
/// ```no_run
/// use resilient_redis::prelude::*;
/// let client = Client::connect("redis://127.0.0.1:6379")?;
/// let db = client.database();
/// db.set("greeting", "hello")?;
/// let v: Option<String> = db.get("greeting")?;
/// let n: i64 = db.cmd("INCRBY").arg("counter").arg(5).query()?;
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone)]
pub struct Database {
    router: Arc<dyn Router>,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Database {
    pub(crate) fn new(router: Arc<dyn Router>) -> Database {
        Database {
            router,
            timeout: None,
        }
    }

    /// A handle whose commands use `timeout` instead of the configured `syncTimeout`.
    pub fn with_timeout(&self, timeout: Duration) -> Database {
        Database {
            router: self.router.clone(),
            timeout: Some(timeout),
        }
    }

    /// Starts an arbitrary command: `db.cmd("INCRBY").arg("k").arg(5).query::<i64>()`.
    /// Its retry category is `Never` unless stated with `.flags(...)`.
    pub fn cmd(&self, name: &str) -> CmdBuilder<'_> {
        CmdBuilder {
            db: self,
            cmd: Cmd::new(name.to_string()),
        }
    }

    /// Runs a prepared command and converts its reply.
    pub fn query<T: FromValue>(&self, cmd: &Cmd) -> Result<T> {
        let reply = self.router.send(cmd, self.timeout)?;
        convert(reply, cmd)
    }

    /// A pipelined batch: commands are queued, then sent in one write by `execute`.
    pub fn batch(&self) -> Batch {
        Batch::new(self.clone())
    }

    /// A `MULTI`/`EXEC` transaction, with optional `WATCH` conditions.
    pub fn transaction(&self) -> Transaction {
        Transaction::new(self.clone())
    }

    pub(crate) fn router(&self) -> &Arc<dyn Router> {
        &self.router
    }

    pub(crate) fn send_many(&self, cmds: &[Cmd], atomic: bool) -> Result<Vec<Value>> {
        self.router.send_many(cmds, self.timeout, atomic)
    }
}

/// Converts a reply, turning an error reply into a classified error naming the command.
pub(crate) fn convert<T: FromValue>(reply: Value, cmd: &Cmd) -> Result<T> {
    if let Some(message) = reply.error_message() {
        return Err(Error::from_server_reply(message).with_command(cmd.name()));
    }
    T::from_value(reply).map_err(|e| e.with_command(cmd.name()))
}

impl Commands for Database {
    type Out<T: FromValue> = Result<T>;

    fn run<T: FromValue>(&self, cmd: Cmd) -> Result<T> {
        self.query(&cmd)
    }
}

/// A command being built by `Database::cmd`.
#[must_use = "a command does nothing until query() or exec() runs it"]
pub struct CmdBuilder<'a> {
    db: &'a Database,
    cmd: Cmd,
}

impl CmdBuilder<'_> {
    /// Appends argument(s).
    pub fn arg(mut self, arg: impl super::ToArgs) -> Self {
        self.cmd.push_arg(arg);
        self
    }

    /// Appends key argument(s) (used to route in a cluster).
    pub fn key(mut self, key: impl super::ToArgs) -> Self {
        self.cmd.push_key(key);
        self
    }

    /// States the retry category.
    pub fn flags(mut self, flags: super::CommandFlags) -> Self {
        self.cmd = self.cmd.flags(flags);
        self
    }

    /// Marks it blocking for `block` on the server (see [`Cmd::blocking`]).
    pub fn blocking(mut self, block: Duration) -> Self {
        self.cmd = self.cmd.blocking(block);
        self
    }

    /// Runs it and converts the reply.
    pub fn query<T: FromValue>(self) -> Result<T> {
        self.db.query(&self.cmd)
    }

    /// Runs it, ignoring the reply (error replies are still errors).
    pub fn exec(self) -> Result<()> {
        self.db.query::<Value>(&self.cmd).map(|_| ())
    }

    /// The command built so far.
    pub fn into_cmd(self) -> Cmd {
        self.cmd
    }
}
