//! `AuthCensus`: which credentials generation each open connection of a deployment
//! authenticated with, so the client can say when no connection holds old credentials
//! any more (the moment the old ones may be revoked).
//!
//! Owns: the count of connections per generation, from the moment a connection reads
//! the provider's generation (before it dials) to the moment it closes. Must never:
//! report a generation some open connection is not on (it may report an older one: a
//! connection enrolled at `g` may in fact hold newer credentials).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::CredentialsProvider;

/// Open connections per credentials generation, for one deployment.
#[derive(Debug, Default)]
pub(crate) struct AuthCensus {
    by_generation: Mutex<BTreeMap<u64, usize>>,
}

impl AuthCensus {
    /// Counts a connection about to authenticate. The generation is read under the
    /// census lock, so a [`floor`](Self::floor) taken meanwhile either sees this
    /// connection or reads a generation no newer than the one it gets.
    pub(crate) fn enroll(
        self: &Arc<Self>,
        provider: Option<&Arc<dyn CredentialsProvider>>,
    ) -> Enrolled {
        let mut counts = self.by_generation.lock();
        let generation = provider.map_or(0, |p| p.generation());
        *counts.entry(generation).or_insert(0) += 1;
        Enrolled {
            census: self.clone(),
            generation: Mutex::new(Some(generation)),
        }
    }

    /// The generation every open connection is on at least (the provider's own when
    /// none is open, as the next connection takes it), and how many are open.
    pub(crate) fn floor(&self, provider: &dyn CredentialsProvider) -> (u64, usize) {
        let counts = self.by_generation.lock();
        let current = provider.generation();
        let oldest = counts.keys().next().copied().unwrap_or(current);
        (oldest.min(current), counts.values().sum())
    }
}

/// One connection's place in the census; it leaves when the connection closes (or,
/// at the latest, when this is dropped).
#[derive(Debug)]
pub(crate) struct Enrolled {
    census: Arc<AuthCensus>,
    /// `None` once left.
    generation: Mutex<Option<u64>>,
}

impl Enrolled {
    /// The generation this connection authenticated with (`None` once closed).
    pub(crate) fn generation(&self) -> Option<u64> {
        *self.generation.lock()
    }

    /// The connection re-authenticated with the credentials of `to`.
    pub(crate) fn advance(&self, to: u64) {
        let mut mine = self.generation.lock();
        let Some(from) = *mine else {
            return;
        };
        if to <= from {
            return;
        }
        let mut counts = self.census.by_generation.lock();
        take(&mut counts, from);
        *counts.entry(to).or_insert(0) += 1;
        *mine = Some(to);
    }

    /// The connection closed. Idempotent.
    pub(crate) fn leave(&self) {
        let mut mine = self.generation.lock();
        if let Some(from) = mine.take() {
            take(&mut self.census.by_generation.lock(), from);
        }
    }
}

impl Drop for Enrolled {
    fn drop(&mut self) {
        self.leave();
    }
}

fn take(counts: &mut BTreeMap<u64, usize>, generation: u64) {
    if let Some(n) = counts.get_mut(&generation) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(&generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Credentials, RotatingCredentials};

    #[test]
    fn the_floor_is_the_oldest_open_connection_and_never_ahead_of_the_provider() {
        let tokens = RotatingCredentials::new(Credentials::password("one"));
        let provider: Arc<dyn CredentialsProvider> = Arc::new(tokens.clone());
        let census = Arc::new(AuthCensus::default());
        assert_eq!(census.floor(&*provider), (0, 0));
        let a = census.enroll(Some(&provider));
        let b = census.enroll(Some(&provider));
        tokens.set(Credentials::password("two"));
        // Both still on 0: the provider moved, the connections did not.
        assert_eq!(census.floor(&*provider), (0, 2));
        a.advance(1);
        assert_eq!(census.floor(&*provider), (0, 2));
        b.advance(1);
        assert_eq!(census.floor(&*provider), (1, 2));
        // A connection opened now takes the new generation; one that closes leaves.
        let c = census.enroll(Some(&provider));
        assert_eq!(c.generation(), Some(1));
        a.leave();
        a.leave();
        drop(b);
        assert_eq!(census.floor(&*provider), (1, 1));
        // Advancing a closed connection changes nothing; nor does going backwards.
        a.advance(5);
        c.advance(0);
        assert_eq!(census.floor(&*provider), (1, 1));
        drop(c);
        tokens.set(Credentials::password("three"));
        assert_eq!(census.floor(&*provider), (2, 0));
    }
}
