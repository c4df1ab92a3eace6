//! String commands, and `SetOptions` for the full form of `SET`.
//!
//! Retry categories follow what a replay after an unknown outcome would do. Commands
//! that hand back the value they replaced or removed (`GETSET`, `GETDEL`, `SET ... GET`)
//! are `WriteAccumulating` although their end state is idempotent: a replay would
//! report the value the first run wrote (or nil), and the real old value would be lost
//! without anyone noticing, just as a replayed pop loses an element.

use std::time::Duration;

use super::time_args::{millis_ceil, unix_millis};
use super::ArgWriter;
use super::{Cmd, Commands, FromValue, RetryCategory, RetryCategory::*, ToArgs};

/// String commands (`GET`, `SET`, `INCR` ...), on `Database`, `Batch` and `Transaction`.
pub trait StringCommands: Commands {
    /// `GET key`; use `Option<T>` to read a missing key as `None`.
    fn get<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("GET", ReadOnly).key(key))
    }

    /// `SET key value`
    fn set(&self, key: impl ToArgs, value: impl ToArgs) -> Self::Out<()> {
        self.run(Cmd::typed("SET", WriteLastWins).key(key).arg(value))
    }

    /// `SET key value PX ms`: sets with a time to live (rounded up to milliseconds).
    fn set_ex(&self, key: impl ToArgs, value: impl ToArgs, ttl: Duration) -> Self::Out<()> {
        let cmd = Cmd::typed("SET", WriteLastWins).key(key).arg(value);
        self.run(cmd.arg("PX").arg(millis_ceil(ttl)))
    }

    /// `SET key value NX`: sets only if the key does not exist; `true` when it was set.
    fn set_nx(&self, key: impl ToArgs, value: impl ToArgs) -> Self::Out<bool> {
        self.run(
            Cmd::typed("SET", WriteChecked)
                .key(key)
                .arg(value)
                .arg("NX"),
        )
    }

    /// `SET key value [NX|XX] [PX ms|PXAT ms|KEEPTTL] [GET]`, as `options` say.
    ///
    /// The reply depends on the options: `OK` or nil (read it as `bool` or
    /// `Option<String>`), or with `GET` the previous value (`Option<T>`).
    fn set_options<T: FromValue>(
        &self,
        key: impl ToArgs,
        value: impl ToArgs,
        options: &SetOptions,
    ) -> Self::Out<T> {
        let cmd = Cmd::typed("SET", options.retry_category());
        self.run(cmd.key(key).arg(value).arg(options))
    }

    /// `GETSET key value`: sets and returns the previous value (`Option<T>`).
    fn get_set<T: FromValue>(&self, key: impl ToArgs, value: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("GETSET", WriteAccumulating).key(key).arg(value))
    }

    /// `GETDEL key`: returns the value (`Option<T>`) and deletes the key.
    fn get_del<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("GETDEL", WriteAccumulating).key(key))
    }

    /// `GETEX key PX ms` (`Some`) or `GETEX key PERSIST` (`None`): returns the value and
    /// sets or removes its time to live.
    fn get_ex<T: FromValue>(&self, key: impl ToArgs, ttl: Option<Duration>) -> Self::Out<T> {
        let cmd = Cmd::typed("GETEX", WriteLastWins).key(key);
        self.run(match ttl {
            Some(ttl) => cmd.arg("PX").arg(millis_ceil(ttl)),
            None => cmd.arg("PERSIST"),
        })
    }

    /// `MGET key [key ...]`: one `Option` per key, `None` where it is missing.
    fn mget<T: FromValue>(&self, keys: impl ToArgs) -> Self::Out<Vec<Option<T>>> {
        self.run(Cmd::typed("MGET", ReadOnly).key(keys))
    }

    /// `MSET key value [key value ...]`
    ///
    /// Takes pairs rather than any `ToArgs` so keys and values stay apart: only the
    /// keys are marked as keys, which cluster routing hashes.
    fn mset<K: ToArgs, V: ToArgs>(&self, pairs: &[(K, V)]) -> Self::Out<()> {
        let mut cmd = Cmd::typed("MSET", WriteLastWins);
        for (k, v) in pairs {
            cmd.push_key(k);
            cmd.push_arg(v);
        }
        self.run(cmd)
    }

    /// `INCRBY key delta`; returns the new value.
    fn incr(&self, key: impl ToArgs, delta: i64) -> Self::Out<i64> {
        self.run(Cmd::typed("INCRBY", WriteAccumulating).key(key).arg(delta))
    }

    /// `DECRBY key delta`; returns the new value.
    fn decr(&self, key: impl ToArgs, delta: i64) -> Self::Out<i64> {
        self.run(Cmd::typed("DECRBY", WriteAccumulating).key(key).arg(delta))
    }

    /// `INCRBYFLOAT key delta`; returns the new value.
    fn incr_by_float(&self, key: impl ToArgs, delta: f64) -> Self::Out<f64> {
        self.run(
            Cmd::typed("INCRBYFLOAT", WriteAccumulating)
                .key(key)
                .arg(delta),
        )
    }

    /// `APPEND key value`; returns the new length.
    fn append(&self, key: impl ToArgs, value: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("APPEND", WriteAccumulating).key(key).arg(value))
    }

    /// `STRLEN key` (0 for a missing key).
    fn strlen(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("STRLEN", ReadOnly).key(key))
    }

    /// `GETRANGE key start end` (inclusive; negative indexes count from the end).
    fn getrange<T: FromValue>(&self, key: impl ToArgs, start: i64, end: i64) -> Self::Out<T> {
        self.run(
            Cmd::typed("GETRANGE", ReadOnly)
                .key(key)
                .arg(start)
                .arg(end),
        )
    }

    /// `SETRANGE key offset value`; returns the new length.
    fn setrange(&self, key: impl ToArgs, offset: u64, value: impl ToArgs) -> Self::Out<i64> {
        let cmd = Cmd::typed("SETRANGE", WriteLastWins).key(key);
        self.run(cmd.arg(offset).arg(value))
    }

    /// `SETNX key value`: `true` when the key did not exist and was set.
    fn setnx(&self, key: impl ToArgs, value: impl ToArgs) -> Self::Out<bool> {
        self.run(Cmd::typed("SETNX", WriteChecked).key(key).arg(value))
    }
}

