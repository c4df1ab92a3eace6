//! MULTI / EXEC / DISCARD / WATCH / UNWATCH with the real semantics: commands queue
//! (`+QUEUED`), a queued command the server refused (unknown, wrong arity, …) aborts
//! EXEC with `-EXECABORT`, and a WATCHed key written by anyone (another connection,
//! expiry, FLUSHDB) since WATCH makes EXEC answer a null array.
//!
//! Owns: the transaction state machine. Must never: release the store lock between
//! the WATCH check and the last queued command (EXEC is atomic).

use super::reply::{err, ok, Reply};
use super::session::Ctx;
use crate::resp::Value;

/// `MULTI`
pub(crate) fn multi(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    if ctx.s.multi.is_some() {
        return err("ERR MULTI calls can not be nested");
    }
    ctx.s.multi = Some(Vec::new());
    ctx.s.multi_dirty = false;
    ok()
}

fn end_transaction(ctx: &mut Ctx<'_, '_>) {
    ctx.s.multi = None;
    ctx.s.multi_dirty = false;
    ctx.s.watched.clear();
}

/// `EXEC`
pub(crate) fn exec(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    let Some(queue) = ctx.s.multi.take() else {
        return err("ERR EXEC without MULTI");
    };
    if ctx.s.multi_dirty {
        end_transaction(ctx);
        return err("EXECABORT Transaction discarded because of previous errors.");
    }
    let watched = std::mem::take(&mut ctx.s.watched);
    let now = ctx.now;
    let touched = watched
        .iter()
        .any(|(db, key, seen)| ctx.dbs.dbs[*db].version(key, now) != *seen);
    end_transaction(ctx);
    if touched {
        return Reply::NullArray;
    }
    ctx.in_exec = true;
    let results: Vec<Value> = queue
        .into_iter()
        .map(|(spec, args)| (spec.run)(ctx, &args).into_value())
        .collect();
    ctx.in_exec = false;
    Reply::Value(Value::Array(results))
}

/// `DISCARD`
pub(crate) fn discard(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    if ctx.s.multi.is_none() {
        return err("ERR DISCARD without MULTI");
    }
    end_transaction(ctx);
    ok()
}

/// `WATCH key ...`
pub(crate) fn watch(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    if ctx.s.multi.is_some() {
        return err("ERR WATCH inside MULTI is not allowed");
    }
    let now = ctx.now;
    let db = ctx.s.db;
    for key in &args[1..] {
        if ctx.s.watched.iter().any(|(d, k, _)| *d == db && k == key) {
            continue;
        }
        let version = ctx.dbs.dbs[db].version(key, now);
        ctx.s.watched.push((db, key.clone(), version));
    }
    ok()
}

/// `UNWATCH`
pub(crate) fn unwatch(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> Reply {
    ctx.s.watched.clear();
    ok()
}
