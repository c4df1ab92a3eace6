//! `ClientStatus`: a point-in-time snapshot of a client's servers, for logs, dashboards
//! and examples, with a `Display` that writes it as a table.
//!
//! Owns: what a snapshot holds and how it reads. Must never: block on the network or
//! on a connection's lock (a snapshot is taken from atomics and cheap reads, so it is
//! safe to print from a health endpoint while the client is under load or down).

use std::fmt;

use super::cluster::ClusterStats;
use super::Client;
use crate::config::{Endpoint, Protocol};
use crate::error::MaintenanceKind;
use crate::maintenance::{HandoffReport, HandoffStats};

/// A snapshot of a [`Client`]: every known server and, for a cluster, the cluster
/// counters. `Display` writes a table, then the last maintenance handoff of each server
/// that had one:
///
/// ```text
/// standalone, 1 node, connected
///   node             connected  protocol  maint opt-in  maintenance  handoffs  backlog  in flight
///   127.0.0.1:40841  yes        RESP3     yes           moving       1         0        0
///   last handoff: 127.0.0.1:40841 MOVING seq=3: ...; recycled 10.0.0.1:12000 -> 10.0.0.2:12000 (2311 ms)
/// ```
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use resilient_redis::testkit::FakeServer;
/// use resilient_redis::Client;
/// let server = FakeServer::start()?;
/// let client = Client::connect(server.url().as_str())?;
/// let status = client.status();
/// assert!(status.connected && !status.cluster);
/// assert_eq!(status.nodes.len(), 1);
/// println!("{status}");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStatus {
    /// Whether the deployment is a Redis Cluster.
    pub cluster: bool,
    /// Whether every known server's interactive connection is up
    /// ([`Client::is_connected`]).
    pub connected: bool,
    /// Every known server, in the client's order (the seed first).
    pub nodes: Vec<NodeStatus>,
    /// Redirects followed, refreshes and retirements; `None` when not a cluster.
    pub cluster_stats: Option<ClusterStats>,
}

/// One server of a [`ClientStatus`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeStatus {
    /// The server.
    pub endpoint: Endpoint,
    /// Whether its interactive connection is up.
    pub connected: bool,
    /// The protocol that connection speaks (RESP3 unless forced or refused); `None`
    /// while it is down.
    pub protocol: Option<Protocol>,
    /// Whether that connection opted in to maintenance notifications.
    pub maint_opted_in: bool,
    /// The announced maintenance whose relaxed timeouts are in force on it now
    /// ([`MaintenanceKind::None`] when no relaxed window is open).
    pub maintenance: MaintenanceKind,
    /// What the client did about `MOVING` and `MIGRATED` on it (see
    /// [`crate::maintenance`]); the table shows `recycles`.
    pub handoffs: HandoffStats,
    /// Its last handoff, however it ended.
    pub last_handoff: Option<HandoffReport>,
    /// Callers waiting in the backlog for the connection to come back.
    pub backlog: usize,
    /// Caller commands sent and not yet answered (probes and heartbeats excluded).
    pub in_flight: usize,
    /// Dedicated connections for blocking commands idle in its pool (a handoff closes
    /// them, so they dial the new address on their next lease).
    pub blocking_idle: usize,
    /// Lanes open beside the interactive connection, idle or carrying a call (see
    /// the `lanes` option).
    pub lanes_open: usize,
}

impl ClientStatus {
    /// Takes the snapshot (see [`Client::status`]).
    pub(crate) fn of(client: &Client) -> ClientStatus {
        let maintenance = client.maintenance_status();
        let nodes = client
            .deployment()
            .nodes()
            .iter()
            .map(|node| {
                let conn = node.current();
                let maint = maintenance.iter().find(|m| m.endpoint == node.endpoint);
                NodeStatus {
                    endpoint: node.endpoint.clone(),
                    connected: conn.is_some(),
                    protocol: conn.as_ref().map(|c| c.info().protocol),
                    maint_opted_in: maint.is_some_and(|m| m.opted_in),
                    maintenance: maint.map_or(MaintenanceKind::None, |m| m.in_force),
                    handoffs: maint.map(|m| m.handoffs).unwrap_or_default(),
                    last_handoff: maint.and_then(|m| m.last_handoff.clone()),
                    backlog: node.backlog_len(),
                    in_flight: node.caller_inflight(),
                    blocking_idle: node.blocking.idle_count(),
                    lanes_open: node.lanes.open_count(),
                }
            })
            .collect();
        ClientStatus {
            cluster: client.is_cluster(),
            connected: client.is_connected(),
            nodes,
            cluster_stats: client.cluster_stats(),
        }
    }
}

