//! The built-in command table: the key specs and policy tips Redis 7.0 publishes in
//! `COMMAND` (for every command and subcommand that has keys or a policy), used until
//! a node's own table is read, and for servers that publish no tips (before 7.0),
//! refuse `COMMAND` (an ACL), or answer it in a shape that cannot be read.
//!
//! Generated from `COMMAND` of redis-server 7.0.15; `unknown` key specs (keys only a
//! server-side procedure finds, as `SORT ... STORE`) are left out.

use std::borrow::Cow;

use super::{BeginSearch, CommandSpec, CommandTable, FindKeys, KeySpec};
use super::{RequestPolicy as Q, ResponsePolicy as A};

/// A key spec as written below (a `KeySpec` owns its keyword, so it cannot be built
/// in a static).
#[derive(Clone, Copy)]
enum Raw {
    At(i32, i32, usize, usize),
    Counted(i32, i32, i32, usize),
    After(&'static str, i32, i32, usize, usize),
}

/// Keys from argument `index`: up to `last_key` after it (negative: from the end),
/// every `step`-th, the rest divided by `limit` first when it is not 0.
const fn at(index: i32, last_key: i32, step: usize, limit: usize) -> Raw {
    Raw::At(index, last_key, step, limit)
}

/// Keys counted by argument `index + count_at`, from `first_key` after `index`.
const fn counted(index: i32, count_at: i32, first_key: i32, step: usize) -> Raw {
    Raw::Counted(index, count_at, first_key, step)
}

/// Keys after `keyword`, searched for from `start_from` (negative: from the end).
const fn after(
    keyword: &'static str,
    start_from: i32,
    last: i32,
    step: usize,
    limit: usize,
) -> Raw {
    Raw::After(keyword, start_from, last, step, limit)
}

impl Raw {
    fn spec(self) -> KeySpec {
        let range = |last_key, step, limit| FindKeys::Range {
            last_key,
            step,
            limit,
        };
        match self {
            Raw::At(index, last, step, limit) => KeySpec {
                begin: BeginSearch::Index(index),
                find: range(last, step, limit),
            },
            Raw::Counted(index, count_at, first_key, step) => KeySpec {
                begin: BeginSearch::Index(index),
                find: FindKeys::KeyNum {
                    count_at,
                    first_key,
                    step,
                },
            },
            Raw::After(keyword, start_from, last, step, limit) => KeySpec {
                begin: BeginSearch::Keyword {
                    keyword: Cow::Borrowed(keyword),
                    start_from,
                },
                find: range(last, step, limit),
            },
        }
    }
}

type Row = (&'static str, &'static [Raw], Q, A);

const fn row(name: &'static str, keys: &'static [Raw], request: Q, response: A) -> Row {
    (name, keys, request, response)
}

/// The table (a command not listed has no keys and no policy).
pub(super) fn table() -> CommandTable {
    let mut table = CommandTable::default();
    for (name, keys, request, response) in ROWS {
        table.insert(
            name.to_string(),
            CommandSpec {
                keys: keys.iter().map(|k| k.spec()).collect(),
                request: *request,
                response: *response,
            },
        );
    }
    table
}

static ROWS: &[Row] = &[
    row("append", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("bitcount", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("bitfield", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("bitfield_ro", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "bitop",
        &[at(2, 0, 1, 0), at(3, -1, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("bitpos", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "blmove",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("blmpop", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("blpop", &[at(1, -2, 1, 0)], Q::Default, A::Default),
    row("brpop", &[at(1, -2, 1, 0)], Q::Default, A::Default),
    row(
        "brpoplpush",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("bzmpop", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("bzpopmax", &[at(1, -2, 1, 0)], Q::Default, A::Default),
    row("bzpopmin", &[at(1, -2, 1, 0)], Q::Default, A::Default),
    row("config|set", &[], Q::AllNodes, A::AllSucceeded),
    row(
        "copy",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("dbsize", &[], Q::AllShards, A::AggSum),
    row("decr", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("decrby", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("del", &[at(1, -1, 1, 0)], Q::MultiShard, A::AggSum),
    row("dump", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("eval", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("eval_ro", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("evalsha", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("evalsha_ro", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("exists", &[at(1, -1, 1, 0)], Q::MultiShard, A::AggSum),
    row("expire", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("expireat", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("expiretime", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("fcall", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("fcall_ro", &[counted(2, 0, 1, 1)], Q::Default, A::Default),
    row("flushall", &[], Q::AllShards, A::AllSucceeded),
    row("flushdb", &[], Q::AllShards, A::AllSucceeded),
    row("function|delete", &[], Q::AllShards, A::AllSucceeded),
    row("function|flush", &[], Q::AllShards, A::AllSucceeded),
    row("function|kill", &[], Q::AllShards, A::OneSucceeded),
    row("function|load", &[], Q::AllShards, A::AllSucceeded),
    row("function|restore", &[], Q::AllShards, A::AllSucceeded),
    row("function|stats", &[], Q::AllShards, A::Special),
    row("geoadd", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("geodist", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("geohash", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("geopos", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "georadius",
        &[
            at(1, 0, 1, 0),
            after("STORE", 6, 0, 1, 0),
            after("STOREDIST", 6, 0, 1, 0),
        ],
        Q::Default,
        A::Default,
    ),
    row("georadius_ro", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "georadiusbymember",
        &[
            at(1, 0, 1, 0),
            after("STORE", 5, 0, 1, 0),
            after("STOREDIST", 5, 0, 1, 0),
        ],
        Q::Default,
        A::Default,
    ),
    row(
        "georadiusbymember_ro",
        &[at(1, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("geosearch", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "geosearchstore",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("get", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("getbit", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("getdel", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("getex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("getrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("getset", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hdel", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hexists", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hget", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hgetall", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hincrby", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hincrbyfloat", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hkeys", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hlen", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hmget", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hmset", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hrandfield", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hscan", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hset", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hsetnx", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hstrlen", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("hvals", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("incr", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("incrby", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("incrbyfloat", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("info", &[], Q::AllShards, A::Special),
    row("keys", &[], Q::AllShards, A::Default),
    row("latency|doctor", &[], Q::AllNodes, A::Special),
    row("latency|graph", &[], Q::AllNodes, A::Special),
    row("latency|histogram", &[], Q::AllNodes, A::Special),
    row("latency|history", &[], Q::AllNodes, A::Special),
    row("latency|latest", &[], Q::AllNodes, A::Special),
    row("latency|reset", &[], Q::AllNodes, A::AllSucceeded),
    row("lcs", &[at(1, 1, 1, 0)], Q::Default, A::Default),
    row("lindex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("linsert", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("llen", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "lmove",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("lmpop", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row("lpop", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("lpos", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("lpush", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("lpushx", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("lrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("lrem", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("lset", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("ltrim", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("memory|doctor", &[], Q::AllShards, A::Special),
    row("memory|malloc-stats", &[], Q::AllShards, A::Special),
    row("memory|purge", &[], Q::AllShards, A::AllSucceeded),
    row("memory|stats", &[], Q::AllShards, A::Special),
    row("memory|usage", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("mget", &[at(1, -1, 1, 0)], Q::MultiShard, A::Default),
    row(
        "migrate",
        &[at(3, 0, 1, 0), after("KEYS", -2, -1, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("move", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("mset", &[at(1, -1, 2, 0)], Q::MultiShard, A::AllSucceeded),
    row("msetnx", &[at(1, -1, 2, 0)], Q::MultiShard, A::AggMin),
    row("object|encoding", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("object|freq", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("object|idletime", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("object|refcount", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("persist", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("pexpire", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("pexpireat", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("pexpiretime", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("pfadd", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("pfcount", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row("pfdebug", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row(
        "pfmerge",
        &[at(1, 0, 1, 0), at(2, -1, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("ping", &[], Q::AllShards, A::AllSucceeded),
    row("psetex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("pttl", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("randomkey", &[], Q::AllShards, A::Default),
    row(
        "rename",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row(
        "renamenx",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("restore", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("restore-asking", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("rpop", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "rpoplpush",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("rpush", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("rpushx", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("sadd", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("scan", &[], Q::Special, A::Default),
    row("scard", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("script|exists", &[], Q::AllShards, A::AggLogicalAnd),
    row("script|flush", &[], Q::AllNodes, A::AllSucceeded),
    row("script|kill", &[], Q::AllShards, A::OneSucceeded),
    row("script|load", &[], Q::AllNodes, A::AllSucceeded),
    row("sdiff", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row(
        "sdiffstore",
        &[at(1, 0, 1, 0), at(2, -1, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("set", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("setbit", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("setex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("setnx", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("setrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("sinter", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row("sintercard", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row(
        "sinterstore",
        &[at(1, 0, 1, 0), at(2, -1, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("sismember", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("slowlog|get", &[], Q::AllNodes, A::Default),
    row("slowlog|len", &[], Q::AllNodes, A::AggSum),
    row("slowlog|reset", &[], Q::AllNodes, A::AllSucceeded),
    row("smembers", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("smismember", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "smove",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("sort", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("sort_ro", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("spop", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("spublish", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("srandmember", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("srem", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("sscan", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("ssubscribe", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row("strlen", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("substr", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("sunion", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row(
        "sunionstore",
        &[at(1, 0, 1, 0), at(2, -1, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("sunsubscribe", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row("touch", &[at(1, -1, 1, 0)], Q::MultiShard, A::AggSum),
    row("ttl", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("type", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("unlink", &[at(1, -1, 1, 0)], Q::MultiShard, A::AggSum),
    row("wait", &[], Q::AllShards, A::AggMin),
    row("watch", &[at(1, -1, 1, 0)], Q::Default, A::Default),
    row("xack", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xadd", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xautoclaim", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xclaim", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xdel", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xgroup|create", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row(
        "xgroup|createconsumer",
        &[at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row(
        "xgroup|delconsumer",
        &[at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("xgroup|destroy", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("xgroup|setid", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("xinfo|consumers", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("xinfo|groups", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("xinfo|stream", &[at(2, 0, 1, 0)], Q::Default, A::Default),
    row("xlen", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xpending", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "xread",
        &[after("STREAMS", 1, -1, 1, 2)],
        Q::Default,
        A::Default,
    ),
    row(
        "xreadgroup",
        &[after("STREAMS", 4, -1, 1, 2)],
        Q::Default,
        A::Default,
    ),
    row("xrevrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xsetid", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("xtrim", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zadd", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zcard", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zcount", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zdiff", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row(
        "zdiffstore",
        &[at(1, 0, 1, 0), counted(2, 0, 1, 1)],
        Q::Default,
        A::Default,
    ),
    row("zincrby", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zinter", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row("zintercard", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row(
        "zinterstore",
        &[at(1, 0, 1, 0), counted(2, 0, 1, 1)],
        Q::Default,
        A::Default,
    ),
    row("zlexcount", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zmpop", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row("zmscore", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zpopmax", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zpopmin", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zrandmember", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zrangebylex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zrangebyscore", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "zrangestore",
        &[at(1, 0, 1, 0), at(2, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("zrank", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zrem", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zremrangebylex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zremrangebyrank", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "zremrangebyscore",
        &[at(1, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("zrevrange", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zrevrangebylex", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row(
        "zrevrangebyscore",
        &[at(1, 0, 1, 0)],
        Q::Default,
        A::Default,
    ),
    row("zrevrank", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zscan", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zscore", &[at(1, 0, 1, 0)], Q::Default, A::Default),
    row("zunion", &[counted(1, 0, 1, 1)], Q::Default, A::Default),
    row(
        "zunionstore",
        &[at(1, 0, 1, 0), counted(2, 0, 1, 1)],
        Q::Default,
        A::Default,
    ),
];
