//! String commands: GET, SET (NX|XX, EX|PX|EXAT|PXAT|KEEPTTL, GET), SETNX, GETSET,
//! GETDEL, GETEX, MGET, MSET, INCR, INCRBY, INCRBYFLOAT, DECR, DECRBY, APPEND, STRLEN.
//! GETRANGE and SETRANGE are in `cmd_strings_range`.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::reply::{
    self, bulk, bulk_value, err, format_float, int, nil, ok, parse_float, parse_int, Reply,
};
use super::session::Ctx;
use super::store::Data;
use crate::resp::Value;

/// `GET key`
pub(crate) fn get(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().str_ref(&args[1], now) {
        Ok(Some(v)) => bulk(v.clone()),
        Ok(None) => nil(),
        Err(()) => reply::wrong_type(),
    }
}

enum Expiry {
    Keep,
    Clear,
    At(Instant),
}

/// An absolute Unix time (ms) as an `Instant`.
fn instant_from_unix_ms(ms: i64, now: Instant) -> Instant {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    let delta = ms - now_ms;
    if delta <= 0 {
        now
    } else {
        now + Duration::from_millis(delta as u64)
    }
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms|KEEPTTL]`
pub(crate) fn set(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (mut nx, mut xx, mut get, mut expiry) = (false, false, false, Expiry::Clear);
    let mut expiry_given = false;
    let mut i = 3;
    while i < args.len() {
        let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
        match opt.as_str() {
            "NX" if !xx => nx = true,
            "XX" if !nx => xx = true,
            "GET" => get = true,
            "KEEPTTL" if !expiry_given => {
                expiry_given = true;
                expiry = Expiry::Keep;
            }
            "EX" | "PX" | "EXAT" | "PXAT" if !expiry_given && i + 1 < args.len() => {
                expiry_given = true;
                let Some(n) = parse_int(&args[i + 1]) else {
                    return reply::not_integer();
                };
                if n <= 0 {
                    return err("ERR invalid expire time in 'set' command");
                }
                let n = n as u64;
                expiry = Expiry::At(match opt.as_str() {
                    "EX" => now + Duration::from_secs(n),
                    "PX" => now + Duration::from_millis(n),
                    "EXAT" => instant_from_unix_ms(n.saturating_mul(1000) as i64, now),
                    _ => instant_from_unix_ms(n as i64, now),
                });
                i += 1;
            }
            _ => return reply::syntax_error(),
        }
        i += 1;
    }
    let db = ctx.db();
    let old = match db.get(&args[1], now) {
        None => None,
        Some(e) => match &e.data {
            Data::Str(v) => Some((v.clone(), e.expires)),
            _ if get => return reply::wrong_type(),
            _ => Some((Vec::new(), e.expires)),
        },
    };
    let exists = old.is_some();
    let old_reply = || match &old {
        Some((v, _)) => bulk(v.clone()),
        None => nil(),
    };
    if (nx && exists) || (xx && !exists) {
        return if get { old_reply() } else { nil() };
    }
    let kept = old.as_ref().and_then(|(_, t)| *t);
    db.set(&args[1], Data::Str(args[2].clone()));
    let expires = match expiry {
        Expiry::Keep => kept,
        Expiry::Clear => None,
        Expiry::At(t) => Some(t),
    };
    if let Some(e) = db.get_mut(&args[1], now) {
        e.expires = expires;
    }
    if get {
        old_reply()
    } else {
        ok()
    }
}

/// `SETNX key value`
pub(crate) fn setnx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    if db.exists(&args[1], now) {
        return int(0);
    }
    db.set(&args[1], Data::Str(args[2].clone()));
    int(1)
}

/// `GETSET key value`
pub(crate) fn getset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let old = match db.str_ref(&args[1], now) {
        Ok(v) => v.cloned(),
        Err(()) => return reply::wrong_type(),
    };
    db.set(&args[1], Data::Str(args[2].clone()));
    old.map_or_else(nil, bulk)
}

/// `GETDEL key`
pub(crate) fn getdel(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    match db.str_ref(&args[1], now) {
        Ok(Some(v)) => {
            let v = v.clone();
            db.remove(&args[1], now);
            bulk(v)
        }
        Ok(None) => nil(),
        Err(()) => reply::wrong_type(),
    }
}

/// `GETEX key [EX s|PX ms|EXAT ts|PXAT ms|PERSIST]`: the value, and its new expiry.
/// The options are checked first, the key next, the time last, as on the server.
pub(crate) fn getex(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (mut unit, mut persist) = (None, false);
    let mut i = 2;
    while i < args.len() {
        let opt = String::from_utf8_lossy(&args[i]).to_ascii_uppercase();
        match opt.as_str() {
            "EX" | "PX" | "EXAT" | "PXAT" if unit.is_none() && !persist && i + 1 < args.len() => {
                unit = Some((opt, &args[i + 1]));
                i += 1;
            }
            "PERSIST" if unit.is_none() && !persist => persist = true,
            _ => return reply::syntax_error(),
        }
        i += 1;
    }
    let db = ctx.db();
    let value = match db.str_ref(&args[1], now) {
        Ok(Some(v)) => v.clone(),
        Ok(None) => return nil(),
        Err(()) => return reply::wrong_type(),
    };
    let expires = match unit {
        None if persist => None,
        None => return bulk(value),
        Some((unit, n)) => {
            let bad = || err("ERR invalid expire time in 'getex' command");
            let Some(n) = parse_int(n) else {
                return reply::not_integer();
            };
            if n <= 0 {
                return bad();
            }
            let ms = match unit.as_str() {
                "EX" | "EXAT" => n.checked_mul(1000),
                _ => Some(n),
            };
            let at = ms.and_then(|ms| match unit.as_str() {
                "EX" | "PX" => now.checked_add(Duration::from_millis(ms as u64)),
                _ => Some(instant_from_unix_ms(ms, now)),
            });
            match at {
                Some(at) => Some(at),
                None => return bad(),
            }
        }
    };
    if let Some(e) = db.get_mut(&args[1], now) {
        e.expires = expires;
    }
    // A time already past deletes the key (after answering its value).
    db.purge(&args[1], now);
    bulk(value)
}

/// `MGET key ...`: nil for missing keys and for keys that are not strings.
pub(crate) fn mget(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let items = args[1..]
        .iter()
        .map(|k| match db.str_ref(k, now) {
            Ok(Some(v)) => bulk_value(v),
            _ => Value::Nil,
        })
        .collect();
    reply::array(items)
}

/// `MSET key value [key value ...]`
pub(crate) fn mset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if args.len() % 2 == 0 {
        return reply::wrong_arity("mset");
    }
    let db = ctx.db();
    for pair in args[1..].chunks(2) {
        db.set(&pair[0], Data::Str(pair[1].clone()));
    }
    ok()
}

fn incr_by(ctx: &mut Ctx<'_, '_>, key: &[u8], delta: i64) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let current = match db.str_ref(key, now) {
        Ok(Some(v)) => match parse_int(v) {
            Some(n) => n,
            None => return reply::not_integer(),
        },
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    let Some(next) = current.checked_add(delta) else {
        return err("ERR increment or decrement would overflow");
    };
    match db.str_mut(key, now, true) {
        Ok(Some(v)) => *v = next.to_string().into_bytes(),
        _ => return reply::wrong_type(),
    }
    int(next)
}

/// `INCR key`
pub(crate) fn incr(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    incr_by(ctx, &args[1], 1)
}

/// `DECR key`
pub(crate) fn decr(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    incr_by(ctx, &args[1], -1)
}

/// `INCRBY key delta`
pub(crate) fn incrby(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match parse_int(&args[2]) {
        Some(d) => incr_by(ctx, &args[1], d),
        None => reply::not_integer(),
    }
}

/// `DECRBY key delta`
pub(crate) fn decrby(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match parse_int(&args[2]) {
        Some(i64::MIN) => err("ERR decrement would overflow"),
        Some(d) => incr_by(ctx, &args[1], -d),
        None => reply::not_integer(),
    }
}

/// `INCRBYFLOAT key delta`: the new value as a bulk string (in both protocols).
/// The key's type is checked before the increment, as the server does.
pub(crate) fn incrbyfloat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let current = match db.str_ref(&args[1], now) {
        Ok(Some(v)) => match parse_float(v) {
            Some(n) => n,
            None => return reply::not_float(),
        },
        Ok(None) => 0.0,
        Err(()) => return reply::wrong_type(),
    };
    let Some(delta) = parse_float(&args[2]) else {
        return reply::not_float();
    };
    let next = current + delta;
    if !next.is_finite() {
        return err("ERR increment would produce NaN or Infinity");
    }
    let text = format_float(next);
    if let Ok(Some(v)) = db.str_mut(&args[1], now, true) {
        *v = text.clone().into_bytes();
    }
    bulk(text)
}

/// `APPEND key value`: the new length.
pub(crate) fn append(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().str_mut(&args[1], now, true) {
        Ok(Some(v)) => {
            v.extend_from_slice(&args[2]);
            int(v.len() as i64)
        }
        _ => reply::wrong_type(),
    }
}

/// `STRLEN key`
pub(crate) fn strlen(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().str_ref(&args[1], now) {
        Ok(v) => int(v.map_or(0, |v| v.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}
