//! `Node`: one server of a deployment: its interactive connection (replaced on
//! reconnect), the backlog of callers waiting while it is down, and its pool of
//! dedicated connections for blocking commands.
//!
//! Owns: what a caller sees of one server. Must never: reconnect on a caller's thread
//! (the supervisor does that), or resend a request that may have reached the server.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use super::blocking::BlockingPool;
use super::events::{ClientEvent, EventBus};
use crate::config::{BacklogPolicy, Endpoint};
use crate::connection::slot::Outcome;
use crate::connection::{deadline_after, Connection, ConnectionConfig, RequestError};
use crate::error::{Error, ErrorKind, FailureKind, Result};

/// Reconnect bookkeeping, owned by the supervisor.
#[derive(Debug, Default)]
pub(crate) struct ReconnectState {
    pub attempt: u32,
    pub next_at: Option<Instant>,
    pub was_connected: bool,
}

pub(crate) struct Node {
    pub(crate) endpoint: Endpoint,
    pub(crate) config: ConnectionConfig,
    conn: RwLock<Option<Arc<Connection>>>,
    /// Backlog waiters park here until a connection is installed or the node closes.
    wait_lock: Mutex<()>,
    available: Condvar,
    backlog_waiting: AtomicUsize,
    pub(crate) reconnect: Mutex<ReconnectState>,
    pub(crate) blocking: BlockingPool,
    closed: AtomicBool,
    pub(crate) events: Arc<EventBus<ClientEvent>>,
}

impl Node {
    pub(crate) fn new(config: ConnectionConfig, events: Arc<EventBus<ClientEvent>>) -> Node {
        let blocking = BlockingPool::new(config.clone());
        Node {
            endpoint: config.endpoint.clone(),
            config,
            conn: RwLock::new(None),
            wait_lock: Mutex::new(()),
            available: Condvar::new(),
            backlog_waiting: AtomicUsize::new(0),
            reconnect: Mutex::new(ReconnectState::default()),
            blocking,
            closed: AtomicBool::new(false),
            events,
        }
    }

    /// The live interactive connection, if there is one.
    pub(crate) fn current(&self) -> Option<Arc<Connection>> {
        self.conn
            .read()
            .as_ref()
            .filter(|c| !c.is_closed())
            .cloned()
    }

    /// Installs a fresh connection and wakes the backlog.
    pub(crate) fn install(&self, conn: Connection) {
        if self.is_closed() {
            conn.close(FailureKind::ClosedByClient);
            return;
        }
        let old = self.conn.write().replace(Arc::new(conn));
        if let Some(old) = old {
            old.close(FailureKind::ClosedByClient);
        }
        let _guard = self.wait_lock.lock();
        self.available.notify_all();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends a request, waiting in the backlog (up to the deadline) while the node has
    /// no live connection. A request is resent only when it was never written.
    pub(crate) fn request(
        &self,
        frame: &[u8],
        replies: usize,
        timeout: Duration,
        caller_work: bool,
    ) -> Result<Outcome> {
        let start = Instant::now();
        let deadline = deadline_after(start, timeout);
        loop {
            if self.is_closed() {
                return Err(self.closed_error());
            }
            if let Some(conn) = self.current() {
                let left = deadline.saturating_duration_since(Instant::now());
                match conn.request(
                    frame,
                    replies,
                    left.max(Duration::from_millis(1)),
                    caller_work,
                ) {
                    Ok(outcome) => return Ok(outcome),
                    Err(RequestError::Failed(e)) => return Err(e),
                    Err(RequestError::Unsent(_)) => {}
                }
            }
            self.wait_for_connection(deadline)?;
        }
    }

    fn wait_for_connection(&self, deadline: Instant) -> Result<()> {
        let options = &self.config.options;
        if options.backlog == BacklogPolicy::FailFast {
            return Err(Error::new(
                ErrorKind::ConnectionClosed,
                "not connected (backlog=failfast)",
            )
            .with_endpoint(self.endpoint.to_string()));
        }
        let waiting = self.backlog_waiting.fetch_add(1, Ordering::AcqRel) + 1;
        let _count = Decrement(&self.backlog_waiting);
        if waiting > options.backlog_limit {
            return Err(Error::new(
                ErrorKind::BacklogFull,
                format!(
                    "{} callers already wait for the connection (backlogLimit)",
                    options.backlog_limit
                ),
            )
            .with_endpoint(self.endpoint.to_string()));
        }
        let mut guard = self.wait_lock.lock();
        while self.current().is_none() && !self.is_closed() {
            if self.available.wait_until(&mut guard, deadline).timed_out() {
                if self.current().is_some() {
                    break;
                }
                return Err(Error::new(
                    ErrorKind::Timeout,
                    "timed out waiting for the connection to come back",
                )
                .with_endpoint(self.endpoint.to_string())
                .with_failure(FailureKind::SocketClosed));
            }
        }
        Ok(())
    }

    fn closed_error(&self) -> Error {
        Error::new(ErrorKind::Closed, "the client is closed")
            .with_endpoint(self.endpoint.to_string())
    }

    /// Callers currently waiting for the connection.
    #[allow(dead_code)]
    pub(crate) fn backlog_len(&self) -> usize {
        self.backlog_waiting.load(Ordering::Relaxed)
    }

    /// Closes every connection and wakes every waiter; nothing reconnects afterwards.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let conn = self.conn.write().take();
        if let Some(conn) = conn {
            conn.close(FailureKind::ClosedByClient);
            conn.join();
        }
        self.blocking.close();
        let _guard = self.wait_lock.lock();
        self.available.notify_all();
    }
}

struct Decrement<'a>(&'a AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
