//! Credentials that change: a provider every connection asks when it authenticates, so
//! a rotated password or a fresh token is used by the next connection without a
//! restart.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use super::options::Secret;
use crate::error::{Error, Result};

/// A user name (ACL) and its secret, as `AUTH` sends them.
#[derive(Clone)]
pub struct Credentials {
    user: Option<String>,
    password: Secret,
}

impl Credentials {
    /// Credentials of the `default` user (`AUTH <password>`).
    pub fn password(password: impl Into<String>) -> Credentials {
        Credentials {
            user: None,
            password: Secret::new(password),
        }
    }

    /// Credentials of an ACL user (`AUTH <user> <password>`).
    pub fn user(user: impl Into<String>, password: impl Into<String>) -> Credentials {
        Credentials {
            user: Some(user.into()),
            password: Secret::new(password),
        }
    }

    /// The ACL user name, if any.
    pub fn user_name(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The secret (never shown by `Debug`).
    pub fn secret(&self) -> &Secret {
        &self.password
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &self.password)
            .finish()
    }
}

/// Where connections get their credentials: asked whenever one authenticates (the
/// first connection, every reconnect, a new cluster node, a handoff, a subscription or
/// blocking connection, a group member), so credentials that change (a rotated
/// password, a short-lived token) are used without a restart. Set it with
/// [`Options::credentials`](super::Options::credentials); it takes the
/// place of `user`/`password`.
///
/// It runs on the thread that opens the connection, under that connection's connect
/// timeout: keep it quick (cache a token and renew it ahead of time rather than call an
/// identity service here: [`TokenCredentials`](super::TokenCredentials) does that for
/// short-lived tokens). An error fails that connection attempt with the error's kind,
/// and the client tries again with its usual back-off.
///
/// ```
/// use std::sync::Arc;
/// use resilient_redis::config::{Credentials, CredentialsProvider, RotatingCredentials};
/// let current = RotatingCredentials::new(Credentials::user("app", "first-secret"));
/// let provider: Arc<dyn CredentialsProvider> = Arc::new(current.clone());
/// current.set(Credentials::user("app", "second-secret")); // the next connection uses it
/// assert_eq!(provider.credentials().unwrap().user_name(), Some("app"));
/// ```
pub trait CredentialsProvider: Send + Sync + fmt::Debug {
    /// The credentials to authenticate with now.
    fn credentials(&self) -> Result<Credentials>;

    /// A number that grows whenever the credentials change (a token renewed, a password
    /// rotated): when it does, every live connection re-authenticates in place (`AUTH`
    /// through its own queue, so it never interleaves with a caller's command), before
    /// the old credentials stop being accepted. `0` forever (the default): connections
    /// keep the credentials they opened with.
    ///
    /// It must never go back, and must not move before [`credentials`](Self::credentials)
    /// returns the new credentials (the client reads it first, and counts a connection
    /// under the generation it read). Once every connection of a client is on it,
    /// [`ClientEvent::Reauthenticated`](crate::ClientEvent::Reauthenticated) is raised
    /// and [`Client::credentials_generation`](crate::Client::credentials_generation)
    /// returns it: the old credentials may then be revoked.
    fn generation(&self) -> u64 {
        0
    }

    /// The provider's latest failure to obtain new credentials on its own (a token
    /// source that cannot reach its identity service), kept after later successes;
    /// `None` if it never failed, and always for a provider that does not renew by
    /// itself (the default).
    ///
    /// Every client using the provider looks at it at each supervisor tick (50-250 ms)
    /// and raises [`ClientEvent::CredentialsUnavailable`](crate::ClientEvent::CredentialsUnavailable)
    /// once for each new [`sequence`](RenewalFailure::sequence) (several failures
    /// within one tick: the latest, whose `attempt` counts them). A provider lives
    /// below the client and cannot raise the event itself; this is how it is heard.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use resilient_redis::config::{Credentials, CredentialsProvider, Token, TokenCredentials};
    /// use resilient_redis::{Error, ErrorKind};
    /// let mut up = true;
    /// let tokens = TokenCredentials::builder(move || {
    ///     if std::mem::replace(&mut up, false) {
    ///         Ok(Token::new(Credentials::user("app", "t1"), Duration::from_millis(400)))
    ///     } else {
    ///         Err(Error::new(ErrorKind::Connect, "identity service unreachable"))
    ///     }
    /// })
    /// .start()?;
    /// assert!(tokens.renewal_failure().is_none());
    /// // The renewal is due after 300 ms (75 % of the token's life), and fails.
    /// let deadline = Instant::now() + Duration::from_secs(5);
    /// let failure = loop {
    ///     if let Some(failure) = tokens.renewal_failure() {
    ///         break failure;
    ///     }
    ///     assert!(Instant::now() < deadline, "no failure reported");
    ///     std::thread::sleep(Duration::from_millis(20));
    /// };
    /// assert_eq!(failure.error.kind(), ErrorKind::Connect);
    /// assert!(failure.sequence >= 1);
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    fn renewal_failure(&self) -> Option<RenewalFailure> {
        None
    }
}

/// A provider's failure to obtain new credentials on its own (see
/// [`CredentialsProvider::renewal_failure`]).
///
/// ```
/// use resilient_redis::config::RenewalFailure;
/// fn describe(f: &RenewalFailure) -> String {
///     match f.valid_for {
///         Some(left) => format!("renewal failing ({} in a row), {left:?} left", f.attempt),
///         None => format!("no valid credentials: {}", f.error),
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RenewalFailure {
    /// What went wrong (the token source's own error, its kind kept; never a secret).
    pub error: Error,
    /// Failures in a row, this one included (1 after a success).
    pub attempt: u32,
    /// Failures since the provider started: grows by one with each, so an observer
    /// tells a new failure from one it has seen.
    pub sequence: u64,
    /// What the credentials in use had left when it happened; `None` if they had
    /// ended (connections that open now fail, until a renewal succeeds).
    pub valid_for: Option<Duration>,
}

/// The simplest provider: credentials held in memory, replaced with [`set`](Self::set)
/// (a rotated password, a renewed token); clones share them.
#[derive(Clone, Debug)]
pub struct RotatingCredentials(Arc<RwLock<(Credentials, u64)>>);

impl RotatingCredentials {
    /// Starts with `credentials`.
    pub fn new(credentials: Credentials) -> RotatingCredentials {
        RotatingCredentials(Arc::new(RwLock::new((credentials, 0))))
    }

    /// Replaces them: connections opened from now on use the new ones, and live
    /// connections re-authenticate with them in place (see
    /// [`CredentialsProvider::generation`]).
    pub fn set(&self, credentials: Credentials) {
        let mut current = self.0.write();
        current.0 = credentials;
        current.1 += 1;
    }
}

impl CredentialsProvider for RotatingCredentials {
    fn credentials(&self) -> Result<Credentials> {
        Ok(self.0.read().0.clone())
    }

    fn generation(&self) -> u64 {
        self.0.read().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let c = Credentials::user("app", "hunter2");
        let text = format!("{c:?} {:?}", RotatingCredentials::new(c.clone()));
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("app"));
    }

    #[test]
    fn a_rotation_is_seen_by_every_clone() {
        let r = RotatingCredentials::new(Credentials::password("one"));
        let provider: Arc<dyn CredentialsProvider> = Arc::new(r.clone());
        r.set(Credentials::password("two"));
        let got = provider.credentials().unwrap();
        assert_eq!(got.secret().expose(), "two");
        assert_eq!(got.user_name(), None);
    }
}
