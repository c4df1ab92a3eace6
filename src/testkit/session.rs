//! One connection's protocol state (RESP version, database, authentication, MULTI
//! queue, WATCHed keys, ASKING) and the path every request takes through it, in the
//! real server's order: count, injected fault, lookup, arity, authentication, cluster
//! redirect, replica refusal, subscribed-mode restriction, MULTI queueing, execution.
//!
//! Owns: turning a request into a reply for this connection. Must never: write to the
//! socket itself (replies go through the connection's outbox, which applies faults).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::conn::ConnHandle;
use super::reply::{self, encode_reply, err, Reply};
use super::server::ServerInner;
use super::store::{Db, Dbs};
use super::table::{self, Lookup, Spec, NO_AUTH, NO_QUEUE, PUBSUB_OK, WRITE};
use super::{cluster, OptIn};

/// What the connection does after a request.
pub(crate) enum Flow {
    Continue,
    /// Close once the reply is written (`QUIT`, a protocol error).
    Close,
    /// Close now, unanswered (`close_after_commands`).
    Drop,
}

/// A watched key: database, key, and the version seen by `WATCH`.
pub(crate) type Watched = (usize, Vec<u8>, (u64, u64));

/// A command queued by MULTI, with its arguments.
pub(crate) type Queued = (&'static Spec, Vec<Vec<u8>>);

/// Per-connection protocol state, owned by the connection's thread.
pub(crate) struct Session {
    pub server: Arc<ServerInner>,
    pub conn: Arc<ConnHandle>,
    pub proto: u8,
    pub db: usize,
    pub authenticated: bool,
    pub user: String,
    pub multi: Option<Vec<Queued>>,
    pub multi_dirty: bool,
    pub watched: Vec<Watched>,
    pub asking: bool,
    /// `close_after_commands` bookkeeping: (setting generation, commands seen).
    pub close_budget: Option<(u64, u64)>,
    /// When the commands of the read being answered arrived: their replies are due a
    /// delay after it, together, as a network delays a segment whole (`None` outside
    /// a read's batch).
    pub read_at: Option<Instant>,
}

/// What a command handler works with: the locked store and the session.
pub(crate) struct Ctx<'a, 'g> {
    pub dbs: &'a mut MutexGuard<'g, Dbs>,
    pub s: &'a mut Session,
    pub now: Instant,
    /// Inside `EXEC`: blocking commands do not block.
    pub in_exec: bool,
    /// Set by list pushes, so `BLPOP` waiters are woken once the command is done.
    pub pushed: bool,
}

impl Ctx<'_, '_> {
    /// The selected database.
    pub(crate) fn db(&mut self) -> &mut Db {
        let i = self.s.db;
        &mut self.dbs.dbs[i]
    }

    /// The protocol of this connection (2 or 3).
    pub(crate) fn proto(&self) -> u8 {
        self.s.proto
    }
}

impl Session {
    pub(crate) fn new(server: Arc<ServerInner>, conn: Arc<ConnHandle>) -> Session {
        let authenticated = !server.config.auth_required();
        Session {
            server,
            conn,
            proto: 2,
            db: 0,
            authenticated,
            user: "default".into(),
            multi: None,
            multi_dirty: false,
            watched: Vec::new(),
            asking: false,
            close_budget: None,
            read_at: None,
        }
    }

    /// Channels, patterns and shard channels subscribed to.
    pub(crate) fn subscriptions(&self) -> usize {
        self.conn.state.lock().subscriptions()
    }

    /// Handles one request and writes its reply.
    pub(crate) fn handle(&mut self, args: Vec<Vec<u8>>) -> Flow {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        self.server.stats.count(&name);
        if self.server.faults.close_now(&mut self.close_budget) {
            return Flow::Drop;
        }
        let reply = self.dispatch(&args, &name);
        if !name.eq_ignore_ascii_case("ASKING") && self.multi.is_none() {
            self.asking = false;
        }
        self.conn.state.lock().last_command = name.to_ascii_lowercase();
        let close = matches!(reply, Reply::Close(_));
        self.emit(&reply);
        if close {
            Flow::Close
        } else {
            Flow::Continue
        }
    }

    /// Encodes a reply for this connection and hands it to the outbox with the
    /// configured delay.
    pub(crate) fn emit(&self, reply: &Reply) {
        let mut buf = Vec::new();
        encode_reply(&mut buf, self.proto, reply);
        let due = self
            .server
            .faults
            .reply_due(self.read_at.unwrap_or_else(Instant::now));
        self.conn.send(&buf, due, self.server.faults.is_hung());
    }

    /// An error reply that also dooms an open MULTI (like the server's flagTransaction).
    fn reject(&mut self, reply: Reply) -> Reply {
        if self.multi.is_some() {
            self.multi_dirty = true;
        }
        reply
    }

    fn dispatch(&mut self, args: &[Vec<u8>], name: &str) -> Reply {
        if let Some(text) = self.server.faults.injected(name) {
            return self.reject(err(text));
        }
        let spec = match table::lookup(args) {
            Lookup::Found(spec) => spec,
            Lookup::Unknown => return self.reject(reply::unknown_command(args)),
            Lookup::MissingSubcommand(c) => return self.reject(reply::wrong_arity(c)),
            Lookup::UnknownSubcommand(c) => {
                return self.reject(reply::unknown_subcommand(c, &args[1]))
            }
        };
        if spec.name == "client|maint_notifications" && self.server.opt_in() == OptIn::Unknown {
            return self.reject(reply::unknown_subcommand("CLIENT", &args[1]));
        }
        if spec.name == "hello" && self.server.config.hello == super::server::HelloMode::Absent {
            return self.reject(reply::unknown_command(args));
        }
        if !spec.arity_ok(args.len()) {
            return self.reject(reply::wrong_arity(spec.name));
        }
        if !self.authenticated && !spec.has(NO_AUTH) {
            return self.reject(err("NOAUTH Authentication required."));
        }
        let server = self.server.clone();
        let mut guard = server.store.data.lock();
        let now = Instant::now();
        if let Some(redirect) = cluster::redirect(self, spec, args, &mut guard, now) {
            return self.reject(redirect);
        }
        if server.config.replica && spec.has(WRITE) {
            return self.reject(err("READONLY You can't write against a read only replica."));
        }
        if self.proto == 2 && !spec.has(PUBSUB_OK) && self.subscriptions() > 0 {
            return err(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.name
            ));
        }
        if let Some(queue) = self.multi.as_mut() {
            if !spec.has(NO_QUEUE) {
                queue.push((spec, args.to_vec()));
                return reply::simple("QUEUED");
            }
        }
        let mut ctx = Ctx {
            dbs: &mut guard,
            s: self,
            now,
            in_exec: false,
            pushed: false,
        };
        let deleted = super::keyspace_events::before(&mut ctx, spec, args);
        let reply = (spec.run)(&mut ctx, args);
        super::keyspace_events::after(&mut ctx, spec, args, &reply, deleted);
        if ctx.pushed {
            server.store.pushed.notify_all();
        }
        reply
    }
}
