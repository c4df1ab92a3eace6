//! The testkit's certificates and TLS: [`FakeIssuer`], a certificate authority minted
//! at start whose certificates the fakes serve (the issuer a test hands the client to
//! trust), the fake REST API's self-signed certificate, and the rustls server
//! configuration both are served with.
//!
//! Owns: minting (`rcgen`) and the rustls `ServerConfig`; [`link`] owns one
//! connection's TLS state. Must never: ship a fixed key or certificate (every one is
//! minted at run time, so none can expire in the source or be shared between users),
//! or offer a way to serve without a certificate the issuer signed.
//!
//! Certificates are valid for `localhost` and `127.0.0.1` (where every fake listens),
//! plus any name a test adds (the names a `ScriptedResolver` gives a fake), so a
//! client verifies them with verification on.

pub(crate) mod link;

use std::io;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::rng;
use crate::config::TlsOptions;

/// The names every certificate of the testkit is valid for: where the fakes listen.
const LOCAL_NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

/// A certificate authority minted at creation, for fakes that serve TLS: every
/// [`FakeServer`](super::FakeServer) and [`FakeCluster`](super::FakeCluster) started
/// with it serves a certificate it signed, so a client that trusts it (and only it)
/// verifies all of them, and a `MOVING` handoff from one such fake to another verifies
/// too. Cloning shares the one authority.
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use resilient_redis::prelude::*;
/// use resilient_redis::testkit::{FakeIssuer, FakeServer};
///
/// let issuer = FakeIssuer::new()?;
/// let server = FakeServer::builder().tls(&issuer).start()?;
/// assert!(server.url().starts_with("rediss://"));
/// let mut options = Options::parse(&server.url())?;
/// options.tls = Some(issuer.tls_options()); // trust this issuer, verification on
/// let db = Client::connect(options)?.database();
/// db.set("k", "v")?;
/// assert_eq!(db.get::<String>("k")?, "v");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FakeIssuer {
    inner: Arc<Authority>,
}

struct Authority {
    ca: CertifiedIssuer<'static, KeyPair>,
    name: String,
    pem: String,
}

impl std::fmt::Debug for FakeIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeIssuer")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl FakeIssuer {
    /// Mints a new authority (a key pair and a self-signed CA certificate with a name
    /// of its own: two issuers never look like each other).
    pub fn new() -> io::Result<FakeIssuer> {
        let name = format!("resilient-redis testkit CA {:016x}", rng::next());
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(io::Error::other)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, name.clone());
        let key = KeyPair::generate().map_err(io::Error::other)?;
        let ca = CertifiedIssuer::self_signed(params, key).map_err(io::Error::other)?;
        let pem = ca.pem();
        Ok(FakeIssuer {
            inner: Arc::new(Authority { ca, name, pem }),
        })
    }

    /// Its CA certificate (PEM), to trust: `TlsOptions::ca_pem`, or a file for
    /// `sslCaFile`.
    pub fn certificate_pem(&self) -> String {
        self.inner.pem.clone()
    }

    /// Its CA certificate (DER).
    pub fn certificate_der(&self) -> Vec<u8> {
        self.inner.ca.der().to_vec()
    }

    /// TLS settings that trust this issuer alone (not the public roots), with
    /// verification on: `options.tls = Some(issuer.tls_options())`.
    pub fn tls_options(&self) -> TlsOptions {
        TlsOptions {
            ca_pem: Some(self.inner.pem.as_bytes().to_vec()),
            ..TlsOptions::default()
        }
    }

    /// A server configuration with a fresh key and a certificate this issuer signed,
    /// valid for `localhost`, `127.0.0.1` and `names`.
    pub(crate) fn server_config(&self, names: &[String]) -> io::Result<Arc<ServerConfig>> {
        let mut sans: Vec<String> = LOCAL_NAMES.iter().map(|s| s.to_string()).collect();
        sans.extend(names.iter().cloned());
        let mut params = CertificateParams::new(sans).map_err(invalid_name)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "resilient-redis testkit fake server");
        let key = KeyPair::generate().map_err(io::Error::other)?;
        let cert = params
            .signed_by(&key, &self.inner.ca)
            .map_err(io::Error::other)?;
        let chain = vec![cert.der().clone(), self.inner.ca.der().clone()];
        server_config(chain, pkcs8(&key), None).map(Arc::new)
    }
}

fn invalid_name(e: rcgen::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a name a certificate can carry: {e}"),
    )
}

fn pkcs8(key: &KeyPair) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()))
}

/// A self-signed certificate (and its key) for `localhost` and `127.0.0.1`, with
/// `common_name` as subject: what port 9443 of a Redis Enterprise cluster serves.
pub(crate) struct SelfSigned {
    pub der: CertificateDer<'static>,
    pub pem: String,
    pub key: PrivateKeyDer<'static>,
}

/// Mints a [`SelfSigned`] certificate.
pub(crate) fn self_signed(common_name: String) -> io::Result<SelfSigned> {
    let sans: Vec<String> = LOCAL_NAMES.iter().map(|s| s.to_string()).collect();
    let mut params = CertificateParams::new(sans).map_err(invalid_name)?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    let key = KeyPair::generate().map_err(io::Error::other)?;
    let cert = params.self_signed(&key).map_err(io::Error::other)?;
    Ok(SelfSigned {
        der: cert.der().clone(),
        pem: cert.pem(),
        key: pkcs8(&key),
    })
}

/// A rustls server configuration serving `chain` (leaf first) with `key`; with
/// `client_ca` (PEM), clients must present a certificate one of those issued.
pub(crate) fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<&[u8]>,
) -> io::Result<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(pem) {
                roots
                    .add(c.map_err(io::Error::other)?)
                    .map_err(io::Error::other)?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                .build()
                .map_err(io::Error::other)?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(chain, key)
        .map_err(io::Error::other)
}
