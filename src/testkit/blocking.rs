//! What every blocking command shares (`BLPOP`, `BLMOVE`, `BZPOPMIN`, `XREAD BLOCK`,
//! `WAIT`): the timeout syntax, and the wait itself, with the store unlocked so other
//! connections can write what the command waits for.
//!
//! Owns: blocking and being woken. Must never: hold the store lock while waiting (no
//! other client could serve the waiter), or keep a reply written before the blocking
//! command in the output buffer while blocked.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::reply::{err, parse_float, parse_int, Reply};
use super::session::Ctx;

/// How often a blocked command looks again without being woken (its peer may have
/// gone, a sorted set may have been added to by a command that does not wake).
const BLOCKED_POLL: Duration = Duration::from_millis(20);

/// A timeout in seconds, fractions allowed (`BLPOP`, `BZPOPMIN`); `None` waits forever.
pub(crate) fn timeout_secs(arg: &[u8]) -> Result<Option<Duration>, Reply> {
    match parse_float(arg) {
        // The server converts to milliseconds in an i64: too large a timeout overflows
        // to a negative one there.
        Some(t) if t < 0.0 || t * 1000.0 >= i64::MAX as f64 => Err(err("ERR timeout is negative")),
        Some(t) if t.is_finite() => Ok((t > 0.0).then(|| Duration::from_secs_f64(t))),
        _ => Err(err("ERR timeout is not a float or out of range")),
    }
}

/// A timeout in whole milliseconds (`XREAD BLOCK`, `WAIT`); `None` waits forever.
pub(crate) fn timeout_ms(arg: &[u8]) -> Result<Option<Duration>, Reply> {
    match parse_int(arg) {
        Some(t) if t < 0 => Err(err("ERR timeout is negative")),
        Some(t) => Ok((t > 0).then(|| Duration::from_millis(t as u64))),
        None => Err(err("ERR timeout is not an integer or out of range")),
    }
}

/// Counts a connection as blocked (`INFO clients`) while it lives.
struct Blocked<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Blocked<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `attempt` (with the store locked) at once and again whenever the data may have
/// changed, until it answers; `on_timeout` answers when `timeout` passes first, inside
/// `EXEC` (where nothing blocks), or when the client or the server goes away.
pub(crate) fn serve(
    ctx: &mut Ctx<'_, '_>,
    timeout: Option<Duration>,
    mut attempt: impl FnMut(&mut Ctx<'_, '_>) -> Option<Reply>,
    on_timeout: impl FnOnce(&mut Ctx<'_, '_>) -> Reply,
) -> Reply {
    if let Some(reply) = attempt(ctx) {
        return reply;
    }
    if ctx.in_exec {
        return on_timeout(ctx);
    }
    // A timeout too far to represent waits forever, as it would in practice.
    let deadline = timeout.and_then(|t| ctx.now.checked_add(t));
    let server = ctx.s.server.clone();
    let conn = ctx.s.conn.clone();
    // Replies already produced for this read go out before we block.
    conn.set_batching(false);
    conn.flush(server.faults.is_hung());
    server.store.blocked.fetch_add(1, Ordering::AcqRel);
    let _blocked = Blocked(&server.store.blocked);
    loop {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) || server.is_shutdown() || conn.peer_gone() {
            return on_timeout(ctx);
        }
        let wait = deadline.map_or(BLOCKED_POLL, |d| (d - now).min(BLOCKED_POLL));
        server.store.pushed.wait_for(ctx.dbs, wait);
        conn.flush(server.faults.is_hung());
        ctx.now = Instant::now();
        if let Some(reply) = attempt(ctx) {
            return reply;
        }
    }
}
