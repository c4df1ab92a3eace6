//! §7 against the fake cluster: `SMIGRATED` refreshes the topology only for triplets
//! whose source is the node that sent them, once for a burst; sharded subscriptions
//! follow their slot at once, by the unsolicited `SUNSUBSCRIBE` or, when that never
//! comes, by the `SMIGRATED` fallback, with a bounded number of resubscribes. Each
//! over plain TCP and over TLS (every node's certificate from one issuer):
//! `scenario::tcp`, `scenario::tls`.

use crate::over_both_transports;
use crate::support;

use std::time::Duration;

use resilient_redis::prelude::*;
use resilient_redis::testkit::{key_slot, FakeCluster, Notification};
use support::optin::opt_in;
use support::transport::Transport;
use support::wait_until;

const SOON: Duration = Duration::from_secs(5);

over_both_transports!(
    ten_smigrated_for_this_node_make_one_refresh_and_other_nodes_triplets_none,
    a_sharded_subscription_follows_its_slot_with_the_sunsubscribe,
    a_sharded_subscription_follows_its_slot_by_smigrated_alone,
);

fn client(t: &Transport, cluster: &FakeCluster, nodes: usize) -> Client {
    let url = format!(
        "{}?maintNotifications=enabled&syncTimeout=2000&reconnectMin=20",
        cluster.url()
    );
    let c = Client::connect(opt_in(t.options(&url))).unwrap();
    assert!(c.is_cluster());
    assert!(wait_until(SOON, || {
        let st = c.maintenance_status();
        st.len() == nodes && st.iter().all(|s| s.connected && s.opted_in)
    }));
    c
}

/// Waits until no topology refresh is under way or due: the count has stayed put for
/// a few refresh periods. The connects ask for refreshes of their own (a node that
/// comes up later, as a TLS one does, asks again), which a count taken too early would
/// mistake for the test's. Returns the settled count.
fn settle(c: &Client) -> u64 {
    let refreshes = || c.cluster_stats().unwrap().refreshes;
    let mut seen = refreshes();
    let mut steady = 0;
    let deadline = std::time::Instant::now() + SOON;
    while steady < 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = refreshes();
        steady = if now == seen { steady + 1 } else { 0 };
        seen = now;
    }
    assert_eq!(steady, 5, "the topology refreshes never settled");
    seen
}

fn host_port(cluster: &FakeCluster, i: usize) -> String {
    format!("127.0.0.1:{}", cluster.node(i).port())
}

fn smigrated(from: String, to: String, slots: &str) -> Notification {
    Notification::SMigrated {
        triplets: vec![(from, to, slots.to_string())],
    }
}

fn ten_smigrated_for_this_node_make_one_refresh_and_other_nodes_triplets_none(t: Transport) {
    let cluster = t.cluster(3);
    let c = client(&t, &cluster, 3);
    settle(&c);
    let cluster_commands = || -> u64 {
        cluster
            .nodes()
            .iter()
            .map(|n| n.commands_received("CLUSTER"))
            .sum()
    };
    let stats = || c.cluster_stats().unwrap();
    let (commands, refreshes) = (cluster_commands(), stats().refreshes);
    let n0 = cluster.node(0);

    // Node 0 tells of node 1's slots moving to node 2: not ours to re-read.
    for _ in 0..3 {
        n0.notify(smigrated(
            host_port(&cluster, 1),
            host_port(&cluster, 2),
            "6000-6001",
        ));
    }
    assert!(wait_until(SOON, || stats().slot_migrations_ignored == 3));
    // Ten of node 0's own, in a burst: one write, as a server flushes them. (Sent one
    // by one, a loaded machine could deliver the later ones after the jittered refresh
    // had started, and those rightly ask for another: they may describe moves that
    // refresh did not see.)
    n0.notify_burst(
        (0..10)
            .map(|i| {
                smigrated(
                    host_port(&cluster, 0),
                    host_port(&cluster, 1),
                    &i.to_string(),
                )
            })
            .collect(),
    );
    assert!(wait_until(SOON, || stats().slot_migrations == 10));
    assert!(wait_until(SOON, || stats().refreshes == refreshes + 1));
    // Past the largest jitter, still one.
    assert!(
        !wait_until(Duration::from_millis(1500), || stats().refreshes
            > refreshes + 1),
        "{:?} (before: {refreshes} refreshes)",
        stats()
    );
    assert_eq!(cluster_commands(), commands + 1, "one CLUSTER SHARDS");
    // The refresh corrected what the triplets claimed (the fake never moved slot 0).
    c.database().set("{a}x", 1).unwrap();
}

fn sharded_delivery_resumes_after_migration(t: Transport, sunsubscribe: bool) {
    let cluster = t.cluster(2);
    cluster.set_sunsubscribe_on_migration(sunsubscribe);
    let c = client(&t, &cluster, 2);
    let sub = c.subscriber();
    let orders = sub.ssubscribe("orders:{7}").unwrap();
    assert_eq!(sub.spublish("orders:{7}", "before").unwrap(), 1);
    assert_eq!(orders.recv_timeout(SOON).unwrap().payload_str(), "before");
    let slot = key_slot(b"orders:{7}");
    let from = cluster.slot_owner(slot).unwrap();
    let to = 1 - from;
    let resubscribes = || cluster.node(to).commands_received("SSUBSCRIBE");
    let before = resubscribes();
    if !sunsubscribe {
        // No topology can be read either: the SMIGRATED fallback is all there is.
        for n in cluster.nodes() {
            n.fail_command("CLUSTER", "ERR injected: no topology");
        }
    }
    // Counted once no refresh that began before the injection can still complete (a
    // refresh in flight at the injection is no evidence either way).
    let refreshes = settle(&c);

    cluster.migrate(slot..=slot, from, to, true).unwrap();
    assert!(
        wait_until(SOON, || cluster
            .node(to)
            .connections()
            .iter()
            .any(|c| c.subscriptions > 0)),
        "subscribed on the new owner"
    );
    // Messages published during the move may be lost; delivery must resume.
    assert!(wait_until(SOON, || sub
        .spublish("orders:{7}", "after")
        .is_ok_and(|n| n == 1)));
    let m = orders.recv_timeout(SOON).unwrap();
    assert_eq!(m.payload_str(), "after");
    // (The SMIGRATED may be handled after the SUNSUBSCRIBE path already moved it.)
    assert!(wait_until(SOON, || c
        .cluster_stats()
        .unwrap()
        .slot_migrations
        == 1));
    let stats = c.cluster_stats().unwrap();
    if !sunsubscribe {
        assert_eq!(stats.refreshes, refreshes, "no refresh moved it");
    }
    // Bounded by the one-shot triggers, each re-subscribing at most once while the
    // new owner's confirmation is on its way (more of them overlap on a loaded
    // machine): the unsolicited SUNSUBSCRIBE, the reply to ours on the old owner, the
    // SMIGRATED fallback and its refresh. Never a loop.
    assert!(
        resubscribes() - before <= 5,
        "bounded: {} SSUBSCRIBE",
        resubscribes() - before
    );
}

fn a_sharded_subscription_follows_its_slot_with_the_sunsubscribe(t: Transport) {
    sharded_delivery_resumes_after_migration(t, true);
}

fn a_sharded_subscription_follows_its_slot_by_smigrated_alone(t: Transport) {
    // No SUNSUBSCRIBE: only the SMIGRATED fallback can move it.
    sharded_delivery_resumes_after_migration(t, false);
}
