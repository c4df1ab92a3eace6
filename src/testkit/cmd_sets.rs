//! Set commands: SADD, SREM, SMEMBERS (a set `~` in RESP3, an array in RESP2),
//! SISMEMBER, SCARD.

use super::reply::{self, bulk_value, int, Reply};
use super::session::Ctx;
use crate::resp::Value;

/// `SADD key member ...`
pub(crate) fn sadd(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().set_mut(&args[1], now, true) {
        Ok(Some(s)) => int(args[2..]
            .iter()
            .filter(|m| s.insert(m.to_vec(), ()))
            .count() as i64),
        _ => reply::wrong_type(),
    }
}

/// `SREM key member ...`
pub(crate) fn srem(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    let n = match db.set_mut(&args[1], now, false) {
        Ok(Some(s)) => args[2..].iter().filter(|m| s.remove(m).is_some()).count(),
        Ok(None) => 0,
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    int(n as i64)
}

/// `SMEMBERS key`
pub(crate) fn smembers(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().set_ref(&args[1], now) {
        Ok(s) => Reply::Value(Value::Set(
            s.map(|s| s.iter().map(|(m, _)| bulk_value(m)).collect())
                .unwrap_or_default(),
        )),
        Err(()) => reply::wrong_type(),
    }
}

/// `SISMEMBER key member`: an integer (not a boolean) in both protocols.
pub(crate) fn sismember(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().set_ref(&args[1], now) {
        Ok(s) => int(i64::from(s.is_some_and(|s| s.contains(&args[2])))),
        Err(()) => reply::wrong_type(),
    }
}

/// `SCARD key`
pub(crate) fn scard(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().set_ref(&args[1], now) {
        Ok(s) => int(s.map_or(0, |s| s.len() as i64)),
        Err(()) => reply::wrong_type(),
    }
}
