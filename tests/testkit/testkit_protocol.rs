//! The fake speaks the protocol like the real server: HELLO, reply shapes per RESP
//! version, error texts, authentication, malformed requests, subscribed RESP2 mode.

use crate::support;

use std::time::Duration;

use resilient_redis::resp::Value;
use resilient_redis::testkit::{FakeServer, OptIn};
use support::raw::{b, err_text, ok, Raw};

fn map_get<'a>(v: &'a Value, key: &str) -> &'a Value {
    match v {
        Value::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| k == &b(key))
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no {key} in {v:?}")),
        other => panic!("not a map: {other:?}"),
    }
}

#[test]
fn hello_answers_in_the_requested_protocol() {
    let server = FakeServer::start().unwrap();
    let mut r = Raw::connect(server.addr());
    // RESP2 by default: HELLO with no version answers a flat array.
    match r.cmd(&["HELLO"]) {
        Value::Array(items) => {
            assert_eq!(items.len(), 14);
            assert_eq!(items[0], b("server"));
            assert_eq!(items[5], Value::Int(2));
        }
        other => panic!("{other:?}"),
    }
    let hello = r.cmd(&["HELLO", "3", "SETNAME", "me"]);
    assert_eq!(map_get(&hello, "proto"), &Value::Int(3));
    assert_eq!(map_get(&hello, "version"), &b("7.2.0"));
    assert_eq!(map_get(&hello, "mode"), &b("standalone"));
    assert_eq!(map_get(&hello, "role"), &b("master"));
    assert_eq!(map_get(&hello, "modules"), &Value::Array(vec![]));
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), b("me"));
    let conns = server.connections();
    assert_eq!(conns.len(), 1);
    assert_eq!(conns[0].protocol, 3);
    assert_eq!(conns[0].name.as_deref(), Some("me"));
    assert_eq!(
        err_text(&r.cmd(&["HELLO", "4"])),
        "NOPROTO unsupported protocol version"
    );
}

