//! resilient-redis: a synchronous, thread-based Redis client that keeps a service
//! served through region outages, failovers and planned maintenance.
//!
//! It is for programs that do not run an async runtime (thread-per-request servers,
//! batch jobs, CLI tools, plugins embedded in other programs) and must keep working
//! while Redis moves under them.
//!
//! # The pieces
//!
//! - [`Client`]: one deployment, standalone or Redis Cluster. One multiplexed
//!   connection per server, a reader and a writer thread each; whatever your threads
//!   send concurrently is pipelined. It reconnects by itself (back-off with jitter, a
//!   full re-handshake, a bounded backlog meanwhile) and never hands a late reply to
//!   the wrong caller. Configured with a `redis://` URL, an option string (every key
//!   on [`Options::parse`]) or an [`Options`] builder.
//! - [`Database`]: the handle commands go through, `Clone + Send + Sync` and cheap to
//!   clone. Typed commands come from the traits in [`prelude`]; anything else through
//!   [`Database::cmd`]; pipelines through [`Batch`]; `MULTI`/`EXEC` through
//!   [`Transaction`] and [`Database::watch`]. [`Database::with_retry`] re-issues
//!   failed commands by how safe a replay is ([`RetryCategory`]).
//! - [`Subscriber`]: plain, pattern and sharded pub/sub, re-subscribed after
//!   reconnects and slot moves, with bounded queues or callbacks off the reader thread.
//! - [`availability::Group`]: several deployments (regions) served as one, the best
//!   member active: health checks, circuit breakers, weights, latency, failback delay,
//!   manual failover, and failback checks such as [`availability::LagAware`] (feature
//!   `lag-aware`), which asks Redis Enterprise whether a region that came back has
//!   caught up.
//! - [`maintenance`]: opt-in to the maintenance notifications of Redis Enterprise,
//!   Redis Cloud and Azure Managed Redis; timeouts relaxed while a shard moves, and
//!   connections handed over to the new address before the server closes the old one.
//! - `testkit` (feature `testkit`): an in-process fake Redis, standalone and cluster,
//!   with fault injection, maintenance notifications and a fake Enterprise REST API,
//!   so you can test your own failover code without a real server.
//! - [`Client::status`] and [`availability::Group::status`]: snapshots that print as
//!   tables, for logs and health endpoints.
//! - [`metrics`] (feature `metrics`): counters and histograms for dashboards through the
//!   `metrics` facade: calls and errors by kind, latency, reconnects, the backlog,
//!   breakers, failovers, failback verdicts, maintenance and handoffs.
//!
//! Errors are one [`Error`] type with a classified [`ErrorKind`]
//! ([`ErrorKind::is_transient`] is what retries and breakers decide on); they name the
//! endpoint and the command, never an argument or a secret.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use resilient_redis::availability::{Group, GroupOptions, Member, RetryPolicy};
//! use resilient_redis::prelude::*;
//!
//! fn main() -> resilient_redis::Result<()> {
//!     // One deployment.
//!     let client = Client::connect("redis://127.0.0.1:6379")?;
//!     let db = client.database(); // hand a clone to every thread
//!     db.set("greeting", "hello")?;
//!     let greeting: Option<String> = db.get("greeting")?;
//!     let n: i64 = db.cmd("INCRBY").key("counter").arg(5).query()?; // any command
//!
//!     // Two regions served as one: the heavier member is active while it is healthy.
//!     let group = Group::connect(
//!         vec![
//!             Member::new("redis://us-east.example:6379").with_name("us-east").with_weight(2),
//!             Member::new("redis://us-west.example:6379").with_name("us-west"),
//!         ],
//!         GroupOptions::default().failback_delay(Duration::from_secs(60)),
//!     )?;
//!     let db = group.database().with_retry(RetryPolicy::default())?;
//!     db.set("session:42", "alive")?; // follows a failover to the other region
//!     println!("{}", group.status());
//!     let _ = (greeting, n);
//!     Ok(())
//! }
//! ```
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `tls` | on | TLS to Redis (`ssl=true`, `rediss://`, [`config::TlsOptions`]) with rustls, ring and the webpki roots |
//! | `lag-aware` | on | `availability::LagAware` and `HealthCheck::lag_aware`: HTTPS calls to the Redis Enterprise REST API (ureq, serde_json); implies `tls` |
//! | `testkit` | off | the in-process fakes of `testkit`; implies `tls` and `lag-aware` |
//! | `metrics` | off | the recording functions of [`metrics`], through the `metrics` facade |
//! | `redis-compat` | off | `redis::ConnectionLike` for [`Database`] |
//!
//! A plain-TCP application can build with `default-features = false`: rustls, ring,
//! webpki-roots, ureq and serde_json are then not compiled. Option strings and URLs
//! that ask for TLS still parse; connecting with them fails with an
//! [`ErrorKind::Config`] error that names the missing `tls` feature. The lag-aware
//! types take rustls types, so without `lag-aware` they are absent, not stubbed.
//!
//! # Guides
//!
//! The repository's `docs/` folder holds the guides: `failover.md` (groups, health
//! checks, breakers, retries, failback, lag-aware failback), `maintenance.md`,
//! `configuration.md` (every key and URL form), `testing.md` (the testkit),
//! `metrics.md` (every metric and its labels) and `performance.md`. Runnable examples are in `examples/`
//! (`cargo run --example geo_failover`).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod availability;
mod client;
pub mod clock;
mod command;
mod commands;
#[cfg(feature = "redis-compat")]
mod compat;
pub mod config;
pub(crate) mod connection;
mod error;
pub mod maintenance;
pub mod metrics;
mod policy;
pub mod pubsub;
pub mod resolve;
pub mod resp;
#[cfg(feature = "testkit")]
pub mod testkit;

