//! Secrets never leak, and TLS verification is on unless turned off by name.
//!
//! The capturing logger (`support::logs`, installed once per process, level Trace) keeps
//! every log record of every thread while clients connect, run commands, fail,
//! reconnect and fail TLS handshakes with a distinctive password and ACL user secret
//! set. No record, and no `Debug`/`Display` of `Options`, `Client`, `Database`,
//! errors, client events, group members, groups or group events, may contain them.
//!
//! Each test has its own secrets, so a test only asserts about the secrets it set
//! (records of all tests land in the one logger; pinned tests run with `--ignored`
//! must not fail the others).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use log::Level;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use resilient_redis::availability::{Group, GroupOptions, HealthCheck, Member};
use resilient_redis::config::TlsOptions;
use resilient_redis::prelude::*;
use resilient_redis::{Error, ErrorKind};
use support::optin::opt_in;
use support::{wait_until, RedisServer};

// ---------------------------------------------------------------------------------
// The capturing logger (`support::logs`), at every level.

/// Every record so far, as `LEVEL [target] text`.
fn records() -> Vec<(Level, String)> {
    support::logs::lines()
        .into_iter()
        .map(|l| (l.level, l.to_string()))
        .collect()
}

/// Fails if `text` holds any secret, or its distinctive tail (a fragment cut off by a
/// bad split would still be a leak).
fn assert_hidden(secrets: &[&str], text: &str, context: &str) {
    for s in secrets {
        let tail = s.rsplit('-').next().unwrap_or(s);
        assert!(
            !text.contains(s) && !text.contains(tail),
            "{context}: secret {s:?} leaked in {text:?}"
        );
    }
}

fn assert_no_record_holds(secrets: &[&str]) -> usize {
    let records = records();
    for (_, r) in &records {
        assert_hidden(secrets, r, "log record");
    }
    records.len()
}

fn assert_error_hidden(secrets: &[&str], e: &Error, context: &str) {
    assert_hidden(secrets, &e.to_string(), context);
    assert_hidden(secrets, &format!("{e:?}"), context);
    assert_hidden(secrets, e.detail(), context);
}

// ---------------------------------------------------------------------------------
// Connects, commands, failures and reconnects against a password-protected server.

const PASSWORD: &str = "Pw-Alpha-7f3c9e21";
const ACL_SECRET: &str = "Acl-Alpha-5b8d0a44";
const WRONG: &str = "Wrong-Alpha-c1e2f3a9";

