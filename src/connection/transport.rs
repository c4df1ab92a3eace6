//! The byte pipe under one connection: TCP via socket2, optionally wrapped in rustls,
//! split into a read half (the reader thread) and a write half (writer thread or a
//! caller writing directly), plus a handle that shuts both down.
//!
//! TLS cannot be split natively, so both halves share the rustls state under a mutex
//! and only hold it for in-memory work: socket reads and writes happen outside it, and
//! every TLS record goes to the socket under one write lock so records stay in order.
//! Built without the `tls` feature, only the plain halves exist (`tls::setup` refuses
//! before a transport is ever asked for TLS).

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
#[cfg(feature = "tls")]
use rustls::ClientConnection;
use socket2::{Domain, Protocol, SockAddr, Socket, TcpKeepalive, Type};

use super::tls::TlsSetup;
use crate::config::Endpoint;
use crate::error::{Error, ErrorKind, Result};
use crate::resolve::Resolver;

/// The reading side, owned by the reader thread.
pub(crate) enum ReadHalf {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(TlsReader),
}

/// The writing side; whoever holds it writes whole frames.
pub(crate) enum WriteHalf {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(TlsShared),
}

/// What both TLS halves share.
#[cfg(feature = "tls")]
#[derive(Clone)]
pub(crate) struct TlsShared {
    conn: Arc<Mutex<ClientConnection>>,
    socket_out: Arc<Mutex<TcpStream>>,
}

/// The TLS read side: raw bytes from the socket are decrypted into the caller's buffer.
#[cfg(feature = "tls")]
pub(crate) struct TlsReader {
    shared: TlsShared,
    socket_in: TcpStream,
    raw: Vec<u8>,
    raw_start: usize,
    raw_end: usize,
}

/// A connected, not yet split transport.
pub(crate) struct Transport {
    pub(crate) read: ReadHalf,
    pub(crate) write: WriteHalf,
    pub(crate) shutdown: ShutdownHandle,
}

/// Shuts the socket down, waking a reader blocked in `read` and a writer in `write`.
#[derive(Clone)]
pub(crate) struct ShutdownHandle(Arc<TcpStream>);

impl ShutdownHandle {
    pub(crate) fn shutdown(&self) {
        let _ = self.0.shutdown(Shutdown::Both);
    }

    /// Sets (or clears) the read timeout (the handshake's deadline, a caller's read).
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.0.set_read_timeout(t)
    }
}

/// Where a node's connections dial, beyond the endpoint they are named by; shared by
/// every connection of the node and changed only by a maintenance handoff.
#[derive(Debug, Default)]
pub(crate) struct Dial {
    /// A `MOVING` named another endpoint: dial it instead (the node keeps its name, so
    /// routing, subscriptions and status stay where they are).
    redirect: Mutex<Option<Endpoint>>,
    /// Addresses a `MOVING` is retiring, tried last until the instant given: after we
    /// stepped sideways the record may still name them (measured: DNS trails the
    /// notification by 4.4 to 18.7 s), and a reconnect that lands there is closed again
    /// by the server when its window ends.
    retiring: Mutex<Vec<(SocketAddr, Instant)>>,
}

impl Dial {
    /// Dials `to` instead of the endpoint from now on.
    pub(crate) fn redirect(&self, to: Endpoint) {
        *self.redirect.lock() = Some(to);
    }

    /// The endpoint dialled instead of the node's own, if any.
    pub(crate) fn redirected(&self) -> Option<Endpoint> {
        self.redirect.lock().clone()
    }

    /// Tries `addr` last until `until`.
    pub(crate) fn retire(&self, addr: SocketAddr, until: Instant) {
        let mut r = self.retiring.lock();
        let now = Instant::now();
        r.retain(|(a, t)| *t > now && *a != addr);
        // Bounded: one entry per address, expired ones dropped; a handful at most.
        if r.len() < 16 {
            r.push((addr, until));
        }
    }

    /// Orders `addrs` so that addresses being retired come last (kept, not dropped: a
    /// record naming only the retiring address is still the best there is).
    fn order(&self, addrs: &mut [SocketAddr]) {
        let now = Instant::now();
        let r = self.retiring.lock();
        if r.is_empty() {
            return;
        }
        addrs.sort_by_key(|a| r.iter().any(|(x, t)| x == a && *t > now));
    }
}

