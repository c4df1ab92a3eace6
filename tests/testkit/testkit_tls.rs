//! The fakes over TLS: a client that trusts the issuer gets what the plain fake gives
//! (RESP3 and RESP2, large replies, pub/sub, every fault, notifications); one that does
//! not is refused by its own verification before any command is sent; a hung fake
//! answers no handshake either; and every `fake-…` thread is joined on drop, also with
//! connections mid-handshake. (Handoffs, relaxed timeouts, groups and the cluster run
//! over both transports in their own test files.)

use crate::support;

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use resilient_redis::maintenance::NotificationKind;
use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::testkit::{key_slot, FakeCluster, FakeIssuer, FakeServer, Notification};
use resilient_redis::{ClientEvent, ErrorKind};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::{CertificateDer, ServerName};
use support::optin::opt_in;
use support::raw::Raw;
use support::wait_until;

const SOON: Duration = Duration::from_secs(5);

/// Options for `server`'s URL plus `query`, trusting its issuer.
fn trusted(server: &FakeServer, query: &str) -> Options {
    let mut o = Options::parse(&format!("{}?{query}", server.url())).unwrap();
    o.tls = Some(server.issuer().expect("a TLS fake").tls_options());
    opt_in(o)
}

fn connect(server: &FakeServer, query: &str) -> (Client, Database) {
    let client = Client::connect(trusted(server, query)).unwrap();
    let db = client.database();
    (client, db)
}

/// A raw TLS connection (rustls, verifying against the fake's issuer): for what the
/// client cannot show (a reply held, then released; a connection dropped).
type RawTls = Raw<StreamOwned<ClientConnection, TcpStream>>;

/// A rustls client of `server` that trusts its issuer, not connected yet.
fn tls_client(server: &FakeServer) -> ClientConnection {
    let mut roots = RootCertStore::empty();
    let issuer = server.issuer().expect("a TLS fake");
    roots
        .add(CertificateDer::from(issuer.certificate_der()))
        .unwrap();
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    ClientConnection::new(Arc::new(config), name).unwrap()
}

fn raw_tls(server: &FakeServer) -> RawTls {
    let tcp = TcpStream::connect(server.addr()).unwrap();
    Raw::over(StreamOwned::new(tls_client(server), tcp))
}

fn pong() -> Value {
    Value::SimpleString("PONG".into())
}

#[test]
fn a_client_that_trusts_the_issuer_gets_resp3_resp2_and_large_replies() {
    let server = FakeServer::start_tls().unwrap();
    assert!(
        server.url().starts_with("rediss://127.0.0.1:"),
        "{server:?}"
    );
    let (_c, db) = connect(&server, "syncTimeout=5000");
    db.set("k", "v").unwrap();
    assert_eq!(db.get::<String>("k").unwrap(), "v");
    // Larger than a TLS record (16 KiB) and than one read of the fake (64 KiB).
    let big = "x".repeat(1 << 20);
    db.set("big", big.as_str()).unwrap();
    assert_eq!(db.get::<String>("big").unwrap(), big);
    // Pipelined from several threads at once.
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = db.clone();
            s.spawn(move || {
                for i in 0..100 {
                    let key = format!("par:{t}:{i}");
                    db.set(&key, i).unwrap();
                    assert_eq!(db.get::<i64>(&key).unwrap(), i);
                }
            });
        }
    });
    assert_eq!(server.connections()[0].protocol, 3);
    let (_c2, db2) = connect(&server, "protocol=resp2&syncTimeout=5000");
    assert_eq!(db2.get::<String>("k").unwrap(), "v");
    assert!(server.connections().iter().any(|c| c.protocol == 2));
    // The certificate names localhost as well as 127.0.0.1.
    let mut o = Options::parse(&format!("rediss://localhost:{}", server.port())).unwrap();
    o.tls = Some(server.issuer().unwrap().tls_options());
    let db3 = Client::connect(opt_in(o)).unwrap().database();
    assert_eq!(db3.get::<String>("k").unwrap(), "v");
}

