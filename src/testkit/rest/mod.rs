//! [`FakeRestApi`]: a fake Redis Enterprise REST API (the database availability API
//! the lag-aware failback probe asks) over HTTPS, with a self-signed certificate minted
//! at start, like port 9443 of a real cluster.
//!
//! Routes: Basic auth on every one; `GET /v1/bdbs?fields=…` and
//! `GET /v1/bdbs/{uid}?fields=…` (only the fields asked for); `GET
//! /v1/bdbs/{uid}/availability`, with or without `extend_check=lag` and
//! `availability_lag_tolerance_ms=N` (the server's 100 ms when absent), and the local
//! form `/v1/local/bdbs/{uid}/endpoint/availability`, which answers the same.
//!
//! Switches: a database lagging, unavailable or not Active-Active; 401/403; a slow
//! answer; a 307 to an address that accepts and never answers (what a non-master node
//! does); malformed bodies; and strict mode (on by default), which fails and records
//! every unfiltered read, so a test proves the client never makes one (unfiltered
//! reads return database passwords, even to a read-only role).
//!
//! Observability: [`requests`](FakeRestApi::requests) (method, path and query; never the
//! `Authorization` header) and [`unfiltered_reads`](FakeRestApi::unfiltered_reads).
//!
//! The certificate is minted with `rcgen` (by the testkit's `tls` module, which also
//! mints [`FakeIssuer`](super::FakeIssuer)s), an optional dependency enabled by the
//! `testkit` feature only: a fixed certificate checked into the source would expire,
//! and would be the same private key for every user of the testkit.
//!
//! ```
//! # #[cfg(feature = "testkit")] {
//! use std::time::Duration;
//! use resilient_redis::availability::{LagAware, LagAwareOptions, LagOutcome, RestCredentials};
//! use resilient_redis::testkit::FakeRestApi;
//! use resilient_redis::Endpoint;
//!
//! let api = FakeRestApi::start()?;
//! let uid = api.add_database("redis-12000.cluster.local", "127.0.0.1", 12000);
//! let (user, password) = api.credentials();
//! let probe = LagAware::new(
//!     LagAwareOptions::new(move || Some(RestCredentials::new(user.clone(), password.clone())))
//!         .rest_endpoint(api.url())
//!         .trust_issuer_pem(api.certificate_pem().as_bytes())?,
//! );
//! let db = Endpoint::new("redis-12000.cluster.local", 12000);
//! assert_eq!(probe.check_endpoint(&db, Duration::from_secs(5)), LagOutcome::CaughtUp);
//! api.set_lagging(uid, true);
//! assert!(matches!(probe.check_endpoint(&db, Duration::from_secs(5)), LagOutcome::Behind { .. }));
//! assert!(api.unfiltered_reads().is_empty());
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod api;
mod server;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::tls;
use api::{ApiState, Bdb, Switches};
use server::Shared;

/// A fake Redis Enterprise REST API on `https://127.0.0.1:<port>`. Every thread it
/// starts is joined when it is dropped.
pub struct FakeRestApi {
    shared: Arc<Shared>,
    addr: SocketAddr,
    redirect_addr: SocketAddr,
    cert_pem: String,
    cert_der: Vec<u8>,
    next_uid: AtomicU64,
}

impl std::fmt::Debug for FakeRestApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeRestApi")
            .field("url", &self.url())
            .finish()
    }
}

/// Settings fixed at start.
#[derive(Debug)]
pub struct FakeRestApiBuilder {
    user: String,
    password: String,
    strict: bool,
    client_ca: Option<Vec<u8>>,
}

impl FakeRestApiBuilder {
    /// The management credentials it accepts (default `admin@cluster.local` /
    /// `fake-rest-password`).
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.user = user.into();
        self.password = password.into();
        self
    }

    /// Whether unfiltered reads fail (default on); they are recorded either way.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Requires a client certificate issued by one of the PEM certificates (mTLS).
    pub fn require_client_certificate(mut self, ca_pem: &[u8]) -> Self {
        self.client_ca = Some(ca_pem.to_vec());
        self
    }

    /// Mints the certificate, binds 127.0.0.1 on ephemeral ports and starts serving.
    pub fn start(self) -> io::Result<FakeRestApi> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let redirect = TcpListener::bind(("127.0.0.1", 0))?;
        let (addr, redirect_addr) = (listener.local_addr()?, redirect.local_addr()?);
        // Self-signed, like port 9443 of a cluster, with a name of its own: two fakes
        // sharing one subject would look like issuers of each other's certificates.
        let minted = tls::self_signed(format!("fake Redis Enterprise cluster {addr}"))?;
        let cert_der = minted.der.to_vec();
        let tls = tls::server_config(
            vec![minted.der.clone()],
            minted.key,
            self.client_ca.as_deref(),
        )?;
        let shared = Arc::new(Shared {
            api: ApiState {
                credentials: Mutex::new((self.user, self.password)),
                bdbs: Mutex::new(Vec::new()),
                switches: Mutex::new(Switches {
                    strict: self.strict,
                    ..Switches::default()
                }),
                requests: Mutex::new(Vec::new()),
                unfiltered: Mutex::new(Vec::new()),
                redirect_base: format!("https://{redirect_addr}"),
            },
            tls: Arc::new(tls),
            shutdown: AtomicBool::new(false),
            wake: Condvar::new(),
            wake_lock: Mutex::new(()),
            sockets: Mutex::new(Default::default()),
            threads: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            connections: AtomicUsize::new(0),
            redirect_hits: AtomicUsize::new(0),
        });
        let api = FakeRestApi {
            shared: shared.clone(),
            addr,
            redirect_addr,
            cert_pem: minted.pem,
            cert_der,
            next_uid: AtomicU64::new(1),
        };
        server::start(&shared, listener, redirect)?;
        Ok(api)
    }
}

