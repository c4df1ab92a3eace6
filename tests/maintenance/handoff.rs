//! The MOVING handoff end to end against two fakes (A: the proxy being retired, B: its
//! replacement) behind one scripted name, with windows scaled down from the measured
//! 15 s (DNS at +4.4..9.7 s, the close 0.7..4.1 s after the window) for test speed.
//!
//! With the fake's own close disabled, the only thing that can replace a connection is
//! our handoff: exactly one recycle per MOVING (a re-sent one included), no failed
//! command from 8 threads, `MaintenanceHandoff` reported and nothing else. With the
//! close enabled, we move before it.
//!
//! Every scenario runs over plain TCP and over TLS (`scenario::tcp`, `scenario::tls`):
//! both fakes' certificates come from one issuer the client trusts, verification on,
//! so the connection a handoff opens is verified like the first one.

use crate::over_both_transports;
use crate::support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;
use resilient_redis::maintenance::{
    HandoffDecision, HandoffOutcome, HandoffReport, NotificationKind,
};
use resilient_redis::prelude::*;
use resilient_redis::testkit::{Answer, FakeServer, Notification, ScriptedResolver};
use resilient_redis::{ClientEvent, FailureKind};
use support::lanes::two_callers;
use support::maintenance::{status, wait_opted_in, SOON};
use support::optin::opt_in;
use support::transport::Transport;
use support::wait_until;

const NAME: &str = "db.test";

over_both_transports!(
    dns_trailing_the_moving_one_recycle_no_failed_command_close_disabled,
    with_the_close_enabled_we_move_before_it,
    several_records_step_sideways_at_once_and_reconnects_avoid_the_retiring_address,
    a_moving_naming_a_new_endpoint_moves_every_connection_there,
    an_address_no_longer_advertised_after_migrated_is_left_before_the_silent_close,
    a_record_that_never_moves_is_left_to_the_close_and_the_reconnect,
    closing_the_client_mid_handoff_ends_its_worker,
    failed_over_checks_the_address_too_and_the_blocking_pool_follows,
    a_handoff_closes_the_idle_lane_and_the_next_one_dials_the_new_address,
);

fn client(t: &Transport, dns: &ScriptedResolver, keys: &str) -> Client {
    let mut o = t.options(&format!(
        "{NAME}:12000,maintNotifications=enabled,syncTimeout=3000,reconnectMin=20,{keys}"
    ));
    o.resolver = Some(Arc::new(dns.clone()));
    Client::connect(opt_in(o)).unwrap()
}

/// Two fakes behind `NAME` (A, being retired, and B), their certificates naming it.
fn two(t: &Transport) -> (FakeServer, FakeServer) {
    (t.server_named(&[NAME]), t.server_named(&[NAME]))
}

/// A client of `NAME` (resolving to `addrs`) opted in to notifications, and the
/// resolver that scripts the name.
fn named(t: &Transport, addrs: &[SocketAddr], keys: &str) -> (ScriptedResolver, Client) {
    let dns = ScriptedResolver::new();
    dns.set(NAME, Answer::addrs(addrs.iter().copied()));
    let client = client(t, &dns, keys);
    assert!(wait_opted_in(&client, SOON));
    (dns, client)
}

/// From now, the record names `before`, and `after` once `at` has passed.
fn move_record(dns: &ScriptedResolver, before: &[SocketAddr], after: &[SocketAddr], at: Duration) {
    dns.restart();
    dns.script(
        NAME,
        vec![
            (Duration::ZERO, Answer::addrs(before.iter().copied())),
            (at, Answer::addrs(after.iter().copied())),
        ],
    );
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Runs `during` while 8 threads keep sending commands; returns how many succeeded,
/// and panics naming the first errors if any command failed.
fn under_load(client: &Client, during: impl FnOnce()) -> u64 {
    let stop = AtomicBool::new(false);
    let ok = AtomicU64::new(0);
    let errors = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..8 {
            let db = client.database();
            let (stop, ok, errors) = (&stop, &ok, &errors);
            s.spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    match db.set(format!("k{t}"), n) {
                        Ok(()) => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => errors.lock().unwrap().push(format!("thread {t}: {e}")),
                    }
                }
            });
        }
        // A failed assertion in `during` must still stop the load, or the scope would
        // wait for the eight threads forever.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(during));
        stop.store(true, Ordering::Relaxed);
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    });
    let errors = errors.into_inner().unwrap();
    let ok = ok.into_inner();
    assert!(
        errors.is_empty(),
        "{} commands failed ({ok} succeeded): {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    ok
}