/// Resolves `endpoint` through `resolver` (or dials `to` when given: a handoff has
/// already chosen the address) and connects, trying each address until one answers
/// within what is left of `timeout`.
pub(crate) fn connect_tcp(
    endpoint: &Endpoint,
    timeout: Duration,
    resolver: &dyn Resolver,
    dial: &Dial,
    to: Option<SocketAddr>,
) -> Result<TcpStream> {
    let deadline = crate::clock::deadline_after(Instant::now(), timeout);
    let addrs = match to {
        Some(addr) => vec![addr],
        None => {
            let target = dial.redirected();
            let target = target.as_ref().unwrap_or(endpoint);
            let mut addrs = resolver.resolve(&target.host, target.port).map_err(|e| {
                Error::new(ErrorKind::Connect, format!("cannot resolve: {e}")).with_source(e)
            })?;
            dial.order(&mut addrs);
            addrs
        }
    };
    if addrs.is_empty() {
        return Err(Error::new(
            ErrorKind::Connect,
            "name resolved to no address",
        ));
    }
    let mut last = None;
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match connect_addr(addr, left) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    let e = last.unwrap_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"));
    // A dial that timed out is a failure to connect, not a reply that came late.
    Err(Error::new(ErrorKind::Connect, format!("cannot connect: {e}")).with_source(e))
}

fn connect_addr(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.connect_timeout(&SockAddr::from(addr), timeout)?;
    // Requests are small and latency-bound; Nagle would hold the second of two
    // pipelined writes for an ACK.
    socket.set_tcp_nodelay(true)?;
    // OS keep-alive finds a peer that vanished while we were idle without our traffic.
    let keepalive = TcpKeepalive::new()
        .with_time(Duration::from_secs(30))
        .with_interval(Duration::from_secs(10));
    socket.set_tcp_keepalive(&keepalive)?;
    Ok(socket.into())
}

impl Transport {
    /// Wraps a connected socket, performing the TLS handshake when asked; `redirected`:
    /// the host dialled instead of the endpoint's own (a `MOVING` named it), whose name
    /// is then the one verified.
    pub(crate) fn establish(
        stream: TcpStream,
        tls: Option<&TlsSetup>,
        redirected: Option<&str>,
        timeout: Duration,
    ) -> Result<Transport> {
        let peer = stream.peer_addr()?;
        let shutdown = ShutdownHandle(Arc::new(stream.try_clone()?));
        let Some(tls) = tls else {
            return Ok(Transport {
                read: ReadHalf::Plain(stream.try_clone()?),
                write: WriteHalf::Plain(stream),
                shutdown,
            });
        };
        Transport::secure(stream, peer, shutdown, tls, redirected, timeout)
    }

    /// Never called: built without the `tls` feature, no `TlsSetup` can exist.
    #[cfg(not(feature = "tls"))]
    fn secure(
        _stream: TcpStream,
        _peer: SocketAddr,
        _shutdown: ShutdownHandle,
        tls: &TlsSetup,
        _redirected: Option<&str>,
        _timeout: Duration,
    ) -> Result<Transport> {
        match *tls {}
    }

    /// The TLS handshake over a connected socket, then the two halves sharing its state.
    #[cfg(feature = "tls")]
    fn secure(
        stream: TcpStream,
        peer: SocketAddr,
        shutdown: ShutdownHandle,
        tls: &TlsSetup,
        redirected: Option<&str>,
        timeout: Duration,
    ) -> Result<Transport> {
        tls.warn_if_unverified(peer);
        let name = match redirected {
            Some(host) => tls.name_for_redirect(host),
            None => tls.server_name.clone(),
        };
        let mut conn = ClientConnection::new(tls.config.clone(), name).map_err(|e| {
            Error::new(ErrorKind::Tls, format!("TLS setup failed: {e}")).with_source(e)
        })?;
        let mut sock = stream.try_clone()?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(|e| {
                let kind = if matches!(
                    e.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Tls
                };
                Error::new(kind, format!("TLS handshake failed: {e}"))
            })?;
        }
        sock.set_read_timeout(None)?;
        sock.set_write_timeout(None)?;
        let shared = TlsShared {
            conn: Arc::new(Mutex::new(conn)),
            socket_out: Arc::new(Mutex::new(stream.try_clone()?)),
        };
        Ok(Transport {
            read: ReadHalf::Tls(TlsReader {
                shared: shared.clone(),
                socket_in: stream,
                raw: vec![0; 16 * 1024],
                raw_start: 0,
                raw_end: 0,
            }),
            write: WriteHalf::Tls(shared),
            shutdown,
        })
    }
}

/// A view of the read half that never blocks: `WouldBlock` when nothing has arrived.
pub(crate) struct Polling<'a>(pub(crate) &'a mut ReadHalf);

