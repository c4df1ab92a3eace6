//! `FakeServer`: an in-process Redis on 127.0.0.1, an accept thread and one thread per
//! connection, all named `fake-…` and all joined on `shutdown()`/`Drop`.
//!
//! Owns: the listening socket, the registry of live connections, the server's
//! configuration and life (the accept thread is [`accept`](super::accept)'s). Must
//! never: outlive its handle (every thread it started is joined and every socket shut
//! down when it is dropped), or bind anything but loopback.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::accept::accept_loop;
use super::cluster::ClusterLink;
use super::conn::ConnHandle;
use super::faults::Faults;
use super::maintenance::MaintState;
use super::observe::Stats;
use super::store::Store;
use super::tls::FakeIssuer;
use super::OptIn;

/// How the server treats `HELLO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HelloMode {
    /// Like Redis 6+.
    Normal,
    /// Answers `HELLO 3` in RESP2 form and stays on RESP2 (as some proxies do).
    Resp2Only,
    /// No such command (Redis 5 and older): `-ERR unknown command 'HELLO'`.
    Absent,
}

/// Configuration of a server (passwords can be rotated at run time).
pub(crate) struct ServerConfig {
    pub password: Mutex<Option<String>>,
    pub users: Mutex<HashMap<String, String>>,
    pub require_auth: bool,
    pub replica: bool,
    pub hello: HelloMode,
}

impl ServerConfig {
    pub(crate) fn auth_required(&self) -> bool {
        self.require_auth || self.password.lock().is_some()
    }
}

/// Whether the accept thread is listening (see `refuse_connections`).
pub(crate) struct Listening {
    pub refuse: bool,
    pub listening: bool,
}

/// Everything the server's threads share.
pub(crate) struct ServerInner {
    pub addr: SocketAddr,
    pub config: ServerConfig,
    pub opt_in: Mutex<OptIn>,
    pub store: Store,
    pub faults: Faults,
    pub stats: Stats,
    pub conns: Mutex<BTreeMap<u64, Arc<ConnHandle>>>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub shutdown: AtomicBool,
    pub next_conn_id: AtomicU64,
    pub maint: MaintState,
    pub cluster: OnceLock<ClusterLink>,
    pub listen: Mutex<Listening>,
    pub listen_changed: Condvar,
    pub started: Instant,
    /// `run_id` of `INFO server`: this process of the server (a restart is another).
    pub run_id: String,
    /// What every connection is served with when the server serves TLS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl ServerInner {
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    pub(crate) fn opt_in(&self) -> OptIn {
        *self.opt_in.lock()
    }

    /// `127.0.0.1:port`, as redirects and notifications name this node.
    pub(crate) fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// Live connections, in id order.
    pub(crate) fn connections(&self) -> Vec<Arc<ConnHandle>> {
        self.conns.lock().values().cloned().collect()
    }

    /// Starts a thread named `fake-<port>-<what>` that is joined on shutdown (Linux
    /// shows 15 bytes of a thread name, so `what` stays short).
    pub(crate) fn spawn(
        self: &Arc<Self>,
        what: &str,
        f: impl FnOnce() + Send + 'static,
    ) -> io::Result<()> {
        let handle = std::thread::Builder::new()
            .name(format!("fake-{}-{what}", self.addr.port()))
            .spawn(f)?;
        let mut threads = self.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(handle);
        Ok(())
    }

