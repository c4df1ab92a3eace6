//! The public shape of a notification: its kind and the event published for it.

use std::fmt;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::config::Endpoint;
use crate::error::MaintenanceKind;
use crate::resp::Value;

/// The seven kinds of maintenance notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotificationKind {
    /// `MOVING <seq> <time> <endpoint>`: the endpoint is moving; the server closes the
    /// connection after about `time` seconds (measured: 0.7 to 4.1 s later). Opens.
    Moving,
    /// `MIGRATING <seq> <time> <shards>`: shards are migrating. Opens.
    Migrating,
    /// `MIGRATED <seq> <shards>`: the migration finished. Closes.
    Migrated,
    /// `FAILING_OVER <seq> <time> <shards>`: shards are failing over. Opens.
    FailingOver,
    /// `FAILED_OVER <seq> <shards>`: the failover finished. Closes.
    FailedOver,
    /// `SMIGRATING <seq> <slots>`: cluster slots are migrating. Opens.
    SMigrating,
    /// `SMIGRATED <seq> [[source, target, slots], ...]`: slots moved. Closes.
    SMigrated,
}

impl NotificationKind {
    /// Every kind, in a fixed order (the index used for per-kind state).
    pub(crate) const ALL: [NotificationKind; 7] = [
        NotificationKind::Moving,
        NotificationKind::Migrating,
        NotificationKind::Migrated,
        NotificationKind::FailingOver,
        NotificationKind::FailedOver,
        NotificationKind::SMigrating,
        NotificationKind::SMigrated,
    ];

    /// The type element as servers send it (`MOVING`, `FAILED_OVER`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::Moving => "MOVING",
            NotificationKind::Migrating => "MIGRATING",
            NotificationKind::Migrated => "MIGRATED",
            NotificationKind::FailingOver => "FAILING_OVER",
            NotificationKind::FailedOver => "FAILED_OVER",
            NotificationKind::SMigrating => "SMIGRATING",
            NotificationKind::SMigrated => "SMIGRATED",
        }
    }

    /// The kind a type element names, matched case-insensitively (pub/sub kinds are
    /// lowercase on the wire, these uppercase; one lookup tolerates both).
    pub fn from_name(name: &[u8]) -> Option<NotificationKind> {
        NotificationKind::ALL
            .into_iter()
            .find(|k| k.as_str().as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether it announces a disruption (and relaxes timeouts).
    pub fn opens(self) -> bool {
        matches!(
            self,
            NotificationKind::Moving
                | NotificationKind::Migrating
                | NotificationKind::FailingOver
                | NotificationKind::SMigrating
        )
    }

    /// Whether it says a disruption ended (and stands relaxation down).
    pub fn closes(self) -> bool {
        !self.opens()
    }

    /// Whether the contract puts a time element after the sequence id. Decided by the
    /// kind, never by content: a one-slot list `123` looks like a duration.
    pub(crate) fn carries_time(self) -> bool {
        matches!(
            self,
            NotificationKind::Moving | NotificationKind::Migrating | NotificationKind::FailingOver
        )
    }

    /// The maintenance an opening kind puts in force; closing kinds give `Settling`.
    pub fn maintenance_kind(self) -> MaintenanceKind {
        match self {
            NotificationKind::Moving => MaintenanceKind::Moving,
            NotificationKind::Migrating => MaintenanceKind::Migrating,
            NotificationKind::FailingOver => MaintenanceKind::FailingOver,
            NotificationKind::SMigrating => MaintenanceKind::SlotMigrating,
            NotificationKind::Migrated
            | NotificationKind::FailedOver
            | NotificationKind::SMigrated => MaintenanceKind::Settling,
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            NotificationKind::Moving => 0,
            NotificationKind::Migrating => 1,
            NotificationKind::Migrated => 2,
            NotificationKind::FailingOver => 3,
            NotificationKind::FailedOver => 4,
            NotificationKind::SMigrating => 5,
            NotificationKind::SMigrated => 6,
        }
    }
}

impl fmt::Display for NotificationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `[source, target, slots]` triplet of an `SMIGRATED`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotMigration {
    /// The node the slots left (`host:port` as sent).
    pub source: Endpoint,
    /// The node that owns them now.
    pub target: Endpoint,
    /// The slot ranges, every number checked to be below 16384.
    pub slots: Vec<RangeInclusive<u16>>,
    /// The slot list as sent (`8892-8991`, `1,5-9`).
    pub slots_text: String,
}

/// A maintenance notification as received, parsed.
///
/// Fields a kind does not carry are `None` (or empty). The raw frame is kept, so a
/// field that could not be read still tells you something.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MaintenanceEvent {
    /// Which notification.
    pub kind: NotificationKind,
    /// The sequence id: observed monotonic per database, zero-based, shared across
    /// kinds and identical on every node for one event. `None` when the frame had none
    /// (it then cannot be de-duplicated, but is still acted on).
    pub sequence: Option<u64>,
    /// The announced duration (`MOVING`, `MIGRATING`, `FAILING_OVER`; kept when another
    /// kind adds one).
    pub time: Option<Duration>,
    /// `MOVING`: the new endpoint; `None` for the placeholders (RESP3 null, `?`, a zero
    /// port), which mean "reconnect the way you connected". Never the answering server.
    pub new_endpoint: Option<Endpoint>,
    /// `MOVING`: the endpoint element as sent (`None` for a RESP3 null or no element).
    pub endpoint_text: Option<String>,
    /// `MIGRATING`, `MIGRATED`, `FAILING_OVER`, `FAILED_OVER`: the shard ids, opaque, as
    /// sent (a stringified JSON array of id strings, `["27"]`).
    pub shards: Option<String>,
    /// `SMIGRATING`: the slot ranges; `None` when the list could not be read (a number
    /// out of range included).
    pub slots: Option<Vec<RangeInclusive<u16>>>,
    /// `SMIGRATING`: the slot list as sent.
    pub slots_text: Option<String>,
    /// `SMIGRATED`: the readable triplets.
    pub migrations: Vec<SlotMigration>,
    /// `SMIGRATED`: how many malformed triplets were skipped.
    pub skipped_migrations: usize,
    /// The push frame as received.
    pub raw: Value,
    /// The server that told us first (every node sends its own copy; this is the one
    /// whose copy raised the event).
    pub reported_by: Endpoint,
}

