//! Building the rustls client configuration from `TlsOptions`.
//!
//! Verification is on unless the user turned it off by name (`sslVerify=false`); that
//! choice is logged as a warning, once per client (later connections log it at debug
//! level), so it cannot go unnoticed nor flood the log on every reconnect.
//!
//! Built without the `tls` feature, only [`check_built`] and [`setup`] remain, and they
//! refuse: the settings still parse (`ssl=true` and `rediss://` are valid input, and a
//! provider may imply TLS), so the error comes when a client is connected, as an
//! `ErrorKind::Config` that names the feature, not as a compile error.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::config::{Options, TlsOptions};
use crate::error::{Error, ErrorKind, Result};

#[cfg(feature = "tls")]
use {
    crate::resolve::is_address_literal,
    rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider},
    rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme},
    rustls_pki_types::pem::PemObject,
    rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime},
    std::sync::atomic::Ordering,
};

/// What a client asked for TLS is told when the crate was built without it.
#[cfg(not(feature = "tls"))]
pub(crate) const TLS_NOT_BUILT: &str = "TLS was asked for (ssl=true, rediss://, a provider \
    that implies TLS, or Options::tls) but resilient-redis was built without its `tls` \
    feature: enable the feature (it is on by default) or connect without TLS";

/// Refuses options that ask for TLS (after provider defaults) in a build without the
/// `tls` feature.
#[cfg(not(feature = "tls"))]
pub(crate) fn check_built(options: &Options) -> Result<()> {
    match options.tls {
        Some(_) => Err(Error::new(ErrorKind::Config, TLS_NOT_BUILT)),
        None => Ok(()),
    }
}

/// With the `tls` feature, any TLS settings can be served.
#[cfg(feature = "tls")]
pub(crate) fn check_built(_options: &Options) -> Result<()> {
    Ok(())
}

/// Without the `tls` feature there is no TLS configuration: never made.
#[cfg(not(feature = "tls"))]
pub(crate) enum TlsSetup {}

/// Without the `tls` feature, asking for TLS is a configuration error.
#[cfg(not(feature = "tls"))]
pub(crate) fn setup(
    _tls: &TlsOptions,
    _host: &str,
    _unverified_warned: Arc<AtomicBool>,
) -> Result<TlsSetup> {
    Err(Error::new(ErrorKind::Config, TLS_NOT_BUILT))
}

/// A ready TLS configuration and the name to verify and send as SNI.
#[cfg(feature = "tls")]
pub(crate) struct TlsSetup {
    pub config: Arc<ClientConfig>,
    pub server_name: ServerName<'static>,
    /// `sslHost` was given: that name is verified whatever host is dialled.
    pub pinned_name: bool,
    pub verify: bool,
    /// Shared by every server of one client: `sslVerify=false` is warned about once
    /// per client, not on every reconnect and pooled connection.
    pub unverified_warned: Arc<AtomicBool>,
}

#[cfg(feature = "tls")]
impl TlsSetup {
    /// The name to verify (and send as SNI) when the connection dials `host`, the
    /// endpoint a `MOVING` named instead of the node's own: `sslHost` when given, else
    /// `host` when it is a host name (the certificate there names that host, which is
    /// why TLS asks for `*-fqdn` endpoints); an address names no host, so the node's
    /// own name is kept.
    pub(crate) fn name_for_redirect(&self, host: &str) -> ServerName<'static> {
        if self.pinned_name || is_address_literal(host) {
            return self.server_name.clone();
        }
        ServerName::try_from(host.to_string()).unwrap_or_else(|_| self.server_name.clone())
    }

    /// Warns, once per client, that certificates are not verified.
    pub(crate) fn warn_if_unverified(&self, peer: std::net::SocketAddr) {
        if self.verify {
            return;
        }
        if self.unverified_warned.swap(true, Ordering::Relaxed) {
            log::debug!("TLS certificate verification is off for {peer} (sslVerify=false)");
        } else {
            log::warn!(
                "TLS certificate verification is OFF for {peer} and every other server of \
                 this client (sslVerify=false): the connections are encrypted but the \
                 servers are not authenticated"
            );
        }
    }
}