pub use client::cluster;
pub use client::{
    Client, ClientEvent, ClientStatus, ClusterStats, IntoOptions, NodeInfo, NodeRole, NodeStatus,
    EVENT_QUEUE_BOUND,
};
pub use commands::{
    ArgWriter, Batch, BatchReply, Cmd, CmdBuilder, CommandFlags, Commands, Database, FromValue,
    HashCommands, KeyCommands, ListCommands, ListEnd, RetryCategory, ScanIter, ScanOptions, Script,
    ScriptingCommands, ServerCommands, SetCommands, SetOptions, SortedSetCommands, StreamCommands,
    StreamEntry, StringCommands, ToArgs, Transaction,
};
pub use config::{Endpoint, Options};
pub use error::{Error, ErrorKind, FailureKind, MaintenanceKind, Result};
pub use maintenance::{MaintenanceEvent, MaintenanceStatus};
pub use pubsub::{Message, MessageKind, Subscriber, Subscription};

/// Everything needed to call typed commands: `use resilient_redis::prelude::*;`.
pub mod prelude {
    pub use crate::commands::{
        Commands, FromValue, HashCommands, KeyCommands, ListCommands, ListEnd, Script,
        ScriptingCommands, ServerCommands, SetCommands, SetOptions, SortedSetCommands,
        StreamCommands, StreamEntry, StringCommands, ToArgs,
    };
    // Not `Result`: a one-parameter alias in a glob import would shadow std's
    // `Result<T, E>` in the user's module.
    pub use crate::{Client, Database, Error, ErrorKind, Options, Subscriber};
}

/// The channel types `events()` and subscriptions hand out (crossbeam's), re-exported so
/// their names need no extra dependency: `for e in client.events().iter()`,
/// `recv_timeout(..)` giving `Err(RecvTimeoutError::Disconnected)` once closed.
pub mod channel {
    pub use crossbeam_channel::{Receiver, RecvError, RecvTimeoutError, TryRecvError};
}

// The README's and the guides' code blocks are compiled (and, unless marked `no_run`,
// run) as doc tests, so they cannot drift from the API they describe. The guides use
// the testkit, so they are tested with it on (`cargo test --all-features`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../docs/failover.md")]
struct FailoverGuideDoctests;

#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../docs/maintenance.md")]
struct MaintenanceGuideDoctests;

#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../docs/configuration.md")]
struct ConfigurationGuideDoctests;

#[cfg(all(doctest, feature = "metrics"))]
#[doc = include_str!("../docs/metrics.md")]
struct MetricsGuideDoctests;

#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../docs/testing.md")]
struct TestingGuideDoctests;

#[cfg(all(doctest, feature = "testkit"))]
#[doc = include_str!("../docs/sentinel.md")]
struct SentinelGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/cluster.md")]
struct ClusterGuideDoctests;
