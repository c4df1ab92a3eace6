//! Maintenance notifications ("smart client handoffs"): what Redis Enterprise, Redis
//! Cloud and Azure Managed Redis announce before an endpoint moves, a shard migrates or
//! fails over, or cluster slots move, and what the client does with it.
//!
//! # Opting in
//!
//! `maintNotifications=disabled|auto|enabled` ([`MaintNotifications`]), off by default:
//! most servers have never heard of the subcommand. With it on, every connection asks
//! with `CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type <type>`, pipelined with
//! `HELLO 3`, and re-asks on every reconnect. Notifications are RESP3 push frames, so
//! the feature needs RESP3.
//!
//! - `auto` is best effort and never refuses a connection: a server that refuses the
//!   subcommand (Redis OSS and Valkey do not have it), or answers `HELLO 3` in RESP2,
//!   just gives a connection without notifications, for the connection's whole life. The
//!   refusal is logged once per endpoint at debug level, not per connection: users of
//!   other clients had to turn the feature off to silence their logs.
//! - `enabled` means **required**: the connection is refused, with an error saying why,
//!   when the server refuses the subcommand, answers `HELLO 3` in RESP2, or the
//!   configuration can never ask (`protocol=resp2`). The error is
//!   [`ErrorKind::Config`](crate::ErrorKind::Config) for the configuration,
//!   [`ErrorKind::Protocol`](crate::ErrorKind::Protocol) for the server.
//! - On Redis Enterprise a **cluster-level flag** decides whether the subcommand exists
//!   at all: with it off, a version that supports notifications still refuses the
//!   opt-in. Check it before suspecting the client when `enabled` refuses a connection.
//! - Whether the opt-in is live is visible per server: [`Client::maintenance_status`].
//!
//! `moving-endpoint-type` is `maintMovingEndpointType` when set; otherwise an address
//! literal gives `*-ip` and a host name `*-fqdn`, TLS always gives `*-fqdn` (a
//! certificate names hosts, not addresses), and a private, loopback, link-local or
//! 100.64/10 peer gives `internal-*`, any other `external-*`.
//!
//! # The notifications
//!
//! Seven kinds ([`NotificationKind`]); opening ones relax command timeouts for the server
//! that sent them, closing ones stand the relaxation down (see below). Every
//! notification is published once per client as
//! [`ClientEvent::Maintenance`](crate::ClientEvent::Maintenance) with a
//! [`MaintenanceEvent`]. A frame that names a maintenance kind but cannot be read is
//! dropped with a log line; it never takes a command's reply.
//!
//! # Relaxed timeouts
//!
//! - `maintRelaxedTimeout` (seconds, 10): while a window is open, a command's timeout is
//!   `max(configured, relaxed)`: a relaxed timeout never lowers a configured one. It is
//!   read when the timeout is checked, so commands already in flight are covered and a
//!   caller already waiting waits longer. `MOVING` relaxes even an idle connection.
//! - `maintRelaxedWindowMax` (seconds, 3 × relaxed): the backstop when no closing
//!   notification comes (`MOVING` has none). No tail follows a backstop expiry.
//! - `maintPostEventRelaxed` (seconds, 2 × relaxed): the tail after a closing
//!   notification: the operation finished, but latency has not settled, and every
//!   client told the same thing re-engages at once.
//! - The `maint*` durations are in **seconds** (fractions allowed), unlike every other
//!   timeout key, which is in milliseconds, as in other clients' settings.
//! - Never relaxed: keep-alive heartbeats and connection-failure detection. A server
//!   that dies during maintenance is still noticed at once (a closed socket) or by the
//!   heartbeat; only the heuristic that a reply is overdue uses the relaxed timeout, or
//!   it would tear down the very connection relaxation protects.
//! - Errors carry the maintenance in force ([`Error::maintenance`](crate::Error::maintenance)),
//!   and so does [`FaultContext`](crate::availability::FaultContext).
//!
//! # De-duplication
//!
//! Per server and kind, an id already acted on is ignored (a replay on reconnect, a
//! copy on the subscription connection); zero is a valid id. Every node broadcasts an
//! event with the same id: an 8-slot ring of (kind, id) per client raises the public
//! event for the first arrival only, while each server still relaxes for its own copy.
//! The ring matches on equality, so a lagging node's older, unseen event is raised.
//!
//! # Acting on `MOVING` (the handoff)
//!
//! Measured on Redis Enterprise: DNS follows a `MOVING` 4.4 to 9.7 s later (once after
//! the close), and the server closes every connection of the node 0.7 to 4.1 s after
//! the declared window. So the client moves first, on its own schedule, decided by the
//! endpoint's form (a socket-free decision, [`HandoffDecision`], tested without a server):
//!
//! - a host name, no new endpoint (every `MOVING` observed): when the first answer
//!   already names another address (several A records, the common case) the
//!   connections step sideways at once; otherwise the record is polled
//!   ([`AdvertisedAddressProbe`]) until it names another address. A window that ends
//!   with the record still stale is a normal outcome: the server closes, the reconnect
//!   resolves then;
//! - a named new endpoint: the node's connections dial it (a cluster also re-reads
//!   its topology); over TLS they verify the host named (unless `sslHost` pins a
//!   name; an address named keeps the node's own name);
//! - an address and no new endpoint: nothing to re-resolve, nothing is done (the
//!   relaxed window covers the reconnect after the close).
//!
//! The work runs on a short-lived `rr-handoff <endpoint>` thread the supervisor starts,
//! never on a reader or writer thread: a jitter (a tenth of the window, at most 1 s),
//! the decision, then the recycle. The replacement interactive connection is opened
//! and installed first; the old one takes no new requests and is closed once the
//! caller work already sent on it is answered (bounded by what is left of the window),
//! so commands do not fail across a handoff. The subscription connection is closed
//! and re-opened by the supervisor, which re-subscribes; idle dedicated connections of
//! the blocking pool are closed, and a leased one is closed when given back. Both are reported as
//! [`FailureKind::MaintenanceHandoff`](crate::FailureKind::MaintenanceHandoff), then
//! restored; [`ClientEvent::Handoff`](crate::ClientEvent::Handoff) reports each
//! handoff, and [`MaintenanceStatus`] keeps counters and the last one. A `MOVING` is
//! acted on once per event: the server re-sends it to every connection that opts in
//! while its window is open.
//!
//! Name resolution goes through [`Options::resolver`](crate::Options::resolver) (the
//! system resolver by default); `testkit::ScriptedResolver` scripts a moving record.
//!
//! `MIGRATED` (and `FAILED_OVER`, whose proxy may be the one leaving) prompts the other
//! DNS question: is our address still advertised? On the
//! shrink path a node leaves DNS ~5 s after `MIGRATED` and its socket is closed
//! silently ~13 s later, so for the post-event tail the record is checked, and a node
//! no longer advertised is left before that close. A lookup that fails or names
//! nothing is "cannot tell" and never moves a connection.
//!
//! # Cluster slot migrations
//!
//! `SMIGRATED` triplets whose source is the node that sent them (through the identity
//! map) assign their slots to the target at once and re-read the topology after a
//! jitter of up to 1 s, one refresh for a burst; triplets about other nodes are
//! ignored. Sharded subscriptions in those slots move to the new owner at once, unless
//! the server's own `SUNSUBSCRIBE` already moved them. Counters:
//! [`ClusterStats`](crate::ClusterStats).
//!
//! # Providers
//!
//! See [`Options::provider`](crate::Options::provider): hosted deployments recognised by
//! their domain, or named with `defaults=<name>`, get `maintNotifications=auto` (and
//! TLS / RESP3 where the deployment always has them) unless set explicitly.
//!
//! # Where this module sits
//!
//! Owns: the socket-free parts of maintenance: reading notifications, de-duplicating
//! them, the relaxed-timeout state of each server (`timeouts`, read by `connection`
//! whenever a timeout is checked), the endpoint type to ask for, the handoff decision
//! and the advertised-address probe. It sits below `connection`, which consults it;
//! the reactions that open connections live in one place in `client`, above both:
//! `client::maintenance` (each node's maintenance inbox, the handoff worker, and what an
//! `SMIGRATED` does to a cluster's slot map). Must never: open a connection or reach a
//! layer above.
//!
//! [`MaintNotifications`]: crate::config::MaintNotifications
//! [`Client::maintenance_status`]: crate::Client::maintenance_status

mod advertised_address;
mod dedup;
mod endpoint_type;
mod event;
mod handler;
// Hidden, not part of the API (may change in any release): the socket-free handoff
// decision core, public only so `tests/maintenance/handoff_decision.rs` can drive it through
// scripted DNS timelines. Users see its verdict as the `HandoffDecision` a
// `HandoffReport` carries.
#[doc(hidden)]
pub mod handoff;
mod optin;
mod parse;
mod report;
pub(crate) mod timeouts;

#[cfg(test)]
mod capture_tests;

pub use advertised_address::{AdvertisedAddressProbe, ReplacementPoll};
pub use event::{MaintenanceEvent, MaintenanceStatus, NotificationKind, SlotMigration};
pub use handoff::HandoffDecision;
pub use report::{HandoffOutcome, HandoffReport, HandoffStats};

pub(crate) use dedup::EventRing;
pub(crate) use endpoint_type::detect as detect_endpoint_type;
pub(crate) use handler::ServerMaintenance;
pub(crate) use optin::note_unavailable_once;