#[test]
fn reply_shapes_follow_the_protocol() {
    let server = FakeServer::start().unwrap();
    let mut r2 = Raw::connect(server.addr());
    let mut r3 = Raw::resp3(server.addr());
    r2.cmd(&["HSET", "h", "f1", "v1", "f2", "v2"]);
    r2.cmd(&["ZADD", "z", "1.5", "a", "3", "b"]);
    assert_eq!(
        r2.cmd(&["HGETALL", "h"]),
        Value::Array(vec![b("f1"), b("v1"), b("f2"), b("v2")])
    );
    assert_eq!(
        r3.cmd(&["HGETALL", "h"]),
        Value::Map(vec![(b("f1"), b("v1")), (b("f2"), b("v2"))])
    );
    assert_eq!(r2.cmd(&["ZSCORE", "z", "a"]), b("1.5"));
    assert_eq!(r3.cmd(&["ZSCORE", "z", "a"]), Value::Double(1.5));
    assert_eq!(
        r2.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        Value::Array(vec![b("a"), b("1.5"), b("b"), b("3")])
    );
    assert_eq!(
        r3.cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        Value::Array(vec![
            Value::Array(vec![b("a"), Value::Double(1.5)]),
            Value::Array(vec![b("b"), Value::Double(3.0)]),
        ])
    );
    r2.cmd(&["SADD", "s", "x"]);
    assert_eq!(r2.cmd(&["SMEMBERS", "s"]), Value::Array(vec![b("x")]));
    assert_eq!(r3.cmd(&["SMEMBERS", "s"]), Value::Set(vec![b("x")]));
    assert_eq!(r3.cmd(&["EXISTS", "h", "nope", "h"]), Value::Int(2));
    assert_eq!(r2.cmd(&["GET", "nope"]), Value::Nil);
    assert_eq!(r3.cmd(&["GET", "nope"]), Value::Nil);
    // INFO is a verbatim string in RESP3 and a bulk string in RESP2.
    assert!(matches!(
        r3.cmd(&["INFO", "replication"]),
        Value::VerbatimString { .. }
    ));
    match r2.cmd(&["INFO", "replication"]) {
        Value::BulkString(text) => {
            assert!(String::from_utf8(text).unwrap().contains("role:master"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_use_the_real_texts() {
    let server = FakeServer::start().unwrap();
    let mut r = Raw::connect(server.addr());
    assert_eq!(
        err_text(&r.cmd(&["FOO", "a", "b"])),
        "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "
    );
    assert_eq!(
        err_text(&r.cmd(&["nosuch"])),
        "ERR unknown command 'nosuch', with args beginning with: "
    );
    assert_eq!(
        err_text(&r.cmd(&["GET"])),
        "ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        err_text(&r.cmd(&["CLIENT", "SETNAME"])),
        "ERR wrong number of arguments for 'client|setname' command"
    );
    assert_eq!(
        err_text(&r.cmd(&["CLIENT", "bogus"])),
        "ERR unknown subcommand 'bogus'. Try CLIENT HELP."
    );
    r.cmd(&["LPUSH", "l", "x"]);
    assert_eq!(
        err_text(&r.cmd(&["GET", "l"])),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    r.cmd(&["SET", "n", "abc"]);
    assert_eq!(
        err_text(&r.cmd(&["INCR", "n"])),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err_text(&r.cmd(&["SET", "k", "v", "BOGUS"])),
        "ERR syntax error"
    );
    assert_eq!(
        err_text(&r.cmd(&["SELECT", "16"])),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err_text(&r.cmd(&["CLUSTER", "SLOTS"])),
        "ERR This instance has cluster support disabled"
    );
    // Inline commands work too, as with redis-cli over telnet.
    r.send_bytes(b"PING\r\n");
    assert_eq!(r.read(), Value::SimpleString("PONG".into()));
}

#[test]
fn a_malformed_request_closes_only_that_connection() {
    let server = FakeServer::start().unwrap();
    let mut bad = Raw::connect(server.addr());
    let mut good = Raw::connect(server.addr());
    assert_eq!(good.cmd(&["SET", "k", "v"]), ok());
    bad.send_bytes(b"*1\r\n:5\r\n");
    assert_eq!(
        err_text(&bad.read()),
        "ERR Protocol error: expected '$', got ':'"
    );
    assert!(bad.closed_within(Duration::from_secs(5)));
    assert_eq!(good.cmd(&["GET", "k"]), b("v"));
    assert!(server.wait_for(|s| s.connections_open() == 1, Duration::from_secs(5)));
}

#[test]
fn authentication_like_requirepass_and_acl() {
    let server = FakeServer::builder()
        .password("secret")
        .user("app", "apppass")
        .start()
        .unwrap();
    let mut r = Raw::connect(server.addr());
    assert_eq!(
        err_text(&r.cmd(&["GET", "k"])),
        "NOAUTH Authentication required."
    );
    assert!(err_text(&r.cmd(&["HELLO", "3"])).starts_with("NOAUTH HELLO must be called"));
    assert_eq!(
        err_text(&r.cmd(&["AUTH", "wrong"])),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(r.cmd(&["AUTH", "secret"]), ok());
    assert_eq!(r.cmd(&["PING"]), Value::SimpleString("PONG".into()));
    let mut acl = Raw::connect(server.addr());
    let hello = acl.cmd(&["HELLO", "3", "AUTH", "app", "apppass"]);
    assert!(matches!(hello, Value::Map(_)), "{hello:?}");
    assert_eq!(acl.cmd(&["SET", "k", "v"]), ok());

    let open = FakeServer::start().unwrap();
    let mut r = Raw::connect(open.addr());
    assert!(err_text(&r.cmd(&["AUTH", "x"]))
        .starts_with("ERR AUTH <password> called without any password configured"));
}

#[test]
fn subscribed_resp2_connections_are_restricted() {
    let server = FakeServer::start().unwrap();
    let mut r = Raw::connect(server.addr());
    assert_eq!(
        r.cmd(&["SUBSCRIBE", "ch"]),
        Value::Array(vec![b("subscribe"), b("ch"), Value::Int(1)])
    );
    assert_eq!(
        err_text(&r.cmd(&["GET", "k"])),
        "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    );
    // The two-element pong, which a client must not take for a message.
    assert_eq!(r.cmd(&["PING"]), Value::Array(vec![b("pong"), b("")]));
    assert_eq!(
        r.cmd(&["UNSUBSCRIBE"]),
        Value::Array(vec![b("unsubscribe"), b("ch"), Value::Int(0)])
    );
    assert_eq!(r.cmd(&["PING"]), Value::SimpleString("PONG".into()));
    // RESP3: subscribed connections run any command, and PING is +PONG.
    let mut r3 = Raw::resp3(server.addr());
    r3.cmd(&["SUBSCRIBE", "ch"]);
    assert_eq!(r3.cmd(&["PING"]), Value::SimpleString("PONG".into()));
    assert_eq!(r3.cmd(&["GET", "k"]), Value::Nil);
}

#[test]
fn client_commands_and_replica_role() {
    let server = FakeServer::builder().role_replica().start().unwrap();
    let mut r = Raw::connect(server.addr());
    assert_eq!(r.cmd(&["CLIENT", "ID"]), Value::Int(1));
    assert_eq!(r.cmd(&["CLIENT", "SETNAME", "worker"]), ok());
    match r.cmd(&["CLIENT", "INFO"]) {
        Value::BulkString(t) => {
            let t = String::from_utf8(t).unwrap();
            assert!(t.starts_with("id=1 ") && t.contains(" name=worker "), "{t}");
        }
        other => panic!("{other:?}"),
    }
    match r.cmd(&["INFO"]) {
        Value::BulkString(t) => assert!(String::from_utf8(t).unwrap().contains("role:slave")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err_text(&r.cmd(&["SET", "k", "v"])),
        "READONLY You can't write against a read only replica."
    );
    assert_eq!(r.cmd(&["QUIT"]), ok());
    assert!(r.closed_within(Duration::from_secs(5)));
}

#[test]
fn maint_opt_in_modes() {
    let unknown = FakeServer::builder()
        .maint_opt_in(OptIn::Unknown)
        .start()
        .unwrap();
    let mut r = Raw::resp3(unknown.addr());
    assert_eq!(
        err_text(&r.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"])),
        "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP."
    );
    let refuse = FakeServer::builder()
        .maint_opt_in(OptIn::Refuse)
        .start()
        .unwrap();
    let mut r = Raw::resp3(refuse.addr());
    assert!(err_text(&r.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"])).starts_with("ERR "));
    assert!(!refuse.connections()[0].opted_in);
    let accept = FakeServer::start().unwrap();
    let mut r = Raw::resp3(accept.addr());
    assert_eq!(
        r.cmd(&[
            "CLIENT",
            "MAINT_NOTIFICATIONS",
            "on",
            "moving-endpoint-type",
            "internal-ip"
        ]),
        ok()
    );
    let c = &accept.connections()[0];
    assert!(c.opted_in);
    assert_eq!(c.moving_endpoint_type.as_deref(), Some("internal-ip"));
    assert_eq!(r.cmd(&["CLIENT", "MAINT_NOTIFICATIONS", "OFF"]), ok());
    assert!(!accept.connections()[0].opted_in);
}

#[test]
fn hello_variants_of_older_servers_and_proxies() {
    let old = FakeServer::builder().without_hello().start().unwrap();
    let mut r = Raw::connect(old.addr());
    assert_eq!(
        err_text(&r.cmd(&["HELLO", "3"])),
        "ERR unknown command 'HELLO', with args beginning with: '3' "
    );
    let proxy = FakeServer::builder().hello_resp2_only().start().unwrap();
    let mut r = Raw::connect(proxy.addr());
    assert!(matches!(r.cmd(&["HELLO", "3"]), Value::Array(_)));
    assert_eq!(proxy.connections()[0].protocol, 2);
}
