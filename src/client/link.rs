//! `Link`: one reconnecting connection slot of a node (the interactive connection, or
//! the subscription connection): the live connection if any, and its back-off state.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use crate::connection::{Connection, ConnectionConfig};
use crate::error::{Error, ErrorKind, FailureKind};

/// Reconnect bookkeeping, owned by the supervisor.
#[derive(Debug, Default)]
pub(crate) struct ReconnectState {
    pub attempt: u32,
    pub next_at: Option<Instant>,
    pub was_connected: bool,
    /// Why the last attempt failed (refused, DNS, TLS, authentication); cleared when
    /// one succeeds. Calls that waited for the connection in vain say it.
    pub last_error: Option<Error>,
}

pub(crate) struct Link {
    pub(crate) config: ConnectionConfig,
    conn: RwLock<Option<Arc<Connection>>>,
    /// Connections set aside as unresponsive: they take no new requests, and are
    /// closed once every request in flight on them is past its own deadline (bounded:
    /// one is set aside only after its replacement was dialled for, a few at most).
    draining: Mutex<Vec<Arc<Connection>>>,
    pub(crate) reconnect: Mutex<ReconnectState>,
    /// Serialises on-demand opening so two callers do not both open one.
    pub(crate) open_lock: Mutex<()>,
    /// A dial worker is under way for this link (one at a time).
    pub(crate) dialing: AtomicBool,
}

impl Link {
    pub(crate) fn new(config: ConnectionConfig) -> Link {
        Link {
            config,
            conn: RwLock::new(None),
            draining: Mutex::new(Vec::new()),
            reconnect: Mutex::new(ReconnectState::default()),
            open_lock: Mutex::new(()),
            dialing: AtomicBool::new(false),
        }
    }

    /// The live connection, if there is one.
    pub(crate) fn current(&self) -> Option<Arc<Connection>> {
        self.conn
            .read()
            .as_ref()
            .filter(|c| !c.is_closed())
            .cloned()
    }

    /// Installs a connection, closing any previous one.
    pub(crate) fn install(&self, conn: Connection) -> Arc<Connection> {
        let conn = Arc::new(conn);
        let old = self.conn.write().replace(conn.clone());
        if let Some(old) = old {
            old.close(FailureKind::ClosedByClient);
        }
        self.reconnect.lock().was_connected = true;
        conn
    }

    /// Installs a connection and hands back the previous one, still open (a handoff
    /// drains it before closing it).
    pub(crate) fn replace(&self, conn: Connection) -> Option<Arc<Connection>> {
        let old = self.conn.write().replace(Arc::new(conn));
        let mut st = self.reconnect.lock();
        st.was_connected = true;
        st.attempt = 0;
        st.next_at = None;
        old
    }

    /// Stops sending on `conn` (it stopped answering) and takes it out of service, so
    /// the next supervisor pass dials a replacement; it drains meanwhile.
    pub(crate) fn set_aside(&self, conn: &Arc<Connection>) {
        conn.stop_accepting();
        let mut current = self.conn.write();
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *current = None;
        }
        drop(current);
        let mut draining = self.draining.lock();
        if !draining.iter().any(|c| Arc::ptr_eq(c, conn)) {
            draining.push(conn.clone());
        }
    }

    /// Closes the set-aside connections that have drained (see `Connection::drained`).
    pub(crate) fn sweep_draining(&self, grace: Duration) {
        let done: Vec<Arc<Connection>> = {
            let mut draining = self.draining.lock();
            let (done, keep) = std::mem::take(&mut *draining)
                .into_iter()
                .partition(|c| c.is_closed() || c.drained(grace));
            *draining = keep;
            done
        };
        for conn in done {
            // Anything still pending is past its caller's deadline: an abandoned slot.
            let kind = if conn.has_pending() {
                FailureKind::Timeout
            } else {
                FailureKind::ClosedByClient
            };
            conn.close(kind);
        }
    }

    /// Closes the live connection (and any set aside) for good and waits for their
    /// threads.
    pub(crate) fn close(&self) {
        let conn = self.conn.write().take();
        let draining = std::mem::take(&mut *self.draining.lock());
        for conn in conn.into_iter().chain(draining) {
            conn.close(FailureKind::ClosedByClient);
            conn.join();
        }
    }
}

/// What a call that could not be sent tells its caller about the connection: the last
/// attempt's error (connection refused, a name that does not resolve, a certificate
/// refused, a password refused) and the failure kind it stands for.
pub(crate) fn why_disconnected(last: Option<&Error>) -> (String, FailureKind) {
    match last {
        None => (String::new(), FailureKind::SocketClosed),
        Some(e) => {
            let kind = match e.kind() {
                ErrorKind::Auth => FailureKind::AuthenticationFailure,
                _ => FailureKind::ConnectFailed,
            };
            (format!("; last attempt: {}", e.detail()), kind)
        }
    }
}

impl Link {
    /// The last attempt's error, if the last attempt failed.
    pub(crate) fn last_error(&self) -> Option<Error> {
        self.reconnect.lock().last_error.clone()
    }
}
