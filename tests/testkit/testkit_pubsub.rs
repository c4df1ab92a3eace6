//! Pub/sub on the fake, over raw sockets (RESP3 push frames and RESP2 arrays); the
//! control experiments come first: plain, pattern and sharded delivery with nothing
//! else going on.

use crate::support;

use std::time::Duration;

use resilient_redis::resp::Value;
use resilient_redis::testkit::FakeServer;
use support::raw::{b, push_items, Raw};

#[test]
fn sharded_publish_reaches_a_sharded_subscriber_with_no_migration_at_all() {
    let server = FakeServer::start().unwrap();
    let mut sub = Raw::resp3(server.addr());
    let mut publisher = Raw::connect(server.addr());
    assert_eq!(
        sub.cmd(&["SSUBSCRIBE", "orders"]),
        Value::Push(vec![b("ssubscribe"), b("orders"), Value::Int(1)])
    );
    assert_eq!(
        publisher.cmd(&["SPUBLISH", "orders", "hello"]),
        Value::Int(1)
    );
    assert_eq!(
        sub.read(),
        Value::Push(vec![b("smessage"), b("orders"), b("hello")])
    );
    // A plain PUBLISH does not reach a sharded subscriber.
    assert_eq!(publisher.cmd(&["PUBLISH", "orders", "x"]), Value::Int(0));
    assert!(sub.read_within(Duration::from_millis(50)).is_none());
    assert_eq!(
        sub.cmd(&["SUNSUBSCRIBE"]),
        Value::Push(vec![b("sunsubscribe"), b("orders"), Value::Int(0)])
    );
    assert_eq!(
        publisher.cmd(&["SPUBLISH", "orders", "gone"]),
        Value::Int(0)
    );
}

#[test]
fn publish_reaches_channel_and_pattern_subscribers_in_both_protocols() {
    let server = FakeServer::start().unwrap();
    let mut r3 = Raw::resp3(server.addr());
    let mut r2 = Raw::connect(server.addr());
    let mut publisher = Raw::connect(server.addr());
    r3.send(&["SUBSCRIBE", "news", "sport"]);
    assert_eq!(
        r3.read(),
        Value::Push(vec![b("subscribe"), b("news"), Value::Int(1)])
    );
    assert_eq!(
        r3.read(),
        Value::Push(vec![b("subscribe"), b("sport"), Value::Int(2)])
    );
    assert_eq!(
        r2.cmd(&["PSUBSCRIBE", "n*"]),
        Value::Array(vec![b("psubscribe"), b("n*"), Value::Int(1)])
    );
    assert_eq!(publisher.cmd(&["PUBLISH", "news", "hi"]), Value::Int(2));
    assert_eq!(
        r3.read(),
        Value::Push(vec![b("message"), b("news"), b("hi")])
    );
    assert_eq!(
        r2.read(),
        Value::Array(vec![b("pmessage"), b("n*"), b("news"), b("hi")])
    );
    assert_eq!(server.connections()[0].subscriptions, 2);
    assert_eq!(
        r2.cmd(&["PUNSUBSCRIBE", "n*"]),
        Value::Array(vec![b("punsubscribe"), b("n*"), Value::Int(0)])
    );
    // UNSUBSCRIBE with nothing subscribed still answers, with a null channel.
    assert_eq!(
        r2.cmd(&["UNSUBSCRIBE"]),
        Value::Array(vec![b("unsubscribe"), Value::Nil, Value::Int(0)])
    );
}

#[test]
fn a_confirmation_precedes_the_messages_it_enables_even_when_replies_are_delayed() {
    let server = FakeServer::start().unwrap();
    let mut sub = Raw::resp3(server.addr());
    let mut publisher = Raw::connect(server.addr());
    server.delay_replies(Some(Duration::from_millis(200)));
    sub.send(&["SUBSCRIBE", "ch"]);
    assert!(server.wait_for(
        |s| s.connections().iter().any(|c| c.subscriptions == 1),
        Duration::from_secs(5)
    ));
    publisher.cmd(&["PUBLISH", "ch", "m"]);
    let first = sub.read();
    assert_eq!(push_items(&first)[0], b("subscribe"));
    assert_eq!(sub.read(), Value::Push(vec![b("message"), b("ch"), b("m")]));
}
