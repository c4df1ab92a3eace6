//! What the client did about a `MOVING` or a `MIGRATED`, for diagnostics: counters
//! per server and the last outcome, on [`Client::maintenance_status`], and one
//! [`ClientEvent::Handoff`] per handoff.
//!
//! [`Client::maintenance_status`]: crate::Client::maintenance_status
//! [`ClientEvent::Handoff`]: crate::ClientEvent::Handoff

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use super::event::NotificationKind;
use super::handoff::HandoffDecision;
use crate::config::Endpoint;

/// How a handoff ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandoffOutcome {
    /// A `MOVING`, decided (see [`HandoffDecision`]); `HandoffReport::recycled` says
    /// whether the connections moved.
    Decided(HandoffDecision),
    /// After a `MIGRATED`: the record stopped naming our address, so the connections
    /// moved to one it names before the server closes ours without a word.
    NoLongerAdvertised(SocketAddr),
    /// After a `MIGRATED`: still advertised (or it could not be told) until the watch
    /// ended; nothing done. "Cannot tell" never moves a healthy connection.
    StillAdvertised,
    /// Stopped (the client is closing, or a newer event for the server superseded it).
    Cancelled,
}

impl HandoffOutcome {
    /// How it ended, in a word (the variant, or the decision's variant), as metrics
    /// label it: never an address.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            HandoffOutcome::Decided(d) => match d {
                HandoffDecision::StepSideways(_) => "StepSideways",
                HandoffDecision::RecordMoved { .. } => "RecordMoved",
                HandoffDecision::StillStale { .. } => "StillStale",
                HandoffDecision::ConnectTo(_) => "ConnectTo",
                HandoffDecision::Nothing => "Nothing",
                HandoffDecision::NotConnected => "NotConnected",
                HandoffDecision::Cancelled => "Cancelled",
            },
            HandoffOutcome::NoLongerAdvertised(_) => "NoLongerAdvertised",
            HandoffOutcome::StillAdvertised => "StillAdvertised",
            HandoffOutcome::Cancelled => "Cancelled",
        }
    }
}

impl HandoffReport {
    /// Whether the connections moved, in a word, as metrics label it: `done`, `failed`
    /// (the new connection could not be opened) or `none`.
    pub(crate) fn recycle_label(&self) -> &'static str {
        match (self.recycled, &self.error) {
            (true, _) => "done",
            (false, Some(_)) => "failed",
            (false, None) => "none",
        }
    }
}

/// One handoff of one server's connections.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandoffReport {
    /// The server (the node; its name does not change when its address does).
    pub endpoint: Endpoint,
    /// What prompted it: `MOVING` or `MIGRATED`.
    pub trigger: NotificationKind,
    /// The notification's sequence id.
    pub sequence: Option<u64>,
    /// The address the connections were on.
    pub from: Option<SocketAddr>,
    /// The address they are on now, when they moved.
    pub to: Option<SocketAddr>,
    /// How it ended.
    pub outcome: HandoffOutcome,
    /// Whether the interactive and subscription connections were recycled (reported as
    /// [`FailureKind::MaintenanceHandoff`](crate::FailureKind::MaintenanceHandoff), then
    /// restored).
    pub recycled: bool,
    /// Why a recycle the decision asked for did not happen (the new connection could
    /// not be opened: the old one is kept until the server closes it).
    pub error: Option<String>,
    /// Time from the notification to the end of the handoff.
    pub took: Duration,
}

impl fmt::Display for HandoffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.endpoint, self.trigger)?;
        if let Some(s) = self.sequence {
            write!(f, " seq={s}")?;
        }
        match &self.outcome {
            HandoffOutcome::Decided(d) => write!(f, ": {d}")?,
            HandoffOutcome::NoLongerAdvertised(a) => {
                write!(f, ": our address left the record; moving to {a}")?
            }
            HandoffOutcome::StillAdvertised => f.write_str(": still advertised")?,
            HandoffOutcome::Cancelled => f.write_str(": cancelled")?,
        }
        match (self.recycled, self.from, self.to) {
            (true, Some(from), Some(to)) => write!(f, "; recycled {from} -> {to}")?,
            (true, _, _) => f.write_str("; recycled")?,
            (false, _, _) => {}
        }
        if let Some(e) = &self.error {
            write!(f, "; not recycled: {e}")?;
        }
        write!(f, " ({} ms)", self.took.as_millis())
    }
}

/// Counters of one server's handoffs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandoffStats {
    /// `MOVING` events acted on (once per event, whatever the copies and repeats).
    pub moving: u64,
    /// `MOVING` repeats ignored (re-sent to a connection opting in while the window
    /// is open: a live run produced twelve recycles from one event before this gate).
    pub repeats_ignored: u64,
    /// Handoffs that recycled the connections.
    pub recycles: u64,
    /// Stepped sideways to a sibling the record already named.
    pub stepped_sideways: u64,
    /// Waited for the record to move.
    pub record_moved: u64,
    /// The window ended with the record still naming the retiring address.
    pub still_stale: u64,
    /// Moved to an endpoint the notification named.
    pub named_endpoint: u64,
    /// Recycled after a `MIGRATED` because our address was no longer advertised.
    pub no_longer_advertised: u64,
    /// Recycles that could not open the new connection (the old one was kept).
    pub failed: u64,
}
