//! Scripting without Lua: `SCRIPT LOAD|EXISTS|FLUSH` keep the script cache as the
//! server does (digests only), and `EVAL`/`EVALSHA` check their arguments and the
//! cache as the server does (`-NOSCRIPT` for an unknown digest), then refuse to run
//! the script with an error that says why. A fake that pretended to run scripts would
//! let a test pass that a real server fails.

use super::reply::{self, bulk, err, ok, parse_int, Reply};
use super::session::Ctx;
use crate::resp::Value;
use crate::Script;

/// What EVAL and EVALSHA answer once their arguments pass.
pub(crate) const NO_LUA: &str =
    "ERR the testkit fake does not run Lua scripts (EVAL, EVALSHA): test scripts against a real Redis";

/// `SCRIPT LOAD script`: its SHA-1, as the server names it.
pub(crate) fn script_load(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let source = String::from_utf8_lossy(&args[2]);
    let sha = Script::new(source.as_ref()).sha1().to_string();
    ctx.dbs.scripts.insert(sha.clone());
    bulk(sha)
}

/// `SCRIPT EXISTS sha1 ...`: one integer per digest (any case).
pub(crate) fn script_exists(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let known = |sha: &Vec<u8>| {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        Value::Int(i64::from(ctx.dbs.scripts.contains(&sha)))
    };
    reply::array(args[2..].iter().map(known).collect())
}

/// `SCRIPT FLUSH [ASYNC|SYNC]`
pub(crate) fn script_flush(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let mode_ok = match args.get(2) {
        None => true,
        Some(m) => {
            args.len() == 3 && (m.eq_ignore_ascii_case(b"ASYNC") || m.eq_ignore_ascii_case(b"SYNC"))
        }
    };
    if !mode_ok {
        return err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    ctx.dbs.scripts.clear();
    ok()
}

/// The key count's checks, common to EVAL and EVALSHA.
fn numkeys_ok(args: &[Vec<u8>]) -> Result<(), Reply> {
    match parse_int(&args[2]) {
        None => Err(reply::not_integer()),
        Some(n) if n < 0 => Err(err("ERR Number of keys can't be negative")),
        Some(n) if n > (args.len() - 3) as i64 => Err(err(
            "ERR Number of keys can't be greater than number of args",
        )),
        Some(_) => Ok(()),
    }
}

/// `EVAL script numkeys key ... arg ...`: refused (see the module comment).
pub(crate) fn eval(_ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match numkeys_ok(args) {
        Ok(()) => err(NO_LUA),
        Err(e) => e,
    }
}

/// `EVALSHA sha1 numkeys key ... arg ...`: `-NOSCRIPT` for a digest never loaded,
/// refused otherwise.
pub(crate) fn evalsha(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let noscript = || err("NOSCRIPT No matching script. Please use EVAL.");
    // No digest has another length: the server answers that before the key count.
    if args[1].len() != 40 {
        return noscript();
    }
    if let Err(e) = numkeys_ok(args) {
        return e;
    }
    let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    if !ctx.dbs.scripts.contains(&sha) {
        return noscript();
    }
    err(NO_LUA)
}
