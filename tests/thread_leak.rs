//! Every thread a client starts ends on `close()` and on drop. Alone in its own test
//! binary so that no other test's threads are counted.

mod support;

use std::sync::Arc;
use std::time::Duration;

use resilient_redis::config::{Credentials, Token, TokenCredentials};
use resilient_redis::prelude::*;
use support::optin::opt_in;
use support::{threads_left_after_join, threads_named, wait_until, RedisServer};

#[test]
fn no_thread_is_left_after_close_or_drop() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    assert!(threads_named("rr-").is_empty());

    // close(), with a blocking connection leased and one idle.
    let client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let db = client.database();
    db.set("k", "v").unwrap();
    let blocked = {
        let db = db.clone();
        std::thread::spawn(move || {
            db.cmd("BLPOP")
                .arg("never")
                .arg(0)
                .blocking(Duration::ZERO)
                .query::<Option<Vec<String>>>()
        })
    };
    assert!(wait_until(Duration::from_secs(5), || threads_named("rr-")
        .len()
        >= 5));
    client.close();
    // The caller blocked "forever" is released with an error, not left hanging.
    assert!(blocked.join().unwrap().is_err());
    assert!(
        wait_until(Duration::from_secs(5), || threads_named("rr-").is_empty()),
        "threads left after close: {:?}",
        threads_named("rr-")
    );
    assert!(db.ping().is_err());

    // close(), with a lane open beside the shared connection (two callers in flight
    // together open one) and, likely, one being opened.
    let client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let db = client.database();
            std::thread::spawn(move || {
                let mut n = 0;
                while db.incr("n", 1).is_ok() && n < 200_000 {
                    n += 1;
                }
            })
        })
        .collect();
    assert!(
        wait_until(Duration::from_secs(10), || client.status().nodes[0]
            .lanes_open
            == 1),
        "no lane opened: {}",
        client.status()
    );
    client.close();
    for caller in callers {
        caller.join().unwrap();
    }
    assert!(
        wait_until(Duration::from_secs(5), || threads_named("rr-").is_empty()),
        "threads left after close with a lane: {:?}",
        threads_named("rr-")
    );

    // Drop of the last handle (client and every database).
    let client = Client::connect(opt_in(server.url().as_str())).unwrap();
    let db = client.database();
    db.ping().unwrap();
    // A thread names itself once it runs, so the count is awaited, not read once.
    assert!(
        wait_until(Duration::from_secs(5), || threads_named("rr-").len() == 3),
        "expected reader, writer and supervisor: {:?}",
        threads_named("rr-")
    );
    drop(client);
    db.ping().unwrap();
    drop(db);
    assert!(
        wait_until(Duration::from_secs(5), || threads_named("rr-").is_empty()),
        "threads left after drop: {:?}",
        threads_named("rr-")
    );

    // A token provider's renewal thread lives as long as the provider (a client's
    // clone included), and ends with the last clone.
    let admin = Client::connect(server.url().as_str()).unwrap();
    let rules = ["SETUSER", "leak", "on", ">pw", "~*", "&*", "+@all"];
    admin.database().cmd("ACL").arg(rules).exec().unwrap();
    admin.close();
    let tokens = TokenCredentials::builder(|| {
        Ok(Token::new(
            Credentials::user("leak", "pw"),
            Duration::from_secs(60),
        ))
    })
    .start()
    .unwrap();
    let client = Client::connect(
        Options::default()
            .endpoint(&server.addr())
            .credentials(Arc::new(tokens.clone())),
    )
    .unwrap();
    client.database().ping().unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || threads_named("rr-").len() == 4),
        "expected reader, writer, supervisor and token renewal: {:?}",
        threads_named("rr-")
    );
    drop(client);
    assert!(
        wait_until(Duration::from_secs(5), || threads_named("rr-")
            == ["rr-token-renew"]),
        "{:?}",
        threads_named("rr-")
    );
    drop(tokens);
    let left = threads_left_after_join("rr-");
    assert!(
        left.is_empty(),
        "joined when the last clone is dropped: {left:?}"
    );
}
