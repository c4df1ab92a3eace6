//! `XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...`, blocking for real (the store is
//! unlocked while waiting) until an entry arrives, the timeout passes or the client
//! goes away.
//!
//! The reply is per stream with new entries: a map in RESP3, an array of
//! `[key, entries]` pairs in RESP2, nil (a null array) when there are none. As on the
//! server, a read served at once answers for every stream that has entries, and one
//! that had to block answers for the one stream whose entry woke it.

use std::time::Duration;

use super::blocking;
use super::cmd_streams::{entry_value, INVALID_ID};
use super::reply::{self, bulk_value, err, parse_int, Reply};
use super::session::Ctx;
use super::stream::{parse_id, StreamId};
use crate::resp::Value;

/// What the options say.
struct ReadArgs {
    count: usize,
    /// `Some` with `BLOCK` (`Some(None)`: forever).
    block: Option<Option<Duration>>,
    /// Index of the first key.
    first_key: usize,
}

fn parse(args: &[Vec<u8>]) -> Result<ReadArgs, Reply> {
    let (mut count, mut block) = (0, None);
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
        match opt.as_str() {
            "BLOCK" if more > 0 => {
                i += 1;
                block = Some(blocking::timeout_ms(&args[i])?);
            }
            "COUNT" if more > 0 => {
                i += 1;
                let n = parse_int(&args[i]).ok_or_else(reply::not_integer)?;
                count = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
            }
            "STREAMS" if more > 0 => {
                if more % 2 != 0 {
                    return Err(err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
                }
                return Ok(ReadArgs {
                    count,
                    block,
                    first_key: i + 1,
                });
            }
            _ => return Err(reply::syntax_error()),
        }
        i += 1;
    }
    Err(reply::syntax_error())
}

/// The id after which each stream is read (`$`: its last id now).
fn start_ids(
    ctx: &mut Ctx<'_, '_>,
    keys: &[Vec<u8>],
    ids: &[Vec<u8>],
) -> Result<Vec<StreamId>, Reply> {
    let now = ctx.now;
    let db = ctx.db();
    let mut out = Vec::with_capacity(keys.len());
    for (key, arg) in keys.iter().zip(ids) {
        let last = match db.stream_ref(key, now) {
            Ok(s) => s.map_or(StreamId::default(), |s| s.last_id),
            Err(()) => return Err(reply::wrong_type()),
        };
        out.push(match arg.as_slice() {
            b"$" => last,
            b">" => return Err(err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")),
            _ => parse_id(arg, 0, true, false).ok_or_else(|| err(INVALID_ID))?.0,
        });
    }
    Ok(out)
}

/// The reply for the streams that have entries after their id (all of them, or only
/// the first when `one`), or `None`.
fn read(
    ctx: &mut Ctx<'_, '_>,
    keys: &[Vec<u8>],
    after: &[StreamId],
    count: usize,
    one: bool,
) -> Option<Reply> {
    let (now, resp3) = (ctx.now, ctx.proto() >= 3);
    let db = ctx.db();
    let mut found: Vec<(Value, Value)> = Vec::new();
    for (key, gt) in keys.iter().zip(after) {
        let Ok(Some(s)) = db.stream_ref(key, now) else {
            continue;
        };
        let Some(start) = gt.next() else { continue };
        let entries = s.range(start, StreamId::MAX, false, count);
        if entries.is_empty() {
            continue;
        }
        let entries = entries
            .into_iter()
            .map(|(id, f)| entry_value(id, f))
            .collect();
        found.push((bulk_value(key), Value::Array(entries)));
        if one {
            break;
        }
    }
    if found.is_empty() {
        return None;
    }
    Some(Reply::Value(if resp3 {
        Value::Map(found)
    } else {
        Value::Array(
            found
                .into_iter()
                .map(|(k, e)| Value::Array(vec![k, e]))
                .collect(),
        )
    }))
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...`
pub(crate) fn xread(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let parsed = match parse(args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let n = (args.len() - parsed.first_key) / 2;
    let keys = &args[parsed.first_key..parsed.first_key + n];
    let after = match start_ids(ctx, keys, &args[parsed.first_key + n..]) {
        Ok(ids) => ids,
        Err(e) => return e,
    };
    let count = parsed.count;
    let Some(timeout) = parsed.block else {
        return read(ctx, keys, &after, count, false).unwrap_or(Reply::NullArray);
    };
    let mut first = true;
    let attempt = |ctx: &mut Ctx<'_, '_>| {
        let one = !std::mem::replace(&mut first, false);
        read(ctx, keys, &after, count, one)
    };
    blocking::serve(ctx, timeout, attempt, |_| Reply::NullArray)
}
