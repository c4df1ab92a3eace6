//! One physical connection: socket (+TLS), handshake, a writer thread, a reader thread,
//! and the FIFO of callers waiting for replies.
//!
//! Owns: getting frames onto the wire in order and each reply to the caller that sent
//! the matching request. Must never: sleep, resolve names or call REST on the reader or
//! writer thread; let a late reply reach another caller; lose a waiter (every pending
//! entry ends completed, failed or abandoned).
//!
//! # Who writes (`writing`, `writer`)
//!
//! Every request is registered in the FIFO of waiters under the same lock that orders
//! its bytes, so replies can never overtake their waiters. With few callers in flight
//! (`waiting::policy::FEW_IN_FLIGHT`, counted on the connection and client-wide), a
//! caller writes everything buffered together with its own frame, saving the writer
//! thread's wake-up; a caller answered together with others holds its frame so the
//! last of them sends every frame in one write, which the server answers in one write
//! (`writing::await_flush`). With more in flight, frames queue and the writer thread
//! sends everything queued in one write. A frame larger than `DIRECT_WRITE_MAX` always
//! goes through the writer thread, so no caller is held in a write past its deadline.
//!
//! # Who reads (`read_token`, `read_turns`, `reader`)
//!
//! Whoever holds the read token, drawn as a state machine in `read_token`: normally
//! the reader thread, blocking in `recv`. After requests from callers alone on the
//! connection, the thread stands down and the next lone caller reads its own reply, as
//! a dedicated connection would: no hop through another thread. With few callers in
//! flight the token goes from caller to caller, each one done reading handing it to
//! the caller whose reply comes next. A request whose caller cannot read, a half-read
//! frame nobody waits on, or a tick in which nobody read hands it back to the thread,
//! so pushes and the close of an idle connection are still seen. The token says who
//! must read, not who may: between its yields, a waiting caller reads what has arrived
//! when nobody is reading at that moment (`reader::help_read`).
//!
//! # How threads wait, and who wakes them (`waiting`, `wake_board`)
//!
//! One waiting policy decides every wait, from what the connection measures: its
//! reply floor (how soon replies come at best: how far away the server is), the
//! callers in flight, and how long the wait has lasted. A caller waiting for a reply
//! from a near server spins a moment, yields (reading for the others between yields),
//! then parks; from a far server it parks at once, and a caller holding the token
//! blocks in `recv` at once. Whoever reads completes the replies of one read and then
//! wakes every parked caller they answered together (one futex call per 32 places on
//! Linux), so a woken caller does not take the reader's core between two replies of
//! the same read.
//!
//! # Locks
//!
//! In the only order they are ever nested (a thread holding one never waits for one
//! above it):
//!
//! 1. `reading`, the read token's own state (decoder, read half): held for a whole
//!    read turn, blocking `recv` included (a polling caller lets go of it while it
//!    yields), so nothing waits for it while holding a lock below
//!    (`look_before_sending` and `reader::help_read` only try it);
//! 2. `out`, the outgoing buffer (`writer_wake` waits on it);
//! 3. `pending`, the FIFO of waiters and the read token (`reader_wake` waits on it);
//! 4. leaves, under which nothing is taken: `failure`, a reply slot's outcome.
//!
//! `socket` (the write half) is taken with none of `out` or `pending` held, so a
//! write that blocks on a full socket never stalls callers queueing frames or the
//! reader completing replies.

pub(crate) mod census;
pub(crate) mod company;
pub(crate) mod deadline;
mod handshake;
mod liveness;
mod open;
mod read_token;
mod read_turns;
mod reader;
pub(crate) mod reply_slot;
mod request;
mod shared;
pub(crate) mod tls;
pub(crate) mod transport;
mod waiting;
mod wake_board;
mod writer;
mod writing;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::{Endpoint, Options, Protocol};
use crate::error::{Error, ErrorKind, FailureKind, Result};
use crate::maintenance::timeouts::ServerTimeouts;
use crate::policy::BreakerPolicy;
use crate::resp::Value;
pub(crate) use deadline::{CallTimeout, Deadline};
use shared::Shared;
use tls::TlsSetup;

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

/// A live connection. Cheap to share behind an `Arc`; closing it ends both threads.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Connection {
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
