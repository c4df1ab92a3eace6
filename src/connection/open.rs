//! Opening a connection: dial (through the node's `Dial`, which a handoff may
//! redirect), TLS, the handshake, then the reader and writer threads.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use std::collections::VecDeque;

use super::read_token::ReadToken;
use super::shared::{PendingQueue, Shared};
use super::transport::{self, Transport};
use super::writing::{self, Outgoing};
use super::{
    handshake, ms, read_turns, reader, spawn, waiting, writer, Connection, ConnectionConfig,
    ConnectionInfo,
};
use crate::clock::deadline_after;
use crate::error::{Error, FailureKind, Result};
use crate::metrics;
use crate::resp::Decoder;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Connection {
    /// Connects, performs TLS and the handshake, then starts the reader and writer.
    pub(crate) fn open(cfg: &ConnectionConfig) -> Result<Connection> {
        Connection::open_via(cfg, None)
    }

    /// Like `open`, to an address a handoff chose rather than what the name resolves
    /// to first (stepping sideways to a sibling the record already names).
    pub(crate) fn open_to(cfg: &ConnectionConfig, addr: SocketAddr) -> Result<Connection> {
        Connection::open_via(cfg, Some(addr))
    }

    fn open_via(cfg: &ConnectionConfig, to: Option<SocketAddr>) -> Result<Connection> {
        let stopwatch = metrics::Stopwatch::start();
        let conn = Connection::establish(cfg, to)?;
        metrics::connection_created(&cfg.endpoint.host, cfg.endpoint.port, stopwatch);
        Ok(conn)
    }

    fn establish(cfg: &ConnectionConfig, to: Option<SocketAddr>) -> Result<Connection> {
        // Before the handshake asks the provider for credentials: counted from now
        // under a generation no newer than theirs, so a census taken while this one
        // dials never misses it (it leaves again if the dial fails).
        let auth = cfg
            .census
            .as_ref()
            .map(|c| c.enroll(cfg.options.credentials.as_ref()));
        let endpoint_text = cfg.endpoint.to_string();
        let deadline = deadline_after(Instant::now(), cfg.options.connect_timeout);
        let with_endpoint = |e: Error| e.with_endpoint(endpoint_text.clone());
        // Where a `MOVING` redirected the node, when this dial goes there (an address a
        // handoff chose is reached under the node's own name).
        let redirected = to.is_none().then(|| cfg.dial.redirected()).flatten();
        let system = crate::resolve::SystemResolver;
        let resolver: &dyn crate::resolve::Resolver =
            cfg.options.resolver.as_deref().unwrap_or(&system);
        let stream = transport::connect_tcp(
            &cfg.endpoint,
            cfg.options.connect_timeout,
            resolver,
            &cfg.dial,
            to,
        )
        .map_err(with_endpoint)?;
        let peer_addr = stream.peer_addr().ok();
        // For the `moving-endpoint-type` detection (internal or external peer).
        let peer = peer_addr.map(|a| a.ip());
        let left = deadline.saturating_duration_since(Instant::now());
        let mut transport = Transport::establish(
            stream,
            cfg.tls.as_deref(),
            redirected.as_ref().map(|e| e.host.as_str()),
            left.max(ms(1)),
        )
        .map_err(with_endpoint)?;
        let mut decoder = Decoder::new();
        let hs =
            handshake::run(&mut transport, &mut decoder, cfg, deadline, peer).map_err(|e| {
                transport.shutdown.shutdown();
                with_endpoint(e)
            })?;
        let info = ConnectionInfo {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            endpoint: cfg.endpoint.clone(),
            protocol: hs.protocol,
            server_mode: hs.server.iter().find_map(|(k, v)| {
                (k.as_bytes() == Some(b"mode"))
                    .then(|| {
                        v.as_bytes()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                    })
                    .flatten()
            }),
            maint_notifications: hs.maint_notifications,
            peer: peer_addr,
        };
        let Transport {
            read,
            write,
            shutdown,
            ..
        } = transport;
        let shared = Arc::new(Shared {
            info,
            endpoint_text,
            out: Mutex::new(Outgoing {
                buf: writing::fresh_buffer(),
                spare: writing::fresh_buffer(),
                busy: false,
                closed: false,
                refusing: false,
                large_waiting: 0,
                writer_waiting: false,
                guarded: None,
            }),
            writer_wake: Condvar::new(),
            write_done: Condvar::new(),
            socket: Mutex::new(write),
            pending: Mutex::new(PendingQueue {
                queue: VecDeque::with_capacity(64),
                token: ReadToken::new(),
                next_place: 0,
            }),
            reading: Mutex::new(reader::ReadState::new(decoder, read)),
            reader_wake: Condvar::new(),
            board: Arc::default(),
            direct_ok: !cfg.subscriber,
            closed: AtomicBool::new(false),
            failure: Mutex::new(None),
            shutdown,
            epoch: Instant::now(),
            last_read_ms: AtomicU64::new(0),
            last_write_ms: AtomicU64::new(0),
            caller_inflight: AtomicUsize::new(0),
            returning: AtomicUsize::new(0),
            flushed: AtomicU64::new(0),
            write_times: waiting::WriteTimes::default(),
            turn: waiting::TurnTime::default(),
            floor: waiting::ReplyFloor::new(hs.round_trip.unwrap_or(waiting::policy::NEAR)),
            timeouts: cfg.timeouts.clone(),
            company: cfg.company.clone(),
            on_push: cfg.on_push.clone(),
            on_failure: cfg.on_failure.clone(),
            subscriber: cfg.subscriber,
            breaker: cfg.breaker.as_ref().map(|b| {
                // Every connection starts afresh, even with a policy that shares state.
                let accumulator = b.create_accumulator();
                accumulator.reset();
                accumulator
            }),
            auth,
        });
        for push in hs.early_pushes {
            shared.dispatch_push(push);
        }
        let name = |what: &str| format!("rr-{what}{} {}", cfg.role, shared.endpoint_text);
        let mut threads = Vec::with_capacity(2);
        let s = shared.clone();
        threads.push(spawn(name("read"), move || read_turns::run(s))?);
        let s = shared.clone();
        match spawn(name("write"), move || writer::run(s)) {
            Ok(t) => threads.push(t),
            Err(e) => {
                shared.fail(FailureKind::ConnectFailed, e.clone());
                return Err(e);
            }
        }
        Ok(Connection {
            shared,
            threads: Mutex::new(threads),
        })
    }
}
