//! List commands, including the blocking pops and moves.
//!
//! Pops and moves are `WriteAccumulating`: a replay after an unknown outcome pops a
//! second element, and the first may have been popped for a caller who never saw it.
//!
//! Blocking forms (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`) are marked with
//! `Cmd::blocking`, so they run on a dedicated connection (never stalling the shared
//! one) with a client-side timeout of the caller's timeout plus the block time. The
//! server-side timeout is sent in decimal seconds; `Duration::ZERO` blocks forever.

use std::time::Duration;

use super::time_args::BlockSeconds;
use super::ArgWriter;
use super::{Cmd, Commands, FromValue, RetryCategory, RetryCategory::*, ToArgs};

/// Which end of a list (`LEFT` is the head, index 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListEnd {
    /// The head (`LEFT`).
    Left,
    /// The tail (`RIGHT`).
    Right,
}

impl ToArgs for ListEnd {
    fn write_args(&self, out: &mut ArgWriter<'_>) {
        out.write(match self {
            ListEnd::Left => b"LEFT",
            ListEnd::Right => b"RIGHT",
        })
    }
}

/// `LREM` with count 0 removes every occurrence, so a replay removes nothing more; any
/// other count removes up to that many, and a replay would remove further ones.
fn lrem_category(count: i64) -> RetryCategory {
    if count == 0 {
        WriteLastWins
    } else {
        WriteAccumulating
    }
}

/// `LTRIM` keeping a head (`0 n`, n >= 0) or a tail (`-n -1`) is idempotent (the capped
/// list idiom); any other range trims further on every replay.
fn ltrim_category(start: i64, stop: i64) -> RetryCategory {
    if (start == 0 && stop >= 0) || (start < 0 && stop == -1) {
        WriteLastWins
    } else {
        WriteAccumulating
    }
}

