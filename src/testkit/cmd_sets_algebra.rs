//! Set algebra: SINTER, SUNION, SDIFF (a set `~` in RESP3, an array in RESP2), their
//! `*STORE` forms (which overwrite a destination of any type and delete it when the
//! result is empty), and SMOVE.

use super::cmd_sets::set_reply;
use super::reply::{self, int, Reply};
use super::session::Ctx;
use super::store::{Data, OrderedMap};

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over `keys` (missing keys are empty sets); WRONGTYPE when any
/// key holds something else, even after a missing one, as the server checks them all.
fn combine(ctx: &mut Ctx<'_, '_>, keys: &[Vec<u8>], op: Op) -> Result<OrderedMap<()>, Reply> {
    let now = ctx.now;
    let db = ctx.db();
    let mut sets = Vec::with_capacity(keys.len());
    for key in keys {
        match db.set_ref(key, now) {
            Ok(s) => sets.push(s.cloned().unwrap_or_default()),
            Err(()) => return Err(reply::wrong_type()),
        }
    }
    let mut sets = sets.into_iter();
    let mut out = sets.next().unwrap_or_default();
    for s in sets {
        match op {
            Op::Inter => {
                let gone: Vec<Vec<u8>> = out
                    .iter()
                    .filter(|(m, _)| !s.contains(m))
                    .map(|(m, _)| m.clone())
                    .collect();
                gone.iter().for_each(|m| {
                    out.remove(m);
                });
            }
            Op::Union => s.iter().for_each(|(m, _)| {
                out.insert(m.clone(), ());
            }),
            Op::Diff => s.iter().for_each(|(m, _)| {
                out.remove(m);
            }),
        }
    }
    Ok(out)
}

fn read(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], op: Op) -> Reply {
    match combine(ctx, &args[1..], op) {
        Ok(s) => set_reply(&s),
        Err(e) => e,
    }
}

fn store(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], op: Op) -> Reply {
    let result = match combine(ctx, &args[2..], op) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (now, len) = (ctx.now, result.len());
    let db = ctx.db();
    if result.is_empty() {
        db.remove(&args[1], now);
    } else {
        db.set(&args[1], Data::Set(result));
    }
    int(len as i64)
}

/// `SINTER key ...`
pub(crate) fn sinter(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    read(ctx, args, Op::Inter)
}

/// `SUNION key ...`
pub(crate) fn sunion(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    read(ctx, args, Op::Union)
}

/// `SDIFF key ...`
pub(crate) fn sdiff(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    read(ctx, args, Op::Diff)
}

/// `SINTERSTORE destination key ...`
pub(crate) fn sinterstore(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    store(ctx, args, Op::Inter)
}

/// `SUNIONSTORE destination key ...`
pub(crate) fn sunionstore(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    store(ctx, args, Op::Union)
}

/// `SDIFFSTORE destination key ...`
pub(crate) fn sdiffstore(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    store(ctx, args, Op::Diff)
}

/// `SMOVE source destination member`: a missing source moves nothing whatever the
/// destination holds; moving within one set answers whether the member is there.
pub(crate) fn smove(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let (now, member) = (ctx.now, &args[3]);
    let db = ctx.db();
    let has = match db.set_ref(&args[1], now) {
        Ok(None) => return int(0),
        Ok(Some(s)) => s.contains(member),
        Err(()) => return reply::wrong_type(),
    };
    if db.set_ref(&args[2], now).is_err() {
        return reply::wrong_type();
    }
    if args[1] == args[2] || !has {
        return int(i64::from(has));
    }
    if let Ok(Some(s)) = db.set_mut(&args[1], now, false) {
        s.remove(member);
    }
    db.drop_if_empty(&args[1]);
    if let Ok(Some(d)) = db.set_mut(&args[2], now, true) {
        d.insert(member.clone(), ());
    }
    int(1)
}
