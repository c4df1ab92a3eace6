//! Maintenance: notifications by kind, relaxed windows, and handoffs by outcome.
//! Recorded where a server's notification is handled (a reader thread, once per fresh
//! event: a few per maintenance, never per request) and where a handoff worker ends.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

use std::time::Duration;

use crate::error::MaintenanceKind;

/// `host:port` sent a notification of `kind` (as servers spell it: `MOVING`, ...) that
/// is new for that server.
#[inline(always)]
pub(crate) fn notification_received(host: &str, port: u16, kind: &'static str) {
    #[cfg(feature = "metrics")]
    {
        let mut labels = super::server_labels(host, port);
        labels.push(::metrics::Label::from_static_parts(
            super::label::KIND,
            kind,
        ));
        ::metrics::counter!(super::NOTIFICATIONS, labels).increment(1);
    }
}

/// `host:port`'s timeouts entered the relaxed state `maintenance` (a window opening or
/// changing kind, or `Settling` for the tail a closing notification starts).
#[inline(always)]
pub(crate) fn relaxed_window_entered(host: &str, port: u16, maintenance: MaintenanceKind) {
    #[cfg(feature = "metrics")]
    {
        let mut labels = super::server_labels(host, port);
        labels.push(::metrics::Label::from_static_parts(
            super::label::MAINTENANCE,
            maintenance_name(maintenance),
        ));
        ::metrics::counter!(super::RELAXED_WINDOWS, labels).increment(1);
    }
}

/// A handoff of `host:port`'s connections ended: prompted by `trigger` (a notification
/// kind), ended as `outcome`, `recycle` saying whether the connections moved (`done`,
/// `failed`, `none`), `took` after the notification.
#[inline(always)]
pub(crate) fn handoff_finished(
    host: &str,
    port: u16,
    trigger: &'static str,
    outcome: &'static str,
    recycle: &'static str,
    took: Duration,
) {
    #[cfg(feature = "metrics")]
    {
        use super::label::{OUTCOME, RECYCLE, TRIGGER};
        use ::metrics::Label;
        let mut labels = super::server_labels(host, port);
        labels.push(Label::from_static_parts(TRIGGER, trigger));
        labels.push(Label::from_static_parts(OUTCOME, outcome));
        ::metrics::histogram!(super::HANDOFF_DURATION, labels.clone()).record(took.as_secs_f64());
        labels.push(Label::from_static_parts(RECYCLE, recycle));
        ::metrics::counter!(super::HANDOFFS, labels).increment(1);
    }
}

/// The `MaintenanceKind` variant's name.
#[cfg(feature = "metrics")]
fn maintenance_name(kind: MaintenanceKind) -> &'static str {
    match kind {
        MaintenanceKind::None => "None",
        MaintenanceKind::Moving => "Moving",
        MaintenanceKind::Migrating => "Migrating",
        MaintenanceKind::FailingOver => "FailingOver",
        MaintenanceKind::SlotMigrating => "SlotMigrating",
        MaintenanceKind::Settling => "Settling",
    }
}
