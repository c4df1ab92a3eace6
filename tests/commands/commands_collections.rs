//! Hash, list, set and sorted set commands against a real redis-server, over RESP2 and
//! RESP3 (whose replies differ in shape: maps, sets, doubles, nested pairs).

use crate::support;

use std::collections::{BTreeMap, HashMap, HashSet};

use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::{Cmd, ErrorKind};
use support::commands::{each_protocol, server};

#[test]
fn hashes() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let h = format!("{p}hash");
        assert_eq!(db.hset(&h, "name", "ada").unwrap(), 1);
        assert_eq!(db.hset(&h, "name", "Ada").unwrap(), 0, "updated, not added");
        let more = BTreeMap::from([("lang", "en"), ("year", "1815")]);
        assert_eq!(db.hset_multiple(&h, &more).unwrap(), 2);
        assert_eq!(db.hset_multiple(&h, [("x", 1), ("y", 2)]).unwrap(), 2);

        assert_eq!(db.hget::<String>(&h, "name").unwrap(), "Ada");
        assert_eq!(db.hget::<Option<String>>(&h, "nope").unwrap(), None);
        assert_eq!(db.hget::<i64>(&h, "year").unwrap(), 1815);
        let got: Vec<Option<String>> = db.hmget(&h, ["lang", "nope", "x"]).unwrap();
        assert_eq!(got, [Some("en".into()), None, Some("1".into())]);

        let all: HashMap<String, String> = db.hgetall(&h).unwrap();
        assert_eq!(all.len(), 5);
        assert_eq!(all["lang"], "en");
        let all: BTreeMap<String, String> = db.hgetall(&h).unwrap();
        assert_eq!(all.keys().next().map(String::as_str), Some("lang"));
        let pairs: Vec<(String, String)> = db.hgetall(&h).unwrap();
        assert_eq!(pairs.len(), 5);
        let empty: HashMap<String, String> = db.hgetall(format!("{p}none")).unwrap();
        assert!(empty.is_empty());

        assert!(db.hexists(&h, "x").unwrap());
        assert!(!db.hexists(&h, "z").unwrap());
        assert_eq!(db.hincr(&h, "x", 10).unwrap(), 11);
        assert_eq!(db.hincr_by_float(&h, "y", 0.5).unwrap(), 2.5);
        assert!(!db.hsetnx(&h, "x", 0).unwrap());
        assert!(db.hsetnx(&h, "z", 0).unwrap());
        assert_eq!(db.hlen(&h).unwrap(), 6);
        assert_eq!(db.hstrlen(&h, "name").unwrap(), 3);
        let mut keys: Vec<String> = db.hkeys(&h).unwrap();
        keys.sort();
        assert_eq!(keys, ["lang", "name", "x", "y", "year", "z"]);
        assert_eq!(db.hvals::<String>(&h).unwrap().len(), 6);
        assert_eq!(db.hdel(&h, ["x", "y", "nope"]).unwrap(), 2);
        assert_eq!(db.hlen(&h).unwrap(), 4);
    });
}

#[test]
fn lists() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let l = format!("{p}list");
        assert_eq!(db.rpush(&l, ["b", "c"]).unwrap(), 2);
        assert_eq!(db.lpush(&l, "a").unwrap(), 3);
        assert_eq!(db.lpushx(format!("{p}nolist"), "x").unwrap(), 0);
        assert_eq!(db.rpushx(&l, "d").unwrap(), 4);
        assert_eq!(
            db.lrange::<String>(&l, 0, -1).unwrap(),
            ["a", "b", "c", "d"]
        );
        assert_eq!(db.llen(&l).unwrap(), 4);
        assert_eq!(db.lindex::<String>(&l, -1).unwrap(), "d");
        assert_eq!(db.lindex::<Option<String>>(&l, 99).unwrap(), None);
        db.lset(&l, 1, "B").unwrap();
        assert_eq!(db.linsert_before(&l, "B", "a2").unwrap(), 5);
        assert_eq!(db.linsert_after(&l, "zz", "x").unwrap(), -1, "no pivot");
        assert_eq!(db.linsert_after(&l, "d", "e").unwrap(), 6);
        assert_eq!(db.lpos(&l, "B").unwrap(), Some(2));
        assert_eq!(db.lpos(&l, "nope").unwrap(), None);
        assert_eq!(
            db.lrange::<String>(&l, 0, -1).unwrap(),
            ["a", "a2", "B", "c", "d", "e"]
        );

        assert_eq!(
            db.lpop::<Option<String>>(&l, None).unwrap().as_deref(),
            Some("a")
        );
        assert_eq!(db.rpop::<Vec<String>>(&l, Some(2)).unwrap(), ["e", "d"]);
        let none: Option<Vec<String>> = db.lpop(format!("{p}nolist"), Some(2)).unwrap();
        assert_eq!(none, None);

        let dst = format!("{p}dst");
        let moved: Option<String> = db.lmove(&l, &dst, ListEnd::Left, ListEnd::Right).unwrap();
        assert_eq!(moved.as_deref(), Some("a2"));
        assert_eq!(db.lrange::<String>(&dst, 0, -1).unwrap(), ["a2"]);

        db.rpush(&l, ["x", "c", "x", "x"]).unwrap();
        assert_eq!(db.lrem(&l, 2, "x").unwrap(), 2);
        assert_eq!(db.lrem(&l, 0, "c").unwrap(), 2);
        assert_eq!(db.lrange::<String>(&l, 0, -1).unwrap(), ["B", "x"]);
        db.rpush(&l, ["1", "2", "3"]).unwrap();
        db.ltrim(&l, 0, 2).unwrap();
        assert_eq!(db.lrange::<String>(&l, 0, -1).unwrap(), ["B", "x", "1"]);
        db.ltrim(&l, -2, -1).unwrap();
        assert_eq!(db.lrange::<String>(&l, 0, -1).unwrap(), ["x", "1"]);
    });
}

