//! The TLS configuration of the REST calls: which certificate is trusted (issuer,
//! pinned on first use, or the caller's verifier) and the client certificate.
//!
//! ureq's own TLS settings cannot take a custom verifier, so the probe builds its rustls
//! configuration here and `http.rs` installs it in its own connector.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, OtherError, RootCertStore,
    SignatureScheme,
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::options::{CertificatePins, ClientCertificate, RestTrust};

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls configuration for `trust` and an optional client certificate.
pub(crate) fn client_config(
    trust: &RestTrust,
    client: Option<&ClientCertificate>,
) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("no usable TLS protocol version: {e}"))?;
    let builder = match trust {
        RestTrust::PublicRoots => {
            let mut roots = RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            builder.with_root_certificates(roots)
        }
        RestTrust::Issuers(certs) => {
            let mut roots = RootCertStore::empty();
            for c in certs {
                roots
                    .add(c.clone())
                    .map_err(|e| format!("unusable trusted issuer: {e}"))?;
            }
            builder.with_root_certificates(roots)
        }
        RestTrust::PinOnFirstUse(pins) => {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinVerifier {
                    pins: pins.clone(),
                    provider: provider(),
                }))
        }
        RestTrust::Verifier(v) => builder
            .dangerous()
            .with_custom_certificate_verifier(v.clone()),
    };
    let config = match client {
        Some(c) => builder
            .with_client_auth_cert(c.chain.clone(), c.key.clone_key())
            .map_err(|e| format!("client certificate rejected: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The pinned certificate of a host is not the one it presented.
#[derive(Debug)]
struct PinMismatch(String);

impl std::fmt::Display for PinMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} presented another certificate than the one pinned on first use",
            self.0
        )
    }
}

impl std::error::Error for PinMismatch {}

/// Trust on first use, keyed by host: the leaf seen first for a host is the only one
/// accepted for it afterwards. The handshake signature is still verified against it,
/// so a peer must hold the pinned certificate's key, not just replay the certificate.
#[derive(Debug)]
struct PinVerifier {
    pins: Arc<CertificatePins>,
    provider: Arc<CryptoProvider>,
}

fn host_of(name: &ServerName<'_>) -> Option<String> {
    match name {
        ServerName::DnsName(d) => Some(d.as_ref().to_ascii_lowercase()),
        ServerName::IpAddress(ip) => Some(std::net::IpAddr::from(*ip).to_string()),
        _ => None,
    }
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let host = host_of(server_name).ok_or(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName,
        ))?;
        match self.pins.check_or_pin(&host, end_entity.as_ref()) {
            Ok(true) => {
                log::info!("pinned the REST API certificate of {host} on first use");
                Ok(ServerCertVerified::assertion())
            }
            Ok(false) => Ok(ServerCertVerified::assertion()),
            Err(()) => Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                OtherError(Arc::new(PinMismatch(host))),
            ))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Says what was wrong with a certificate, in words a log reader can act on.
pub(crate) fn describe(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "not issued by a trusted issuer (the REST API's certificate is self-signed by \
             the cluster unless replaced: trust its issuer or pin it on first use)"
                .to_string()
        }
        rustls::Error::InvalidCertificate(CertificateError::Other(o)) => o.to_string(),
        rustls::Error::InvalidCertificate(c) => format!("rejected ({c:?})"),
        rustls::Error::AlertReceived(a) => {
            format!("the server ended the handshake ({a:?}): is a client certificate required?")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_per_host_and_hold_after_the_first_use() {
        let pins = CertificatePins::new();
        assert_eq!(pins.check_or_pin("a.example", b"one"), Ok(true));
        assert_eq!(pins.check_or_pin("a.example", b"one"), Ok(false));
        assert_eq!(pins.check_or_pin("a.example", b"two"), Err(()));
        assert_eq!(pins.check_or_pin("b.example", b"two"), Ok(true));
        assert_eq!(pins.pinned("A.EXAMPLE"), Some(b"one".to_vec()));
        assert!(pins.forget("a.example"));
        assert_eq!(pins.check_or_pin("a.example", b"two"), Ok(true));
    }

    #[test]
    fn a_pin_mismatch_names_the_host_and_not_the_certificate() {
        let e = rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
            PinMismatch("c1.example".into()),
        ))));
        let text = describe(&e);
        assert!(
            text.contains("c1.example") && text.contains("pinned"),
            "{text}"
        );
        let unknown = describe(&rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert!(unknown.contains("trust its issuer"), "{unknown}");
    }
}
