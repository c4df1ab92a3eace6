//! Connection and server commands: HELLO, AUTH, SELECT, PING, ECHO, QUIT, RESET, INFO,
//! DBSIZE, FLUSHDB, FLUSHALL, TIME and CLIENT ID|SETNAME|GETNAME|INFO|SETINFO.
//!
//! Owns: the answers, in the shapes and texts of Redis 7.2. Must never: change another
//! connection's state.

use std::time::{SystemTime, UNIX_EPOCH};

use super::reply::{
    self, array, bulk, bulk_value, err, int, nil, ok, parse_int, simple, verbatim, Reply,
};
use super::server::HelloMode;
use super::session::{Ctx, Session};
use super::store::DATABASES;
use crate::resp::Value;

fn upper(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).to_ascii_uppercase()
}

fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// Whether `user`/`pass` may log in.
fn credentials_ok(s: &Session, user: &str, pass: &str) -> bool {
    let config = &s.server.config;
    if user == "default" {
        return match &*config.password.lock() {
            Some(p) => p == pass,
            // `nopass`: any password, unless the default user is switched off.
            None => !config.require_auth,
        };
    }
    config.users.lock().get(user).is_some_and(|p| p == pass)
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`
pub(crate) fn hello(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let s = &mut *ctx.s;
    let mut proto = s.proto;
    let mut auth = None;
    let mut name = None;
    if args.len() > 1 {
        proto = match parse_int(&args[1]) {
            Some(2) => 2,
            Some(3) => 3,
            _ => return err("NOPROTO unsupported protocol version"),
        };
        let mut i = 2;
        while i < args.len() {
            let opt = upper(&args[i]);
            if opt == "AUTH" && i + 2 < args.len() {
                auth = Some((text(&args[i + 1]), text(&args[i + 2])));
                i += 3;
            } else if opt == "SETNAME" && i + 1 < args.len() {
                name = Some(args[i + 1].clone());
                i += 2;
            } else {
                return err(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    text(&args[i])
                ));
            }
        }
    }
    if let Some((user, pass)) = auth {
        if !credentials_ok(s, &user, &pass) {
            return err(WRONGPASS);
        }
        s.conn.state.lock().auth = Some((user.clone(), pass));
        s.authenticated = true;
        s.user = user;
    }
    if !s.authenticated {
        return err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(name) = name {
        if let Err(e) = set_name(s, &name) {
            return e;
        }
    }
    if s.server.config.hello == HelloMode::Resp2Only {
        proto = 2;
    }
    s.proto = proto;
    s.conn.state.lock().proto = proto;
    let cluster = s.server.cluster.get().is_some();
    let pairs = vec![
        ("server", bulk_value(b"redis")),
        ("version", bulk_value(b"7.2.0")),
        ("proto", Value::Int(proto as i64)),
        ("id", Value::Int(s.conn.id as i64)),
        (
            "mode",
            bulk_value(if cluster { b"cluster" } else { b"standalone" }),
        ),
        (
            "role",
            bulk_value(if s.server.config.replica {
                b"replica"
            } else {
                b"master"
            }),
        ),
        ("modules", Value::Array(Vec::new())),
    ];
    Reply::Value(Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (bulk_value(k.as_bytes()), v))
            .collect(),
    ))
}

/// `AUTH [user] pass`
pub(crate) fn auth(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let s = &mut *ctx.s;
    let (user, pass) = match args.len() {
        2 => {
            if s.server.config.password.lock().is_none() && !s.server.config.require_auth {
                return err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
            }
            ("default".to_string(), text(&args[1]))
        }
        3 => (text(&args[1]), text(&args[2])),
        _ => return reply::syntax_error(),
    };
    if !credentials_ok(s, &user, &pass) {
        return err(WRONGPASS);
    }
    s.conn.state.lock().auth = Some((user.clone(), pass));
    s.authenticated = true;
    s.user = user;
    ok()
}

/// `SELECT db`
pub(crate) fn select(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let Some(db) = parse_int(&args[1]) else {
        return reply::not_integer();
    };
    if ctx.s.server.cluster.get().is_some() && db != 0 {
        return err("ERR SELECT is not allowed in cluster mode");
    }
    if !(0..DATABASES as i64).contains(&db) {
        return err("ERR DB index is out of range");
    }
    ctx.s.db = db as usize;
    ctx.s.conn.state.lock().db = db as usize;
    ok()
}

/// `PING [message]`: on a subscribed RESP2 connection, the array `["pong", message]`.
pub(crate) fn ping(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if args.len() > 2 {
        return reply::wrong_arity("ping");
    }
    if ctx.s.proto == 2 && ctx.s.subscriptions() > 0 {
        let msg = args.get(1).cloned().unwrap_or_default();
        return array(vec![bulk_value(b"pong"), Value::BulkString(msg)]);
    }
    match args.get(1) {
        Some(m) => bulk(m.clone()),
        None => simple("PONG"),
    }
}

/// `ECHO message`
pub(crate) fn echo(_ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    bulk(args[1].clone())
}

/// `QUIT`: `+OK`, then the connection closes.
pub(crate) fn quit(_ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    Reply::Close(Value::SimpleString("OK".into()))
}

/// `RESET`: back to a fresh connection's state.
pub(crate) fn reset(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let s = &mut *ctx.s;
    s.multi = None;
    s.multi_dirty = false;
    s.watched.clear();
    s.asking = false;
    s.proto = 2;
    s.db = 0;
    s.authenticated = !s.server.config.auth_required();
    s.user = "default".into();
    let mut state = s.conn.state.lock();
    state.proto = 2;
    state.db = 0;
    state.name = None;
    state.opted_in = false;
    state.moving_endpoint_type = None;
    state.channels.clear();
    state.patterns.clear();
    state.shard_channels.clear();
    simple("RESET")
}

/// `INFO [section ...]`: server, clients, replication, cluster and keyspace sections.
pub(crate) fn info(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "default" || w == "everything");
    let want = |name: &str| all || wanted.iter().any(|w| w == name);
    let server = ctx.s.server.clone();
    let cluster = server.cluster.get().is_some();
    let mut out = String::new();
    if want("server") {
        out.push_str(&format!(
            "# Server\r\nredis_version:7.2.0\r\nredis_mode:{}\r\nos:fake\r\narch_bits:64\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            if cluster { "cluster" } else { "standalone" },
            std::process::id(),
            server.run_id,
            server.addr.port(),
            server.started.elapsed().as_secs(),
        ));
    }
    if want("clients") {
        out.push_str(&format!(
            "# Clients\r\nconnected_clients:{}\r\nblocked_clients:{}\r\n\r\n",
            server.conns.lock().len(),
            server
                .store
                .blocked
                .load(std::sync::atomic::Ordering::Acquire),
        ));
    }
    if want("replication") {
        if server.config.replica {
            out.push_str("# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:0\r\nmaster_link_status:up\r\nslave_read_only:1\r\nconnected_slaves:0\r\n\r\n");
        } else {
            out.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n\r\n");
        }
    }
    if want("cluster") {
        out.push_str(&format!(
            "# Cluster\r\ncluster_enabled:{}\r\n\r\n",
            u8::from(cluster)
        ));
    }
    if want("keyspace") {
        out.push_str("# Keyspace\r\n");
        let now = ctx.now;
        for (i, db) in ctx.dbs.dbs.iter_mut().enumerate() {
            let keys = db.len(now);
            if keys > 0 {
                out.push_str(&format!(
                    "db{i}:keys={keys},expires={},avg_ttl=0\r\n",
                    db.expiring()
                ));
            }
        }
        out.push_str("\r\n");
    }
    let trimmed = out.trim_end_matches("\r\n").to_string() + "\r\n";
    verbatim(if out.is_empty() {
        String::new()
    } else {
        trimmed
    })
}

/// `DBSIZE`
pub(crate) fn dbsize(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    int(ctx.db().len(now) as i64)
}

fn flush_mode_ok(args: &[Vec<u8>]) -> bool {
    match args.len() {
        1 => true,
        2 => matches!(upper(&args[1]).as_str(), "ASYNC" | "SYNC"),
        _ => false,
    }
}

/// `FLUSHDB [ASYNC|SYNC]`
pub(crate) fn flushdb(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if !flush_mode_ok(args) {
        return reply::syntax_error();
    }
    ctx.db().flush();
    ok()
}

/// `FLUSHALL [ASYNC|SYNC]`
pub(crate) fn flushall(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if !flush_mode_ok(args) {
        return reply::syntax_error();
    }
    ctx.dbs.dbs.iter_mut().for_each(|db| db.flush());
    ok()
}

/// `TIME`: `[seconds, microseconds]` as bulk strings.
pub(crate) fn time(_ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    array(vec![
        bulk_value(t.as_secs().to_string().as_bytes()),
        bulk_value(t.subsec_micros().to_string().as_bytes()),
    ])
}

/// `CLIENT ID`
pub(crate) fn client_id(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    int(ctx.s.conn.id as i64)
}

fn set_name(s: &Session, name: &[u8]) -> Result<(), Reply> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(err(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    s.conn.state.lock().name = if name.is_empty() {
        None
    } else {
        Some(String::from_utf8_lossy(name).into_owned())
    };
    Ok(())
}

/// `CLIENT SETNAME name`
pub(crate) fn client_setname(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match set_name(ctx.s, &args[2]) {
        Ok(()) => ok(),
        Err(e) => e,
    }
}

/// `CLIENT GETNAME`
pub(crate) fn client_getname(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    match ctx.s.conn.state.lock().name.clone() {
        Some(n) => bulk(n),
        None => nil(),
    }
}

/// `CLIENT INFO`: this connection's line of `CLIENT LIST`.
pub(crate) fn client_info(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let s = &*ctx.s;
    let st = s.conn.state.lock();
    let line = format!(
        "id={} addr={} laddr={} fd=8 name={} age={} idle=0 flags={} db={} sub={} psub={} ssub={} multi={} watch={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client|info user={} redir=-1 resp={} lib-name= lib-ver=\n",
        s.conn.id,
        s.conn.peer,
        s.server.addr,
        st.name.clone().unwrap_or_default(),
        st.created.elapsed().as_secs(),
        if st.subscriptions() > 0 { "P" } else { "N" },
        s.db,
        st.channels.len(),
        st.patterns.len(),
        st.shard_channels.len(),
        s.multi.as_ref().map_or(-1, |q| q.len() as i64),
        s.watched.len(),
        s.user,
        s.proto,
    );
    verbatim(line)
}

/// `CLIENT SETINFO LIB-NAME|LIB-VER value`
pub(crate) fn client_setinfo(_ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match upper(&args[2]).as_str() {
        "LIB-NAME" | "LIB-VER" => ok(),
        _ => err(format!("ERR Unrecognized option '{}'", text(&args[2]))),
    }
}
