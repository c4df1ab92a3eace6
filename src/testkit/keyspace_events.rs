//! Keyspace notifications: after a write that did something, the events of its keys,
//! published on this server only (in a cluster each node publishes the events of its
//! own keys, as the real server does), when `notify-keyspace-events` asks for them.
//!
//! What it models: `K` (`__keyspace@<db>__:<key>`, the event as message) and `E`
//! (`__keyevent@<db>__:<event>`, the key as message), with the event named as the
//! server names it for the common commands (`INCR` is `incrby`, `MSET` is `set` per
//! key, `UNLINK` is `del`) and the command's own name otherwise. What it does not:
//! tell the event classes apart (any class letter turns every event on), `expired`
//! and `evicted`, or events of commands run by `EXEC`.

use super::pubsub;
use super::reply::Reply;
use super::session::Ctx;
use super::table::{Spec, WRITE};
use crate::resp::Value;

/// Writes whose reply counts what they did: `0` means nothing happened, and the
/// server publishes nothing.
const COUNTING: &[&str] = &[
    "del",
    "unlink",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "persist",
    "setnx",
    "hsetnx",
    "sadd",
    "srem",
    "zrem",
    "hdel",
    "lrem",
    "renamenx",
    "copy",
];

/// The event a write publishes, as the server names it.
fn event(command: &str) -> &str {
    match command {
        "incr" => "incrby",
        "decr" => "decrby",
        "mset" | "setnx" | "setex" | "psetex" | "getset" => "set",
        "unlink" | "getdel" => "del",
        "hmset" | "hsetnx" => "hset",
        "pexpire" | "expireat" | "pexpireat" => "expire",
        "lpushx" => "lpush",
        "rpushx" => "rpush",
        other => other,
    }
}

/// Before a command runs: the keys `DEL` and `UNLINK` will delete (the server
/// publishes `del` for those only, not for keys that did not exist).
pub(crate) fn before(ctx: &mut Ctx<'_, '_>, spec: &Spec, args: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    if !matches!(spec.name, "del" | "unlink") {
        return None;
    }
    let now = ctx.now;
    let db = ctx.db();
    Some(
        spec.key_args(args)
            .into_iter()
            .filter(|k| db.exists(k, now))
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// Publishes the events of a command that ran, if it wrote and did something
/// (`deleted`: what `before` found, for `DEL` and `UNLINK`).
pub(crate) fn after(
    ctx: &mut Ctx<'_, '_>,
    spec: &Spec,
    args: &[Vec<u8>],
    reply: &Reply,
    deleted: Option<Vec<Vec<u8>>>,
) {
    if !spec.has(WRITE) {
        return;
    }
    let flags = ctx
        .dbs
        .config
        .get("notify-keyspace-events")
        .cloned()
        .unwrap_or_default();
    let (keyspace, keyevent) = (flags.contains('K'), flags.contains('E'));
    let classes = flags.chars().any(|c| "Ag$lshzxetd".contains(c));
    if !(keyspace || keyevent) || !classes {
        return;
    }
    let did_nothing = match reply {
        Reply::Value(Value::Error(_)) | Reply::Value(Value::Nil) | Reply::NullArray => true,
        Reply::Value(Value::Int(0)) => COUNTING.contains(&spec.name),
        _ => false,
    };
    if did_nothing {
        return;
    }
    let event = event(spec.name);
    let db = ctx.s.db;
    let server = ctx.s.server.clone();
    let keys: Vec<&[u8]> = match &deleted {
        Some(deleted) => deleted.iter().map(Vec::as_slice).collect(),
        None => spec.key_args(args),
    };
    for key in keys {
        if keyspace {
            let mut channel = format!("__keyspace@{db}__:").into_bytes();
            channel.extend_from_slice(key);
            pubsub::deliver(&server, &channel, event.as_bytes());
        }
        if keyevent {
            let channel = format!("__keyevent@{db}__:{event}");
            pubsub::deliver(&server, channel.as_bytes(), key);
        }
    }
}
