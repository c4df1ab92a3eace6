//! Helpers of the maintenance-notification tests: the client's maintenance events,
//! its per-server status, and the log lines the library writes.

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
    super::wait_until(within, || {
        client
            .maintenance_status()
            .iter()
            .all(|s| s.in_force == kind)
    })
}

/// Waits until every server of `client` is connected and opted in.
pub fn wait_opted_in(client: &Client, within: Duration) -> bool {
    super::wait_until(within, || {
        let st = client.maintenance_status();
        !st.is_empty() && st.iter().all(|s| s.connected && s.opted_in)
    })
}

/// The library's records at debug level or above that mention maintenance (or
/// notifications) and contain every one of `needles`: level and text. (Trace records
/// are left out: a repeat of a debug line is logged at trace.)
pub fn log_lines(needles: &[&str]) -> Vec<(log::Level, String)> {
    super::logs::lines()
        .into_iter()
        .filter(|l| l.level <= log::Level::Debug && l.target.starts_with("resilient_redis"))
        .filter(|l| l.text.contains("maintenance") || l.text.contains("notification"))
        .filter(|l| needles.iter().all(|n| l.text.contains(n)))
        .map(|l| (l.level, l.text))
        .collect()
}
