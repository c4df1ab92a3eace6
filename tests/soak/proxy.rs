//! The TCP proxy in front of each member's server: forwards both ways and plays the
//! network and the server misbehaving, on demand:
//!
//! * maintenance notifications written between two frames of the server's stream
//!   ([`Proxy::inject`]);
//! * a black hole: nothing forwarded either way, sockets left open, new connections
//!   accepted into the same silence ([`Proxy::black_hole`]), then resumed or reset;
//! * half-open connections: the server side dropped, the client side never answered
//!   again and never closed (no FIN, no RST), while new connections work
//!   ([`Proxy::half_open`]);
//! * a server that stops reading what clients send, while its replies still flow
//!   ([`Proxy::hold_client`]), with small socket buffers so a large write really
//!   blocks;
//! * the error replies a server gives under stress, in place of the replies it would
//!   have sent ([`Proxy::stress`]): commands are followed in the client-to-server
//!   direction so each reply is matched to its command, the handshake is left alone,
//!   write-only refusals (`-READONLY`, `-OOM`) hit writes only, and a transaction with
//!   a refused command gets `-EXECABORT` as a server would;
//! * `-ERR max number of clients reached` written to each new connection, which is
//!   then closed, as a full server does before the handshake ([`Proxy::refuse`]);
//! * resets: every connection closed with a FIN ([`Proxy::close_all`]) or an RST.
//!
//! A server that is down makes the proxy close the client's connection, as the server
//! would.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::resp::{Decoder, Value};

/// How often a waiting or reading proxy thread looks at its flags.
const TICK: Duration = Duration::from_millis(100);
/// How long the client side of a half-open connection is kept open (unanswered)
/// before the proxy lets it go; far longer than any client takes to give up on it.
const HALF_OPEN_KEEP: Duration = Duration::from_secs(60);
/// Receive buffer of the proxy's client-side sockets: small, so a client writing a
/// large value to a proxy that stopped reading blocks once its own send buffer
/// (autotuned up to 4 MiB) is full, as against a real server that stopped reading.
const CLIENT_RCVBUF: usize = 256 * 1024;

/// Error replies a server gives under stress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stress {
    /// Loading its dataset (after a restart): every command but the handshake.
    Loading,
    /// A script runs too long: every command but the handshake.
    Busy,
    /// A replica cut off from its master with `replica-serve-stale-data no`.
    MasterDown,
    /// A former master demoted to replica (a role change): writes only.
    ReadOnly,
    /// `maxmemory` reached: writes only.
    Oom,
}

impl Stress {
    pub const ALL: [Stress; 5] = [
        Stress::Loading,
        Stress::Busy,
        Stress::MasterDown,
        Stress::ReadOnly,
        Stress::Oom,
    ];

    /// The error code, as the first word of the reply.
    pub fn code(self) -> &'static str {
        match self {
            Stress::Loading => "LOADING",
            Stress::Busy => "BUSY",
            Stress::MasterDown => "MASTERDOWN",
            Stress::ReadOnly => "READONLY",
            Stress::Oom => "OOM",
        }
    }

    /// The reply, as Redis 7 words it.
    fn reply(self) -> &'static [u8] {
        match self {
            Stress::Loading => b"-LOADING Redis is loading the dataset in memory\r\n",
            Stress::Busy => b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.\r\n",
            Stress::MasterDown => b"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
            Stress::ReadOnly => b"-READONLY You can't write against a read only replica.\r\n",
            Stress::Oom => b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
        }
    }

    fn writes_only(self) -> bool {
        matches!(self, Stress::ReadOnly | Stress::Oom)
    }

    fn from_u8(v: u8) -> Option<Stress> {
        Stress::ALL.get(usize::from(v).checked_sub(1)?).copied()
    }

    fn to_u8(s: Option<Stress>) -> u8 {
        s.map_or(0, |s| {
            Stress::ALL.iter().position(|x| *x == s).unwrap_or(0) as u8 + 1
        })
    }
}

const EXECABORT: &[u8] = b"-EXECABORT Transaction discarded because of previous errors.\r\n";
pub const MAXCLIENTS: &[u8] = b"-ERR max number of clients reached\r\n";

/// What kind of command a reply answers, as far as the stress replies care.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmd {
    /// `HELLO`, `AUTH`, `CLIENT`, `SELECT`: a stressed server still answers them.
    Handshake,
    Multi,
    Exec,
    Discard,
    /// Refused by a read-only or out-of-memory server.
    Write,
    Other,
}

