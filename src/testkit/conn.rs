//! One accepted connection: its shared handle (state visible to tests, the outbox
//! every writer goes through) and the thread that reads, executes and answers.
//!
//! Owns: the socket and the order of bytes on it. Every frame for a connection (its
//! replies, pub/sub messages, notifications) goes through its outbox, so a delayed
//! reply is never overtaken by a later push and a confirmation always precedes the
//! messages it enables. Must never: block another connection (delays and hangs only
//! hold this connection's output; a writer that cannot write within the write timeout
//! closes the connection instead of waiting).
//!
//! Over TLS, the same: bytes read are decrypted by the connection's
//! [`TlsLink`] before parsing, and the outbox writes through it. A hung server does
//! not answer a handshake either (as a stopped process would not).

use std::collections::{BTreeSet, VecDeque};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::reply::{encode, err};
use super::request;
use super::server::ServerInner;
use super::session::{Flow, Session};
use super::tls::link::TlsLink;
use crate::resp::Value;

/// While output is held (hang) or delayed, the thread wakes this often to flush it.
const HELD_POLL: Duration = Duration::from_millis(20);

/// What tests can see of a connection, kept current by its thread.
pub(crate) struct ConnState {
    pub name: Option<String>,
    pub proto: u8,
    pub db: usize,
    pub opted_in: bool,
    pub moving_endpoint_type: Option<String>,
    pub channels: BTreeSet<Vec<u8>>,
    pub patterns: BTreeSet<Vec<u8>>,
    pub shard_channels: BTreeSet<Vec<u8>>,
    pub last_command: String,
    pub created: Instant,
    /// The user and password it last authenticated with (`expire_credentials`).
    pub auth: Option<(String, String)>,
}

impl ConnState {
    /// Channels + patterns + shard channels (what decides subscribed mode).
    pub(crate) fn subscriptions(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard_channels.len()
    }
}

/// Where a connection's output goes: the socket, or the TLS link in front of it.
enum Wire {
    Plain(TcpStream),
    Tls(Arc<TlsLink>),
}

impl Wire {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Wire::Plain(s) => s.write_all(bytes),
            Wire::Tls(t) => t.write_all(bytes),
        }
    }
}

struct Outbox {
    stream: Wire,
    /// Bytes due now, not yet written (while the thread batches a read's replies, or
    /// while the server hangs).
    pending: Vec<u8>,
    /// Delayed frames, due times non-decreasing (FIFO kept under jitter).
    queue: VecDeque<(Instant, Vec<u8>)>,
    batching: bool,
}

/// A connection as the rest of the fake sees it.
pub(crate) struct ConnHandle {
    pub id: u64,
    pub peer: SocketAddr,
    pub state: Mutex<ConnState>,
    outbox: Mutex<Outbox>,
    closed: AtomicBool,
    socket: TcpStream,
}

impl ConnHandle {
    /// The handle of an accepted socket; `tls`: its output goes through that link.
    pub(crate) fn new(
        id: u64,
        stream: &TcpStream,
        tls: Option<Arc<TlsLink>>,
    ) -> std::io::Result<ConnHandle> {
        let wire = match tls {
            None => Wire::Plain(stream.try_clone()?),
            Some(link) => Wire::Tls(link),
        };
        Ok(ConnHandle {
            id,
            peer: stream.peer_addr()?,
            state: Mutex::new(ConnState {
                name: None,
                proto: 2,
                db: 0,
                opted_in: false,
                moving_endpoint_type: None,
                channels: BTreeSet::new(),
                patterns: BTreeSet::new(),
                shard_channels: BTreeSet::new(),
                last_command: String::new(),
                created: Instant::now(),
                auth: None,
            }),
            outbox: Mutex::new(Outbox {
                stream: wire,
                pending: Vec::new(),
                queue: VecDeque::new(),
                batching: false,
            }),
            closed: AtomicBool::new(false),
            socket: stream.try_clone()?,
        })
    }

    /// Queues bytes to be written at `due` (FIFO: never before anything queued earlier).
    pub(crate) fn send(&self, bytes: &[u8], due: Instant, hung: bool) {
        if self.is_closed() {
            return;
        }
        let now = Instant::now();
        let mut ob = self.outbox.lock();
        if let Some(&(last, _)) = ob.queue.back() {
            ob.queue.push_back((due.max(last), bytes.to_vec()));
            return;
        }
        if due > now {
            ob.queue.push_back((due, bytes.to_vec()));
            return;
        }
        ob.pending.extend_from_slice(bytes);
        if !ob.batching && !hung {
            self.write_pending(&mut ob);
        }
    }

    /// Encodes a push frame (pub/sub message, notification) in this connection's
    /// protocol and queues it behind anything already queued.
    pub(crate) fn push(&self, frame: &Value, hung: bool) {
        let proto = self.state.lock().proto;
        let mut buf = Vec::new();
        encode(&mut buf, proto, frame);
        self.send(&buf, Instant::now(), hung);
    }

