//! Pub/sub: plain, pattern and sharded subscriptions, a callback subscription, and a
//! subscription that survives its connection being dropped.
//!
//! `cargo run --example pubsub` runs against an in-process `testkit::FakeServer`
//! (feature `testkit`, on for the crate's examples). Give a URL to use your own server
//! (Redis 7 or later, for sharded pub/sub):
//! `cargo run --example pubsub -- redis://127.0.0.1:6379`; the reconnect is then forced
//! with `CLIENT KILL TYPE pubsub`, which drops every subscriber connection of that
//! server, this example's included.
//!
//! The example checks what it shows and exits non-zero if a message is missing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::pubsub::{Message, MessageKind};
use resilient_redis::testkit::FakeServer;
use resilient_redis::ClientEvent;

const WAIT: Duration = Duration::from_secs(5);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1);
    let fake = match url {
        Some(_) => None,
        None => Some(FakeServer::start()?),
    };
    let url = url.unwrap_or_else(|| fake.as_ref().map(FakeServer::url).unwrap_or_default());
    println!("server: {url}");
    let client = Client::connect(url.as_str())?;
    let events = client.events();
    // One Subscriber carries every subscription of the client on one dedicated
    // connection per server; publishing goes through the ordinary connection.
    let sub = client.subscriber();

    // Plain: SUBSCRIBE returns once the server confirmed it, so nothing published
    // after it can be missed.
    let news = sub.subscribe("news")?;
    let receivers = sub.publish("news", "hello, subscribers")?;
    let msg = news.recv_timeout(WAIT)?;
    println!("plain    {} (PUBLISH reached {receivers})", describe(&msg));
    expect(&msg, "news", "hello, subscribers")?;

    // Pattern: glob-style; the message says which pattern matched.
    let orders = sub.psubscribe("orders.*")?;
    sub.publish("orders.eu", "order 1001 shipped")?;
    let msg = orders.recv_timeout(WAIT)?;
    println!("pattern  {}", describe(&msg));
    expect(&msg, "orders.eu", "order 1001 shipped")?;

    // Sharded (Redis 7): SSUBSCRIBE/SPUBLISH, routed by the channel's slot, so in a
    // cluster a message only travels to the shard that owns the channel.
    let shard = sub.ssubscribe("{tenant:9}.alerts")?;
    sub.spublish("{tenant:9}.alerts", "disk at 91%")?;
    let msg = shard.recv_timeout(WAIT)?;
    println!("sharded  {}", describe(&msg));
    expect(&msg, "{tenant:9}.alerts", "disk at 91%")?;

    // A callback, run on a thread of its own (never the connection's reader thread,
    // so a slow callback cannot stall replies). Dropping the guard unsubscribes.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let guard = sub.subscribe_with(MessageKind::Channel, "audit", move |m: Message| {
        sink.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(m.payload_str().into_owned());
    })?;
    for i in 1..=3 {
        sub.publish("audit", format!("event {i}"))?;
    }
    wait_for("the callback to see 3 messages", || {
        seen.lock().map(|v| v.len() == 3).unwrap_or(false)
    })?;
    println!(
        "callback got {:?}",
        seen.lock().map(|v| v.clone()).unwrap_or_default()
    );
    drop(guard);

    // The connection under the subscriptions goes away; the client reconnects and
    // re-subscribes every name by itself. Publish until the new subscription is in
    // place (PUBLISH returns how many subscribers got it).
    let started = Instant::now();
    match &fake {
        Some(server) => {
            println!("\nthe server drops every connection (the subscriber's and the ordinary one)");
            server.close_all_connections();
        }
        None => {
            let killed: i64 = client
                .database()
                .cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("pubsub")
                .query()?;
            println!("CLIENT KILL TYPE pubsub closed {killed} connection(s)");
        }
    }
    wait_for("the subscription to be re-established", || {
        sub.publish("news", "after the reconnect").unwrap_or(0) >= 1
    })?;
    let msg = news.recv_timeout(WAIT)?;
    println!(
        "plain    {} ({:.0?} after the drop)",
        describe(&msg),
        started.elapsed()
    );
    expect(&msg, "news", "after the reconnect")?;
    sub.publish("orders.us", "order 1002 shipped")?;
    let msg = orders.recv_timeout(WAIT)?;
    println!("pattern  {}", describe(&msg));
    expect(&msg, "orders.us", "order 1002 shipped")?;
    for e in events.try_iter() {
        match e {
            ClientEvent::ConnectionFailed {
                endpoint, failure, ..
            } => println!("event    connection to {endpoint} failed ({failure:?})"),
            ClientEvent::ConnectionRestored { endpoint } => {
                println!("event    connection to {endpoint} restored")
            }
            other => println!("event    {other:?}"),
        }
    }
    println!(
        "\nmessages dropped because a queue was full: {}",
        news.dropped() + orders.dropped() + shard.dropped()
    );
    println!("{}", client.status());
    client.close();
    Ok(())
}

fn describe(m: &Message) -> String {
    match &m.pattern {
        Some(p) => format!(
            "{} (matched {}): {}",
            m.channel_str(),
            String::from_utf8_lossy(p),
            m.payload_str()
        ),
        None => format!("{}: {}", m.channel_str(), m.payload_str()),
    }
}

fn expect(m: &Message, channel: &str, payload: &str) -> Result<(), String> {
    if m.channel_str() == channel && m.payload_str() == payload {
        Ok(())
    } else {
        Err(format!(
            "expected {channel}: {payload}, got {}",
            describe(m)
        ))
    }
}

/// Polls `done` every 20 ms until it holds, for up to `WAIT`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + WAIT;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