impl Cmd {
    /// `None`: a command with no reply of its own (subscriptions confirm by push).
    fn of(frame: &Value) -> Option<Cmd> {
        let Value::Array(items) = frame else {
            return Some(Cmd::Other);
        };
        let name = items
            .first()
            .and_then(Value::as_bytes)
            .map(<[u8]>::to_ascii_uppercase)
            .unwrap_or_default();
        Some(match name.as_slice() {
            b"HELLO" | b"AUTH" | b"CLIENT" | b"SELECT" | b"READONLY" => Cmd::Handshake,
            b"MULTI" => Cmd::Multi,
            b"EXEC" => Cmd::Exec,
            b"DISCARD" => Cmd::Discard,
            b"SET" | b"DEL" | b"INCR" | b"HSET" | b"LPUSH" | b"SADD" | b"ZADD" => Cmd::Write,
            b"SUBSCRIBE" | b"PSUBSCRIBE" | b"SSUBSCRIBE" | b"UNSUBSCRIBE" | b"PUNSUBSCRIBE"
            | b"SUNSUBSCRIBE" => return None,
            _ => Cmd::Other,
        })
    }
}

/// What the proxy did, for the summary.
#[derive(Default)]
pub struct Stats {
    pub connections: AtomicU64,
    pub replaced: AtomicU64,
    pub exec_aborted: AtomicU64,
    pub refused: AtomicU64,
    pub half_opened: AtomicU64,
    pub reset: AtomicU64,
}

#[derive(Default)]
struct Mode {
    black_hole: bool,
    hold_client: bool,
    refuse: bool,
}

struct Ctl {
    upstream_port: u16,
    stop: AtomicBool,
    mode: Mutex<Mode>,
    /// The stress reply in force (`Stress::to_u8`), read once per reply frame.
    stress: AtomicU8,
    changed: Condvar,
    conns: Mutex<Vec<Weak<Conn>>>,
    /// Client sides of half-open connections, kept open and unread until the instant.
    graveyard: Mutex<Vec<(Instant, TcpStream)>>,
    stats: Stats,
}

/// One proxied connection.
struct Conn {
    notes: Mutex<Vec<u8>>,
    client: TcpStream,
    upstream: TcpStream,
    /// Commands sent and not answered yet, oldest first.
    commands: Mutex<VecDeque<Cmd>>,
    /// The client stream could not be followed: no reply is replaced on it.
    unaligned: AtomicBool,
    /// Half-open: the server side is gone, the client side is never touched again.
    dead: AtomicBool,
    /// Ends with an RST both ways (linger 0, closed without a shutdown).
    reset: AtomicBool,
}

impl Conn {
    fn gone(&self) -> bool {
        self.dead.load(Ordering::Acquire) || self.reset.load(Ordering::Acquire)
    }

    /// The end of a forwarding thread: a FIN both ways, unless the connection was made
    /// half-open (the client side must stay silent) or is being reset (the close of
    /// the last descriptor sends the RST).
    fn end(&self) {
        if !self.gone() {
            let _ = self.client.shutdown(Shutdown::Both);
            let _ = self.upstream.shutdown(Shutdown::Both);
        }
    }
}

/// A proxy in front of one server (see the module documentation).
pub struct Proxy {
    pub port: u16,
    ctl: Arc<Ctl>,
    acceptor: Option<thread::JoinHandle<()>>,
}

impl Proxy {
    pub fn start(upstream_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy port");
        // Accepted sockets inherit it (and lose autotuning): see CLIENT_RCVBUF.
        let _ = socket2::SockRef::from(&listener).set_recv_buffer_size(CLIENT_RCVBUF);
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let port = listener.local_addr().expect("proxy address").port();
        // What answers here is a real server, which refuses the opt-in: the opted-in
        // run must use `auto` through the proxy.
        crate::support::optin::note_real_server(port);
        let ctl = Arc::new(Ctl {
            upstream_port,
            stop: AtomicBool::new(false),
            mode: Mutex::new(Mode::default()),
            stress: AtomicU8::new(0),
            changed: Condvar::new(),
            conns: Mutex::new(Vec::new()),
            graveyard: Mutex::new(Vec::new()),
            stats: Stats::default(),
        });
        let acceptor = {
            let ctl = ctl.clone();
            thread::Builder::new()
                .name("soak-proxy".into())
                .spawn(move || {
                    crate::alloc::soak_thread();
                    while !ctl.stop.load(Ordering::Relaxed) {
                        match listener.accept() {
                            Ok((client, _)) => open(&ctl, client),
                            Err(_) => {
                                ctl.bury();
                                thread::sleep(Duration::from_millis(5));
                            }
                        }
                    }
                })
                .expect("proxy thread")
        };
        Proxy {
            port,
            ctl,
            acceptor: Some(acceptor),
        }
    }

    pub fn stats(&self) -> &Stats {
        &self.ctl.stats
    }

