//! `COMMAND`, `COMMAND INFO name ...` and `COMMAND COUNT`: the fake's command table in
//! the real server's shape (name, arity, flags, first/last/step, ACL categories, tips,
//! key specs, subcommands; RESP3 sets where the server sends sets), with the request and response policy tips Redis 7.0
//! publishes for the commands the fake speaks, so a cluster client routes against the
//! fake as it would against a server (`tests/testkit/testkit_parity.rs` compares them).
//!
//! What it leaves out: flags beyond `write`, ACL categories, and the server's
//! documentation (`COMMAND DOCS`: redis-server 7.0 puts the policy tips in `COMMAND
//! INFO`, not there).

use super::reply::{self, bulk_value, err, int, Reply};
use super::session::Ctx;
use super::table::{self, Spec, KSTREAMS, WRITE};
use crate::resp::Value;

/// Tips as redis-server 7.0 lists them, for the commands the fake speaks that have any.
const TIPS: &[(&str, &[&str])] = &[
    (
        "dbsize",
        &["request_policy:all_shards", "response_policy:agg_sum"],
    ),
    (
        "del",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    (
        "exists",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    (
        "flushall",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "flushdb",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "info",
        &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
    ),
    (
        "keys",
        &["request_policy:all_shards", "nondeterministic_output_order"],
    ),
    ("mget", &["request_policy:multi_shard"]),
    (
        "mset",
        &[
            "request_policy:multi_shard",
            "response_policy:all_succeeded",
        ],
    ),
    (
        "ping",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "scan",
        &["nondeterministic_output", "request_policy:special"],
    ),
    ("time", &["nondeterministic_output"]),
    (
        "touch",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    (
        "unlink",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    (
        "wait",
        &["request_policy:all_shards", "response_policy:agg_min"],
    ),
    (
        "config|set",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    (
        "script|exists",
        &[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ],
    ),
    (
        "script|flush",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    (
        "script|load",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
];

/// `COMMAND [INFO name ... | COUNT]`
pub(crate) fn command(_ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let Some(sub) = args.get(1) else {
        return reply::array(top_level().map(|(name, spec)| entry(name, spec)).collect());
    };
    match String::from_utf8_lossy(sub).to_ascii_uppercase().as_str() {
        "COUNT" if args.len() == 2 => int(top_level().count() as i64),
        "INFO" => {
            if args.len() == 2 {
                return reply::array(top_level().map(|(name, spec)| entry(name, spec)).collect());
            }
            reply::array(
                args[2..]
                    .iter()
                    .map(|a| {
                        let name = String::from_utf8_lossy(a).to_ascii_lowercase();
                        top_level()
                            .find(|(n, _)| *n == name)
                            .map_or(Value::Nil, |(n, spec)| entry(n, spec))
                    })
                    .collect(),
            )
        }
        _ => err(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(sub)
        )),
    }
}

/// Every top-level command: a plain one with its spec, a container (`config`) without.
fn top_level() -> impl Iterator<Item = (&'static str, Option<&'static Spec>)> {
    let mut names: Vec<&'static str> = table::all().map(|s| s.name).collect();
    names.sort_unstable();
    let mut out: Vec<(&'static str, Option<&'static Spec>)> = Vec::new();
    for name in names {
        match name.split_once('|') {
            Some((container, _)) => {
                if out.last().map(|(n, _)| *n) != Some(container) {
                    out.push((container, None));
                }
            }
            None => out.push((name, table::all().find(|s| s.name == name))),
        }
    }
    out.into_iter()
}

fn set(words: &[&str]) -> Value {
    Value::Set(
        words
            .iter()
            .map(|w| Value::SimpleString(w.to_string()))
            .collect(),
    )
}

fn pair(k: &str, v: Value) -> (Value, Value) {
    (bulk_value(k.as_bytes()), v)
}

fn tips(name: &str) -> Value {
    let tips = TIPS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[][..], |t| t.1);
    Value::Set(tips.iter().map(|t| bulk_value(t.as_bytes())).collect())
}

/// One key spec from the fake's key positions.
fn key_specs(spec: &Spec) -> Value {
    let range = |last: i64, step: i64, limit: i64| {
        Value::Map(vec![
            pair("type", bulk_value(b"range")),
            pair(
                "spec",
                Value::Map(vec![
                    pair("lastkey", Value::Int(last)),
                    pair("keystep", Value::Int(step)),
                    pair("limit", Value::Int(limit)),
                ]),
            ),
        ])
    };
    let (begin, find) = if spec.keys == KSTREAMS {
        let begin = Value::Map(vec![
            pair("type", bulk_value(b"keyword")),
            pair(
                "spec",
                Value::Map(vec![
                    pair("keyword", bulk_value(b"STREAMS")),
                    pair("startfrom", Value::Int(1)),
                ]),
            ),
        ]);
        (begin, range(-1, 1, 2))
    } else {
        let (first, last, step) = spec.keys;
        if first <= 0 {
            return Value::Set(Vec::new());
        }
        let begin = Value::Map(vec![
            pair("type", bulk_value(b"index")),
            pair(
                "spec",
                Value::Map(vec![pair("index", Value::Int(i64::from(first)))]),
            ),
        ]);
        let last = if last < 0 { last } else { last - first };
        (begin, range(i64::from(last), step as i64, 0))
    };
    Value::Set(vec![Value::Map(vec![
        pair("flags", set(&[])),
        pair("begin_search", begin),
        pair("find_keys", find),
    ])])
}

/// The entry of a command (`spec`), or of a container (`None`: its subcommands).
fn entry(name: &str, spec: Option<&'static Spec>) -> Value {
    let Some(spec) = spec else {
        let prefix = format!("{name}|");
        let subs = table::all()
            .filter(|s| s.name.starts_with(&prefix))
            .map(|s| entry(s.name, Some(s)))
            .collect();
        return Value::Array(vec![
            bulk_value(name.as_bytes()),
            Value::Int(-2),
            set(&[]),
            Value::Int(0),
            Value::Int(0),
            Value::Int(0),
            set(&[]),
            Value::Set(Vec::new()),
            Value::Set(Vec::new()),
            Value::Set(subs),
        ]);
    };
    let (first, last, step) = if spec.keys == KSTREAMS {
        (0, 0, 0)
    } else {
        spec.keys
    };
    let flags: &[&str] = if spec.has(WRITE) { &["write"] } else { &[] };
    Value::Array(vec![
        bulk_value(name.as_bytes()),
        Value::Int(i64::from(spec.arity)),
        set(flags),
        Value::Int(i64::from(first)),
        Value::Int(i64::from(last)),
        Value::Int(step as i64),
        set(&[]),
        tips(name),
        key_specs(spec),
        Value::Set(Vec::new()),
    ])
}
