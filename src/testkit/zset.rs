//! A sorted set's data: members by score, ties by member bytes, as the server orders
//! them.
//!
//! Owns: scores and ranks. Must never: let the two indexes disagree.

use std::collections::{BTreeSet, HashMap};

/// A score with a total order (`f64::total_cmp`) so it can key a sorted set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Score(pub f64);
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A sorted set: members by score, ties by member bytes (the server's order).
#[derive(Clone, Debug, Default)]
pub(crate) struct ZSet {
    scores: HashMap<Vec<u8>, f64>,
    sorted: BTreeSet<(Score, Vec<u8>)>,
}

impl ZSet {
    pub(crate) fn score(&self, m: &[u8]) -> Option<f64> {
        self.scores.get(m).copied()
    }
    /// Sets a member's score; returns whether it is new.
    pub(crate) fn insert(&mut self, m: Vec<u8>, score: f64) -> bool {
        let new = match self.scores.insert(m.clone(), score) {
            Some(old) => {
                self.sorted.remove(&(Score(old), m.clone()));
                false
            }
            None => true,
        };
        self.sorted.insert((Score(score), m));
        new
    }
    pub(crate) fn remove(&mut self, m: &[u8]) -> bool {
        match self.scores.remove(m) {
            Some(old) => {
                self.sorted.remove(&(Score(old), m.to_vec()));
                true
            }
            None => false,
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    /// Members in ascending order.
    pub(crate) fn ascending(&self) -> impl DoubleEndedIterator<Item = (&Vec<u8>, f64)> {
        self.sorted.iter().map(|(s, m)| (m, s.0))
    }
    /// Zero-based rank in ascending order.
    pub(crate) fn rank(&self, m: &[u8]) -> Option<usize> {
        let s = self.score(m)?;
        Some(self.sorted.range(..(Score(s), m.to_vec())).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zset_orders_by_score_then_member() {
        let mut z = ZSet::default();
        z.insert(b"b".to_vec(), 1.0);
        z.insert(b"a".to_vec(), 1.0);
        z.insert(b"c".to_vec(), 0.5);
        let order: Vec<_> = z.ascending().map(|(m, _)| m.clone()).collect();
        assert_eq!(order, [b"c".to_vec(), b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(z.rank(b"b"), Some(2));
    }
}
