//! Keyspace commands beyond one key: SCAN, COPY, RENAMENX, TOUCH.
//!
//! SCAN's cursor is a key's position in a fixed hash order (FNV-1a), so it keeps the
//! server's guarantee (a key present for the whole iteration is returned, and a
//! complete iteration ends at cursor 0) without the server's table layout: page
//! boundaries differ, as they do between two real servers.

use super::glob;
use super::reply::{self, bulk_value, err, int, parse_int, Reply};
use super::session::Ctx;
use super::store::DATABASES;
use crate::resp::Value;

/// Where a key sits in the iteration order: never 0, which starts and ends it.
fn position(key: &[u8]) -> u64 {
    let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h.max(1)
}

/// The cursor as the server reads it (`strtoul`: a negative number wraps).
fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(arg).ok()?;
    s.parse::<u64>()
        .ok()
        .or_else(|| parse_int(arg).map(|n| n as u64))
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`
pub(crate) fn scan(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let Some(cursor) = parse_cursor(&args[1]) else {
        return err("ERR invalid cursor");
    };
    let (mut count, mut pattern, mut kind) = (10usize, None, None);
    let mut i = 2;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else {
            return reply::syntax_error();
        };
        match String::from_utf8_lossy(&args[i])
            .to_ascii_uppercase()
            .as_str()
        {
            "COUNT" => match parse_int(value) {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return reply::syntax_error(),
                None => return reply::not_integer(),
            },
            "MATCH" => pattern = Some(value.as_slice()),
            "TYPE" => kind = Some(String::from_utf8_lossy(value).to_ascii_lowercase()),
            _ => return reply::syntax_error(),
        }
        i += 2;
    }
    let now = ctx.now;
    let db = ctx.db();
    let mut keys: Vec<(u64, Vec<u8>)> = db
        .keys(now)
        .into_iter()
        .map(|k| (position(&k), k))
        .filter(|(p, _)| *p >= cursor)
        .collect();
    keys.sort();
    let mut next = 0;
    let mut page = Vec::new();
    for (p, key) in keys {
        // Keys of one position never straddle two pages, or the cursor would skip some.
        if page.len() >= count && page.last().is_some_and(|(last, _)| *last != p) {
            next = p;
            break;
        }
        page.push((p, key));
    }
    let found = page
        .into_iter()
        .map(|(_, k)| k)
        .filter(|k| pattern.is_none_or(|p| glob::matches(p, k)))
        .filter(|k| {
            let actual = db.get(k, now).map(|e| e.data.type_name());
            kind.as_deref().is_none_or(|want| actual == Some(want))
        })
        .map(|k| bulk_value(&k))
        .collect();
    reply::array(vec![
        bulk_value(next.to_string().as_bytes()),
        Value::Array(found),
    ])
}

/// `COPY source destination [DB index] [REPLACE]`: the value and its expiry.
pub(crate) fn copy(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let (now, src_db) = (ctx.now, ctx.s.db);
    let (mut dst_db, mut replace) = (src_db, false);
    let mut i = 3;
    while i < args.len() {
        match String::from_utf8_lossy(&args[i])
            .to_ascii_uppercase()
            .as_str()
        {
            "REPLACE" => replace = true,
            "DB" if i + 1 < args.len() => {
                let Some(n) = parse_int(&args[i + 1]).filter(|n| i32::try_from(*n).is_ok()) else {
                    return reply::not_integer();
                };
                match usize::try_from(n).ok().filter(|&n| n < DATABASES) {
                    Some(n) => dst_db = n,
                    None => return err("ERR DB index is out of range"),
                }
                i += 1;
            }
            _ => return reply::syntax_error(),
        }
        i += 1;
    }
    if ctx.s.server.cluster.get().is_some() && (src_db != 0 || dst_db != 0) {
        return err("ERR Copying to another database is not allowed in cluster mode");
    }
    if src_db == dst_db && args[1] == args[2] {
        return err("ERR source and destination objects are the same");
    }
    let Some(entry) = ctx.dbs.dbs[src_db].get(&args[1], now).cloned() else {
        return int(0);
    };
    let dst = &mut ctx.dbs.dbs[dst_db];
    if dst.exists(&args[2], now) && !replace {
        return int(0);
    }
    dst.remove(&args[2], now);
    dst.put_entry(args[2].clone(), entry);
    int(1)
}

/// `RENAMENX key newkey`: 0 when the new name is taken (or is the same key).
pub(crate) fn renamenx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    if !db.exists(&args[1], now) {
        return err("ERR no such key");
    }
    if args[1] == args[2] || db.exists(&args[2], now) {
        return int(0);
    }
    match db.remove(&args[1], now) {
        Some(entry) => {
            db.put_entry(args[2].clone(), entry);
            int(1)
        }
        None => int(0),
    }
}

/// `TOUCH key ...`: how many exist.
pub(crate) fn touch(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let db = ctx.db();
    int(args[1..].iter().filter(|k| db.exists(k, now)).count() as i64)
}