/// Every connection failure and handoff report queued so far.
fn failures_and_handoffs(events: &Receiver<ClientEvent>) -> (Vec<FailureKind>, Vec<HandoffReport>) {
    let (mut failures, mut handoffs) = (Vec::new(), Vec::new());
    for e in events.try_iter() {
        match e {
            ClientEvent::ConnectionFailed { failure, .. } => failures.push(failure),
            ClientEvent::Handoff(r) => handoffs.push(r),
            _ => {}
        }
    }
    (failures, handoffs)
}

fn subscribed_on(server: &FakeServer) -> bool {
    server.connections().iter().any(|c| c.subscriptions > 0)
}

fn dns_trailing_the_moving_one_recycle_no_failed_command_close_disabled(t: Transport) {
    let (a, b) = two(&t);
    a.set_moving_close(false);
    a.set_moving_slack(Duration::from_millis(100));
    let (dns, client) = named(&t, &[a.addr()], "");
    let events = client.events();
    let sub = client.subscriber();
    let mut id = 0;
    let ok = under_load(&client, || {
        // 5 s, not 15, with room for a loaded machine to drain inside the window.
        id = a.notify(Notification::moving(5));
        // Opened inside the window while the record still names A: A re-sends the
        // MOVING to it right after the opt-in. One event, one handoff.
        let news = sub.subscribe("news").unwrap();
        assert!(subscribed_on(&a), "the subscription opened on A");
        // The record trails the MOVING: it moves only once the handoff has looked it
        // up and found the retiring address alone (moved on a clock instead, a loaded
        // machine's late first look-up found B already: a step sideways, not this).
        assert!(wait_until(SOON, || dns
            .lookup_threads()
            .iter()
            .any(|t| t.starts_with("rr-handoff"))));
        dns.set(NAME, Answer::addrs([b.addr()]));
        assert!(wait_until(Duration::from_secs(10), || {
            status(&client).handoffs.recycles == 1
        }));
        assert!(wait_until(SOON, || subscribed_on(&b)), "re-subscribed on B");
        assert!(wait_until(SOON, || a.connections_open() == 0));
        sub.publish("news", "after").unwrap();
        let m = news.recv_timeout(SOON).unwrap();
        assert_eq!(m.payload_str(), "after");
    });
    assert!(ok > 0);
    // The window ends; nothing else happens. A copy of the MOVING on B's connection
    // (same id) is no new event either.
    assert!(wait_until(SOON, || !a.moving_window_open()));
    b.notify_with_id(Notification::moving(5), id);
    b.notify(Notification::migrating(1, &["1"]));
    assert!(wait_until(SOON, || status(&client).in_force
        == resilient_redis::MaintenanceKind::Migrating));
    let st = status(&client);
    assert_eq!((st.handoffs.moving, st.handoffs.recycles), (1, 1), "{st:?}");
    assert_eq!(st.handoffs.record_moved, 1);
    let (failures, handoffs) = failures_and_handoffs(&events);
    assert_eq!(
        failures,
        vec![FailureKind::MaintenanceHandoff; 2],
        "interactive and subscription, nothing else"
    );
    assert_eq!(handoffs.len(), 1);
    let h = &handoffs[0];
    assert!(matches!(
        h.outcome,
        HandoffOutcome::Decided(HandoffDecision::RecordMoved { .. })
    ));
    assert_eq!(
        (h.from, h.to, h.recycled),
        (Some(a.addr()), Some(b.addr()), true)
    );
    assert!(h.took < secs(5.0), "inside the window: {h}");
    assert_eq!(st.last_handoff.as_ref(), Some(h));
    let threads = dns.lookup_threads();
    assert!(threads.iter().any(|t| t.starts_with("rr-handoff")));
    assert!(
        threads
            .iter()
            .all(|t| !t.starts_with("rr-read") && !t.starts_with("rr-write")),
        "{threads:?}"
    );
}

