//! The lag-aware probe's TLS against the fake REST API: the public roots do not trust a
//! cluster's self-signed certificate (and say what to do), a given issuer does, a
//! custom verifier decides, and a client certificate (PEM) passes mutual TLS.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use resilient_redis::availability::{
    ClientCertificate, LagAware, LagAwareOptions, LagOutcome, ProbeResult, RestCredentials,
};
use resilient_redis::testkit::FakeRestApi;
use resilient_redis::Endpoint;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

const TIMEOUT: Duration = Duration::from_secs(3);
const HOST: &str = "redis-12000.cluster.local";

fn with_db(api: FakeRestApi) -> FakeRestApi {
    api.add_database(HOST, "127.0.0.1", 12000);
    api
}

fn options(api: &FakeRestApi) -> LagAwareOptions {
    let (user, password) = api.credentials();
    LagAwareOptions::new(move || Some(RestCredentials::new(user.clone(), password.clone())))
        .rest_endpoint(api.url())
}

fn ask(options: LagAwareOptions) -> LagOutcome {
    LagAware::new(options).check_endpoint(&Endpoint::new(HOST, 12000), TIMEOUT)
}

fn certificate_problem(outcome: &LagOutcome, words: &str) {
    assert_eq!(outcome.result(), ProbeResult::Inconclusive, "{outcome:?}");
    let text = outcome.to_string();
    assert!(
        text.starts_with("certificate: ") && text.contains(words),
        "{text:?} should be a certificate problem mentioning {words:?}"
    );
}

#[test]
fn the_public_roots_do_not_trust_a_self_signed_cluster_and_say_what_to_do() {
    let api = with_db(FakeRestApi::start().unwrap());
    certificate_problem(&ask(options(&api)), "trust its issuer or pin it");
    assert!(api.requests().is_empty(), "no request went out untrusted");
}

#[test]
fn only_the_given_issuer_is_trusted() {
    let api = with_db(FakeRestApi::start().unwrap());
    let stranger = FakeRestApi::start().unwrap();
    let wrong = options(&api)
        .trust_issuer_pem(stranger.certificate_pem().as_bytes())
        .unwrap();
    certificate_problem(&ask(wrong), "trust its issuer");
    let right = options(&api)
        .trust_issuer_pem(api.certificate_pem().as_bytes())
        .unwrap();
    assert_eq!(ask(right), LagOutcome::CaughtUp);
    assert!(options(&api).trust_issuer_pem(b"not a pem").is_err());
}

/// Accepts only the certificate it was given, and counts the times it was asked.
#[derive(Debug)]
struct Exactly {
    der: Vec<u8>,
    asked: AtomicUsize,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Exactly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        if end_entity.as_ref() == self.der.as_slice() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[test]
fn a_custom_verifier_decides() {
    let api = with_db(FakeRestApi::start().unwrap());
    let stranger = FakeRestApi::start().unwrap();
    let verifier = |der: Vec<u8>| {
        Arc::new(Exactly {
            der,
            asked: AtomicUsize::new(0),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        })
    };
    let yes = verifier(api.certificate_der());
    assert_eq!(
        ask(options(&api).certificate_verifier(yes.clone())),
        LagOutcome::CaughtUp
    );
    assert!(yes.asked.load(Ordering::Relaxed) >= 1);
    let no = verifier(stranger.certificate_der());
    certificate_problem(
        &ask(options(&api).certificate_verifier(no)),
        "ApplicationVerificationFailure",
    );
}

/// A CA and a client certificate it issued: (CA PEM, certificate PEM, key PEM).
fn client_pki() -> (String, String, String) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "REST client CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["monitor.example".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "monitor");
    let cert = params.signed_by(&key, &ca).unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

#[test]
fn a_pem_client_certificate_passes_mutual_tls() {
    let (ca, cert, key) = client_pki();
    let api = with_db(
        FakeRestApi::builder()
            .require_client_certificate(ca.as_bytes())
            .start()
            .unwrap(),
    );
    let trusting = || {
        options(&api)
            .trust_issuer_pem(api.certificate_pem().as_bytes())
            .unwrap()
    };
    let without = ask(trusting());
    assert_eq!(without.result(), ProbeResult::Inconclusive, "{without:?}");
    assert!(
        without.to_string().contains("client certificate"),
        "{without}"
    );
    let client = ClientCertificate::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
    assert_eq!(
        ask(trusting().client_certificate(client)),
        LagOutcome::CaughtUp
    );
    assert!(ClientCertificate::from_pem(cert.as_bytes(), b"no key").is_err());
    assert!(ClientCertificate::from_pem(b"", key.as_bytes()).is_err());
}