    fn live(&self) -> Vec<Arc<Conn>> {
        self.ctl
            .conns
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| !c.gone())
            .collect()
    }

    fn set(&self, f: impl FnOnce(&mut Mode)) {
        f(&mut self.ctl.mode.lock().unwrap());
        self.ctl.changed.notify_all();
    }

    /// Queues a notification on every open connection; how many.
    pub fn inject(&self, frame: &[u8]) -> usize {
        let live = self.live();
        for conn in &live {
            conn.notes.lock().unwrap().extend_from_slice(frame);
        }
        live.len()
    }

    /// Starts or ends a black hole.
    pub fn black_hole(&self, on: bool) {
        self.set(|m| m.black_hole = on);
    }

    /// Stops or resumes reading what clients send.
    pub fn hold_client(&self, on: bool) {
        self.set(|m| m.hold_client = on);
    }

    /// Puts a stress reply in force (or none).
    pub fn stress(&self, s: Option<Stress>) {
        self.ctl.stress.store(Stress::to_u8(s), Ordering::Release);
    }

    /// Starts or ends refusing new connections with `-ERR max number of clients`.
    pub fn refuse(&self, on: bool) {
        self.set(|m| m.refuse = on);
    }

    /// Closes every connection with a FIN both ways; how many.
    pub fn close_all(&self) -> usize {
        let live = self.live();
        for conn in &live {
            conn.end();
        }
        live.len()
    }

    /// Resets every connection (RST both ways); how many.
    pub fn reset_all(&self) -> usize {
        let live = self.live();
        for conn in &live {
            let _ = socket2::SockRef::from(&conn.client).set_linger(Some(Duration::ZERO));
            let _ = socket2::SockRef::from(&conn.upstream).set_linger(Some(Duration::ZERO));
            conn.reset.store(true, Ordering::Release);
        }
        self.ctl.changed.notify_all();
        self.ctl
            .stats
            .reset
            .fetch_add(live.len() as u64, Ordering::Relaxed);
        live.len()
    }

    /// Makes every open connection half-open: the server side is closed, the client
    /// side stays open and is never read or answered again. New connections work.
    pub fn half_open(&self) -> usize {
        let live = self.live();
        let until = Instant::now() + HALF_OPEN_KEEP;
        for conn in &live {
            if let Ok(kept) = conn.client.try_clone() {
                self.ctl.graveyard.lock().unwrap().push((until, kept));
            }
            conn.dead.store(true, Ordering::Release);
            let _ = conn.upstream.shutdown(Shutdown::Both);
        }
        self.ctl.changed.notify_all();
        self.ctl
            .stats
            .half_opened
            .fetch_add(live.len() as u64, Ordering::Relaxed);
        live.len()
    }
}

impl Ctl {
    /// Waits while `blocked` holds; `false` when the connection ended meanwhile.
    fn wait_flowing(&self, conn: &Conn, blocked: impl Fn(&Mode) -> bool) -> bool {
        let mut mode = self.mode.lock().unwrap();
        loop {
            if self.stop.load(Ordering::Relaxed) || conn.gone() {
                return false;
            }
            if !blocked(&mode) {
                return true;
            }
            mode = self.changed.wait_timeout(mode, TICK).unwrap().0;
        }
    }

    /// Lets go of half-open client sides kept long enough.
    fn bury(&self) {
        let now = Instant::now();
        let mut graves = self.graveyard.lock().unwrap();
        if graves.first().is_some_and(|(until, _)| *until <= now) {
            graves.retain(|(until, _)| *until > now);
        }
    }
}

fn open(ctl: &Arc<Ctl>, mut client: TcpStream) {
    let _ = client.set_nonblocking(false);
    let refuse = ctl.mode.lock().unwrap().refuse;
    if refuse {
        // What a server at `maxclients` does: the error, then the close.
        let _ = client.write_all(MAXCLIENTS);
        let _ = client.shutdown(Shutdown::Both);
        ctl.stats.refused.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let upstream = match TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], ctl.upstream_port)),
        Duration::from_millis(500),
    ) {
        Ok(u) => u,
        // Down: the client sees its connection closed.
        Err(_) => return,
    };
    let _ = upstream.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let conn = Arc::new(Conn {
        notes: Mutex::new(Vec::new()),
        client,
        upstream,
        commands: Mutex::new(VecDeque::new()),
        unaligned: AtomicBool::new(false),
        dead: AtomicBool::new(false),
        reset: AtomicBool::new(false),
    });
    {
        let mut list = ctl.conns.lock().unwrap();
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&conn));
    }
    ctl.stats.connections.fetch_add(1, Ordering::Relaxed);
    let (up_ctl, up_conn) = (ctl.clone(), conn.clone());
    let _ = thread::Builder::new()
        .name("soak-proxy-up".into())
        .spawn(move || {
            crate::alloc::soak_thread();
            up(&up_ctl, &up_conn, c2);
            up_conn.end();
        });
    let ctl = ctl.clone();
    let _ = thread::Builder::new()
        .name("soak-proxy-down".into())
        .spawn(move || {
            crate::alloc::soak_thread();
            down(&ctl, &conn, u2);
            conn.end();
        });
}

