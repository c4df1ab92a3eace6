//! Cluster behaviour against the fake cluster: redirect loops end, TRYAGAIN is waited
//! out within the caller's timeout, a burst of MOVED causes one refresh, a gone node
//! is retired although our own heartbeats pile up against it. Each over plain TCP
//! and over TLS (every node's certificate from one issuer): `scenario::tcp`,
//! `scenario::tls`.

use crate::over_both_transports;
use crate::support;

use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::testkit::{key_slot, FakeCluster};
use resilient_redis::ErrorKind;
use support::optin::opt_in;
use support::transport::Transport;
use support::wait_until;

over_both_transports!(
    a_redirect_loop_ends_in_a_classified_error,
    tryagain_is_waited_out_within_the_callers_timeout,
    a_burst_of_moved_replies_causes_one_refresh,
    a_removed_node_is_retired_at_once_although_heartbeats_pile_up_against_it,
);

fn client(t: &Transport, cluster: &FakeCluster, extra: &str) -> Client {
    let c = Client::connect(opt_in(
        t.options(&format!("{}?syncTimeout=1000{extra}", cluster.url())),
    ))
    .unwrap();
    assert!(c.is_cluster());
    c
}

fn a_redirect_loop_ends_in_a_classified_error(t: Transport) {
    let cluster = t.cluster(2);
    let c = client(&t, &cluster, "");
    let owner = cluster.owner_of_key(b"loop").unwrap();
    let me = cluster.node(owner);
    // The owner keeps redirecting to itself.
    me.fail_command(
        "GET",
        &format!("MOVED {} 127.0.0.1:{}", key_slot(b"loop"), me.port()),
    );
    let started = Instant::now();
    let err = c.database().get::<Option<String>>("loop").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Moved, "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    me.clear_failures();
    assert_eq!(c.database().get::<Option<String>>("loop").unwrap(), None);
}

fn tryagain_is_waited_out_within_the_callers_timeout(t: Transport) {
    let cluster = t.cluster(2);
    let c = client(&t, &cluster, "");
    let db = c.database();
    db.set("t", "v").unwrap();
    let node = cluster.node(cluster.owner_of_key(b"t").unwrap());
    node.fail_command(
        "GET",
        "TRYAGAIN Multiple keys request during rehashing of slot",
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(node.wait_for(|n| n.commands_received("GET") >= 2, Duration::from_secs(5)));
            node.clear_failures();
        });
        assert_eq!(db.get::<String>("t").unwrap(), "v");
    });
    // Never cleared: the TRYAGAIN comes back, no later than the timeout.
    node.fail_command("GET", "TRYAGAIN still");
    let started = Instant::now();
    let err = db
        .with_timeout(Duration::from_millis(300))
        .get::<String>("t")
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::TryAgain | ErrorKind::Timeout),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_millis(1000));
}

fn a_burst_of_moved_replies_causes_one_refresh(t: Transport) {
    let cluster = t.cluster(2);
    let c = client(&t, &cluster, "");
    let db = c.database();
    let keys: Vec<String> = (0..200).map(|i| format!("{{burst}}{i}")).collect();
    for k in &keys {
        db.set(k, 1).unwrap();
    }
    let slot = key_slot(b"{burst}");
    let from = cluster.slot_owner(slot).unwrap();
    let to = 1 - from;
    let before = c.cluster_stats().unwrap();
    let shards_before: u64 = cluster
        .nodes()
        .iter()
        .map(|n| n.commands_received("CLUSTER"))
        .sum();
    cluster.migrate(slot..=slot, from, to, false).unwrap();
    // Ten threads all hit MOVED at about the same time.
    std::thread::scope(|s| {
        for t in 0..10 {
            let db = db.clone();
            let keys = &keys;
            s.spawn(move || {
                for k in keys.iter().skip(t * 20).take(20) {
                    assert_eq!(db.get::<i64>(k).unwrap(), 1);
                }
            });
        }
    });
    let after = c.cluster_stats().unwrap();
    assert!(after.moved > before.moved);
    assert!(wait_until(Duration::from_secs(5), || c
        .cluster_stats()
        .unwrap()
        .refreshes
        > before.refreshes));
    let queries: u64 = cluster
        .nodes()
        .iter()
        .map(|n| n.commands_received("CLUSTER"))
        .sum::<u64>()
        - shards_before;
    // One refresh pass (one topology query), not one per redirect; allow one more for
    // a periodic or reconnect refresh that may coincide.
    assert!(
        queries <= 2,
        "{queries} topology queries for a burst of MOVED"
    );
}

fn a_removed_node_is_retired_at_once_although_heartbeats_pile_up_against_it(t: Transport) {
    let mut cluster = t.cluster(2);
    let spare = cluster.add_node().unwrap().port();
    // keepAlive short: heartbeats to the hung node pile up (our own traffic).
    let c = client(&t, &cluster, "&keepAlive=50");
    assert!(wait_until(Duration::from_secs(5), || {
        c.refresh_topology().unwrap();
        c.nodes().iter().any(|n| n.endpoint.port == spare)
    }));
    let spare_index = cluster
        .nodes()
        .iter()
        .position(|n| n.port() == spare)
        .unwrap();
    cluster.node(spare_index).hang(true);
    cluster.remove_node(spare_index).unwrap();
    let started = Instant::now();
    let retired = wait_until(Duration::from_secs(10), || {
        c.refresh_topology().unwrap();
        !c.nodes().iter().any(|n| n.endpoint.port == spare)
    });
    assert!(retired);
    // Idle for caller work: closed at once, not after the 5 s drain bound.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(c.cluster_stats().unwrap().retired, 1);
    c.database().set("still", "fine").unwrap();
}
