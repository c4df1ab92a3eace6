//! Stream commands, and `StreamEntry` for reading entries.
//!
//! `XADD` with an automatic id (`*`, `<ms>-*`) appends a new entry on every replay,
//! so `WriteAccumulating`; with an explicit id a replay is refused by the server (the
//! id must grow), so `WriteChecked`.

use std::time::Duration;

use super::time_args::millis_ceil;
use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// One stream entry: its id and its field/value pairs in order. `V` is the type
/// values convert to (`String` by default; `Vec<u8>` for binary values, `Value` to
/// keep them as sent).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StreamEntry<V = String> {
    /// The entry id (`1700000000000-0`).
    pub id: String,
    /// The field/value pairs, in the order they were added.
    pub fields: Vec<(String, V)>,
}

impl<V> StreamEntry<V> {
    /// The value of the first field called `name`.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.fields.iter().find(|(f, _)| f == name).map(|(_, v)| v)
    }
}

/// An entry is `[id, [field, value, ...]]` in RESP2 and RESP3 alike; the fields are
/// nil for an entry deleted while still pending (`XREADGROUP`, `XAUTOCLAIM`).
impl<V: FromValue> FromValue for StreamEntry<V> {
    fn from_value(v: Value) -> Result<StreamEntry<V>> {
        let (id, fields): (String, Vec<(String, V)>) =
            FromValue::from_value(v).map_err(|e| match e.kind() {
                ErrorKind::TypeMismatch => Error::new(
                    ErrorKind::TypeMismatch,
                    format!("expected a stream entry: {}", e.detail()),
                ),
                // An error reply keeps its own classification.
                _ => e,
            })?;
        Ok(StreamEntry { id, fields })
    }
}

/// Stream commands (`XADD`, `XRANGE`, `XREAD BLOCK` ...), on `Database`, `Batch` and
/// `Transaction`.
pub trait StreamCommands: Commands {
    /// `XADD key id field value [field value ...]`: returns the id of the new entry.
    /// `id` is `"*"` for one the server picks.
    fn xadd(&self, key: impl ToArgs, id: &str, fields: impl ToArgs) -> Self::Out<String> {
        let category = if id.contains('*') {
            WriteAccumulating
        } else {
            WriteChecked
        };
        self.run(Cmd::typed("XADD", category).key(key).arg(id).arg(fields))
    }

    /// `XLEN key`: the number of entries.
    fn xlen(&self, key: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("XLEN", ReadOnly).key(key))
    }

    /// `XRANGE key start end [COUNT count]` (`"-"` and `"+"` for the ends), as
    /// `Vec<StreamEntry>` (or any type an entry list converts to).
    fn xrange<T: FromValue>(
        &self,
        key: impl ToArgs,
        start: &str,
        end: &str,
        count: Option<usize>,
    ) -> Self::Out<T> {
        let mut cmd = Cmd::typed("XRANGE", ReadOnly).key(key).arg(start).arg(end);
        if let Some(n) = count {
            cmd = cmd.arg("COUNT").arg(n);
        }
        self.run(cmd)
    }

    /// `XDEL key id [id ...]`; returns how many were deleted.
    fn xdel(&self, key: impl ToArgs, ids: impl ToArgs) -> Self::Out<i64> {
        self.run(Cmd::typed("XDEL", WriteLastWins).key(key).arg(ids))
    }

    /// `XTRIM key MAXLEN [~] maxlen`: keeps the newest `maxlen` entries (about that
    /// many with `approximate`, which is cheaper); returns how many were removed.
    fn xtrim_maxlen(&self, key: impl ToArgs, maxlen: usize, approximate: bool) -> Self::Out<i64> {
        let cmd = Cmd::typed("XTRIM", WriteLastWins).key(key).arg("MAXLEN");
        let cmd = if approximate { cmd.arg("~") } else { cmd };
        self.run(cmd.arg(maxlen))
    }

    /// `XREAD [COUNT n] STREAMS key... id...`: entries after each id, per stream.
    ///
    /// Read it as `Option<Vec<(String, Vec<StreamEntry>)>>`: nil (no new entries)
    /// becomes `None`; RESP2's array of pairs and RESP3's map both convert.
    fn xread<T: FromValue>(
        &self,
        keys: impl ToArgs,
        ids: impl ToArgs,
        count: Option<usize>,
    ) -> Self::Out<T> {
        let mut cmd = Cmd::typed("XREAD", ReadOnly);
        if let Some(n) = count {
            cmd = cmd.arg("COUNT").arg(n);
        }
        self.run(cmd.arg("STREAMS").key(keys).arg(ids))
    }

    /// `XREAD [COUNT n] BLOCK ms STREAMS key... id...`: as [`StreamCommands::xread`],
    /// waiting up to `block` for entries (`"$"` as the id: only entries added from now
    /// on); `None` when none came. Blocking; `Duration::ZERO` waits forever.
    fn xread_block<T: FromValue>(
        &self,
        keys: impl ToArgs,
        ids: impl ToArgs,
        block: Duration,
        count: Option<usize>,
    ) -> Self::Out<T> {
        let mut cmd = Cmd::typed("XREAD", ReadOnly);
        if let Some(n) = count {
            cmd = cmd.arg("COUNT").arg(n);
        }
        let cmd = cmd.arg("BLOCK").arg(millis_ceil(block));
        self.run(cmd.arg("STREAMS").key(keys).arg(ids).blocking(block))
    }
}

