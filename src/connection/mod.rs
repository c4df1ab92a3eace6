//! One physical connection: socket (+TLS), handshake, a writer thread, a reader thread,
//! and the FIFO of callers waiting for replies.
//!
//! Who writes: with few callers in flight (`FEW_IN_FLIGHT`), a caller writes
//! everything buffered together with its own frame; with more, the writer thread sends
//! everything queued in one write. A caller answered together with others holds its
//! frame briefly so the last of them sends all of them in one write, which the server
//! reads and answers at once (see `Connection::await_flush`).
//!
//! Who reads: whoever holds the read token, normally the reader thread. After two
//! requests in a row from callers alone on the connection, the thread stands down and
//! the next lone caller reads its own reply (polling the socket briefly, then
//! blocking), as a dedicated connection would: no hop through another thread. With few
//! callers in flight the token goes from caller to caller instead: one done reading
//! hands it to the caller whose reply comes next (`reader::pass_on`), which was going
//! to be woken for its reply anyway. A request that cannot read for itself, a
//! half-read frame nobody waits on, or a tick in which nobody read hands the token back
//! to the thread, so pushes and the close of an idle connection are still seen within
//! tens of milliseconds (`read_token::ReclaimTick`).
//! A caller reading polls the socket briefly, yielding between looks, before it
//! blocks; and a reader lets a send under way on the socket return (for at most
//! 50 µs) before it enters `recv`, where the kernel's socket lock would put it to
//! sleep (`reader::direct`, `reader::read_once`). The token says who must read, not
//! who may: between its yields a waiting caller reads what has arrived when nobody
//! is reading at that moment (`reader::help_read`), so the replies wait for whichever
//! of them runs first, not for the holder's turn on a core.
//!
//! Who wakes: a caller waiting for its reply spins, then yields (looking at the
//! socket between yields, see above) for about two round trips, then sleeps; one
//! found yielding when its reply lands needs no wake-up. Whoever reads marks the
//! replies of one read done and then wakes every sleeping caller they answered at
//! once (`wake_board`, one futex call per 32 places on Linux, an unpark each
//! elsewhere), so a woken caller does not take the reader's core between two replies
//! of the same read.
//!
//! Locks, in the only order they are ever nested (a thread holding one never waits for
//! one above it):
//!
//! 1. `reading`, the read token's own state (decoder, read half): held for a whole
//!    read turn, blocking `recv` included (a polling caller lets go of it while it
//!    yields), so nothing waits for it while holding a lock below
//!    (`look_before_sending` and `reader::help_read` only try it);
//! 2. `out`, the outgoing buffer (`writer_wake` waits on it);
//! 3. `pending`, the FIFO of waiters and who holds the token (`reader_wake` waits on
//!    it);
//! 4. leaves, under which nothing is taken: `failure`, a reply slot's outcome.
//!
//! `socket` (the write half) is taken with none of `out` or `pending` held, so a
//! write that blocks on a full socket never stalls callers queueing frames or the
//! reader completing replies. The read token moves between its holders (the reader
//! thread, a caller, nobody) only under `pending` (see `read_token`).
//!
//! Owns: getting frames onto the wire in order and each reply to the caller that sent
//! the matching request. Must never: sleep, resolve names or call REST on the reader or
//! writer thread; let a late reply reach another caller; lose a waiter (every pending
//! entry ends completed, failed or abandoned).

pub(crate) mod census;
pub(crate) mod company;
pub(crate) mod deadline;
mod handshake;
mod read_token;
mod reader;
pub(crate) mod reply_slot;
pub(crate) mod tls;
pub(crate) mod transport;
mod waiting;
mod wake_board;
mod writer;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::clock::deadline_after;
use crate::config::{Endpoint, Options, Protocol};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::maintenance::timeouts::ServerTimeouts;
use crate::metrics;
use crate::policy::{Accumulator, BreakerPolicy, FaultContext};
use crate::resp::{Decoder, Value};
pub(crate) use deadline::{CallTimeout, Deadline};
use reply_slot::{Outcome, ReplySlot, Waited};
use tls::TlsSetup;
use transport::{ShutdownHandle, Transport, WriteHalf};
use waiting::Gauges;