#[test]
fn no_secret_in_logs_debug_display_errors_or_events() {
    support::logs::capture();
    let secrets = [PASSWORD, ACL_SECRET, WRONG];
    let Some(mut server) = RedisServer::start_with(&["--requirepass", PASSWORD]) else {
        return;
    };
    let port = server.port;

    // The password in every form a user can give it.
    let forms = [
        format!("redis://:{PASSWORD}@127.0.0.1:{port}"),
        format!("127.0.0.1:{port},password={PASSWORD},syncTimeout=2000"),
        // Quoted: an endpoint after an unquoted password is refused (it may be the
        // password's tail after a comma).
        format!("password=\"{PASSWORD}\",127.0.0.1:{port}"),
    ];
    for form in &forms {
        let options = Options::parse(form).unwrap();
        assert_hidden(&secrets, &options.to_string(), "Options Display");
        assert_hidden(&secrets, &format!("{options:?}"), "Options Debug");
        assert_hidden(&secrets, &format!("{options:#?}"), "Options Debug");
        let client = Client::connect(opt_in(form.as_str())).unwrap();
        assert_hidden(&secrets, &format!("{client:?}"), "Client Debug");
        assert_hidden(
            &secrets,
            &format!("{:?}", client.database()),
            "Database Debug",
        );
        assert_hidden(
            &secrets,
            &format!("{:?}", client.options()),
            "client options",
        );
        assert_eq!(client.database().ping().unwrap(), "PONG");
        client.close();
    }
    let built = Options::default()
        .endpoint(&format!("127.0.0.1:{port}"))
        .password(PASSWORD)
        .reconnect_delay(Duration::from_millis(20), Duration::from_millis(100))
        .command_timeout(Duration::from_millis(1000));
    let client = Client::connect(opt_in(built.clone())).unwrap();
    let events = client.events();
    let db = client.database();

    // An ACL user whose secret travels as a command argument.
    db.cmd("ACL")
        .arg("SETUSER")
        .arg("alice")
        .arg("on")
        .arg(format!(">{ACL_SECRET}"))
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .exec()
        .unwrap();
    let alice = Client::connect(opt_in(format!(
        "redis://alice:{ACL_SECRET}@127.0.0.1:{port}"
    )))
    .unwrap();
    let alice_db = alice.database();
    assert_eq!(
        alice_db.cmd("ACL").arg("WHOAMI").query::<String>().unwrap(),
        "alice"
    );
    assert_hidden(&secrets, &format!("{alice:?}"), "Client Debug (ACL user)");

    // Failing commands whose arguments are secrets.
    for (what, result) in [
        (
            "unknown command",
            db.cmd("NOSUCHCMD").arg(PASSWORD).arg(ACL_SECRET).exec(),
        ),
        (
            "wrong arity",
            db.cmd("GET").arg(PASSWORD).arg(ACL_SECRET).exec(),
        ),
        (
            "AUTH with the wrong password",
            db.cmd("AUTH").arg(WRONG).exec(),
        ),
        (
            "AUTH as alice, wrong",
            db.cmd("AUTH").arg("alice").arg(WRONG).exec(),
        ),
        ("WRONGTYPE", {
            db.cmd("LPUSH")
                .arg("secrets:list")
                .arg(PASSWORD)
                .exec()
                .unwrap();
            db.get::<String>("secrets:list").map(|_| ())
        }),
    ] {
        let e = result.expect_err(what);
        assert_error_hidden(&secrets, &e, what);
    }
    // A value holding the password comes back, of course: it is data, not a log.
    db.set("secrets:value", PASSWORD).unwrap();
    assert_eq!(db.get::<String>("secrets:value").unwrap(), PASSWORD);

    // Wrong passwords at connect: refused, classified, hidden.
    for form in [
        format!("redis://:{WRONG}@127.0.0.1:{port}"),
        format!("redis://alice:{WRONG}@127.0.0.1:{port}?protocol=resp2"),
        format!("127.0.0.1:{port},password={WRONG},protocol=resp3"),
    ] {
        let e = Client::connect(opt_in(form.as_str())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
        assert_error_hidden(&secrets, &e, "connect with a wrong password");
    }
    // Retried in the background (abortConnect=false): the retries log, hidden too.
    let retrying = Client::connect(opt_in(format!(
        "127.0.0.1:{port},password={WRONG},abortConnect=false,reconnectMin=10,reconnectMax=20,syncTimeout=300"
    )))
    .unwrap();
    let e = retrying.database().ping().unwrap_err();
    assert_error_hidden(&secrets, &e, "command while the password is refused");
    retrying.close();

    // Reconnects: the connection is killed server-side, then the server dies and
    // comes back; the handshake (with the password) is redone each time.
    let id = db.client_id().unwrap();
    let admin = Client::connect(opt_in(format!("redis://:{PASSWORD}@127.0.0.1:{port}"))).unwrap();
    admin
        .database()
        .cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .exec()
        .unwrap();
    admin.close();
    assert!(wait_until(Duration::from_secs(10), || db.ping().is_ok()));
    server.kill();
    let e = db.ping().unwrap_err();
    assert_error_hidden(&secrets, &e, "command while the server is down");
    std::thread::sleep(Duration::from_millis(300));
    server.restart();
    assert!(
        wait_until(Duration::from_secs(10), || db.ping().is_ok()),
        "no reconnect after the restart"
    );
    let events: Vec<String> = events.try_iter().map(|e| format!("{e:?}")).collect();
    assert!(events.len() >= 2, "reconnect events: {events:?}");
    for e in &events {
        assert_hidden(&secrets, e, "client event");
    }
    alice.close();
    client.close();

    let n = assert_no_record_holds(&secrets);
    assert!(n > 0, "the logger captured nothing: is it installed?");
}

// ---------------------------------------------------------------------------------
// Groups: member names, group Debug, group events, health-check logs.

const GROUP_PASSWORD: &str = "Pw-Group-0d9e8f7a";

#[test]
fn groups_show_no_secret_when_members_are_given_as_urls() {
    support::logs::capture();
    let secrets = [GROUP_PASSWORD];
    let (Some(a), Some(mut b)) = (
        RedisServer::start_with(&["--requirepass", GROUP_PASSWORD]),
        RedisServer::start_with(&["--requirepass", GROUP_PASSWORD]),
    ) else {
        return;
    };
    let group = Group::connect(
        vec![
            Member::new(opt_in(format!(
                "redis://:{GROUP_PASSWORD}@127.0.0.1:{}?syncTimeout=500",
                a.port
            )))
            .with_weight(20),
            Member::new(opt_in(format!(
                "127.0.0.1:{},password={GROUP_PASSWORD},syncTimeout=500",
                b.port
            )))
            .with_weight(10),
        ],
        GroupOptions::default().health_check(
            HealthCheck::default()
                .interval(Duration::from_millis(100))
                .probe_count(1)
                .probe_timeout(Duration::from_millis(300)),
        ),
    )
    .unwrap();
    let events = group.events();
    group.database().set("k", "v").unwrap();
    // A failover and back, so members go unhealthy and healthy in events and logs.
    b.kill();
    assert!(wait_until(Duration::from_secs(10), || group
        .members()
        .iter()
        .any(|m| m.is_unhealthy())));
    b.restart();
    assert_hidden(&secrets, &format!("{group:?}"), "Group Debug");
    for m in group.members() {
        assert_hidden(&secrets, &format!("{m:?}"), "Member Debug");
        assert_hidden(&secrets, m.name(), "member name");
    }
    for e in events.try_iter() {
        assert_hidden(&secrets, &format!("{e:?}"), "group event");
    }
    group.close();
    assert_no_record_holds(&secrets);
}

const NAME_PASSWORD: &str = "Pw-Name-4c3b2a19";

/// Regression (found by this file): `Member::new` named a member after the first item
/// of its spec, so for an option string starting with `password=...` the name *was*
/// the password, and member names go into `Debug`, events and log records. Now the
/// name is the parsed spec's first endpoint.
#[test]
fn a_member_given_as_an_option_string_starting_with_its_password_is_not_named_after_it() {
    let m = Member::new(opt_in(format!("password={NAME_PASSWORD},127.0.0.1:6379")));
    assert_hidden(&[NAME_PASSWORD], m.name(), "member name");
    assert_hidden(&[NAME_PASSWORD], &format!("{m:?}"), "Member Debug");
    let m = Member::new(opt_in(format!("ssl=true,password={NAME_PASSWORD},h:1")));
    assert_hidden(&[NAME_PASSWORD], m.name(), "member name");
}

// ---------------------------------------------------------------------------------
// A server that quotes the password back.

const ECHOED: &str = "Pw-Echoed-8a7b6c5d";

/// Regression (found by this file): the handshake turned the server's error reply into
/// the error as is, so a server or proxy quoting the credentials it refused ("invalid
/// password 'xyz'") put the client's own password in the error, its `Display` and the
/// reconnect log records. Now quoted values are redacted, and the handshake removes
/// the password wherever it appears.
#[test]
fn a_server_quoting_the_password_back_does_not_put_it_in_errors() {
    use std::io::{BufRead, BufReader, Write};
    // Regression (found by the opted-in run): with a command pipelined after `HELLO`
    // (the opt-in, `SELECT`) the server hung up before answering it, and the refusal
    // became `ConnectionClosed`; it is `Auth` however the round was made up.
    for extra in ["", ",defaultDatabase=1", ",maintNotifications=auto"] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(3).flatten() {
                let mut out = stream.try_clone().unwrap();
                let mut lines = BufReader::new(stream);
                let mut line = String::new();
                // Read the HELLO's header, answer it with the quoted credentials, close.
                let _ = lines.read_line(&mut line);
                let _ = write!(out, "-WRONGPASS invalid password '{ECHOED}'\r\n");
            }
        });
        let e = Client::connect(opt_in(format!(
            "127.0.0.1:{port},password={ECHOED},connectTimeout=1000{extra}"
        )))
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{extra:?}: {e}");
        assert_error_hidden(&[ECHOED], &e, "handshake error");
    }
}

