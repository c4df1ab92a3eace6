//! Stream commands: XADD (ids `*`, `<ms>-*`, explicit; `NOMKSTREAM`, `MAXLEN`/`MINID`
//! [`=`|`~`] `LIMIT`), XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, with the server's argument
//! order, error texts and reply shapes (entries are `[id, [field, value ...]]` in both
//! protocols). XREAD is in `cmd_streams_read`.

use std::time::{SystemTime, UNIX_EPOCH};

use super::reply::{self, bulk, bulk_value, err, int, parse_int, Reply};
use super::session::Ctx;
use super::stream::{parse_id, Fields, Stream, StreamId, Trim};
use crate::resp::Value;

pub(crate) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// One entry as the server sends it.
pub(crate) fn entry_value(id: StreamId, fields: &Fields) -> Value {
    let flat = fields
        .iter()
        .flat_map(|(f, v)| [bulk_value(f), bulk_value(v)])
        .collect();
    Value::Array(vec![bulk_value(id.text().as_bytes()), Value::Array(flat)])
}

/// `stream-node-max-entries`, which approximate trimming works in.
fn node_max(ctx: &Ctx<'_, '_>) -> u64 {
    let v = ctx.dbs.config.get("stream-node-max-entries");
    v.and_then(|v| v.parse().ok()).unwrap_or(100)
}

/// The trimming options of XADD and XTRIM.
#[derive(Default)]
struct TrimArgs {
    rule: Option<Trim>,
    approx: bool,
    limit: Option<u64>,
    nomkstream: bool,
    /// XADD: the id and whether its sequence was given (`<ms>-*` and `*` leave it out).
    id: Option<(StreamId, bool)>,
}