/// Called with every push frame (pub/sub, maintenance) the connection receives.
pub(crate) type PushHandler = Arc<dyn Fn(&ConnectionInfo, Value) + Send + Sync>;
/// Called once when the connection fails or is closed.
pub(crate) type FailureHandler = Arc<dyn Fn(&ConnectionInfo, FailureKind, &Error) + Send + Sync>;

/// Everything needed to open a connection to one server.
#[derive(Clone)]
pub(crate) struct ConnectionConfig {
    pub endpoint: Endpoint,
    pub options: Arc<Options>,
    pub tls: Option<Arc<TlsSetup>>,
    pub timeouts: Arc<ServerTimeouts>,
    pub on_push: Option<PushHandler>,
    pub on_failure: Option<FailureHandler>,
    /// What the connection serves, for thread names (`rr-read`, `rr-read-blocking`).
    pub role: &'static str,
    /// A pub/sub connection: RESP2 message arrays are pushes, and an error reply no
    /// request waits for (a refused SUBSCRIBE) goes to the push handler instead of
    /// failing the connection.
    pub subscriber: bool,
    /// Send `READONLY` in the handshake (cluster replica reads).
    pub readonly: bool,
    /// The circuit breaker watching this connection's caller traffic.
    pub breaker: Option<Arc<dyn BreakerPolicy>>,
    /// Where the node's connections dial (a handoff may redirect or retire addresses).
    pub dial: Arc<transport::Dial>,
    /// Counts the connection under the credentials generation it authenticates with
    /// (every connection of a deployment; none for sentinels, which have their own).
    pub census: Option<Arc<census::AuthCensus>>,
    /// The client's callers waiting for a reply, on any of its connections.
    pub company: Arc<company::Company>,
}

/// Identity of a connection, handed to hooks.
#[derive(Debug, Clone)]
#[allow(dead_code)] // id and protocol are read by pub/sub and maintenance handlers
pub(crate) struct ConnectionInfo {
    pub id: u64,
    pub endpoint: Endpoint,
    pub protocol: Protocol,
    /// `mode` from the server's HELLO reply (`standalone`, `cluster`); RESP2: unknown.
    pub server_mode: Option<String>,
    /// Whether this connection opted in to maintenance notifications (RESP3 and the
    /// server's `+OK`); decided again on every connection, so re-armed on reconnect.
    pub maint_notifications: bool,
    /// The address connected to (what a `MOVING` handoff is leaving).
    pub peer: Option<SocketAddr>,
}

/// A request waiting for its replies.
pub(crate) struct Pending {
    slot: Arc<ReplySlot>,
    expected: usize,
    /// When it was queued: the reply floor is measured from here.
    sent_at: Instant,
    sent_ms: u64,
    /// The call's deadline, counted from the call's start (before any backlog wait),
    /// not from the send.
    deadline: Deadline,
    traffic: Traffic,
    /// Sent by a caller alone on the connection (see `ReadState::lone_streak`).
    lone: bool,
}

/// Whose request it is, which decides how the connection treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// A user's call: counted in flight, watched by the circuit breaker, its timeout
    /// relaxed during maintenance; its caller may read replies for others.
    Caller,
    /// The client's own query (a probe, the topology, a role or sentinel query,
    /// re-authentication): waited for and relaxed, but neither counted nor watched,
    /// and its caller never reads for others.
    Internal,
    /// A heartbeat nobody blocks on ([`Connection::request_detached`]): never relaxed,
    /// so a server that dies during maintenance is still noticed.
    Heartbeat,
}

impl Traffic {
    /// Counted in flight and fed to the circuit breaker.
    pub(crate) fn is_caller(self) -> bool {
        self == Traffic::Caller
    }

    /// Whether its timeout follows a maintenance window (and so may the dead-connection
    /// check's).
    fn relaxable(self) -> bool {
        self != Traffic::Heartbeat
    }

    /// Whether its caller waits and may take the read token.
    fn can_lead(self) -> bool {
        self == Traffic::Caller
    }
}

/// The FIFO of waiters, and who is reading their replies.
struct PendingQueue {
    queue: VecDeque<Pending>,
    /// Who reads the replies.
    token: read_token::ReadToken,
    /// The next request's place (see `wake_board`).
    next_place: u32,
}

