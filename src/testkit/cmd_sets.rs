//! Set commands: SADD, SREM, SMEMBERS (a set `~` in RESP3, an array in RESP2),
//! SISMEMBER, SMISMEMBER, SCARD, SPOP, SRANDMEMBER. Intersections, unions,
//! differences and SMOVE are in `cmd_sets_algebra`.

use super::reply::{self, bulk, bulk_value, err, int, nil, parse_int, Reply};
use super::rng;
use super::session::Ctx;
use super::store::OrderedMap;
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

/// Members as the server lists them: a set of integers (up to `set-max-intset-entries`,
/// 512) is an intset there, listed in numeric order; other sets in insertion order
/// (the server's own order is its hash table's, which no test can rely on).
pub(crate) fn set_reply(s: &OrderedMap<()>) -> Reply {
    let members: Vec<&Vec<u8>> = s.iter().map(|(m, _)| m).collect();
    let ints: Option<Vec<i64>> = members.iter().map(|m| parse_int(m)).collect();
    if let Some(mut ints) = ints.filter(|i| i.len() <= 512) {
        ints.sort_unstable();
        let sorted = ints.iter().map(|n| bulk_value(n.to_string().as_bytes()));
        return Reply::Value(Value::Set(sorted.collect()));
    }
    Reply::Value(Value::Set(
        members.into_iter().map(|m| bulk_value(m)).collect(),
    ))
}

/// `SMEMBERS key`
pub(crate) fn smembers(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().set_ref(&args[1], now) {
        Ok(s) => s.map_or_else(|| Reply::Value(Value::Set(Vec::new())), set_reply),
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

/// `SMISMEMBER key member ...`: one integer per member.
pub(crate) fn smismember(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    match ctx.db().set_ref(&args[1], now) {
        Ok(s) => reply::array(
            args[2..]
                .iter()
                .map(|m| Value::Int(i64::from(s.is_some_and(|s| s.contains(m)))))
                .collect(),
        ),
        Err(()) => reply::wrong_type(),
    }
}

/// A member picked at random.
fn random_member(s: &OrderedMap<()>) -> Vec<u8> {
    let i = (rng::next() % s.len() as u64) as usize;
    s.iter().nth(i).map(|(m, _)| m.clone()).unwrap_or_default()
}

/// The optional count of SPOP and SRANDMEMBER (`Err`: the reply refusing it).
fn count_arg(args: &[Vec<u8>]) -> Result<Option<i64>, Reply> {
    match args.len() {
        2 => Ok(None),
        3 => parse_int(&args[2]).map(Some).ok_or_else(reply::not_integer),
        _ => Err(reply::syntax_error()),
    }
}

/// Repeats SRANDMEMBER hands out at most: the server would build a reply of any size,
/// a fake in a test process had better refuse one that cannot be meant.
const MAX_REPEATS: u64 = 10_000_000;

/// `SPOP key [count]`: one member (nil when missing), or with a count a set of up to
/// that many.
pub(crate) fn spop(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let out_of_range = || err("ERR value is out of range, must be positive");
    let count = match count_arg(args) {
        Ok(Some(n)) if n < 0 => return out_of_range(),
        Ok(c) => c,
        Err(_) if args.len() == 3 => return out_of_range(),
        Err(e) => return e,
    };
    let now = ctx.now;
    let db = ctx.db();
    let popped: Vec<Vec<u8>> = match db.set_mut(&args[1], now, false) {
        Ok(Some(s)) => {
            let n = count.map_or(1, |n| (n as usize).min(s.len()));
            (0..n)
                .map(|_| {
                    let m = random_member(s);
                    s.remove(&m);
                    m
                })
                .collect()
        }
        Ok(None) => Vec::new(),
        Err(()) => return reply::wrong_type(),
    };
    db.drop_if_empty(&args[1]);
    match count {
        Some(_) => Reply::Value(Value::Set(popped.iter().map(|m| bulk_value(m)).collect())),
        None => popped.into_iter().next().map_or_else(nil, bulk),
    }
}

/// `SRANDMEMBER key [count]`: one member, or with a count an array: up to `count`
/// distinct members, or for a negative count that many with repeats.
pub(crate) fn srandmember(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let count = match count_arg(args) {
        Ok(Some(i64::MIN)) => return err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
        Ok(c) => c,
        Err(e) => return e,
    };
    let now = ctx.now;
    let s = match ctx.db().set_ref(&args[1], now) {
        Ok(s) => s,
        Err(()) => return reply::wrong_type(),
    };
    let Some(count) = count else {
        return s.map_or_else(nil, |s| bulk(random_member(s)));
    };
    let Some(s) = s else {
        return reply::array(Vec::new());
    };
    let picked: Vec<Vec<u8>> = if count < 0 {
        let n = count.unsigned_abs();
        if n > MAX_REPEATS {
            return err(format!(
                "ERR the testkit fake hands out at most {MAX_REPEATS} members"
            ));
        }
        (0..n).map(|_| random_member(s)).collect()
    } else if count as usize >= s.len() {
        s.iter().map(|(m, _)| m.clone()).collect()
    } else {
        let mut left = s.clone();
        (0..count)
            .map(|_| {
                let m = random_member(&left);
                left.remove(&m);
                m
            })
            .collect()
    };
    reply::array(picked.iter().map(|m| bulk_value(m)).collect())
}
