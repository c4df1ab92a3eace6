//! Retry categories and command flags: what replaying a command would do.

/// What a replay of a command would do, from safest to least safe. A `RetryPolicy`
/// retries a command only when its category is at or below the policy's maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RetryCategory {
    /// Harmless to repeat anywhere (`PING`, `ECHO`).
    Always,
    /// Connection state (`AUTH`, `SELECT`, `HELLO`).
    Connection,
    /// Reads (`GET`, `HGETALL`).
    ReadOnly,
    /// Conditional writes whose replay fails safely (`SET NX`, `HSETNX`).
    WriteChecked,
    /// Writes whose replay leaves the same state (`SET`, `HSET`, `EXPIRE`).
    WriteLastWins,
    /// Writes whose replay changes the result again (`INCR`, `LPUSH`, `APPEND`).
    WriteAccumulating,
    /// Server administration (`CONFIG`, `FLUSHDB`).
    ServerAdmin,
    /// Never replayed (arbitrary commands and scripts unless stated otherwise).
    Never,
}

/// Flags a caller attaches to a command, chiefly its retry category.
///
/// ```
/// use resilient_redis::{CommandFlags, RetryCategory};
/// assert_eq!(CommandFlags::RETRY_READ_ONLY.retry_category(), Some(RetryCategory::ReadOnly));
/// assert_eq!(CommandFlags::NONE.retry_category(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct CommandFlags(u8);

impl CommandFlags {
    /// No flags: the command keeps its own category (`Never` for `cmd(...)`).
    pub const NONE: CommandFlags = CommandFlags(0);
    /// Category `Always`.
    pub const RETRY_ALWAYS: CommandFlags = CommandFlags(1);
    /// Category `Connection`.
    pub const RETRY_CONNECTION: CommandFlags = CommandFlags(2);
    /// Category `ReadOnly`.
    pub const RETRY_READ_ONLY: CommandFlags = CommandFlags(3);
    /// Category `WriteChecked`.
    pub const RETRY_WRITE_CHECKED: CommandFlags = CommandFlags(4);
    /// Category `WriteLastWins`.
    pub const RETRY_WRITE_LAST_WINS: CommandFlags = CommandFlags(5);
    /// Category `WriteAccumulating`.
    pub const RETRY_WRITE_ACCUMULATING: CommandFlags = CommandFlags(6);
    /// Category `ServerAdmin`.
    pub const RETRY_SERVER_ADMIN: CommandFlags = CommandFlags(7);
    /// Category `Never`.
    pub const RETRY_NEVER: CommandFlags = CommandFlags(8);

    /// The retry category these flags state, if any.
    pub fn retry_category(self) -> Option<RetryCategory> {
        Some(match self.0 {
            1 => RetryCategory::Always,
            2 => RetryCategory::Connection,
            3 => RetryCategory::ReadOnly,
            4 => RetryCategory::WriteChecked,
            5 => RetryCategory::WriteLastWins,
            6 => RetryCategory::WriteAccumulating,
            7 => RetryCategory::ServerAdmin,
            8 => RetryCategory::Never,
            _ => return None,
        })
    }
}
