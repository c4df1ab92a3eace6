//! List edits in place: LPUSHX, RPUSHX, LSET, LREM, LTRIM, LINSERT, LPOS.

use super::cmd_lists::{clamp_range, push};
use super::reply::{self, err, int, nil, ok, parse_int, Reply};
use super::session::Ctx;
use crate::resp::Value;

/// `LPUSHX key value ...`: only onto an existing list.
pub(crate) fn lpushx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, true, false)
}

/// `RPUSHX key value ...`
pub(crate) fn rpushx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, false, false)
}

/// `LSET key index value` (the key is looked at before the index, as the server does)
pub(crate) fn lset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().list_mut(&args[1], now, false) {
        Ok(Some(list)) => {
            let Some(i) = parse_int(&args[2]) else {
                return reply::not_integer();
            };
            let idx = if i < 0 { list.len() as i64 + i } else { i };
            match usize::try_from(idx).ok().and_then(|i| list.get_mut(i)) {
                Some(slot) => {
                    *slot = args[3].clone();
                    ok()
                }
                None => err("ERR index out of range"),
            }
        }
        Ok(None) => err("ERR no such key"),
        Err(()) => reply::wrong_type(),
    }
}

/// `LREM key count element`: up to `count` from the head (negative: from the tail,
/// 0: all).
pub(crate) fn lrem(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let Some(count) = parse_int(&args[2]) else {
        return reply::not_integer();
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let db = ctx.db();
    let removed = match db.list_mut(&args[1], now, false) {
        Ok(Some(list)) => {
            let mut hits: Vec<usize> = (0..list.len()).filter(|&i| list[i] == args[3]).collect();
            if count < 0 {
                hits.reverse();
            }
            hits.truncate(limit);
            hits.sort_unstable();
            for i in hits.iter().rev() {
                list.remove(*i);
            }
            hits.len()
        }
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    int(removed as i64)
}

/// `LTRIM key start stop`: keeps that range (an empty one deletes the key).
pub(crate) fn ltrim(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (Some(start), Some(stop)) = (parse_int(&args[2]), parse_int(&args[3])) else {
        return reply::not_integer();
    };
    let db = ctx.db();
    match db.list_mut(&args[1], now, false) {
        Ok(Some(list)) => match clamp_range(start, stop, list.len()) {
            Some((a, b)) => {
                list.truncate(b + 1);
                list.drain(..a);
            }
            None => list.clear(),
        },
        Ok(None) => {}
        Err(()) => return reply::wrong_type(),
    }
    db.drop_if_empty(&args[1]);
    ok()
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 without the pivot, 0
/// without the key.
pub(crate) fn linsert(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let after = match String::from_utf8_lossy(&args[2])
        .to_ascii_uppercase()
        .as_str()
    {
        "BEFORE" => false,
        "AFTER" => true,
        _ => return reply::syntax_error(),
    };
    match ctx.db().list_mut(&args[1], now, false) {
        Ok(Some(list)) => match list.iter().position(|v| *v == args[3]) {
            Some(i) => {
                list.insert(i + usize::from(after), args[4].clone());
                int(list.len() as i64)
            }
            None => int(-1),
        },
        Ok(None) => int(0),
        Err(()) => reply::wrong_type(),
    }
}

/// The options of LPOS: rank, count (`None`: not given), maxlen (0: no limit).
fn lpos_options(args: &[Vec<u8>]) -> Result<(i64, Option<usize>, usize), Reply> {
    let (mut rank, mut count, mut maxlen) = (1, None, 0);
    let mut i = 3;
    while i < args.len() {
        let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
        let Some(value) = args.get(i + 1) else {
            return Err(reply::syntax_error());
        };
        // COUNT and MAXLEN take one message for anything but a count, as on the server.
        let negative = || err(format!("ERR {opt} can't be negative"));
        match opt.as_str() {
            "RANK" => match parse_int(value).ok_or_else(reply::not_integer)? {
                0 | i64::MIN => return Err(err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")),
                n => rank = n,
            },
            "COUNT" | "MAXLEN" => {
                let n = parse_int(value).filter(|n| *n >= 0).ok_or_else(negative)? as usize;
                if opt == "COUNT" {
                    count = Some(n);
                } else {
                    maxlen = n;
                }
            }
            _ => return Err(reply::syntax_error()),
        }
        i += 2;
    }
    Ok((rank, count, maxlen))
}

/// `LPOS key element [RANK rank] [COUNT count] [MAXLEN len]`
pub(crate) fn lpos(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let (rank, count, maxlen) = match lpos_options(args) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let now = ctx.now;
    let list = match ctx.db().list_ref(&args[1], now) {
        Ok(Some(list)) => list,
        Ok(None) if count.is_some() => return reply::array(Vec::new()),
        Ok(None) => return nil(),
        Err(()) => return reply::wrong_type(),
    };
    let len = list.len();
    let scan = if maxlen == 0 { len } else { maxlen.min(len) };
    let order: Box<dyn Iterator<Item = usize>> = if rank > 0 {
        Box::new(0..scan)
    } else {
        Box::new((len - scan..len).rev())
    };
    let skip = usize::try_from(rank.unsigned_abs() - 1).unwrap_or(usize::MAX);
    let wanted = match count {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => 1,
    };
    let hits: Vec<usize> = order
        .filter(|&i| list[i] == args[2])
        .skip(skip)
        .take(wanted)
        .collect();
    match count {
        Some(_) => reply::array(hits.into_iter().map(|i| Value::Int(i as i64)).collect()),
        None => hits.first().map_or_else(nil, |&i| int(i as i64)),
    }
}
