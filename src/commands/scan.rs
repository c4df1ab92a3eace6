//! Iterators over what `SCAN`, `HSCAN`, `SSCAN` and `ZSCAN` return, cursor handled
//! inside: [`Database::scan_iter`] walks the whole keyspace (every master of a cluster
//! in turn, each with its own cursor; the one server elsewhere), the others walk one
//! key's fields or members.
//!
//! Pages are fetched as the iterator is read, one call (with the handle's timeout)
//! each; an error ends the iteration after it is yielded.

use std::collections::VecDeque;
use std::marker::PhantomData;

use super::database::{convert, Database};
use super::from_value::FromValue;
use super::{retrying, Cmd, RetryCategory, ToArgs};
use crate::client::walk::KeyspaceWalk;
use crate::connection::CallTimeout;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// `MATCH`, `COUNT` and `TYPE` of a scan. Unset, the server's defaults apply (every
/// key, about 10 per page, every type).
///
/// ```
/// use resilient_redis::ScanOptions;
/// let options = ScanOptions::default().pattern("maint:job:*").count(500);
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    pattern: Option<Vec<u8>>,
    count: Option<usize>,
    key_type: Option<String>,
}

impl ScanOptions {
    /// `MATCH pattern`: only keys (fields, members) matching this glob-style pattern.
    /// The server filters each page after reading it, so pages may come back empty.
    pub fn pattern(mut self, pattern: impl AsRef<[u8]>) -> ScanOptions {
        self.pattern = Some(pattern.as_ref().to_vec());
        self
    }

    /// `COUNT n`: how much work the server does per page (a hint, not a page size).
    pub fn count(mut self, count: usize) -> ScanOptions {
        self.count = Some(count);
        self
    }

    /// `TYPE type` (`string`, `hash`, `list`, ...): keys of that type only
    /// ([`Database::scan_iter`] only; the servers refuse it for a key's fields).
    pub fn key_type(mut self, key_type: impl Into<String>) -> ScanOptions {
        self.key_type = Some(key_type.into());
        self
    }

    /// The arguments after the cursor.
    fn args(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(p) = &self.pattern {
            out.push(b"MATCH".to_vec());
            out.push(p.clone());
        }
        if let Some(n) = self.count {
            out.push(b"COUNT".to_vec());
            out.push(n.to_string().into_bytes());
        }
        if let Some(t) = &self.key_type {
            out.push(b"TYPE".to_vec());
            out.push(t.clone().into_bytes());
        }
        out
    }
}

/// Where the pages come from.
enum Source {
    /// The whole keyspace.
    Keyspace(Box<KeyspaceWalk>),
    /// One key's fields (`HSCAN`), members (`SSCAN`) or members and scores (`ZSCAN`).
    Key {
        command: &'static str,
        key: Vec<u8>,
        cursor: u64,
        started: bool,
    },
}

/// An iterator over scanned keys, fields or members, converted to `T` (see
/// [`Database::scan_iter`], [`Database::hscan_iter`], [`Database::sscan_iter`],
/// [`Database::zscan_iter`]). Each `next` that needs a new page makes one call; an
/// error is yielded once, and ends the iteration.
pub struct ScanIter<T> {
    db: Database,
    source: Source,
    options: Result<Vec<Vec<u8>>>,
    buffer: VecDeque<Value>,
    /// Elements per item: 1 (keys, members) or 2 (field and value, member and score).
    width: usize,
    done: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ScanIter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanIter")
            .field("buffered", &self.buffer.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<T: FromValue> ScanIter<T> {
    fn new(db: &Database, source: Source, options: Result<Vec<Vec<u8>>>, width: usize) -> Self {
        ScanIter {
            db: db.clone(),
            source,
            options,
            buffer: VecDeque::new(),
            width,
            done: false,
            _t: PhantomData,
        }
    }

    /// Fetches the next page into the buffer; `false` when there is none.
    fn fetch(&mut self) -> Result<bool> {
        let options = self.options.as_ref().map_err(Clone::clone)?;
        match &mut self.source {
            Source::Keyspace(walk) => {
                // Each attempt a call of its own; a retrying handle retries a page as
                // the read it is (the walk re-reads the map itself in between).
                let (db, timeout) = (&self.db, self.db.timeout());
                let mut page = || {
                    let call = CallTimeout::starting_now(timeout);
                    db.router().scan_page(walk, options, call)
                };
                let page = match db.retry_policy() {
                    Some(policy) => retrying::attempts(policy, RetryCategory::ReadOnly, page)?,
                    None => page()?,
                };
                match page {
                    Some(keys) => self.buffer.extend(keys),
                    None => return Ok(false),
                }
            }
            Source::Key {
                command,
                key,
                cursor,
                started,
            } => {
                if *started && *cursor == 0 {
                    return Ok(false);
                }
                let mut cmd = Cmd::typed(command, RetryCategory::ReadOnly)
                    .key(key.as_slice())
                    .arg(*cursor);
                for a in options {
                    cmd.push_arg(a.as_slice());
                }
                let (next, items): (String, Vec<Value>) = self.db.query(&cmd)?;
                *cursor = next.parse().map_err(|_| {
                    Error::new(ErrorKind::Protocol, "a cursor that is not a number")
                        .with_command(*command)
                })?;
                *started = true;
                if items.len() % self.width != 0 {
                    return Err(Error::new(ErrorKind::Protocol, "an odd number of elements")
                        .with_command(*command));
                }
                self.buffer.extend(items);
            }
        }
        Ok(true)
    }
}

impl<T: FromValue> Iterator for ScanIter<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        while self.buffer.len() < self.width {
            if self.done {
                return None;
            }
            match self.fetch() {
                Ok(true) => {}
                Ok(false) => self.done = true,
                Err(e) => {
                    self.done = true;
                    self.buffer.clear();
                    return Some(Err(e));
                }
            }
        }
        let value = if self.width == 1 {
            self.buffer.pop_front()?
        } else {
            Value::Array(self.buffer.drain(..self.width).collect())
        };
        Some(convert(value, "SCAN"))
    }
}

