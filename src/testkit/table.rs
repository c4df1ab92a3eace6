//! The command table: each command's name, arity, flags and key positions, and the
//! handler that runs it, as the real server's table describes them.
//!
//! Owns: which commands exist and how to find their keys. Must never: run anything.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::reply::Reply;
use super::session::Ctx;
use super::{
    cluster_cmds, cmd_command, cmd_config, cmd_scripting, cmd_server, pubsub, table_data,
    transactions,
};

/// Runs one command with the store locked.
pub(crate) type Handler = fn(&mut Ctx<'_, '_>, &[Vec<u8>]) -> Reply;

/// Allowed before authentication (`AUTH`, `HELLO`, `QUIT`, `RESET`).
pub(crate) const NO_AUTH: u16 = 1;
/// Allowed on a RESP2 connection in subscribed mode.
pub(crate) const PUBSUB_OK: u16 = 2;
/// Runs at once inside `MULTI` instead of being queued.
pub(crate) const NO_QUEUE: u16 = 4;
/// Writes data (refused by a replica with `-READONLY`).
pub(crate) const WRITE: u16 = 8;
/// Its "keys" are shard channels: routed by slot, never `-ASK`ed on key existence.
pub(crate) const SHARD_CHANNELS: u16 = 16;

/// One command.
pub(crate) struct Spec {
    /// Lowercase full name as the server reports it (`get`, `client|setname`).
    pub name: &'static str,
    /// Real arity: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    pub flags: u16,
    /// First key index (0: no keys), last (negative: from the end), step.
    pub keys: (i32, i32, usize),
    pub run: Handler,
}

impl Spec {
    pub(crate) fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    pub(crate) fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i32;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// The key arguments of a request.
    pub(crate) fn key_args<'a>(&self, args: &'a [Vec<u8>]) -> Vec<&'a [u8]> {
        if self.keys == KSTREAMS {
            let after = args.iter().position(|a| a.eq_ignore_ascii_case(b"STREAMS"));
            let rest = after.map_or(&args[..0], |i| &args[i + 1..]);
            return rest[..rest.len() / 2].iter().map(Vec::as_slice).collect();
        }
        let (first, last, step) = self.keys;
        if first <= 0 || args.len() <= first as usize {
            return Vec::new();
        }
        let last = if last < 0 {
            args.len() as i32 + last
        } else {
            last.min(args.len() as i32 - 1)
        };
        let mut out = Vec::new();
        let mut i = first;
        while i <= last {
            out.push(args[i as usize].as_slice());
            i += step.max(1) as i32;
        }
        out
    }
}

