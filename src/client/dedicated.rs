//! Dedicated connections of a node, leased one call (or one lease) at a time. Two pools
//! per node use it:
//!
//! - **blocking**: for blocking commands (BLPOP, XREAD BLOCK, WAIT ...) and optimistic
//!   transactions, so a command that blocks on the server never stalls the shared
//!   multiplexed connection. Opened on the caller's thread, inside its call.
//! - **lanes**: for a caller that finds the shared connection busy, so that with a
//!   handful of threads each is often alone on a connection and reads its own reply
//!   (see `docs/performance.md`). Never opened on a caller's thread: a caller takes an
//!   idle lane or uses the shared connection, and asks for one to be opened meanwhile.
//!
//! Both are covered the same way: a handoff ([`DedicatedPool::recycle`]), new
//! credentials ([`DedicatedPool::retire_credentials_before`]), a server found hung and
//! the node's close reach every connection they hold.
//!
//! For blocking commands, the client-side timeout is the caller's timeout plus the
//! block time asked of the server. A blocking call that times out on our side closes
//! its connection: left open, the server could still pop an element for a caller who
//! is gone, and the element would be lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::clock::deadline_after;
use crate::connection::reply_slot::Outcome;
use crate::connection::{Connection, ConnectionConfig, Deadline, RequestError, Traffic};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::resp::Value;

struct PoolState {
    idle: Vec<Arc<Connection>>,
    /// Connections in use, kept so `close` can end a call blocked forever, each with
    /// the pool generation it was opened in.
    in_use: Vec<(Arc<Connection>, u64)>,
    /// Leased plus being opened.
    leased: usize,
    /// Bumped by a maintenance handoff: a connection of an older generation still
    /// points at the address being retired, so it is closed when given back instead
    /// of being leased again.
    generation: u64,
    /// Connections authenticated with an older credentials generation are closed
    /// rather than leased again (see [`DedicatedPool::retire_credentials_before`]).
    min_auth: u64,
    /// A lane is being opened in the background (one at a time).
    opening: bool,
    /// No lane is opened before this (the last attempt failed).
    retry_at: Option<Instant>,
}

pub(crate) struct DedicatedPool {
    config: ConnectionConfig,
    /// Connections the pool holds at most (idle, leased and being opened).
    bound: usize,
    state: Mutex<PoolState>,
    /// Whether `try_lease` may find something under the lock (an idle connection, or
    /// room to open one): with many callers on a busy node, most find neither, and
    /// asking without the lock keeps them from queueing on it.
    worth_asking: AtomicBool,
    released: Condvar,
    closed: AtomicBool,
}

/// How long a lane that failed to open is not tried again: the shared connection
/// serves meanwhile, and a refused or slow server is not dialled once per call.
const LANE_RETRY_AFTER: Duration = Duration::from_secs(1);

impl DedicatedPool {
    /// The pool for blocking commands and optimistic transactions.
    pub(crate) fn blocking(mut config: ConnectionConfig) -> DedicatedPool {
        let bound = config.options.blocking_pool_size.max(1);
        // A command blocked on the server for seconds is not a caller the others
        // should make way for (no polling, no lane while it waits): its own count.
        config.company = Default::default();
        DedicatedPool::new(config, "-blocking", bound)
    }

    /// The node's lanes: `options.lanes` connections beside the shared one.
    pub(crate) fn lanes(config: ConnectionConfig) -> DedicatedPool {
        let bound = config.options.lanes;
        DedicatedPool::new(config, "-lane", bound)
    }

    fn new(mut config: ConnectionConfig, role: &'static str, bound: usize) -> DedicatedPool {
        config.role = role;
        // Push frames on a leased connection have no subscriber to go to (the shared
        // connection hears the same maintenance notifications and acts for the node).
        config.on_push = None;
        config.on_failure = None;
        // A lane's calls are fed to the shared connection's breaker by the node.
        config.breaker = None;
        DedicatedPool {
            config,
            bound,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                in_use: Vec::new(),
                leased: 0,
                generation: 0,
                min_auth: 0,
                opening: false,
                retry_at: None,
            }),
            worth_asking: AtomicBool::new(bound > 0),
            released: Condvar::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// Records, under the lock, whether the next `try_lease` may find something.
    fn publish(&self, st: &PoolState) {
        let held = st.leased + st.idle.len() + usize::from(st.opening);
        let worth = !st.idle.is_empty() || (held < self.bound && !st.opening);
        self.worth_asking.store(worth, Ordering::Relaxed);
    }