impl<C: Commands + ?Sized> StreamCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn frames_and_keys() {
        let r = Recorder;
        let add = r.xadd("s", "*", [("f", "v"), ("g", "w")]);
        assert_eq!(line(&add), "XADD s * f v g w");
        assert_eq!(keys(&add), ["s"]);
        assert_eq!(
            line(&r.xtrim_maxlen("s", 100, true)),
            "XTRIM s MAXLEN ~ 100"
        );
        assert_eq!(
            line(&r.xrange::<Value>("s", "-", "+", Some(10))),
            "XRANGE s - + COUNT 10"
        );
        let read =
            r.xread_block::<Value>(["a", "b"], ["0", "$"], Duration::from_millis(1500), Some(5));
        assert_eq!(line(&read), "XREAD COUNT 5 BLOCK 1500 STREAMS a b 0 $");
        assert_eq!(keys(&read), ["a", "b"]);
        assert_eq!(read.block_time(), Some(Duration::from_millis(1500)));
        let plain = r.xread::<Value>("a", "0", None);
        assert_eq!(line(&plain), "XREAD STREAMS a 0");
        assert_eq!(plain.block_time(), None);
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(
            r.xadd("s", "*", ("f", 1)).retry_category(),
            WriteAccumulating
        );
        assert_eq!(
            r.xadd("s", "5-*", ("f", 1)).retry_category(),
            WriteAccumulating
        );
        assert_eq!(r.xadd("s", "5-1", ("f", 1)).retry_category(), WriteChecked);
        assert_eq!(r.xlen("s").retry_category(), ReadOnly);
        assert_eq!(r.xdel("s", "1-0").retry_category(), WriteLastWins);
    }

    #[test]
    fn entries_convert_including_deleted_ones() {
        let v = Value::Array(vec![
            bulk("1-0"),
            Value::Array(vec![bulk("f"), bulk("v"), bulk("g"), bulk("w")]),
        ]);
        let e: StreamEntry = FromValue::from_value(v).unwrap();
        assert_eq!(e.id, "1-0");
        assert_eq!(e.get("g").map(String::as_str), Some("w"));
        let deleted = Value::Array(vec![bulk("2-0"), Value::Nil]);
        let e: StreamEntry<Vec<u8>> = FromValue::from_value(deleted).unwrap();
        assert!(e.fields.is_empty());
        let bad = StreamEntry::<String>::from_value(Value::Int(3)).unwrap_err();
        assert_eq!(bad.kind(), ErrorKind::TypeMismatch);
    }
}
