//! resilient-redis: a synchronous, thread-based Redis client that keeps a service
//! served through region outages, failovers and planned maintenance.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod availability;
mod client;
pub mod clock;
mod commands;
#[cfg(feature = "redis-compat")]
mod compat;
pub mod config;
pub(crate) mod connection;
mod error;
pub mod maintenance;
pub mod pubsub;
pub mod resolve;
pub mod resp;
#[cfg(feature = "testkit")]
pub mod testkit;

pub use client::cluster;
pub use client::{Client, ClientEvent, ClusterStats, IntoOptions, EVENT_QUEUE_BOUND};
pub use commands::{
    ArgWriter, Batch, Cmd, CmdBuilder, CommandFlags, Commands, Database, FromValue, Handle,
    HashCommands, KeyCommands, ListCommands, ListEnd, RetryCategory, Script, ScriptingCommands,
    ServerCommands, SetCommands, SetOptions, SortedSetCommands, StreamCommands, StreamEntry,
    StringCommands, ToArgs, Transaction,
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
    pub use crate::{Client, Database, Options, Subscriber};
}
