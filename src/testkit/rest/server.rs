//! The fake REST API's HTTPS server: a listener on 127.0.0.1:0, an accept thread, one
//! thread per connection (rustls `ServerConnection`), one request per connection
//! (`Connection: close`), and the unreachable redirect target.
//!
//! Must never: outlive its handle (every thread is joined and every socket shut down
//! on drop), bind anything but loopback, or wait on a slow answer past shutdown.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::api::{self, ApiState};

/// Longest request head read (the probe's are a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;
/// A client that connects and sends nothing is dropped after this.
const IDLE: Duration = Duration::from_secs(5);

/// What the server's threads share.
pub(crate) struct Shared {
    pub api: ApiState,
    pub tls: Arc<ServerConfig>,
    pub shutdown: AtomicBool,
    /// Woken on shutdown, so a slow answer does not hold the drop up.
    pub wake: Condvar,
    pub wake_lock: Mutex<()>,
    pub sockets: Mutex<HashMap<u64, TcpStream>>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub next_id: AtomicU64,
    pub connections: AtomicUsize,
    /// Connections that reached the redirect target (a client that followed).
    pub redirect_hits: AtomicUsize,
}

impl Shared {
    fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Waits `d`, or less when the server shuts down.
    fn pause(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut guard = self.wake_lock.lock();
        while !self.is_shutdown() && Instant::now() < until {
            self.wake.wait_until(&mut guard, until);
        }
    }

    fn spawn(self: &Arc<Self>, name: String, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let handle = std::thread::Builder::new().name(name).spawn(f)?;
        let mut threads = self.threads.lock();
        threads.retain(|t| !t.is_finished());
        threads.push(handle);
        Ok(())
    }

    fn track(&self, stream: &TcpStream) -> io::Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.sockets.lock().insert(id, stream.try_clone()?);
        if self.is_shutdown() {
            // Raced with stop(): it may have drained the sockets already.
            let _ = stream.shutdown(Shutdown::Both);
        }
        Ok(id)
    }

    /// Stops everything and joins every thread.
    pub(crate) fn stop(&self, listeners: &[SocketAddr]) {
        if self.shutdown.swap(true, Ordering::AcqRel) {
            return;
        }
        {
            let _guard = self.wake_lock.lock();
            self.wake.notify_all();
        }
        for addr in listeners {
            // Unblocks accept(): it sees the flag and returns.
            let _ = TcpStream::connect_timeout(addr, Duration::from_millis(200));
        }
        for (_, s) in self.sockets.lock().drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
        let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Starts the accept threads of the API listener and of the redirect target.
pub(crate) fn start(
    shared: &Arc<Shared>,
    api: TcpListener,
    redirect: TcpListener,
) -> io::Result<()> {
    let port = api.local_addr()?.port();
    let s = shared.clone();
    shared.spawn(format!("fake-{port}-rest"), move || accept_api(s, api))?;
    let s = shared.clone();
    shared.spawn(format!("fake-{port}-307"), move || {
        accept_redirect(s, redirect)
    })
}

fn accept_api(shared: Arc<Shared>, listener: TcpListener) {
    let port = listener.local_addr().map_or(0, |a| a.port());
    while !shared.is_shutdown() {
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        if shared.is_shutdown() {
            return;
        }
        shared.connections.fetch_add(1, Ordering::Relaxed);
        let Ok(id) = shared.track(&stream) else {
            continue;
        };
        let s = shared.clone();
        let spawned = shared.spawn(format!("fake-{port}-r{id}"), move || {
            if let Err(e) = serve(&s, stream) {
                log::debug!("fake REST API: connection ended: {e}");
            }
            s.sockets.lock().remove(&id);
        });
        if spawned.is_err() {
            shared.sockets.lock().remove(&id);
        }
    }
}

/// The master's internal address, as seen from a client: it accepts and never answers,
/// so a client that follows a redirect hangs until its deadline (and is counted).
fn accept_redirect(shared: Arc<Shared>, listener: TcpListener) {
    while !shared.is_shutdown() {
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        if shared.is_shutdown() {
            return;
        }
        shared.redirect_hits.fetch_add(1, Ordering::Relaxed);
        // Held open (and shut down on stop) without a thread of its own.
        let _ = shared.track(&stream);
    }
}

fn serve(shared: &Shared, tcp: TcpStream) -> io::Result<()> {
    tcp.set_read_timeout(Some(IDLE))?;
    tcp.set_write_timeout(Some(IDLE))?;
    tcp.set_nodelay(true)?;
    let conn = ServerConnection::new(shared.tls.clone()).map_err(io::Error::other)?;
    let mut tls = StreamOwned::new(conn, tcp);
    let head = read_head(&mut tls)?;
    let Some(request) = api::parse(&head) else {
        return write(&mut tls, 400, None, "{}");
    };
    let delay = shared.api.switches.lock().delay;
    if !delay.is_zero() {
        shared.pause(delay);
        if shared.is_shutdown() {
            return Ok(());
        }
    }
    let response = api::answer(&shared.api, &request);
    write(
        &mut tls,
        response.status,
        response.location.as_deref(),
        &response.body,
    )
}

fn read_head(stream: &mut impl Read) -> io::Result<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before a request",
            ));
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn write(
    tls: &mut StreamOwned<ServerConnection, TcpStream>,
    status: u16,
    location: Option<&str>,
    body: &str,
) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    if status == 401 {
        out.push_str("WWW-Authenticate: Basic realm=\"fake cluster\"\r\n");
    }
    if let Some(l) = location {
        out.push_str(&format!("Location: {l}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    tls.write_all(out.as_bytes())?;
    tls.conn.send_close_notify();
    tls.flush()
}