struct Outgoing {
    buf: Vec<u8>,
    spare: Vec<u8>,
    busy: bool,
    closed: bool,
    /// No new requests (a handoff drains this connection before closing it): they
    /// come back unsent and go to the connection that replaced it.
    refusing: bool,
}

pub(crate) struct Shared {
    info: ConnectionInfo,
    endpoint_text: String,
    out: Mutex<Outgoing>,
    writer_wake: Condvar,
    socket: Mutex<WriteHalf>,
    pending: Mutex<PendingQueue>,
    /// The read token (see `reader`).
    reading: Mutex<reader::ReadState>,
    /// Where callers sleep for their replies.
    board: Arc<wake_board::WakeBoard>,
    /// Wakes a stood-down reader thread (used with `pending`).
    reader_wake: Condvar,
    /// Whether a lone caller may read its own reply: not on a subscription connection,
    /// whose pushes are its traffic and belong on the reader thread.
    direct_ok: bool,
    closed: AtomicBool,
    failure: Mutex<Option<FailureKind>>,
    shutdown: ShutdownHandle,
    epoch: Instant,
    last_read_ms: AtomicU64,
    last_write_ms: AtomicU64,
    caller_inflight: AtomicUsize,
    /// Callers answered and not yet back with their next request.
    returning: AtomicUsize,
    /// Buffers taken for writing so far.
    flushed: AtomicU64,
    /// How soon replies come at best: how far away the server is (see `waiting`).
    floor: waiting::ReplyFloor,
    timeouts: Arc<ServerTimeouts>,
    company: Arc<company::Company>,
    on_push: Option<PushHandler>,
    on_failure: Option<FailureHandler>,
    subscriber: bool,
    breaker: Option<Box<dyn Accumulator>>,
    /// The credentials generation it is on (see `census`).
    auth: Option<census::Enrolled>,
}

