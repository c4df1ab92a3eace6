//! A stream's data: entries by id, the last id ever given out, and the node layout
//! that approximate trimming (`MAXLEN ~`) works on; and the id syntax the server
//! parses.
//!
//! The server keeps entries in nodes of up to `stream-node-max-entries` (100) entries
//! and trims approximately only whole nodes, so `XTRIM s MAXLEN ~ 10` on a stream of
//! 50 removes nothing. The fake models nodes by count alone (the server also closes a
//! node at 4096 bytes, which only large entries reach).
//!
//! Owns: ids, entries, trimming. Must never: let the last id go back (an emptied
//! stream keeps it, so a replayed `XADD` with an explicit id is still refused).

use std::collections::BTreeMap;
use std::ops::Bound;

/// An entry id, `<ms>-<seq>`, ordered as the server orders them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub(crate) const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The next id up, `None` past the last possible one.
    pub(crate) fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId { ms: ms + 1, seq: 0 }),
            (ms, seq) => Some(StreamId { ms, seq: seq + 1 }),
        }
    }

    /// The next id down, `None` below `0-0`.
    pub(crate) fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId {
                ms: ms - 1,
                seq: u64::MAX,
            }),
            (ms, seq) => Some(StreamId { ms, seq: seq - 1 }),
        }
    }

    pub(crate) fn text(self) -> String {
        format!("{}-{}", self.ms, self.seq)
    }
}

/// Parses a number the way the server's `string2ull` does: `strtoull` after a plain
/// integer check, so a leading `+` or blanks pass and a `-` does not.
fn parse_u64(s: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(s).ok()?;
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let digits = s.strip_prefix('+').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// An id as written: `<ms>-<seq>`, `<ms>` (the sequence is `missing_seq`), or, when
/// `auto_seq` is allowed (`XADD`), `<ms>-*`, returned with `seq_given` false. `-` and
/// `+` (the smallest and largest ids) only when `strict` is off.
pub(crate) fn parse_id(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    auto_seq: bool,
) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    match arg {
        b"-" | b"+" if strict => return None,
        b"-" => return Some((StreamId::default(), true)),
        b"+" => return Some((StreamId::MAX, true)),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(i) => (&arg[..i], Some(&arg[i + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64(ms)?;
    match seq {
        Some(b"*") if auto_seq => Some((StreamId { ms, seq: 0 }, false)),
        Some(seq) => Some((
            StreamId {
                ms,
                seq: parse_u64(seq)?,
            },
            true,
        )),
        None => Some((
            StreamId {
                ms,
                seq: missing_seq,
            },
            true,
        )),
    }
}

/// What a trim keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Trim {
    /// The newest `n` entries.
    MaxLen(u64),
    /// Entries with an id of at least this.
    MinId(StreamId),
}

/// Field/value pairs of one entry.
pub(crate) type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Clone, Debug)]
struct Entry {
    /// The node the entry was appended to.
    node: u64,
    fields: Fields,
}

/// A stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stream {
    entries: BTreeMap<StreamId, Entry>,
    /// The largest id ever added, kept through deletions.
    pub last_id: StreamId,
    /// The node appended to, and how many entries were appended to it (deleted ones
    /// count: the server does not reuse their room).
    node: u64,
    node_fill: u64,
}

impl Stream {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Appends an entry; `node_max` is `stream-node-max-entries` (0: no limit).
    pub(crate) fn append(&mut self, id: StreamId, fields: Fields, node_max: u64) {
        // A node whose entries were all deleted is gone: the next entry opens another.
        let tail_alive = self
            .entries
            .last_key_value()
            .is_some_and(|(_, e)| e.node == self.node);
        if (node_max > 0 && self.node_fill >= node_max) || (self.node_fill > 0 && !tail_alive) {
            self.node += 1;
            self.node_fill = 0;
        }
        self.node_fill += 1;
        self.last_id = self.last_id.max(id);
        let node = self.node;
        self.entries.insert(id, Entry { node, fields });
    }

