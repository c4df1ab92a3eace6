//! `LagAwareOptions`: what the Redis Enterprise probe needs (only the management
//! credentials) and what it may be told (REST endpoint, database id, tolerance, trust,
//! client certificate).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::Secret;
use crate::error::{Error, ErrorKind, Result};

/// Management credentials of a Redis Enterprise cluster (Basic auth). A read-only role
/// (`db_viewer`) can make every call the probe makes.
#[derive(Clone)]
pub struct RestCredentials {
    /// The user (an email address on Redis Enterprise).
    pub user: String,
    /// The password.
    pub password: Secret,
}

impl RestCredentials {
    /// Credentials from a user and a password.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> RestCredentials {
        RestCredentials {
            user: user.into(),
            password: Secret::new(password),
        }
    }
}

impl fmt::Debug for RestCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestCredentials")
            .field("user", &self.user)
            .field("password", &self.password)
            .finish()
    }
}

/// Which question the probe asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LagCheckMode {
    /// Whether the database is available (`/availability`), nothing about lag.
    Availability,
    /// Whether it is available *and caught up* (`?extend_check=lag`), asked only of an
    /// Active-Active database; any other database gets the plain question, because
    /// asked the lag question it reports itself unavailable whatever the tolerance.
    #[default]
    Lag,
}

/// How the REST API's certificate is trusted. Port 9443 carries a certificate
/// self-signed by the cluster unless its operator replaced it, so the public roots (the
/// default) only work for a cluster given a publicly issued certificate.
#[derive(Clone)]
#[non_exhaustive]
pub enum RestTrust {
    /// The public web PKI roots.
    PublicRoots,
    /// Certificates issued by one of these (for a self-signed certificate, the
    /// certificate itself).
    Issuers(Vec<CertificateDer<'static>>),
    /// Trust the certificate seen first for each host, and only it afterwards.
    PinOnFirstUse(Arc<CertificatePins>),
    /// A verifier of the caller's own.
    Verifier(Arc<dyn ServerCertVerifier>),
}

impl fmt::Debug for RestTrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestTrust::PublicRoots => f.write_str("PublicRoots"),
            RestTrust::Issuers(c) => write!(f, "Issuers({} certificates)", c.len()),
            RestTrust::PinOnFirstUse(_) => f.write_str("PinOnFirstUse"),
            RestTrust::Verifier(v) => write!(f, "Verifier({v:?})"),
        }
    }
}

/// Leaf certificates pinned on first use, keyed by host (so one store serves several
/// clusters). Share one store between probes, or seed it, to pin ahead of time.
#[derive(Debug, Default)]
pub struct CertificatePins {
    pins: Mutex<HashMap<String, CertificateDer<'static>>>,
}

impl CertificatePins {
    /// An empty store.
    pub fn new() -> CertificatePins {
        CertificatePins::default()
    }

    /// The certificate (DER) pinned for `host`.
    pub fn pinned(&self, host: &str) -> Option<Vec<u8>> {
        self.pins
            .lock()
            .get(&host.to_ascii_lowercase())
            .map(|c| c.to_vec())
    }

    /// Pins `der` for `host` (replacing any earlier pin: after a certificate rotation).
    pub fn pin(&self, host: &str, der: &[u8]) {
        self.pins.lock().insert(
            host.to_ascii_lowercase(),
            CertificateDer::from(der.to_vec()),
        );
    }

    /// Forgets the pin of `host`; the next certificate seen is pinned.
    pub fn forget(&self, host: &str) -> bool {
        self.pins
            .lock()
            .remove(&host.to_ascii_lowercase())
            .is_some()
    }

    /// `Ok(true)` when `der` was pinned just now, `Ok(false)` when it matches the pin,
    /// `Err(())` when another certificate is pinned for `host`.
    pub(crate) fn check_or_pin(&self, host: &str, der: &[u8]) -> std::result::Result<bool, ()> {
        let mut pins = self.pins.lock();
        match pins.get(host) {
            Some(p) if p.as_ref() == der => Ok(false),
            Some(_) => Err(()),
            None => {
                pins.insert(host.to_string(), CertificateDer::from(der.to_vec()));
                Ok(true)
            }
        }
    }
}

/// A client certificate for mutual TLS to the REST API, from PEM.
///
/// PKCS#12 (`.p12`/`.pfx`) is not read. The one maintained pure-Rust reader
/// (`p12-keystore` 0.4) depends on pre-release RustCrypto crates (`cms` 0.3.0-pre,
/// `pkcs12` 0.2.0-pre) and a dozen more, plus RC2/3DES for older files: a large,
/// unsettled dependency for every user of the crate, for a format one `openssl`
/// command turns into PEM (`openssl pkcs12 -in client.p12 -out client.pem -nodes`).
#[derive(Debug)]
pub struct ClientCertificate {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
}

