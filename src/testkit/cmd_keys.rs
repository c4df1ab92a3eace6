//! Key commands: DEL, UNLINK, EXISTS, EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL,
//! PERSIST, TYPE, KEYS, RENAME. SCAN, COPY, RENAMENX and TOUCH are in `cmd_keyspace`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::glob;
use super::reply::{self, bulk_value, err, int, ok, parse_int, simple, Reply};
use super::session::Ctx;

/// `DEL key ...` / `UNLINK key ...`
pub(crate) fn del(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let n = args[1..]
        .iter()
        .filter(|k| db.remove(k, now).is_some())
        .count();
    int(n as i64)
}

/// `EXISTS key ...` (a key named twice counts twice)
pub(crate) fn exists(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    int(args[1..].iter().filter(|k| db.exists(k, now)).count() as i64)
}

/// The current Unix time in milliseconds.
fn unix_ms_now() -> i64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH);
    t.map_or(0, |d| d.as_millis() as i64)
}

/// EXPIRE and its kin: `n` in `unit_ms` from now (`absolute` false) or from the epoch.
/// Options first, the number next, overflow last, as the server checks them.
fn expire_generic(
    ctx: &mut Ctx<'_, '_>,
    args: &[Vec<u8>],
    unit_ms: i64,
    absolute: bool,
    name: &str,
) -> Reply {
    let now = ctx.now;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        match String::from_utf8_lossy(opt).to_ascii_uppercase().as_str() {
            "NX" => nx = true,
            "XX" => xx = true,
            "GT" => gt = true,
            "LT" => lt = true,
            _ => {
                return err(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                ))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return err("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = parse_int(&args[2]) else {
        return reply::not_integer();
    };
    let base = if absolute { 0 } else { unix_ms_now() };
    let Some(when) = n.checked_mul(unit_ms).and_then(|ms| ms.checked_add(base)) else {
        return err(format!("ERR invalid expire time in '{name}' command"));
    };
    let ms = if absolute {
        when.saturating_sub(unix_ms_now())
    } else {
        when - base
    };
    let db = ctx.db();
    let Some(entry) = db.get(&args[1], now) else {
        return int(0);
    };
    let current = entry.expires;
    let new_at = if ms <= 0 {
        None
    } else {
        // Beyond what an `Instant` holds is as good as never, for a test.
        let century = Duration::from_secs(100 * 365 * 86_400);
        Some(
            now.checked_add(Duration::from_millis(ms as u64))
                .unwrap_or(now + century),
        )
    };
    let allowed = match current {
        None => !xx && !gt,
        Some(cur) => {
            !nx && (!gt || new_at.is_some_and(|t| t > cur) && ms > 0)
                && (!lt || !matches!(new_at, Some(t) if t >= cur))
        }
    };
    if !allowed {
        return int(0);
    }
    match new_at {
        None => {
            db.remove(&args[1], now);
        }
        Some(t) => {
            if let Some(e) = db.get_mut(&args[1], now) {
                e.expires = Some(t);
            }
        }
    }
    int(1)
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`
pub(crate) fn expire(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    expire_generic(ctx, args, 1000, false, "expire")
}

/// `PEXPIRE key milliseconds [NX|XX|GT|LT]`
pub(crate) fn pexpire(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    expire_generic(ctx, args, 1, false, "pexpire")
}

/// `EXPIREAT key unix-seconds [NX|XX|GT|LT]` (a time past deletes the key)
pub(crate) fn expireat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    expire_generic(ctx, args, 1000, true, "expireat")
}

/// `PEXPIREAT key unix-ms [NX|XX|GT|LT]`
pub(crate) fn pexpireat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    expire_generic(ctx, args, 1, true, "pexpireat")
}

fn ttl_ms(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<u128, i64> {
    let now = ctx.now;
    match ctx.db().get(key, now) {
        None => Err(-2),
        Some(e) => match e.expires {
            None => Err(-1),
            // Whole milliseconds, rounded up: the server counts in ms, so a TTL read
            // within the millisecond it was set in reads back in full.
            Some(t) => Ok(t
                .saturating_duration_since(now)
                .as_nanos()
                .div_ceil(1_000_000)),
        },
    }
}

/// `TTL key`: seconds left (rounded), -1 without TTL, -2 when missing.
pub(crate) fn ttl(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match ttl_ms(ctx, &args[1]) {
        Ok(ms) => int(((ms + 500) / 1000) as i64),
        Err(code) => int(code),
    }
}

/// `PTTL key`
pub(crate) fn pttl(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match ttl_ms(ctx, &args[1]) {
        Ok(ms) => int(ms as i64),
        Err(code) => int(code),
    }
}

/// `PERSIST key`
pub(crate) fn persist(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let has_ttl = db.get(&args[1], now).is_some_and(|e| e.expires.is_some());
    if !has_ttl {
        return int(0);
    }
    if let Some(e) = db.get_mut(&args[1], now) {
        e.expires = None;
    }
    int(1)
}

/// `TYPE key`
pub(crate) fn type_(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().get(&args[1], now) {
        Some(e) => simple(e.data.type_name()),
        None => simple("none"),
    }
}

/// `KEYS pattern`
pub(crate) fn keys(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let mut keys: Vec<Vec<u8>> = ctx
        .db()
        .keys(now)
        .into_iter()
        .filter(|k| glob::matches(&args[1], k))
        .collect();
    keys.sort();
    reply::array(keys.iter().map(|k| bulk_value(k)).collect())
}

/// `RENAME key newkey` (the TTL goes with the value)
pub(crate) fn rename(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let Some(entry) = db.remove(&args[1], now) else {
        return err("ERR no such key");
    };
    db.remove(&args[2], now);
    db.put_entry(args[2].clone(), entry);
    ok()
}
