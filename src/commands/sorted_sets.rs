//! Sorted set commands, including the blocking pops.
//!
//! Replies that pair members with scores (`WITHSCORES`, `ZPOPMIN`) are a flat array in
//! RESP2 (`m1 s1 m2 s2`, scores as strings) and an array of pairs in RESP3 (scores as
//! doubles); `Vec<(T, f64)>` reads both, through `FromValue`'s pair handling.
//!
//! Score bounds (`zcount`, `zrangebyscore`, `zrem_range_by_score`) take any `ToArgs`
//! so Redis's own syntax works: `f64::NEG_INFINITY` or `"-inf"`, `"(1"` (exclusive).

use std::time::Duration;

use super::time_args::BlockSeconds;
use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};

/// Sorted set commands (`ZADD`, `ZRANGE`, `BZPOPMIN` ...), on `Database`, `Batch` and
/// `Transaction`.
pub trait SortedSetCommands: Commands {
    /// `ZADD key score member`; returns how many were added (0 when the score changed).
    fn zadd(&self, key: impl ToArgs, member: impl ToArgs, score: f64) -> Self::Out<i64> {
        self.run(
            Cmd::typed("ZADD", WriteLastWins)
                .key(key)
                .arg(score)
                .arg(member),
        )
    }

    /// `ZADD key score member [score member ...]` from `(score, member)` pairs.
    fn zadd_multiple(&self, key: impl ToArgs, items: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("ZADD", WriteLastWins).key(key).arg(items))
    }

    /// `ZREM key member [member ...]`; returns how many were removed.
    fn zrem(&self, key: impl ToArgs, members: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("ZREM", WriteLastWins).key(key).arg(members))
    }

    /// `ZSCORE key member` (`None` when the member or key is missing).
    fn zscore(&self, key: impl ToArgs, member: impl ToArgs) -> Self::Out<Option<f64>> {
        self.run(Cmd::typed("ZSCORE", ReadOnly).key(key).arg(member))
    }

    /// `ZINCRBY key delta member`; returns the new score.
    fn zincr(&self, key: impl ToArgs, member: impl ToArgs, delta: f64) -> Self::Out<f64> {
        let cmd = Cmd::typed("ZINCRBY", WriteAccumulating).key(key);
        self.run(cmd.arg(delta).arg(member))
    }

    /// `ZCARD key`: the number of members.
    fn zcard(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("ZCARD", ReadOnly).key(key))
    }

    /// `ZCOUNT key min max`: members with a score in the range.
    fn zcount(&self, key: impl ToArgs, min: impl ToArgs, max: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("ZCOUNT", ReadOnly).key(key).arg(min).arg(max))
    }

    /// `ZRANGE key start stop`: members by rank, lowest score first.
    fn zrange<T: FromValue>(&self, key: impl ToArgs, start: i64, stop: i64) -> Self::Out<Vec<T>> {
        self.run(Cmd::typed("ZRANGE", ReadOnly).key(key).arg(start).arg(stop))
    }

    /// `ZRANGE key start stop WITHSCORES`: `(member, score)` pairs, lowest first.
    fn zrange_withscores<T: FromValue>(
        &self,
        key: impl ToArgs,
        start: i64,
        stop: i64,
    ) -> Self::Out<Vec<(T, f64)>> {
        let cmd = Cmd::typed("ZRANGE", ReadOnly).key(key).arg(start).arg(stop);
        self.run(cmd.arg("WITHSCORES"))
    }

    /// `ZREVRANGE key start stop`: members by rank, highest score first.
    fn zrevrange<T: FromValue>(
        &self,
        key: impl ToArgs,
        start: i64,
        stop: i64,
    ) -> Self::Out<Vec<T>> {
        self.run(
            Cmd::typed("ZREVRANGE", ReadOnly)
                .key(key)
                .arg(start)
                .arg(stop),
        )
    }

    /// `ZREVRANGE key start stop WITHSCORES`: `(member, score)` pairs, highest first.
    fn zrevrange_withscores<T: FromValue>(
        &self,
        key: impl ToArgs,
        start: i64,
        stop: i64,
    ) -> Self::Out<Vec<(T, f64)>> {
        let cmd = Cmd::typed("ZREVRANGE", ReadOnly)
            .key(key)
            .arg(start)
            .arg(stop);
        self.run(cmd.arg("WITHSCORES"))
    }

    /// `ZRANGEBYSCORE key min max`: members with a score in the range, lowest first.
    fn zrangebyscore<T: FromValue>(
        &self,
        key: impl ToArgs,
        min: impl ToArgs,
        max: impl ToArgs,
    ) -> Self::Out<Vec<T>> {
        self.run(
            Cmd::typed("ZRANGEBYSCORE", ReadOnly)
                .key(key)
                .arg(min)
                .arg(max),
        )
    }

    /// `ZRANK key member` (`None` when absent).
    fn zrank(&self, key: impl ToArgs, member: impl ToArgs) -> Self::Out<Option<i64>> {
        self.run(Cmd::typed("ZRANK", ReadOnly).key(key).arg(member))
    }

    /// `ZREVRANK key member` (`None` when absent).
    fn zrevrank(&self, key: impl ToArgs, member: impl ToArgs) -> Self::Out<Option<i64>> {
        self.run(Cmd::typed("ZREVRANK", ReadOnly).key(key).arg(member))
    }

    /// `ZPOPMIN key count`: up to `count` `(member, score)` pairs, lowest first.
    fn zpopmin<T: FromValue>(&self, key: impl ToArgs, count: usize) -> Self::Out<Vec<(T, f64)>> {
        self.run(Cmd::typed("ZPOPMIN", WriteAccumulating).key(key).arg(count))
    }

    /// `ZPOPMAX key count`: up to `count` `(member, score)` pairs, highest first.
    fn zpopmax<T: FromValue>(&self, key: impl ToArgs, count: usize) -> Self::Out<Vec<(T, f64)>> {
        self.run(Cmd::typed("ZPOPMAX", WriteAccumulating).key(key).arg(count))
    }

    /// `ZREMRANGEBYRANK key start stop`; returns how many were removed.
    ///
    /// `WriteAccumulating`: ranks shift after removal, so a replay removes others.
    fn zrem_range_by_rank(&self, key: impl ToArgs, start: i64, stop: i64) -> Self::Out<i64> {
        let cmd = Cmd::typed("ZREMRANGEBYRANK", WriteAccumulating).key(key);
        self.run(cmd.arg(start).arg(stop))
    }

    /// `ZREMRANGEBYSCORE key min max`; returns how many were removed.
    fn zrem_range_by_score(
        &self,
        key: impl ToArgs,
        min: impl ToArgs,
        max: impl ToArgs,
    ) -> Self::Out<i64> {
        let cmd = Cmd::typed("ZREMRANGEBYSCORE", WriteLastWins).key(key);
        self.run(cmd.arg(min).arg(max))
    }

    /// `BZPOPMIN key [key ...] timeout`: `Some((key, member, score))`, or `None` when
    /// `timeout` passed first (read it as `Option<(K, M, f64)>`). Blocking;
    /// `Duration::ZERO` waits forever.
    fn bzpopmin<T: FromValue>(&self, keys: impl ToArgs, timeout: Duration) -> Self::Out<T> {
        let cmd = Cmd::typed("BZPOPMIN", WriteAccumulating).key(keys);
        self.run(cmd.arg(BlockSeconds(timeout)).blocking(timeout))
    }

    /// `BZPOPMAX key [key ...] timeout` (as [`SortedSetCommands::bzpopmin`]).
    fn bzpopmax<T: FromValue>(&self, keys: impl ToArgs, timeout: Duration) -> Self::Out<T> {
        let cmd = Cmd::typed("BZPOPMAX", WriteAccumulating).key(keys);
        self.run(cmd.arg(BlockSeconds(timeout)).blocking(timeout))
    }
}

