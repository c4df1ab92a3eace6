//! Short-lived tokens renewed ahead of their end: [`TokenCredentials`], the streaming
//! form of a [`CredentialsProvider`].
//!
//! Owns: the `rr-token-renew` thread (one per provider, however many clones and
//! clients share it), the token it caches, and carrying out the decisions of
//! `renewal` (when to fetch, how to back off, what to report). Must never: make
//! `credentials()` wait for the identity service, show a token in `Debug`, a log line
//! or an error, or outlive the last clone.

mod renewal;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::{Mutex, RwLock};

use self::renewal::{validity, Because, Fetched, Renewal, Schedule, Verdict};
use super::credentials::{Credentials, CredentialsProvider, RenewalFailure};
use crate::error::{Error, ErrorKind, Result};

/// The renewal thread's name (Linux keeps 15 bytes of a thread's name).
const THREAD_NAME: &str = "rr-token-renew";

/// The longest life a token is taken to have (an `Instant` cannot hold any `Duration`).
const LONGEST_LIFE: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// The longest pause between two attempts the builder accepts.
const LONGEST_RETRY: Duration = Duration::from_secs(24 * 3600);

/// Credentials valid until a known moment, as an identity service issues them.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use resilient_redis::config::{Credentials, Token};
/// // A service that says how long the token lives ("expires_in": 3600)...
/// let a = Token::new(Credentials::user("app", "eyJ0eXAi..."), Duration::from_secs(3600));
/// // ...or when it ends (a JWT's "exp" claim).
/// let exp = SystemTime::now() + Duration::from_secs(3600);
/// let b = Token::expiring_at(Credentials::user("app", "eyJ0eXAi..."), exp);
/// assert_eq!(a.credentials().user_name(), b.credentials().user_name());
/// assert!(!format!("{a:?}").contains("eyJ0eXAi"));
/// ```
pub struct Token {
    credentials: Credentials,
    expiry: Expiry,
}

#[derive(Clone, Copy, Debug)]
enum Expiry {
    After(Duration),
    At(SystemTime),
}

impl Token {
    /// Credentials valid for `lifetime`, counted from when the fetch that returned
    /// them began: a slow fetch shortens the life assumed, never lengthens it.
    pub fn new(credentials: Credentials, lifetime: Duration) -> Token {
        Token {
            credentials,
            expiry: Expiry::After(lifetime),
        }
    }

    /// Credentials valid until `at` (wall-clock time: a JWT's `exp` claim, an
    /// `expires_on` field). Turned into the monotonic clock's time when the token
    /// arrives, so a later change of the system clock does not move it.
    pub fn expiring_at(credentials: Credentials, at: SystemTime) -> Token {
        Token {
            credentials,
            expiry: Expiry::At(at),
        }
    }

    /// The credentials `AUTH` sends.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// When it ends on the monotonic clock, for a fetch that began at `began`.
    fn expires_at(&self, began: Instant) -> Instant {
        let (from, life) = match self.expiry {
            Expiry::After(life) => (began, life),
            Expiry::At(at) => (
                Instant::now(),
                // Already past: it ends now (and is not used).
                at.duration_since(SystemTime::now()).unwrap_or_default(),
            ),
        };
        from.checked_add(life.min(LONGEST_LIFE)).unwrap_or(from)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("credentials", &self.credentials)
            .field("expiry", &self.expiry)
            .finish()
    }
}

/// Where tokens come from: an identity service (Microsoft Entra ID, a cloud IAM, your
/// own). Any `FnMut() -> Result<Token> + Send` closure is one.
///
/// It runs on the renewal thread of [`TokenCredentials`] (the first time on the thread
/// that calls [`start`](TokenCredentialsBuilder::start)), one fetch at a time, never on
/// a connection's path: it may take its time, but give it a timeout of its own (a fetch
/// that hangs holds the renewals back). An error it returns (or a panic) is retried
/// with back-off and reported (see [`RenewalFailure`]); its kind is kept, and its text
/// must not hold a secret.
///
/// ```
/// use std::time::Duration;
/// use resilient_redis::config::{Credentials, Token, TokenSource};
/// use resilient_redis::Result;
///
/// /// A source with state of its own: a client of the identity service.
/// struct Vault {
///     role: String,
/// }
///
/// impl TokenSource for Vault {
///     fn fetch(&mut self) -> Result<Token> {
///         // Call the service here; map its failure to an `Error`.
///         let token = format!("lease-for-{}", self.role);
///         Ok(Token::new(Credentials::user(&self.role, token), Duration::from_secs(900)))
///     }
/// }
///
/// let mut vault = Vault { role: "app".into() };
/// assert_eq!(vault.fetch()?.credentials().user_name(), Some("app"));
/// # Ok::<(), resilient_redis::Error>(())
/// ```
pub trait TokenSource: Send + 'static {
    /// Obtains a new token.
    fn fetch(&mut self) -> Result<Token>;
}

