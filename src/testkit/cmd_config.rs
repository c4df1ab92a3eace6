//! `CONFIG GET|SET` over a small table of the parameters tests touch (validated as the
//! server validates them, with its error texts), and `WAIT`, which on a fake without
//! replicas counts none: at once for 0, after the timeout otherwise.

use std::collections::BTreeMap;

use super::blocking;
use super::glob;
use super::reply::{self, bulk_value, err, int, ok, parse_int, Reply};
use super::session::Ctx;
use crate::resp::Value;

/// How a parameter's value is checked.
#[derive(Clone, Copy)]
enum Kind {
    /// Bytes, with the server's unit suffixes (`10mb`, `1gb`).
    Memory,
    Int(i64, i64),
    Bool,
    OneOf(&'static [&'static str]),
    /// Keyspace notification classes, stored the way the server prints them.
    Events,
    Text,
    Immutable,
}

const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// The parameters the fake knows: name, default, kind.
const PARAMS: &[(&str, &str, Kind)] = &[
    ("appendonly", "no", Kind::Bool),
    ("databases", "16", Kind::Immutable),
    ("maxclients", "10000", Kind::Int(1, i32::MAX as i64)),
    ("maxmemory", "0", Kind::Memory),
    ("maxmemory-clients", "0", Kind::Memory),
    ("maxmemory-eviction-tenacity", "10", Kind::Int(0, 100)),
    ("maxmemory-policy", "noeviction", Kind::OneOf(POLICIES)),
    ("maxmemory-samples", "5", Kind::Int(1, 64)),
    ("notify-keyspace-events", "", Kind::Events),
    ("save", "", Kind::Text),
    ("stream-node-max-entries", "100", Kind::Int(0, i64::MAX)),
    ("timeout", "0", Kind::Int(0, i32::MAX as i64)),
];

/// The configuration a fake starts with.
pub(crate) fn defaults() -> BTreeMap<String, String> {
    PARAMS
        .iter()
        .map(|(n, v, _)| (n.to_string(), v.to_string()))
        .collect()
}

fn memory(v: &str) -> Option<u64> {
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let unit = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

fn events(v: &str) -> Option<String> {
    const ALL: &str = "g$lshzxetd";
    let mut set = String::new();
    for c in v.chars() {
        match c {
            'A' => set.push_str(ALL),
            c if "g$lshzxetdnKEm".contains(c) => set.push(c),
            _ => return None,
        }
    }
    let mut out = if ALL.chars().all(|c| set.contains(c)) {
        "A".to_string()
    } else {
        ALL.chars().filter(|&c| set.contains(c)).collect()
    };
    out.extend("nKEm".chars().filter(|&c| set.contains(c)));
    Some(out)
}

/// The value to store, or why not (the text after the server's common prefix).
fn check(kind: Kind, v: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(v).to_string();
    match kind {
        Kind::Memory => memory(&text)
            .map(|n| n.to_string())
            .ok_or_else(|| "argument must be a memory value".into()),
        Kind::Int(min, max) => match parse_int(v) {
            None => Err("argument couldn't be parsed into an integer".into()),
            Some(n) if n < min || n > max => Err(format!(
                "argument must be between {min} and {max} inclusive"
            )),
            Some(n) => Ok(n.to_string()),
        },
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            v @ ("yes" | "no") => Ok(v.to_string()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::OneOf(options) => options
            .iter()
            .find(|o| o.eq_ignore_ascii_case(&text))
            .map(|o| o.to_string())
            .ok_or_else(|| {
                format!(
                    "argument(s) must be one of the following: {}",
                    options.join(", ")
                )
            }),
        Kind::Events => events(&text)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        Kind::Text => Ok(text),
        Kind::Immutable => Err("can't set immutable config".into()),
    }
}

/// `CONFIG SET parameter value [parameter value ...]`: all or nothing.
pub(crate) fn config_set(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if args.len() % 2 != 0 {
        return reply::syntax_error();
    }
    let mut changes: Vec<(&str, String)> = Vec::new();
    for pair in args[2..].chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        let Some((name, _, kind)) = PARAMS.iter().find(|(n, _, _)| *n == name) else {
            return err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                String::from_utf8_lossy(&pair[0])
            ));
        };
        let failed = |why: &str| {
            err(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ))
        };
        if changes.iter().any(|(n, _)| n == name) {
            return failed("duplicate parameter");
        }
        match check(*kind, &pair[1]) {
            Ok(v) => changes.push((name, v)),
            Err(why) => return failed(&why),
        }
    }
    for (name, v) in changes {
        ctx.dbs.config.insert(name.to_string(), v);
    }
    ok()
}

/// `CONFIG GET pattern ...`: a map (a flat array in RESP2); an exact name comes back
/// as written, a pattern's matches under their own names.
pub(crate) fn config_get(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let mut found: Vec<(Vec<u8>, String)> = Vec::new();
    for pattern in &args[2..] {
        let lower = pattern.to_ascii_lowercase();
        let is_glob = lower.iter().any(|b| b"*?[".contains(b));
        for (name, value) in &ctx.dbs.config {
            let hit = if is_glob {
                glob::matches(&lower, name.as_bytes())
            } else {
                lower == name.as_bytes()
            };
            let shown = if is_glob {
                name.as_bytes()
            } else {
                pattern.as_slice()
            };
            if hit && !found.iter().any(|(n, _)| n.eq_ignore_ascii_case(shown)) {
                found.push((shown.to_vec(), value.clone()));
            }
        }
    }
    Reply::Value(Value::Map(
        found
            .into_iter()
            .map(|(n, v)| (bulk_value(&n), bulk_value(v.as_bytes())))
            .collect(),
    ))
}

/// `WAIT numreplicas timeout`: 0 replicas acknowledged, after waiting for the timeout
/// when more than none were asked for (`0`: forever), as a server without replicas.
pub(crate) fn wait(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if ctx.s.server.config.replica {
        return err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
    }
    let Some(wanted) = parse_int(&args[1]) else {
        return reply::not_integer();
    };
    let timeout = match blocking::timeout_ms(&args[2]) {
        Ok(t) => t,
        Err(e) => return e,
    };
    if wanted <= 0 {
        return int(0);
    }
    blocking::serve(ctx, timeout, |_| None, |_| int(0))
}
