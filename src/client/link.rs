//! `Link`: one reconnecting connection slot of a node (the interactive connection, or
//! the subscription connection): the live connection if any, and its back-off state.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use crate::connection::{Connection, ConnectionConfig};
use crate::error::FailureKind;

/// Reconnect bookkeeping, owned by the supervisor.
#[derive(Debug, Default)]
pub(crate) struct ReconnectState {
    pub attempt: u32,
    pub next_at: Option<Instant>,
    pub was_connected: bool,
}

pub(crate) struct Link {
    pub(crate) config: ConnectionConfig,
    conn: RwLock<Option<Arc<Connection>>>,
    pub(crate) reconnect: Mutex<ReconnectState>,
    /// Serialises on-demand opening so two callers do not both open one.
    pub(crate) open_lock: Mutex<()>,
}

impl Link {
    pub(crate) fn new(config: ConnectionConfig) -> Link {
        Link {
            config,
            conn: RwLock::new(None),
            reconnect: Mutex::new(ReconnectState::default()),
            open_lock: Mutex::new(()),
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

    /// Closes the live connection for good and waits for its threads.
    pub(crate) fn close(&self) {
        let conn = self.conn.write().take();
        if let Some(conn) = conn {
            conn.close(FailureKind::ClosedByClient);
            conn.join();
        }
    }
}