impl<F> TokenSource for F
where
    F: FnMut() -> Result<Token> + Send + 'static,
{
    fn fetch(&mut self) -> Result<Token> {
        self()
    }
}

/// Sets up [`TokenCredentials`]: when to renew, how to retry.
///
/// ```
/// use std::time::Duration;
/// use resilient_redis::config::{Credentials, Token, TokenCredentials};
/// let tokens = TokenCredentials::builder(|| {
///     Ok(Token::new(Credentials::user("app", "t"), Duration::from_secs(600)))
/// })
/// .renew_after(0.8) // at 8 of the 10 minutes
/// .retry_delays(Duration::from_millis(500), Duration::from_secs(10))
/// .start()?;
/// # let _ = tokens;
/// # Ok::<(), resilient_redis::Error>(())
/// ```
pub struct TokenCredentialsBuilder {
    source: Box<dyn TokenSource>,
    schedule: Schedule,
}

impl TokenCredentialsBuilder {
    /// The fraction of a token's remaining life (counted when it arrives) after which
    /// the next one is fetched: `0.75` by default, leaving a quarter of it for the
    /// fetch, its retries, and the re-authentication of every connection. Must be
    /// above 0 and below 1 ([`start`](Self::start) says otherwise).
    pub fn renew_after(mut self, fraction: f64) -> Self {
        self.schedule.renew_after = fraction;
        self
    }

    /// The pauses after a failed fetch: `min` (100 ms by default) doubling with each
    /// failure in a row up to `max` (30 s by default), but while the token in use is
    /// valid never more than half of what it has left, so several attempts land before
    /// it ends. `min` is also the shortest pause between any two fetches. Must be
    /// `0 < min <= max <= 24 h`.
    pub fn retry_delays(mut self, min: Duration, max: Duration) -> Self {
        self.schedule.retry_min = min;
        self.schedule.retry_max = max;
        self
    }

    /// Fetches the first token on this thread (its error, if it fails, is returned:
    /// the source's own, or `ErrorKind::Auth` for a token that had already ended),
    /// then starts the renewal thread. `ErrorKind::Config` for bad settings.
    pub fn start(self) -> Result<TokenCredentials> {
        let TokenCredentialsBuilder {
            mut source,
            schedule,
        } = self;
        check(&schedule)?;
        let mut renewal = Renewal::new(schedule);
        let (fetched, token) = fetch(&mut *source);
        let step = renewal.handle(Instant::now(), fetched, crate::clock::jitter_fraction());
        let (credentials, expires_at) = match (step.verdict, token) {
            (Verdict::Renewed, Ok(token)) => token,
            (_, Err(error)) => return Err(error),
            (_, Ok(_)) => return Err(arrived_expired()),
        };
        let shared = Arc::new(Shared {
            current: RwLock::new(Current {
                credentials,
                expires_at,
                generation: 0,
            }),
            failure: Mutex::new(None),
        });
        let control = Arc::new(Mutex::new(Control::default()));
        let (stop, stopped) = bounded::<()>(0);
        let thread = {
            let (shared, control) = (shared.clone(), control.clone());
            std::thread::Builder::new()
                .name(THREAD_NAME.to_string())
                .spawn(move || {
                    renew(Renewer {
                        shared,
                        source,
                        renewal,
                        next: step.next_fetch,
                        stopped,
                        control,
                    })
                })
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Io,
                        format!("cannot start the token renewal thread: {e}"),
                    )
                })?
        };
        Ok(TokenCredentials(Arc::new(TokenGuard {
            shared,
            _stop: Stop {
                control,
                stop: Some(stop),
                thread: Some(thread),
            },
        })))
    }
}

impl fmt::Debug for TokenCredentialsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCredentialsBuilder")
            .field("renew_after", &self.schedule.renew_after)
            .field("retry_min", &self.schedule.retry_min)
            .field("retry_max", &self.schedule.retry_max)
            .finish_non_exhaustive()
    }
}

fn check(s: &Schedule) -> Result<()> {
    if !(s.renew_after > 0.0 && s.renew_after < 1.0) {
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "renew_after must be above 0 and below 1 (a fraction of the token's life), not {}",
                s.renew_after
            ),
        ));
    }
    if s.retry_min.is_zero() || s.retry_min > s.retry_max || s.retry_max > LONGEST_RETRY {
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "retry delays must be 0 < min <= max <= 24 h, not {:?} and {:?}",
                s.retry_min, s.retry_max
            ),
        ));
    }
    Ok(())
}