    /// Connections the pool holds at most.
    pub(crate) fn bound(&self) -> usize {
        self.bound
    }

    /// Runs one blocking command frame: `deadline` is the caller's, `block` the
    /// server's; the call gets both, counted from its start.
    pub(crate) fn run(&self, frame: &[u8], deadline: Deadline, block: Duration) -> Result<Value> {
        // BLPOP ... 0 blocks forever on the server: then so may we.
        let whole = deadline.extended((!block.is_zero()).then_some(block));
        // Waiting for a free connection is bounded by the caller's part alone.
        let conn = self.lease(deadline.on(&self.config.timeouts))?;
        match conn.request(frame, 1, whole, Traffic::Caller) {
            Ok(Outcome::One(v)) => {
                self.give_back(conn);
                Ok(v)
            }
            Ok(Outcome::Failed(e))
            | Err(RequestError::Failed(e))
            | Err(RequestError::Unsent(e)) => {
                conn.close(FailureKind::ClosedByClient);
                self.forget(conn);
                Err(e)
            }
            Ok(Outcome::Many(_)) => {
                conn.close(FailureKind::ProtocolFailure);
                self.forget(conn);
                Err(Error::new(
                    ErrorKind::Protocol,
                    "several replies to one command",
                ))
            }
        }
    }

    /// Leases a connection for a sequence of commands (an optimistic transaction); it
    /// goes back to the pool when the lease is dropped (closed if anything went wrong).
    pub(crate) fn lease_for(self: &Arc<Self>, timeout: Duration) -> Result<Lease> {
        let conn = self.lease(deadline_after(Instant::now(), timeout))?;
        Ok(Lease {
            pool: self.clone(),
            conn: Some(conn),
            poisoned: false.into(),
        })
    }