/// Regression (found by this file): a server error reply was kept whole apart from the
/// tail of "unknown command" replies, and `ACL SETUSER` quotes a modifier it cannot
/// parse, so an ACL secret given without its `>` (a typo) came back in the error. Now
/// what a server error quotes is redacted (an unknown command's name aside).
#[test]
fn an_acl_secret_quoted_by_the_server_is_not_in_the_error() {
    const ACL_TYPO: &str = "Acl-Typo-2e4f6a8c";
    let Some(server) = RedisServer::start() else {
        return;
    };
    let db = Client::connect(opt_in(server.url().as_str()))
        .unwrap()
        .database();
    let e = db
        .cmd("ACL")
        .arg("SETUSER")
        .arg("bob")
        .arg("on")
        .arg(ACL_TYPO)
        .exec()
        .unwrap_err();
    assert_error_hidden(&[ACL_TYPO], &e, "ACL SETUSER error");
}

// ---------------------------------------------------------------------------------
// TLS.

const TLS_PASSWORD: &str = "Pw-Tls-99ab12cd";

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A CA and a server certificate for localhost/127.0.0.1.
fn mint() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rr-secrets-pki-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "resilient-redis secrets test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    write(&dir, "ca.pem", &ca.pem());
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "server");
    let cert = params.signed_by(&key, &ca).unwrap();
    write(&dir, "server.pem", &cert.pem());
    write(&dir, "server.key", &key.serialize_pem());
    dir
}

