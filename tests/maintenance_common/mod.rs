//! Helpers of the maintenance-notification tests: the client's maintenance events,
//! its per-server status, and the log lines the library writes.
#![allow(dead_code)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use resilient_redis::maintenance::MaintenanceStatus;
use resilient_redis::{Client, ClientEvent, MaintenanceEvent, MaintenanceKind};

/// How long a condition that should hold at once may take on a loaded 2-core machine.
pub const SOON: Duration = Duration::from_secs(5);

/// The next maintenance event within `within`, skipping connection events.
pub fn next_maintenance(
    events: &Receiver<ClientEvent>,
    within: Duration,
) -> Option<MaintenanceEvent> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(ClientEvent::Maintenance(e)) => return Some(e),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

/// Every maintenance event already queued.
pub fn drain_maintenance(events: &Receiver<ClientEvent>) -> Vec<MaintenanceEvent> {
    events
        .try_iter()
        .filter_map(|e| match e {
            ClientEvent::Maintenance(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// The status of the client's only (or first) server.
pub fn status(client: &Client) -> MaintenanceStatus {
    client.maintenance_status().remove(0)
}

/// Waits until every server of `client` has `kind` in force.
pub fn wait_in_force(client: &Client, kind: MaintenanceKind, within: Duration) -> bool {
    super::support::wait_until(within, || {
        client
            .maintenance_status()
            .iter()
            .all(|s| s.in_force == kind)
    })
}

/// Waits until every server of `client` is connected and opted in.
pub fn wait_opted_in(client: &Client, within: Duration) -> bool {
    super::support::wait_until(within, || {
        let st = client.maintenance_status();
        !st.is_empty() && st.iter().all(|s| s.connected && s.opted_in)
    })
}

/// Log lines (of this test binary) that mention maintenance.
static LINES: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Debug && metadata.target().starts_with("resilient_redis")
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let text = record.args().to_string();
        if text.contains("maintenance") || text.contains("notification") {
            if let Ok(mut lines) = LINES.lock() {
                lines.push((record.level(), text));
            }
        }
    }

    fn flush(&self) {}
}

static LOGGER: Capture = Capture;

/// Installs the capturing logger (once per test binary).
pub fn capture_logs() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
    }
}

/// Captured lines containing every one of `needles`.
pub fn log_lines(needles: &[&str]) -> Vec<(log::Level, String)> {
    LINES
        .lock()
        .map(|lines| {
            lines
                .iter()
                .filter(|(_, l)| needles.iter().all(|n| l.contains(n)))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}
