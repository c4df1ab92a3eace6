//! TLS against a real redis-server with certificates minted at test time.

use crate::support;

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use resilient_redis::config::TlsOptions;
use resilient_redis::prelude::*;
use resilient_redis::ErrorKind;
use support::optin::opt_in;
use support::RedisServer;

struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A CA, a server certificate for localhost/127.0.0.1 and a client certificate.
fn mint(tag: &str) -> Pki {
    let dir = std::env::temp_dir().join(format!("rr-pki-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Distinct names: OpenSSL takes a leaf whose subject equals its issuer for
    // self-signed and rejects it as from an unknown CA.
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "resilient-redis test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    write(&dir, "ca.pem", &ca.pem());
    for (name, sans) in [
        (
            "server",
            vec!["localhost".to_string(), "127.0.0.1".to_string()],
        ),
        ("client", vec!["client.test".to_string()]),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.signed_by(&key, &ca).unwrap();
        write(&dir, &format!("{name}.pem"), &cert.pem());
        write(&dir, &format!("{name}.key"), &key.serialize_pem());
    }
    Pki { dir }
}

fn tls_server(pki: &Pki, auth_clients: bool) -> Option<RedisServer> {
    let port = support::free_port().to_string();
    let cert = pki.path("server.pem");
    let key = pki.path("server.key");
    let ca = pki.path("ca.pem");
    let auth = if auth_clients { "yes" } else { "no" };
    let server = RedisServer::start_with(&[
        "--tls-port",
        &port,
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-key-file",
        key.to_str().unwrap(),
        "--tls-ca-cert-file",
        ca.to_str().unwrap(),
        "--tls-auth-clients",
        auth,
    ])?;
    Some(TlsServer::wrap(server, port.parse().unwrap()))
}

struct TlsServer;
impl TlsServer {
    fn wrap(mut s: RedisServer, tls_port: u16) -> RedisServer {
        // Tests talk to the TLS port; the plain port stays for nothing else.
        s.port = tls_port;
        s
    }
}

fn options(port: u16, tls: TlsOptions) -> Options {
    Options::default()
        .endpoint(&format!("localhost:{port}"))
        .tls(tls)
}

#[test]
fn tls_with_a_trusted_ca_works_and_verification_is_on_by_default() {
    let pki = mint("ca");
    let Some(server) = tls_server(&pki, false) else {
        return;
    };
    let mut tls = TlsOptions::default();
    tls.ca_file = Some(pki.path("ca.pem"));
    let db = Client::connect(opt_in(options(server.port, tls)))
        .unwrap()
        .database();
    db.set("tls:k", "v").unwrap();
    assert_eq!(db.get::<String>("tls:k").unwrap(), "v");
    // Sequential calls (a caller alone reads, and polls, its own replies over TLS),
    // then several threads at once (the reader thread reads): every reply its own.
    for i in 0..300 {
        db.set(format!("tls:seq:{i}"), i).unwrap();
        assert_eq!(db.get::<i64>(format!("tls:seq:{i}")).unwrap(), i);
    }
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = db.clone();
            s.spawn(move || {
                for i in 0..200 {
                    let key = format!("tls:par:{t}:{i}");
                    db.set(&key, i).unwrap();
                    assert_eq!(db.get::<i64>(&key).unwrap(), i);
                }
            });
        }
    });

    // Public roots only: our CA is unknown, so the handshake must fail.
    let err = Client::connect(opt_in(options(server.port, TlsOptions::default()))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");

    // A name the certificate does not carry fails too.
    let mut tls = TlsOptions::default();
    tls.ca_file = Some(pki.path("ca.pem"));
    tls.server_name = Some("other.example".into());
    let err = Client::connect(opt_in(options(server.port, tls))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");
}

#[test]
fn tls_trusted_issuer_in_memory_and_explicitly_unverified() {
    let pki = mint("mem");
    let Some(server) = tls_server(&pki, false) else {
        return;
    };
    let mut tls = TlsOptions::default();
    tls.ca_pem = Some(std::fs::read(pki.path("ca.pem")).unwrap());
    let db = Client::connect(opt_in(options(server.port, tls)))
        .unwrap()
        .database();
    assert_eq!(db.ping().unwrap(), "PONG");

    let mut tls = TlsOptions::default();
    tls.verify = false;
    let db = Client::connect(opt_in(options(server.port, tls)))
        .unwrap()
        .database();
    assert_eq!(db.ping().unwrap(), "PONG");
}

#[test]
fn mutual_tls_needs_the_client_certificate() {
    let pki = mint("mtls");
    let Some(server) = tls_server(&pki, true) else {
        return;
    };
    let mut tls = TlsOptions::default();
    tls.ca_file = Some(pki.path("ca.pem"));
    tls.client_cert_file = Some(pki.path("client.pem"));
    tls.client_key_file = Some(pki.path("client.key"));
    let db = Client::connect(opt_in(options(server.port, tls)))
        .unwrap()
        .database();
    // Large values cross TLS records intact.
    let big = vec![b'x'; 3 * 1024 * 1024 + 17];
    db.set("tls:big", &big).unwrap();
    assert_eq!(db.get::<Vec<u8>>("tls:big").unwrap(), big);

    let mut tls = TlsOptions::default();
    tls.ca_file = Some(pki.path("ca.pem"));
    assert!(Client::connect(opt_in(options(server.port, tls))).is_err());
}