    fn lease(&self, deadline: Instant) -> Result<Arc<Connection>> {
        let mut st = self.state.lock();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return Err(Error::new(ErrorKind::Closed, "the client is closed"));
            }
            if let Some(conn) = take_idle(&mut st) {
                return Ok(conn);
            }
            if st.leased < self.bound() {
                st.leased += 1;
                // Read before dialing: a handoff that starts while we connect may
                // have been too late to redirect this dial.
                let generation = st.generation;
                drop(st);
                // Connecting here runs on the caller's own thread, inside its own call.
                return match Connection::open(&self.config) {
                    Ok(conn) => {
                        let conn = Arc::new(conn);
                        let mut st = self.state.lock();
                        st.in_use.push((conn.clone(), generation));
                        if self.closed.load(Ordering::Acquire) {
                            conn.close(FailureKind::ClosedByClient);
                        }
                        Ok(conn)
                    }
                    Err(e) => {
                        self.state.lock().leased -= 1;
                        self.released.notify_one();
                        Err(e)
                    }
                };
            }
            if self.released.wait_until(&mut st, deadline).timed_out() {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("all {} blocking connections are busy", self.bound()),
                )
                .with_endpoint(self.config.endpoint.to_string()));
            }
        }
    }

    /// An idle lane, without waiting or dialling; when there is none and the pool may
    /// hold more, one is opened in the background for the calls that follow.
    pub(crate) fn try_lease(self: &Arc<Self>) -> Option<Arc<Connection>> {
        if !self.worth_asking.load(Ordering::Relaxed) {
            return None;
        }
        let mut st = self.state.lock();
        if let Some(conn) = take_idle(&mut st) {
            self.publish(&st);
            return Some(conn);
        }
        let held = st.leased + usize::from(st.opening);
        let may_retry = st.retry_at.is_none_or(|at| at <= Instant::now());
        let opening = held < self.bound && !st.opening && may_retry;
        if opening && !self.closed.load(Ordering::Acquire) {
            st.opening = true;
            let generation = st.generation;
            self.publish(&st);
            drop(st);
            self.open_in_background(generation);
        } else {
            self.publish(&st);
        }
        None
    }

    /// Opens one lane on a thread of its own (`rr-lane-dial …`): the caller that asked
    /// goes on at once on the shared connection.
    fn open_in_background(self: &Arc<Self>, generation: u64) {
        let pool = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("rr-lane-dial {}", self.config.endpoint))
            .spawn(move || pool.open_lane(generation));
        if let Err(e) = spawned {
            log::debug!("{}: no thread to open a lane: {e}", self.config.endpoint);
            let mut st = self.state.lock();
            st.opening = false;
            st.retry_at = Some(Instant::now() + LANE_RETRY_AFTER);
            self.publish(&st);
        }
    }

    fn open_lane(&self, generation: u64) {
        let opened = Connection::open(&self.config);
        let mut st = self.state.lock();
        st.opening = false;
        // Worth asking again in any case: a failed attempt is retried after a pause.
        self.worth_asking.store(true, Ordering::Relaxed);
        match opened {
            Ok(conn) => {
                st.retry_at = None;
                let conn = Arc::new(conn);
                // A handoff or new credentials meanwhile: this one is already stale.
                let current = st.generation == generation
                    && conn.auth_generation().is_none_or(|g| g >= st.min_auth);
                if current && !self.closed.load(Ordering::Acquire) {
                    st.idle.push(conn);
                } else {
                    drop(st);
                    finish(conn, FailureKind::ClosedByClient);
                }
            }
            Err(e) => {
                log::debug!("{}: opening a lane failed: {e}", self.config.endpoint);
                st.retry_at = Some(Instant::now() + LANE_RETRY_AFTER);
            }
        }
    }

    /// Ends a lane's call: the connection goes back to the pool after an answer, and is
    /// closed after anything else (a reply that may still come must never reach the
    /// next caller).
    pub(crate) fn end_call(
        &self,
        conn: Arc<Connection>,
        result: &std::result::Result<Outcome, RequestError>,
    ) {
        match result {
            Ok(Outcome::One(_) | Outcome::Many(_)) => self.give_back(conn),
            Ok(Outcome::Failed(_)) | Err(_) => {
                conn.close(FailureKind::ClosedByClient);
                self.forget(conn);
            }
        }
    }

    /// Connections leased right now (calls in flight on lanes).
    pub(crate) fn leased(&self) -> usize {
        self.state.lock().leased
    }

    fn give_back(&self, conn: Arc<Connection>) {
        let mut st = self.state.lock();
        st.leased -= 1;
        let current = take_in_use(&mut st, &conn) == Some(st.generation)
            && conn.auth_generation().is_none_or(|g| g >= st.min_auth);
        if self.closed.load(Ordering::Acquire) || conn.is_closed() || !current {
            self.publish(&st);
            drop(st);
            finish(conn, FailureKind::ClosedByClient);
        } else {
            st.idle.push(conn);
            self.publish(&st);
        }
        self.released.notify_one();
    }

    fn forget(&self, conn: Arc<Connection>) {
        {
            let mut st = self.state.lock();
            st.leased -= 1;
            take_in_use(&mut st, &conn);
            self.publish(&st);
        }
        finish(conn, FailureKind::ClosedByClient);
        self.released.notify_one();
    }

    /// Closes idle connections and fails calls in progress; their threads end.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let (idle, in_use) = {
            let mut st = self.state.lock();
            let in_use: Vec<_> = st.in_use.iter().map(|(c, _)| c.clone()).collect();
            (std::mem::take(&mut st.idle), in_use)
        };
        for conn in in_use {
            conn.close(FailureKind::ClosedByClient);
        }
        for conn in idle {
            finish(conn, FailureKind::ClosedByClient);
        }
        self.released.notify_all();
    }
}

impl DedicatedPool {
    /// A maintenance handoff moved the node: idle connections (still on the address
    /// being retired) are closed now, and those leased right now are closed when given
    /// back rather than leased again. A call blocked on one is left to finish: closing
    /// it would fail the caller for certain, while the server may well answer before it
    /// closes the old address itself. Returns how many idle connections were closed.
    pub(crate) fn recycle(&self) -> usize {
        self.close_idle(
            |st| st.generation += 1,
            |_| true,
            FailureKind::MaintenanceHandoff,
        )
    }

    /// Credentials of `generation` replaced older ones: idle connections on older ones
    /// are closed now (they take the new ones by being opened afresh, as `AUTH` on a
    /// connection a caller may lease meanwhile could land inside its transaction), and
    /// leased ones when given back. A call blocked on one is left to finish, as for a
    /// handoff. Returns how many idle connections were closed.
    pub(crate) fn retire_credentials_before(&self, generation: u64) -> usize {
        self.close_idle(
            |st| st.min_auth = st.min_auth.max(generation),
            |c| c.auth_generation().is_some_and(|g| g < generation),
            FailureKind::ClosedByClient,
        )
    }

