//! Where one command goes in a cluster: decided from the command alone and the command
//! table, before anything is sent. Keys the caller marked (`Cmd::key`) route it; else
//! the table says which arguments are keys (so `cmd("INCRBY").arg("counter")` goes to
//! the owner of `counter`); a keyless command goes where its request policy says
//! (any master, every master, every node).
//!
//! Pure: no IO, no slot map. Owns: the routing decision per command. Must never: send
//! a command meant for every master to one of them, or split one whose parts cannot
//! be combined into the reply the whole would have given.

use super::command_table::{CommandTable, RequestPolicy, ResponsePolicy};
use super::key_slot;
use crate::command::Cmd;
use crate::error::{Error, ErrorKind};

/// Where a command goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// To the owner of this slot (or a replica of it, for a read when asked).
    Slot(u16),
    /// Keyless and without a policy (`ECHO`, `PUBLISH`, an unknown command): to any
    /// master.
    AnyMaster,
    /// To every master (and every replica too when `replicas`), the replies combined
    /// by `response`.
    Fan {
        replicas: bool,
        response: ResponsePolicy,
    },
    /// Keys across slots: one part per slot, each taking the arguments of its keys
    /// (`units`: argument ranges, one per key), replies combined by `response`.
    Split {
        units: Vec<(usize, usize)>,
        response: ResponsePolicy,
    },
    /// Not sent: the reason.
    Refused(Refusal),
}

/// Why a command is refused before it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its keys hash to several slots and it cannot be split.
    CrossSlot,
    /// `SCAN` with a cursor: a cursor walks one node.
    CursorScan,
    /// Its reply describes one node (`INFO`, `MEMORY STATS`): no one reply stands for
    /// the cluster.
    PerNode,
}

impl Refusal {
    /// The error a caller gets.
    pub(crate) fn error(self, command: &str) -> Error {
        let upper = command.to_ascii_uppercase();
        let (kind, detail) = match self {
            Refusal::CrossSlot => (
                ErrorKind::CrossSlot,
                "the keys of this command hash to different slots".to_string(),
            ),
            Refusal::CursorScan => (
                ErrorKind::InvalidInput,
                "SCAN with a cursor reads one node, and a cluster has several: use \
                 Database::scan_iter, which walks every master"
                    .to_string(),
            ),
            Refusal::PerNode => (
                ErrorKind::InvalidInput,
                format!(
                    "{upper} answers for one node: in a cluster run it on each master with \
                     Client::for_each_master, or on one node with Client::on_node"
                ),
            ),
        };
        Error::new(kind, detail).with_command(command)
    }
}

/// The route of `cmd` by the command table `table` gives (asked for only when the
/// marked keys do not decide: the typed API's keyed commands never need it).
pub(crate) fn decide<T: AsRef<CommandTable>>(cmd: &Cmd, table: impl FnOnce() -> T) -> Route {
    // The common case first: keys marked by the typed API, all in one slot.
    if let Some(slot) = one_slot(cmd.keys()) {
        return Route::Slot(slot);
    }
    let table = table();
    let table = table.as_ref();
    let argv = cmd.argv();
    let spec = table.lookup(&argv);
    let positions = spec.map(|s| s.key_positions(&argv)).unwrap_or_default();
    let marked = cmd.keys().len() > 0;
    if !marked {
        if let Some(slot) = one_slot(positions.iter().map(|&i| argv[i])) {
            return Route::Slot(slot);
        }
    }
    let Some(spec) = spec else {
        return if marked {
            Route::Refused(Refusal::CrossSlot)
        } else {
            Route::AnyMaster
        };
    };
    if marked || !positions.is_empty() {
        // Keys across slots. Marked keys must be the ones the table finds, or the
        // parts would not be what the caller meant.
        let agrees = !marked || cmd.keys().eq(positions.iter().map(|&i| argv[i]));
        return match split_units(&positions, argv.len()) {
            Some(units) if agrees && splittable(spec.request, spec.response) => Route::Split {
                units,
                response: spec.response,
            },
            _ => Route::Refused(Refusal::CrossSlot),
        };
    }
    match spec.request {
        RequestPolicy::Default | RequestPolicy::MultiShard => Route::AnyMaster,
        RequestPolicy::Special => Route::Refused(Refusal::CursorScan),
        RequestPolicy::AllShards | RequestPolicy::AllNodes
            if spec.response == ResponsePolicy::Special =>
        {
            Route::Refused(Refusal::PerNode)
        }
        RequestPolicy::AllShards => Route::Fan {
            replicas: false,
            response: spec.response,
        },
        RequestPolicy::AllNodes => Route::Fan {
            replicas: true,
            response: spec.response,
        },
    }
}

/// The one slot every key hashes to; `None` with no keys or several slots.
fn one_slot<'a>(mut keys: impl Iterator<Item = &'a [u8]>) -> Option<u16> {
    let slot = key_slot(keys.next()?);
    keys.all(|k| key_slot(k) == slot).then_some(slot)
}

/// Whether parts of a command split by slot can be combined into the whole's reply:
/// values in key order, a sum, or all succeeded. `MSETNX` (`agg_min`) is not: split,
/// it would set the keys of some slots and not the others'.
fn splittable(request: RequestPolicy, response: ResponsePolicy) -> bool {
    request == RequestPolicy::MultiShard
        && matches!(
            response,
            ResponsePolicy::Default | ResponsePolicy::AggSum | ResponsePolicy::AllSucceeded
        )
}