/// List commands (`LPUSH`, `LRANGE`, `BLPOP` ...), on `Database`, `Batch` and `Transaction`.
pub trait ListCommands: Commands {
    /// `LPUSH key value [value ...]`; returns the new length.
    fn lpush(&self, key: impl ToArgs, values: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("LPUSH", WriteAccumulating).key(key).arg(values))
    }

    /// `RPUSH key value [value ...]`; returns the new length.
    fn rpush(&self, key: impl ToArgs, values: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("RPUSH", WriteAccumulating).key(key).arg(values))
    }

    /// `LPUSHX key value [value ...]`: only onto an existing list; returns the length.
    fn lpushx(&self, key: impl ToArgs, values: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("LPUSHX", WriteAccumulating).key(key).arg(values))
    }

    /// `RPUSHX key value [value ...]`: only onto an existing list; returns the length.
    fn rpushx(&self, key: impl ToArgs, values: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("RPUSHX", WriteAccumulating).key(key).arg(values))
    }

    /// `LPOP key [count]`: without a count one element (`Option<T>`), with a count a
    /// list (`Option<Vec<T>>`, nil when the key does not exist).
    fn lpop<T: FromValue>(&self, key: impl ToArgs, count: Option<usize>) -> Self::Out<T> {
        self.run(Cmd::typed("LPOP", WriteAccumulating).key(key).arg(count))
    }

    /// `RPOP key [count]` (replies as for [`ListCommands::lpop`]).
    fn rpop<T: FromValue>(&self, key: impl ToArgs, count: Option<usize>) -> Self::Out<T> {
        self.run(Cmd::typed("RPOP", WriteAccumulating).key(key).arg(count))
    }

    /// `LRANGE key start stop` (inclusive; negative indexes count from the end).
    fn lrange<T: FromValue>(&self, key: impl ToArgs, start: i64, stop: i64) -> Self::Out<Vec<T>> {
        self.run(Cmd::typed("LRANGE", ReadOnly).key(key).arg(start).arg(stop))
    }

    /// `LLEN key`
    fn llen(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("LLEN", ReadOnly).key(key))
    }

    /// `LINDEX key index`; use `Option<T>` for an index out of range.
    fn lindex<T: FromValue>(&self, key: impl ToArgs, index: i64) -> Self::Out<T> {
        self.run(Cmd::typed("LINDEX", ReadOnly).key(key).arg(index))
    }

    /// `LSET key index value`
    fn lset(&self, key: impl ToArgs, index: i64, value: impl ToArgs) -> Self::Out<()> {
        let cmd = Cmd::typed("LSET", WriteLastWins).key(key);
        self.run(cmd.arg(index).arg(value))
    }

    /// `LREM key count value`: removes up to `count` occurrences (from the head when
    /// positive, the tail when negative, all when 0); returns how many.
    fn lrem(&self, key: impl ToArgs, count: i64, value: impl ToArgs) -> Self::Out<i64> {
        let cmd = Cmd::typed("LREM", lrem_category(count)).key(key);
        self.run(cmd.arg(count).arg(value))
    }

    /// `LTRIM key start stop`: keeps only that range.
    fn ltrim(&self, key: impl ToArgs, start: i64, stop: i64) -> Self::Out<()> {
        let cmd = Cmd::typed("LTRIM", ltrim_category(start, stop)).key(key);
        self.run(cmd.arg(start).arg(stop))
    }

    /// `LINSERT key BEFORE pivot value`; returns the new length (-1: no pivot).
    fn linsert_before(
        &self,
        key: impl ToArgs,
        pivot: impl ToArgs,
        value: impl ToArgs,
    ) -> Self::Out<i64> {
        let cmd = Cmd::typed("LINSERT", WriteAccumulating)
            .key(key)
            .arg("BEFORE");
        self.run(cmd.arg(pivot).arg(value))
    }

    /// `LINSERT key AFTER pivot value`; returns the new length (-1: no pivot).
    fn linsert_after(
        &self,
        key: impl ToArgs,
        pivot: impl ToArgs,
        value: impl ToArgs,
    ) -> Self::Out<i64> {
        let cmd = Cmd::typed("LINSERT", WriteAccumulating)
            .key(key)
            .arg("AFTER");
        self.run(cmd.arg(pivot).arg(value))
    }

    /// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: the moved element (`Option<T>`).
    fn lmove<T: FromValue>(
        &self,
        source: impl ToArgs,
        dest: impl ToArgs,
        from: ListEnd,
        to: ListEnd,
    ) -> Self::Out<T> {
        let cmd = Cmd::typed("LMOVE", WriteAccumulating).key(source).key(dest);
        self.run(cmd.arg(from).arg(to))
    }

    /// `LPOS key element`: the index of the first occurrence (`None` when absent).
    fn lpos(&self, key: impl ToArgs, element: impl ToArgs) -> Self::Out<Option<i64>> {
        self.run(Cmd::typed("LPOS", ReadOnly).key(key).arg(element))
    }

    /// `BLPOP key [key ...] timeout`: `Some((key, element))`, or `None` when `timeout`
    /// passed first (read it as `Option<(K, V)>`). Blocking; `Duration::ZERO` waits forever.
    fn blpop<T: FromValue>(&self, keys: impl ToArgs, timeout: Duration) -> Self::Out<T> {
        let cmd = Cmd::typed("BLPOP", WriteAccumulating).key(keys);
        self.run(cmd.arg(BlockSeconds(timeout)).blocking(timeout))
    }

    /// `BRPOP key [key ...] timeout` (as [`ListCommands::blpop`], from the tail).
    fn brpop<T: FromValue>(&self, keys: impl ToArgs, timeout: Duration) -> Self::Out<T> {
        let cmd = Cmd::typed("BRPOP", WriteAccumulating).key(keys);
        self.run(cmd.arg(BlockSeconds(timeout)).blocking(timeout))
    }

    /// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`: the moved element,
    /// or nil on timeout (`Option<T>`). Blocking.
    fn blmove<T: FromValue>(
        &self,
        source: impl ToArgs,
        dest: impl ToArgs,
        from: ListEnd,
        to: ListEnd,
        timeout: Duration,
    ) -> Self::Out<T> {
        let cmd = Cmd::typed("BLMOVE", WriteAccumulating)
            .key(source)
            .key(dest);
        let cmd = cmd.arg(from).arg(to).arg(BlockSeconds(timeout));
        self.run(cmd.blocking(timeout))
    }

    /// `BRPOPLPUSH source destination timeout` (deprecated by `BLMOVE`; kept for
    /// servers before 6.2). Blocking.
    fn brpoplpush<T: FromValue>(
        &self,
        source: impl ToArgs,
        dest: impl ToArgs,
        timeout: Duration,
    ) -> Self::Out<T> {
        let cmd = Cmd::typed("BRPOPLPUSH", WriteAccumulating)
            .key(source)
            .key(dest);
        self.run(cmd.arg(BlockSeconds(timeout)).blocking(timeout))
    }
}

