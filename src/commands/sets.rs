//! Set commands.
//!
//! `SADD`/`SREM` are idempotent (adding a present member or removing an absent one
//! changes nothing), so `WriteLastWins`; the `*STORE` forms recompute the destination
//! from their sources, so a replay writes the same result. `SPOP` removes a random
//! member: a replay removes another one.

use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};

/// Set commands (`SADD`, `SMEMBERS`, `SINTER` ...), on `Database`, `Batch` and `Transaction`.
pub trait SetCommands: Commands {
    /// `SADD key member [member ...]`; returns how many were added.
    fn sadd(&self, key: impl ToArgs, members: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("SADD", WriteLastWins).key(key).arg(members))
    }

    /// `SREM key member [member ...]`; returns how many were removed.
    fn srem(&self, key: impl ToArgs, members: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("SREM", WriteLastWins).key(key).arg(members))
    }

    /// `SMEMBERS key` as any collection (`HashSet<T>`, `Vec<T>`, `BTreeSet` via `Vec`).
    fn smembers<T: FromValue>(&self, key: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("SMEMBERS", ReadOnly).key(key))
    }

    /// `SISMEMBER key member`
    fn sismember(&self, key: impl ToArgs, member: impl ToArgs) -> Self::Out<bool> {
        self.run(Cmd::typed("SISMEMBER", ReadOnly).key(key).arg(member))
    }

    /// `SMISMEMBER key member [member ...]`: one answer per member, in order.
    fn smismember(&self, key: impl ToArgs, members: impl ToArgs) -> Self::Out<Vec<bool>> {
        self.run(Cmd::typed("SMISMEMBER", ReadOnly).key(key).arg(members))
    }

    /// `SCARD key`: the number of members.
    fn scard(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("SCARD", ReadOnly).key(key))
    }

    /// `SPOP key [count]`: without a count one member (`Option<T>`), with a count a
    /// collection (`Vec<T>`).
    fn spop<T: FromValue>(&self, key: impl ToArgs, count: Option<usize>) -> Self::Out<T> {
        self.run(Cmd::typed("SPOP", WriteAccumulating).key(key).arg(count))
    }

    /// `SRANDMEMBER key [count]`: without a count one member (`Option<T>`); with a
    /// positive count that many distinct members, negative: that many with repeats.
    fn srandmember<T: FromValue>(&self, key: impl ToArgs, count: Option<i64>) -> Self::Out<T> {
        self.run(Cmd::typed("SRANDMEMBER", ReadOnly).key(key).arg(count))
    }

    /// `SINTER key [key ...]`
    fn sinter<T: FromValue>(&self, keys: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("SINTER", ReadOnly).key(keys))
    }

    /// `SUNION key [key ...]`
    fn sunion<T: FromValue>(&self, keys: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("SUNION", ReadOnly).key(keys))
    }

    /// `SDIFF key [key ...]`: members of the first set in none of the others.
    fn sdiff<T: FromValue>(&self, keys: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("SDIFF", ReadOnly).key(keys))
    }

    /// `SINTERSTORE destination key [key ...]`; returns the size of the result.
    fn sinterstore(&self, dest: impl ToArgs, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("SINTERSTORE", WriteLastWins).key(dest).key(keys))
    }

    /// `SUNIONSTORE destination key [key ...]`; returns the size of the result.
    fn sunionstore(&self, dest: impl ToArgs, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("SUNIONSTORE", WriteLastWins).key(dest).key(keys))
    }

    /// `SDIFFSTORE destination key [key ...]`; returns the size of the result.
    fn sdiffstore(&self, dest: impl ToArgs, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("SDIFFSTORE", WriteLastWins).key(dest).key(keys))
    }

    /// `SMOVE source destination member`: `true` when moved.
    ///
    /// `WriteChecked`: a replay finds the member gone from the source and moves nothing.
    fn smove(
        &self,
        source: impl ToArgs,
        dest: impl ToArgs,
        member: impl ToArgs,
    ) -> Self::Out<bool> {
        let cmd = Cmd::typed("SMOVE", WriteChecked).key(source).key(dest);
        self.run(cmd.arg(member))
    }
}

impl<C: Commands + ?Sized> SetCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};
    use std::collections::HashSet;

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        assert_eq!(line(&r.sadd("s", ["a", "b"])), "SADD s a b");
        assert_eq!(line(&r.spop::<Vec<String>>("s", Some(2))), "SPOP s 2");
        assert_eq!(line(&r.spop::<Option<String>>("s", None)), "SPOP s");
        assert_eq!(
            line(&r.srandmember::<Vec<String>>("s", Some(-5))),
            "SRANDMEMBER s -5"
        );
        let store = r.sunionstore("d", ["a", "b"]);
        assert_eq!(line(&store), "SUNIONSTORE d a b");
        assert_eq!(keys(&store), ["d", "a", "b"]);
        let mv = r.smove("a", "b", "m");
        assert_eq!(keys(&mv), ["a", "b"]);
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.sadd("s", "a").retry_category(), WriteLastWins);
        assert_eq!(r.srem("s", "a").retry_category(), WriteLastWins);
        assert_eq!(
            r.smembers::<HashSet<String>>("s").retry_category(),
            ReadOnly
        );
        assert_eq!(
            r.spop::<String>("s", None).retry_category(),
            WriteAccumulating
        );
        assert_eq!(r.smove("a", "b", "m").retry_category(), WriteChecked);
    }
}
