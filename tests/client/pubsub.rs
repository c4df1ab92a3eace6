//! Pub/sub against a real redis-server: plain, pattern and sharded subscriptions,
//! recovery after a restart, and slow consumers.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use resilient_redis::config::Protocol;
use resilient_redis::prelude::*;
use resilient_redis::pubsub::SUBSCRIPTION_QUEUE_BOUND as BOUND;
use resilient_redis::MessageKind;
use support::optin::opt_in;
use support::{wait_until, RedisServer};

const WAIT: Duration = Duration::from_secs(5);

fn client(server: &RedisServer, protocol: Protocol) -> Client {
    Client::connect(opt_in(
        Options::default()
            .endpoint(&server.addr())
            .protocol(protocol)
            .reconnect_delay(Duration::from_millis(20), Duration::from_millis(200))
            .keep_alive(Duration::from_millis(200)),
    ))
    .unwrap()
}

#[test]
fn plain_pattern_and_sharded_subscriptions_deliver_in_both_protocols() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        let c = client(&server, protocol);
        let sub = c.subscriber();
        let news = sub.subscribe("news").unwrap();
        let pattern = sub.psubscribe("news.*").unwrap();
        let sharded = sub.ssubscribe("orders:{7}").unwrap();
        assert_eq!(sub.publish("news", "n1").unwrap(), 1);
        assert_eq!(sub.publish("news.eu", "p1").unwrap(), 1);
        assert_eq!(sub.spublish("orders:{7}", "s1").unwrap(), 1);
        let m = news.recv_timeout(WAIT).unwrap();
        assert_eq!(
            (m.kind, m.channel_str().as_ref(), m.payload_str().as_ref()),
            (MessageKind::Channel, "news", "n1")
        );
        let m = pattern.recv_timeout(WAIT).unwrap();
        assert_eq!(m.pattern.as_deref(), Some(&b"news.*"[..]));
        assert_eq!(m.channel, b"news.eu");
        let m = sharded.recv_timeout(WAIT).unwrap();
        assert_eq!(
            (m.kind, m.payload_str().as_ref()),
            (MessageKind::Sharded, "s1")
        );
        // Commands on the same client are unaffected by the subscriptions.
        c.database().set("k", "v").unwrap();
        // Heartbeats on the subscription connection (keepAlive 200 ms) are answered with
        // an array pong that must not be taken for a message or break the connection.
        let pings = |db: &Database| -> u64 {
            let stats: String = db.cmd("INFO").arg("commandstats").query().unwrap();
            stats
                .lines()
                .find_map(|l| l.strip_prefix("cmdstat_ping:calls="))
                .and_then(|rest| rest.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        let before = pings(&c.database());
        assert!(wait_until(WAIT, || pings(&c.database()) >= before + 2));
        assert_eq!(sub.publish("news", "n2").unwrap(), 1);
        assert_eq!(news.recv_timeout(WAIT).unwrap().payload, b"n2");
        assert!(news.try_recv().is_none());
        drop(news);
        assert!(wait_until(WAIT, || sub.publish("news", "gone").unwrap() == 0));
    }
}

#[test]
fn subscriptions_come_back_after_the_server_is_killed_and_restarted() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let c = client(&server, Protocol::Resp3);
    let sub = c.subscriber();
    let s = sub.subscribe("restart:ch").unwrap();
    let p = sub.psubscribe("restart:*").unwrap();
    server.restart();
    // Delivery resumes by itself once re-subscribed; publish until it arrives.
    let delivered = wait_until(Duration::from_secs(10), || {
        sub.publish("restart:ch", "again").is_ok_and(|n| n == 2)
    });
    assert!(delivered, "not re-subscribed after restart");
    assert_eq!(s.recv_timeout(WAIT).unwrap().payload, b"again");
    assert_eq!(p.recv_timeout(WAIT).unwrap().payload, b"again");
}

#[test]
fn a_slow_consumer_does_not_delay_other_subscriptions_or_commands() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let c = client(&server, Protocol::Resp3);
    let sub = c.subscriber();
    let slow = sub.subscribe("busy").unwrap();
    let fast = sub.subscribe("busy").unwrap();
    let total = BOUND + 500;
    let db = c.database();
    let batch = db.batch();
    for i in 0..total {
        batch.add::<i64>(resilient_redis::Cmd::new("PUBLISH").arg("busy").arg(i));
    }
    batch.execute().unwrap();
    // The fast reader gets everything although the slow one reads nothing.
    let started = Instant::now();
    for i in 0..total {
        let m = fast.recv_timeout(WAIT).unwrap();
        assert_eq!(m.payload_str(), i.to_string());
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    db.ping().unwrap();
    // The slow one kept the newest BOUND messages and counted what it lost.
    assert_eq!(slow.dropped(), 500);
    assert_eq!(slow.try_recv().unwrap().payload_str(), "500");
}

#[test]
fn callback_subscriptions_run_off_the_reader_thread() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let c = client(&server, Protocol::Resp2);
    let sub = c.subscriber();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let guard = sub
        .subscribe_with(MessageKind::Channel, "cb", move |m| {
            let name = std::thread::current().name().unwrap_or("").to_string();
            assert!(name.starts_with("rr-pubsub-cb"), "{name}");
            assert_eq!(m.channel, b"cb");
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    for _ in 0..10 {
        sub.publish("cb", "x").unwrap();
    }
    assert!(wait_until(WAIT, || seen.load(Ordering::SeqCst) == 10));
    drop(guard);
    assert!(wait_until(WAIT, || sub.publish("cb", "x").unwrap() == 0));
}
