//! The command table a cluster routes by: for each command, where its keys are (the
//! `key_specs` of `COMMAND`, or `firstkey`/`lastkey`/`step` on servers without them)
//! and its request and response policies (the `request_policy:` and
//! `response_policy:` tips Redis 7 publishes). Read from a node once per client
//! (`parse`), with a built-in copy of what Redis 7.0 publishes as the fallback
//! (`builtin`) for servers that publish no tips, refuse `COMMAND`, or before it is read.
//!
//! Pure: no IO. Owns: which arguments of a command are keys and which nodes a keyless
//! command is meant for. Must never: guess a key position for a command it does not
//! know (that command routes by the keys the caller marked, or to any master).

mod builtin;
mod parse;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

pub(crate) use parse::parse_command_reply;

/// Which nodes a command is meant for (`request_policy:` tip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequestPolicy {
    /// No tip: by the slot of its keys; a keyless one to any master.
    Default,
    /// Every node, masters and replicas (`SCRIPT LOAD`, `CONFIG SET`).
    AllNodes,
    /// Every master (`DBSIZE`, `KEYS`, `FLUSHDB`).
    AllShards,
    /// Split by the slots of its keys (`MGET`, `DEL`, `MSET`).
    MultiShard,
    /// Needs handling of its own (`SCAN`).
    Special,
}

/// How the replies of several nodes make one (`response_policy:` tip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResponsePolicy {
    /// No tip: arrays concatenated (keyless), or in key order (split by keys).
    Default,
    /// Succeeds when any node did (`SCRIPT KILL`).
    OneSucceeded,
    /// Succeeds when every node did (`FLUSHDB`); the reply is any of theirs.
    AllSucceeded,
    /// Element-wise AND of integer arrays (`SCRIPT EXISTS`).
    AggLogicalAnd,
    /// Element-wise OR of integer arrays.
    AggLogicalOr,
    /// The least integer (`WAIT`).
    AggMin,
    /// The greatest integer.
    AggMax,
    /// The sum of integers (`DBSIZE`).
    AggSum,
    /// Per node only (`INFO`, `MEMORY STATS`): no one reply stands for all.
    Special,
}

/// Where a key search starts (`begin_search` of a key spec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BeginSearch {
    /// At this argument (the command name is argument 0).
    Index(i32),
    /// After the first argument equal to the keyword, searching from `start_from`
    /// (negative: from the end, backwards).
    Keyword {
        keyword: Cow<'static, str>,
        start_from: i32,
    },
}

/// Which arguments from the start are keys (`find_keys` of a key spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FindKeys {
    /// `last_key` relative to the start (negative: from the end; with `limit`, the
    /// arguments left are divided by it first), every `step`-th.
    Range {
        last_key: i32,
        step: usize,
        limit: usize,
    },
    /// The argument at `count_at` (relative to the start) counts the keys, which
    /// begin `first_key` after the start, every `step`-th.
    KeyNum {
        count_at: i32,
        first_key: i32,
        step: usize,
    },
}

/// One key spec: where to start and what to take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeySpec {
    pub begin: BeginSearch,
    pub find: FindKeys,
}

/// One command (or subcommand) of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CommandSpec {
    pub keys: Vec<KeySpec>,
    pub request: RequestPolicy,
    pub response: ResponsePolicy,
}

impl CommandSpec {
    /// The positions of the keys in `argv` (the command name is argument 0), in the
    /// order the specs give them, as the server finds them: a spec that does not apply
    /// to these arguments (a keyword absent, a key count that is not a number) gives
    /// none, and positions past the end are dropped (the server answers the arity).
    pub(crate) fn key_positions(&self, argv: &[&[u8]]) -> Vec<usize> {
        let argc = argv.len() as i64;
        let mut out = Vec::new();
        for spec in &self.keys {
            let first = match &spec.begin {
                BeginSearch::Index(i) => i64::from(*i),
                BeginSearch::Keyword {
                    keyword,
                    start_from,
                } => match find_keyword(argv, keyword, i64::from(*start_from)) {
                    Some(after) => after,
                    None => continue,
                },
            };
            let (first, last, step) = match spec.find {
                FindKeys::Range {
                    last_key,
                    step,
                    limit,
                } => {
                    let last_key = i64::from(last_key);
                    let last = if last_key >= 0 {
                        first + last_key
                    } else if limit == 0 {
                        argc + last_key
                    } else {
                        first + (argc - first) / limit as i64 + last_key
                    };
                    (first, last, step)
                }
                FindKeys::KeyNum {
                    count_at,
                    first_key,
                    step,
                } => {
                    let at = first + i64::from(count_at);
                    let Some(count) = usize::try_from(at)
                        .ok()
                        .and_then(|i| argv.get(i))
                        .and_then(|a| std::str::from_utf8(a).ok())
                        .and_then(|s| s.parse::<i64>().ok())
                        .filter(|n| *n >= 0)
                    else {
                        continue;
                    };
                    let first = first + i64::from(first_key);
                    (first, first + count - 1, step)
                }
            };
            let mut i = first;
            while i <= last && i >= 1 && i < argc {
                out.push(i as usize);
                i += step.max(1) as i64;
            }
        }
        out
    }
}

