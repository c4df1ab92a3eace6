//! Lua scripting: `EVAL`, `EVALSHA`, `SCRIPT *`, and `Script`, which runs by digest and
//! falls back to the source when the server does not have it.
//!
//! Scripts are `Never` retried unless the caller says otherwise: a script can do
//! anything, and only its author knows whether running it twice is harmless.

use std::sync::Arc;

use super::sha1::sha1_hex;
use super::ArgWriter;
use super::{Cmd, CommandFlags, Commands, Database, FromValue, RetryCategory::*, ToArgs};
use crate::error::{ErrorKind, Result};

/// How many arguments `args` writes. `EVAL` needs the key count before the keys, and
/// a `ToArgs` only says how many it wrote after writing them (one value may write
/// several: a slice, a tuple), so the keys are encoded once into a scratch command to
/// count them. Scripts take few keys; the copy is cheap.
fn arg_count(args: &impl ToArgs) -> usize {
    let scratch = Cmd::new("").arg(args);
    let frame = scratch.frame();
    // The frame starts with the `*<argc>\r\n` header.
    let digits = frame[1..].iter().take_while(|b| b.is_ascii_digit());
    digits.fold(0, |n, d| n * 10 + usize::from(d - b'0'))
}

/// No arguments: scripts often take no keys or no arguments, and `()` says so more
/// plainly than an empty slice with a spelled-out element type.
impl ToArgs for () {
    fn write_args(&self, _out: &mut ArgWriter<'_>) {}
}

/// `<name> <script-or-sha> numkeys key... arg...`
fn script_cmd(name: &'static str, script: &str, keys: impl ToArgs, args: impl ToArgs) -> Cmd {
    let numkeys = arg_count(&keys);
    let cmd = Cmd::typed(name, Never).arg(script).arg(numkeys);
    cmd.key(keys).arg(args)
}

/// Scripting commands (`EVAL`, `EVALSHA`, `SCRIPT LOAD` ...), on `Database`, `Batch`
/// and `Transaction`. See also [`Script`].
pub trait ScriptingCommands: Commands {
    /// `EVAL script numkeys key... arg...` (the key count is computed).
    fn eval<T: FromValue>(
        &self,
        script: &str,
        keys: impl ToArgs,
        args: impl ToArgs,
    ) -> Self::Out<T> {
        self.run(script_cmd("EVAL", script, keys, args))
    }

    /// `EVALSHA sha1 numkeys key... arg...`; fails with `ErrorKind::NoScript` when the
    /// server does not have the script.
    fn evalsha<T: FromValue>(
        &self,
        sha1: &str,
        keys: impl ToArgs,
        args: impl ToArgs,
    ) -> Self::Out<T> {
        self.run(script_cmd("EVALSHA", sha1, keys, args))
    }

    /// `SCRIPT LOAD script`: caches it and returns its SHA-1.
    ///
    /// `WriteLastWins`: loading the same source again changes nothing.
    fn script_load(&self, script: &str) -> Self::Out<String> {
        self.run(Cmd::typed("SCRIPT LOAD", WriteLastWins).arg(script))
    }

    /// `SCRIPT EXISTS sha1 [sha1 ...]`: one answer per digest.
    fn script_exists(&self, sha1s: impl ToArgs) -> Self::Out<Vec<bool>> {
        self.run(Cmd::typed("SCRIPT EXISTS", ReadOnly).arg(sha1s))
    }

    /// `SCRIPT FLUSH`: empties the server's script cache.
    fn script_flush(&self) -> Self::Out<()> {
        self.run(Cmd::typed("SCRIPT FLUSH", ServerAdmin))
    }
}

impl<C: Commands + ?Sized> ScriptingCommands for C {}

/// A Lua script with its SHA-1, run by digest (`EVALSHA`) so the source crosses the
/// wire only when the server lacks it: after a restart, a `SCRIPT FLUSH`, or a
/// failover to a server that never saw it.
///
/// ```no_run
/// use resilient_redis::{Client, Script};
/// let db = Client::connect("redis://127.0.0.1:6379")?.database();
/// let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
/// let n: i64 = script.invoke(&db, "counter", 5)?;
/// # Ok::<(), resilient_redis::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Script {
    source: Arc<str>,
    sha1: Arc<str>,
    flags: CommandFlags,
}

