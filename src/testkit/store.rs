//! The data of one fake server: 16 databases of typed values with lazy expiry, and the
//! per-key version counters that give `WATCH` its real semantics.
//!
//! Owns: keys, values, TTLs, versions. Must never: hand out an expired key (expiry is
//! checked on every access, as the server's lazy expiry does), or let a write go
//! unrecorded (every write bumps the key's version, or `EXEC` would miss it).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::stream::Stream;
pub(crate) use super::zset::ZSet;

/// Number of logical databases (`SELECT 0..15`), the server's default.
pub(crate) const DATABASES: usize = 16;

/// A map that keeps insertion order, as the server's small hashes and sets do
/// (listpack encoding), so `HGETALL` and `SMEMBERS` read back in the order written.
#[derive(Clone, Debug, Default)]
pub(crate) struct OrderedMap<V> {
    items: Vec<(Vec<u8>, V)>,
    index: HashMap<Vec<u8>, usize>,
}

impl<V> OrderedMap<V> {
    pub(crate) fn get(&self, k: &[u8]) -> Option<&V> {
        self.index.get(k).map(|&i| &self.items[i].1)
    }
    pub(crate) fn contains(&self, k: &[u8]) -> bool {
        self.index.contains_key(k)
    }
    /// Inserts or replaces; returns whether the field is new.
    pub(crate) fn insert(&mut self, k: Vec<u8>, v: V) -> bool {
        if let Some(&i) = self.index.get(&k) {
            self.items[i].1 = v;
            return false;
        }
        self.index.insert(k.clone(), self.items.len());
        self.items.push((k, v));
        true
    }
    pub(crate) fn remove(&mut self, k: &[u8]) -> Option<V> {
        let i = self.index.remove(k)?;
        let (_, v) = self.items.remove(i);
        for (key, _) in &self.items[i..] {
            if let Some(slot) = self.index.get_mut(key) {
                *slot -= 1;
            }
        }
        Some(v)
    }
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &V)> {
        self.items.iter().map(|(k, v)| (k, v))
    }
}

/// A typed value.
#[derive(Clone, Debug)]
pub(crate) enum Data {
    Str(Vec<u8>),
    Hash(OrderedMap<Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Set(OrderedMap<()>),
    ZSet(ZSet),
    Stream(Stream),
}

impl Data {
    /// The name `TYPE` answers.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Data::Str(_) => "string",
            Data::Hash(_) => "hash",
            Data::List(_) => "list",
            Data::Set(_) => "set",
            Data::ZSet(_) => "zset",
            Data::Stream(_) => "stream",
        }
    }

    fn is_empty_aggregate(&self) -> bool {
        match self {
            // An emptied stream stays, as on the server (its last id must not go back).
            Data::Str(_) | Data::Stream(_) => false,
            Data::Hash(h) => h.is_empty(),
            Data::List(l) => l.is_empty(),
            Data::Set(s) => s.is_empty(),
            Data::ZSet(z) => z.is_empty(),
        }
    }
}

/// A value and its expiry.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub data: Data,
    pub expires: Option<Instant>,
}

/// One logical database.
#[derive(Default)]
pub(crate) struct Db {
    keys: HashMap<Vec<u8>, Entry>,
    /// Version of each key ever written since the last flush. Kept after deletion, so
    /// `WATCH k` notices `DEL k`.
    versions: HashMap<Vec<u8>, u64>,
    clock: u64,
    /// Bumped by `FLUSHDB`/`FLUSHALL`, which touch every watched key at once.
    pub(crate) epoch: u64,
}

impl Db {
    /// The version `WATCH` records for a key: (flush epoch, key version).
    pub(crate) fn version(&mut self, key: &[u8], now: Instant) -> (u64, u64) {
        self.purge(key, now);
        (self.epoch, self.versions.get(key).copied().unwrap_or(0))
    }

    /// Records a write to `key`.
    pub(crate) fn touch(&mut self, key: &[u8]) {
        self.clock += 1;
        let v = self.clock;
        self.versions.insert(key.to_vec(), v);
    }

