//! Sorted-set pops: ZPOPMIN and ZPOPMAX (`[member, score]` without a count; with one,
//! pairs in RESP3 and a flat array in RESP2, as Redis 7 answers), and the blocking
//! BZPOPMIN and BZPOPMAX (`[key, member, score]`, a null array on timeout).

use std::time::Instant;

use super::blocking;
use super::reply::{self, bulk_value, err, format_float, parse_int, Reply};
use super::session::Ctx;
use crate::resp::Value;

/// Removes up to `count` members from the low (`min`) or high end.
fn pop(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    count: usize,
    min: bool,
) -> Result<Vec<(Vec<u8>, f64)>, ()> {
    let now = ctx.now.max(Instant::now());
    let db = ctx.db();
    let popped = match db.zset_mut(key, now, false)? {
        Some(z) => {
            let picked: Vec<(Vec<u8>, f64)> = if min {
                z.ascending()
                    .take(count)
                    .map(|(m, s)| (m.clone(), s))
                    .collect()
            } else {
                z.ascending()
                    .rev()
                    .take(count)
                    .map(|(m, s)| (m.clone(), s))
                    .collect()
            };
            for (m, _) in &picked {
                z.remove(m);
            }
            picked
        }
        None => Vec::new(),
    };
    db.drop_if_empty(key);
    Ok(popped)
}

fn score(ctx: &Ctx<'_, '_>, s: f64) -> Value {
    if ctx.proto() >= 3 {
        Value::Double(s)
    } else {
        bulk_value(format_float(s).as_bytes())
    }
}

fn pop_reply(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], min: bool) -> Reply {
    if args.len() > 3 {
        return reply::syntax_error();
    }
    let count = match args.get(2) {
        None => None,
        Some(c) => match parse_int(c) {
            Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => return err("ERR value is out of range, must be positive"),
        },
    };
    let popped = match pop(ctx, &args[1], count.unwrap_or(1), min) {
        Ok(p) => p,
        Err(()) => return reply::wrong_type(),
    };
    let paired = count.is_some() && ctx.proto() >= 3;
    let items = popped
        .into_iter()
        .flat_map(|(m, s)| {
            let (m, s) = (bulk_value(&m), score(ctx, s));
            if paired {
                vec![Value::Array(vec![m, s])]
            } else {
                vec![m, s]
            }
        })
        .collect();
    reply::array(items)
}

/// `ZPOPMIN key [count]`
pub(crate) fn zpopmin(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    pop_reply(ctx, args, true)
}

/// `ZPOPMAX key [count]`
pub(crate) fn zpopmax(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    pop_reply(ctx, args, false)
}

fn blocking_pop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], min: bool) -> Reply {
    let timeout = match blocking::timeout_secs(&args[args.len() - 1]) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let keys = &args[1..args.len() - 1];
    let attempt = |ctx: &mut Ctx<'_, '_>| {
        for key in keys {
            match pop(ctx, key, 1, min) {
                Ok(p) => {
                    if let Some((m, s)) = p.into_iter().next() {
                        let s = score(ctx, s);
                        return Some(reply::array(vec![bulk_value(key), bulk_value(&m), s]));
                    }
                }
                Err(()) => return Some(reply::wrong_type()),
            }
        }
        None
    };
    // The store stays unlocked while blocked, so another client's ZADD can serve it.
    blocking::serve(ctx, timeout, attempt, |_| Reply::NullArray)
}

/// `BZPOPMIN key [key ...] timeout`
pub(crate) fn bzpopmin(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, true)
}

/// `BZPOPMAX key [key ...] timeout`
pub(crate) fn bzpopmax(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, false)
}
