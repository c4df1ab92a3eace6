//! Every connection resolves through `Options::resolver`: a client reaches a fake by a
//! scripted name, and a reconnect follows the record when it moves.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use resilient_redis::prelude::*;
use resilient_redis::testkit::{Answer, FakeServer, ScriptedResolver};
use support::optin::opt_in;
use support::wait_until;

#[test]
fn connections_resolve_through_the_injected_resolver_and_follow_the_record() {
    let a = FakeServer::start().unwrap();
    let b = FakeServer::start().unwrap();
    let dns = ScriptedResolver::new();
    dns.set("db.test", Answer::addrs([a.addr()]));
    let mut options = Options::parse("db.test:6379,syncTimeout=2000,reconnectMin=20").unwrap();
    options.resolver = Some(Arc::new(dns.clone()));
    let client = Client::connect(opt_in(options)).unwrap();
    let db = client.database();
    db.set("k", "a").unwrap();
    assert_eq!(a.connections_open(), 1);
    assert!(dns.lookups("db.test") >= 1);

    // The record moves; the next connection (after this one fails) goes where it says.
    dns.set("db.test", Answer::addrs([b.addr()]));
    a.close_all_connections();
    assert!(wait_until(Duration::from_secs(5), || b.connections_open() == 1));
    assert_eq!(
        db.get::<Option<String>>("k").unwrap(),
        None,
        "b has no key k"
    );

    // An unresolvable name is a connect error naming the endpoint, not a panic.
    let mut options = Options::parse("nowhere.test:6379,connectTimeout=500").unwrap();
    options.resolver = Some(Arc::new(dns.clone()));
    let e = Client::connect(opt_in(options)).unwrap_err();
    assert!(e.to_string().contains("nowhere.test"), "{e}");
    assert!(
        dns.lookup_threads()
            .iter()
            .all(|t| !t.starts_with("rr-read") && !t.starts_with("rr-write")),
        "{:?}",
        dns.lookup_threads()
    );
}
