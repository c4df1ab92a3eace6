//! Reading the reply of `COMMAND` (every command's `COMMAND INFO`) into a table, in
//! the shapes of every server generation: Redis 7 (tips, key specs, subcommands, RESP2
//! flat arrays or RESP3 maps), and older ones with only `firstkey`/`lastkey`/`step`.
//!
//! Pure: a value in, a table out. An entry that cannot be read is skipped (the
//! built-in table still knows it), never the whole reply.

use std::borrow::Cow;

use super::super::topology::{int, items, pairs, text};
use super::{
    BeginSearch, CommandSpec, CommandTable, FindKeys, KeySpec, RequestPolicy, ResponsePolicy,
};
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// Reads a `COMMAND` reply. An empty table or a reply that is not an array of
/// entries is an error (the caller keeps the table it has).
pub(crate) fn parse_command_reply(reply: &Value) -> Result<CommandTable> {
    let entries = items(reply).ok_or_else(|| {
        Error::new(
            ErrorKind::Protocol,
            format!("COMMAND answered {}", reply.type_name()),
        )
    })?;
    let mut table = CommandTable::default();
    for entry in entries {
        read_entry(entry, None, &mut table);
    }
    if table.len() == 0 {
        return Err(Error::new(ErrorKind::Protocol, "COMMAND listed no command"));
    }
    table.set_from_server();
    Ok(table)
}

/// One entry (and its subcommands, as `container|sub`).
fn read_entry(entry: &Value, parent: Option<&str>, table: &mut CommandTable) {
    let Some(fields) = items(entry) else { return };
    let Some(name) = fields.first().and_then(text) else {
        return;
    };
    let name = name.to_ascii_lowercase();
    // A subcommand is named `config|set` by Redis 7; keep that form whatever the server.
    let name = match parent {
        Some(p) if !name.contains('|') => format!("{p}|{name}"),
        _ => name,
    };
    let legacy = (
        fields.get(3).and_then(int).unwrap_or(0),
        fields.get(4).and_then(int).unwrap_or(0),
        fields.get(5).and_then(int).unwrap_or(0),
    );
    let (request, response) = fields
        .get(7)
        .map_or((RequestPolicy::Default, ResponsePolicy::Default), read_tips);
    let keys = match fields.get(8).and_then(items) {
        Some(specs) if !specs.is_empty() => specs.iter().filter_map(read_key_spec).collect(),
        _ => legacy_keys(legacy),
    };
    if let Some(subs) = fields.get(9).and_then(items) {
        for sub in subs {
            read_entry(sub, Some(&name), table);
        }
    }
    table.insert(
        name,
        CommandSpec {
            keys,
            request,
            response,
        },
    );
}

fn read_tips(tips: &Value) -> (RequestPolicy, ResponsePolicy) {
    let mut request = RequestPolicy::Default;
    let mut response = ResponsePolicy::Default;
    for tip in items(tips).unwrap_or(&[]).iter().filter_map(text) {
        if let Some(p) = tip.strip_prefix("request_policy:") {
            request = match p {
                "all_nodes" => RequestPolicy::AllNodes,
                "all_shards" => RequestPolicy::AllShards,
                "multi_shard" => RequestPolicy::MultiShard,
                "special" => RequestPolicy::Special,
                _ => RequestPolicy::Default,
            };
        } else if let Some(p) = tip.strip_prefix("response_policy:") {
            response = match p {
                "one_succeeded" => ResponsePolicy::OneSucceeded,
                "all_succeeded" => ResponsePolicy::AllSucceeded,
                "agg_logical_and" => ResponsePolicy::AggLogicalAnd,
                "agg_logical_or" => ResponsePolicy::AggLogicalOr,
                "agg_min" => ResponsePolicy::AggMin,
                "agg_max" => ResponsePolicy::AggMax,
                "agg_sum" => ResponsePolicy::AggSum,
                "special" => ResponsePolicy::Special,
                _ => ResponsePolicy::Default,
            };
        }
    }
    (request, response)
}

/// `firstkey`/`lastkey`/`step` as one spec (servers before 7.0; 0 means no keys, or
/// keys only a server-side procedure finds).
fn legacy_keys((first, last, step): (i64, i64, i64)) -> Vec<KeySpec> {
    let (Ok(first), Ok(last), Ok(step)) = (
        i32::try_from(first),
        i32::try_from(last),
        usize::try_from(step),
    ) else {
        return Vec::new();
    };
    if first <= 0 {
        return Vec::new();
    }
    let last_key = if last < 0 { last } else { last - first };
    vec![KeySpec {
        begin: BeginSearch::Index(first),
        find: FindKeys::Range {
            last_key,
            step: step.max(1),
            limit: 0,
        },
    }]
}

/// The value of `key` in a RESP3 map or RESP2 flat array.
fn field<'a>(fields: &[(String, &'a Value)], key: &str) -> Option<&'a Value> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

fn small(v: Option<&Value>) -> Option<i32> {
    v.and_then(int).and_then(|n| i32::try_from(n).ok())
}

fn count(v: Option<&Value>) -> Option<usize> {
    v.and_then(int).and_then(|n| usize::try_from(n).ok())
}

/// One key spec; `None` for a kind this reader does not know (`unknown`: keys only a
/// server-side procedure finds).
fn read_key_spec(spec: &Value) -> Option<KeySpec> {
    let fields = pairs(spec)?;
    let begin = pairs(field(&fields, "begin_search")?)?;
    let find = pairs(field(&fields, "find_keys")?)?;
    let begin_spec = pairs(field(&begin, "spec")?)?;
    let find_spec = pairs(field(&find, "spec")?)?;
    let begin = match text(field(&begin, "type")?)?.as_str() {
        "index" => BeginSearch::Index(small(field(&begin_spec, "index"))?),
        "keyword" => BeginSearch::Keyword {
            keyword: Cow::Owned(text(field(&begin_spec, "keyword")?)?),
            start_from: small(field(&begin_spec, "startfrom"))?,
        },
        _ => return None,
    };
    let find = match text(field(&find, "type")?)?.as_str() {
        "range" => FindKeys::Range {
            last_key: small(field(&find_spec, "lastkey"))?,
            step: count(field(&find_spec, "keystep"))?.max(1),
            limit: count(field(&find_spec, "limit")).unwrap_or(0),
        },
        "keynum" => FindKeys::KeyNum {
            count_at: small(field(&find_spec, "keynumidx"))?,
            first_key: small(field(&find_spec, "firstkey"))?,
            step: count(field(&find_spec, "keystep"))?.max(1),
        },
        _ => return None,
    };
    Some(KeySpec { begin, find })
}