impl<C: Commands + ?Sized> SortedSetCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        assert_eq!(line(&r.zadd("z", "m", 1.5)), "ZADD z 1.5 m");
        let multi = r.zadd_multiple("z", [(1, "a"), (2, "b")]);
        assert_eq!(line(&multi), "ZADD z 1 a 2 b");
        assert_eq!(keys(&multi), ["z"]);
        assert_eq!(line(&r.zincr("z", "m", -2.0)), "ZINCRBY z -2 m");
        assert_eq!(
            line(&r.zcount("z", f64::NEG_INFINITY, "(5")),
            "ZCOUNT z -inf (5"
        );
        assert_eq!(
            line(&r.zrange_withscores::<String>("z", 0, -1)),
            "ZRANGE z 0 -1 WITHSCORES"
        );
        assert_eq!(
            line(&r.zrangebyscore::<String>("z", 1, f64::INFINITY)),
            "ZRANGEBYSCORE z 1 +inf"
        );
        assert_eq!(line(&r.zpopmax::<String>("z", 2)), "ZPOPMAX z 2");
    }

    #[test]
    fn blocking_pops_carry_their_block_time() {
        let r = Recorder;
        let b = r.bzpopmin::<Option<(String, String, f64)>>(["a", "b"], Duration::from_millis(100));
        assert_eq!(line(&b), "BZPOPMIN a b 0.1");
        assert_eq!(keys(&b), ["a", "b"]);
        assert_eq!(b.block_time(), Some(Duration::from_millis(100)));
        assert_eq!(b.retry_category(), WriteAccumulating);
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.zadd("z", "m", 1.0).retry_category(), WriteLastWins);
        assert_eq!(r.zincr("z", "m", 1.0).retry_category(), WriteAccumulating);
        assert_eq!(r.zscore("z", "m").retry_category(), ReadOnly);
        assert_eq!(
            r.zpopmin::<String>("z", 1).retry_category(),
            WriteAccumulating
        );
        assert_eq!(
            r.zrem_range_by_rank("z", 0, 0).retry_category(),
            WriteAccumulating
        );
        assert_eq!(
            r.zrem_range_by_score("z", 0, 1).retry_category(),
            WriteLastWins
        );
    }
}
