//! A TCP proxy that puts a server at a distance: every byte is forwarded half a round
//! trip after it was read, in each direction, as a network link to another zone or
//! region would deliver it.
//!
//! Per connection and direction, one thread reads chunks and stamps them, and another
//! writes each chunk when its time comes. Both sleep (the writer until the chunk is
//! due, the reader in `recv`): the proxy never spins, so in a benchmark it leaves the
//! cores to the client being measured. The writers ask the kernel for precise timers
//! (a timer slack of 1 ns instead of the default 50 µs) where it lets them.
//!
//! Owns: the sockets it accepted and dialled, and the threads that serve them (named
//! `delay-…`, all joined when it is dropped). Must never: reorder bytes, hold more
//! than a bounded number of chunks per direction (a reader waits when its writer is
//! behind), or leave a connection half alive when its other side is gone.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use parking_lot::Mutex;

/// Chunks in flight per direction before its reader waits: a window of this many
/// reads, enough for any round trip the tests and benches use.
const CHUNKS_IN_FLIGHT: usize = 1024;
/// The largest chunk one read takes.
const CHUNK: usize = 64 * 1024;
/// How long dialling the server may take before the client's connection is closed.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// A server put `round_trip` away (see the module documentation).
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use std::time::{Duration, Instant};
/// use resilient_redis::prelude::*;
/// use resilient_redis::testkit::{DelayProxy, FakeServer};
///
/// let server = FakeServer::start()?;
/// // The server, 20 ms away.
/// let far = DelayProxy::start(server.addr(), Duration::from_millis(20))?;
/// let db = Client::connect(format!("redis://{}", far.addr()).as_str())?.database();
/// let started = Instant::now();
/// db.set("k", "v")?;
/// assert!(started.elapsed() >= Duration::from_millis(20));
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DelayProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: SocketAddr,
    /// Half the round trip, in nanoseconds: what each direction adds.
    one_way_ns: AtomicU64,
    stopping: AtomicBool,
    /// Both sockets of every connection being forwarded, to shut them all down.
    sockets: Mutex<HashMap<u64, [TcpStream; 2]>>,
    next_id: AtomicU64,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl DelayProxy {
    /// Listens on an ephemeral port of 127.0.0.1 and forwards every connection to
    /// `upstream`, adding `round_trip` to every exchange. A server that cannot be
    /// reached makes the proxy close the client's connection at once, as a server that
    /// is down would refuse it.
    pub fn start(upstream: impl ToSocketAddrs, round_trip: Duration) -> io::Result<DelayProxy> {
        let upstream = upstream.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "no address to forward to")
        })?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            one_way_ns: AtomicU64::new(half_in_nanos(round_trip)),
            stopping: AtomicBool::new(false),
            sockets: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            threads: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        let accept = thread::Builder::new()
            .name(format!("delay-accept {}", addr.port()))
            .spawn(move || accept_loop(&s, &listener))?;
        Ok(DelayProxy {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The round trip the proxy adds now.
    pub fn round_trip(&self) -> Duration {
        Duration::from_nanos(self.shared.one_way_ns.load(Ordering::Relaxed) * 2)
    }

    /// Moves the server nearer or farther, for bytes read from now on (bytes already
    /// read keep their time, and nothing overtakes what was read before it).
    pub fn set_round_trip(&self, round_trip: Duration) {
        self.shared
            .one_way_ns
            .store(half_in_nanos(round_trip), Ordering::Relaxed);
    }

    /// Connections being forwarded now.
    pub fn connections(&self) -> usize {
        self.shared.sockets.lock().len()
    }

    /// Closes every connection being forwarded (both sides see it closed); new ones
    /// are still accepted.
    pub fn close_all(&self) {
        for pair in self.shared.sockets.lock().values() {
            for s in pair {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

impl std::fmt::Debug for DelayProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayProxy")
            .field("addr", &self.addr)
            .field("upstream", &self.shared.upstream)
            .field("round_trip", &self.round_trip())
            .finish()
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        // Wakes the accept thread out of `accept`; it sees the flag and ends.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        self.close_all();
        let threads = std::mem::take(&mut *self.shared.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

fn half_in_nanos(round_trip: Duration) -> u64 {
    u64::try_from(round_trip.as_nanos() / 2).unwrap_or(u64::MAX)
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener) {
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::Acquire) {
            return;
        }
        let Ok(client) = client else { continue };
        if let Err(e) = forward(shared, client) {
            log::debug!("delay proxy to {}: {e}", shared.upstream);
        }
        // Threads of connections that ended are joined as new ones come, so a
        // long-lived proxy does not keep their handles.
        shared.threads.lock().retain(|t| !t.is_finished());
    }
}

/// Dials the server for one accepted client and starts the four threads that forward
/// between them.
fn forward(shared: &Arc<Shared>, client: TcpStream) -> io::Result<()> {
    let server = match TcpStream::connect_timeout(&shared.upstream, DIAL_TIMEOUT) {
        Ok(s) => s,
        Err(e) => {
            let _ = client.shutdown(Shutdown::Both);
            return Err(e);
        }
    };
    for s in [&client, &server] {
        s.set_nodelay(true)?;
    }
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    shared
        .sockets
        .lock()
        .insert(id, [client.try_clone()?, server.try_clone()?]);
    // The directions still forwarding: the last one to end forgets the connection.
    let alive = Arc::new(AtomicUsize::new(2));
    let port = client.peer_addr()?.port();
    let mut threads = Vec::with_capacity(4);
    for (from, to, dir) in [
        (client.try_clone()?, server.try_clone()?, "up"),
        (server, client, "down"),
    ] {
        let (tx, rx) = bounded(CHUNKS_IN_FLIGHT);
        let reader_from = from.try_clone()?;
        let s = shared.clone();
        threads.push(
            thread::Builder::new()
                .name(format!("delay-read-{dir} {port}"))
                .spawn(move || read_side(&s, reader_from, &tx))?,
        );
        let (s, alive) = (shared.clone(), alive.clone());
        threads.push(
            thread::Builder::new()
                .name(format!("delay-write-{dir} {port}"))
                .spawn(move || {
                    write_side(&rx, &from, &to);
                    if alive.fetch_sub(1, Ordering::AcqRel) == 1 {
                        s.sockets.lock().remove(&id);
                    }
                })?,
        );
    }
    shared.threads.lock().extend(threads);
    Ok(())
}

/// Reads chunks as they arrive and stamps each with the time it is due on the other
/// side; ends (dropping the channel) at end of stream or on an error.
fn read_side(shared: &Shared, mut from: TcpStream, to_writer: &Sender<(Instant, Vec<u8>)>) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let one_way = Duration::from_nanos(shared.one_way_ns.load(Ordering::Relaxed));
        let due = Instant::now() + one_way;
        if to_writer.send((due, buf[..n].to_vec())).is_err() {
            return;
        }
    }
}

/// Writes each chunk when it is due; at the end of the stream, passes the close on
/// (a half close as a half close); on a write error, closes both sides.
fn write_side(chunks: &Receiver<(Instant, Vec<u8>)>, from: &TcpStream, mut to: &TcpStream) {
    precise_timers();
    for (due, chunk) in chunks {
        let now = Instant::now();
        if due > now {
            thread::sleep(due - now);
        }
        if to.write_all(&chunk).is_err() {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            return;
        }
    }
    // The reader saw the end of the stream, or an error: the other side hears it
    // half a round trip later, like the bytes before it.
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// Sleeps end within microseconds of their time instead of the default 50 µs slack:
/// a 125 µs half round trip would otherwise come out near 175 µs.
fn precise_timers() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_the_proxy_in_order_a_round_trip_later() {
        let echo = TcpListener::bind("127.0.0.1:0").expect("bind");
        let echo_addr = echo.local_addr().expect("addr");
        let server = thread::spawn(move || {
            let (mut s, _) = echo.accept().expect("accept");
            let mut buf = [0u8; 1024];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let rt = Duration::from_millis(20);
        let proxy = DelayProxy::start(echo_addr, rt).expect("proxy");
        let mut c = TcpStream::connect(proxy.addr()).expect("connect");
        for round in 0..3u8 {
            let started = Instant::now();
            let sent = [round, 1, 2, 3];
            c.write_all(&sent).expect("write");
            let mut got = [0u8; 4];
            c.read_exact(&mut got).expect("read");
            assert_eq!(got, sent);
            assert!(started.elapsed() >= rt, "round {round} came back early");
        }
        proxy.set_round_trip(Duration::ZERO);
        assert_eq!(proxy.round_trip(), Duration::ZERO);
        c.write_all(b"x").expect("write");
        let mut got = [0u8; 1];
        c.read_exact(&mut got).expect("read");
        assert_eq!(proxy.connections(), 1);
        drop(c);
        drop(proxy);
        server.join().expect("echo server");
    }

    #[test]
    fn a_server_that_is_down_closes_the_clients_connection() {
        let gone = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = gone.local_addr().expect("addr");
        drop(gone);
        let proxy = DelayProxy::start(addr, Duration::from_millis(1)).expect("proxy");
        let mut c = TcpStream::connect(proxy.addr()).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut buf = [0u8; 1];
        assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)));
    }
}