#[test]
fn sets() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let (a, b, d) = (format!("{p}sa"), format!("{p}sb"), format!("{p}sd"));
        assert_eq!(db.sadd(&a, ["1", "2", "3"]).unwrap(), 3);
        assert_eq!(db.sadd(&a, "3").unwrap(), 0);
        db.sadd(&b, ["2", "3", "4"]).unwrap();
        let members: HashSet<String> = db.smembers(&a).unwrap();
        assert_eq!(members, HashSet::from(["1".into(), "2".into(), "3".into()]));
        let as_vec: Vec<i64> = db.smembers(&a).unwrap();
        assert_eq!(as_vec.len(), 3);
        assert!(db.sismember(&a, "1").unwrap());
        assert!(!db.sismember(&a, "9").unwrap());
        assert_eq!(
            db.smismember(&a, ["1", "9", "3"]).unwrap(),
            [true, false, true]
        );
        assert_eq!(db.scard(&a).unwrap(), 3);

        let inter: HashSet<i64> = db.sinter([&a, &b]).unwrap();
        assert_eq!(inter, HashSet::from([2, 3]));
        let union: HashSet<i64> = db.sunion([&a, &b]).unwrap();
        assert_eq!(union.len(), 4);
        let diff: Vec<i64> = db.sdiff([&a, &b]).unwrap();
        assert_eq!(diff, [1]);
        assert_eq!(db.sinterstore(&d, [&a, &b]).unwrap(), 2);
        assert_eq!(db.sunionstore(&d, [&a, &b]).unwrap(), 4);
        assert_eq!(db.sdiffstore(&d, [&b, &a]).unwrap(), 1);
        assert_eq!(db.smembers::<Vec<i64>>(&d).unwrap(), [4]);

        assert!(db.smove(&a, &d, "1").unwrap());
        assert!(!db.smove(&a, &d, "1").unwrap(), "already moved");
        let one: Option<String> = db.srandmember(&b, None).unwrap();
        assert!(one.is_some());
        let repeats: Vec<String> = db.srandmember(&b, Some(-10)).unwrap();
        assert_eq!(repeats.len(), 10);
        let popped: Option<String> = db.spop(&b, None).unwrap();
        assert!(popped.is_some());
        let popped: Vec<String> = db.spop(&b, Some(5)).unwrap();
        assert_eq!(popped.len(), 2);
        assert_eq!(db.srem(&a, ["2", "3", "9"]).unwrap(), 2);
        assert_eq!(db.scard(&a).unwrap(), 0);
    });
}