impl<T: FromValue> std::iter::FusedIterator for ScanIter<T> {}

impl Database {
    /// Every key of the deployment, as `SCAN` finds them, cursors handled inside:
    /// in a cluster every master in turn with its own cursor (through failovers and
    /// resharding), elsewhere the one server.
    ///
    /// Guarantee: every key present for the whole iteration is returned at least
    /// once; a key may come more than once (after a failover or a migration mid-way,
    /// a node's keys are read again), and one created or deleted meanwhile may or may
    /// not come. A slot the walk cannot confirm (its owner kept changing, a migration
    /// that never ends) ends it with an error rather than a silent gap.
    ///
    /// In a cluster, `scan(cursor, ..)` with a cursor of its own is refused (a cursor
    /// walks one node): this is the iterator to use there.
    ///
    /// ```no_run
    /// use resilient_redis::prelude::*;
    /// use resilient_redis::ScanOptions;
    /// let db = Client::connect("redis://127.0.0.1:7000")?.database();
    /// for key in db.scan_iter::<String>(ScanOptions::default().pattern("maint:job:*").count(500)) {
    ///     db.del(key?)?;
    /// }
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn scan_iter<T: FromValue>(&self, options: ScanOptions) -> ScanIter<T> {
        let source = Source::Keyspace(Box::default());
        ScanIter::new(self, source, Ok(options.args()), 1)
    }

    /// Every field and value of the hash at `key` (`HSCAN`), as `(field, value)`.
    ///
    /// The server's guarantee holds: every field present throughout is returned. A
    /// cursor belongs to one server process, though: if the key moves to another node
    /// mid-iteration (resharding) or its master fails over, the iteration goes on there
    /// with the old cursor and may skip fields; read again to be sure after either.
    /// (The same holds for `sscan_iter` and `zscan_iter`; `scan_iter` has no such gap.)
    pub fn hscan_iter<F: FromValue, V: FromValue>(
        &self,
        key: impl ToArgs,
        options: ScanOptions,
    ) -> ScanIter<(F, V)> {
        self.key_scan("HSCAN", key, options, 2)
    }

    /// Every member of the set at `key` (`SSCAN`).
    pub fn sscan_iter<T: FromValue>(&self, key: impl ToArgs, options: ScanOptions) -> ScanIter<T> {
        self.key_scan("SSCAN", key, options, 1)
    }

    /// Every member of the sorted set at `key` with its score (`ZSCAN`).
    pub fn zscan_iter<T: FromValue>(
        &self,
        key: impl ToArgs,
        options: ScanOptions,
    ) -> ScanIter<(T, f64)> {
        self.key_scan("ZSCAN", key, options, 2)
    }

    fn key_scan<T: FromValue>(
        &self,
        command: &'static str,
        key: impl ToArgs,
        options: ScanOptions,
        width: usize,
    ) -> ScanIter<T> {
        let args = match options.key_type {
            Some(_) => Err(Error::new(
                ErrorKind::InvalidInput,
                "TYPE applies to SCAN only, not to a key's fields or members",
            )
            .with_command(command)),
            None => Ok(options.args()),
        };
        // The key written as one argument, as `ToArgs` writes it.
        let key = Cmd::new("").arg(key);
        let key = key.argv().first().map(|k| k.to_vec()).unwrap_or_default();
        let source = Source::Key {
            command,
            key,
            cursor: 0,
            started: false,
        };
        ScanIter::new(self, source, args, width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_arguments_in_the_servers_order() {
        let words = |o: &ScanOptions| -> Vec<String> {
            o.args()
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        };
        assert!(words(&ScanOptions::default()).is_empty());
        let all = ScanOptions::default()
            .key_type("hash")
            .count(500)
            .pattern("a:*");
        assert_eq!(
            words(&all),
            ["MATCH", "a:*", "COUNT", "500", "TYPE", "hash"]
        );
    }
}