fn verification_off_warnings(port: u16) -> usize {
    records()
        .iter()
        .filter(|(level, text)| {
            *level == Level::Warn
                && text.contains("verification is OFF")
                && text.contains(&format!(":{port}"))
        })
        .count()
}

#[test]
fn tls_verifies_by_default_and_turning_it_off_takes_its_name_and_warns() {
    support::logs::capture();
    let secrets = [TLS_PASSWORD];
    // Defaults: every way to ask for TLS verifies.
    assert!(TlsOptions::default().verify);
    for text in [
        "rediss://h",
        "valkeys://h",
        "h,ssl=true",
        "h,ssl=yes,sslHost=x,sslCaFile=/ca.pem",
        "h,ssl=1,sslCert=/c.pem,sslKey=/k.pem",
        "redis://h?ssl=true&sslHost=x",
    ] {
        let o = Options::parse(text).unwrap();
        assert!(o.tls.as_ref().unwrap().verify, "{text} must verify");
    }
    // Only `sslVerify` (by that name) turns it off.
    for text in [
        "h,ssl=true,sslVerify=false",
        "rediss://h?sslVerify=0",
        "h,ssl=true,SSLVERIFY=no",
    ] {
        assert!(!Options::parse(text).unwrap().tls.unwrap().verify, "{text}");
    }

    let pki = mint();
    let tls_port = support::free_port();
    let cert = pki.join("server.pem");
    let key = pki.join("server.key");
    let ca = pki.join("ca.pem");
    let Some(server) = RedisServer::start_with(&[
        "--tls-port",
        &tls_port.to_string(),
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-key-file",
        key.to_str().unwrap(),
        "--tls-ca-cert-file",
        ca.to_str().unwrap(),
        "--tls-auth-clients",
        "no",
        "--requirepass",
        TLS_PASSWORD,
    ]) else {
        return;
    };

    // Verification on by default: our CA is not a public root, so the handshake fails.
    let e = Client::connect(opt_in(format!(
        "rediss://:{TLS_PASSWORD}@localhost:{tls_port}"
    )))
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    assert_error_hidden(&secrets, &e, "TLS failure");
    // The wrong name for the certificate fails too.
    let e = Client::connect(opt_in(format!(
        "localhost:{tls_port},ssl=true,sslCaFile={},sslHost=other.example,password={TLS_PASSWORD}",
        ca.display()
    )))
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    assert_error_hidden(&secrets, &e, "TLS name mismatch");
    // TLS spoken to the plain port: a classified failure, not a hang or a panic.
    let e = Client::connect(opt_in(format!(
        "localhost:{},ssl=true,sslVerify=false,password={TLS_PASSWORD},connectTimeout=2000",
        server.port
    )))
    .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Tls | ErrorKind::Timeout),
        "{e}"
    );
    assert_error_hidden(&secrets, &e, "TLS to a plain port");
    assert_eq!(
        verification_off_warnings(tls_port),
        0,
        "no warning while verifying"
    );

    // Trusted CA, verification on: works, no warning.
    let verified = Client::connect(opt_in(format!(
        "localhost:{tls_port},ssl=true,sslCaFile={},password={TLS_PASSWORD}",
        ca.display()
    )))
    .unwrap();
    assert_eq!(verified.database().ping().unwrap(), "PONG");
    verified.close();
    assert_eq!(
        verification_off_warnings(tls_port),
        0,
        "no warning while verifying"
    );

    // Turned off by name: connects (the CA is unknown, yet accepted) and warns.
    let unverified = Client::connect(opt_in(format!(
        "localhost:{tls_port},ssl=true,sslVerify=false,password={TLS_PASSWORD}"
    )))
    .unwrap();
    assert_eq!(unverified.database().ping().unwrap(), "PONG");
    // A second connection (a blocking command's dedicated one) is not warned again.
    let popped: Option<(String, String)> = unverified
        .database()
        .blpop("nothing-here", std::time::Duration::from_millis(10))
        .unwrap();
    assert_eq!(popped, None);
    assert_eq!(
        verification_off_warnings(tls_port),
        1,
        "one warning for sslVerify=false, per client: {:?}",
        records()
            .iter()
            .filter(|(l, _)| *l <= Level::Warn)
            .collect::<Vec<_>>()
    );
    assert_hidden(&secrets, &format!("{unverified:?}"), "Client Debug (TLS)");
    unverified.close();
    let _ = std::fs::remove_dir_all(&pki);
    assert_no_record_holds(&secrets);
}