/// What a lookup found.
pub(crate) enum Lookup {
    Found(&'static Spec),
    Unknown,
    /// A container (`CLIENT`, `CLUSTER`) without a subcommand: wrong arity of the container.
    MissingSubcommand(&'static str),
    /// A container with a subcommand it does not have.
    UnknownSubcommand(&'static str),
}

pub(super) const fn spec(
    name: &'static str,
    arity: i32,
    flags: u16,
    keys: (i32, i32, usize),
    run: Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        keys,
        run,
    }
}

pub(super) const K0: (i32, i32, usize) = (0, 0, 0);
pub(super) const K1: (i32, i32, usize) = (1, 1, 1);
pub(super) const KALL: (i32, i32, usize) = (1, -1, 1);
/// The keys of `XREAD`: the first half of what follows `STREAMS`.
pub(super) const KSTREAMS: (i32, i32, usize) = (-1, 0, 0);

static COMMANDS: &[Spec] = &[
    // connection and server
    spec("hello", -1, NO_AUTH | NO_QUEUE, K0, cmd_server::hello),
    spec("auth", -2, NO_AUTH | NO_QUEUE, K0, cmd_server::auth),
    spec("select", 2, 0, K0, cmd_server::select),
    spec("ping", -1, PUBSUB_OK, K0, cmd_server::ping),
    spec("echo", 2, 0, K0, cmd_server::echo),
    spec(
        "quit",
        -1,
        NO_AUTH | PUBSUB_OK | NO_QUEUE,
        K0,
        cmd_server::quit,
    ),
    spec(
        "reset",
        1,
        NO_AUTH | PUBSUB_OK | NO_QUEUE,
        K0,
        cmd_server::reset,
    ),
    spec("info", -1, 0, K0, cmd_server::info),
    spec("dbsize", 1, 0, K0, cmd_server::dbsize),
    spec("flushdb", -1, WRITE, K0, cmd_server::flushdb),
    spec("flushall", -1, WRITE, K0, cmd_server::flushall),
    spec("time", 1, 0, K0, cmd_server::time),
    spec("command", -1, 0, K0, cmd_command::command),
    spec("wait", 3, 0, K0, cmd_config::wait),
    spec("config|get", -3, 0, K0, cmd_config::config_get),
    spec("config|set", -4, 0, K0, cmd_config::config_set),
    spec("client|id", 2, 0, K0, cmd_server::client_id),
    spec("client|setname", 3, 0, K0, cmd_server::client_setname),
    spec("client|getname", 2, 0, K0, cmd_server::client_getname),
    spec("client|info", 2, 0, K0, cmd_server::client_info),
    spec("client|setinfo", 4, 0, K0, cmd_server::client_setinfo),
    spec(
        "client|maint_notifications",
        -3,
        0,
        K0,
        super::maintenance::client_maint_notifications,
    ),
    spec("asking", 1, 0, K0, cluster_cmds::asking),
    spec("readonly", 1, 0, K0, cluster_cmds::readonly),
    spec("readwrite", 1, 0, K0, cluster_cmds::readonly),
    spec("cluster|slots", 2, 0, K0, cluster_cmds::cluster_slots),
    spec("cluster|shards", 2, 0, K0, cluster_cmds::cluster_shards),
    spec("cluster|nodes", 2, 0, K0, cluster_cmds::cluster_nodes),
    spec("cluster|myid", 2, 0, K0, cluster_cmds::cluster_myid),
    spec("cluster|keyslot", 3, 0, K0, cluster_cmds::cluster_keyslot),
    spec("cluster|info", 2, 0, K0, cluster_cmds::cluster_info),
    // transactions
    spec("multi", 1, NO_QUEUE, K0, transactions::multi),
    spec("exec", 1, NO_QUEUE, K0, transactions::exec),
    spec("discard", 1, NO_QUEUE, K0, transactions::discard),
    spec("watch", -2, NO_QUEUE, KALL, transactions::watch),
    spec("unwatch", 1, NO_QUEUE, K0, transactions::unwatch),
    // pub/sub
    spec("subscribe", -2, PUBSUB_OK, K0, pubsub::subscribe),
    spec("unsubscribe", -1, PUBSUB_OK, K0, pubsub::unsubscribe),
    spec("psubscribe", -2, PUBSUB_OK, K0, pubsub::psubscribe),
    spec("punsubscribe", -1, PUBSUB_OK, K0, pubsub::punsubscribe),
    spec(
        "ssubscribe",
        -2,
        PUBSUB_OK | SHARD_CHANNELS,
        KALL,
        pubsub::ssubscribe,
    ),
    spec(
        "sunsubscribe",
        -1,
        PUBSUB_OK | SHARD_CHANNELS,
        KALL,
        pubsub::sunsubscribe,
    ),
    spec("publish", 3, 0, K0, pubsub::publish),
    spec("spublish", 3, SHARD_CHANNELS, K1, pubsub::spublish),
    // scripting (no Lua: see cmd_scripting)
    spec("script|load", 3, 0, K0, cmd_scripting::script_load),
    spec("script|exists", -3, 0, K0, cmd_scripting::script_exists),
    spec("script|flush", -2, 0, K0, cmd_scripting::script_flush),
    spec("eval", -3, 0, K0, cmd_scripting::eval),
    spec("evalsha", -3, 0, K0, cmd_scripting::evalsha),
];

/// Container commands: name and the arity of the container itself.
const CONTAINERS: &[(&str, &str)] = &[
    ("client", "CLIENT"),
    ("cluster", "CLUSTER"),
    ("config", "CONFIG"),
    ("script", "SCRIPT"),
];

/// Every command of the table (subcommands as `container|sub`).
pub(crate) fn all() -> impl Iterator<Item = &'static Spec> {
    COMMANDS.iter().chain(table_data::DATA)
}

fn index() -> &'static HashMap<&'static str, &'static Spec> {
    static INDEX: OnceLock<HashMap<&'static str, &'static Spec>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let all = COMMANDS.iter().chain(table_data::DATA);
        all.map(|s| (s.name, s)).collect()
    })
}

/// Finds the command a request names (`args[0]`, and `args[1]` for containers).
pub(crate) fn lookup(args: &[Vec<u8>]) -> Lookup {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    if let Some((container, upper)) = CONTAINERS.iter().find(|(c, _)| *c == name) {
        let Some(sub) = args.get(1) else {
            return Lookup::MissingSubcommand(container);
        };
        let full = format!(
            "{container}|{}",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        );
        return match index().get(full.as_str()) {
            Some(spec) => Lookup::Found(spec),
            None => Lookup::UnknownSubcommand(upper),
        };
    }
    match index().get(name.as_str()) {
        Some(spec) => Lookup::Found(spec),
        None => Lookup::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn keys_are_found_where_the_table_says() {
        let Lookup::Found(mset) = lookup(&args(&["MSET", "a", "1", "b", "2"])) else {
            panic!()
        };
        let a = args(&["MSET", "a", "1", "b", "2"]);
        assert_eq!(mset.key_args(&a), [b"a".as_slice(), b"b"]);
        let b = args(&["BLPOP", "x", "y", "0"]);
        let Lookup::Found(blpop) = lookup(&b) else {
            panic!()
        };
        assert_eq!(blpop.key_args(&b), [b"x".as_slice(), b"y"]);
        let x = args(&["XREAD", "COUNT", "2", "STREAMS", "s", "t", "0", "$"]);
        let Lookup::Found(xread) = lookup(&x) else {
            panic!()
        };
        assert_eq!(xread.key_args(&x), [b"s".as_slice(), b"t"]);
    }

    #[test]
    fn containers_resolve_subcommands() {
        assert!(
            matches!(lookup(&args(&["client", "id"])), Lookup::Found(s) if s.name == "client|id")
        );
        assert!(matches!(
            lookup(&args(&["CLIENT"])),
            Lookup::MissingSubcommand("client")
        ));
        assert!(matches!(
            lookup(&args(&["CLIENT", "nope"])),
            Lookup::UnknownSubcommand("CLIENT")
        ));
        assert!(matches!(lookup(&args(&["nope"])), Lookup::Unknown));
    }
}