/// Client to server, following the commands so replies can be matched to them.
fn up(ctl: &Ctl, conn: &Conn, mut from: TcpStream) {
    let _ = from.set_read_timeout(Some(TICK));
    let mut decoder = Decoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut to = &conn.upstream;
    loop {
        if !ctl.wait_flowing(conn, |m| m.black_hole || m.hold_client) {
            return;
        }
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if !conn.unaligned.load(Ordering::Relaxed) {
                    decoder.feed(&buf[..n]);
                    loop {
                        match decoder.decode() {
                            Ok(Some(frame)) => {
                                if let Some(cmd) = Cmd::of(&frame) {
                                    conn.commands.lock().unwrap().push_back(cmd);
                                }
                            }
                            Ok(None) => break,
                            Err(_) => {
                                conn.unaligned.store(true, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                }
                if conn.gone() || to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// A transaction's state on one connection, as the replies go by.
#[derive(Default)]
struct Multi {
    open: bool,
    /// A queued command was refused: the `EXEC` is refused as a whole.
    aborted: bool,
}

/// What goes to the client instead of a reply to `cmd`, if anything.
fn replacement(stress: Option<Stress>, cmd: Cmd, multi: &mut Multi) -> Option<&'static [u8]> {
    let out = match (stress, cmd) {
        (_, Cmd::Handshake) => None,
        (_, Cmd::Exec) if multi.aborted => Some(EXECABORT),
        (Some(s), c) if !s.writes_only() || c == Cmd::Write => Some(s.reply()),
        _ => None,
    };
    match cmd {
        Cmd::Multi => {
            multi.open = true;
            multi.aborted = false;
        }
        Cmd::Exec | Cmd::Discard => *multi = Multi::default(),
        _ if multi.open && out.is_some() => multi.aborted = true,
        _ => {}
    }
    out
}

/// Server to client, frame by frame: replies (or what replaces them), then any
/// notifications queued, at a frame boundary.
fn down(ctl: &Ctl, conn: &Conn, mut upstream: TcpStream) {
    let _ = upstream.set_read_timeout(Some(TICK));
    let mut decoder = Decoder::new();
    let mut held: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut client = &conn.client;
    let mut multi = Multi::default();
    loop {
        if !ctl.wait_flowing(conn, |m| m.black_hole) {
            return;
        }
        match upstream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                decoder.feed(&buf[..n]);
                held.extend_from_slice(&buf[..n]);
                let mut start = 0;
                loop {
                    match decoder.decode() {
                        Ok(Some(frame)) => {
                            let end = held.len() - decoder.buffered();
                            let bytes = &held[start..end];
                            start = end;
                            if matches!(frame, Value::Push(_)) {
                                out.extend_from_slice(bytes);
                                continue;
                            }
                            let cmd = conn.commands.lock().unwrap().pop_front();
                            let stress = Stress::from_u8(ctl.stress.load(Ordering::Acquire));
                            let instead = match cmd {
                                Some(cmd) if !conn.unaligned.load(Ordering::Relaxed) => {
                                    replacement(stress, cmd, &mut multi)
                                }
                                _ => None,
                            };
                            match instead {
                                Some(reply) => {
                                    let counter = if reply == EXECABORT {
                                        &ctl.stats.exec_aborted
                                    } else {
                                        &ctl.stats.replaced
                                    };
                                    counter.fetch_add(1, Ordering::Relaxed);
                                    out.extend_from_slice(reply);
                                }
                                None => out.extend_from_slice(bytes),
                            }
                        }
                        Ok(None) => break,
                        // Not expected from redis-server: forward everything as it
                        // comes, and neither replace nor inject anything more.
                        Err(_) => {
                            let _ = client.write_all(&out);
                            let _ = client.write_all(&held[start..]);
                            let _ = upstream.set_read_timeout(None);
                            let _ = std::io::copy(&mut upstream, &mut client);
                            return;
                        }
                    }
                }
                held.drain(..start);
                if conn.gone() || client.write_all(&out).is_err() {
                    return;
                }
                out.clear();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
        // Between frames: whatever is held is the start of the next one, not yet sent.
        let notes = std::mem::take(&mut *conn.notes.lock().unwrap());
        if !notes.is_empty() && (conn.gone() || client.write_all(&notes).is_err()) {
            return;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.ctl.stop.store(true, Ordering::Relaxed);
        self.ctl.changed.notify_all();
        for conn in self
            .ctl
            .conns
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
        {
            let _ = conn.client.shutdown(Shutdown::Both);
            let _ = conn.upstream.shutdown(Shutdown::Both);
        }
        self.ctl.graveyard.lock().unwrap().clear();
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}