/// Parses options from `args[i..]` as the server's `streamParseAddOrTrimArgsOrReply`
/// does; for XADD stops at the id and returns the index of the first field.
fn trim_args(args: &[Vec<u8>], mut i: usize, xadd: bool) -> Result<(TrimArgs, usize), Reply> {
    let mut t = TrimArgs::default();
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = String::from_utf8_lossy(&args[i]).to_ascii_lowercase();
        match opt.as_str() {
            "*" if xadd => break,
            "maxlen" | "minid" if more > 0 => {
                if t.rule.is_some() {
                    return Err(err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible"));
                }
                t.approx = false;
                if more >= 2 && matches!(args[i + 1].as_slice(), b"~" | b"=") {
                    t.approx = args[i + 1] == b"~";
                    i += 1;
                }
                let arg = &args[i + 1];
                t.rule = Some(if opt == "maxlen" {
                    match parse_int(arg) {
                        None => return Err(reply::not_integer()),
                        Some(n) if n < 0 => {
                            return Err(err("ERR The MAXLEN argument must be >= 0."))
                        }
                        Some(n) => Trim::MaxLen(n as u64),
                    }
                } else {
                    match parse_id(arg, 0, true, false) {
                        Some((id, _)) => Trim::MinId(id),
                        None => return Err(err(INVALID_ID)),
                    }
                });
                i += 1;
            }
            "limit" if more > 0 => {
                match parse_int(&args[i + 1]) {
                    None => return Err(reply::not_integer()),
                    Some(n) if n < 0 => return Err(err("ERR The LIMIT argument must be >= 0.")),
                    Some(n) => t.limit = Some(n as u64),
                }
                i += 1;
            }
            "nomkstream" if xadd => t.nomkstream = true,
            _ if xadd => {
                t.id = Some(parse_id(&args[i], 0, true, true).ok_or_else(|| err(INVALID_ID))?);
                break;
            }
            _ => return Err(reply::syntax_error()),
        }
        i += 1;
    }
    if t.limit.is_some_and(|l| l > 0) && t.rule.is_none() {
        return Err(err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && t.rule.is_none() {
        return Err(err(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if t.limit.is_some() && !t.approx {
        return Err(err(
            "ERR syntax error, LIMIT cannot be used without the special ~ option",
        ));
    }
    Ok((t, i + 1))
}

/// The effective limit of a trim: as given, or for `~` a default that bounds the work.
fn limit_of(t: &TrimArgs, node_max: u64) -> u64 {
    match (t.limit, t.approx) {
        (Some(l), _) => l,
        (None, true) => match node_max.saturating_mul(100) {
            0 => 10_000,
            l => l.min(10_000),
        },
        (None, false) => 0,
    }
}

fn now_ms() -> u64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH);
    t.map_or(0, |d| d.as_millis() as u64)
}

/// The id XADD gives the new entry, or the server's refusal.
fn next_id(s: &Stream, asked: Option<(StreamId, bool)>) -> Result<StreamId, Reply> {
    let smaller =
        || err("ERR The ID specified in XADD is equal or smaller than the target stream top item");
    let last = s.last_id;
    match asked {
        None => {
            let ms = now_ms();
            if ms > last.ms {
                Ok(StreamId { ms, seq: 0 })
            } else {
                last.next().ok_or_else(smaller)
            }
        }
        Some((id, true)) if id > last => Ok(id),
        Some((_, true)) => Err(smaller()),
        Some((id, false)) if id.ms > last.ms => Ok(id),
        Some((id, false)) if id.ms == last.ms && last.seq < u64::MAX => Ok(StreamId {
            ms: id.ms,
            seq: last.seq + 1,
        }),
        Some(_) => Err(smaller()),
    }
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...`
pub(crate) fn xadd(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let (t, first_field) = match trim_args(args, 2, true) {
        Ok(parsed) => parsed,
        Err(e) => return e,
    };
    let pairs = args.len().saturating_sub(first_field);
    if pairs < 2 || pairs % 2 == 1 {
        return reply::wrong_arity("xadd");
    }
    if t.id == Some((StreamId::default(), true)) {
        return err("ERR The ID specified in XADD must be greater than 0-0");
    }
    let (now, node_max) = (ctx.now, node_max(ctx));
    let limit = limit_of(&t, node_max);
    let s = match ctx.db().stream_mut(&args[1], now, !t.nomkstream) {
        Ok(Some(s)) => s,
        Ok(None) => return reply::nil(),
        Err(()) => return reply::wrong_type(),
    };
    if s.last_id == StreamId::MAX {
        return err("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let id = match next_id(s, t.id) {
        Ok(id) => id,
        Err(e) => return e,
    };
    let fields: Fields = args[first_field..]
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    s.append(id, fields, node_max);
    if let Some(rule) = t.rule {
        s.trim(rule, t.approx, limit);
    }
    // Wakes a blocked XREAD.
    ctx.pushed = true;
    bulk(id.text())
}

/// `XLEN key`
pub(crate) fn xlen(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().stream_ref(&args[1], now) {
        Ok(s) => int(s.map_or(0, |s| s.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}

/// One end of an XRANGE interval: `-`, `+`, an id, `<ms>` (filled with `missing_seq`),
/// or `(`id (exclusive).
fn interval_end(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Reply> {
    let parsed = match arg.strip_prefix(b"(") {
        Some(rest) if arg.len() > 1 => {
            parse_id(rest, missing_seq, true, false).map(|p| (p.0, true))
        }
        _ => parse_id(arg, missing_seq, false, false).map(|p| (p.0, false)),
    };
    parsed.ok_or_else(|| err(INVALID_ID))
}

fn range(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], rev: bool) -> Reply {
    let (start_arg, end_arg) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let (start, end) = match (interval_end(start_arg, 0), interval_end(end_arg, u64::MAX)) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let start = match start {
        (id, true) => match id.next() {
            Some(id) => id,
            None => return err("ERR invalid start ID for the interval"),
        },
        (id, false) => id,
    };
    let end = match end {
        (id, true) => match id.prev() {
            Some(id) => id,
            None => return err("ERR invalid end ID for the interval"),
        },
        (id, false) => id,
    };
    let mut count = None;
    let mut i = 4;
    while i < args.len() {
        if !args[i].eq_ignore_ascii_case(b"COUNT") || i + 1 >= args.len() {
            return reply::syntax_error();
        }
        match parse_int(&args[i + 1]) {
            Some(n) => count = Some(n.max(0) as usize),
            None => return reply::not_integer(),
        }
        i += 2;
    }
    if count == Some(0) {
        return Reply::NullArray;
    }
    let now = ctx.now;
    match ctx.db().stream_ref(&args[1], now) {
        Ok(Some(s)) => reply::array(
            s.range(start, end, rev, count.unwrap_or(0))
                .into_iter()
                .map(|(id, f)| entry_value(id, f))
                .collect(),
        ),
        Ok(None) => reply::array(Vec::new()),
        Err(()) => reply::wrong_type(),
    }
}

/// `XRANGE key start end [COUNT count]`
pub(crate) fn xrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    range(ctx, args, false)
}

/// `XREVRANGE key end start [COUNT count]`
pub(crate) fn xrevrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    range(ctx, args, true)
}

/// `XDEL key id ...`: the key is looked at before the ids are checked, as the server does.
pub(crate) fn xdel(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    match db.stream_ref(&args[1], now) {
        Ok(Some(_)) => {}
        Ok(None) => return int(0),
        Err(()) => return reply::wrong_type(),
    }
    let mut ids = Vec::with_capacity(args.len() - 2);
    for arg in &args[2..] {
        match parse_id(arg, 0, true, false) {
            Some((id, _)) => ids.push(id),
            None => return err(INVALID_ID),
        }
    }
    match db.stream_mut(&args[1], now, false) {
        Ok(Some(s)) => int(ids.into_iter().filter(|id| s.remove(*id)).count() as i64),
        _ => int(0),
    }
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]` (options are checked before
/// the key, as the server does)
pub(crate) fn xtrim(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let t = match trim_args(args, 2, false) {
        Ok((t, _)) => t,
        Err(e) => return e,
    };
    let Some(rule) = t.rule else {
        return reply::syntax_error();
    };
    let (now, limit) = (ctx.now, limit_of(&t, node_max(ctx)));
    match ctx.db().stream_mut(&args[1], now, false) {
        Ok(Some(s)) => int(s.trim(rule, t.approx, limit) as i64),
        Ok(None) => int(0),
        Err(()) => reply::wrong_type(),
    }
}