#[test]
fn a_client_that_does_not_trust_the_issuer_fails_verification_before_any_command() {
    let server = FakeServer::start_tls().unwrap();
    // The public roots alone (what `rediss://` gives) do not know a minted CA.
    let e = Client::connect(opt_in(format!("{}?connectTimeout=2000", server.url()))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    // Another issuer's CA does not vouch for it either.
    let mut o = trusted(&server, "connectTimeout=2000");
    o.tls = Some(FakeIssuer::new().unwrap().tls_options());
    let e = Client::connect(o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    // Nor does the right issuer for a name the certificate does not carry.
    let mut o = trusted(&server, "connectTimeout=2000");
    let mut tls = server.issuer().unwrap().tls_options();
    tls.server_name = Some("other.example".into());
    o.tls = Some(tls);
    let e = Client::connect(o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    // A name added for the test is on it.
    let issuer = FakeIssuer::new().unwrap();
    let named = FakeServer::builder()
        .tls(&issuer)
        .tls_name("db.example")
        .start()
        .unwrap();
    let mut o = trusted(&named, "connectTimeout=2000");
    let mut tls = issuer.tls_options();
    tls.server_name = Some("db.example".into());
    o.tls = Some(tls);
    Client::connect(o).unwrap().database().ping().unwrap();
    assert_eq!(server.total_commands(), 0, "nothing was sent unverified");
    assert!(server.wait_for(|s| s.connections_open() == 0, SOON));
}

#[test]
fn a_plain_client_of_a_tls_fake_gets_no_redis_answer_and_is_closed() {
    let server = FakeServer::start_tls().unwrap();
    let url = format!("redis://{}?connectTimeout=2000", server.addr());
    let e = Client::connect(opt_in(url)).unwrap_err();
    // Its HELLO is no TLS record: the fake's TLS layer refuses it and closes.
    assert_eq!(e.kind(), ErrorKind::ConnectionClosed, "{e}");
    assert_eq!(server.total_commands(), 0);
    assert!(server.wait_for(|s| s.connections_open() == 0, SOON));
}

#[test]
fn pubsub_over_tls() {
    let server = FakeServer::start_tls().unwrap();
    let (client, _db) = connect(&server, "syncTimeout=5000");
    let sub = client.subscriber();
    let news = sub.subscribe("news").unwrap();
    let all = sub.psubscribe("n*").unwrap();
    assert_eq!(sub.publish("news", "hello").unwrap(), 2);
    assert_eq!(news.recv_timeout(SOON).unwrap().payload_str(), "hello");
    assert_eq!(all.recv_timeout(SOON).unwrap().payload_str(), "hello");
    // RESP2: the subscription connection is one of its own.
    let (resp2, _) = connect(&server, "protocol=resp2&syncTimeout=5000");
    let sub2 = resp2.subscriber();
    let news2 = sub2.subscribe("news").unwrap();
    assert!(wait_until(SOON, || sub.publish("news", "again").unwrap() == 3));
    assert_eq!(news2.recv_timeout(SOON).unwrap().payload_str(), "again");
}

#[test]
fn hang_holds_replies_and_handshakes_and_releases_them() {
    let server = FakeServer::start_tls().unwrap();
    let (_c, db) = connect(&server, "syncTimeout=300");
    db.set("k", "v").unwrap();
    let mut raw = raw_tls(&server);
    assert_eq!(raw.cmd(&["PING"]), pong());

    server.hang(true);
    let e = db.get::<Option<String>>("k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    raw.send(&["PING"]);
    assert!(
        raw.read_within(Duration::from_millis(100)).is_none(),
        "nothing answered"
    );
    // A stopped server answers no handshake: the connect times out, classified.
    let started = Instant::now();
    let e = Client::connect(trusted(&server, "connectTimeout=500")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(e.to_string().contains("TLS handshake"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3), "bounded");

    server.hang(false);
    assert_eq!(raw.read_within(SOON), Some(pong()), "released, not dropped");
    assert_eq!(db.get::<Option<String>>("k").unwrap().as_deref(), Some("v"));
}

#[test]
fn close_refuse_delay_close_after_and_injected_errors_over_tls() {
    let server = FakeServer::start_tls().unwrap();
    let (client, db) = connect(&server, "syncTimeout=5000&reconnectMin=20");
    db.set("k", "v").unwrap();
    let first = server.connections()[0].id;
    server.close_all_connections();
    assert!(server.wait_for(
        |s| s.connections().iter().any(|c| c.id != first) && s.connections_open() == 1,
        SOON
    ));
    assert_eq!(db.get::<String>("k").unwrap(), "v");
    assert!(client.is_connected());

    server.refuse_connections(true);
    let started = Instant::now();
    let e = Client::connect(trusted(&server, "connectTimeout=2000")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "fast, not a timeout"
    );
    server.refuse_connections(false);

    server.delay_replies(Some(Duration::from_millis(300)));
    let started = Instant::now();
    assert_eq!(db.get::<String>("k").unwrap(), "v");
    assert!(started.elapsed() >= Duration::from_millis(290));
    server.delay_replies(None);

    server.fail_command("GET", "-LOADING Redis is loading the dataset in memory");
    assert_eq!(
        db.get::<String>("k").unwrap_err().kind(),
        ErrorKind::Loading
    );
    server.clear_failures();

    server.close_after_commands(Some(1));
    let mut raw = raw_tls(&server);
    assert_eq!(raw.cmd(&["PING"]), pong());
    raw.send(&["PING"]);
    assert!(raw.closed_within(SOON), "second command not answered");
    server.close_after_commands(None);
    assert_eq!(db.get::<String>("k").unwrap(), "v");
}

#[test]
fn notifications_reach_an_opted_in_tls_connection_which_asked_for_names() {
    let server = FakeServer::start_tls().unwrap();
    let (client, db) = connect(&server, "maintNotifications=enabled&syncTimeout=5000");
    let events = client.events();
    db.ping().unwrap();
    let conn = &server.connections()[0];
    assert!(conn.opted_in);
    // A certificate names hosts, so over TLS the client asks for a name, not an address.
    let asked = conn.moving_endpoint_type.clone().unwrap_or_default();
    assert!(asked.ends_with("-fqdn"), "{asked:?}");
    server.notify(Notification::migrating(5, &["1"]));
    let got = (0..20).find_map(|_| match events.recv_timeout(SOON) {
        Ok(ClientEvent::Maintenance(e)) => Some(e),
        _ => None,
    });
    assert_eq!(
        got.expect("a maintenance event").kind,
        NotificationKind::Migrating
    );
}

#[test]
fn a_tls_cluster_serves_through_ask_moved_and_an_announced_migration() {
    let cluster = FakeCluster::start_tls(3).unwrap();
    assert!(cluster.url().starts_with("rediss://"));
    let mut o = Options::parse(&format!(
        "{}?maintNotifications=enabled&syncTimeout=5000",
        cluster.url()
    ))
    .unwrap();
    o.tls = Some(cluster.issuer().unwrap().tls_options());
    let client = Client::connect(opt_in(o)).unwrap();
    assert!(client.is_cluster());
    let events = client.events();
    let db = client.database();
    for i in 0..100 {
        db.set(format!("k{i}"), i).unwrap();
    }
    // Every node was reached, each verified under the cluster's one issuer.
    assert!(cluster
        .nodes()
        .iter()
        .all(|n| n.commands_received("SET") > 0));

    let slot = key_slot(b"k0");
    let from = cluster.slot_owner(slot).unwrap();
    let to = (from + 1) % 3;
    cluster
        .begin_migration(slot..=slot, from, to, true)
        .unwrap();
    assert_eq!(db.get::<i64>("k0").unwrap(), 0, "served by the source");
    cluster.move_keys(usize::MAX);
    assert_eq!(db.get::<i64>("k0").unwrap(), 0, "ASK followed");
    assert!(cluster.node(to).commands_received("ASKING") >= 1);
    cluster.finish_migration().unwrap();
    assert!(
        wait_until(SOON, || client.cluster_stats().unwrap().slot_migrations
            == 1),
        "the SMIGRATED was acted on"
    );
    assert_eq!(cluster.slot_owner(slot), Some(to));
    db.set("k0", 42).unwrap();
    assert_eq!(db.get::<i64>("k0").unwrap(), 42);
    let mut kinds = Vec::new();
    let both = wait_until(SOON, || {
        kinds.extend(events.try_iter().filter_map(|e| match e {
            ClientEvent::Maintenance(m) => Some(m.kind),
            _ => None,
        }));
        kinds.contains(&NotificationKind::SMigrating)
            && kinds.contains(&NotificationKind::SMigrated)
    });
    assert!(both, "{kinds:?}");
}

fn fake_threads(port: u16) -> usize {
    support::threads_named(&format!("fake-{port}-")).len()
}

#[test]
fn shutdown_joins_every_thread_also_mid_handshake_and_while_hung() {
    let server = FakeServer::start_tls().unwrap();
    let port = server.port();
    let (_c, db) = connect(&server, "syncTimeout=5000");
    db.ping().unwrap();
    let mut blocked = raw_tls(&server);
    blocked.send(&["BLPOP", "never", "0"]);
    assert!(server.wait_for(|s| s.commands_received("BLPOP") == 1, SOON));
    // Connected, never shaken hands; and one half-way through a ClientHello.
    let _silent = TcpStream::connect(server.addr()).unwrap();
    let mut partial = TcpStream::connect(server.addr()).unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    // And one whose ClientHello arrived while the server hangs (its thread parked).
    server.hang(true);
    let mut parked = TcpStream::connect(server.addr()).unwrap();
    let mut hello = tls_client(&server);
    while hello.wants_write() {
        hello.write_tls(&mut parked).unwrap();
    }
    assert!(server.wait_for(|s| s.connections_open() == 5, SOON));
    assert!(fake_threads(port) >= 6, "accept and five connections");
    drop(server);
    let left = support::threads_left_after_join(&format!("fake-{port}-"));
    assert!(left.is_empty(), "{left:?}");
    assert!(blocked.closed_within(Duration::from_secs(1)));
}
