//! List commands: LPUSH, RPUSH, LPOP, RPOP (with count), LRANGE, LLEN, LINDEX, and
//! BLPOP/BRPOP that really block (the store lock is released while waiting) until an
//! element arrives, the timeout passes, or the client goes away.

use super::blocking;
use super::reply::{self, bulk, bulk_value, err, int, nil, parse_int, Reply};
use super::session::Ctx;

/// Pushes onto the list at `args[1]`, creating it when `create` (`LPUSH`) or leaving a
/// missing key alone with 0 (`LPUSHX`).
pub(super) fn push(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], left: bool, create: bool) -> Reply {
    let now = ctx.now;
    let len = match ctx.db().list_mut(&args[1], now, create) {
        Ok(Some(list)) => {
            for v in &args[2..] {
                if left {
                    list.push_front(v.clone());
                } else {
                    list.push_back(v.clone());
                }
            }
            list.len()
        }
        Ok(None) => return int(0),
        Err(()) => return reply::wrong_type(),
    };
    ctx.pushed = true;
    int(len as i64)
}

/// `LPUSH key value ...`
pub(crate) fn lpush(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, true, true)
}

/// `RPUSH key value ...`
pub(crate) fn rpush(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    push(ctx, args, false, true)
}

fn pop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], left: bool) -> Reply {
    let now = ctx.now;
    if args.len() > 3 {
        return reply::wrong_arity(if left { "lpop" } else { "rpop" });
    }
    let count = match args.get(2) {
        None => None,
        Some(c) => match parse_int(c) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return err("ERR value is out of range, must be positive"),
        },
    };
    let db = ctx.db();
    let popped: Vec<Vec<u8>> = match db.list_mut(&args[1], now, false) {
        Ok(Some(list)) => {
            let n = count.unwrap_or(1).min(list.len());
            (0..n)
                .filter_map(|_| {
                    if left {
                        list.pop_front()
                    } else {
                        list.pop_back()
                    }
                })
                .collect()
        }
        Ok(None) => {
            return if count.is_some() {
                Reply::NullArray
            } else {
                nil()
            }
        }
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    match count {
        Some(_) => reply::array(popped.iter().map(|v| bulk_value(v)).collect()),
        None => popped.into_iter().next().map_or_else(nil, bulk),
    }
}

/// `LPOP key [count]`
pub(crate) fn lpop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    pop(ctx, args, true)
}

/// `RPOP key [count]`
pub(crate) fn rpop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    pop(ctx, args, false)
}

/// Resolves Redis list indices (negative from the end) into a clamped range.
pub(crate) fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop as usize))
}

/// `LRANGE key start stop`
pub(crate) fn lrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (Some(start), Some(stop)) = (parse_int(&args[2]), parse_int(&args[3])) else {
        return reply::not_integer();
    };
    match ctx.db().list_ref(&args[1], now) {
        Ok(Some(list)) => match clamp_range(start, stop, list.len()) {
            Some((a, b)) => reply::array(list.range(a..=b).map(|v| bulk_value(v)).collect()),
            None => reply::array(Vec::new()),
        },
        Ok(None) => reply::array(Vec::new()),
        Err(()) => reply::wrong_type(),
    }
}

/// `LLEN key`
pub(crate) fn llen(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().list_ref(&args[1], now) {
        Ok(l) => int(l.map_or(0, |l| l.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}

/// `LINDEX key index` (the key is looked at before the index, as the server does)
pub(crate) fn lindex(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().list_ref(&args[1], now) {
        Ok(Some(list)) => {
            let Some(i) = parse_int(&args[2]) else {
                return reply::not_integer();
            };
            let idx = if i < 0 { list.len() as i64 + i } else { i };
            match usize::try_from(idx).ok().and_then(|i| list.get(i)) {
                Some(v) => bulk(v.clone()),
                None => nil(),
            }
        }
        Ok(None) => nil(),
        Err(()) => reply::wrong_type(),
    }
}

fn blocking_pop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], left: bool) -> Reply {
    let timeout = match blocking::timeout_secs(&args[args.len() - 1]) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let keys = &args[1..args.len() - 1];
    let attempt = |ctx: &mut Ctx<'_, '_>| {
        let now = ctx.now;
        let db = ctx.db();
        for key in keys {
            match db.list_mut(key, now, false) {
                Ok(Some(list)) => {
                    let v = if left {
                        list.pop_front()
                    } else {
                        list.pop_back()
                    };
                    db.drop_if_empty(key);
                    if let Some(v) = v {
                        return Some(reply::array(vec![bulk_value(key), bulk_value(&v)]));
                    }
                }
                Ok(None) => {}
                Err(()) => return Some(reply::wrong_type()),
            }
        }
        None
    };
    blocking::serve(ctx, timeout, attempt, |_| Reply::NullArray)
}

/// `BLPOP key [key ...] timeout` (seconds, fractional; 0 waits forever)
pub(crate) fn blpop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, true)
}

/// `BRPOP key [key ...] timeout`
pub(crate) fn brpop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    blocking_pop(ctx, args, false)
}

#[cfg(test)]
mod tests {
    use super::clamp_range;

    #[test]
    fn ranges_resolve_like_lrange() {
        assert_eq!(clamp_range(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp_range(-2, -1, 3), Some((1, 2)));
        assert_eq!(clamp_range(1, 100, 3), Some((1, 2)));
        assert_eq!(clamp_range(5, 10, 3), None);
        assert_eq!(clamp_range(2, 1, 3), None);
    }
}
