//! String, key and server commands against a real redis-server, over RESP2 and RESP3.

use crate::support;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use resilient_redis::prelude::*;
use resilient_redis::ErrorKind;
use support::commands::{each_protocol, server};

#[test]
fn get_set_and_missing_keys() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}str");
        assert_eq!(db.get::<Option<String>>(&k).unwrap(), None);
        db.set(&k, "hello").unwrap();
        assert_eq!(db.get::<String>(&k).unwrap(), "hello");
        assert_eq!(
            db.get::<Option<String>>(&k).unwrap().as_deref(),
            Some("hello")
        );
        // Binary-safe both ways.
        let bin = format!("{p}bin");
        db.set(&bin, vec![0u8, 159, 146, 150, 255]).unwrap();
        assert_eq!(db.get::<Vec<u8>>(&bin).unwrap(), [0, 159, 146, 150, 255]);
        // Numbers are written in decimal and read back from bulk strings.
        let n = format!("{p}num");
        db.set(&n, 42).unwrap();
        assert_eq!(db.get::<i64>(&n).unwrap(), 42);
        let missing = db.get::<String>(format!("{p}nope")).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::TypeMismatch, "{missing}");
    });
}

#[test]
fn set_variants() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}setex");
        db.set_ex(&k, "v", Duration::from_secs(100)).unwrap();
        let pttl = db.pttl(&k).unwrap();
        assert!((90_000..=100_000).contains(&pttl), "{pttl}");

        let nx = format!("{p}setnx");
        assert!(db.set_nx(&nx, "first").unwrap());
        assert!(!db.set_nx(&nx, "second").unwrap());
        assert_eq!(db.get::<String>(&nx).unwrap(), "first");
        assert!(!db.setnx(&nx, "third").unwrap());
        assert!(db.setnx(format!("{p}setnx2"), "x").unwrap());

        let o = format!("{p}opts");
        let xx = SetOptions::new().xx();
        assert!(
            !db.set_options::<bool>(&o, "v", &xx).unwrap(),
            "XX on a missing key"
        );
        let nx_ttl = SetOptions::new().nx().ttl(Duration::from_secs(50));
        assert!(db.set_options::<bool>(&o, "v1", &nx_ttl).unwrap());
        assert!(db.ttl(&o).unwrap() > 40);
        let keep_get = SetOptions::new().keep_ttl().get();
        let old: Option<String> = db.set_options(&o, "v2", &keep_get).unwrap();
        assert_eq!(old.as_deref(), Some("v1"));
        assert!(db.ttl(&o).unwrap() > 40, "KEEPTTL kept the expiry");
        let at = SystemTime::now() + Duration::from_secs(1000);
        db.set_options::<()>(&o, "v3", &SetOptions::new().expire_at(at))
            .unwrap();
        assert!(db.ttl(&o).unwrap() > 900);

        assert_eq!(
            db.get_set::<Option<String>>(&o, "v4").unwrap().as_deref(),
            Some("v3")
        );
        assert_eq!(db.get_ex::<String>(&o, None).unwrap(), "v4");
        assert_eq!(db.ttl(&o).unwrap(), -1, "GETEX PERSIST removed the expiry");
        assert_eq!(
            db.get_ex::<String>(&o, Some(Duration::from_secs(30)))
                .unwrap(),
            "v4"
        );
        assert!(db.ttl(&o).unwrap() > 20);
        assert_eq!(
            db.get_del::<Option<String>>(&o).unwrap().as_deref(),
            Some("v4")
        );
        assert_eq!(db.get_del::<Option<String>>(&o).unwrap(), None);
    });
}

#[test]
fn multi_key_strings_and_counters() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let (a, b, c) = (format!("{p}a"), format!("{p}b"), format!("{p}c"));
        db.mset(&[(&a, "1"), (&b, "2")]).unwrap();
        let got: Vec<Option<i64>> = db.mget([&a, &c, &b]).unwrap();
        assert_eq!(got, [Some(1), None, Some(2)]);

        let n = format!("{p}counter");
        assert_eq!(db.incr(&n, 5).unwrap(), 5);
        assert_eq!(db.incr(&n, -2).unwrap(), 3);
        assert_eq!(db.decr(&n, 10).unwrap(), -7);
        let f = format!("{p}float");
        assert_eq!(db.incr_by_float(&f, 1.25).unwrap(), 1.25);
        assert_eq!(db.incr_by_float(&f, -0.5).unwrap(), 0.75);

        let s = format!("{p}append");
        assert_eq!(db.append(&s, "Hello").unwrap(), 5);
        assert_eq!(db.append(&s, " World").unwrap(), 11);
        assert_eq!(db.strlen(&s).unwrap(), 11);
        assert_eq!(db.strlen(format!("{p}missing")).unwrap(), 0);
        assert_eq!(db.getrange::<String>(&s, 0, 4).unwrap(), "Hello");
        assert_eq!(db.getrange::<String>(&s, -5, -1).unwrap(), "World");
        assert_eq!(db.setrange(&s, 6, "Redis").unwrap(), 11);
        assert_eq!(db.get::<String>(&s).unwrap(), "Hello Redis");

        let e = db.incr(&s, 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Server, "{e}");
        assert_eq!(e.command(), Some("INCRBY"));
    });
}

