//! `Batch` (pipelined, not atomic) and `Transaction` (`MULTI`/`EXEC`, optional `WATCH`).
//!
//! Both queue commands and send them in one contiguous write, so on the shared
//! multiplexed connection no other caller's command can land between `MULTI` and
//! `EXEC`. Each queued command returns a `BatchReply` that yields its reply afterwards.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;

use super::database::{convert, Database};
use super::from_value::FromValue;
use super::Cmd;
use super::Commands;
use super::ToArgs;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

#[derive(Default)]
struct Results {
    /// Each command's answer: its reply, or the error that kept it alone from getting
    /// one (in a cluster: keys across slots, a node of several that failed).
    replies: Option<Vec<Option<Result<Value>>>>,
    names: Vec<std::borrow::Cow<'static, str>>,
    failure: Option<Error>,
}

/// The future reply of one command queued in a batch or transaction.
pub struct BatchReply<T> {
    results: Arc<Mutex<Results>>,
    index: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T: FromValue> BatchReply<T> {
    /// The reply, once the batch has run: converted, or the error that stopped it.
    pub fn wait(self) -> Result<T> {
        let mut r = self.results.lock();
        if let Some(e) = &r.failure {
            return Err(e.clone());
        }
        let name = r.names.get(self.index).cloned().unwrap_or_default();
        let reply = match r.replies.as_mut() {
            None => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    "the batch has not been executed",
                ))
            }
            Some(replies) => replies.get_mut(self.index).and_then(Option::take),
        };
        let Some(reply) = reply else {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "this reply was already taken",
            ));
        };
        drop(r);
        convert(reply?, &name)
    }
}

struct Queue {
    cmds: RefCell<Vec<Cmd>>,
    results: Arc<Mutex<Results>>,
}

impl Queue {
    fn new() -> Queue {
        Queue {
            cmds: RefCell::new(Vec::new()),
            results: Arc::new(Mutex::new(Results::default())),
        }
    }

    fn push<T>(&self, cmd: Cmd) -> BatchReply<T> {
        let mut cmds = self.cmds.borrow_mut();
        cmds.push(cmd);
        BatchReply {
            results: self.results.clone(),
            index: cmds.len() - 1,
            _t: PhantomData,
        }
    }

    fn finish(&self, outcome: Result<Vec<Result<Value>>>) -> Result<()> {
        let names = self.cmds.borrow().iter().map(Cmd::name_cow).collect();
        let mut r = self.results.lock();
        r.names = names;
        match outcome {
            Ok(replies) => {
                r.replies = Some(replies.into_iter().map(Some).collect());
                Ok(())
            }
            Err(e) => {
                r.failure = Some(e.clone());
                Err(e)
            }
        }
    }
}

/// Commands sent together in one write; not atomic (see [`Transaction`] for that).
///
/// ```no_run
/// use resilient_redis::prelude::*;
/// let db = Client::connect("redis://127.0.0.1:6379")?.database();
/// let batch = db.batch();
/// batch.set("k1", "v1");
/// let b = batch.get::<String>("k1");
/// batch.execute()?;
/// assert_eq!(b.wait()?, "v1");
/// # Ok::<(), resilient_redis::Error>(())
/// ```
pub struct Batch {
    db: Database,
    queue: Queue,
}

impl Batch {
    pub(crate) fn new(db: Database) -> Batch {
        Batch {
            db,
            queue: Queue::new(),
        }
    }

    /// Queues an arbitrary command.
    pub fn add<T: FromValue>(&self, cmd: Cmd) -> BatchReply<T> {
        self.queue.push(cmd)
    }

    /// How many commands are queued.
    pub fn len(&self) -> usize {
        self.queue.cmds.borrow().len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends every queued command in one write and waits for all replies. Error
    /// replies of single commands surface through their handles, not here.
    pub fn execute(self) -> Result<()> {
        let cmds = self.queue.cmds.take();
        if cmds.is_empty() {
            return self.queue.finish(Ok(Vec::new()));
        }
        if self.db.is_retrying() {
            let e = Error::new(
                ErrorKind::InvalidInput,
                "a batch cannot run on a retrying database: replaying part of it is not safe",
            );
            *self.queue.cmds.borrow_mut() = cmds;
            return self.queue.finish(Err(e));
        }
        // A blocking command would hold the shared connection, and every caller
        // behind it, for its whole block time (inside MULTI it does not block).
        if let Some(c) = cmds.iter().find(|c| c.block_time().is_some()) {
            let e = Error::new(
                ErrorKind::InvalidInput,
                "a blocking command cannot run in a batch; run it on its own",
            )
            .with_command(c.name());
            *self.queue.cmds.borrow_mut() = cmds;
            return self.queue.finish(Err(e));
        }
        let outcome = self.db.send_many(&cmds, false);
        *self.queue.cmds.borrow_mut() = cmds;
        self.queue.finish(outcome)
    }
}

impl Commands for Batch {
    type Out<T: FromValue> = BatchReply<T>;

