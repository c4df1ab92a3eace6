//! The handshake on a fresh transport, before the reader and writer threads start:
//! `HELLO 3` (with AUTH and SETNAME folded in) pipelined with `SELECT`, falling back to
//! RESP2 (`AUTH`, `CLIENT SETNAME`) when the server has no HELLO or RESP2 is asked for.
//!
//! Runs synchronously with the socket's read timeout as the deadline; push frames that
//! arrive mid-handshake are kept for the push handler instead of being taken as replies.
//!
//! Maintenance notifications: `CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type <t>`
//! goes in the same pipelined round as `HELLO 3`. The negotiated protocol is not known
//! when it is written, so the request is speculative and reconciled once every reply
//! is in: live only on RESP3 with `+OK`. `enabled` then refuses the connection
//! otherwise; `auto` goes on without (see `crate::maintenance`). Enterprise replays
//! the last MIGRATED / FAILED_OVER right after the `+OK`, in the same read: such push
//! frames land in `early_pushes` (or stay in the decoder for the reader thread), never
//! among the replies.

use std::net::IpAddr;
use std::time::Instant;

use super::transport::Transport;
use super::ConnectionConfig;
use crate::config::Credentials;
use crate::config::{MaintNotifications, Options, Protocol};
use crate::error::{Error, ErrorKind, Result};
use crate::maintenance;
use crate::resp::{write_arg, write_command_header, Decoder, Value};