#[cfg(feature = "tls")]
fn tls_error(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::Tls, detail)
}

#[cfg(feature = "tls")]
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads the certificates of a PEM file or buffer; an empty result is an error because
/// a CA file with nothing in it would silently trust nothing.
#[cfg(feature = "tls")]
fn load_certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs: std::result::Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
    let certs = certs.map_err(|e| tls_error(format!("cannot read {what}: {e}")).with_source(e))?;
    if certs.is_empty() {
        return Err(tls_error(format!("{what} holds no certificate")));
    }
    Ok(certs)
}

#[cfg(feature = "tls")]
fn read_file(path: &std::path::Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot read {what} {path:?}: {e}"),
        )
    })
}

/// Builds the configuration for one endpoint host.
#[cfg(feature = "tls")]
pub(crate) fn setup(
    tls: &TlsOptions,
    host: &str,
    unverified_warned: Arc<AtomicBool>,
) -> Result<TlsSetup> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(format!("no usable TLS protocol version: {e}")).with_source(e))?;

    let builder = if tls.verify {
        let mut roots = RootCertStore::empty();
        let mut custom = Vec::new();
        if let Some(path) = &tls.ca_file {
            custom.extend(load_certs(&read_file(path, "CA file")?, "CA file")?);
        }
        if let Some(pem) = &tls.ca_pem {
            custom.extend(load_certs(pem, "trusted issuer")?);
        }
        if custom.is_empty() {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        } else {
            for cert in custom {
                roots.add(cert).map_err(|e| {
                    tls_error(format!("unusable CA certificate: {e}")).with_source(e)
                })?;
            }
        }
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
    };

    let config = match (&tls.client_cert_file, &tls.client_key_file) {
        (Some(cert), Some(key)) => {
            let chain = load_certs(
                &read_file(cert, "client certificate")?,
                "client certificate",
            )?;
            let key_pem = read_file(key, "client key")?;
            let key = PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|e| tls_error(format!("cannot read client key: {e}")).with_source(e))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                tls_error(format!("client certificate rejected: {e}")).with_source(e)
            })?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(Error::new(
                ErrorKind::Config,
                "sslCert and sslKey must be given together",
            ))
        }
    };

    let name = tls.server_name.clone().unwrap_or_else(|| host.to_string());
    let server_name = ServerName::try_from(name.clone())
        .map_err(|_| tls_error(format!("'{name}' is not a valid TLS server name")))?;
    Ok(TlsSetup {
        config: Arc::new(config),
        server_name,
        pinned_name: tls.server_name.is_some(),
        verify: tls.verify,
        unverified_warned,
    })
}

/// Accepts any certificate: only ever installed when `verify` was turned off by name.
#[cfg(feature = "tls")]
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

#[cfg(feature = "tls")]
impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    fn name(setup: &TlsSetup, host: &str) -> String {
        match setup.name_for_redirect(host) {
            ServerName::DnsName(d) => d.as_ref().to_string(),
            ServerName::IpAddress(ip) => std::net::IpAddr::from(ip).to_string(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn a_redirect_to_a_host_verifies_that_host_unless_ssl_host_pins_a_name() {
        let warned = Arc::new(AtomicBool::new(false));
        let plain = setup(&TlsOptions::default(), "db.test", warned.clone()).unwrap();
        assert_eq!(name(&plain, "b.db.test"), "b.db.test");
        // An address names no host: the endpoint's own name is still verified.
        assert_eq!(name(&plain, "10.0.0.9"), "db.test");
        let pinned = TlsOptions {
            server_name: Some("pinned.example".into()),
            ..TlsOptions::default()
        };
        let pinned = setup(&pinned, "db.test", warned).unwrap();
        assert_eq!(name(&pinned, "b.db.test"), "pinned.example");
    }
}
