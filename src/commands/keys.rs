//! Generic key commands: deletion, existence, expiry, type, renaming, iteration.

use std::time::{Duration, SystemTime};

use super::time_args::{millis_ceil, seconds_ceil, unix_millis, unix_seconds};
use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};

/// Key commands (`DEL`, `EXPIRE`, `SCAN` ...), on `Database`, `Batch` and `Transaction`.
pub trait KeyCommands: Commands {
    /// `DEL key [key ...]`; returns how many were removed.
    fn del(&self, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("DEL", WriteLastWins).key(keys))
    }

    /// `UNLINK key [key ...]` (deletes, freeing memory in the background).
    fn unlink(&self, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("UNLINK", WriteLastWins).key(keys))
    }

    /// `EXISTS key [key ...]`; returns how many exist (a key given twice counts twice).
    fn exists(&self, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("EXISTS", ReadOnly).key(keys))
    }

    /// `EXPIRE key seconds` (rounded up to whole seconds); `true` when the key exists.
    fn expire(&self, key: impl ToArgs, ttl: Duration) -> Self::Out<bool> {
        let cmd = Cmd::typed("EXPIRE", WriteLastWins).key(key);
        self.run(cmd.arg(seconds_ceil(ttl)))
    }

    /// `PEXPIRE key ms` (rounded up to milliseconds); `true` when the key exists.
    fn pexpire(&self, key: impl ToArgs, ttl: Duration) -> Self::Out<bool> {
        let cmd = Cmd::typed("PEXPIRE", WriteLastWins).key(key);
        self.run(cmd.arg(millis_ceil(ttl)))
    }

    /// `EXPIREAT key unix-seconds`; `true` when the key exists.
    fn expire_at(&self, key: impl ToArgs, at: SystemTime) -> Self::Out<bool> {
        let cmd = Cmd::typed("EXPIREAT", WriteLastWins).key(key);
        self.run(cmd.arg(unix_seconds(at)))
    }

    /// `PEXPIREAT key unix-ms`; `true` when the key exists.
    fn pexpire_at(&self, key: impl ToArgs, at: SystemTime) -> Self::Out<bool> {
        let cmd = Cmd::typed("PEXPIREAT", WriteLastWins).key(key);
        self.run(cmd.arg(unix_millis(at)))
    }

    /// `TTL key` in seconds: `-1` without expiry, `-2` when the key does not exist.
    fn ttl(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("TTL", ReadOnly).key(key))
    }

    /// `PTTL key` in milliseconds: `-1` without expiry, `-2` when the key does not exist.
    fn pttl(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("PTTL", ReadOnly).key(key))
    }

    /// `PERSIST key`: removes the expiry; `true` when there was one.
    fn persist(&self, key: impl ToArgs) -> Self::Out<bool> {
        self.run(Cmd::typed("PERSIST", WriteLastWins).key(key))
    }

    /// `TYPE key`: `string`, `list`, `set`, `zset`, `hash`, `stream`, or `none`.
    fn key_type(&self, key: impl ToArgs) -> Self::Out<String> {
        self.run(Cmd::typed("TYPE", ReadOnly).key(key))
    }

    /// `RENAME key newkey`.
    ///
    /// `WriteChecked`: a replay after the first run succeeded finds no source key and
    /// fails with an error instead of changing anything.
    fn rename(&self, key: impl ToArgs, new_key: impl ToArgs) -> Self::Out<()> {
        self.run(Cmd::typed("RENAME", WriteChecked).key(key).key(new_key))
    }

    /// `RENAMENX key newkey`: `true` when renamed (the new name was free).
    fn rename_nx(&self, key: impl ToArgs, new_key: impl ToArgs) -> Self::Out<bool> {
        self.run(Cmd::typed("RENAMENX", WriteChecked).key(key).key(new_key))
    }

    /// `COPY source destination [REPLACE]`: `true` when copied.
    fn copy(&self, source: impl ToArgs, dest: impl ToArgs, replace: bool) -> Self::Out<bool> {
        // Without REPLACE a replay finds the destination taken and copies nothing.
        let category = if replace { WriteLastWins } else { WriteChecked };
        let cmd = Cmd::typed("COPY", category).key(source).key(dest);
        self.run(if replace { cmd.arg("REPLACE") } else { cmd })
    }

    /// `KEYS pattern`: every matching key at once (in a cluster, every master's,
    /// together). Blocks each server while it runs on big databases; prefer
    /// [`Database::scan_iter`](crate::Database::scan_iter).
    fn keys<T: FromValue>(&self, pattern: impl ToArgs) -> Self::Out<Vec<T>> {
        self.run(Cmd::typed("KEYS", ReadOnly).arg(pattern))
    }

    /// `SCAN cursor [MATCH pattern] [COUNT count]`: the next cursor and a page of keys.
    /// Start at cursor 0; the iteration is complete when the returned cursor is 0.
    ///
    /// A cursor walks one server: in a cluster this is refused with
    /// `ErrorKind::InvalidInput` (it would read one node and end as if it had read
    /// them all). [`Database::scan_iter`](crate::Database::scan_iter) walks every
    /// master, anywhere.
    fn scan<T: FromValue>(
        &self,
        cursor: u64,
        pattern: Option<&str>,
        count: Option<usize>,
    ) -> Self::Out<(u64, Vec<T>)> {
        let mut cmd = Cmd::typed("SCAN", ReadOnly).arg(cursor);
        if let Some(p) = pattern {
            cmd = cmd.arg("MATCH").arg(p);
        }
        if let Some(n) = count {
            cmd = cmd.arg("COUNT").arg(n);
        }
        self.run(cmd)
    }

    /// `TOUCH key [key ...]`: updates last access times; returns how many exist.
    fn touch(&self, keys: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("TOUCH", ReadOnly).key(keys))
    }
}

impl<C: Commands + ?Sized> KeyCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};
    use std::time::UNIX_EPOCH;

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        let del = r.del(["a", "b"]);
        assert_eq!(line(&del), "DEL a b");
        assert_eq!(keys(&del), ["a", "b"]);
        assert_eq!(
            line(&r.expire("k", Duration::from_millis(1500))),
            "EXPIRE k 2"
        );
        assert_eq!(
            line(&r.pexpire("k", Duration::from_millis(1500))),
            "PEXPIRE k 1500"
        );
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_500);
        assert_eq!(line(&r.expire_at("k", at)), "EXPIREAT k 1700000000");
        assert_eq!(line(&r.pexpire_at("k", at)), "PEXPIREAT k 1700000000500");
        let rename = r.rename("a", "b");
        assert_eq!(keys(&rename), ["a", "b"]);
        assert_eq!(line(&r.copy("a", "b", true)), "COPY a b REPLACE");
        assert_eq!(
            line(&r.scan::<String>(7, Some("p:*"), Some(100))),
            "SCAN 7 MATCH p:* COUNT 100"
        );
        assert_eq!(line(&r.scan::<String>(0, None, None)), "SCAN 0");
        assert!(keys(&r.keys::<String>("*")).is_empty());
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.del("k").retry_category(), WriteLastWins);
        assert_eq!(r.exists("k").retry_category(), ReadOnly);
        assert_eq!(
            r.expire("k", Duration::from_secs(1)).retry_category(),
            WriteLastWins
        );
        assert_eq!(r.rename_nx("a", "b").retry_category(), WriteChecked);
        assert_eq!(r.copy("a", "b", false).retry_category(), WriteChecked);
        assert_eq!(r.scan::<String>(0, None, None).retry_category(), ReadOnly);
    }
}