    /// Removes one entry; whether it was there.
    pub(crate) fn remove(&mut self, id: StreamId) -> bool {
        self.entries.remove(&id).is_some()
    }

    /// Entries from `start` to `end` (both inclusive), ascending or descending, at most
    /// `count` of them (0: all).
    pub(crate) fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        count: usize,
    ) -> Vec<(StreamId, &Fields)> {
        if start > end {
            return Vec::new();
        }
        let range = self
            .entries
            .range((Bound::Included(start), Bound::Included(end)))
            .map(|(id, e)| (*id, &e.fields));
        let limit = if count == 0 { usize::MAX } else { count };
        if rev {
            range.rev().take(limit).collect()
        } else {
            range.take(limit).collect()
        }
    }

    /// Trims as the server's `streamTrim` does: whole nodes from the oldest while the
    /// rule allows, then (exact trims only) single entries of the next node. `limit`
    /// caps the entries removed (0: none; only approximate trims have one). Returns
    /// how many were removed.
    pub(crate) fn trim(&mut self, rule: Trim, approx: bool, limit: u64) -> u64 {
        let mut removed = 0u64;
        while let Some((&first, e)) = self.entries.first_key_value() {
            let len = self.entries.len() as u64;
            if matches!(rule, Trim::MaxLen(n) if len <= n) {
                break;
            }
            let node = e.node;
            let in_node: Vec<StreamId> = self
                .entries
                .range(first..)
                .take_while(|(_, e)| e.node == node)
                .map(|(id, _)| *id)
                .collect();
            let count = in_node.len() as u64;
            let whole = match rule {
                Trim::MaxLen(n) => len - count >= n,
                Trim::MinId(min) => in_node.last().is_some_and(|last| *last < min),
            };
            if whole {
                if limit > 0 && removed + count > limit {
                    break;
                }
                in_node.iter().for_each(|id| {
                    self.entries.remove(id);
                });
                removed += count;
                continue;
            }
            if approx {
                break;
            }
            for id in in_node {
                let keep = match rule {
                    Trim::MaxLen(n) => self.entries.len() as u64 <= n,
                    Trim::MinId(min) => id >= min,
                };
                if keep {
                    break;
                }
                self.entries.remove(&id);
                removed += 1;
            }
            break;
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    #[test]
    fn ids_parse_like_the_server() {
        assert_eq!(parse_id(b"5", 0, true, true), Some((id(5, 0), true)));
        assert_eq!(
            parse_id(b"5", u64::MAX, false, false).unwrap().0,
            id(5, u64::MAX)
        );
        assert_eq!(parse_id(b"5-*", 0, true, true), Some((id(5, 0), false)));
        assert_eq!(parse_id(b"5-*", 0, true, false), None);
        assert_eq!(parse_id(b"+1-01", 0, true, false).unwrap().0, id(1, 1));
        assert_eq!(parse_id(b"-", 0, false, false).unwrap().0, id(0, 0));
        assert_eq!(parse_id(b"+", 0, true, false), None);
        for bad in [
            &b"-1"[..],
            b"1-",
            b"a",
            b"1-2-3",
            b"18446744073709551616",
            b"",
        ] {
            assert_eq!(parse_id(bad, 0, true, true), None, "{bad:?}");
        }
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(id(1, u64::MAX).next(), Some(id(2, 0)));
        assert_eq!(id(2, 0).prev(), Some(id(1, u64::MAX)));
    }

    #[test]
    fn approximate_trims_remove_whole_nodes_only() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(id(i, 0), Vec::new(), 100);
        }
        assert_eq!(s.trim(Trim::MaxLen(10), true, 0), 200);
        assert_eq!(s.len(), 50);
        assert_eq!(s.trim(Trim::MaxLen(10), true, 0), 0);
        assert_eq!(s.trim(Trim::MaxLen(10), false, 0), 40);
        assert_eq!(s.range(id(0, 0), StreamId::MAX, false, 0)[0].0, id(241, 0));
        assert_eq!(s.trim(Trim::MinId(id(245, 0)), false, 0), 4);
        assert_eq!(s.last_id, id(250, 0));
    }
}