fn with_the_close_enabled_we_move_before_it(t: Transport) {
    let (a, b) = two(&t);
    // 15 s scaled to 3 s: the least slack measured (0.7 s) becomes 0.14 s, DNS at
    // +4.4 s becomes +0.9 s.
    a.set_moving_slack(Duration::from_millis(140));
    let (dns, client) = named(&t, &[a.addr()], "");
    let events = client.events();
    let ok = under_load(&client, || {
        move_record(&dns, &[a.addr()], &[b.addr()], secs(0.9));
        a.notify(Notification::moving(3));
        assert!(wait_until(SOON, || status(&client).handoffs.recycles == 1));
        assert!(
            a.moving_window_open(),
            "moved before the server closed the window"
        );
        assert!(wait_until(SOON, || !a.moving_window_open()));
    });
    assert!(ok > 0);
    let (failures, _) = failures_and_handoffs(&events);
    assert_eq!(failures, vec![FailureKind::MaintenanceHandoff]);
    // One interactive connection on B, beside any lane the load opened (one may still
    // be dialling as the load stops).
    assert!(
        wait_until(SOON, || b.connections_open()
            == 1 + client.status().nodes[0].lanes_open),
        "{} connections on B, {}",
        b.connections_open(),
        client.status()
    );
}

fn several_records_step_sideways_at_once_and_reconnects_avoid_the_retiring_address(t: Transport) {
    let (a, b) = two(&t);
    a.set_moving_close(false);
    // Round robin naming both: the retiring one first, as the record keeps it.
    let (_dns, client) = named(&t, &[a.addr(), b.addr()], "");
    let sub = client.subscriber();
    let news = sub.subscribe("news").unwrap();
    assert!(subscribed_on(&a));
    a.notify(Notification::moving(15));
    assert!(wait_until(SOON, || status(&client).handoffs.recycles == 1));
    let st = status(&client);
    assert_eq!(st.handoffs.stepped_sideways, 1);
    assert!(
        st.last_handoff.unwrap().took < Duration::from_secs(3),
        "at once, not after DNS"
    );
    // The subscription reconnects through the name, which still lists A first.
    assert!(wait_until(SOON, || subscribed_on(&b)));
    // The fake counts a connection until its thread has read the close.
    assert!(wait_until(SOON, || a.connections_open() == 0));
    sub.publish("news", "x").unwrap();
    assert_eq!(news.recv_timeout(SOON).unwrap().payload_str(), "x");
}

/// The host name a `MOVING` names for B; only B's certificate carries it (as a
/// node's certificate names its own host, not necessarily the database's).
const NEW_NAME: &str = "b.db.test";

fn a_moving_naming_a_new_endpoint_moves_every_connection_there(t: Transport) {
    let a = t.server_named(&[NAME]);
    let b = t.server_named(&[NEW_NAME]);
    a.set_moving_close(false);
    let (dns, client) = named(&t, &[a.addr()], "");
    dns.set(NEW_NAME, Answer::addrs([b.addr()]));
    let events = client.events();
    let sub = client.subscriber();
    let news = sub.subscribe("news").unwrap();
    assert!(subscribed_on(&a));
    let ok = under_load(&client, || {
        a.notify(Notification::Moving {
            seconds: 5,
            endpoint: Some(format!("{NEW_NAME}:{}", b.port())),
        });
        assert!(
            wait_until(Duration::from_secs(10), || status(&client)
                .handoffs
                .recycles
                == 1),
            "{:?}",
            status(&client)
        );
        assert!(wait_until(SOON, || subscribed_on(&b)), "re-subscribed on B");
        assert!(wait_until(SOON, || a.connections_open() == 0));
    });
    assert!(ok > 0);
    let st = status(&client);
    assert_eq!(st.handoffs.named_endpoint, 1, "{st:?}");
    let h = st.last_handoff.expect("a handoff report");
    assert!(
        matches!(
            h.outcome,
            HandoffOutcome::Decided(HandoffDecision::ConnectTo(_))
        ),
        "{h}"
    );
    assert_eq!(
        (h.from, h.to, h.recycled),
        (Some(a.addr()), Some(b.addr()), true)
    );
    let (failures, _) = failures_and_handoffs(&events);
    assert!(
        failures
            .iter()
            .all(|f| *f == FailureKind::MaintenanceHandoff),
        "{failures:?}"
    );
    // The node keeps dialling the named endpoint: a reconnect lands on B again.
    b.close_all_connections();
    assert!(wait_until(SOON, || subscribed_on(&b)));
    client.database().set("k", "v").unwrap();
    assert_eq!(a.connections_open(), 0);
    sub.publish("news", "after").unwrap();
    assert_eq!(news.recv_timeout(SOON).unwrap().payload_str(), "after");
}

