use super::*;
use crate::resp::Value;

fn argv(line: &str) -> Vec<Vec<u8>> {
    line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

fn keys_of(table: &CommandTable, line: &str) -> Option<Vec<String>> {
    let args = argv(line);
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    let spec = table.lookup(&refs)?;
    Some(
        spec.key_positions(&refs)
            .into_iter()
            .map(|i| String::from_utf8_lossy(refs[i]).into_owned())
            .collect(),
    )
}

#[test]
fn the_builtin_table_finds_keys_where_the_server_does() {
    let t = CommandTable::builtin();
    let rows: &[(&str, Option<&[&str]>)] = &[
        ("INCRBY counter 5", Some(&["counter"])),
        ("incrby counter 5", Some(&["counter"])),
        ("GET", Some(&[])), // too few arguments: the server answers the arity
        ("MSET a 1 b 2 c 3", Some(&["a", "b", "c"])),
        ("MGET a b c", Some(&["a", "b", "c"])),
        ("EVAL return 2 k1 k2 arg", Some(&["k1", "k2"])),
        ("EVALSHA abc 0 arg", Some(&[])),
        ("EVAL s notanumber k", Some(&[])),
        ("XREAD COUNT 2 STREAMS s1 s2 0 0", Some(&["s1", "s2"])),
        ("XREADGROUP GROUP g c STREAMS s >", Some(&["s"])),
        (
            "ZUNIONSTORE dst 2 a b WEIGHTS 1 2",
            Some(&["dst", "a", "b"]),
        ),
        ("BITOP AND dst a b", Some(&["dst", "a", "b"])),
        ("RENAME a b", Some(&["a", "b"])),
        ("GEORADIUS g 0 0 1 km STORE out", Some(&["g", "out"])),
        (
            "MIGRATE h 6379 \"\" 0 5000 KEYS a b",
            Some(&["\"\"", "a", "b"]),
        ),
        ("OBJECT ENCODING k", Some(&["k"])),
        ("XINFO STREAM s", Some(&["s"])),
        ("SPUBLISH ch msg", Some(&["ch"])),
        ("PING", Some(&[])),
        ("ECHO hi", None),
        ("NO.SUCH.COMMAND k", None),
    ];
    for (line, want) in rows {
        let got = keys_of(&t, line);
        let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(got, want, "{line}");
    }
}

#[test]
fn the_builtin_table_carries_the_policies_redis_7_publishes() {
    let t = CommandTable::builtin();
    let rows = [
        ("DBSIZE", RequestPolicy::AllShards, ResponsePolicy::AggSum),
        ("KEYS *", RequestPolicy::AllShards, ResponsePolicy::Default),
        (
            "FLUSHDB",
            RequestPolicy::AllShards,
            ResponsePolicy::AllSucceeded,
        ),
        (
            "flushall",
            RequestPolicy::AllShards,
            ResponsePolicy::AllSucceeded,
        ),
        (
            "SCRIPT LOAD x",
            RequestPolicy::AllNodes,
            ResponsePolicy::AllSucceeded,
        ),
        (
            "script exists a",
            RequestPolicy::AllShards,
            ResponsePolicy::AggLogicalAnd,
        ),
        (
            "CONFIG SET a b",
            RequestPolicy::AllNodes,
            ResponsePolicy::AllSucceeded,
        ),
        ("SCAN 0", RequestPolicy::Special, ResponsePolicy::Default),
        ("INFO", RequestPolicy::AllShards, ResponsePolicy::Special),
        ("MGET a", RequestPolicy::MultiShard, ResponsePolicy::Default),
        ("DEL a", RequestPolicy::MultiShard, ResponsePolicy::AggSum),
        (
            "MSET a 1",
            RequestPolicy::MultiShard,
            ResponsePolicy::AllSucceeded,
        ),
        ("WAIT 1 0", RequestPolicy::AllShards, ResponsePolicy::AggMin),
    ];
    for (line, request, response) in rows {
        let args = argv(line);
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let spec = t.lookup(&refs).unwrap_or_else(|| panic!("{line}"));
        assert_eq!((spec.request, spec.response), (request, response), "{line}");
    }
    // A container without a listed subcommand has no policy of its own.
    assert!(t.lookup(&[b"CONFIG", b"GET", b"x"]).is_none());
    assert!(!t.is_from_server() && t.has_policies());
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn arr(items: Vec<Value>) -> Value {
    Value::Array(items)
}

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (bulk(k), v)).collect())
}

