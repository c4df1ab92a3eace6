//! `close()` and dropping the last handle end every stream a service may be looping on:
//! `events()` receivers (a `for e in events.iter()` watcher thread), subscriptions'
//! `iter`/`recv`, and callback subscriptions. Against the in-process fake (feature
//! `testkit`), so no real server is needed.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::support::optin::opt_in;
use crossbeam_channel::RecvTimeoutError;
use resilient_redis::testkit::FakeServer;
use resilient_redis::{Client, ClientEvent, ErrorKind, MessageKind, ServerCommands};

/// How long a stream may take to end after `close` or the drop: generous for a loaded
/// 2-core CI machine, short next to "never".
const DEADLINE: Duration = Duration::from_secs(5);

/// A watcher thread doing what a service does: `for e in events.iter()`. It reports
/// every event on `seen` and returns how many it saw once the loop ends.
fn watcher(client: &Client) -> (JoinHandle<usize>, mpsc::Receiver<()>, mpsc::Receiver<()>) {
    let events = client.events();
    let (seen_tx, seen) = mpsc::channel();
    let (ended_tx, ended) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let mut count = 0;
        for e in events.iter() {
            if matches!(e, ClientEvent::ConnectionFailed { .. }) {
                count += 1;
                let _ = seen_tx.send(());
            }
        }
        let _ = ended_tx.send(());
        count
    });
    (thread, seen, ended)
}

/// Proves the watcher is live: a connection loss reaches it.
fn provoke_an_event(server: &FakeServer, seen: &mpsc::Receiver<()>) {
    server.close_all_connections();
    assert!(
        seen.recv_timeout(DEADLINE).is_ok(),
        "the watcher saw no ConnectionFailed: it is not listening"
    );
}

fn connect(server: &FakeServer) -> Client {
    Client::connect(opt_in(
        format!("{},connectTimeout=2000", server.addr()).as_str(),
    ))
    .expect("connect to the fake")
}

#[test]
fn close_ends_an_events_watcher_and_later_receivers() {
    let server = FakeServer::start().unwrap();
    let client = connect(&server);
    let (thread, seen, ended) = watcher(&client);
    provoke_an_event(&server, &seen);
    assert!(
        ended.try_recv().is_err(),
        "the watcher ended before the close"
    );

    client.close();
    assert!(
        ended.recv_timeout(DEADLINE).is_ok(),
        "the watcher's `for e in events.iter()` did not end after close()"
    );
    assert!(thread.join().unwrap() >= 1);

    // A receiver asked for after the close reports the end at once, not a timeout.
    let late = client.events();
    assert!(matches!(
        late.recv_timeout(DEADLINE),
        Err(RecvTimeoutError::Disconnected)
    ));
    // The client handle still exists: the stream ended because of close, not a drop.
    assert!(client.database().ping().is_err());
}

#[test]
fn dropping_the_last_handle_ends_an_events_watcher() {
    let server = FakeServer::start().unwrap();
    let client = connect(&server);
    let db = client.database();
    db.ping().unwrap();
    let (thread, seen, ended) = watcher(&client);
    provoke_an_event(&server, &seen);

    // A `Database` is a handle too: the stream lives on until it is dropped as well.
    drop(client);
    assert_eq!(
        ended.recv_timeout(Duration::from_millis(200)),
        Err(mpsc::RecvTimeoutError::Timeout),
        "the watcher ended while a Database still held the client"
    );
    drop(db);
    assert!(
        ended.recv_timeout(DEADLINE).is_ok(),
        "the watcher did not end after the last handle was dropped"
    );
    thread.join().unwrap();
}

/// Joins `thread`, failing the test when it has not ended within `DEADLINE`.
fn join_within<T: Send + 'static>(thread: JoinHandle<T>, what: &str) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(thread.join());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => panic!("{what} panicked"),
        Err(_) => panic!("{what} did not end after close()"),
    }
}

#[test]
fn close_ends_subscription_iterators_receivers_and_callbacks() {
    let server = FakeServer::start().unwrap();
    let client = connect(&server);
    let subscriber = client.subscriber();

    // A thread iterating over a subscription, as a service's consumer loop does.
    let news = subscriber.subscribe("news").unwrap();
    let (got_tx, got) = mpsc::channel();
    let iterating = std::thread::spawn(move || {
        for m in news.iter() {
            let _ = got_tx.send(m.payload);
        }
        // After the loop, `recv` says why: the client is closed.
        news.recv().map(|m| m.payload).map_err(|e| e.kind())
    });
    // A thread blocked in `recv`.
    let alerts = subscriber.subscribe("alerts").unwrap();
    let receiving = std::thread::spawn(move || alerts.recv().map_err(|e| e.kind()));
    // A callback subscription: its thread owns `alive`; the thread's end drops it.
    let (alive, callback_ended) = mpsc::channel::<()>();
    let callback = subscriber
        .subscribe_with(MessageKind::Channel, "audit", move |_| {
            let _ = alive.send(());
        })
        .unwrap();

    // The consumers are live before the close.
    assert_eq!(subscriber.publish("news", "hello").unwrap(), 1);
    assert_eq!(got.recv_timeout(DEADLINE).unwrap(), b"hello");

    client.close();
    assert_eq!(
        join_within(iterating, "the subscription's iter() loop"),
        Err(ErrorKind::Closed)
    );
    assert_eq!(
        join_within(receiving, "a subscription's recv()"),
        Err(ErrorKind::Closed)
    );
    assert_eq!(
        callback_ended.recv_timeout(DEADLINE),
        Err(mpsc::RecvTimeoutError::Disconnected),
        "the callback thread did not end after close()"
    );
    drop(callback);

    // Subscribing after the close fails at once, as closed, not after a timeout.
    let started = std::time::Instant::now();
    let e = subscriber.subscribe("later").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
    assert!(started.elapsed() < DEADLINE);
}

#[test]
fn group_close_and_drop_end_a_group_events_watcher() {
    use resilient_redis::availability::{Group, GroupEvent, GroupOptions, Member};
    let (a, b) = (FakeServer::start().unwrap(), FakeServer::start().unwrap());
    for close in [true, false] {
        let group = Group::connect(
            vec![
                Member::new(opt_in(a.url())).with_name("a").with_weight(2),
                Member::new(opt_in(b.url())).with_name("b"),
            ],
            GroupOptions::default(),
        )
        .unwrap();
        let events = group.events();
        let watcher = std::thread::spawn(move || {
            events
                .iter()
                .filter(|e| matches!(e, GroupEvent::ActiveChanged { .. }))
                .count()
        });
        if close {
            group.close();
            // A receiver taken after the close has ended already.
            assert!(matches!(
                group.events().recv_timeout(DEADLINE),
                Err(RecvTimeoutError::Disconnected)
            ));
        } else {
            drop(group);
        }
        join_within(watcher, "the group events watcher");
    }
}

#[test]
fn the_channel_types_are_re_exported_and_the_prelude_has_the_error_types() {
    use resilient_redis::channel::{Receiver, RecvTimeoutError as Re};
    use resilient_redis::prelude::*;
    let server = FakeServer::start().unwrap();
    let client = connect(&server);
    let events: Receiver<ClientEvent> = client.events();
    client.close();
    assert!(matches!(
        events.recv_timeout(DEADLINE),
        Err(Re::Disconnected)
    ));
    let e: Error = client.database().ping().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}