impl<C: Commands + ?Sized> ListCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        let push = r.lpush("l", ["a", "b"]);
        assert_eq!(line(&push), "LPUSH l a b");
        assert_eq!(keys(&push), ["l"]);
        assert_eq!(line(&r.lpop::<String>("l", None)), "LPOP l");
        assert_eq!(line(&r.rpop::<Vec<String>>("l", Some(3))), "RPOP l 3");
        assert_eq!(line(&r.linsert_after("l", "p", "v")), "LINSERT l AFTER p v");
        let mv = r.lmove::<String>("a", "b", ListEnd::Right, ListEnd::Left);
        assert_eq!(line(&mv), "LMOVE a b RIGHT LEFT");
        assert_eq!(keys(&mv), ["a", "b"]);
        assert_eq!(mv.block_time(), None);
    }

    #[test]
    fn blocking_commands_send_seconds_and_carry_their_block_time() {
        let r = Recorder;
        let half = Duration::from_millis(500);
        let blpop = r.blpop::<Option<(String, String)>>(["a", "b"], half);
        assert_eq!(line(&blpop), "BLPOP a b 0.5");
        assert_eq!(keys(&blpop), ["a", "b"]);
        assert_eq!(blpop.block_time(), Some(half));
        let forever = r.brpop::<Option<(String, String)>>("a", Duration::ZERO);
        assert_eq!(line(&forever), "BRPOP a 0");
        assert_eq!(forever.block_time(), Some(Duration::ZERO));
        let blmove = r.blmove::<Option<String>>(
            "s",
            "d",
            ListEnd::Left,
            ListEnd::Right,
            Duration::from_secs(2),
        );
        assert_eq!(line(&blmove), "BLMOVE s d LEFT RIGHT 2");
        assert_eq!(blmove.block_time(), Some(Duration::from_secs(2)));
        let b = r.brpoplpush::<Option<String>>("s", "d", Duration::from_millis(1250));
        assert_eq!(line(&b), "BRPOPLPUSH s d 1.25");
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.rpush("l", "v").retry_category(), WriteAccumulating);
        assert_eq!(
            r.lpop::<String>("l", None).retry_category(),
            WriteAccumulating
        );
        assert_eq!(r.lrange::<String>("l", 0, -1).retry_category(), ReadOnly);
        assert_eq!(r.lset("l", 0, "v").retry_category(), WriteLastWins);
        assert_eq!(r.lrem("l", 0, "v").retry_category(), WriteLastWins);
        assert_eq!(r.lrem("l", 2, "v").retry_category(), WriteAccumulating);
        assert_eq!(r.ltrim("l", 0, 99).retry_category(), WriteLastWins);
        assert_eq!(r.ltrim("l", -100, -1).retry_category(), WriteLastWins);
        assert_eq!(r.ltrim("l", 1, -1).retry_category(), WriteAccumulating);
        let blpop = r.blpop::<Option<(String, String)>>("l", Duration::from_secs(1));
        assert_eq!(blpop.retry_category(), WriteAccumulating);
    }
}
