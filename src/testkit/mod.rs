//! An in-process fake Redis (standalone and cluster) with fault injection, for testing
//! code that must survive a server that hangs, drops connections, refuses them, answers
//! slowly or with errors, moves, migrates or fails over. Enabled by the `testkit`
//! feature.
//!
//! - [`FakeServer`]: binds 127.0.0.1 on an ephemeral port; an accept thread and one
//!   thread per connection (all named `fake-…`, all joined when it is dropped). Speaks
//!   RESP2 and RESP3 (`HELLO`), `AUTH`, `SELECT`, `CLIENT`, and every command the
//!   crate's typed API sends: strings, keys with expiry and `SCAN`, hashes, lists,
//!   sets, sorted sets, streams (blocking commands block for real), the script cache,
//!   `CONFIG`, `WAIT`, `INFO`; `MULTI/EXEC/WATCH`, and pub/sub (plain, pattern and
//!   sharded), with the real server's reply shapes per protocol and its error texts
//!   (`tests/testkit/testkit_parity.rs` compares each typed method with a real server).
//! - Faults, switchable at run time: [`hang`](FakeServer::hang),
//!   [`close_all_connections`](FakeServer::close_all_connections),
//!   [`refuse_connections`](FakeServer::refuse_connections),
//!   [`delay_replies`](FakeServer::delay_replies), [`jitter`](FakeServer::jitter),
//!   [`fail_command`](FakeServer::fail_command),
//!   [`close_after_commands`](FakeServer::close_after_commands).
//! - Observation: [`commands_received`](FakeServer::commands_received),
//!   [`connections`](FakeServer::connections), [`wait_for`](FakeServer::wait_for) (poll
//!   server state instead of sleeping).
//! - Maintenance notifications ([`Notification`], [`FakeServer::notify`]) modelled on
//!   what Redis Enterprise was measured to send.
//! - [`FakeCluster`]: nodes sharing a slot map, `-MOVED`/`-ASK`, slot migrations that
//!   can announce themselves (`SMIGRATING`/`SMIGRATED`), removing and adding nodes.
//! - [`DelayProxy`]: puts any server (a fake or a real `redis-server`) a chosen round
//!   trip away, changeable at run time, for tests and benchmarks at real distances.
//! - [`FakeRestApi`]: a fake Redis Enterprise REST API over HTTPS (the database
//!   availability API of lag-aware failback), with switches for lag, unavailability,
//!   credentials, slowness, redirects, malformed bodies and unfiltered reads.
//! - TLS: [`FakeServer`] and [`FakeCluster`] serve TLS when asked
//!   ([`FakeServer::start_tls`], [`FakeServerBuilder::tls`], [`FakeCluster::start_tls`],
//!   [`FakeCluster::start_with_issuer`]): rustls, with a certificate minted at start
//!   and signed by a [`FakeIssuer`], valid for `localhost` and `127.0.0.1` (and any name
//!   added with [`FakeServerBuilder::tls_name`]). The test hands the issuer to the
//!   client ([`FakeIssuer::tls_options`]), which verifies as it would in production.
//!   Everything above works the same over TLS; a hung fake answers no handshake either.
//!
//! What it is not: a complete Redis. It runs no Lua: `EVAL` and `EVALSHA` answer an
//! error saying so (after the server's own checks, `-NOSCRIPT` included). Commands it
//! does not implement get the real server's unknown-command error, so a test notices
//! rather than passes by accident. `docs/testing.md` lists what it speaks and where it
//! differs from a server.
//!
//! # Example: your code sees a classified timeout when the server hangs
//!
//! ```
//! # #[cfg(feature = "testkit")] {
//! use std::time::Duration;
//! use resilient_redis::prelude::*;
//! use resilient_redis::testkit::FakeServer;
//! use resilient_redis::ErrorKind;
//!
//! let server = FakeServer::start()?;
//! let client = Client::connect(format!("{}?syncTimeout=200", server.url()).as_str())?;
//! let db = client.database();
//! db.set("k", "v")?;
//!
//! server.hang(true); // like SIGSTOP: the socket stays open, nothing is answered
//! let err = db.get::<Option<String>>("k").unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Timeout);
//!
//! server.hang(false); // the held replies are released; the late one is discarded
//! assert_eq!(db.get::<Option<String>>("k")?, Some("v".to_string()));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Example: two TLS fakes under one issuer, and a client that trusts it
//!
//! ```
//! # #[cfg(feature = "testkit")] {
//! use resilient_redis::prelude::*;
//! use resilient_redis::testkit::{FakeIssuer, FakeServer};
//!
//! // One authority for the deployment: a client that trusts it verifies every fake
//! // it signed for, so a handoff or a failover from one to the other verifies too.
//! let issuer = FakeIssuer::new()?;
//! let a = FakeServer::builder().tls(&issuer).start()?;
//! let b = FakeServer::builder().tls(&issuer).start()?;
//! assert!(a.url().starts_with("rediss://127.0.0.1:"));
//!
//! for server in [&a, &b] {
//!     let mut options = Options::parse(&server.url())?;
//!     options.tls = Some(issuer.tls_options()); // verification stays on
//!     let db = Client::connect(options)?.database();
//!     db.set("k", "v")?;
//! }
//!
//! // Without the issuer, the public roots do not know it: refused before any command.
//! let err = Client::connect(a.url().as_str()).unwrap_err();
//! assert_eq!(err.kind(), resilient_redis::ErrorKind::Tls);
//! assert_eq!(a.commands_received("SET"), 1);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod accept;
mod blocking;
mod cluster;
mod cluster_cmds;
mod cmd_command;
mod cmd_config;
mod cmd_hashes;
mod cmd_keys;
mod cmd_keyspace;
mod cmd_lists;
mod cmd_lists_edit;
mod cmd_lists_move;
mod cmd_scripting;
mod cmd_server;
mod cmd_sets;
mod cmd_sets_algebra;
mod cmd_streams;
mod cmd_streams_read;
mod cmd_strings;
mod cmd_strings_range;
mod cmd_zsets;
mod cmd_zsets_pop;
mod conn;
mod delay_proxy;
mod faults;
mod glob;
mod keyspace_events;
mod maintenance;
mod observe;
mod pubsub;
mod reply;
mod request;
mod resolver;
mod rest;
mod rng;
mod sentinel;
mod server;
mod session;
mod slots;
mod store;
mod stream;
mod table;
mod table_data;
mod tls;
mod transactions;
mod zset;

pub use cluster::FakeCluster;
pub use delay_proxy::DelayProxy;
pub use maintenance::Notification;
pub use observe::ConnectionSnapshot;
pub use resolver::{Answer, ScriptedResolver};
pub use rest::{FakeRestApi, FakeRestApiBuilder};
pub use sentinel::FakeSentinel;
pub use server::{FakeServer, FakeServerBuilder};
pub use slots::{key_slot, SLOTS};
pub use tls::FakeIssuer;

/// How a server answers `CLIENT MAINT_NOTIFICATIONS ON`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OptIn {
    /// `+OK`, and the connection receives notifications (the default: a Redis
    /// Enterprise / Redis Cloud endpoint with the feature on).
    #[default]
    Accept,
    /// `-ERR …`: a supporting server with the cluster-level flag off.
    Refuse,
    /// The real unknown-subcommand error, as Redis OSS and Valkey answer.
    Unknown,
}
