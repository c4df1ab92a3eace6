//! The handshake on a fresh transport, before the reader and writer threads start:
//! `HELLO 3` (with AUTH and SETNAME folded in) pipelined with `SELECT`, falling back to
//! RESP2 (`AUTH`, `CLIENT SETNAME`) when the server has no HELLO or RESP2 is asked for.
//!
//! Runs synchronously with the socket's read timeout as the deadline; push frames that
//! arrive mid-handshake are kept for the push handler instead of being taken as replies.

use std::time::Instant;

use super::transport::Transport;
use super::ConnectionConfig;
use crate::config::{Options, Protocol};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::{write_arg, write_command_header, Decoder, Value};

/// What the handshake learned.
pub(crate) struct Handshake {
    pub protocol: Protocol,
    /// Push frames received during the handshake, in order.
    pub early_pushes: Vec<Value>,
    /// The server's `HELLO` map (RESP3 only): version, role, id, mode.
    pub server: Vec<(Value, Value)>,
}

/// Frames written and replies awaited in one pipelined round trip.
struct Round {
    buf: Vec<u8>,
    names: Vec<&'static str>,
}

impl Round {
    fn new() -> Round {
        Round {
            buf: Vec::with_capacity(256),
            names: Vec::new(),
        }
    }

    fn push(&mut self, name: &'static str, args: &[&[u8]]) {
        write_command_header(&mut self.buf, args.len());
        for a in args {
            write_arg(&mut self.buf, a);
        }
        self.names.push(name);
    }
}

pub(crate) fn run(
    transport: &mut Transport,
    decoder: &mut Decoder,
    cfg: &ConnectionConfig,
    deadline: Instant,
) -> Result<Handshake> {
    let options: &Options = &cfg.options;
    let mut hs = Handshake {
        protocol: Protocol::Resp2,
        early_pushes: Vec::new(),
        server: Vec::new(),
    };
    let password = options.password.as_ref().map(|p| p.expose().as_bytes());
    let user = options.user.as_deref().unwrap_or("default").as_bytes();
    let db = options.database.to_string();

    if options.protocol != Some(Protocol::Resp2) {
        let mut round = Round::new();
        let mut hello: Vec<&[u8]> = vec![b"HELLO", b"3"];
        if let Some(p) = password {
            hello.extend_from_slice(&[b"AUTH", user, p]);
        }
        if let Some(name) = &options.client_name {
            hello.extend_from_slice(&[b"SETNAME", name.as_bytes()]);
        }
        round.push("HELLO", &hello);
        if options.database != 0 {
            round.push("SELECT", &[b"SELECT", db.as_bytes()]);
        }
        if cfg.readonly {
            round.push("READONLY", &[b"READONLY"]);
        }
        let replies = exchange(transport, decoder, &round, deadline, &mut hs)?;
        match &replies[0] {
            Value::Map(pairs) => {
                hs.protocol = Protocol::Resp3;
                hs.server = pairs.clone();
                for (name, reply) in round.names.iter().zip(&replies).skip(1) {
                    expect_ok(name, reply)?;
                }
                return Ok(hs);
            }
            // A server that answers HELLO 3 in RESP2 form (flat array) speaks RESP2 only.
            Value::Array(_) if options.protocol == Some(Protocol::Resp3) => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    "RESP3 was required but the server answered HELLO in RESP2",
                ));
            }
            Value::Array(_) => {}
            reply => {
                let err = reply_error("HELLO", reply);
                if err.kind() == ErrorKind::Auth {
                    return Err(err);
                }
                if options.protocol == Some(Protocol::Resp3) {
                    return Err(err);
                }
                // NOPROTO or unknown command (Redis < 6): fall back to RESP2 below.
                log::debug!("HELLO refused ({}), falling back to RESP2", err.detail());
            }
        }
    }

    let mut round = Round::new();
    if let Some(p) = password {
        if options.user.is_some() {
            round.push("AUTH", &[b"AUTH", user, p]);
        } else {
            round.push("AUTH", &[b"AUTH", p]);
        }
    }
    if let Some(name) = &options.client_name {
        round.push("CLIENT", &[b"CLIENT", b"SETNAME", name.as_bytes()]);
    }
    if options.database != 0 {
        round.push("SELECT", &[b"SELECT", db.as_bytes()]);
    }
    if cfg.readonly {
        round.push("READONLY", &[b"READONLY"]);
    }
    if round.names.is_empty() {
        return Ok(hs);
    }
    let replies = exchange(transport, decoder, &round, deadline, &mut hs)?;
    for (name, reply) in round.names.iter().zip(&replies) {
        expect_ok(name, reply)?;
    }
    Ok(hs)
}

fn expect_ok(name: &str, reply: &Value) -> Result<()> {
    if reply.is_error() {
        return Err(reply_error(name, reply));
    }
    Ok(())
}

fn reply_error(name: &str, reply: &Value) -> Error {
    match reply.error_message() {
        Some(m) => Error::from_server_reply(m).with_command(name),
        None => Error::new(
            ErrorKind::Protocol,
            format!("unexpected {} in the handshake", reply.type_name()),
        )
        .with_command(name),
    }
}

/// Writes the round and reads one reply per command, setting push frames aside.
fn exchange(
    transport: &mut Transport,
    decoder: &mut Decoder,
    round: &Round,
    deadline: Instant,
    hs: &mut Handshake,
) -> Result<Vec<Value>> {
    transport.write.write_all(&round.buf)?;
    let mut replies = Vec::with_capacity(round.names.len());
    while replies.len() < round.names.len() {
        match decoder.decode()? {
            Some(Value::Push(items)) => hs.early_pushes.push(Value::Push(items)),
            Some(v) => replies.push(v),
            None => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Error::new(ErrorKind::Timeout, "handshake timed out"));
                }
                transport.shutdown.set_read_timeout(Some(left))?;
                let n = decoder.read_from(&mut transport.read).map_err(|e| {
                    let e: Error = e.into();
                    if e.kind() == ErrorKind::Timeout {
                        Error::new(ErrorKind::Timeout, "handshake timed out")
                    } else {
                        e
                    }
                })?;
                if n == 0 {
                    return Err(Error::new(
                        ErrorKind::ConnectionClosed,
                        "the server closed the connection during the handshake",
                    ));
                }
            }
        }
    }
    transport.shutdown.set_read_timeout(None)?;
    Ok(replies)
}
