//! Scripting against a real redis-server: `EVAL`, `EVALSHA`, `SCRIPT *`, and `Script`
//! falling back to its source when the server has lost it.

use crate::support;

use resilient_redis::prelude::*;
use resilient_redis::ErrorKind;
use support::commands::{each_protocol, server};

const INCR_BY: &str = "return redis.call('INCRBY', KEYS[1], ARGV[1])";

#[test]
fn eval_and_evalsha() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}evalk");
        let n: i64 = db.eval(INCR_BY, &k, 5).unwrap();
        assert_eq!(n, 5);
        let pair: (String, String) = db.eval("return {KEYS[1], ARGV[1]}", [&k], ["arg"]).unwrap();
        assert_eq!(pair, (k.clone(), "arg".to_string()));
        let none: Option<String> = db.eval("return false", (), ()).unwrap();
        assert_eq!(none, None);

        let sha = db.script_load(INCR_BY).unwrap();
        assert_eq!(
            sha,
            Script::new(INCR_BY).sha1(),
            "our SHA-1 matches the server's"
        );
        assert_eq!(db.evalsha::<i64>(&sha, &k, 2).unwrap(), 7);
        let missing = "0000000000000000000000000000000000000000";
        assert_eq!(db.script_exists([&sha, missing]).unwrap(), [true, false]);
        let e = db.evalsha::<i64>(missing, (), ()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoScript, "{e}");
        assert_eq!(e.command(), Some("EVALSHA"));

        let e = db
            .eval::<i64>("return redis.call('NOPE')", (), ())
            .unwrap_err();
        assert_eq!(e.command(), Some("EVAL"));
        assert!(!e.is_transient(), "{e}");
        let e = db
            .eval::<()>("return redis.error_reply('MY failure')", (), ())
            .unwrap_err();
        assert_eq!(e.detail(), "MY failure");
    });
}

#[test]
fn script_falls_back_to_its_source_after_a_flush() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}scriptk");
        let script = Script::new(INCR_BY);
        db.script_flush().unwrap();
        // Never loaded: EVALSHA fails with NOSCRIPT, EVAL runs and caches it.
        assert_eq!(script.invoke::<i64>(db, &k, 1).unwrap(), 1);
        assert_eq!(db.script_exists(script.sha1()).unwrap(), [true]);
        assert_eq!(script.invoke::<i64>(db, &k, 1).unwrap(), 2);

        db.script_flush().unwrap();
        assert_eq!(db.script_exists(script.sha1()).unwrap(), [false]);
        assert_eq!(script.invoke::<i64>(db, &k, 10).unwrap(), 12);
        assert_eq!(
            db.get::<i64>(&k).unwrap(),
            12,
            "ran exactly once per invoke"
        );

        // A script error is not mistaken for NOSCRIPT: it surfaces, unretried.
        let failing = Script::new("return redis.call('INCR', KEYS[1])");
        db.set(&k, "not a number").unwrap();
        let e = failing.invoke::<i64>(db, &k, ()).unwrap_err();
        assert_ne!(e.kind(), ErrorKind::NoScript, "{e}");
    });
}

#[test]
fn loaded_script_runs_by_digest_in_a_batch() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}batchk");
        let script = Script::new(INCR_BY);
        script.load(db).unwrap();
        let batch = db.batch();
        let handles: Vec<_> = (1..=3)
            .map(|i| batch.add::<i64>(script.cmd(&k, i)))
            .collect();
        batch.execute().unwrap();
        let got: Vec<i64> = handles.into_iter().map(|h| h.wait().unwrap()).collect();
        assert_eq!(got, [1, 3, 6]);
    });
}