impl Clone for ClientCertificate {
    fn clone(&self) -> ClientCertificate {
        ClientCertificate {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl ClientCertificate {
    /// From a PEM certificate chain (leaf first) and a PEM private key (PKCS#8, PKCS#1
    /// or SEC1). PKCS#12 is not read: convert with
    /// `openssl pkcs12 -in client.p12 -out client.pem -nodes`.
    pub fn from_pem(chain_pem: &[u8], key_pem: &[u8]) -> Result<ClientCertificate> {
        let chain = certificates_from_pem(chain_pem, "client certificate")?;
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| config_error(format!("cannot read the client key: {e}")))?;
        Ok(ClientCertificate { chain, key })
    }
}

fn config_error(detail: String) -> Error {
    Error::new(ErrorKind::Config, detail)
}

fn certificates_from_pem(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs: std::result::Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
    let certs = certs.map_err(|e| config_error(format!("cannot read the {what}: {e}")))?;
    if certs.is_empty() {
        // An empty trust list would trust nothing and fail every call, silently.
        return Err(config_error(format!("the {what} PEM holds no certificate")));
    }
    Ok(certs)
}

/// The credentials callback: called before every request, so rotated credentials are
/// picked up at once; `None` means none are available (the probe is then Inconclusive).
pub type CredentialsFn = dyn Fn() -> Option<RestCredentials> + Send + Sync;

/// Settings of the [`LagAware`](super::LagAware) probe. Only the credentials are
/// required; everything else is derived or left to the cluster.
///
/// ```
/// use std::time::Duration;
/// use resilient_redis::availability::{LagAwareOptions, LagCheckMode, RestCredentials};
/// let options = LagAwareOptions::new(|| {
///     Some(RestCredentials::new("monitor@example.com", std::env::var("RE_PASSWORD").ok()?))
/// })
/// .lag_tolerance(Duration::from_secs(5))
/// .mode(LagCheckMode::Lag);
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct LagAwareOptions {
    pub(crate) credentials: Arc<CredentialsFn>,
    pub(crate) rest_endpoint: Option<String>,
    pub(crate) database_id: Option<u64>,
    pub(crate) mode: LagCheckMode,
    pub(crate) lag_tolerance: Option<Duration>,
    pub(crate) trust: RestTrust,
    pub(crate) client_certificate: Option<ClientCertificate>,
    pub(crate) local_form: bool,
}

impl fmt::Debug for LagAwareOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LagAwareOptions")
            .field(
                "rest_endpoint",
                &self
                    .rest_endpoint
                    .as_deref()
                    .map(super::endpoint::without_userinfo),
            )
            .field("database_id", &self.database_id)
            .field("mode", &self.mode)
            .field("lag_tolerance", &self.lag_tolerance)
            .field("trust", &self.trust)
            .field("client_certificate", &self.client_certificate.is_some())
            .field("local_form", &self.local_form)
            .finish_non_exhaustive()
    }
}

impl LagAwareOptions {
    /// Options with the credentials callback, re-read before every request.
    pub fn new(
        credentials: impl Fn() -> Option<RestCredentials> + Send + Sync + 'static,
    ) -> LagAwareOptions {
        LagAwareOptions {
            credentials: Arc::new(credentials),
            rest_endpoint: None,
            database_id: None,
            mode: LagCheckMode::Lag,
            lag_tolerance: None,
            trust: RestTrust::PublicRoots,
            client_certificate: None,
            local_form: false,
        }
    }

    /// The REST API's base URL (`https://cluster.example.com:9443/`). Default: derived
    /// from the database host `redis-{port}.{cluster}` as `https://{cluster}:9443/`,
    /// the name that resolves to the cluster's master, the only node that answers
    /// every route (the others answer 307 to its internal address).
    pub fn rest_endpoint(mut self, url: impl Into<String>) -> Self {
        self.rest_endpoint = Some(url.into());
        self
    }

    /// The database id (`bdb` uid). Default: discovered by host and port, through
    /// filtered requests only (an unfiltered listing returns database passwords, even
    /// to a read-only role).
    pub fn database_id(mut self, uid: u64) -> Self {
        self.database_id = Some(uid);
        self
    }

    /// Which question to ask (default [`LagCheckMode::Lag`]).
    pub fn mode(mut self, mode: LagCheckMode) -> Self {
        self.mode = mode;
        self
    }

    /// The lag tolerance sent as `availability_lag_tolerance_ms`. Default: none sent,
    /// so the cluster's own setting applies (100 ms on the server; other clients send
    /// 5000 ms).
    pub fn lag_tolerance(mut self, tolerance: Duration) -> Self {
        self.lag_tolerance = Some(tolerance);
        self
    }

    /// Asks the local form (`/v1/local/bdbs/{uid}/endpoint/availability`) instead of
    /// `/v1/bdbs/{uid}/availability`: the same answer, another call shape.
    pub fn local_endpoint_form(mut self, local: bool) -> Self {
        self.local_form = local;
        self
    }

    /// Sets how the certificate is trusted.
    pub fn trust(mut self, trust: RestTrust) -> Self {
        self.trust = trust;
        self
    }

    /// Trusts certificates issued by the PEM certificate(s) given (for the cluster's
    /// self-signed certificate, that certificate).
    pub fn trust_issuer_pem(self, pem: &[u8]) -> Result<Self> {
        let certs = certificates_from_pem(pem, "trusted issuer")?;
        Ok(self.trust(RestTrust::Issuers(certs)))
    }

    /// Pins each host's certificate on first use, in `pins`.
    pub fn pin_on_first_use(self, pins: Arc<CertificatePins>) -> Self {
        self.trust(RestTrust::PinOnFirstUse(pins))
    }

    /// Verifies the certificate with the caller's own verifier.
    pub fn certificate_verifier(self, verifier: Arc<dyn ServerCertVerifier>) -> Self {
        self.trust(RestTrust::Verifier(verifier))
    }

    /// Presents a client certificate (mutual TLS).
    pub fn client_certificate(mut self, certificate: ClientCertificate) -> Self {
        self.client_certificate = Some(certificate);
        self
    }
}