#[test]
fn key_commands() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let (a, b, c) = (format!("{p}ka"), format!("{p}kb"), format!("{p}kc"));
        db.mset(&[(&a, 1), (&b, 2)]).unwrap();
        assert_eq!(db.exists([&a, &b, &c]).unwrap(), 2);
        assert_eq!(db.touch([&a, &c]).unwrap(), 1);
        assert_eq!(db.key_type(&a).unwrap(), "string");
        assert_eq!(db.key_type(&c).unwrap(), "none");

        assert_eq!(db.ttl(&a).unwrap(), -1);
        assert_eq!(db.ttl(&c).unwrap(), -2);
        assert!(db.expire(&a, Duration::from_millis(100_500)).unwrap());
        assert_eq!(db.ttl(&a).unwrap(), 101, "rounded up to whole seconds");
        assert!(db.pexpire(&a, Duration::from_millis(50_000)).unwrap());
        assert!((49_000..=50_000).contains(&db.pttl(&a).unwrap()));
        assert!(
            !db.expire(&c, Duration::from_secs(5)).unwrap(),
            "missing key"
        );
        let at = SystemTime::now() + Duration::from_secs(500);
        assert!(db.expire_at(&a, at).unwrap());
        assert!((490..=500).contains(&db.ttl(&a).unwrap()));
        assert!(db.pexpire_at(&a, at).unwrap());
        assert!(db.persist(&a).unwrap());
        assert!(!db.persist(&a).unwrap(), "no expiry left to remove");

        db.rename(&a, &c).unwrap();
        assert_eq!(db.exists(&a).unwrap(), 0);
        assert!(!db.rename_nx(&c, &b).unwrap(), "destination taken");
        let e = db.rename(&a, &c).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Server);
        assert_eq!(e.command(), Some("RENAME"));

        assert!(db.copy(&c, &a, false).unwrap());
        assert!(!db.copy(&c, &a, false).unwrap(), "destination exists");
        assert!(db.copy(&b, &a, true).unwrap());
        assert_eq!(db.get::<i64>(&a).unwrap(), 2);

        assert_eq!(db.del([&a, &b]).unwrap(), 2);
        assert_eq!(db.unlink([&c, &a]).unwrap(), 1);
        assert_eq!(db.exists([&a, &b, &c]).unwrap(), 0);
    });
}

#[test]
fn keys_and_scan_iterate_everything() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let pairs: Vec<(String, usize)> = (0..250).map(|i| (format!("{p}scan:{i}"), i)).collect();
        db.mset(&pairs).unwrap();
        db.set(format!("{p}other"), 1).unwrap();
        let mut keys: Vec<String> = db.keys(format!("{p}scan:*")).unwrap();
        keys.sort();
        assert_eq!(keys.len(), 250);

        let pattern = format!("{p}scan:*");
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut pages = 0;
        loop {
            let (next, page): (u64, Vec<String>) =
                db.scan(cursor, Some(&pattern), Some(50)).unwrap();
            seen.extend(page);
            pages += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert!(pages > 1, "a cursor was followed");
        assert_eq!(seen.len(), 250);
        assert!(seen.iter().all(|k| k.starts_with(&format!("{p}scan:"))));
    });
}

#[test]
fn server_commands() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        assert_eq!(db.ping().unwrap(), "PONG");
        assert_eq!(db.echo::<String>("hi there").unwrap(), "hi there");
        let info = db.info(Some("server")).unwrap();
        assert!(info.contains("redis_version:"), "{info}");
        let everything = db.info(None).unwrap();
        assert!(everything.contains("# Keyspace"));
        let (secs, micros) = db.time().unwrap();
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(secs.abs_diff(now) < 5 && micros < 1_000_000);

        let id = db.client_id().unwrap();
        assert!(id > 0);
        assert_eq!(db.client_getname().unwrap(), None);
        let name = format!("app-{}", &p[..2]);
        db.client_setname(&name).unwrap();
        assert_eq!(db.client_getname().unwrap(), Some(name));

        let cfg: HashMap<String, String> = db.config_get("maxmemory-policy").unwrap();
        assert_eq!(cfg["maxmemory-policy"], "noeviction");
        db.config_set("maxmemory-policy", "allkeys-lru").unwrap();
        let cfg: HashMap<String, String> = db.config_get("maxmemory-policy").unwrap();
        assert_eq!(cfg["maxmemory-policy"], "allkeys-lru");
        db.config_set("maxmemory-policy", "noeviction").unwrap();
        let e = db.config_set("no-such-parameter", "1").unwrap_err();
        assert_eq!(e.command(), Some("CONFIG SET"));

        // Without replicas WAIT waits its whole timeout and reports none.
        assert_eq!(db.wait(0, Duration::from_millis(10)).unwrap(), 0);
    });
}

#[test]
fn flush_and_dbsize() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        db.flushall().unwrap();
        assert_eq!(db.dbsize().unwrap(), 0);
        db.mset(&[(format!("{p}1"), 1), (format!("{p}2"), 2)])
            .unwrap();
        assert_eq!(db.dbsize().unwrap(), 2);
        db.flushdb().unwrap();
        assert_eq!(db.dbsize().unwrap(), 0);
    });
}

#[test]
fn wrong_type_names_the_command() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let k = format!("{p}wt");
        db.set(&k, "string").unwrap();
        let e = db.lpush(&k, "x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongType, "{e}");
        assert_eq!(e.command(), Some("LPUSH"));
        assert!(e.to_string().contains("LPUSH"), "{e}");
        assert!(!e.is_transient());
        let e = db.hgetall::<HashMap<String, String>>(&k).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongType);
        assert_eq!(e.command(), Some("HGETALL"));
        let e = db.zrange_withscores::<String>(&k, 0, -1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongType);
        assert_eq!(e.command(), Some("ZRANGE"));
    });
}