impl MaintenanceEvent {
    pub(crate) fn new(kind: NotificationKind, raw: Value, reported_by: Endpoint) -> Self {
        MaintenanceEvent {
            kind,
            sequence: None,
            time: None,
            new_endpoint: None,
            endpoint_text: None,
            shards: None,
            slots: None,
            slots_text: None,
            migrations: Vec::new(),
            skipped_migrations: 0,
            raw,
            reported_by,
        }
    }
}

/// One line: `MIGRATING seq=0 time=2s shards=["27"] from 10.0.0.1:12000`.
impl fmt::Display for MaintenanceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        match self.sequence {
            Some(s) => write!(f, " seq={s}")?,
            None => write!(f, " seq=?")?,
        }
        if let Some(t) = self.time {
            write!(f, " time={}s", t.as_secs())?;
        }
        if self.kind == NotificationKind::Moving {
            match (&self.new_endpoint, &self.endpoint_text) {
                (Some(e), _) => write!(f, " endpoint={e}")?,
                (None, Some(t)) => write!(f, " endpoint=none ({t:?})")?,
                (None, None) => write!(f, " endpoint=none")?,
            }
        }
        if let Some(s) = &self.shards {
            write!(f, " shards={s}")?;
        }
        if let Some(s) = &self.slots_text {
            write!(f, " slots={s}")?;
        }
        for m in &self.migrations {
            write!(f, " {}->{}:{}", m.source, m.target, m.slots_text)?;
        }
        if self.skipped_migrations > 0 {
            write!(f, " ({} malformed skipped)", self.skipped_migrations)?;
        }
        write!(f, " from {}", self.reported_by)
    }
}

/// Maintenance state of one server of a client, for diagnostics and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MaintenanceStatus {
    /// The server.
    pub endpoint: Endpoint,
    /// Whether its interactive connection is up.
    pub connected: bool,
    /// Whether that connection opted in to notifications (re-armed on every reconnect).
    pub opted_in: bool,
    /// The announced maintenance whose relaxed timeouts are in force now.
    pub in_force: MaintenanceKind,
    /// What the client did about `MOVING` and `MIGRATED` on this server.
    pub handoffs: super::HandoffStats,
    /// The last handoff, however it ended.
    pub last_handoff: Option<super::HandoffReport>,
}
