//! One fake connection's TLS, server side, split as the fake's plain connections are:
//! the connection's thread reads the socket and [`feeds`](TlsLink::feed) the raw bytes
//! in, while any thread (the connection's, a publisher's, a notification's, an un-hang)
//! [`writes`](TlsLink::write_all) plaintext out.
//!
//! Owns: the rustls `ServerConnection` and the order of TLS records on the socket.
//! Must never: hold the TLS state while writing to the socket (a peer that does not
//! read would stall the reader too), or write records out of order (every write to the
//! socket happens under one lock, taken before the state: the client's lock order).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use parking_lot::Mutex;
use rustls::{ServerConfig, ServerConnection};

/// The TLS state of one connection and the socket its records go out on.
pub(crate) struct TlsLink {
    out: Mutex<TcpStream>,
    state: Mutex<ServerConnection>,
}

impl TlsLink {
    /// A link that has not shaken hands yet; `stream` is the accepted socket.
    pub(crate) fn new(config: Arc<ServerConfig>, stream: &TcpStream) -> io::Result<TlsLink> {
        let mut conn = ServerConnection::new(config).map_err(io::Error::other)?;
        // Replies queued before the handshake ends (none in practice) and large bulk
        // replies are taken whole, as the plain socket's writes are.
        conn.set_buffer_limit(None);
        Ok(TlsLink {
            out: Mutex::new(stream.try_clone()?),
            state: Mutex::new(conn),
        })
    }

    /// Decrypts `raw` (bytes just read from the socket) and appends the plaintext to
    /// `plain`, answering the handshake on the way. An error (a bad record, a failed
    /// handshake) is final: the alert, if any, has been sent, and the connection must
    /// close.
    pub(crate) fn feed(&self, mut raw: &[u8], plain: &mut Vec<u8>) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        while !raw.is_empty() {
            let mut st = self.state.lock();
            st.read_tls(&mut raw)?;
            let processed = st.process_new_packets();
            loop {
                match st.reader().read(&mut chunk) {
                    // The peer's close_notify: its FIN follows, and ends the thread.
                    Ok(0) => break,
                    Ok(n) => plain.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
            let wants_write = st.wants_write();
            drop(st);
            if wants_write {
                self.flush()?;
            }
            if let Err(e) = processed {
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        }
        Ok(())
    }

    /// Encrypts `data` and writes it (before the handshake ends, it waits in the TLS
    /// state and goes out with the handshake's last flight).
    pub(crate) fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        let mut out = self.out.lock();
        let mut records = Vec::with_capacity(data.len() + 64);
        while !data.is_empty() {
            {
                let mut st = self.state.lock();
                let n = st.writer().write(data)?;
                if n == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                data = &data[n..];
                while st.wants_write() {
                    st.write_tls(&mut records)?;
                }
            }
            out.write_all(&records)?;
            records.clear();
        }
        Ok(())
    }

    /// Sends whatever records are ready (handshake flights, alerts).
    fn flush(&self) -> io::Result<()> {
        let mut out = self.out.lock();
        let mut records = Vec::new();
        {
            let mut st = self.state.lock();
            while st.wants_write() {
                st.write_tls(&mut records)?;
            }
        }
        out.write_all(&records)
    }
}