    /// Lazy expiry: removes `key` if it has expired (a write, as far as WATCH goes).
    pub(crate) fn purge(&mut self, key: &[u8], now: Instant) {
        if let Some(e) = self.keys.get(key) {
            if e.expires.is_some_and(|t| t <= now) {
                self.keys.remove(key);
                self.touch(key);
            }
        }
    }

    /// Removes every expired key (before `KEYS`, `DBSIZE`, `SCAN`-like reads).
    pub(crate) fn purge_all(&mut self, now: Instant) {
        let expired: Vec<Vec<u8>> = self
            .keys
            .iter()
            .filter(|(_, e)| e.expires.is_some_and(|t| t <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            self.keys.remove(&k);
            self.touch(&k);
        }
    }

    /// The live entry at `key`, if any.
    pub(crate) fn get(&mut self, key: &[u8], now: Instant) -> Option<&Entry> {
        self.purge(key, now);
        self.keys.get(key)
    }

    /// The live entry at `key` for writing (records the write).
    pub(crate) fn get_mut(&mut self, key: &[u8], now: Instant) -> Option<&mut Entry> {
        self.purge(key, now);
        if self.keys.contains_key(key) {
            self.touch(key);
        }
        self.keys.get_mut(key)
    }

    /// Whether a live key exists.
    pub(crate) fn exists(&mut self, key: &[u8], now: Instant) -> bool {
        self.get(key, now).is_some()
    }

    /// Stores `data` at `key`, replacing any value and clearing its TTL.
    pub(crate) fn set(&mut self, key: &[u8], data: Data) {
        self.touch(key);
        self.keys.insert(
            key.to_vec(),
            Entry {
                data,
                expires: None,
            },
        );
    }

    /// Stores an entry as is (value and TTL), e.g. when a key migrates between nodes.
    pub(crate) fn put_entry(&mut self, key: Vec<u8>, entry: Entry) {
        self.touch(&key);
        self.keys.insert(key, entry);
    }

    /// Removes `key`; returns the entry if it was live.
    pub(crate) fn remove(&mut self, key: &[u8], now: Instant) -> Option<Entry> {
        self.purge(key, now);
        let e = self.keys.remove(key);
        if e.is_some() {
            self.touch(key);
        }
        e
    }

    /// Deletes `key` if it holds an emptied hash, list, set or sorted set (the server
    /// never keeps an empty aggregate).
    pub(crate) fn drop_if_empty(&mut self, key: &[u8]) {
        if self
            .keys
            .get(key)
            .is_some_and(|e| e.data.is_empty_aggregate())
        {
            self.keys.remove(key);
            self.touch(key);
        }
    }

    /// Live keys (expired ones purged first).
    pub(crate) fn keys(&mut self, now: Instant) -> Vec<Vec<u8>> {
        self.purge_all(now);
        self.keys.keys().cloned().collect()
    }

    /// Number of live keys.
    pub(crate) fn len(&mut self, now: Instant) -> usize {
        self.purge_all(now);
        self.keys.len()
    }

    /// Number of keys that carry a TTL (for `INFO keyspace`).
    pub(crate) fn expiring(&self) -> usize {
        self.keys.values().filter(|e| e.expires.is_some()).count()
    }

    /// Drops everything; watched keys see it through the epoch.
    pub(crate) fn flush(&mut self) {
        self.keys.clear();
        self.versions.clear();
        self.epoch += 1;
    }
}

/// All databases of one server, and the server-wide state commands change under the
/// same lock: the script cache and the configuration.
pub(crate) struct Dbs {
    pub dbs: Vec<Db>,
    /// SHA-1 digests `SCRIPT LOAD` has seen (the fake keeps no Lua, only the names).
    pub scripts: BTreeSet<String>,
    /// `CONFIG GET`/`SET` parameters, by lowercase name.
    pub config: BTreeMap<String, String>,
}

/// The store, locked as a whole: every command runs under this lock, so a command (and
/// a whole `EXEC`) is atomic like on the single-threaded server.
pub(crate) struct Store {
    pub data: Mutex<Dbs>,
    /// Signalled after a command that may serve a blocked one (a list push, a stream
    /// entry, a sorted-set add), so waiters look again at once rather than at their
    /// next poll.
    pub pushed: Condvar,
    /// Connections blocked in a command right now (`INFO clients`).
    pub blocked: AtomicUsize,
}

impl Store {
    pub(crate) fn new() -> Store {
        Store {
            data: Mutex::new(Dbs {
                dbs: (0..DATABASES).map(|_| Db::default()).collect(),
                scripts: BTreeSet::new(),
                config: super::cmd_config::defaults(),
            }),
            pushed: Condvar::new(),
            blocked: AtomicUsize::new(0),
        }
    }
}

/// Typed access to a key, with the server's WRONGTYPE rule. Each `*_ref` reads,
/// each `*_mut` writes (creating the value when `create` is true).
macro_rules! typed_access {
    ($get:ident, $get_mut:ident, $variant:ident, $ty:ty, $new:expr) => {
        impl Db {
            /// Reads a value of this type: `Err(())` for WRONGTYPE.
            #[allow(dead_code)]
            pub(crate) fn $get(&mut self, key: &[u8], now: Instant) -> Result<Option<&$ty>, ()> {
                match self.get(key, now) {
                    None => Ok(None),
                    Some(Entry {
                        data: Data::$variant(v),
                        ..
                    }) => Ok(Some(v)),
                    Some(_) => Err(()),
                }
            }

            /// Writes a value of this type: `Err(())` for WRONGTYPE; `Ok(None)` when
            /// absent and not created.
            #[allow(dead_code)]
            pub(crate) fn $get_mut(
                &mut self,
                key: &[u8],
                now: Instant,
                create: bool,
            ) -> Result<Option<&mut $ty>, ()> {
                self.purge(key, now);
                match self.keys.get(key).map(|e| &e.data) {
                    Some(Data::$variant(_)) => {}
                    Some(_) => return Err(()),
                    None if create => self.set(key, Data::$variant($new)),
                    None => return Ok(None),
                }
                self.touch(key);
                match self.keys.get_mut(key) {
                    Some(Entry {
                        data: Data::$variant(v),
                        ..
                    }) => Ok(Some(v)),
                    _ => Err(()),
                }
            }
        }
    };
}

typed_access!(str_ref, str_mut, Str, Vec<u8>, Vec::new());
typed_access!(
    hash_ref,
    hash_mut,
    Hash,
    OrderedMap<Vec<u8>>,
    OrderedMap::default()
);
typed_access!(list_ref, list_mut, List, VecDeque<Vec<u8>>, VecDeque::new());
typed_access!(set_ref, set_mut, Set, OrderedMap<()>, OrderedMap::default());
typed_access!(zset_ref, zset_mut, ZSet, ZSet, ZSet::default());
typed_access!(stream_ref, stream_mut, Stream, Stream, Stream::default());

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn expiry_is_lazy_and_counts_as_a_write() {
        let mut db = Db::default();
        let now = Instant::now();
        db.set(b"k", Data::Str(b"v".to_vec()));
        db.get_mut(b"k", now).unwrap().expires = Some(now + Duration::from_millis(5));
        let watched = db.version(b"k", now);
        assert!(db.exists(b"k", now));
        let later = now + Duration::from_millis(6);
        assert!(!db.exists(b"k", later));
        assert_ne!(db.version(b"k", later), watched);
    }

    #[test]
    fn ordered_map_keeps_insertion_order_through_removal() {
        let mut m = OrderedMap::default();
        for k in ["a", "b", "c", "d"] {
            m.insert(k.as_bytes().to_vec(), ());
        }
        m.remove(b"b");
        let keys: Vec<_> = m.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, [b"a".to_vec(), b"c".to_vec(), b"d".to_vec()]);
        assert!(m.contains(b"d"));
        assert_eq!(m.len(), 3);
    }
}