    /// Whether the pool holds a connection on credentials older than `generation`
    /// that no round has dealt with yet (idle, or leased and not yet marked to close).
    pub(crate) fn holds_credentials_before(&self, generation: u64) -> bool {
        let st = self.state.lock();
        st.min_auth < generation
            && st
                .idle
                .iter()
                .chain(st.in_use.iter().map(|(c, _)| c))
                .any(|c| c.auth_generation().is_some_and(|g| g < generation))
    }

    /// Closes the connections left idle for `past` or longer: nothing keeps their
    /// flow alive (no heartbeat), and a firewall or NAT that silently forgot one would
    /// make its next call wait for its whole timeout. A lane is opened again in the
    /// background when next wanted, a blocking connection on its next lease. Returns
    /// how many were closed.
    pub(crate) fn retire_idle(&self, past: Duration) -> usize {
        self.close_idle(
            |_| {},
            |c| c.is_closed() || c.idle_for() >= past,
            FailureKind::ClosedByClient,
        )
    }

    /// Updates the state (`first`), then closes the idle connections `stale` picks,
    /// outside the lock; returns how many.
    fn close_idle(
        &self,
        first: impl FnOnce(&mut PoolState),
        stale: impl Fn(&Arc<Connection>) -> bool,
        why: FailureKind,
    ) -> usize {
        let closing: Vec<Arc<Connection>> = {
            let mut st = self.state.lock();
            first(&mut st);
            let (closing, keep) = std::mem::take(&mut st.idle).into_iter().partition(stale);
            st.idle = keep;
            self.publish(&st);
            closing
        };
        let closed = closing.len();
        for conn in closing {
            finish(conn, why);
        }
        closed
    }

    /// Connections idle or leased (status).
    pub(crate) fn open_count(&self) -> usize {
        let st = self.state.lock();
        st.idle.len() + st.leased
    }

    /// Dedicated connections idle in the pool (tests and status).
    pub(crate) fn idle_count(&self) -> usize {
        self.state.lock().idle.len()
    }
}

/// Leases an idle connection that is still open (closed ones are dropped), recording
/// it in use under the current generation.
fn take_idle(st: &mut PoolState) -> Option<Arc<Connection>> {
    while let Some(conn) = st.idle.pop() {
        if !conn.is_closed() {
            st.leased += 1;
            let generation = st.generation;
            st.in_use.push((conn.clone(), generation));
            return Some(conn);
        }
    }
    None
}

/// Removes `conn` from the in-use list; the generation it was opened in.
fn take_in_use(st: &mut PoolState, conn: &Arc<Connection>) -> Option<u64> {
    let at = st.in_use.iter().position(|(c, _)| Arc::ptr_eq(c, conn))?;
    Some(st.in_use.swap_remove(at).1)
}

/// One leased dedicated connection.
pub(crate) struct Lease {
    pool: Arc<DedicatedPool>,
    conn: Option<Arc<Connection>>,
    poisoned: std::sync::atomic::AtomicBool,
}

impl Lease {
    /// Sends a request on the leased connection. A failure (timeout, closed) poisons
    /// the lease: the connection is closed rather than reused in an unknown state.
    pub(crate) fn request(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
    ) -> Result<Outcome> {
        let Some(conn) = &self.conn else {
            return Err(Error::new(ErrorKind::Closed, "the lease has ended"));
        };
        match conn.request(frame, replies, deadline, Traffic::Caller) {
            Ok(Outcome::Failed(e))
            | Err(RequestError::Failed(e))
            | Err(RequestError::Unsent(e)) => {
                self.poisoned.store(true, Ordering::Release);
                Err(e)
            }
            Ok(outcome) => Ok(outcome),
        }
    }

    pub(crate) fn endpoint(&self) -> String {
        self.pool.config.endpoint.to_string()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if self.poisoned.load(Ordering::Acquire) {
                conn.close(FailureKind::ClosedByClient);
                self.pool.forget(conn);
            } else {
                self.pool.give_back(conn);
            }
        }
    }
}

/// Closes a connection and waits for its threads.
fn finish(conn: Arc<Connection>, why: FailureKind) {
    conn.close(why);
    conn.join();
}
