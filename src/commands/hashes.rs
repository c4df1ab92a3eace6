//! Hash commands.

use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};

/// Hash commands (`HSET`, `HGET`, `HGETALL` ...), on `Database`, `Batch` and `Transaction`.
pub trait HashCommands: Commands {
    /// `HSET key field value`; returns how many fields were added (0 when updated).
    fn hset(&self, key: impl ToArgs, field: impl ToArgs, value: impl ToArgs) -> Self::Out<i64> {
        self.run(
            Cmd::typed("HSET", WriteLastWins)
                .key(key)
                .arg(field)
                .arg(value),
        )
    }

    /// `HSET key field value [field value ...]` from pairs (`&[(f, v)]`, a `HashMap` ...).
    fn hset_multiple(&self, key: impl ToArgs, pairs: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("HSET", WriteLastWins).key(key).arg(pairs))
    }

    /// `HSETNX key field value`: `true` when the field did not exist and was set.
    fn hsetnx(&self, key: impl ToArgs, field: impl ToArgs, value: impl ToArgs) -> Self::Out<bool> {
        let cmd = Cmd::typed("HSETNX", WriteChecked).key(key);
        self.run(cmd.arg(field).arg(value))
    }

    /// `HGET key field`; use `Option<T>` to read a missing field as `None`.
    fn hget<T: FromValue>(&self, key: impl ToArgs, field: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("HGET", ReadOnly).key(key).arg(field))
    }

    /// `HMGET key field [field ...]`: one `Option` per field.
    fn hmget<T: FromValue>(
        &self,
        key: impl ToArgs,
        fields: impl ToArgs,
    ) -> Self::Out<Vec<Option<T>>> {
        self.run(Cmd::typed("HMGET", ReadOnly).key(key).arg(fields))
    }

    /// `HGETALL key` as a map (`HashMap<K, V>`, `BTreeMap`) or pairs (`Vec<(K, V)>`);
    /// RESP2's flat array and RESP3's map reply both convert.
    fn hgetall<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("HGETALL", ReadOnly).key(key))
    }

    /// `HDEL key field [field ...]`; returns how many were removed.
    fn hdel(&self, key: impl ToArgs, fields: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("HDEL", WriteLastWins).key(key).arg(fields))
    }

    /// `HEXISTS key field`
    fn hexists(&self, key: impl ToArgs, field: impl ToArgs) -> Self::Out<bool> {
        self.run(Cmd::typed("HEXISTS", ReadOnly).key(key).arg(field))
    }

    /// `HINCRBY key field delta`; returns the new value.
    fn hincr(&self, key: impl ToArgs, field: impl ToArgs, delta: i64) -> Self::Out<i64> {
        let cmd = Cmd::typed("HINCRBY", WriteAccumulating).key(key);
        self.run(cmd.arg(field).arg(delta))
    }

    /// `HINCRBYFLOAT key field delta`; returns the new value.
    fn hincr_by_float(&self, key: impl ToArgs, field: impl ToArgs, delta: f64) -> Self::Out<f64> {
        let cmd = Cmd::typed("HINCRBYFLOAT", WriteAccumulating).key(key);
        self.run(cmd.arg(field).arg(delta))
    }

    /// `HKEYS key`
    fn hkeys<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<Vec<T>> {
        self.run(Cmd::typed("HKEYS", ReadOnly).key(key))
    }

    /// `HVALS key`
    fn hvals<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<Vec<T>> {
        self.run(Cmd::typed("HVALS", ReadOnly).key(key))
    }

    /// `HLEN key`: the number of fields.
    fn hlen(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("HLEN", ReadOnly).key(key))
    }

    /// `HSTRLEN key field`: the length of the field's value (0 when missing).
    fn hstrlen(&self, key: impl ToArgs, field: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("HSTRLEN", ReadOnly).key(key).arg(field))
    }
}

impl<C: Commands + ?Sized> HashCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};
    use std::collections::BTreeMap;

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        let hset = r.hset("h", "f", 1);
        assert_eq!(line(&hset), "HSET h f 1");
        assert_eq!(keys(&hset), ["h"]);
        let pairs = BTreeMap::from([("a", "1"), ("b", "2")]);
        let multi = r.hset_multiple("h", &pairs);
        assert_eq!(line(&multi), "HSET h a 1 b 2");
        assert_eq!(keys(&multi), ["h"]);
        assert_eq!(line(&r.hset_multiple("h", [("x", 1)])), "HSET h x 1");
        assert_eq!(line(&r.hmget::<String>("h", ["a", "b"])), "HMGET h a b");
        assert_eq!(line(&r.hincr("h", "n", -3)), "HINCRBY h n -3");
        assert_eq!(
            line(&r.hincr_by_float("h", "n", 0.25)),
            "HINCRBYFLOAT h n 0.25"
        );
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.hset("h", "f", "v").retry_category(), WriteLastWins);
        assert_eq!(r.hsetnx("h", "f", "v").retry_category(), WriteChecked);
        assert_eq!(r.hincr("h", "f", 1).retry_category(), WriteAccumulating);
        assert_eq!(
            r.hgetall::<Vec<(String, String)>>("h").retry_category(),
            ReadOnly
        );
        assert_eq!(r.hdel("h", "f").retry_category(), WriteLastWins);
    }
}