impl fmt::Display for ClientStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nodes.len();
        write!(
            f,
            "{}, {n} node{}, {}",
            if self.cluster {
                "cluster"
            } else {
                "standalone"
            },
            if n == 1 { "" } else { "s" },
            if self.connected {
                "connected"
            } else {
                "NOT connected"
            }
        )?;
        if let Some(s) = &self.cluster_stats {
            write!(
                f,
                "; moved {}, ask {}, try-again {}, refreshes {}, retired {}",
                s.moved, s.ask, s.try_again, s.refreshes, s.retired
            )?;
        }
        writeln!(f)?;
        let rows: Vec<Vec<String>> = self
            .nodes
            .iter()
            .map(|n| {
                vec![
                    n.endpoint.to_string(),
                    yes_no(n.connected).to_string(),
                    n.protocol.map_or("-", protocol_name).to_string(),
                    yes_no(n.maint_opted_in).to_string(),
                    maintenance_name(n.maintenance).to_string(),
                    n.handoffs.recycles.to_string(),
                    n.backlog.to_string(),
                    n.in_flight.to_string(),
                ]
            })
            .collect();
        write_table(
            f,
            "  ",
            &[
                "node",
                "connected",
                "protocol",
                "maint opt-in",
                "maintenance",
                "handoffs",
                "backlog",
                "in flight",
            ],
            &rows,
        )?;
        for n in &self.nodes {
            if let Some(h) = &n.last_handoff {
                write!(f, "\n  last handoff: {h}")?;
            }
        }
        Ok(())
    }
}

pub(crate) fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Resp2 => "RESP2",
        Protocol::Resp3 => "RESP3",
    }
}

/// A short name for the maintenance in force; `-` for none.
pub(crate) fn maintenance_name(m: MaintenanceKind) -> &'static str {
    match m {
        MaintenanceKind::None => "-",
        MaintenanceKind::Moving => "moving",
        MaintenanceKind::Migrating => "migrating",
        MaintenanceKind::FailingOver => "failing over",
        MaintenanceKind::SlotMigrating => "slots migrating",
        MaintenanceKind::Settling => "settling",
        // A kind added later still reads as something, never as "none".
        #[allow(unreachable_patterns)]
        _ => "maintenance",
    }
}

/// Writes `rows` under `headers` in left-aligned columns, each line starting with
/// `indent` (the first column of a row may carry its own marker), lines separated by
/// newlines with none after the last (`println!("{status}")` reads right). Trailing
/// spaces are trimmed so the output diffs cleanly.
pub(crate) fn write_table(
    f: &mut fmt::Formatter<'_>,
    indent: &str,
    headers: &[&str],
    rows: &[Vec<String>],
) -> fmt::Result {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut text = String::from(indent);
        for (cell, w) in cells.zip(&widths) {
            text.push_str(cell);
            for _ in cell.chars().count()..*w + 2 {
                text.push(' ');
            }
        }
        text.truncate(text.trim_end().len());
        text
    };
    write!(f, "{}", line(&mut headers.iter().copied()))?;
    for row in rows {
        write!(f, "\n{}", line(&mut row.iter().map(String::as_str)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_reads_as_an_aligned_table() {
        let status = ClientStatus {
            cluster: true,
            connected: false,
            nodes: vec![
                NodeStatus {
                    endpoint: Endpoint::new("10.0.0.1", 6379),
                    connected: true,
                    protocol: Some(Protocol::Resp3),
                    maint_opted_in: true,
                    maintenance: MaintenanceKind::SlotMigrating,
                    handoffs: HandoffStats::default(),
                    last_handoff: None,
                    backlog: 0,
                    in_flight: 2,
                    blocking_idle: 1,
                    lanes_open: 1,
                },
                NodeStatus {
                    endpoint: Endpoint::new("10.0.0.22", 6380),
                    connected: false,
                    protocol: None,
                    maint_opted_in: false,
                    maintenance: MaintenanceKind::None,
                    handoffs: HandoffStats::default(),
                    last_handoff: None,
                    backlog: 7,
                    in_flight: 0,
                    blocking_idle: 0,
                    lanes_open: 0,
                },
            ],
            cluster_stats: Some(ClusterStats {
                moved: 3,
                ask: 1,
                ..ClusterStats::default()
            }),
        };
        let text = status.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "cluster, 2 nodes, NOT connected; moved 3, ask 1, try-again 0, refreshes 0, retired 0"
        );
        assert_eq!(
            lines[1],
            "  node            connected  protocol  maint opt-in  maintenance      handoffs  backlog  in flight"
        );
        assert_eq!(
            lines[2],
            "  10.0.0.1:6379   yes        RESP3     yes           slots migrating  0         0        2"
        );
        assert_eq!(
            lines[3],
            "  10.0.0.22:6380  no         -         no            -                0         7        0"
        );
        assert_eq!(lines.len(), 4);
    }
}
