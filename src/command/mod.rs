//! One command as data: `Cmd` (name, arguments, keys), how values become arguments
//! (`ToArgs`), and the flags that say how it may be retried (`RetryCategory`,
//! `CommandFlags`).
//!
//! Owns: what a command *is*, below every layer that carries, routes or retries one
//! (the connection writes it, the cluster router reads its keys, retry policies read
//! its category). The typed API that builds commands and converts replies is
//! `commands`, above `client`. Must never: know where a command goes or what its reply
//! becomes.

mod cmd;
mod flags;
mod to_args;

pub use cmd::{ArgWriter, Cmd};
pub use flags::{CommandFlags, RetryCategory};
pub use to_args::ToArgs;
