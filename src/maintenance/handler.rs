//! What one server does with a push frame: read it, de-duplicate it, relax or stand
//! down that server's timeouts, and say whether the client should raise the event.
//!
//! Runs on reader threads (the interactive and the subscription connection of one
//! server, concurrently), so it only takes short locks and never blocks.

use std::sync::Arc;

use super::dedup::{EventRing, SeenIds};
use super::event::MaintenanceEvent;
use super::parse::{parse, Parsed};
use super::timeouts::{RelaxSettings, ServerTimeouts};
use crate::config::{Endpoint, Options};
use crate::error::MaintenanceKind;
use crate::metrics;
use crate::resp::Value;

/// Maintenance state of one server, shared by its connections across reconnects.
pub(crate) struct ServerMaintenance {
    timeouts: Arc<ServerTimeouts>,
    settings: RelaxSettings,
    seen: SeenIds,
}

impl ServerMaintenance {
    pub(crate) fn new(timeouts: Arc<ServerTimeouts>, options: &Options) -> ServerMaintenance {
        ServerMaintenance {
            timeouts,
            settings: RelaxSettings::from_options(options),
            seen: SeenIds::default(),
        }
    }

    /// Handles `frame` from a connection to `from` when it is a maintenance
    /// notification. `Err(frame)`: not one, handed back (pub/sub parsing comes next).
    /// `Ok(Some(event))`: new for the client, raise it. `Ok(None)`: handled, nothing to
    /// raise (a copy another node already delivered, a replay, or an unreadable frame,
    /// which is dropped here so that it can never be taken for a reply).
    #[cfg(test)]
    pub(crate) fn on_push(
        &self,
        ring: &EventRing,
        from: &Endpoint,
        frame: Value,
    ) -> Result<Option<MaintenanceEvent>, Value> {
        Ok(self
            .on_push_fresh(ring, from, frame)?
            .and_then(|(event, raise)| raise.then_some(event)))
    }

    /// Like `on_push`, but also hands back an event that is new for this server and
    /// already raised for another node's copy: `Ok(Some((event, raise)))`. Per-server
    /// actions (a handoff, a topology refresh for this node's slots) run for it; the
    /// public event is raised only when `raise`.
    pub(crate) fn on_push_fresh(
        &self,
        ring: &EventRing,
        from: &Endpoint,
        frame: Value,
    ) -> Result<Option<(MaintenanceEvent, bool)>, Value> {
        let event = match parse(frame, from) {
            Parsed::NotMaintenance(frame) => return Err(frame),
            Parsed::Unreadable(kind, why) => {
                log::warn!("{from}: unreadable {kind} notification dropped: {why}");
                return Ok(None);
            }
            Parsed::Event(event) => *event,
        };
        if !self.seen.claim(event.kind, event.sequence) {
            log::trace!("{from}: {event} already acted on (a copy or a replay)");
            return Ok(None);
        }
        let (host, port) = (&from.host, from.port);
        if event.kind.opens() {
            let kind = event.kind.maintenance_kind();
            if self.timeouts.open_window(kind, &self.settings) != kind {
                metrics::relaxed_window_entered(host, port, kind);
            }
        } else if self.timeouts.close_window(&self.settings) {
            metrics::relaxed_window_entered(host, port, MaintenanceKind::Settling);
        }
        // Counted after what it did: whoever sees it counted sees the window too.
        metrics::notification_received(host, port, event.kind.as_str());
        // Per-server work runs for every server's copy (each must relax its own
        // timeouts); the public event is raised for the first copy only.
        let raise = ring.claim(event.kind, event.sequence);
        if raise {
            log::info!("maintenance notification: {event}");
        } else {
            log::debug!("{from}: {event} (already raised for another node's copy)");
        }
        Ok(Some((event, raise)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::error::MaintenanceKind;
    use std::time::Duration;

    fn b(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn server(clock: &ManualClock) -> (Arc<ServerTimeouts>, ServerMaintenance) {
        let t = Arc::new(ServerTimeouts::new(Arc::new(clock.clone())));
        (t.clone(), ServerMaintenance::new(t, &Options::default()))
    }

    #[test]
    fn three_nodes_one_event_three_relaxations() {
        let clock = ManualClock::new();
        let ring = EventRing::new();
        let nodes: Vec<_> = (0..3).map(|_| server(&clock)).collect();
        let frame = || {
            Value::Push(vec![
                b("FAILING_OVER"),
                Value::Int(0),
                Value::Int(2),
                b("[\"52\"]"),
            ])
        };
        let mut raised = 0;
        for (i, (timeouts, node)) in nodes.iter().enumerate() {
            let from = Endpoint::new("10.0.0.1", 7000 + i as u16);
            if let Ok(Some(e)) = node.on_push(&ring, &from, frame()) {
                assert_eq!(e.reported_by, from, "the first to tell us");
                raised += 1;
            }
            assert_eq!(timeouts.maintenance(), MaintenanceKind::FailingOver);
        }
        assert_eq!(raised, 1);
        // The closing one stands every node down, once publicly.
        let done = || Value::Push(vec![b("FAILED_OVER"), Value::Int(1), b("[\"52\"]")]);
        let raised = nodes
            .iter()
            .filter(|(_, n)| {
                matches!(
                    n.on_push(&ring, &Endpoint::new("h", 1), done()),
                    Ok(Some(_))
                )
            })
            .count();
        assert_eq!(raised, 1);
        for (t, _) in &nodes {
            assert_eq!(t.maintenance(), MaintenanceKind::Settling);
        }
    }

    #[test]
    fn a_replay_is_not_acted_on_again_and_pubsub_frames_are_handed_back() {
        let clock = ManualClock::new();
        let ring = EventRing::new();
        let (t, node) = server(&clock);
        let from = Endpoint::new("h", 1);
        let moving = || Value::Push(vec![b("MOVING"), Value::Int(0), Value::Int(15), Value::Nil]);
        assert!(matches!(node.on_push(&ring, &from, moving()), Ok(Some(_))));
        clock.advance(Duration::from_secs(20));
        // Re-sent to a connection opting in while the window is open: no new window.
        assert!(matches!(node.on_push(&ring, &from, moving()), Ok(None)));
        clock.advance(Duration::from_secs(10));
        assert_eq!(
            t.maintenance(),
            MaintenanceKind::None,
            "the backstop, not extended"
        );
        let message = Value::Push(vec![b("message"), b("ch"), b("x")]);
        assert_eq!(node.on_push(&ring, &from, message.clone()), Err(message));
        let bad = Value::Push(vec![b("MIGRATING"), Value::Int(1), Value::Array(vec![])]);
        assert!(matches!(node.on_push(&ring, &from, bad), Ok(None)));
        assert_eq!(t.maintenance(), MaintenanceKind::None);
    }
}