/// The argument range each key takes with it, when the keys start right after the
/// name and, evenly spaced, cover every argument (`MGET k…`, `MSET k v …`).
fn split_units(positions: &[usize], argc: usize) -> Option<Vec<(usize, usize)>> {
    let step = match positions {
        [1] => argc.checked_sub(1)?,
        [1, second, ..] => second - 1,
        _ => return None,
    };
    let even = positions
        .iter()
        .enumerate()
        .all(|(i, &p)| p == 1 + i * step);
    (step > 0 && even && 1 + positions.len() * step == argc)
        .then(|| positions.iter().map(|&p| (p, p + step)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(cmd: Cmd) -> Route {
        decide(&cmd, CommandTable::builtin)
    }

    fn slot(key: &str) -> u16 {
        key_slot(key.as_bytes())
    }

    #[test]
    fn routes_as_a_table() {
        // Two keys in different slots.
        let (a, b) = ("a", "b");
        assert_ne!(slot(a), slot(b));
        let fan = |replicas, response| Route::Fan { replicas, response };
        let rows: Vec<(&str, Cmd, Route)> = vec![
            ("marked key", Cmd::new("GET").key(a), Route::Slot(slot(a))),
            (
                "a key passed as an argument",
                Cmd::new("INCRBY").arg("counter").arg(5),
                Route::Slot(slot("counter")),
            ),
            (
                "lowercase name",
                Cmd::new("incrby").arg("counter").arg(5),
                Route::Slot(slot("counter")),
            ),
            (
                "EVAL's keys from its key count",
                Cmd::new("EVAL").arg("return 1").arg(1).arg("{t}x").arg("v"),
                Route::Slot(slot("{t}x")),
            ),
            (
                "EVAL without keys",
                Cmd::new("EVAL").arg("s").arg(0),
                Route::AnyMaster,
            ),
            (
                "unknown command",
                Cmd::new("MODULE.X").arg("k"),
                Route::AnyMaster,
            ),
            ("no policy", Cmd::new("ECHO").arg("hi"), Route::AnyMaster),
            (
                "DBSIZE",
                Cmd::new("DBSIZE"),
                fan(false, ResponsePolicy::AggSum),
            ),
            (
                "KEYS",
                Cmd::new("KEYS").arg("*"),
                fan(false, ResponsePolicy::Default),
            ),
            (
                "FLUSHDB",
                Cmd::new("FLUSHDB"),
                fan(false, ResponsePolicy::AllSucceeded),
            ),
            (
                "SCRIPT LOAD",
                Cmd::new("SCRIPT LOAD").arg("return 1"),
                fan(true, ResponsePolicy::AllSucceeded),
            ),
            (
                "CONFIG SET",
                Cmd::new("CONFIG").arg("SET").arg("x").arg("y"),
                fan(true, ResponsePolicy::AllSucceeded),
            ),
            (
                "CONFIG GET",
                Cmd::new("CONFIG GET").arg("x"),
                Route::AnyMaster,
            ),
            (
                "SCAN",
                Cmd::new("SCAN").arg(0),
                Route::Refused(Refusal::CursorScan),
            ),
            ("INFO", Cmd::new("INFO"), Route::Refused(Refusal::PerNode)),
            (
                "MEMORY STATS",
                Cmd::new("MEMORY STATS"),
                Route::Refused(Refusal::PerNode),
            ),
            (
                "MGET across slots, marked",
                Cmd::new("MGET").key([a, b]),
                Route::Split {
                    units: vec![(1, 2), (2, 3)],
                    response: ResponsePolicy::Default,
                },
            ),
            (
                "DEL across slots, as arguments",
                Cmd::new("DEL").arg([a, b]),
                Route::Split {
                    units: vec![(1, 2), (2, 3)],
                    response: ResponsePolicy::AggSum,
                },
            ),
            (
                "MSET pairs",
                Cmd::new("MSET").key(a).arg(1).key(b).arg(2),
                Route::Split {
                    units: vec![(1, 3), (3, 5)],
                    response: ResponsePolicy::AllSucceeded,
                },
            ),
            (
                "MSET with only some keys marked",
                Cmd::new("MSET").key(a).arg(1).arg(b).arg(2),
                Route::Slot(slot(a)),
            ),
            (
                "MSETNX is never split",
                Cmd::new("MSETNX").arg([a, "1", b, "2"]),
                Route::Refused(Refusal::CrossSlot),
            ),
            (
                "RENAME across slots",
                Cmd::new("RENAME").key(a).key(b),
                Route::Refused(Refusal::CrossSlot),
            ),
            (
                "unknown command, marked keys across slots",
                Cmd::new("MODULE.X").key(a).key(b),
                Route::Refused(Refusal::CrossSlot),
            ),
        ];
        for (what, cmd, want) in rows {
            assert_eq!(route(cmd), want, "{what}");
        }
    }

    #[test]
    fn split_units_cover_every_argument_or_none() {
        assert_eq!(
            split_units(&[1, 2, 3], 4),
            Some(vec![(1, 2), (2, 3), (3, 4)])
        );
        assert_eq!(split_units(&[1, 3], 5), Some(vec![(1, 3), (3, 5)]));
        // A trailing argument that belongs to no key.
        assert_eq!(split_units(&[1, 2], 4), None);
        assert_eq!(split_units(&[2, 3], 4), None);
        assert_eq!(split_units(&[], 1), None);
    }

    #[test]
    fn refusals_name_what_to_use_instead() {
        let e = Refusal::CursorScan.error("SCAN");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("scan_iter"), "{e}");
        let e = Refusal::PerNode.error("info");
        assert!(e.to_string().contains("for_each_master"), "{e}");
        assert!(e.to_string().contains("INFO answers"), "{e}");
        assert_eq!(
            Refusal::CrossSlot.error("RENAME").kind(),
            ErrorKind::CrossSlot
        );
    }
}
