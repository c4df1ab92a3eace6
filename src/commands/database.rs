//! `Database`: the handle callers use; the same type whether it came from a `Client`
//! or a `Group`, with a router behind it that picks the connection.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use super::batch::{Batch, Transaction};
use super::from_value::FromValue;
use super::Cmd;
use super::{retrying, Commands};
use crate::client::Router;
use crate::connection::CallTimeout;
use crate::error::{Error, ErrorKind, Result};
use crate::metrics;
use crate::policy::RetryPolicy;
use crate::resp::Value;

/// A handle for running commands: `Clone + Send + Sync` and cheap to clone.
///
/// ```no_run
/// use resilient_redis::prelude::*;
/// let client = Client::connect("redis://127.0.0.1:6379")?;
/// let db = client.database();
/// db.set("greeting", "hello")?;
/// let v: Option<String> = db.get("greeting")?;
/// let n: i64 = db.cmd("INCRBY").key("counter").arg(5).query()?;
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone)]
pub struct Database {
    router: Arc<dyn Router>,
    timeout: Option<Duration>,
    retry: Option<Arc<RetryPolicy>>,
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
            retry: None,
        }
    }

    /// A handle that re-issues failed operations by `policy`: transient faults only,
    /// commands whose retry category is safe enough only, following a group's failover
    /// to another member. Batches and transactions from it refuse to run (a partial
    /// replay is not safe); wrapping a retrying handle again is an error.
    ///
    /// ```no_run
    /// use resilient_redis::availability::RetryPolicy;
    /// use resilient_redis::prelude::*;
    /// let db = Client::connect("redis://127.0.0.1:6379")?.database();
    /// let db = db.with_retry(RetryPolicy::default())?;
    /// let v: Option<String> = db.get("k")?; // a LOADING or a dropped connection is retried
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn with_retry(&self, policy: RetryPolicy) -> Result<Database> {
        if self.retry.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "this database already retries; wrap the original instead",
            ));
        }
        Ok(Database {
            router: self.router.clone(),
            timeout: self.timeout,
            retry: Some(Arc::new(policy)),
        })
    }

    /// Whether this handle retries (see [`Database::with_retry`]).
    pub fn is_retrying(&self) -> bool {
        self.retry.is_some()
    }

    /// A handle whose commands use `timeout` instead of the configured `syncTimeout`.
    ///
    /// Each call has its own deadline: a caller whose deadline passes gets
    /// `ErrorKind::Timeout`, and a neighbour's shorter deadline never fails it. A
    /// connection whose oldest call is 0.5 s past its deadline with nothing read takes
    /// no new calls (a replacement is dialled), but stays open until every call still in
    /// flight on it has its reply or is past its own deadline (see `docs/configuration.md`,
    /// "Timeouts: slow is not dead"). Through `with_retry`, a call waits at most
    /// `max_attempts` × `timeout` plus the pauses between attempts.
    pub fn with_timeout(&self, timeout: Duration) -> Database {
        Database {
            router: self.router.clone(),
            timeout: Some(timeout),
            retry: self.retry.clone(),
        }
    }

    /// Starts an arbitrary command: `db.cmd("INCRBY").key("k").arg(5).query::<i64>()`.
    /// Its retry category is `Never` unless stated with `.flags(...)`.
    ///
    /// In a cluster, keys route the command: mark them with `.key()` (it works for
    /// any command, a module's included); a key passed with `.arg()` to a command the
    /// cluster's command table knows is found there too. A command without keys goes
    /// where its request policy says (any master, every master, every node): see
    /// `docs/cluster.md`.
    pub fn cmd(&self, name: &str) -> CmdBuilder<'_> {
        CmdBuilder {
            db: self,
            cmd: Cmd::new(name.to_string()),
        }
    }

    /// Runs a prepared command and converts its reply.
    pub fn query<T: FromValue>(&self, cmd: &Cmd) -> Result<T> {
        let stopwatch = metrics::Stopwatch::start();
        let result = self.query_unmeasured(cmd);
        let error = result.as_ref().err().map(Error::kind);
        metrics::operation_finished(stopwatch, cmd.name_as_stored(), error);
        result
    }

    fn query_unmeasured<T: FromValue>(&self, cmd: &Cmd) -> Result<T> {
        let reply = match &self.retry {
            None => self
                .router
                .send(cmd, CallTimeout::starting_now(self.timeout))?,
            Some(policy) => retrying::send(&*self.router, cmd, self.timeout, policy)?,
        };
        convert(reply, cmd.name())
    }

    /// An optimistic transaction that guards a read-modify-write: `WATCH keys` on a
    /// dedicated connection, then `build` reads through the handle it is given (on the
    /// same connection) and returns the transaction to run, built from that handle.
    /// `Ok(true)` when committed, `Ok(false)` when a watched key changed meanwhile.
    ///
    /// (`Transaction::watch` alone only guards the instant between its WATCH and EXEC,
    /// which travel in one write on the shared connection.)
    ///
    /// ```no_run
    /// use resilient_redis::prelude::*;
    /// let db = Client::connect("redis://127.0.0.1:6379")?.database();
    /// let committed = db.watch("balance", |conn| {
    ///     let balance: i64 = conn.get::<Option<i64>>("balance")?.unwrap_or(0);
    ///     let tx = conn.transaction();
    ///     tx.set("balance", balance + 10);
    ///     Ok(tx)
    /// })?;
    /// # let _ = committed;
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn watch<F>(&self, keys: impl super::ToArgs, mut build: F) -> Result<bool>
    where
        F: FnMut(&Database) -> Result<Transaction>,
    {
        let watch = Cmd::typed("WATCH", super::RetryCategory::Connection).key(keys);
        // On a retrying handle a conflict is retried with fresh reads, since the
        // closure rebuilds the transaction from what it reads each time; replaying a
        // MULTI/EXEC built on stale values would be wrong.
        let attempts = self
            .retry
            .as_ref()
            .map_or(1, |p| p.max_attempts_on_watch_conflict);
        for _ in 0..attempts {
            if self.watch_once(&watch, &mut build)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn watch_once<F>(&self, watch: &Cmd, build: &mut F) -> Result<bool>
    where
        F: FnMut(&Database) -> Result<Transaction>,
    {
        let first_key = watch.keys().next().map(<[u8]>::to_vec);
        let router = self.router.leased(first_key.as_deref(), self.timeout)?;
        let view = Database {
            router: router.clone(),
            timeout: self.timeout,
            retry: None,
        };
        view.query::<()>(watch)?;
        let unwatch = Cmd::typed("UNWATCH", super::RetryCategory::Connection);
        let tx = match build(&view) {
            Ok(tx) => tx,
            Err(e) => {
                // Leave the connection clean for the next lease.
                let _ = view.query::<()>(&unwatch);
                return Err(e);
            }
        };
        if !Arc::ptr_eq(tx.router(), &router) {
            let _ = view.query::<()>(&unwatch);
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "build the transaction from the handle `watch` passes in, not another Database",
            ));
        }
        tx.execute()
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

    /// The retry policy set by [`Database::with_retry`], if any.
    pub(crate) fn retry_policy(&self) -> Option<&RetryPolicy> {
        self.retry.as_deref()
    }

    /// The timeout set by [`Database::with_timeout`], if any.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Runs commands pipelined (a batch) or as one `MULTI`/`EXEC` (`atomic`): an
    /// answer per command (see `Router::send_many`).
    pub(crate) fn send_many(&self, cmds: &[Cmd], atomic: bool) -> Result<Vec<Result<Value>>> {
        const BATCH: Cow<'static, str> = Cow::Borrowed("BATCH");
        const MULTI: Cow<'static, str> = Cow::Borrowed("MULTI");
        let stopwatch = metrics::Stopwatch::start();
        let result = self
            .router
            .send_many(cmds, CallTimeout::starting_now(self.timeout), atomic);
        let error = result.as_ref().err().map(Error::kind);
        metrics::operation_finished(stopwatch, if atomic { &MULTI } else { &BATCH }, error);
        result
    }
}

/// Converts a reply, turning an error reply into a classified error naming the command.
pub(crate) fn convert<T: FromValue>(reply: Value, name: &str) -> Result<T> {
    if let Some(message) = reply.error_message() {
        return Err(Error::from_server_reply(message).with_command(name));
    }
    T::from_value(reply).map_err(|e| e.with_command(name))
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

    /// Appends key argument(s): in a cluster, marked keys route the command (see
    /// [`Database::cmd`]).
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