impl FakeRestApi {
    /// Starts one with default settings (strict, no client certificate).
    pub fn start() -> io::Result<FakeRestApi> {
        FakeRestApi::builder().start()
    }

    /// A builder for credentials, strictness and mutual TLS.
    pub fn builder() -> FakeRestApiBuilder {
        FakeRestApiBuilder {
            user: "admin@cluster.local".to_string(),
            password: "fake-rest-password".to_string(),
            strict: true,
            client_ca: None,
        }
    }

    /// `https://127.0.0.1:<port>`, for `LagAwareOptions::rest_endpoint`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its self-signed certificate (PEM), to trust as the issuer.
    pub fn certificate_pem(&self) -> String {
        self.cert_pem.clone()
    }

    /// Its certificate (DER), to pin ahead of time.
    pub fn certificate_der(&self) -> Vec<u8> {
        self.cert_der.clone()
    }

    /// The credentials it accepts now.
    pub fn credentials(&self) -> (String, String) {
        self.shared.api.credentials.lock().clone()
    }

    /// Changes the accepted credentials (a rotation).
    pub fn set_credentials(&self, user: impl Into<String>, password: impl Into<String>) {
        *self.shared.api.credentials.lock() = (user.into(), password.into());
    }

    /// Adds an Active-Active database, available and caught up, with one endpoint;
    /// returns its uid.
    pub fn add_database(&self, dns_name: &str, addr: &str, port: u16) -> u64 {
        let uid = self.next_uid.fetch_add(1, Ordering::Relaxed);
        self.shared.api.bdbs.lock().push(Bdb {
            uid,
            name: format!("db{uid}"),
            dns_name: dns_name.to_string(),
            addr: vec![addr.to_string()],
            port,
            crdt: true,
            available: true,
            lag: Duration::ZERO,
            password: format!("db{uid}-secret-password"),
        });
        uid
    }

    /// Adds the database a fake Redis server on `addr` stands for: endpoint
    /// `redis-{port}.cluster.local`, address `addr`'s IP.
    pub fn add_database_for(&self, addr: SocketAddr) -> u64 {
        let ip = addr.ip().to_string();
        let name = format!("redis-{}.cluster.local", addr.port());
        self.add_database(&name, &ip, addr.port())
    }

    fn with_bdb(&self, uid: u64, f: impl FnOnce(&mut Bdb)) {
        if let Some(b) = self
            .shared
            .api
            .bdbs
            .lock()
            .iter_mut()
            .find(|b| b.uid == uid)
        {
            f(b);
        }
    }

    /// Sets a database's replication lag (compared with the request's tolerance).
    pub fn set_lag(&self, uid: u64, lag: Duration) {
        self.with_bdb(uid, |b| b.lag = lag);
    }

    /// Ten minutes behind (over any sensible tolerance), or caught up.
    pub fn set_lagging(&self, uid: u64, lagging: bool) {
        let lag = if lagging {
            Duration::from_secs(600)
        } else {
            Duration::ZERO
        };
        self.set_lag(uid, lag);
    }

    /// Makes a database unavailable (503 to every availability question) or not.
    pub fn set_unavailable(&self, uid: u64, unavailable: bool) {
        self.with_bdb(uid, |b| b.available = !unavailable);
    }

    /// Whether a database is Active-Active (`crdt`).
    pub fn set_active_active(&self, uid: u64, active_active: bool) {
        self.with_bdb(uid, |b| b.crdt = active_active);
    }

    /// Answers every request with this status (401 or 403) whatever the credentials,
    /// or, with `None`, checks them again.
    pub fn set_auth_failure(&self, status: Option<u16>) {
        self.shared.api.switches.lock().auth_failure = status;
    }

    /// Holds every answer back this long.
    pub fn set_delay(&self, delay: Duration) {
        self.shared.api.switches.lock().delay = delay;
    }

    /// Answers every request with a 307 to [`redirect_target`](Self::redirect_target),
    /// an address that accepts connections and never answers.
    pub fn redirect_to_unreachable(&self, on: bool) {
        self.shared.api.switches.lock().redirect = on;
    }

    /// Where redirects point (`https://127.0.0.1:<port>`).
    pub fn redirect_target(&self) -> String {
        format!("https://{}", self.redirect_addr)
    }

    /// Connections made to the redirect target: nonzero means a client followed.
    pub fn redirect_target_connections(&self) -> usize {
        self.shared.redirect_hits.load(Ordering::Relaxed)
    }

    /// Answers with bodies that are not valid JSON.
    pub fn malformed_bodies(&self, on: bool) {
        self.shared.api.switches.lock().malformed = on;
    }

    /// Whether unfiltered reads fail.
    pub fn set_strict(&self, strict: bool) {
        self.shared.api.switches.lock().strict = strict;
    }

    /// Requests received (`GET /path?query`), oldest first; never the credentials.
    pub fn requests(&self) -> Vec<String> {
        self.shared.api.requests.lock().clone()
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        self.shared.api.requests.lock().clear();
    }

    /// Unfiltered reads received (`/v1/bdbs` or `/v1/bdbs/{uid}` without `fields`).
    pub fn unfiltered_reads(&self) -> Vec<String> {
        self.shared.api.unfiltered.lock().clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Stops serving and joins every thread. Idempotent; also done on drop.
    pub fn shutdown(&self) {
        self.shared.stop(&[self.addr, self.redirect_addr]);
    }
}

impl Drop for FakeRestApi {
    fn drop(&mut self) {
        self.shutdown();
    }
}