// ---------------------------------------------------------------------------------
// REST credentials of the lag-aware probe.

const REST_PASSWORD: &str = "Pw-Rest-3e5d7c9b";

#[test]
fn rest_credentials_never_show_and_the_probe_never_reads_unfiltered() {
    use resilient_redis::availability::{
        LagAware, LagAwareOptions, LagCheckMode, ProbeResult, RestCredentials,
    };
    use resilient_redis::testkit::FakeRestApi;
    use resilient_redis::Endpoint;
    support::logs::capture();
    let user = "monitor@cluster.example";
    // The Authorization header's form of the credentials must not show either.
    let basic = base64(format!("{user}:{REST_PASSWORD}").as_bytes());
    let wrong = base64(format!("{user}:{REST_PASSWORD}-wrong").as_bytes());
    let secrets = [REST_PASSWORD, basic.as_str(), wrong.as_str()];
    let api = FakeRestApi::builder()
        .credentials(user, REST_PASSWORD)
        .strict(true)
        .start()
        .unwrap();
    let uid = api.add_database("redis-12000.cluster.example", "127.0.0.1", 12000);
    let db = Endpoint::new("redis-12000.cluster.example", 12000);
    let options = |password: &'static str| {
        LagAwareOptions::new(move || Some(RestCredentials::new(user, password)))
            .rest_endpoint(api.url())
    };
    let trusted = |o: LagAwareOptions| {
        o.trust_issuer_pem(api.certificate_pem().as_bytes())
            .unwrap()
    };
    let timeout = Duration::from_secs(3);
    let mut shown = vec![format!("{:?}", RestCredentials::new(user, REST_PASSWORD))];
    // Right credentials: healthy, through filtered reads only.
    let probe = LagAware::new(trusted(options(REST_PASSWORD)));
    let outcome = probe.check_endpoint(&db, timeout);
    assert_eq!(outcome.result(), ProbeResult::Healthy, "{outcome}");
    shown.extend([format!("{probe:?}"), format!("{outcome} {outcome:?}")]);
    // Wrong credentials (401 and 403), an untrusted certificate, a redirect, a
    // malformed body, a lagging database: each Inconclusive or Unhealthy, none telling.
    let wrong_password: &'static str = "Pw-Rest-3e5d7c9b-wrong";
    for (what, o) in [
        ("wrong password", trusted(options(wrong_password))),
        ("untrusted certificate", options(REST_PASSWORD)),
    ] {
        let probe = LagAware::new(o);
        let outcome = probe.check_endpoint(&db, timeout);
        assert_eq!(
            outcome.result(),
            ProbeResult::Inconclusive,
            "{what}: {outcome}"
        );
        shown.extend([format!("{probe:?}"), format!("{outcome} {outcome:?}")]);
    }
    api.set_auth_failure(Some(403));
    let outcome = LagAware::new(trusted(options(REST_PASSWORD))).check_endpoint(&db, timeout);
    shown.push(format!("{outcome} {outcome:?}"));
    api.set_auth_failure(None);
    api.redirect_to_unreachable(true);
    let outcome = LagAware::new(trusted(options(REST_PASSWORD))).check_endpoint(&db, timeout);
    shown.push(format!("{outcome} {outcome:?}"));
    api.redirect_to_unreachable(false);
    api.malformed_bodies(true);
    let outcome = LagAware::new(trusted(options(REST_PASSWORD))).check_endpoint(&db, timeout);
    shown.push(format!("{outcome} {outcome:?}"));
    api.malformed_bodies(false);
    api.set_lagging(uid, true);
    let lag = trusted(options(REST_PASSWORD)).mode(LagCheckMode::Lag);
    let outcome = LagAware::new(lag).check_endpoint(&db, timeout);
    shown.push(format!("{outcome} {outcome:?}"));
    for s in &shown {
        assert_hidden(&secrets, s, "REST Debug/Display");
    }
    assert!(
        api.unfiltered_reads().is_empty(),
        "unfiltered reads: {:?}",
        api.unfiltered_reads()
    );
    assert_no_record_holds(&secrets);
}

