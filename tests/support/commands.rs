//! Shared by the `commands` tests: connecting over RESP2 and RESP3 to a
//! real server, and running the same checks over both.

use std::time::Duration;

use resilient_redis::config::Protocol;
use resilient_redis::resp::Value;
use resilient_redis::{Client, Database, Endpoint, Options};

use super::RedisServer;

/// A client speaking `protocol` to `server`, with a command timeout.
pub fn connect_with(server: &RedisServer, protocol: Protocol, timeout: Duration) -> Client {
    // Fields rather than the builder: `OptionsBuilder::endpoint` parses its text
    // with the URL/option-string parser, which lives on another branch.
    let mut options = Options::default();
    options.endpoints = vec![Endpoint::new("127.0.0.1", server.port)];
    options.protocol = Some(protocol);
    options.command_timeout = timeout;
    Client::connect(super::optin::opt_in(options)).expect("connect to the test server")
}

/// A client speaking `protocol` to `server`, default command timeout.
pub fn connect(server: &RedisServer, protocol: Protocol) -> Client {
    connect_with(server, protocol, Duration::from_secs(5))
}

/// Runs `check` over RESP2, then over RESP3, each with its own key prefix (`r2:`,
/// `r3:`) so the two runs never see each other's keys. Proves first that the
/// connection really speaks the protocol, or a "both protocols" test would quietly
/// test one twice.
pub fn each_protocol(server: &RedisServer, check: impl Fn(&Database, &str)) {
    for (protocol, prefix) in [(Protocol::Resp2, "r2:"), (Protocol::Resp3, "r3:")] {
        let client = connect(server, protocol);
        let db = client.database();
        let hello: Value = db.cmd("HELLO").query().expect("HELLO");
        let is_map = matches!(hello, Value::Map(_));
        assert_eq!(
            is_map,
            protocol == Protocol::Resp3,
            "{protocol:?}: {hello:?}"
        );
        check(&db, prefix);
        client.close();
    }
}

/// Starts a server for one test; `None` when server tests are skipped explicitly.
pub fn server() -> Option<RedisServer> {
    RedisServer::start()
}

/// How many clients the server has blocked (`INFO clients`), to wait for a blocking
/// command to be in place before acting on it instead of sleeping and hoping.
pub fn blocked_clients(db: &Database) -> i64 {
    use resilient_redis::ServerCommands;
    let info = db.info(Some("clients")).expect("INFO clients");
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(-1)
}
