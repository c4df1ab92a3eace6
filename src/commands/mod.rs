//! Commands: the `Database` handle, the `Cmd` builder, batches and transactions,
//! typed commands by family, and the conversions to and from Redis values.
//!
//! Owns: the typed API over a command and what its reply becomes, and the handles a
//! `Client` gives out of this layer (`Client::database`, `Client::subscriber`). It sits
//! above `client`, sending through `client::Router`; the command itself (`Cmd`, flags)
//! is the lower `command` module, re-exported here. Must never: know which connection
//! carries a command (that is the router's business).

mod batch;
mod client_handles;
mod database;
mod from_value;
mod retrying;
mod scan;

mod hashes;
mod keys;
mod lists;
mod scripting;
mod server;
mod sets;
mod sha1;
mod sorted_sets;
mod streams;
mod strings;
mod time_args;

#[cfg(test)]
mod recorder;

// The command model lives in `command`, below `client`; re-exported so the typed API
// and its users keep one path.
pub use crate::command::{ArgWriter, Cmd, CommandFlags, RetryCategory, ToArgs};

pub use batch::{Batch, BatchReply, Transaction};
pub use database::{CmdBuilder, Database};
pub use from_value::FromValue;
pub use hashes::HashCommands;
pub use keys::KeyCommands;
pub use lists::{ListCommands, ListEnd};
pub use scan::{ScanIter, ScanOptions};
pub use scripting::{Script, ScriptingCommands};
pub use server::ServerCommands;
pub use sets::SetCommands;
pub use sorted_sets::SortedSetCommands;
pub use streams::{StreamCommands, StreamEntry};
pub use strings::{SetOptions, StringCommands};

/// What the typed command traits are built on: something that can run a `Cmd`.
///
/// On a [`Database`] running a command returns its converted reply; on a [`Batch`] or
/// [`Transaction`] it queues the command and returns a [`BatchReply`]. Typed commands
/// (`get`, `set`, `hset` ...) come from the family traits, all in [`crate::prelude`].
pub trait Commands {
    /// What running a command yields.
    type Out<T: FromValue>;

    /// Runs (or queues) one command.
    fn run<T: FromValue>(&self, cmd: Cmd) -> Self::Out<T>;
}