/// Standard base64 with padding (the Authorization header's encoding).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const URL_PASSWORD: &str = "Pw-Url-6a4c2e80";

/// Regression (found by this file): a REST endpoint given with credentials in it
/// (`https://user:pw@host`) was refused with a message quoting the whole URL, which is
/// the outcome's `Display` and a warning record, and `LagAwareOptions`' `Debug` showed
/// it as given. Both now show the URL with its userinfo replaced.
#[test]
fn a_rest_endpoint_with_credentials_in_it_is_refused_without_showing_them() {
    use resilient_redis::availability::{LagAware, LagAwareOptions, RestCredentials};
    use resilient_redis::Endpoint;
    support::logs::capture();
    let options = LagAwareOptions::new(|| Some(RestCredentials::new("u", "p")))
        .rest_endpoint(format!("https://monitor:{URL_PASSWORD}@127.0.0.1:9443"));
    assert_hidden(
        &[URL_PASSWORD],
        &format!("{options:?}"),
        "LagAwareOptions Debug",
    );
    let outcome = LagAware::new(options).check_endpoint(
        &Endpoint::new("redis-12000.cluster.example", 12000),
        Duration::from_secs(1),
    );
    assert_hidden(
        &[URL_PASSWORD],
        &format!("{outcome} {outcome:?}"),
        "outcome",
    );
    assert_no_record_holds(&[URL_PASSWORD]);
}
