//! Byte ranges of strings: GETRANGE and SETRANGE.

use super::reply::{self, bulk, err, int, parse_int, Reply};
use super::session::Ctx;

/// The largest string SETRANGE may make (`proto-max-bulk-len`, 512 MB).
const MAX_LEN: i64 = 512 * 1024 * 1024;

/// `GETRANGE key start end`, with Redis 7.0's index rules (an end before the start of
/// the string clamps to the first byte: `GETRANGE k 0 -100` is the first byte).
pub(crate) fn getrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let (Some(mut start), Some(mut end)) = (parse_int(&args[2]), parse_int(&args[3])) else {
        return reply::not_integer();
    };
    let v = match ctx.db().str_ref(&args[1], now) {
        Ok(Some(v)) => v,
        Ok(None) => return bulk(Vec::new()),
        Err(()) => return reply::wrong_type(),
    };
    let len = v.len() as i64;
    if start < 0 && end < 0 && start > end {
        return bulk(Vec::new());
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    let start = start.max(0);
    let end = end.max(0).min(len - 1);
    if len == 0 || start > end {
        return bulk(Vec::new());
    }
    bulk(v[start as usize..=end as usize].to_vec())
}

/// `SETRANGE key offset value`: the new length; zero bytes pad a gap. An empty value
/// changes nothing (and creates no key).
pub(crate) fn setrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let now = ctx.now;
    let Some(offset) = parse_int(&args[2]) else {
        return reply::not_integer();
    };
    if offset < 0 {
        return err("ERR offset is out of range");
    }
    let value = &args[3];
    let db = ctx.db();
    let current = match db.str_ref(&args[1], now) {
        Ok(v) => v.map(Vec::len),
        Err(()) => return reply::wrong_type(),
    };
    if value.is_empty() {
        return int(current.unwrap_or(0) as i64);
    }
    if offset.saturating_add(value.len() as i64) > MAX_LEN {
        return err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    let offset = offset as usize;
    match db.str_mut(&args[1], now, true) {
        Ok(Some(v)) => {
            if v.len() < offset + value.len() {
                v.resize(offset + value.len(), 0);
            }
            v[offset..offset + value.len()].copy_from_slice(value);
            int(v.len() as i64)
        }
        _ => reply::wrong_type(),
    }
}