/// What the handshake learned.
pub(crate) struct Handshake {
    pub protocol: Protocol,
    /// Push frames received during the handshake, in order.
    pub early_pushes: Vec<Value>,
    /// The server's `HELLO` map (RESP3 only): version, role, id, mode.
    pub server: Vec<(Value, Value)>,
    /// Whether maintenance notifications were opted in to (RESP3 and `+OK`).
    pub maint_notifications: bool,
    /// The quickest round of the handshake, from its write to the first byte of its
    /// replies: where the connection's reply floor starts.
    pub round_trip: Option<std::time::Duration>,
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

/// `peer`: the address connected to, for the `moving-endpoint-type` detection.
pub(crate) fn run(
    transport: &mut Transport,
    decoder: &mut Decoder,
    cfg: &ConnectionConfig,
    deadline: Instant,
    peer: Option<IpAddr>,
) -> Result<Handshake> {
    // Asked on every connection, so a rotated password or a fresh token is used.
    let credentials = match &cfg.options.credentials {
        Some(provider) => Some(provider.credentials()?),
        None => cfg
            .options
            .password
            .as_ref()
            .map(|p| match &cfg.options.user {
                Some(u) => Credentials::user(u.clone(), p.expose()),
                None => Credentials::password(p.expose()),
            }),
    };
    let (user, password) = match &credentials {
        Some(c) => (c.user_name(), Some(c.secret().expose())),
        None => (cfg.options.user.as_deref(), None),
    };
    // A server or proxy may quote back the password it refused, in any form.
    run_steps(transport, decoder, cfg, deadline, peer, user, password).map_err(|e| match password {
        Some(p) => e.redacting(p),
        None => e,
    })
}

fn run_steps(
    transport: &mut Transport,
    decoder: &mut Decoder,
    cfg: &ConnectionConfig,
    deadline: Instant,
    peer: Option<IpAddr>,
    user_name: Option<&str>,
    password: Option<&str>,
) -> Result<Handshake> {
    let options: &Options = &cfg.options;
    let mut hs = Handshake {
        protocol: Protocol::Resp2,
        early_pushes: Vec::new(),
        server: Vec::new(),
        maint_notifications: false,
        round_trip: None,
    };
    let maint = MaintOptIn::new(cfg, peer);
    if options.protocol == Some(Protocol::Resp2) {
        maint.unavailable(
            "protocol=resp2 is forced, and notifications need RESP3",
            ErrorKind::Config,
        )?;
    }
    let password = password.map(str::as_bytes);
    let user = user_name.unwrap_or("default").as_bytes();
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
        let maint_at = maint.asks().then(|| {
            let args = maint.args();
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            round.push("CLIENT", &args);
            round.names.len() - 1
        });
        let replies = exchange(transport, decoder, &round, deadline, &mut hs)?;
        match &replies[0] {
            Value::Map(pairs) => {
                hs.protocol = Protocol::Resp3;
                hs.server = pairs.clone();
                for (i, (name, reply)) in round.names.iter().zip(&replies).enumerate().skip(1) {
                    if Some(i) != maint_at {
                        expect_ok(name, reply)?;
                    }
                }
                if let Some(i) = maint_at {
                    hs.maint_notifications = maint.reconcile(&replies[i])?;
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
            Value::Array(_) => {
                maint.unavailable("the server answered HELLO 3 in RESP2", ErrorKind::Protocol)?;
            }
            reply => {
                let err = reply_error("HELLO", reply);
                if err.kind() == ErrorKind::Auth {
                    return Err(err);
                }
                if options.protocol == Some(Protocol::Resp3) {
                    return Err(err);
                }
                maint.unavailable(
                    "the server refused HELLO 3 (it does not speak RESP3)",
                    ErrorKind::Protocol,
                )?;
                // NOPROTO or unknown command (Redis < 6): fall back to RESP2 below.
                log::debug!("HELLO refused ({}), falling back to RESP2", err.detail());
            }
        }
    }

    let mut round = Round::new();
    if let Some(p) = password {
        if user_name.is_some() {
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

/// The maintenance-notification opt-in of one connection: what to ask, and what the
/// answer means for the mode.
struct MaintOptIn<'a> {
    cfg: &'a ConnectionConfig,
    mode: MaintNotifications,
    endpoint_type: &'static str,
}

impl<'a> MaintOptIn<'a> {
    fn new(cfg: &'a ConnectionConfig, peer: Option<IpAddr>) -> MaintOptIn<'a> {
        let o = &cfg.options;
        let endpoint_type = o
            .maint_moving_endpoint_type
            .unwrap_or_else(|| {
                maintenance::detect_endpoint_type(&cfg.endpoint.host, peer, cfg.tls.is_some())
            })
            .as_str();
        MaintOptIn {
            cfg,
            mode: o.maint_notifications,
            endpoint_type,
        }
    }

    fn asks(&self) -> bool {
        self.mode != MaintNotifications::Disabled
    }

    fn args(&self) -> [&'static str; 5] {
        [
            "CLIENT",
            "MAINT_NOTIFICATIONS",
            "ON",
            "moving-endpoint-type",
            self.endpoint_type,
        ]
    }

    /// The opt-in cannot be live on this connection: an error when it is required,
    /// a note (once per endpoint) when it is best effort.
    fn unavailable(&self, why: &str, kind: ErrorKind) -> Result<()> {
        match self.mode {
            MaintNotifications::Disabled => Ok(()),
            MaintNotifications::Auto => {
                maintenance::note_unavailable_once(&self.cfg.endpoint, why);
                Ok(())
            }
            MaintNotifications::Enabled => Err(Error::new(
                kind,
                format!(
                    "maintenance notifications are required (maintNotifications=enabled) \
                     but {why}; use maintNotifications=auto to connect without them"
                ),
            )),
        }
    }

    /// Reads the reply to the opt-in on a RESP3 connection: live on `+OK`. A refusal
    /// is absorbed here, never surfaced as an error reply, under `auto`.
    fn reconcile(&self, reply: &Value) -> Result<bool> {
        let ok = matches!(reply, Value::SimpleString(s) if s.eq_ignore_ascii_case("OK"));
        if ok {
            return Ok(true);
        }
        let why = match reply.error_message() {
            // On Enterprise a cluster-level flag decides whether the subcommand exists
            // at all; a supporting version with it off refuses the opt-in.
            Some(m) => format!(
                "the server refused CLIENT MAINT_NOTIFICATIONS ({m}); on Redis Enterprise, \
                 check the cluster-level flag that enables it"
            ),
            None => format!(
                "the server answered CLIENT MAINT_NOTIFICATIONS with a {}",
                reply.type_name()
            ),
        };
        self.unavailable(&why, ErrorKind::Protocol)
            .map_err(|e| e.with_command("CLIENT"))?;
        Ok(false)
    }
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
    let sent = Instant::now();
    let mut timed = false;
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
                if n > 0 && !timed {
                    timed = true;
                    let took = sent.elapsed();
                    hs.round_trip = Some(hs.round_trip.map_or(took, |t| t.min(took)));
                }
                if n == 0 {
                    // Refused credentials stay an `Auth` error when the server hangs up
                    // before answering the rest of the round (the opt-in or `SELECT`
                    // pipelined after `HELLO`): a reconnect would only be refused again.
                    if let Some(e) = round
                        .names
                        .iter()
                        .zip(&replies)
                        .filter(|(_, reply)| reply.is_error())
                        .map(|(name, reply)| reply_error(name, reply))
                        .find(|e| e.kind() == ErrorKind::Auth)
                    {
                        return Err(e);
                    }
                    // A server that turns a connection away (`maxclients`) says why,
                    // then closes: keep its reason.
                    let why = replies
                        .iter()
                        .find_map(Value::error_message)
                        .map_or(String::new(), |m| format!(" after answering \"{m}\""));
                    return Err(Error::new(
                        ErrorKind::ConnectionClosed,
                        format!("the server closed the connection during the handshake{why}"),
                    ));
                }
            }
        }
    }
    transport.shutdown.set_read_timeout(None)?;
    Ok(replies)
}
