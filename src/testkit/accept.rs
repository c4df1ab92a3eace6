//! The accept thread of a [`FakeServer`](super::FakeServer): accepting, refusing (not
//! listening at all, then listening again on the same port) and admitting a connection
//! (its handle registered, its thread started, its TLS link made when the server serves
//! TLS).
//!
//! Owns: the listening socket while the server lives. Must never: block shutdown (the
//! server pokes it awake), or admit a connection after shutdown began.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::conn::{self, ConnHandle};
use super::server::ServerInner;
use super::tls::link::TlsLink;

/// How long a write to a peer that does not read may block before the connection is
/// closed (the fake's client-output-buffer limit).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) fn accept_loop(server: Arc<ServerInner>, listener: TcpListener) {
    let mut listener = Some(listener);
    loop {
        if server.is_shutdown() {
            return;
        }
        let Some(l) = listener.as_ref() else {
            // Refusing: not listening at all, so connects fail at once with
            // "connection refused". Wait until told to listen again.
            let mut state = server.listen.lock();
            while state.refuse && !server.is_shutdown() {
                server
                    .listen_changed
                    .wait_for(&mut state, Duration::from_millis(100));
            }
            drop(state);
            if server.is_shutdown() {
                return;
            }
            match rebind(server.addr) {
                Some(l) => {
                    listener = Some(l);
                    server.listen.lock().listening = true;
                    server.listen_changed.notify_all();
                }
                None => {
                    log::warn!("fake server {}: cannot listen again", server.addr);
                    return;
                }
            }
            continue;
        };
        let stream = match l.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        if server.is_shutdown() {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
        if server.listen.lock().refuse {
            let _ = stream.shutdown(Shutdown::Both);
            listener = None;
            server.listen.lock().listening = false;
            server.listen_changed.notify_all();
            continue;
        }
        if let Err(e) = admit(&server, stream) {
            log::debug!("fake server {}: connection not admitted: {e}", server.addr);
        }
    }
}

fn rebind(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..200 {
        if let Ok(l) = TcpListener::bind(addr) {
            return Some(l);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn admit(server: &Arc<ServerInner>, stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let tls = match &server.tls {
        Some(config) => Some(Arc::new(TlsLink::new(config.clone(), &stream)?)),
        None => None,
    };
    let id = server.next_conn_id.fetch_add(1, Ordering::Relaxed);
    let conn = Arc::new(ConnHandle::new(id, &stream, tls.clone())?);
    server.conns.lock().insert(id, conn.clone());
    let thread_server = server.clone();
    let result = server.spawn(&format!("c{id}"), move || {
        conn::serve(thread_server, conn, stream, tls)
    });
    if result.is_err() {
        server.conns.lock().remove(&id);
    }
    result
}