impl Script {
    /// A script from its Lua source.
    pub fn new(source: impl AsRef<str>) -> Script {
        let source = source.as_ref();
        Script {
            sha1: sha1_hex(source.as_bytes()).into(),
            source: source.into(),
            flags: CommandFlags::NONE,
        }
    }

    /// States the retry category of the script's runs (`Never` by default), for a
    /// script known to be harmless to repeat.
    #[must_use]
    pub fn flags(mut self, flags: CommandFlags) -> Script {
        self.flags = flags;
        self
    }

    /// The Lua source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The SHA-1 of the source, 40 lowercase hex digits, as Redis names the script.
    pub fn sha1(&self) -> &str {
        &self.sha1
    }

    /// `EVALSHA` for this script, to queue in a `Batch` or `Transaction` (which cannot
    /// fall back to the source: call [`Script::load`] first).
    pub fn cmd(&self, keys: impl ToArgs, args: impl ToArgs) -> Cmd {
        script_cmd("EVALSHA", &self.sha1, keys, args).flags(self.flags)
    }

    /// `SCRIPT LOAD`s the source.
    pub fn load(&self, db: &Database) -> Result<()> {
        db.script_load(&self.source).map(|_| ())
    }

    /// Runs the script: `EVALSHA`, and on `NOSCRIPT` `EVAL` with the source (which
    /// also caches it on the server, so the next run goes by digest again).
    ///
    /// The fallback is always safe, whatever the retry category: `NOSCRIPT` means
    /// the script did not run.
    pub fn invoke<T: FromValue>(
        &self,
        db: &Database,
        keys: impl ToArgs,
        args: impl ToArgs,
    ) -> Result<T> {
        match db.query(&self.cmd(&keys, &args)) {
            Err(e) if e.kind() == ErrorKind::NoScript => {
                let eval = script_cmd("EVAL", &self.source, keys, args).flags(self.flags);
                db.query(&eval)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{keys, line, Recorder};
    use crate::RetryCategory;

    #[test]
    fn key_count_is_computed_from_what_the_keys_write() {
        let r = Recorder;
        let eval = r.eval::<i64>("return 1", ["a", "b"], ("x", 2));
        assert_eq!(line(&eval), "EVAL return 1 2 a b x 2");
        assert_eq!(keys(&eval), ["a", "b"]);
        let none: [&str; 0] = [];
        assert_eq!(line(&r.evalsha::<i64>("abc", none, ())), "EVALSHA abc 0");
        let many: Vec<String> = (0..12).map(|i| format!("k{i}")).collect();
        let e = r.eval::<i64>("s", &many, ());
        assert!(line(&e).starts_with("EVAL s 12 k0 k1"), "{}", line(&e));
    }

    #[test]
    fn scripts_are_named_by_their_sha1_and_never_retried_by_default() {
        let s = Script::new("return 1");
        assert_eq!(s.sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
        let cmd = s.cmd("k", "v");
        assert_eq!(
            line(&cmd),
            "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 1 k v"
        );
        assert_eq!(cmd.retry_category(), RetryCategory::Never);
        let safe = s.flags(CommandFlags::RETRY_READ_ONLY);
        assert_eq!(safe.cmd("k", ()).retry_category(), RetryCategory::ReadOnly);
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.eval::<i64>("s", (), ()).retry_category(), Never);
        assert_eq!(r.script_flush().retry_category(), ServerAdmin);
        assert_eq!(r.script_exists("abc").retry_category(), ReadOnly);
        assert_eq!(line(&r.script_load("return 1")), "SCRIPT LOAD return 1");
    }
}