/// A live connection. Cheap to share behind an `Arc`; closing it ends both threads.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

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
                buf: Vec::with_capacity(16 * 1024),
                spare: Vec::with_capacity(16 * 1024),
                busy: false,
                closed: false,
                refusing: false,
            }),
            writer_wake: Condvar::new(),
            socket: Mutex::new(write),
            pending: Mutex::new(PendingQueue {
                queue: VecDeque::with_capacity(64),
                token: read_token::ReadToken::new(),
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
        threads.push(spawn(name("read"), move || reader::run(s))?);
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

    /// Sends one encoded request expecting `replies` replies and waits for them, up to
    /// the call's `deadline` (relaxed from the call's start while a maintenance window
    /// is in force, never from this send: the caller may have waited in a backlog).
    /// `Unsent` means nothing reached the wire (the connection was already closed), so
    /// the request may be sent elsewhere without risk of running twice.
    pub(crate) fn request(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
    ) -> std::result::Result<Outcome, RequestError> {
        let slot = Arc::new(ReplySlot::on_board(self.shared.board.clone()));
        // Counted among the client's waiting callers until the call ends (the lane
        // rule and `few_in_flight` read the count).
        let _company = traffic.is_caller().then(|| self.shared.company.join());
        self.shared.look_before_sending();
        let submitted = self
            .submit(frame, replies, deadline, traffic, slot.clone())
            .map_err(RequestError::Unsent)?;
        if let Some(seen) = submitted.held {
            self.await_flush(seen);
        }
        let timeouts = &self.shared.timeouts;
        let deadline_at = || deadline.on(timeouts);
        // With the token free: read our own reply, as a dedicated connection would,
        // saving the hop from the reader thread. Otherwise: read when the token is
        // handed to us (our reply is the next one owed), or take the reply from
        // whoever reads.
        let mut read = submitted.direct;
        // A caller waits as the connection's waiting policy says (see `waiting`):
        // actively while its server is near, so one found runnable when its reply
        // lands needs no wake-up, and between its yields it reads for the others when
        // nobody is (see `reader::help_read`); parked at once when the server is far.
        let may_help = traffic.can_lead() && self.shared.direct_ok;
        let look = || {
            if may_help {
                reader::help_read(&self.shared);
            }
        };
        let waited = loop {
            if read {
                reader::direct(&self.shared, &slot, deadline_at);
            }
            match slot.wait(&*self.shared, deadline_at, look) {
                Waited::Lead => read = slot.take_lead(),
                other => break other,
            }
        };
        // Handed the token as we gave up (or as the connection failed): pass it on.
        // Looked at under `pending`, the lock the hand-over is made under, so a token
        // handed over just as we abandoned is never left with nobody.
        if !matches!(waited, Waited::Ready(_)) || slot.lead_pending() {
            let led = {
                let _order = self.shared.pending.lock();
                slot.take_lead()
            };
            if led {
                let rs = self.shared.reading.lock();
                reader::pass_on(&self.shared, &rs);
            }
        }
        let result = match waited {
            Waited::Ready(outcome) => Ok(outcome),
            // `Lead` never leaves the loop above.
            Waited::Lead | Waited::TimedOut => {
                let waited = Instant::now().saturating_duration_since(deadline.start());
                Err(RequestError::Failed(
                    Error::new(
                        ErrorKind::Timeout,
                        format!("no reply within {} ms", waited.as_millis()),
                    )
                    .with_endpoint(self.shared.endpoint_text.clone())
                    .with_maintenance(timeouts.maintenance()),
                ))
            }
        };
        if traffic.is_caller() {
            self.observe(&result);
        }
        result
    }

    /// Feeds the outcome of caller traffic to the circuit breaker; a trip closes the
    /// connection (the owner reconnects, a group moves traffic away).
    pub(crate) fn observe(&self, result: &std::result::Result<Outcome, RequestError>) {
        let Some(breaker) = &self.shared.breaker else {
            return;
        };
        let fault = match result {
            Ok(Outcome::One(v)) => match v.error_message() {
                Some(m) => FaultContext::from_kind(Error::from_server_reply(m).kind()),
                None => FaultContext::success(),
            },
            Ok(Outcome::Many(_)) => FaultContext::success(),
            Ok(Outcome::Failed(e)) | Err(RequestError::Failed(e)) => FaultContext::from_error(e),
            Err(RequestError::Unsent(_)) => return,
        };
        // Classified before the accumulator sees it: an application error (WRONGTYPE,
        // a script error) is a success that carries its kind aside.
        let fault = if fault.is_fault() && !breaker.is_failure(&fault) {
            fault.as_application_error()
        } else {
            fault
        };
        breaker.observe(&fault);
        if !breaker.is_healthy() {
            log::warn!("{}: circuit breaker tripped", self.shared.endpoint_text);
            self.close(FailureKind::CircuitBreaker);
        }
    }

    /// Writes a frame that gets no reply of its own (SUBSCRIBE and friends, whose
    /// confirmations arrive as push frames).
    pub(crate) fn send_oneway(&self, frame: &[u8]) -> Result<()> {
        let shared = &self.shared;
        let mut out = shared.out.lock();
        if out.closed || out.refusing {
            return Err(shared.closed_error());
        }
        out.buf.extend_from_slice(frame);
        let wake = !out.busy;
        drop(out);
        if wake {
            shared.writer_wake.notify_one();
        }
        Ok(())
    }

    /// Queues a request whose reply nobody waits for by blocking (heartbeats): the slot
    /// can be polled, and the dead-connection check watches it with its own timeout,
    /// never relaxed.
    pub(crate) fn request_detached(
        &self,
        frame: &[u8],
        timeout: Duration,
    ) -> Result<Arc<ReplySlot>> {
        let slot = Arc::new(ReplySlot::for_current_thread());
        self.submit(
            frame,
            1,
            Deadline::after(timeout),
            Traffic::Heartbeat,
            slot.clone(),
        )?;
        Ok(slot)
    }

    /// Queues a request (see [`Submitted`]).
    fn submit(
        &self,
        frame: &[u8],
        replies: usize,
        deadline: Deadline,
        traffic: Traffic,
        slot: Arc<ReplySlot>,
    ) -> Result<Submitted> {
        let shared = &self.shared;
        let can_lead = traffic.can_lead();
        let mut pending = Pending {
            slot,
            expected: replies.max(1),
            sent_at: Instant::now(),
            sent_ms: shared.now_ms(),
            deadline,
            traffic,
            lone: false,
        };
        let mut out = shared.out.lock();
        if out.closed || out.refusing {
            return Err(shared.closed_error());
        }
        if traffic.is_caller() {
            shared.caller_inflight.fetch_add(1, Ordering::Relaxed);
        }
        // Registered before the bytes can go out, under the same lock that orders the
        // bytes, so the FIFO of waiters is exactly the order of requests on the wire.
        let submitted = {
            let mut q = shared.pending.lock();
            let alone = q.queue.is_empty();
            // Caller work only: heartbeats and probes never read for themselves.
            pending.lone = alone && can_lead;
            let direct = can_lead && q.token.take_free();
            pending.slot.set_place(wake_board::Place(q.next_place));
            q.next_place = q.next_place.wrapping_add(1);
            q.queue.push_back(pending);
            if !direct && q.token.is_free() {
                // Nobody is reading: the reader thread takes the token back.
                q.token.give_to_thread();
                shared.reader_wake.notify_one();
            }
            Submitted {
                alone,
                direct,
                held: None,
            }
        };
        let alone = submitted.alone;
        if out.busy {
            // Whoever is writing looks at the buffer again when it finishes.
            out.buf.extend_from_slice(frame);
            return Ok(submitted);
        }
        if !(alone || shared.few_in_flight()) || out.buf.len() + frame.len() > DIRECT_WRITE_MAX {
            // Others are in flight: queue for the writer thread, which sends everything
            // queued in one write. Measured: callers writing for themselves under load
            // made 0.77 writes per command at 16 threads; queuing made 0.28. A large
            // frame goes there too: `write_all` has no deadline, and a server that
            // stops reading would hold its caller in it until the connection is closed.
            out.buf.extend_from_slice(frame);
            drop(out);
            shared.writer_wake.notify_one();
            return Ok(submitted);
        }
        out.buf.extend_from_slice(frame);
        if can_lead
            && waiting::policy::holds_for_cohort(shared.in_flight())
            && shared.others_returning()
        {
            // Callers answered with us are about to send too: the last of them sends
            // all the frames in one write, which the server reads and answers at once.
            let mut submitted = submitted;
            submitted.held = Some(shared.flushed.load(Ordering::Acquire));
            return Ok(submitted);
        }
        // Few in flight: write from this thread, saving the writer's wake-up.
        shared.write_out(out);
        Ok(submitted)
    }

    /// A frame held for callers answered together with ours: waits briefly for the
    /// last of them to send it (as the waiting policy allows), then sends it ourselves.
    fn await_flush(&self, seen: u64) {
        let shared = &self.shared;
        let mut waiter = waiting::Waiter::new(waiting::Wait::Cohort);
        loop {
            if shared.flushed.load(Ordering::Acquire) > seen {
                return;
            }
            match waiter.next(&**shared) {
                waiting::Plan::Park => break,
                plan => waiter.snooze(plan),
            }
        }
        let out = shared.out.lock();
        if shared.flushed.load(Ordering::Acquire) > seen {
            return;
        }
        shared.returning.store(0, Ordering::Relaxed);
        if out.busy || out.buf.is_empty() || out.closed {
            return;
        }
        if out.buf.len() > DIRECT_WRITE_MAX {
            // A large frame joined it: the writer thread sends those (see submit).
            drop(out);
            shared.writer_wake.notify_one();
            return;
        }
        shared.write_out(out);
    }

    /// Closes the connection on purpose; waiters fail with `ConnectionClosed`.
    pub(crate) fn close(&self, kind: FailureKind) {
        let detail = match kind {
            FailureKind::ClosedByClient => "the connection was closed by the client",
            FailureKind::CircuitBreaker => "the circuit breaker closed the connection",
            FailureKind::MaintenanceHandoff => "recycled to follow a maintenance handoff",
            _ => "the connection was closed",
        };
        self.shared
            .fail(kind, Error::new(ErrorKind::ConnectionClosed, detail));
    }

    /// Takes no new requests (they come back unsent, so a caller retries them on the
    /// connection that replaced this one) while those already sent are answered: the
    /// first half of a handoff's drain-then-close.
    pub(crate) fn stop_accepting(&self) {
        self.shared.out.lock().refusing = true;
    }

    /// Waits for both threads to end (never call from one of them).
    pub(crate) fn join(&self) {
        let threads = std::mem::take(&mut *self.threads.lock());
        let me = thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    pub(crate) fn info(&self) -> &ConnectionInfo {
        &self.shared.info
    }

    /// The credentials generation this connection authenticated with (`None` when it
    /// is not counted, or closed).
    pub(crate) fn auth_generation(&self) -> Option<u64> {
        self.shared
            .auth
            .as_ref()
            .and_then(census::Enrolled::generation)
    }

    /// The connection re-authenticated with the credentials of `generation`.
    pub(crate) fn reauthenticated(&self, generation: u64) {
        if let Some(auth) = &self.shared.auth {
            auth.advance(generation);
        }
    }

    /// Whether this connection opted in to maintenance notifications.
    pub(crate) fn maint_notifications(&self) -> bool {
        self.shared.info.maint_notifications
    }

    /// Caller requests in flight (probes, heartbeats and handshakes excluded).
    pub(crate) fn caller_inflight(&self) -> usize {
        self.shared.caller_inflight.load(Ordering::Relaxed)
    }

    /// Time since anything was read or written.
    pub(crate) fn idle_for(&self) -> Duration {
        let s = &self.shared;
        let last = s
            .last_read_ms
            .load(Ordering::Relaxed)
            .max(s.last_write_ms.load(Ordering::Relaxed));
        ms(s.now_ms().saturating_sub(last))
    }

    pub(crate) fn has_pending(&self) -> bool {
        !self.shared.pending.lock().queue.is_empty()
    }

    /// How long the oldest request in flight has gone without a reply byte: the time
    /// since it was sent or since anything was last read, whichever is later; zero
    /// when nothing is in flight. A group checks a member out of turn on this.
    pub(crate) fn stalled_for(&self) -> Duration {
        let s = &self.shared;
        let Some(sent) = s.pending.lock().queue.front().map(|p| p.sent_ms) else {
            return Duration::ZERO;
        };
        let since = sent.max(s.last_read_ms.load(Ordering::Relaxed));
        ms(s.now_ms().saturating_sub(since))
    }

    /// Whether the connection stopped answering: the oldest request's timeout, counted
    /// from its send (as it applies now, relaxed or not; a heartbeat's never relaxed),
    /// has passed, plus `grace`, with nothing read since it was sent. The owner then
    /// stops sending on it and dials a replacement, but lets it drain (see
    /// [`Connection::drained`]): a neighbour's deadline never fails a request whose own
    /// has not passed.
    pub(crate) fn is_unresponsive(&self, grace: Duration) -> bool {
        let s = &self.shared;
        let pending = s.pending.lock();
        let Some(oldest) = pending.queue.front() else {
            return false;
        };
        let now = s.now_ms();
        s.last_read_ms.load(Ordering::Relaxed) <= oldest.sent_ms
            && now > s.silent_limit_ms(oldest).saturating_add(millis(grace))
    }

    /// Whether a connection set aside as unresponsive may be closed now: nothing is
    /// in flight any more, or every request in flight is past its own deadline plus
    /// `grace` (their callers have been told; only abandoned slots remain).
    pub(crate) fn drained(&self, grace: Duration) -> bool {
        let s = &self.shared;
        let now = Instant::now();
        s.pending
            .lock()
            .queue
            .iter()
            .all(|p| now > deadline_after(s.due(p), grace))
    }
}

impl waiting::Gauges for Shared {
    fn floor(&self) -> Duration {
        self.floor.get()
    }

    fn in_flight(&self) -> usize {
        self.caller_inflight.load(Ordering::Relaxed)
    }
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// How long after its send a request may go unanswered before the connection is
    /// taken for dead, in this connection's milliseconds: its timeout as it applies
    /// now (a relaxable one follows the maintenance window in force), counted from the
    /// send, not from the call's start. A caller that waited out most of its timeout in
    /// a backlog must not make a fresh connection look dead a moment after it sent.
    fn silent_limit_ms(&self, p: &Pending) -> u64 {
        let timeout = if p.traffic.relaxable() {
            self.timeouts.effective(p.deadline.timeout())
        } else {
            p.deadline.timeout()
        };
        p.sent_ms.saturating_add(millis(timeout))
    }

    /// When a request's call runs out of time, as it applies now (a relaxable one
    /// follows the maintenance window in force): the instant its caller is told.
    fn due(&self, p: &Pending) -> Instant {
        if p.traffic.relaxable() {
            p.deadline.on(&self.timeouts)
        } else {
            p.deadline.unrelaxed()
        }
    }

    fn closed_error(&self) -> Error {
        let failure = (*self.failure.lock()).unwrap_or(FailureKind::SocketClosed);
        Error::new(ErrorKind::ConnectionClosed, "the connection is closed")
            .with_endpoint(self.endpoint_text.clone())
            .with_failure(failure)
            .with_maintenance(self.timeouts.maintenance())
    }

    /// On a connection quiet for a while whose token nobody holds (the reader thread
    /// stood down and looks only once per tick), looks at the socket before sending:
    /// a close the server made meanwhile fails the connection now, so the request
    /// comes back unsent and goes to a fresh one, instead of being written into a
    /// closed connection and failing as "may have run".
    fn look_before_sending(&self) {
        let now = self.now_ms();
        let last = self
            .last_read_ms
            .load(Ordering::Relaxed)
            .max(self.last_write_ms.load(Ordering::Relaxed));
        if now.saturating_sub(last) < QUIET_MS {
            return;
        }
        let Some(mut rs) = self.reading.try_lock() else {
            return; // someone is reading: it sees the close
        };
        let free = {
            let q = self.pending.lock();
            q.token.is_free()
        };
        if free && rs.read.can_poll() {
            reader::look(self, &mut rs);
        }
    }

    /// Whether few enough callers are in flight that each is worth serving from its
    /// own thread (writing its frame, holding it for its cohort, reading when handed
    /// the token) rather than through the reader and writer threads.
    ///
    /// Counted on the connection and client-wide: with 64 callers the connection's
    /// own count dips below the bar each time a read answers most of them, and the
    /// first callers back would then write, hold and wait as if alone, taking the
    /// cores the others' replies need.
    fn few_in_flight(&self) -> bool {
        waiting::policy::is_few(self.in_flight()) && waiting::policy::is_few(self.company.waiting())
    }

    /// Whether callers answered with us are still to send (counts us back in).
    fn others_returning(&self) -> bool {
        self.returning
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .is_ok_and(|before| before > 1)
    }

    /// Writes everything buffered from this thread.
    fn write_out(&self, mut out: parking_lot::MutexGuard<'_, Outgoing>) {
        out.busy = true;
        let spare = std::mem::take(&mut out.spare);
        let mut batch = std::mem::replace(&mut out.buf, spare);
        self.flushed.fetch_add(1, Ordering::AcqRel);
        drop(out);
        let result = self.socket.lock().write_all(&batch);
        batch.clear();
        self.out.lock().spare = batch;
        self.finish_write(result);
    }

    /// Ends a write turn; hands anything queued meanwhile to the writer thread.
    fn finish_write(&self, result: std::io::Result<()>) {
        self.last_write_ms.store(self.now_ms(), Ordering::Relaxed);
        let mut out = self.out.lock();
        out.busy = false;
        let more = !out.buf.is_empty();
        drop(out);
        match result {
            Ok(()) if more => {
                self.writer_wake.notify_one();
            }
            Ok(()) => {}
            Err(e) => self.fail(FailureKind::SocketFailure, e.into()),
        }
    }

    /// Stands the reader thread down when the callers it last answered were alone and
    /// nothing else is owed: the next request is likely to come alone too, and its
    /// caller then reads its own reply. Two in a row, not one: with many threads a
    /// queue that empties once in a while would otherwise send the thread back and
    /// forth.
    fn stand_down(&self, rs: &mut reader::ReadState) -> bool {
        if !self.direct_ok || rs.lone_streak < LONE_STREAK || !rs.between_frames() {
            return false;
        }
        let mut q = self.pending.lock();
        if !q.queue.is_empty() || self.closed.load(Ordering::Acquire) {
            return false;
        }
        q.token.release();
        rs.lone_streak = 0;
        true
    }

    /// The stood-down reader thread waits to be asked back, or for a tick in which
    /// nobody read directly (an idle connection must still see pushes and the close).
    /// This is a hand-over wait, not a sleep: it ends at once when a request needs it.
    /// `false` when the connection closed.
    fn wait_stood_down(&self) -> bool {
        let mut q = self.pending.lock();
        let mut seen = q.token.caller_turns();
        let mut tick = read_token::ReclaimTick::new();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            if q.token.holder() == read_token::Holder::Thread {
                return true;
            }
            if self
                .reader_wake
                .wait_for(&mut q, tick.current())
                .timed_out()
            {
                if q.token.reclaim_unused(seen) {
                    return true;
                }
                tick.used();
            }
            seen = q.token.caller_turns();
        }
    }

    /// Sets the socket's read timeout, when it differs from the one set: `None` for
    /// the reader thread, which blocks until bytes come; a caller blocking in `recv`
    /// sets what is left of its call (see `reader::direct`). `false` if the socket
    /// refused it.
    fn read_timeout(&self, rs: &mut reader::ReadState, timeout: Option<Duration>) -> bool {
        if rs.read_timeout == timeout {
            return true;
        }
        if self.shutdown.set_read_timeout(timeout).is_err() {
            return false;
        }
        rs.read_timeout = timeout;
        true
    }

    fn dispatch_push(&self, push: Value) {
        match &self.on_push {
            Some(handler) => handler(&self.info, push),
            None => log::trace!("push frame on {} with no handler", self.endpoint_text),
        }
    }

    /// Fails the connection once: refuses new requests, wakes both threads, tells the
    /// owner, and fails every waiter. Later calls are no-ops (the first reason wins).
    fn fail(&self, kind: FailureKind, error: Error) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        *self.failure.lock() = Some(kind);
        self.out.lock().closed = true;
        self.writer_wake.notify_all();
        self.shutdown.shutdown();
        // The socket is shut: the server no longer sees these credentials in use.
        if let Some(auth) = &self.auth {
            auth.leave();
        }
        let error = error
            .with_endpoint(self.endpoint_text.clone())
            .with_failure(kind)
            .with_maintenance(self.timeouts.maintenance());
        // The owner hears why before any waiter is failed: a waiter may be a group's
        // health probe, whose failed verdict must not reach the group before the
        // cause (a tripped breaker) does.
        if let Some(handler) = &self.on_failure {
            handler(&self.info, kind, &error);
        }
        let drained = {
            let mut q = self.pending.lock();
            self.reader_wake.notify_all();
            std::mem::take(&mut q.queue)
        };
        for p in drained {
            if p.traffic.is_caller() {
                self.caller_inflight.fetch_sub(1, Ordering::Relaxed);
            }
            p.slot.complete(Outcome::Failed(error.clone()));
        }
        match kind {
            FailureKind::ClosedByClient => log::debug!("{}: closed", self.endpoint_text),
            _ => log::warn!(
                "{}: connection failed ({kind:?}): {error}",
                self.endpoint_text
            ),
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close(FailureKind::ClosedByClient);
        self.join();
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start a thread: {e}")))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// How a request was queued.
struct Submitted {
    /// No other request was in flight.
    alone: bool,
    /// The caller reads its own reply (it holds the right to take the read token).
    direct: bool,
    /// The frame waits in the buffer for callers answered with this one (the write
    /// count it waits to see pass).
    held: Option<u64>,
}

/// The largest frame a caller alone writes from its own thread: what a fresh
/// connection's socket buffers take at once (16 KiB of send buffer before autotuning),
/// so that write never waits for the server to read. A larger one goes to the writer
/// thread and its caller waits for the reply under its own deadline (measured: an
/// 8 MiB `SET` written by its caller to a server that stopped reading returned 1.48 s
/// after its 500 ms timeout).
const DIRECT_WRITE_MAX: usize = 16 * 1024;
/// Lone requests in a row before the reader thread stands down.
const LONE_STREAK: u32 = 2;
/// How long a connection goes without traffic before a caller that finds the token
/// free looks at the socket before sending (see `Shared::look_before_sending`).
const QUIET_MS: u64 = 1;
/// Why a request did not produce an outcome.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// Nothing was written: safe to send elsewhere.
    Unsent(Error),
    /// It may have reached the server (timeout, or the connection failed afterwards).
    Failed(Error),
}

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[cfg(all(test, feature = "testkit"))]
mod direct_tests;