#[test]
fn sorted_sets() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let z = format!("{p}zset");
        assert_eq!(db.zadd(&z, "a", 1.0).unwrap(), 1);
        assert_eq!(db.zadd(&z, "a", 1.5).unwrap(), 0);
        assert_eq!(db.zadd_multiple(&z, [(2.0, "b"), (3.0, "c")]).unwrap(), 2);
        assert_eq!(db.zadd_multiple(&z, vec![(4, "d"), (5, "e")]).unwrap(), 2);
        assert_eq!(db.zscore(&z, "a").unwrap(), Some(1.5));
        assert_eq!(db.zscore(&z, "nope").unwrap(), None);
        assert_eq!(db.zincr(&z, "a", 10.0).unwrap(), 11.5);
        assert_eq!(db.zcard(&z).unwrap(), 5);
        assert_eq!(db.zcount(&z, f64::NEG_INFINITY, f64::INFINITY).unwrap(), 5);
        assert_eq!(db.zcount(&z, "(2", 4).unwrap(), 2);
        assert_eq!(db.zcount(&z, "-inf", "+inf").unwrap(), 5);

        assert_eq!(db.zrange::<String>(&z, 0, 1).unwrap(), ["b", "c"]);
        assert_eq!(db.zrevrange::<String>(&z, 0, 1).unwrap(), ["a", "e"]);
        assert_eq!(db.zrangebyscore::<String>(&z, 3, "(5").unwrap(), ["c", "d"]);
        let scored: Vec<(String, f64)> = db.zrange_withscores(&z, 0, -1).unwrap();
        assert_eq!(
            scored,
            [
                ("b".into(), 2.0),
                ("c".into(), 3.0),
                ("d".into(), 4.0),
                ("e".into(), 5.0),
                ("a".into(), 11.5)
            ]
        );
        assert!(db
            .zrange_withscores::<String>(format!("{p}none"), 0, -1)
            .unwrap()
            .is_empty());
        assert_eq!(db.zrank(&z, "c").unwrap(), Some(1));
        assert_eq!(db.zrevrank(&z, "c").unwrap(), Some(3));
        assert_eq!(db.zrank(&z, "nope").unwrap(), None);

        let min: Vec<(String, f64)> = db.zpopmin(&z, 1).unwrap();
        assert_eq!(min, [("b".to_string(), 2.0)]);
        let max: Vec<(String, f64)> = db.zpopmax(&z, 2).unwrap();
        assert_eq!(max, [("a".to_string(), 11.5), ("e".to_string(), 5.0)]);
        assert!(db
            .zpopmax::<String>(format!("{p}none"), 2)
            .unwrap()
            .is_empty());

        db.zadd_multiple(&z, [(10, "x"), (20, "y"), (30, "w")])
            .unwrap();
        assert_eq!(db.zrem_range_by_rank(&z, 0, 0).unwrap(), 1);
        assert_eq!(db.zrem_range_by_score(&z, "(10", 20).unwrap(), 1);
        assert_eq!(db.zrem(&z, ["d", "x", "nope"]).unwrap(), 2);
        assert_eq!(db.zrange::<String>(&z, 0, -1).unwrap(), ["w"]);
    });
}

/// The reply shapes the conversions must bridge really differ between the protocols
/// (so the typed tests above prove something): RESP3 sends maps, sets and doubles.
#[test]
fn raw_reply_shapes_differ_by_protocol() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let resp3 = p == "r3:";
        let h = format!("{p}shape:h");
        db.hset(&h, "f", "v").unwrap();
        let raw: Value = db.hgetall(&h).unwrap();
        assert_eq!(matches!(raw, Value::Map(_)), resp3, "{raw:?}");
        let s = format!("{p}shape:s");
        db.sadd(&s, "m").unwrap();
        let raw: Value = db.smembers(&s).unwrap();
        assert_eq!(matches!(raw, Value::Set(_)), resp3, "{raw:?}");
        let z = format!("{p}shape:z");
        db.zadd(&z, "m", 1.5).unwrap();
        let withscores = Cmd::new("ZRANGE").key(&z).arg(0).arg(-1).arg("WITHSCORES");
        let raw: Value = db.query(&withscores).unwrap();
        let nested =
            matches!(&raw, Value::Array(items) if matches!(items.first(), Some(Value::Array(_))));
        assert_eq!(nested, resp3, "{raw:?}");
        let raw: Value = db.query(&Cmd::new("ZPOPMIN").key(&z).arg(1)).unwrap();
        assert!(matches!(raw, Value::Array(_)), "{raw:?}");
    });
}

#[test]
fn wrong_type_in_every_family() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let l = format!("{p}wt:list");
        db.rpush(&l, "x").unwrap();
        for e in [
            db.hset(&l, "f", "v").unwrap_err(),
            db.sadd(&l, "m").unwrap_err(),
            db.zadd(&l, "m", 1.0).unwrap_err(),
            db.get::<Option<String>>(&l).unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::WrongType, "{e}");
            assert!(e.command().is_some(), "{e}");
        }
    });
}