/// A [`CredentialsProvider`] for short-lived tokens: it fetches a token from a
/// [`TokenSource`], and the next one on a thread of its own (`rr-token-renew`) once a
/// fraction of the token's life has passed (75 % by default), so that every connection
/// re-authenticates with the new one well before the old one ends (see
/// [`CredentialsProvider::generation`]).
///
/// - [`credentials`](CredentialsProvider::credentials) never waits for the identity
///   service: it returns the token held, or, once that has ended with no new one
///   obtained, an `ErrorKind::Auth` error saying so (the connection attempt fails and
///   is retried with the client's back-off).
/// - A failed fetch is retried with back-off (see
///   [`retry_delays`](TokenCredentialsBuilder::retry_delays)) while the token held
///   still serves, and after that too, at the longest pause; each failure is
///   [`renewal_failure`](CredentialsProvider::renewal_failure), raised by every client
///   using the provider as
///   [`ClientEvent::CredentialsUnavailable`](crate::ClientEvent::CredentialsUnavailable).
/// - Clones share the token and the thread; the thread ends when the last clone (a
///   client's included) is dropped. A fetch under way then is not waited for: the
///   thread ends when it returns.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use resilient_redis::config::{Credentials, CredentialsProvider, Token, TokenCredentials};
/// use resilient_redis::Options;
///
/// let mut issued = 0;
/// let tokens = TokenCredentials::builder(move || {
///     // Ask the identity service here, with a timeout of its own.
///     issued += 1;
///     let token = format!("token-{issued}");
///     Ok(Token::new(Credentials::user("app", token), Duration::from_secs(3600)))
/// })
/// .start()?; // the first token is fetched here
/// assert_eq!(tokens.credentials()?.user_name(), Some("app"));
/// assert_eq!(tokens.generation(), 0); // moves with each renewal, after 45 min
/// let options = Options::default()
///     .endpoint("cache.example:10000")
///     .credentials(Arc::new(tokens.clone()))
///;
/// # let _ = options;
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone)]
pub struct TokenCredentials(Arc<TokenGuard>);

impl TokenCredentials {
    /// Tokens from `source`, renewed with the default schedule unless the builder
    /// says otherwise.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilient_redis::config::{Credentials, Token, TokenCredentials};
    /// let builder = TokenCredentials::builder(|| {
    ///     Ok(Token::new(Credentials::password("t"), Duration::from_secs(60)))
    /// });
    /// let tokens = builder.start()?;
    /// # let _ = tokens;
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn builder(source: impl TokenSource) -> TokenCredentialsBuilder {
        TokenCredentialsBuilder {
            source: Box::new(source),
            schedule: Schedule::default(),
        }
    }

    /// What the token held has left; `None` once it has ended (and no new one could
    /// be obtained).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilient_redis::config::{Credentials, Token, TokenCredentials};
    /// let tokens = TokenCredentials::builder(|| {
    ///     Ok(Token::new(Credentials::password("t"), Duration::from_secs(60)))
    /// })
    /// .start()?;
    /// assert!(tokens.valid_for().is_some_and(|left| left <= Duration::from_secs(60)));
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn valid_for(&self) -> Option<Duration> {
        let expires_at = self.0.shared.current.read().expires_at;
        validity(Instant::now(), Some(expires_at))
    }
}

impl CredentialsProvider for TokenCredentials {
    fn credentials(&self) -> Result<Credentials> {
        let current = self.0.shared.current.read();
        let now = Instant::now();
        if validity(now, Some(current.expires_at)).is_some() {
            return Ok(current.credentials.clone());
        }
        let ago = now
            .saturating_duration_since(current.expires_at)
            .as_millis();
        let why = match &*self.0.shared.failure.lock() {
            Some(failure) => format!(
                "renewing it failed {} times in a row: {}",
                failure.failure.attempt, failure.source_detail
            ),
            None => "no renewal has completed since".to_string(),
        };
        Err(Error::new(
            ErrorKind::Auth,
            format!("no valid token: the last one ended {ago} ms ago and {why}"),
        ))
    }

    fn generation(&self) -> u64 {
        self.0.shared.current.read().generation
    }

    fn renewal_failure(&self) -> Option<RenewalFailure> {
        self.0
            .shared
            .failure
            .lock()
            .as_ref()
            .map(|f| f.failure.clone())
    }
}

impl fmt::Debug for TokenCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (user, generation) = {
            let current = self.0.shared.current.read();
            (
                current.credentials.user_name().map(str::to_string),
                current.generation,
            )
        };
        let failures = self
            .0
            .shared
            .failure
            .lock()
            .as_ref()
            .map_or(0, |f| f.failure.sequence);
        f.debug_struct("TokenCredentials")
            .field("user", &user)
            .field("generation", &generation)
            .field("valid_for", &self.valid_for())
            .field("failures", &failures)
            .finish()
    }
}

