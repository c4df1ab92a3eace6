//! What tests can see: commands received by name, connections and their state, and a
//! poll helper so tests wait on server state instead of sleeping.
//!
//! Owns: counters and snapshots. Must never: change server state.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::FakeServer;

/// Command counters of one server.
#[derive(Default)]
pub(crate) struct Stats {
    by_name: Mutex<HashMap<String, u64>>,
    total: AtomicU64,
}

impl Stats {
    /// Counts one received command (uppercase name).
    pub(crate) fn count(&self, name: &str) {
        self.total.fetch_add(1, Ordering::Relaxed);
        *self.by_name.lock().entry(name.to_string()).or_default() += 1;
    }
}

/// One connection as the server sees it, at the moment of the snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionSnapshot {
    /// The id `CLIENT ID` answers (per server, from 1).
    pub id: u64,
    /// The peer's address.
    pub peer: std::net::SocketAddr,
    /// The name set by `CLIENT SETNAME` or `HELLO … SETNAME`.
    pub name: Option<String>,
    /// 2 or 3.
    pub protocol: u8,
    /// The selected database.
    pub database: usize,
    /// Whether `CLIENT MAINT_NOTIFICATIONS ON` was accepted on it.
    pub opted_in: bool,
    /// The `moving-endpoint-type` it asked for, if any.
    pub moving_endpoint_type: Option<String>,
    /// Channels + patterns + shard channels it is subscribed to.
    pub subscriptions: usize,
    /// The last command it sent (lowercase name).
    pub last_command: String,
}

/// Observation, for assertions in tests.
impl FakeServer {
    /// How many `name` commands (case-insensitive) were received, on all connections,
    /// including refused, failed and queued ones. For containers, the container name
    /// (`CLIENT`, `CLUSTER`).
    pub fn commands_received(&self, name: &str) -> u64 {
        let name = name.to_ascii_uppercase();
        self.inner
            .stats
            .by_name
            .lock()
            .get(&name)
            .copied()
            .unwrap_or(0)
    }

    /// How many commands were received in all.
    pub fn total_commands(&self) -> u64 {
        self.inner.stats.total.load(Ordering::Relaxed)
    }

    /// Resets the command counters to zero.
    pub fn reset_counters(&self) {
        self.inner.stats.by_name.lock().clear();
        self.inner.stats.total.store(0, Ordering::Relaxed);
    }

    /// Connections open now.
    pub fn connections_open(&self) -> usize {
        self.inner.conns.lock().len()
    }

    /// A snapshot of every open connection, in id order.
    pub fn connections(&self) -> Vec<ConnectionSnapshot> {
        self.inner
            .connections()
            .iter()
            .map(|c| {
                let s = c.state.lock();
                ConnectionSnapshot {
                    id: c.id,
                    peer: c.peer,
                    name: s.name.clone(),
                    protocol: s.proto,
                    database: s.db,
                    opted_in: s.opted_in,
                    moving_endpoint_type: s.moving_endpoint_type.clone(),
                    subscriptions: s.subscriptions(),
                    last_command: s.last_command.clone(),
                }
            })
            .collect()
    }

    /// Polls `cond` (every few milliseconds) until it holds or `timeout` passes;
    /// returns whether it held. Use it instead of sleeping:
    /// `assert!(server.wait_for(|s| s.connections_open() == 2, Duration::from_secs(5)))`.
    pub fn wait_for(&self, mut cond: impl FnMut(&FakeServer) -> bool, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if cond(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
