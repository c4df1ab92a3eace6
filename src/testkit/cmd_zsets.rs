//! Sorted-set commands: ZADD (NX|XX, GT|LT, CH, INCR), ZREM, ZSCORE and ZINCRBY (a
//! double in RESP3, a bulk string in RESP2), ZCARD, ZRANGE (by index or BYSCORE, REV,
//! LIMIT, WITHSCORES: `[member, double]` pairs in RESP3, a flat array in RESP2), ZRANK,
//! ZREVRANK, ZREVRANGE and ZRANGEBYSCORE (as ZRANGE REV / BYSCORE), ZCOUNT,
//! ZREMRANGEBYRANK, ZREMRANGEBYSCORE. Pops are in `cmd_zsets_pop`.

use super::cmd_lists::clamp_range;
use super::reply::{self, bulk_value, err, format_float, int, nil, parse_float, parse_int, Reply};
use super::session::Ctx;
use super::store::ZSet;
use crate::resp::Value;

fn score_value(score: f64) -> Value {
    Value::Double(score)
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`
pub(crate) fn zadd(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < args.len() {
        match String::from_utf8_lossy(&args[i])
            .to_ascii_uppercase()
            .as_str()
        {
            "NX" => nx = true,
            "XX" => xx = true,
            "GT" => gt = true,
            "LT" => lt = true,
            "CH" => ch = true,
            "INCR" => incr = true,
            _ => break,
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return reply::syntax_error();
    }
    if nx && xx {
        return err("ERR XX and NX options at the same time are not compatible");
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && pairs.len() != 2 {
        return err("ERR INCR option supports a single increment-element pair");
    }
    let mut parsed = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        match parse_float(&p[0]) {
            Some(s) => parsed.push((s, p[1].clone())),
            None => return reply::not_float(),
        }
    }
    let db = ctx.db();
    let z = match db.zset_mut(&args[1], now, !xx) {
        Ok(Some(z)) => z,
        Ok(None) => return if incr { nil() } else { int(0) },
        Err(()) => return reply::wrong_type(),
    };
    let (mut added, mut changed) = (0, 0);
    let mut last = None;
    for (score, member) in parsed {
        let old = z.score(&member);
        if (nx && old.is_some()) || (xx && old.is_none()) {
            continue;
        }
        let new = match (incr, old) {
            (true, Some(o)) => o + score,
            _ => score,
        };
        if new.is_nan() {
            return err("ERR resulting score is not a number (NaN)");
        }
        if let Some(o) = old {
            if (gt && new <= o) || (lt && new >= o) {
                continue;
            }
        }
        if z.insert(member, new) {
            added += 1;
        } else if old != Some(new) {
            changed += 1;
        }
        last = Some(new);
    }
    db.drop_if_empty(&args[1]);
    // Wakes a blocked BZPOPMIN/BZPOPMAX now rather than at its next poll.
    ctx.pushed = added > 0;
    if incr {
        return match last {
            Some(s) => Reply::Value(score_value(s)),
            None => nil(),
        };
    }
    int(if ch { added + changed } else { added })
}

/// `ZREM key member ...`
pub(crate) fn zrem(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let n = match db.zset_mut(&args[1], now, false) {
        Ok(Some(z)) => args[2..].iter().filter(|m| z.remove(m)).count(),
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    int(n as i64)
}

/// `ZSCORE key member`
pub(crate) fn zscore(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().zset_ref(&args[1], now) {
        Ok(z) => match z.and_then(|z| z.score(&args[2])) {
            Some(s) => Reply::Value(score_value(s)),
            None => nil(),
        },
        Err(()) => reply::wrong_type(),
    }
}

/// `ZINCRBY key delta member`
pub(crate) fn zincrby(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let Some(delta) = parse_float(&args[2]) else {
        return reply::not_float();
    };
    match ctx.db().zset_mut(&args[1], now, true) {
        Ok(Some(z)) => {
            let new = z.score(&args[3]).unwrap_or(0.0) + delta;
            if new.is_nan() {
                return err("ERR resulting score is not a number (NaN)");
            }
            z.insert(args[3].clone(), new);
            Reply::Value(score_value(new))
        }
        _ => reply::wrong_type(),
    }
}

/// `ZCARD key`
pub(crate) fn zcard(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().zset_ref(&args[1], now) {
        Ok(z) => int(z.map_or(0, |z| z.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}

/// A score bound of BYSCORE: `1.5`, `(1.5` (exclusive), `-inf`, `+inf`.
/// Read as the server's `strtod` reads it: leading blanks skipped, and nothing after the
/// `(` (or nothing at all) is 0.
fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (text, exclusive) = match arg.strip_prefix(b"(") {
        Some(rest) => (rest, true),
        None => (arg, false),
    };
    let text = text.trim_ascii_start();
    let v = if text.is_empty() {
        Some(0.0)
    } else {
        parse_float(text)
    };
    v.map(|v| (v, exclusive))
}

/// `ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES]`
pub(crate) fn zrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (mut byscore, mut rev, mut withscores, mut limit) = (false, false, false, None);
    let mut i = 4;
    while i < args.len() {
        match String::from_utf8_lossy(&args[i])
            .to_ascii_uppercase()
            .as_str()
        {
            "BYSCORE" => byscore = true,
            "REV" => rev = true,
            "WITHSCORES" => withscores = true,
            "LIMIT" if i + 2 < args.len() => {
                let (Some(o), Some(c)) = (parse_int(&args[i + 1]), parse_int(&args[i + 2])) else {
                    return reply::not_integer();
                };
                limit = Some((o, c));
                i += 2;
            }
            _ => return reply::syntax_error(),
        }
        i += 1;
    }
    if limit.is_some() && !byscore {
        return err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    // The bounds are checked before the key, as the server does.
    let (scores, ranks) = if byscore {
        // With REV the first bound is the maximum.
        let (a, b) = if rev {
            (&args[3], &args[2])
        } else {
            (&args[2], &args[3])
        };
        match bounds(a, b) {
            Ok(b) => (Some(b), None),
            Err(e) => return e,
        }
    } else {
        match (parse_int(&args[2]), parse_int(&args[3])) {
            (Some(start), Some(stop)) => (None, Some((start, stop))),
            _ => return reply::not_integer(),
        }
    };
    let z = match ctx.db().zset_ref(&args[1], now) {
        Ok(Some(z)) => z.clone(),
        Ok(None) => return reply::array(Vec::new()),
        Err(()) => return reply::wrong_type(),
    };
    let mut picked: Vec<(Vec<u8>, f64)> = if let Some(b) = scores {
        let mut v: Vec<_> = within(&z, b)
            .into_iter()
            .map(|(m, s)| (m.clone(), s))
            .collect();
        if rev {
            v.reverse();
        }
        if let Some((offset, count)) = limit {
            let skip = usize::try_from(offset).unwrap_or(usize::MAX);
            let take = usize::try_from(count).unwrap_or(usize::MAX);
            v = v.into_iter().skip(skip).take(take).collect();
        }
        v
    } else {
        let (start, stop) = ranks.unwrap_or_default();
        let mut all: Vec<_> = z.ascending().map(|(m, s)| (m.clone(), s)).collect();
        if rev {
            all.reverse();
        }
        match clamp_range(start, stop, all.len()) {
            Some((a, b)) => all.drain(a..=b).collect(),
            None => Vec::new(),
        }
    };
    let items = if !withscores {
        picked.drain(..).map(|(m, _)| bulk_value(&m)).collect()
    } else if ctx.proto() >= 3 {
        picked
            .drain(..)
            .map(|(m, s)| Value::Array(vec![bulk_value(&m), score_value(s)]))
            .collect()
    } else {
        picked
            .drain(..)
            .flat_map(|(m, s)| [bulk_value(&m), bulk_value(format_float(s).as_bytes())])
            .collect()
    };
    reply::array(items)
}

/// `ZRANK key member [WITHSCORE]`
pub(crate) fn zrank(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let withscore = match args.get(3) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"WITHSCORE") && args.len() == 4 => true,
        Some(_) => return reply::syntax_error(),
    };
    match ctx.db().zset_ref(&args[1], now) {
        Ok(z) => match z.and_then(|z| z.rank(&args[2]).map(|r| (r, z.score(&args[2])))) {
            Some((r, Some(s))) if withscore => {
                reply::array(vec![Value::Int(r as i64), score_value(s)])
            }
            Some((r, _)) => int(r as i64),
            None if withscore => Reply::NullArray,
            None => nil(),
        },
        Err(()) => reply::wrong_type(),
    }
}

/// `ZREVRANGE key start stop [WITHSCORES]`: `ZRANGE ... REV`.
pub(crate) fn zrevrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let mut rewritten = args[..4].to_vec();
    rewritten.push(b"REV".to_vec());
    rewritten.extend_from_slice(&args[4..]);
    zrange(ctx, &rewritten)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`: `ZRANGE ... BYSCORE`.
pub(crate) fn zrangebyscore(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let mut rewritten = args[..4].to_vec();
    rewritten.push(b"BYSCORE".to_vec());
    rewritten.extend_from_slice(&args[4..]);
    zrange(ctx, &rewritten)
}

/// BYSCORE bounds: (min, exclusive) and (max, exclusive).
type Bounds = ((f64, bool), (f64, bool));

fn bounds(min: &[u8], max: &[u8]) -> Result<Bounds, Reply> {
    match (score_bound(min), score_bound(max)) {
        (Some(lo), Some(hi)) => Ok((lo, hi)),
        _ => Err(err("ERR min or max is not a float")),
    }
}

/// The members whose score lies within `bounds`.
fn within(z: &ZSet, ((lo, lo_ex), (hi, hi_ex)): Bounds) -> Vec<(&Vec<u8>, f64)> {
    z.ascending()
        .filter(|(_, s)| if lo_ex { *s > lo } else { *s >= lo })
        .filter(|(_, s)| if hi_ex { *s < hi } else { *s <= hi })
        .collect()
}

/// `ZCOUNT key min max` (the bounds are checked before the key)
pub(crate) fn zcount(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let b = match bounds(&args[2], &args[3]) {
        Ok(b) => b,
        Err(e) => return e,
    };
    match ctx.db().zset_ref(&args[1], now) {
        Ok(z) => int(z.map_or(0, |z| within(z, b).len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}

/// `ZREVRANK key member`
pub(crate) fn zrevrank(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().zset_ref(&args[1], now) {
        Ok(z) => match z.and_then(|z| z.rank(&args[2]).map(|r| z.len() - 1 - r)) {
            Some(r) => int(r as i64),
            None => nil(),
        },
        Err(()) => reply::wrong_type(),
    }
}

/// `ZREMRANGEBYRANK key start stop`
pub(crate) fn zremrangebyrank(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (Some(start), Some(stop)) = (parse_int(&args[2]), parse_int(&args[3])) else {
        return reply::not_integer();
    };
    let db = ctx.db();
    let n = match db.zset_mut(&args[1], now, false) {
        Ok(Some(z)) => {
            let members: Vec<Vec<u8>> = z.ascending().map(|(m, _)| m.clone()).collect();
            match clamp_range(start, stop, members.len()) {
                Some((a, b)) => members[a..=b].iter().filter(|m| z.remove(m)).count(),
                None => 0,
            }
        }
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    int(n as i64)
}

/// `ZREMRANGEBYSCORE key min max`
pub(crate) fn zremrangebyscore(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let b = match bounds(&args[2], &args[3]) {
        Ok(b) => b,
        Err(e) => return e,
    };
    let db = ctx.db();
    let n = match db.zset_mut(&args[1], now, false) {
        Ok(Some(z)) => {
            let doomed: Vec<Vec<u8>> = within(z, b).into_iter().map(|(m, _)| m.clone()).collect();
            doomed.iter().filter(|m| z.remove(m)).count()
        }
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    int(n as i64)
}
