//! redis-rs's `Commands` through our `Database` (feature `redis-compat`), on a group
//! across a SIGKILL failover.
#![cfg(feature = "redis-compat")]

use crate::support;

use std::time::Duration;

use redis::Commands;
use resilient_redis::availability::{Group, GroupOptions, Member};
use support::optin::opt_in;
use support::{wait_until, RedisServer};

#[test]
fn redis_rs_commands_run_unchanged_through_a_group_failover() {
    let Some(mut a) = RedisServer::start() else {
        return;
    };
    let Some(b) = RedisServer::start() else {
        return;
    };
    let member = |s: &RedisServer, name: &str, weight: u32| {
        Member::new(opt_in(format!(
            "{},syncTimeout=1000,connectTimeout=500",
            s.addr()
        )))
        .with_name(name)
        .with_weight(weight)
    };
    let group = Group::connect(
        vec![member(&a, "a", 2), member(&b, "b", 1)],
        GroupOptions::default(),
    )
    .unwrap();
    let mut con = group.database();
    let _: () = con.set("rc:k", "v1").unwrap();
    let v: String = con.get("rc:k").unwrap();
    assert_eq!(v, "v1");
    let n: i64 = con.incr("rc:n", 5).unwrap();
    assert_eq!(n, 5);
    let _: () = con.hset("rc:h", "f", 1).unwrap();
    let h: std::collections::HashMap<String, i64> = con.hgetall("rc:h").unwrap();
    assert_eq!(h["f"], 1);
    let (x, y): (i64, i64) = redis::pipe()
        .atomic()
        .incr("rc:p", 1)
        .incr("rc:p", 1)
        .query(&mut con)
        .unwrap();
    assert_eq!((x, y), (1, 2));
    let err = con.lpush::<_, _, i64>("rc:k", "x").unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"));

    a.kill();
    assert!(wait_until(Duration::from_secs(10), || {
        group.active().is_some_and(|m| m.name() == "b")
    }));
    // On the new member: the same code keeps working.
    let _: () = con.set("rc:k", "v2").unwrap();
    let v: String = con.get("rc:k").unwrap();
    assert_eq!(v, "v2");
    let direct = redis::Client::open(format!("redis://{}", b.addr())).unwrap();
    let seen: String = direct.get_connection().unwrap().get("rc:k").unwrap();
    assert_eq!(seen, "v2");
}
