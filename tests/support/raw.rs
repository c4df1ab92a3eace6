//! A raw RESP connection, plain or TLS, for what the client cannot express (exact
//! reply shapes, pipelined handshakes, pub/sub before the client has it, a reply held
//! then released, a connection dropped).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use resilient_redis::resp::{write_arg, write_command_header, Decoder, Value};
use rustls::{ClientConnection, StreamOwned};

/// What a raw connection runs over: TCP, or TLS over TCP.
pub trait Wire: Read + Write {
    /// The socket underneath (for read timeouts).
    fn socket(&self) -> &TcpStream;
}

impl Wire for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

impl Wire for StreamOwned<ClientConnection, TcpStream> {
    fn socket(&self) -> &TcpStream {
        &self.sock
    }
}

/// A raw connection: write commands, read decoded frames.
pub struct Raw<S: Wire = TcpStream> {
    pub stream: S,
    dec: Decoder,
}

/// Bulk string value.
pub fn b(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

/// Simple string value.
pub fn ok() -> Value {
    Value::SimpleString("OK".into())
}

/// The frame of a command.
pub fn frame(args: &[&str]) -> Vec<u8> {
    let mut buf = Vec::new();
    write_command_header(&mut buf, args.len());
    for a in args {
        write_arg(&mut buf, a.as_bytes());
    }
    buf
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).expect("connect to the fake");
        stream.set_nodelay(true).unwrap();
        Raw::over(stream)
    }

    /// Connects and switches to RESP3.
    pub fn resp3(addr: SocketAddr) -> Raw {
        let mut r = Raw::connect(addr);
        let hello = r.cmd(&["HELLO", "3"]);
        assert!(matches!(hello, Value::Map(_)), "{hello:?}");
        r
    }

    /// Connects, switches to RESP3 and opts in to maintenance notifications.
    pub fn opted_in(addr: SocketAddr) -> Raw {
        let mut r = Raw::resp3(addr);
        assert_eq!(r.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]), ok());
        r
    }
}

impl<S: Wire> Raw<S> {
    /// A raw connection over `stream`, connected already.
    pub fn over(stream: S) -> Raw<S> {
        Raw {
            stream,
            dec: Decoder::new(),
        }
    }

    pub fn send(&mut self, args: &[&str]) {
        self.send_bytes(&frame(args));
    }

    /// Writes `bytes` and flushes them (over TLS, a write only fills rustls' buffer).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
        self.stream.flush().unwrap();
    }

    /// The next frame, or `None` after `timeout` (or at EOF, or on an error).
    pub fn read_within(&mut self, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = self.dec.decode().expect("a well-formed frame") {
                return Some(v);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.stream.socket().set_read_timeout(Some(left)).unwrap();
            match self.dec.read_from(&mut self.stream) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// The next frame (5 s at most).
    pub fn read(&mut self) -> Value {
        self.read_within(Duration::from_secs(5))
            .expect("a frame within 5 s")
    }

    pub fn cmd(&mut self, args: &[&str]) -> Value {
        self.send(args);
        self.read()
    }

    /// Everything one `read()` call returns, decoded (for "in the same write" checks).
    pub fn read_one_chunk(&mut self) -> Vec<Value> {
        self.stream
            .socket()
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let n = self.stream.read(&mut buf).expect("one read");
        let mut dec = Decoder::new();
        dec.feed(&buf[..n]);
        let mut out = Vec::new();
        while let Some(v) = dec.decode().unwrap() {
            out.push(v);
        }
        out
    }

    /// Whether the server closed the connection (EOF, or over TLS a close without
    /// close_notify) within `timeout`.
    pub fn closed_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.stream.socket().set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return false
                }
                Err(_) => return true,
            }
        }
    }
}

/// The text of an error value.
pub fn err_text(v: &Value) -> String {
    v.error_message()
        .unwrap_or_else(|| panic!("expected an error, got {v:?}"))
        .to_string()
}

/// A push frame's elements.
pub fn push_items(v: &Value) -> &[Value] {
    match v {
        Value::Push(items) => items,
        other => panic!("expected a push frame, got {other:?}"),
    }
}