/// A RESP2 flat array of key/value pairs, as RESP2 connections see maps.
fn flat(pairs: Vec<(&str, Value)>) -> Value {
    arr(pairs.into_iter().flat_map(|(k, v)| [bulk(k), v]).collect())
}

fn index_range(obj: fn(Vec<(&str, Value)>) -> Value, index: i64, last: i64) -> Value {
    obj(vec![
        ("flags", arr(vec![bulk("RW")])),
        (
            "begin_search",
            obj(vec![
                ("type", bulk("index")),
                ("spec", obj(vec![("index", Value::Int(index))])),
            ]),
        ),
        (
            "find_keys",
            obj(vec![
                ("type", bulk("range")),
                (
                    "spec",
                    obj(vec![
                        ("lastkey", Value::Int(last)),
                        ("keystep", Value::Int(1)),
                        ("limit", Value::Int(0)),
                    ]),
                ),
            ]),
        ),
    ])
}

fn entry(name: &str, first: i64, tips: &[&str], specs: Vec<Value>, subs: Vec<Value>) -> Value {
    arr(vec![
        bulk(name),
        Value::Int(-2),
        Value::Set(vec![Value::SimpleString("write".into())]),
        Value::Int(first),
        Value::Int(first),
        Value::Int(i64::from(first > 0)),
        Value::Set(vec![]),
        arr(tips.iter().map(|t| bulk(t)).collect()),
        arr(specs),
        arr(subs),
    ])
}

#[test]
fn a_command_reply_is_read_in_both_protocols() {
    for obj in [map as fn(Vec<(&str, Value)>) -> Value, flat] {
        let reply = arr(vec![
            entry("incrby", 1, &[], vec![index_range(obj, 1, 0)], vec![]),
            entry(
                "dbsize",
                0,
                &["request_policy:all_shards", "response_policy:agg_sum"],
                vec![],
                vec![],
            ),
            entry(
                "config",
                0,
                &[],
                vec![],
                vec![entry(
                    "config|set",
                    0,
                    &["request_policy:all_nodes", "response_policy:all_succeeded"],
                    vec![],
                    vec![],
                )],
            ),
            // Unreadable entries are skipped, not the reply.
            Value::Int(7),
            arr(vec![]),
        ]);
        let t = parse_command_reply(&reply).unwrap();
        assert!(t.is_from_server());
        assert_eq!(keys_of(&t, "INCRBY k 1"), Some(vec!["k".to_string()]));
        let dbsize = t.lookup(&[b"DBSIZE"]).unwrap();
        assert_eq!(dbsize.request, RequestPolicy::AllShards);
        assert_eq!(dbsize.response, ResponsePolicy::AggSum);
        let set = t.lookup(&[b"config", b"SET", b"a", b"b"]).unwrap();
        assert_eq!(set.request, RequestPolicy::AllNodes);
    }
}

#[test]
fn an_old_server_gives_legacy_key_positions_and_the_builtin_policies() {
    // Redis 6: six or seven fields, no tips, no key specs.
    let old = |name: &str, first: i64, last: i64, step: i64| {
        arr(vec![
            bulk(name),
            Value::Int(-2),
            arr(vec![]),
            Value::Int(first),
            Value::Int(last),
            Value::Int(step),
            arr(vec![]),
        ])
    };
    let reply = arr(vec![
        old("mset", 1, -1, 2),
        old("dbsize", 0, 0, 0),
        old("rename", 1, 2, 1),
    ]);
    let t = parse_command_reply(&reply).unwrap();
    assert!(!t.has_policies());
    assert_eq!(
        keys_of(&t, "MSET a 1 b 2"),
        Some(vec!["a".to_string(), "b".to_string()])
    );
    assert_eq!(
        keys_of(&t, "RENAME a b"),
        Some(vec!["a".to_string(), "b".to_string()])
    );
    let merged = t.with_policies_of(&CommandTable::builtin());
    let dbsize = merged.lookup(&[b"dbsize"]).unwrap();
    assert_eq!(dbsize.request, RequestPolicy::AllShards);
}

#[test]
fn a_reply_that_is_not_a_table_is_an_error() {
    assert!(parse_command_reply(&Value::Error("NOPERM".into())).is_err());
    assert!(parse_command_reply(&arr(vec![])).is_err());
}