    fn run<T: FromValue>(&self, cmd: Cmd) -> BatchReply<T> {
        self.queue.push(cmd)
    }
}

/// A `MULTI`/`EXEC` transaction. `execute` returns `Ok(false)` when a `WATCH`ed key
/// changed and the server aborted it: that is an outcome, not an error.
///
/// ```no_run
/// use resilient_redis::prelude::*;
/// let db = Client::connect("redis://127.0.0.1:6379")?.database();
/// let tx = db.transaction();
/// tx.watch("k1");
/// let c = tx.incr("counter", 1);
/// let committed = tx.execute()?;
/// if committed { let _n: i64 = c.wait()?; }
/// # Ok::<(), resilient_redis::Error>(())
/// ```
pub struct Transaction {
    db: Database,
    watch: RefCell<Vec<Cmd>>,
    queue: Queue,
}

impl Transaction {
    pub(crate) fn new(db: Database) -> Transaction {
        Transaction {
            db,
            watch: RefCell::new(Vec::new()),
            queue: Queue::new(),
        }
    }

    pub(crate) fn router(&self) -> &Arc<dyn crate::client::Router> {
        self.db.router()
    }

    /// Adds keys to `WATCH`: the transaction aborts if any changes before `EXEC`.
    /// Sent in the same write as `MULTI`/`EXEC`, so it only guards that instant; to
    /// guard values read beforehand use [`Database::watch`].
    pub fn watch(&self, keys: impl ToArgs) {
        self.watch
            .borrow_mut()
            .push(Cmd::typed("WATCH", super::RetryCategory::Connection).key(keys));
    }

    /// Queues an arbitrary command.
    pub fn add<T: FromValue>(&self, cmd: Cmd) -> BatchReply<T> {
        self.queue.push(cmd)
    }

    /// Sends `WATCH`, `MULTI`, the commands and `EXEC` in one write. `Ok(true)` when
    /// committed, `Ok(false)` when aborted by a watched key; a command the server
    /// refused to queue fails the whole transaction with `ErrorKind::ExecAbort`.
    pub fn execute(self) -> Result<bool> {
        if self.db.is_retrying() {
            let e = Error::new(
                ErrorKind::InvalidInput,
                "a transaction cannot run on a retrying database; use Database::watch, \
                 which rebuilds it from fresh reads on a conflict",
            );
            return self.queue.finish(Err(e)).map(|_| false);
        }
        let body = self.queue.cmds.take();
        let watches = self.watch.take();
        let lead = watches.len() + 1;
        let mut all = watches;
        all.push(Cmd::typed("MULTI", super::RetryCategory::Connection));
        let n = body.len();
        all.extend(body);
        all.push(Cmd::typed("EXEC", super::RetryCategory::Never));
        let outcome = self.db.send_many(&all, true);
        let body: Vec<Cmd> = all.drain(lead..lead + n).collect();
        *self.queue.cmds.borrow_mut() = body;
        // A transaction runs whole on one connection: no command fails alone.
        let replies = match outcome.and_then(|answers| answers.into_iter().collect()) {
            Ok(replies) => replies,
            Err(e) => return self.queue.finish(Err(e)).map(|_| false),
        };
        let replies: Vec<Value> = replies;
        // Anything before EXEC that failed (WATCH, MULTI, a refused command) is
        // reported by EXEC itself as EXECABORT, except a failed WATCH or MULTI.
        for (i, reply) in replies.iter().take(lead).enumerate() {
            if let Some(m) = reply.error_message() {
                let name = if i + 1 == lead { "MULTI" } else { "WATCH" };
                let e = Error::from_server_reply(m).with_command(name);
                return self.queue.finish(Err(e)).map(|_| false);
            }
        }
        match replies.into_iter().last() {
            Some(Value::Nil) => {
                let e = Error::new(ErrorKind::InvalidInput, "the transaction was aborted");
                self.queue.results.lock().failure = Some(e);
                Ok(false)
            }
            Some(Value::Array(results)) if results.len() == n => self
                .queue
                .finish(Ok(results.into_iter().map(Ok).collect()))
                .map(|_| true),
            Some(reply) => {
                let e = match reply.error_message() {
                    Some(m) => Error::from_server_reply(m).with_command("EXEC"),
                    None => Error::new(
                        ErrorKind::Protocol,
                        format!("EXEC answered {} for {n} commands", reply.type_name()),
                    ),
                };
                self.queue.finish(Err(e)).map(|_| false)
            }
            None => Err(Error::new(ErrorKind::Protocol, "no reply to EXEC")),
        }
    }
}

impl Commands for Transaction {
    type Out<T: FromValue> = BatchReply<T>;

    fn run<T: FromValue>(&self, cmd: Cmd) -> BatchReply<T> {
        self.queue.push(cmd)
    }
}
