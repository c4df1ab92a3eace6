//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL (a map in RESP3, a flat
//! array in RESP2), HDEL, HEXISTS, HINCRBY, HINCRBYFLOAT, HKEYS, HVALS, HLEN, HSTRLEN.

use super::reply::{
    self, bulk, bulk_value, err, format_float, int, nil, ok, parse_float, parse_int, Reply,
};
use super::session::Ctx;
use crate::resp::Value;

fn hset_pairs(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], name: &str) -> Result<i64, Reply> {
    if args.len() % 2 != 0 {
        return Err(reply::wrong_arity(name));
    }
    let now = ctx.now;
    match ctx.db().hash_mut(&args[1], now, true) {
        Ok(Some(h)) => Ok(args[2..]
            .chunks(2)
            .filter(|p| h.insert(p[0].clone(), p[1].clone()))
            .count() as i64),
        _ => Err(reply::wrong_type()),
    }
}

/// `HSET key field value [field value ...]`: fields added.
pub(crate) fn hset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    hset_pairs(ctx, args, "hset").map_or_else(|e| e, int)
}

/// `HMSET key field value [...]`
pub(crate) fn hmset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    hset_pairs(ctx, args, "hmset").map_or_else(|e| e, |_| ok())
}

/// `HSETNX key field value`
pub(crate) fn hsetnx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_mut(&args[1], now, true) {
        Ok(Some(h)) => {
            if h.contains(&args[2]) {
                int(0)
            } else {
                h.insert(args[2].clone(), args[3].clone());
                int(1)
            }
        }
        _ => reply::wrong_type(),
    }
}

/// `HGET key field`
pub(crate) fn hget(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(&args[1], now) {
        Ok(h) => match h.and_then(|h| h.get(&args[2])) {
            Some(v) => bulk(v.clone()),
            None => nil(),
        },
        Err(()) => reply::wrong_type(),
    }
}

/// `HMGET key field ...`
pub(crate) fn hmget(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(&args[1], now) {
        Ok(h) => reply::array(
            args[2..]
                .iter()
                .map(|f| {
                    h.and_then(|h| h.get(f))
                        .map_or(Value::Nil, |v| bulk_value(v))
                })
                .collect(),
        ),
        Err(()) => reply::wrong_type(),
    }
}

/// `HGETALL key`: `%N` map in RESP3, flat `*2N` in RESP2 (the encoder flattens).
pub(crate) fn hgetall(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(&args[1], now) {
        Ok(h) => Reply::Value(Value::Map(
            h.map(|h| {
                h.iter()
                    .map(|(k, v)| (bulk_value(k), bulk_value(v)))
                    .collect()
            })
            .unwrap_or_default(),
        )),
        Err(()) => reply::wrong_type(),
    }
}

/// `HDEL key field ...`
pub(crate) fn hdel(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let n = match db.hash_mut(&args[1], now, false) {
        Ok(Some(h)) => args[2..].iter().filter(|f| h.remove(f).is_some()).count(),
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    int(n as i64)
}

/// `HEXISTS key field`
pub(crate) fn hexists(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(&args[1], now) {
        Ok(h) => int(i64::from(h.is_some_and(|h| h.contains(&args[2])))),
        Err(()) => reply::wrong_type(),
    }
}

/// `HINCRBY key field delta`
pub(crate) fn hincrby(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let Some(delta) = parse_int(&args[3]) else {
        return reply::not_integer();
    };
    match ctx.db().hash_mut(&args[1], now, true) {
        Ok(Some(h)) => {
            let current = match h.get(&args[2]) {
                Some(v) => match parse_int(v) {
                    Some(n) => n,
                    None => return err("ERR hash value is not an integer"),
                },
                None => 0,
            };
            let Some(next) = current.checked_add(delta) else {
                return err("ERR increment or decrement would overflow");
            };
            h.insert(args[2].clone(), next.to_string().into_bytes());
            int(next)
        }
        _ => reply::wrong_type(),
    }
}

/// `HINCRBYFLOAT key field delta`: the new value as a bulk string (both protocols).
/// Computed in `f64` where the server uses `long double`: a sum that is not exact in
/// binary (`0.1 + 0.2`) can print differently in its last digits.
pub(crate) fn hincrbyfloat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let Some(delta) = parse_float(&args[3]) else {
        return reply::not_float();
    };
    if !delta.is_finite() {
        return err("ERR value is NaN or Infinity");
    }
    let db = ctx.db();
    let current = match db.hash_ref(&args[1], now) {
        Ok(h) => match h.and_then(|h| h.get(&args[2])) {
            Some(v) => match parse_float(v) {
                Some(n) => n,
                None => return err("ERR hash value is not a float"),
            },
            None => 0.0,
        },
        Err(()) => return reply::wrong_type(),
    };
    let next = current + delta;
    if !next.is_finite() {
        return err("ERR increment would produce NaN or Infinity");
    }
    let text = format_float(next);
    if let Ok(Some(h)) = db.hash_mut(&args[1], now, true) {
        h.insert(args[2].clone(), text.clone().into_bytes());
    }
    bulk(text)
}

/// `HSTRLEN key field` (0 when missing)
pub(crate) fn hstrlen(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(&args[1], now) {
        Ok(h) => int(h
            .and_then(|h| h.get(&args[2]))
            .map_or(0, |v| v.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}

fn hash_list(ctx: &mut Ctx<'_, '_>, key: &[u8], keys: bool) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(key, now) {
        Ok(h) => reply::array(
            h.map(|h| {
                h.iter()
                    .map(|(k, v)| bulk_value(if keys { k } else { v }))
                    .collect()
            })
            .unwrap_or_default(),
        ),
        Err(()) => reply::wrong_type(),
    }
}

/// `HKEYS key`
pub(crate) fn hkeys(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    hash_list(ctx, &args[1], true)
}

/// `HVALS key`
pub(crate) fn hvals(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    hash_list(ctx, &args[1], false)
}

/// `HLEN key`
pub(crate) fn hlen(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().hash_ref(&args[1], now) {
        Ok(h) => int(h.map_or(0, |h| h.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}