/// The argument after the first one equal to `keyword` (ASCII case ignored),
/// searching from `start_from` forwards, or backwards from the end when negative.
fn find_keyword(argv: &[&[u8]], keyword: &str, start_from: i64) -> Option<i64> {
    let argc = argv.len() as i64;
    let (start, forward) = if start_from > 0 {
        (start_from, true)
    } else {
        (argc + start_from, false)
    };
    let mut i = start;
    while i >= 1 && i < argc {
        if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
            return Some(i + 1);
        }
        i += if forward { 1 } else { -1 };
    }
    None
}

/// Every command a table knows, by lowercase name (`get`; a subcommand as
/// `config|set`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CommandTable {
    specs: HashMap<String, CommandSpec>,
    /// Names that have subcommands (`config`, `script`).
    containers: std::collections::HashSet<String>,
    /// Whether these policies came from the server (`false`: the built-in copy).
    from_server: bool,
}

impl CommandTable {
    /// The built-in table: what Redis 7.0 publishes.
    pub(crate) fn builtin() -> Arc<CommandTable> {
        static BUILTIN: OnceLock<Arc<CommandTable>> = OnceLock::new();
        BUILTIN.get_or_init(|| Arc::new(builtin::table())).clone()
    }

    pub(crate) fn insert(&mut self, name: String, spec: CommandSpec) {
        if let Some((container, _)) = name.split_once('|') {
            self.containers.insert(container.to_string());
        }
        self.specs.insert(name, spec);
    }

    /// Whether the table came from a server.
    pub(crate) fn is_from_server(&self) -> bool {
        self.from_server
    }

    pub(crate) fn set_from_server(&mut self) {
        self.from_server = true;
    }

    /// How many commands it knows (subcommands counted).
    pub(crate) fn len(&self) -> usize {
        self.specs.len()
    }

    /// Whether any command carries a request or response policy (servers before 7.0
    /// publish none).
    pub(crate) fn has_policies(&self) -> bool {
        self.specs
            .values()
            .any(|s| s.request != RequestPolicy::Default || s.response != ResponsePolicy::Default)
    }

    /// Takes the policies of `other` for every command this table has none for (a
    /// server without tips still tells where its keys are).
    pub(crate) fn with_policies_of(mut self, other: &CommandTable) -> CommandTable {
        for (name, spec) in &mut self.specs {
            if let Some(o) = other.specs.get(name) {
                spec.request = o.request;
                spec.response = o.response;
            }
        }
        self
    }

    /// The spec of the command `argv` is (argument 0 its name; a container's
    /// subcommand is argument 1).
    pub(crate) fn lookup(&self, argv: &[&[u8]]) -> Option<&CommandSpec> {
        let name = lowercase(argv.first()?)?;
        if self.containers.contains(name.as_ref()) {
            if let Some(sub) = argv.get(1).and_then(|s| lowercase(s)) {
                if let Some(spec) = self.specs.get(&format!("{name}|{sub}")) {
                    return Some(spec);
                }
            }
        }
        self.specs.get(name.as_ref())
    }
}

impl AsRef<CommandTable> for CommandTable {
    fn as_ref(&self) -> &CommandTable {
        self
    }
}

/// A command name in lowercase (`None` when it is not UTF-8: no such command).
fn lowercase(name: &[u8]) -> Option<Cow<'_, str>> {
    let text = std::str::from_utf8(name).ok()?;
    Some(if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    })
}

#[cfg(test)]
mod tests;