    /// Writes what is due; returns when the thread should look again.
    pub(crate) fn flush(&self, hung: bool) -> Option<Instant> {
        let now = Instant::now();
        let mut ob = self.outbox.lock();
        if hung {
            let held = !ob.pending.is_empty() || !ob.queue.is_empty();
            return held.then(|| now + HELD_POLL);
        }
        while ob.queue.front().is_some_and(|(due, _)| *due <= now) {
            if let Some((_, bytes)) = ob.queue.pop_front() {
                ob.pending.extend_from_slice(&bytes);
            }
        }
        self.write_pending(&mut ob);
        ob.queue.front().map(|(due, _)| *due)
    }

    /// Whether nothing is waiting to be written.
    pub(crate) fn drained(&self) -> bool {
        let ob = self.outbox.lock();
        ob.pending.is_empty() && ob.queue.is_empty()
    }

    /// While batching, replies and pushes collect and go out in one write at the end
    /// of the read they answer (as the server writes its output buffer once per loop).
    pub(crate) fn set_batching(&self, on: bool) {
        self.outbox.lock().batching = on;
    }

    fn write_pending(&self, ob: &mut Outbox) {
        if ob.pending.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut ob.pending);
        if ob.stream.write_all(&bytes).is_err() {
            self.close();
        }
    }

    /// Closes the socket; the connection's thread ends on its next read.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _ = self.socket.shutdown(Shutdown::Both);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether the peer has gone (EOF or error), checked without consuming input.
    /// (Over TLS, a peer's `close_notify` is input like any other: only its FIN or an
    /// error reads as gone.)
    pub(crate) fn peer_gone(&self) -> bool {
        if self.is_closed() {
            return true;
        }
        let mut probe = [0u8; 1];
        if self.socket.set_nonblocking(true).is_err() {
            return true;
        }
        let gone = match self.socket.peek(&mut probe) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != IoKind::WouldBlock,
        };
        let _ = self.socket.set_nonblocking(false);
        gone
    }
}

/// The connection thread: read, execute, answer, until the peer or the server ends it.
/// With `tls`, what is read is decrypted through that link first.
pub(crate) fn serve(
    server: Arc<ServerInner>,
    conn: Arc<ConnHandle>,
    mut stream: TcpStream,
    tls: Option<Arc<TlsLink>>,
) {
    let mut session = Session::new(server.clone(), conn.clone());
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    'conn: loop {
        if conn.is_closed() || server.is_shutdown() {
            break;
        }
        let mut start = 0;
        let mut close_when_written = false;
        conn.set_batching(true);
        session.read_at = Some(Instant::now());
        loop {
            match request::parse(&buf[start..]) {
                Ok(Some(p)) => {
                    start += p.used;
                    if p.args.is_empty() {
                        continue;
                    }
                    if !server.faults.wait_while_hung(&conn, &server) {
                        break 'conn;
                    }
                    match session.handle(p.args) {
                        Flow::Continue => {}
                        Flow::Close => {
                            close_when_written = true;
                            break;
                        }
                        Flow::Drop => {
                            conn.close();
                            break 'conn;
                        }
                    }
                }
                Ok(None) => break,
                Err(text) => {
                    session.emit(&err(format!("ERR {text}")));
                    close_when_written = true;
                    break;
                }
            }
        }
        buf.drain(..start);
        session.read_at = None;
        conn.set_batching(false);
        let next = conn.flush(server.faults.is_hung());
        if close_when_written {
            while !conn.drained() && !conn.is_closed() && !server.is_shutdown() {
                std::thread::sleep(Duration::from_millis(2));
                conn.flush(server.faults.is_hung());
            }
            break;
        }
        match readable_by(&stream, next) {
            Ok(true) => {}
            Ok(false) => continue, // something queued is due: flush it
            Err(_) => break,
        }
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => match &tls {
                None => buf.extend_from_slice(&chunk[..n]),
                Some(link) => {
                    // Hung: the record layer waits too (no handshake answered).
                    if !server.faults.wait_while_hung(&conn, &server) {
                        break;
                    }
                    if let Err(e) = link.feed(&chunk[..n], &mut buf) {
                        log::debug!("fake server {}: TLS: {e}", server.addr);
                        break;
                    }
                }
            },
            Err(e)
                if matches!(
                    e.kind(),
                    IoKind::WouldBlock | IoKind::TimedOut | IoKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
    conn.close();
    server.conns.lock().remove(&conn.id);
}

/// Waits until `stream` has input (or its end) or `due` passes (`false`). Precise to
/// microseconds where poll(2) takes a `timespec`: a socket read timeout counts in
/// kernel ticks, so 1 ms came out as 8 ms and `delay_replies(1 ms)` as 8 ms late.
#[cfg(unix)]
fn readable_by(stream: &TcpStream, due: Option<Instant>) -> std::io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let timeout = due.map(|due| {
        let left = due.saturating_duration_since(Instant::now());
        Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        }
    });
    let mut fds = [PollFd::new(stream, PollFlags::IN)];
    loop {
        match poll(&mut fds, timeout.as_ref()) {
            Ok(n) => return Ok(n > 0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Elsewhere: a read timeout (ticks, so delays come out coarse), then the read.
#[cfg(not(unix))]
fn readable_by(stream: &TcpStream, due: Option<Instant>) -> std::io::Result<bool> {
    let timeout = due.map(|t| {
        t.saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    });
    stream.set_read_timeout(timeout)?;
    let mut probe = [0u8; 1];
    match stream.peek(&mut probe) {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => Ok(false),
        Err(e) => Err(e),
    }
}