impl<C: Commands + ?Sized> StringCommands for C {}

/// Only set when the key does (not) exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Condition {
    Nx,
    Xx,
}

/// When the key set by `SET` expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiry {
    In(Duration),
    At(std::time::SystemTime),
    KeepTtl,
}

/// The options of `SET` (see [`StringCommands::set_options`]).
///
/// ```
/// use std::time::Duration;
/// use resilient_redis::SetOptions;
/// let opts = SetOptions::new().nx().ttl(Duration::from_secs(30));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct SetOptions {
    condition: Option<Condition>,
    expiry: Option<Expiry>,
    get: bool,
}

impl SetOptions {
    /// No options: a plain `SET`.
    pub fn new() -> SetOptions {
        SetOptions::default()
    }

    /// `NX`: only set a key that does not exist.
    pub fn nx(mut self) -> SetOptions {
        self.condition = Some(Condition::Nx);
        self
    }

    /// `XX`: only set a key that already exists.
    pub fn xx(mut self) -> SetOptions {
        self.condition = Some(Condition::Xx);
        self
    }

    /// `PX ms`: expire after `ttl` (rounded up to milliseconds).
    pub fn ttl(mut self, ttl: Duration) -> SetOptions {
        self.expiry = Some(Expiry::In(ttl));
        self
    }

    /// `PXAT ms`: expire at `at`.
    pub fn expire_at(mut self, at: std::time::SystemTime) -> SetOptions {
        self.expiry = Some(Expiry::At(at));
        self
    }

    /// `KEEPTTL`: keep the key's current time to live.
    pub fn keep_ttl(mut self) -> SetOptions {
        self.expiry = Some(Expiry::KeepTtl);
        self
    }

    /// `GET`: reply with the previous value (Redis 6.2+; with `NX` 7.0+).
    pub fn get(mut self) -> SetOptions {
        self.get = true;
        self
    }

    /// What replaying this `SET` would do (see the module comment for `GET`).
    fn retry_category(&self) -> RetryCategory {
        if self.get {
            WriteAccumulating
        } else if self.condition.is_some() {
            WriteChecked
        } else {
            WriteLastWins
        }
    }
}

impl ToArgs for SetOptions {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        match self.condition {
            Some(Condition::Nx) => out.write(b"NX"),
            Some(Condition::Xx) => out.write(b"XX"),
            None => {}
        }
        match self.expiry {
            Some(Expiry::In(ttl)) => {
                out.write(b"PX");
                millis_ceil(ttl).write_args(out);
            }
            Some(Expiry::At(at)) => {
                out.write(b"PXAT");
                unix_millis(at).write_args(out);
            }
            Some(Expiry::KeepTtl) => out.write(b"KEEPTTL"),
            None => {}
        }
        if self.get {
            out.write(b"GET");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};
    use std::time::UNIX_EPOCH;

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        assert_eq!(line(&r.get::<String>("k")), "GET k");
        assert_eq!(
            line(&r.set_ex("k", "v", Duration::from_millis(1500))),
            "SET k v PX 1500"
        );
        assert_eq!(line(&r.set_nx("k", 1)), "SET k 1 NX");
        assert_eq!(line(&r.get_ex::<String>("k", None)), "GETEX k PERSIST");
        let mset = r.mset(&[("a", 1), ("b", 2)]);
        assert_eq!(line(&mset), "MSET a 1 b 2");
        assert_eq!(keys(&mset), ["a", "b"]);
        assert_eq!(keys(&r.mget::<String>(["x", "y"])), ["x", "y"]);
        assert_eq!(line(&r.incr_by_float("f", 1.5)), "INCRBYFLOAT f 1.5");
        assert_eq!(line(&r.getrange::<String>("k", 0, -1)), "GETRANGE k 0 -1");
    }

    #[test]
    fn set_options_write_in_server_order() {
        let r = Recorder;
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let opts = SetOptions::new().get().expire_at(at).xx();
        assert_eq!(
            line(&r.set_options::<Option<String>>("k", "v", &opts)),
            "SET k v XX PXAT 1700000000123 GET"
        );
        let opts = SetOptions::new().keep_ttl();
        assert_eq!(
            line(&r.set_options::<()>("k", "v", &opts)),
            "SET k v KEEPTTL"
        );
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.get::<String>("k").retry_category(), ReadOnly);
        assert_eq!(r.set("k", "v").retry_category(), WriteLastWins);
        assert_eq!(r.set_nx("k", "v").retry_category(), WriteChecked);
        assert_eq!(r.setnx("k", "v").retry_category(), WriteChecked);
        assert_eq!(r.incr("k", 1).retry_category(), WriteAccumulating);
        assert_eq!(r.append("k", "x").retry_category(), WriteAccumulating);
        assert_eq!(r.get_del::<String>("k").retry_category(), WriteAccumulating);
        let nx = SetOptions::new().nx();
        assert_eq!(
            r.set_options::<bool>("k", "v", &nx).retry_category(),
            WriteChecked
        );
        let get = SetOptions::new().get();
        assert_eq!(
            r.set_options::<bool>("k", "v", &get).retry_category(),
            WriteAccumulating
        );
    }
}