/// Two proxies A and B behind one name, and a client opted in, connected to A (listed
/// first) with a 2 s post-event tail.
fn two_proxies_one_name(t: &Transport) -> (FakeServer, FakeServer, ScriptedResolver, Client) {
    let (a, b) = two(t);
    let (dns, client) = named(t, &[a.addr(), b.addr()], "maintPostEventRelaxed=2");
    (a, b, dns, client)
}

/// The record stops naming A 0.3 s from now (a shrink drops the node from DNS ~5 s
/// after the completion, scaled down).
fn drop_from_dns_soon(dns: &ScriptedResolver, a: &FakeServer, b: &FakeServer) {
    move_record(dns, &[a.addr(), b.addr()], &[b.addr()], secs(0.3));
}

fn an_address_no_longer_advertised_after_migrated_is_left_before_the_silent_close(t: Transport) {
    let (a, b, dns, client) = two_proxies_one_name(&t);
    let events = client.events();
    assert_eq!(a.connections_open(), 1);
    // MIGRATED lands ~5 s before DNS drops the node (scaled: 0.3 s).
    drop_from_dns_soon(&dns, &a, &b);
    a.notify(Notification::migrated(&["1"]));
    assert!(wait_until(SOON, || status(&client)
        .handoffs
        .no_longer_advertised
        == 1));
    assert_eq!(
        status(&client).last_handoff.unwrap().outcome,
        HandoffOutcome::NoLongerAdvertised(b.addr())
    );
    assert!(wait_until(SOON, || a.connections_open() == 0));
    client.database().set("k", "v").unwrap();
    assert_eq!(b.connections_open(), 1);

    // "Cannot tell" never recycles: a MIGRATED while DNS fails ends with nothing done.
    dns.set(NAME, Answer::Fail);
    b.notify_with_id(Notification::migrated(&["2"]), 5);
    assert!(wait_until(SOON, || status(&client)
        .last_handoff
        .is_some_and(|h| h.outcome == HandoffOutcome::StillAdvertised)));
    assert_eq!(status(&client).handoffs.recycles, 1);
    let (failures, _) = failures_and_handoffs(&events);
    assert_eq!(failures, vec![FailureKind::MaintenanceHandoff]);
}

fn a_record_that_never_moves_is_left_to_the_close_and_the_reconnect(t: Transport) {
    let a = t.server_named(&[NAME]);
    a.set_moving_slack(Duration::from_millis(100));
    let (_dns, client) = named(&t, &[a.addr()], "");
    let events = client.events();
    a.notify(Notification::moving(1));
    assert!(wait_until(SOON, || status(&client)
        .last_handoff
        .is_some_and(|h| matches!(
            h.outcome,
            HandoffOutcome::Decided(HandoffDecision::StillStale { .. })
        ))));
    let st = status(&client);
    assert_eq!((st.handoffs.still_stale, st.handoffs.recycles), (1, 0));
    // The server closes at the end of the window; the reconnect resolves then.
    let restored = wait_until(SOON, || {
        events
            .try_iter()
            .any(|e| matches!(e, ClientEvent::ConnectionRestored { .. }))
    });
    assert!(restored, "reconnected after the close");
    client.database().set("k", "v").unwrap();
    let st = status(&client);
    assert_eq!((st.handoffs.moving, st.handoffs.recycles), (1, 0));
}

