//! String commands.

use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};

/// String commands (`GET`, `SET`, `INCR` ...), on `Database`, `Batch` and `Transaction`.
pub trait StringCommands: Commands {
    /// `GET key`
    fn get<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("GET", ReadOnly).key(key))
    }

    /// `SET key value`
    fn set(&self, key: impl ToArgs, value: impl ToArgs) -> Self::Out<()> {
        self.run(Cmd::typed("SET", WriteLastWins).key(key).arg(value))
    }

    /// `INCRBY key delta`; returns the new value.
    fn incr(&self, key: impl ToArgs, delta: i64) -> Self::Out<i64> {
        self.run(Cmd::typed("INCRBY", WriteAccumulating).key(key).arg(delta))
    }

    /// `DEL key [key ...]`; returns how many were removed.
    fn del(&self, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("DEL", WriteLastWins).key(keys))
    }

    /// `PING`
    fn ping(&self) -> Self::Out<String> {
        self.run(Cmd::typed("PING", Always))
    }
}

impl<C: Commands + ?Sized> StringCommands for C {}