impl Read for Polling<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0 {
            #[cfg(unix)]
            ReadHalf::Plain(s) => recv_now(s, buf),
            #[cfg(feature = "tls")]
            ReadHalf::Tls(t) => t.read_with(buf, true),
            #[cfg(not(unix))]
            _ => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl ReadHalf {
    /// Whether `Polling` can look at the socket without blocking.
    pub(crate) fn can_poll(&self) -> bool {
        cfg!(unix)
    }
}

impl Read for ReadHalf {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ReadHalf::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            ReadHalf::Tls(t) => t.read_with(buf, false),
        }
    }
}

/// One `recv` that does not wait: `WouldBlock` when nothing is there.
#[cfg(unix)]
fn recv_now(s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    rustix::net::recv(s, buf, rustix::net::RecvFlags::DONTWAIT)
        .map(|(n, _)| n)
        .map_err(io::Error::from)
}

#[cfg(feature = "tls")]
impl TlsReader {
    /// Plaintext from the record layer, reading the socket when it has none; with
    /// `poll` that socket read does not wait (`WouldBlock`), so a direct reader can poll
    /// a TLS connection as it polls a plain one (the record layer keeps partial
    /// records between calls).
    fn read_with(&mut self, buf: &mut [u8], poll: bool) -> io::Result<usize> {
        loop {
            {
                let mut conn = self.shared.conn.lock();
                match conn.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                // Feed what is already buffered before reading the socket again.
                if self.raw_start < self.raw_end {
                    let mut slice = &self.raw[self.raw_start..self.raw_end];
                    let before = slice.len();
                    conn.read_tls(&mut slice)?;
                    self.raw_start += before - slice.len();
                    conn.process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    let wants_write = conn.wants_write();
                    drop(conn);
                    if wants_write {
                        self.shared.flush_tls()?;
                    }
                    continue;
                }
            }
            let n = if poll {
                #[cfg(unix)]
                {
                    recv_now(&self.socket_in, &mut self.raw)?
                }
                #[cfg(not(unix))]
                {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
            } else {
                self.socket_in.read(&mut self.raw)?
            };
            if n == 0 {
                return Ok(0);
            }
            self.raw_start = 0;
            self.raw_end = n;
        }
    }
}

#[cfg(feature = "tls")]
impl TlsShared {
    /// Sends whatever TLS records are ready, under the socket write lock.
    fn flush_tls(&self) -> io::Result<()> {
        let mut sock = self.socket_out.lock();
        let mut out = Vec::new();
        {
            let mut conn = self.conn.lock();
            while conn.wants_write() {
                conn.write_tls(&mut out)?;
            }
        }
        sock.write_all(&out)
    }

    fn write_all(&self, mut data: &[u8], until: Option<Instant>) -> io::Result<()> {
        // Lock order: socket, then TLS state (the reader's flush uses the same order).
        let mut sock = self.socket_out.lock();
        // Records for one piece of plaintext at a time (rustls takes what its buffer
        // limit allows), not a buffer the size of the whole frame.
        let mut out = Vec::with_capacity(data.len().min(TLS_PIECE) + 1024);
        while !data.is_empty() {
            {
                let mut conn = self.conn.lock();
                let n = conn.writer().write(data)?;
                data = &data[n..];
                while conn.wants_write() {
                    conn.write_tls(&mut out)?;
                }
            }
            write_all_until(&mut sock, &out, until)?;
            out.clear();
        }
        Ok(())
    }
}

impl WriteHalf {
    pub(crate) fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.write_all_by(data, None)
    }

    /// Writes all of `data`, by `until` when given (an `io::ErrorKind::TimedOut`
    /// error past it, with part of `data` perhaps written).
    pub(crate) fn write_all_by(&mut self, data: &[u8], until: Option<Instant>) -> io::Result<()> {
        match self {
            WriteHalf::Plain(s) => write_all_until(s, data, until),
            #[cfg(feature = "tls")]
            WriteHalf::Tls(t) => t.write_all(data, until),
        }
    }
}

/// The most plaintext encrypted before the records are sent.
#[cfg(feature = "tls")]
const TLS_PIECE: usize = 64 * 1024;

/// Writes all of `data` on `sock`; with `until`, each send may block only for what is
/// left of the time (a send that made progress returns, and the next one gets the
/// rest, not a fresh timeout), and the socket's write timeout is cleared after.
fn write_all_until(sock: &mut TcpStream, data: &[u8], until: Option<Instant>) -> io::Result<()> {
    let Some(until) = until else {
        return sock.write_all(data);
    };
    let mut left_to_write = data;
    while !left_to_write.is_empty() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the write did not end within its time",
            ));
        }
        sock.set_write_timeout(Some(left.max(Duration::from_millis(1))))?;
        match sock.write(left_to_write) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => left_to_write = &left_to_write[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the write did not end within its time",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    sock.set_write_timeout(None)
}