    /// Closes every connection; waits (briefly) until their threads have let go, so
    /// `connections_open()` reads 0 right after.
    pub(crate) fn close_all(&self) {
        let conns = self.connections();
        for c in &conns {
            c.close();
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline
            && conns.iter().any(|c| self.conns.lock().contains_key(&c.id))
        {
            self.store.pushed.notify_all();
            self.faults.wake();
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Wakes a blocked `accept()` by connecting to ourselves.
    pub(crate) fn poke_accept(&self) {
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// An in-process fake Redis server: standalone (or one node of a [`FakeCluster`]),
/// RESP2 and RESP3, with fault injection, maintenance notifications and counters.
///
/// Start one with [`FakeServer::start`] or [`FakeServer::builder`]; it listens on an
/// ephemeral port of 127.0.0.1 until it is dropped or [`shutdown`](Self::shutdown).
/// The control methods (faults, notifications, observation) take `&self` and can be
/// called from any thread while clients are connected.
///
/// [`FakeCluster`]: super::FakeCluster
pub struct FakeServer {
    pub(crate) inner: Arc<ServerInner>,
    accept: Mutex<Option<JoinHandle<()>>>,
    issuer: Option<FakeIssuer>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.inner.addr)
            .field("tls", &self.issuer.is_some())
            .finish_non_exhaustive()
    }
}

/// Configures a [`FakeServer`] before it starts.
#[derive(Debug)]
#[must_use = "a builder does nothing until start()"]
pub struct FakeServerBuilder {
    password: Option<String>,
    users: HashMap<String, String>,
    require_auth: bool,
    replica: bool,
    opt_in: OptIn,
    hello: HelloMode,
    tls: Option<FakeIssuer>,
    tls_names: Vec<String>,
}

impl FakeServerBuilder {
    /// The default user's password (`requirepass`): connections must `AUTH` (or
    /// `HELLO … AUTH default <password>`) before anything else.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// An ACL user that can `AUTH user pass`.
    pub fn user(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.users.insert(user.into(), password.into());
        self
    }

    /// Connections start unauthenticated even without a default password (only the
    /// users added with [`user`](Self::user) can log in).
    pub fn require_auth(mut self) -> Self {
        self.require_auth = true;
        self
    }

    /// How `CLIENT MAINT_NOTIFICATIONS` is answered (default [`OptIn::Accept`]).
    pub fn maint_opt_in(mut self, mode: OptIn) -> Self {
        self.opt_in = mode;
        self
    }

    /// Reports `role:slave` / `role: replica` and refuses writes with `-READONLY`.
    pub fn role_replica(mut self) -> Self {
        self.replica = true;
        self
    }

    /// Answers `HELLO 3` in RESP2 form (flat array) and stays on RESP2, as a proxy
    /// that only speaks RESP2 does.
    pub fn hello_resp2_only(mut self) -> Self {
        self.hello = HelloMode::Resp2Only;
        self
    }

    /// Has no `HELLO` command at all (Redis 5): clients must fall back to RESP2.
    pub fn without_hello(mut self) -> Self {
        self.hello = HelloMode::Absent;
        self
    }

    /// Serves TLS (only): a certificate `issuer` signs, minted at start, valid for
    /// `localhost`, `127.0.0.1` and the names added with [`tls_name`](Self::tls_name).
    /// A client trusts it with [`FakeIssuer::tls_options`]; fakes started with the same
    /// issuer verify under one trust, as the nodes of one deployment do.
    pub fn tls(mut self, issuer: &FakeIssuer) -> Self {
        self.tls = Some(issuer.clone());
        self
    }

    /// Another DNS name the TLS certificate is valid for (e.g. the name a
    /// `ScriptedResolver` gives this server); without [`tls`](Self::tls), nothing.
    pub fn tls_name(mut self, name: impl Into<String>) -> Self {
        self.tls_names.push(name.into());
        self
    }

    /// Binds 127.0.0.1 on an ephemeral port and starts serving.
    pub fn start(self) -> io::Result<FakeServer> {
        start(self, None)
    }

    pub(crate) fn start_in_cluster(self, link: ClusterLink) -> io::Result<FakeServer> {
        start(self, Some(link))
    }
}

fn start(b: FakeServerBuilder, cluster: Option<ClusterLink>) -> io::Result<FakeServer> {
    let tls = match &b.tls {
        Some(issuer) => Some(issuer.server_config(&b.tls_names)?),
        None => None,
    };
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let addr = listener.local_addr()?;
    let seq = match &cluster {
        Some(link) => link.state.seq.clone(),
        None => Arc::new(AtomicU64::new(0)),
    };
    let inner = Arc::new(ServerInner {
        addr,
        config: ServerConfig {
            password: Mutex::new(b.password),
            users: Mutex::new(b.users),
            require_auth: b.require_auth,
            replica: b.replica,
            hello: b.hello,
        },
        opt_in: Mutex::new(b.opt_in),
        store: Store::new(),
        faults: Faults::default(),
        stats: Stats::default(),
        conns: Mutex::new(BTreeMap::new()),
        threads: Mutex::new(Vec::new()),
        shutdown: AtomicBool::new(false),
        next_conn_id: AtomicU64::new(1),
        maint: MaintState::new(seq),
        cluster: OnceLock::new(),
        listen: Mutex::new(Listening {
            refuse: false,
            listening: true,
        }),
        listen_changed: Condvar::new(),
        started: Instant::now(),
        run_id: format!(
            "{:016x}{:016x}{:08x}",
            super::rng::next(),
            super::rng::next(),
            super::rng::next() as u32
        ),
        tls,
    });
    if let Some(link) = cluster {
        let _ = inner.cluster.set(link);
    }
    let accept_inner = inner.clone();
    let accept = std::thread::Builder::new()
        .name(format!("fake-{}-accept", addr.port()))
        .spawn(move || accept_loop(accept_inner, listener))?;
    Ok(FakeServer {
        inner,
        accept: Mutex::new(Some(accept)),
        issuer: b.tls,
    })
}

impl FakeServer {
    /// Starts a server with default settings (no password, opt-in accepted).
    pub fn start() -> io::Result<FakeServer> {
        FakeServer::builder().start()
    }

    /// Starts a server with default settings that serves TLS, under an issuer minted
    /// for it ([`issuer`](Self::issuer) hands it to the test). To put several fakes
    /// under one issuer, use [`FakeServerBuilder::tls`].
    pub fn start_tls() -> io::Result<FakeServer> {
        FakeServer::builder().tls(&FakeIssuer::new()?).start()
    }

    /// A builder for a server with a password, users, a replica role, …
    pub fn builder() -> FakeServerBuilder {
        FakeServerBuilder {
            password: None,
            users: HashMap::new(),
            require_auth: false,
            replica: false,
            opt_in: OptIn::Accept,
            hello: HelloMode::Normal,
            tls: None,
            tls_names: Vec::new(),
        }
    }

    /// The address it listens on (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.inner.addr.port()
    }

    /// `redis://127.0.0.1:<port>`, ready for `Client::connect`; `rediss://…` when it
    /// serves TLS (the client must then also trust [`issuer`](Self::issuer)).
    pub fn url(&self) -> String {
        let scheme = if self.issuer.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://{}", self.inner.addr)
    }

    /// The issuer of its TLS certificate, to trust; `None` when it serves plain TCP.
    pub fn issuer(&self) -> Option<&FakeIssuer> {
        self.issuer.as_ref()
    }

    /// Changes how `CLIENT MAINT_NOTIFICATIONS` is answered from now on.
    pub fn set_maint_opt_in(&self, mode: OptIn) {
        *self.inner.opt_in.lock() = mode;
    }

    /// Stops listening, closes every connection and joins every thread it started.
    /// Idempotent; also done on `Drop`.
    pub fn shutdown(&self) {
        let inner = &self.inner;
        if inner.shutdown.swap(true, Ordering::AcqRel) {
            return;
        }
        inner.listen_changed.notify_all();
        inner.poke_accept();
        if let Some(t) = self.accept.lock().take() {
            let _ = t.join();
        }
        for c in inner.connections() {
            c.close();
        }
        inner.faults.wake();
        inner.maint.wake();
        let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *inner.threads.lock());
        for t in threads {
            // Threads blocked on a condition wake up at least every 50 ms and see the flag.
            inner.store.pushed.notify_all();
            let _ = t.join();
        }
    }

    /// See [`refuse_connections`](Self::refuse_connections).
    pub(crate) fn set_refusing(&self, refuse: bool) {
        let inner = &self.inner;
        {
            let mut state = inner.listen.lock();
            if state.refuse == refuse {
                return;
            }
            state.refuse = refuse;
        }
        inner.listen_changed.notify_all();
        if refuse {
            inner.poke_accept();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut state = inner.listen.lock();
        while state.listening == refuse && Instant::now() < deadline && !inner.is_shutdown() {
            inner
                .listen_changed
                .wait_for(&mut state, Duration::from_millis(20));
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
