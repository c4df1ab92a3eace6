//! Moving an element between lists: LMOVE, RPOPLPUSH, and the blocking BLMOVE and
//! BRPOPLPUSH (a null array on timeout, as the server answers every blocking pop).

use super::blocking;
use super::reply::{self, bulk, nil, Reply};
use super::session::Ctx;

/// `LEFT` (true) or `RIGHT`.
fn end(arg: &[u8]) -> Result<bool, Reply> {
    match String::from_utf8_lossy(arg).to_ascii_uppercase().as_str() {
        "LEFT" => Ok(true),
        "RIGHT" => Ok(false),
        _ => Err(reply::syntax_error()),
    }
}

/// Moves one element if the source has one: `None` when it is missing or empty (the
/// destination is then not looked at, as on the server).
fn move_one(
    ctx: &mut Ctx<'_, '_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> Option<Reply> {
    let now = ctx.now;
    let db = ctx.db();
    match db.list_ref(src, now) {
        Ok(Some(l)) if !l.is_empty() => {}
        Ok(_) => return None,
        Err(()) => return Some(reply::wrong_type()),
    }
    if db.list_ref(dst, now).is_err() {
        return Some(reply::wrong_type());
    }
    let popped = match db.list_mut(src, now, false) {
        Ok(Some(l)) if from_left => l.pop_front(),
        Ok(Some(l)) => l.pop_back(),
        _ => None,
    }?;
    db.drop_if_empty(src);
    if let Ok(Some(l)) = db.list_mut(dst, now, true) {
        if to_left {
            l.push_front(popped.clone());
        } else {
            l.push_back(popped.clone());
        }
    }
    ctx.pushed = true;
    Some(bulk(popped))
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`
pub(crate) fn lmove(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let (from, to) = match (end(&args[3]), end(&args[4])) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    move_one(ctx, &args[1], &args[2], from, to).unwrap_or_else(nil)
}

/// `RPOPLPUSH source destination`
pub(crate) fn rpoplpush(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    move_one(ctx, &args[1], &args[2], false, true).unwrap_or_else(nil)
}

fn blocking_move(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], from: bool, to: bool) -> Reply {
    let timeout = match blocking::timeout_secs(&args[args.len() - 1]) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let attempt = |ctx: &mut Ctx<'_, '_>| move_one(ctx, &args[1], &args[2], from, to);
    blocking::serve(ctx, timeout, attempt, |_| Reply::NullArray)
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`
pub(crate) fn blmove(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match (end(&args[3]), end(&args[4])) {
        (Ok(f), Ok(t)) => blocking_move(ctx, args, f, t),
        (Err(e), _) | (_, Err(e)) => e,
    }
}

/// `BRPOPLPUSH source destination timeout`
pub(crate) fn brpoplpush(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    blocking_move(ctx, args, false, true)
}