/// What every clone shares; the last one dropped stops the thread.
struct TokenGuard {
    shared: Arc<Shared>,
    /// Held for its `Drop`.
    _stop: Stop,
}

/// What the renewal thread and the readers share.
struct Shared {
    current: RwLock<Current>,
    failure: Mutex<Option<Failure>>,
}

/// The token in use. Credentials and generation change together, under one lock:
/// a generation never moves before `credentials()` returns the new token.
struct Current {
    credentials: Credentials,
    expires_at: Instant,
    generation: u64,
}

struct Failure {
    failure: RenewalFailure,
    /// The source's own words, for `credentials()` once the token has ended.
    source_detail: String,
}

/// Whether the thread was told to stop, and whether it is inside the source's fetch
/// (then it is not waited for: the fetch may take its time).
#[derive(Default)]
struct Control {
    stopped: bool,
    fetching: bool,
}

/// Stops the thread when the last clone goes.
struct Stop {
    control: Arc<Mutex<Control>>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Stop {
    fn drop(&mut self) {
        let fetching = {
            let mut control = self.control.lock();
            control.stopped = true;
            control.fetching
        };
        // Disconnects the thread's wait.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A source that kept a clone and let it go last: the thread ends by itself.
            let own = thread.thread().id() == std::thread::current().id();
            if !fetching && !own {
                let _ = thread.join();
            }
        }
    }
}

/// The renewal thread's state.
struct Renewer {
    shared: Arc<Shared>,
    source: Box<dyn TokenSource>,
    renewal: Renewal,
    next: Instant,
    stopped: Receiver<()>,
    control: Arc<Mutex<Control>>,
}

/// The renewal thread: waits for the next fetch (or the end), fetches, and does what
/// `renewal` decides.
fn renew(mut r: Renewer) {
    let mut sequence = 0u64;
    loop {
        let wait = r.next.saturating_duration_since(Instant::now());
        match r.stopped.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        {
            let mut control = r.control.lock();
            if control.stopped {
                return;
            }
            control.fetching = true;
        }
        let (fetched, token) = fetch(&mut *r.source);
        {
            let mut control = r.control.lock();
            control.fetching = false;
            if control.stopped {
                return;
            }
        }
        let now = Instant::now();
        let step = r
            .renewal
            .handle(now, fetched, crate::clock::jitter_fraction());
        r.next = step.next_fetch;
        match (step.verdict, token) {
            (Verdict::Renewed, Ok((credentials, expires_at))) => {
                let generation = {
                    let mut current = r.shared.current.write();
                    current.credentials = credentials;
                    current.expires_at = expires_at;
                    current.generation += 1;
                    current.generation
                };
                log::debug!(
                    "token renewed: generation {generation}, valid for {} ms, next renewal in {} ms",
                    expires_at.saturating_duration_since(now).as_millis(),
                    step.next_fetch.saturating_duration_since(now).as_millis()
                );
            }
            (
                Verdict::Retry {
                    attempt,
                    valid_for,
                    because,
                },
                token,
            ) => {
                let cause = match (because, token) {
                    (Because::SourceFailed, Err(error)) => error,
                    _ => arrived_expired(),
                };
                sequence += 1;
                let next_in = step.next_fetch.saturating_duration_since(now).as_millis();
                let state = match valid_for {
                    Some(left) => {
                        format!("the token in use is valid for {} ms more", left.as_millis())
                    }
                    None => {
                        "no valid token: connections cannot open until one is obtained".to_string()
                    }
                };
                let source_detail = cause.detail().to_string();
                let error = cause.clone().with_detail(format!(
                    "renewing the token failed ({attempt} in a row): {source_detail}; {state}; next attempt in {next_in} ms"
                ));
                log::warn!("{error}");
                *r.shared.failure.lock() = Some(Failure {
                    failure: RenewalFailure {
                        error,
                        attempt,
                        sequence,
                        valid_for,
                    },
                    source_detail,
                });
            }
            // A renewal is only ever decided for a token.
            (Verdict::Renewed, Err(_)) => {}
        }
    }
}

/// One fetch: what the decision needs, and the token with its end (or the error).
fn fetch(source: &mut dyn TokenSource) -> (Fetched, Result<(Credentials, Instant)>) {
    let began = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| source.fetch()))
        .unwrap_or_else(|_| Err(Error::new(ErrorKind::Auth, "the token source panicked")));
    match result {
        Ok(token) => {
            let expires_at = token.expires_at(began);
            (
                Fetched::Token { expires_at },
                Ok((token.credentials, expires_at)),
            )
        }
        Err(error) => (Fetched::Failed, Err(error)),
    }
}

fn arrived_expired() -> Error {
    Error::new(
        ErrorKind::Auth,
        "the token source returned a token that had already ended",
    )
}

#[cfg(test)]
mod tests;