fn closing_the_client_mid_handoff_ends_its_worker(t: Transport) {
    // A name of its own: thread names are cut at 15 bytes ("rr-handoff zz.t").
    let a = t.server_named(&["zz.test"]);
    a.set_moving_close(false);
    let dns = ScriptedResolver::new();
    dns.set("zz.test", Answer::addrs([a.addr()]));
    let mut o = t.options("zz.test:1,maintNotifications=enabled");
    o.resolver = Some(Arc::new(dns.clone()));
    let client = Client::connect(opt_in(o)).unwrap();
    assert!(wait_opted_in(&client, SOON));
    a.notify(Notification::moving(60));
    assert!(wait_until(SOON, || !support::threads_named(
        "rr-handoff zz"
    )
    .is_empty()));
    assert!(wait_until(SOON, || dns.lookups("zz.test") >= 2), "polling");
    client.close();
    assert!(
        wait_until(SOON, || support::threads_named("rr-handoff zz").is_empty()),
        "the worker of a 60 s window ends with the client"
    );
    assert_eq!(status(&client).handoffs.recycles, 0);
}

fn failed_over_checks_the_address_too_and_the_blocking_pool_follows(t: Transport) {
    let (a, b, dns, client) = two_proxies_one_name(&t);
    let db = client.database();
    let blocking_idle = || client.status().nodes[0].blocking_idle;
    // A blocking command leaves its dedicated connection idle in the pool, on A.
    let popped: Option<(String, String)> = db.blpop("q", Duration::from_millis(10)).unwrap();
    assert_eq!(popped, None);
    assert_eq!(blocking_idle(), 1);
    assert_eq!(a.connections_open(), 2, "interactive and blocking");

    drop_from_dns_soon(&dns, &a, &b);
    // The handoff happens while an optimistic transaction holds one dedicated
    // connection (leased) and a second one sits idle.
    let committed = db
        .watch("w", |conn| {
            let _: Option<(String, String)> = db.blpop("q", Duration::from_millis(10))?;
            assert_eq!((blocking_idle(), a.connections_open()), (1, 3));
            a.notify(Notification::failed_over(&["1"]));
            assert!(wait_until(SOON, || status(&client)
                .handoffs
                .no_longer_advertised
                == 1));
            // The idle one closed at once; the leased one is left to finish.
            assert!(wait_until(SOON, || a.connections_open() == 1));
            assert_eq!(blocking_idle(), 0);
            let tx = conn.transaction();
            tx.set("w", "done");
            Ok(tx)
        })
        .unwrap();
    assert!(committed, "the leased connection finished its work");
    let last = status(&client).last_handoff.unwrap();
    assert_eq!(last.trigger, NotificationKind::FailedOver);
    assert_eq!(last.outcome, HandoffOutcome::NoLongerAdvertised(b.addr()));
    // Given back, the leased connection was closed rather than pooled: none left on A.
    assert!(wait_until(SOON, || a.connections_open() == 0));
    assert_eq!(blocking_idle(), 0);
    assert_eq!(db.rpush("q", "x").unwrap(), 1);
    let popped: Option<(String, String)> = db.blpop("q", Duration::from_secs(1)).unwrap();
    assert_eq!(popped, Some(("q".into(), "x".into())));
    assert_eq!(a.connections_open(), 0, "the new lease dialled B");
    assert_eq!(b.connections_open(), 2);
}

fn a_handoff_closes_the_idle_lane_and_the_next_one_dials_the_new_address(t: Transport) {
    let (a, b, dns, client) = two_proxies_one_name(&t);
    let db = client.database();
    // Replies 2 ms late: two callers are in flight together, and one takes a lane.
    a.delay_replies(Some(Duration::from_millis(2)));
    b.delay_replies(Some(Duration::from_millis(2)));
    let lanes_open = || client.status().nodes[0].lanes_open;
    two_callers(&db, || lanes_open() == 1);
    assert_eq!(a.connections_open(), 2, "the shared connection and a lane");

    drop_from_dns_soon(&dns, &a, &b);
    a.notify(Notification::failed_over(&["1"]));
    assert!(wait_until(SOON, || status(&client)
        .handoffs
        .no_longer_advertised
        == 1));
    // The idle lane went with the shared connection: nothing is left on A.
    assert!(wait_until(SOON, || a.connections_open() == 0));
    assert_eq!(lanes_open(), 0);
    // The next lane is opened on B.
    two_callers(&db, || lanes_open() == 1);
    assert_eq!(a.connections_open(), 0);
    assert!(wait_until(SOON, || b.connections_open() == 2));
}
