//! The bad-input catalogue: what a broken or hostile peer (or user) can hand the client,
//! and what must happen. For every row: a classified error (the `ErrorKind` asserted),
//! no panic, other callers on the same client unaffected (concurrent `ECHO` round trips
//! from other threads: never a wrong reply, never a wait past their timeout), and the
//! connection either stays in step (same connection, later round trips fine) or is
//! closed and reconnected (the server sees a new connection, later round trips fine).
//!
//! Misbehaving servers are tiny raw TCP servers written here (`RawServer`): they
//! answer the handshake (`HELLO` with a RESP3 map, or `-ERR unknown command` to force
//! RESP2), `PING` and `ECHO` correctly, and misbehave as each case scripts.
//!
//! Rows: malformed frames of every type; declared lengths up to 2^63; nesting 10^6
//! deep; invalid UTF-8 where text is expected; replies nobody asked for; half a frame
//! then close; maintenance notifications of every shape (a property: whatever a push
//! holds, it never takes a reply or breaks the connection); bad option strings and
//! URLs; REST answers to the lag-aware probe that are garbage, huge, endless, truncated
//! or not HTTP (a scripted HTTPS server): always Inconclusive, within the deadline,
//! with bounded memory.
//!
//! Known limit, by the protocol's design: RESP replies carry no request id, so a
//! surplus reply that arrives while other requests wait is indistinguishable from the
//! reply to the oldest of them. The client detects a surplus reply when nothing waits
//! (it closes the connection); the test for that keeps the client idle when the server
//! sends it.
//!
//! Its own test binary: the memory rows measure the process's resident memory, which
//! other tests' allocations would move.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use resilient_redis::availability::{LagAware, LagAwareOptions, ProbeResult, RestCredentials};
use resilient_redis::prelude::*;
use resilient_redis::resp::{encode_value, Decoder, Limits, Value};
use resilient_redis::{ClientEvent, Endpoint, Error, ErrorKind, FailureKind};
use support::{optin, wait_until};

/// Command timeout of the clients under test.
const TIMEOUT: Duration = Duration::from_millis(2000);
/// How far past its timeout a caller may return (scheduling on a loaded machine).
const SLACK: Duration = Duration::from_millis(1000);
/// Awaiting a reconnection.
const WAIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------
// A scripted raw server.

type Command = Vec<Vec<u8>>;

/// What the connection does after a scripted reaction.
enum Next {
    Continue,
    Close,
}

/// One accepted connection, as the script sees it.
struct Peer {
    out: TcpStream,
    /// 0 for the first connection the server accepted, 1 for the next...
    conn: usize,
}

impl Peer {
    fn send(&mut self, bytes: &[u8]) {
        // The client may already have closed: a failed write is part of the scenario.
        let _ = self.out.write_all(bytes);
        let _ = self.out.flush();
    }
}

/// Reacts to a command; `None` leaves it to the default behaviour.
type Script = dyn Fn(&Command, &mut Peer) -> Option<Next> + Send + Sync;

struct RawServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<JoinHandle<()>>,
}

fn read_line(r: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).ok()?;
    if !line.ends_with(b"\r\n") {
        return None;
    }
    line.truncate(line.len() - 2);
    Some(line)
}

/// Reads one command (an array of bulk strings, as the client sends them).
fn read_command(r: &mut impl BufRead) -> Option<Command> {
    let header = read_line(r)?;
    let n: usize = std::str::from_utf8(header.strip_prefix(b"*")?)
        .ok()?
        .parse()
        .ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        let len: usize = std::str::from_utf8(read_line(r)?.strip_prefix(b"$")?)
            .ok()?
            .parse()
            .ok()?;
        let mut arg = vec![0; len + 2];
        r.read_exact(&mut arg).ok()?;
        arg.truncate(len);
        args.push(arg);
    }
    Some(args)
}

fn bulk(bytes: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    out
}

const HELLO3: &[u8] = b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n\
$4\r\nmode\r\n$10\r\nstandalone\r\n";

fn default_reply(cmd: &Command, resp3: bool) -> Vec<u8> {
    let name = cmd
        .first()
        .map(|n| n.to_ascii_uppercase())
        .unwrap_or_default();
    match name.as_slice() {
        b"HELLO" if resp3 => HELLO3.to_vec(),
        b"HELLO" => b"-ERR unknown command 'HELLO', with args beginning with: \r\n".to_vec(),
        b"PING" => b"+PONG\r\n".to_vec(),
        b"ECHO" => bulk(cmd.get(1).map_or(&[][..], |a| a)),
        b"INFO" => bulk(b"# Cluster\r\ncluster_enabled:0\r\n"),
        b"CLIENT" | b"SELECT" | b"AUTH" | b"UNWATCH" => b"+OK\r\n".to_vec(),
        _ => b"-ERR unknown command\r\n".to_vec(),
    }
}

impl RawServer {
    fn start(
        resp3: bool,
        script: impl Fn(&Command, &mut Peer) -> Option<Next> + Send + Sync + 'static,
    ) -> RawServer {
        let script: Arc<Script> = Arc::new(script);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::<TcpStream>::new()));
        let acceptor = {
            let (accepted, stop, streams) = (accepted.clone(), stop.clone(), streams.clone());
            thread::spawn(move || {
                let mut handlers = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let stream = match listener.accept() {
                        Ok((s, _)) => s,
                        Err(_) => {
                            thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                    };
                    let _ = stream.set_nonblocking(false);
                    let conn = accepted.fetch_add(1, Ordering::SeqCst);
                    if let Ok(s) = stream.try_clone() {
                        streams.lock().unwrap().push(s);
                    }
                    let script = script.clone();
                    handlers.push(thread::spawn(move || serve(stream, conn, resp3, &*script)));
                }
                for h in handlers {
                    let _ = h.join();
                }
            })
        };
        RawServer {
            port,
            accepted,
            stop,
            streams,
            acceptor: Some(acceptor),
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn client(&self) -> Client {
        Client::connect(self.options()).expect("connect to the raw server")
    }

    fn options(&self) -> String {
        // `auto` under the switch: scripted peers refuse HELLO 3 or answer the opt-in
        // as a case needs; the opt-in is still sent.
        // `lanes=0`: the cases count connections to tell "kept in step" from
        // "replaced", and a lane opened beside the shared one by the bystanders would
        // blur that (a lane runs the same reader; closing one on a failed call is
        // tested in `tests/client/lanes.rs`).
        optin::opt_in_auto(format!(
            "127.0.0.1:{},syncTimeout={},connectTimeout=2000,reconnectMin=10,reconnectMax=50,\
             lanes=0",
            self.port,
            TIMEOUT.as_millis()
        ))
    }
}

fn serve(stream: TcpStream, conn: usize, resp3: bool, script: &Script) {
    let Ok(out) = stream.try_clone() else { return };
    let mut peer = Peer { out, conn };
    let mut reader = BufReader::new(stream);
    while let Some(cmd) = read_command(&mut reader) {
        match script(&cmd, &mut peer) {
            Some(Next::Continue) => {}
            Some(Next::Close) => break,
            None => {
                let reply = default_reply(&cmd, resp3);
                peer.send(&reply);
            }
        }
    }
    let _ = peer.out.shutdown(std::net::Shutdown::Both);
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

fn is(cmd: &Command, name: &str, arg: Option<&str>) -> bool {
    cmd.first()
        .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
        && arg.is_none_or(|a| cmd.get(1).is_some_and(|x| x == a.as_bytes()))
}

// ---------------------------------------------------------------------------------
// Bystanders: other callers on the same client while a case runs.

#[derive(Default, Debug)]
struct Bystanders {
    ok: usize,
    errors: BTreeMap<String, usize>,
}

/// Runs `f` while 4 other threads make `ECHO` round trips on `db`; every reply must be
/// the caller's own token, every error a connection-level one, and no call may take
/// longer than its timeout plus the slack. Each thread makes at least 3 calls.
fn with_bystanders<T>(db: &Database, f: impl FnOnce() -> T) -> (T, Bystanders) {
    let done = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (db, done) = (db.clone(), done.clone());
            thread::spawn(move || {
                let mut seen = Bystanders::default();
                let mut i = 0u64;
                while !done.load(Ordering::Relaxed) || i < 3 {
                    i += 1;
                    let token = format!("bystander:{t}:{i}");
                    let started = Instant::now();
                    let got = db.echo::<String>(&token);
                    let took = started.elapsed();
                    assert!(took <= TIMEOUT + SLACK, "a bystander waited {took:?}");
                    match got {
                        Ok(reply) => {
                            assert_eq!(reply, token, "a bystander got someone else's reply");
                            seen.ok += 1;
                        }
                        Err(e) => {
                            assert!(
                                e.kind().is_connection_level() || e.is_transient(),
                                "a bystander got an unclassified error: {e}"
                            );
                            *seen.errors.entry(format!("{:?}", e.kind())).or_default() += 1;
                        }
                    }
                }
                seen
            })
        })
        .collect();
    // Let them get going before the case runs.
    thread::sleep(Duration::from_millis(20));
    let out = f();
    done.store(true, Ordering::Relaxed);
    let mut all = Bystanders::default();
    for t in threads {
        let seen = t.join().expect("a bystander panicked");
        all.ok += seen.ok;
        for (k, n) in seen.errors {
            *all.errors.entry(k).or_default() += n;
        }
    }
    (out, all)
}

/// Round trips that must all succeed: the connection is usable (again).
fn round_trips(db: &Database, what: &str) {
    let deadline = Instant::now() + WAIT;
    // The first one may still meet the reconnection; after one success, all must pass.
    loop {
        match db.echo::<String>("probe") {
            Ok(r) => {
                assert_eq!(r, "probe");
                break;
            }
            Err(e) if Instant::now() < deadline && e.is_transient() => {
                thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("{what}: no round trip after the case: {e}"),
        }
    }
    for i in 0..20 {
        let token = format!("after:{i}");
        assert_eq!(db.echo::<String>(&token).unwrap(), token, "{what}");
    }
}

fn assert_kind<T: std::fmt::Debug>(got: Result<T, Error>, kind: ErrorKind, what: &str) -> Error {
    match got {
        Ok(v) => panic!("{what}: expected a {kind:?} error, got {v:?}"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "{what}: {e}");
            e
        }
    }
}

// ---------------------------------------------------------------------------------
// Malformed frames of every type.

/// Frames a decoder must refuse, each complete enough to be refused as it arrives.
fn malformed() -> Vec<(&'static str, Vec<u8>)> {
    let mut cases: Vec<(&'static str, Vec<u8>)> = vec![
        ("unknown type byte", b"?what\r\n".to_vec()),
        ("NUL type byte", b"\0\r\n".to_vec()),
        ("empty line", b"\r\n".to_vec()),
        ("simple string ending in LF only", b"+OK\n".to_vec()),
        ("error ending in LF only", b"-ERR x\n".to_vec()),
        ("integer with letters", b":12a\r\n".to_vec()),
        ("empty integer", b":\r\n".to_vec()),
        (
            "integer overflowing i64",
            b":9223372036854775808\r\n".to_vec(),
        ),
        ("bulk length not a number", b"$abc\r\n".to_vec()),
        ("bulk length -2", b"$-2\r\n".to_vec()),
        (
            "bulk payload longer than declared",
            b"$3\r\nfooXY\r\n".to_vec(),
        ),
        ("array length not a number", b"*x\r\n".to_vec()),
        ("array length -5", b"*-5\r\n".to_vec()),
        ("null with content", b"_x\r\n".to_vec()),
        ("double not a number", b",1.5x\r\n".to_vec()),
        ("boolean neither t nor f", b"#x\r\n".to_vec()),
        ("big number with letters", b"(12a\r\n".to_vec()),
        ("empty big number", b"(\r\n".to_vec()),
        ("null bulk error", b"!-1\r\n".to_vec()),
        ("streamed bulk error", b"!?\r\n".to_vec()),
        (
            "verbatim shorter than its prefix",
            b"=3\r\ntxt\r\n".to_vec(),
        ),
        ("verbatim without ':'", b"=5\r\ntxt-x\r\n".to_vec()),
        ("null map", b"%-1\r\n".to_vec()),
        ("null set", b"~-1\r\n".to_vec()),
        ("null push", b">-1\r\n".to_vec()),
        ("null attribute", b"|-1\r\n".to_vec()),
        ("map length not a number", b"%x\r\n".to_vec()),
        (
            "chunk outside a streamed string",
            b";4\r\nabcd\r\n".to_vec(),
        ),
        ("streamed string interrupted", b"$?\r\n:1\r\n".to_vec()),
        ("chunk length not a number", b"$?\r\n;?\r\n".to_vec()),
        ("end marker outside a stream", b".\r\n".to_vec()),
        ("end marker with content", b".x\r\n".to_vec()),
        (
            "streamed map ending after a key",
            b"%?\r\n:1\r\n.\r\n".to_vec(),
        ),
        (
            "array holding a bad element",
            b"*2\r\n:1\r\n:x\r\n".to_vec(),
        ),
        (
            "map holding a bad value",
            b"%1\r\n+k\r\n#maybe\r\n".to_vec(),
        ),
        (
            "attribute then a bad value",
            b"|1\r\n+k\r\n+v\r\n,x\r\n".to_vec(),
        ),
        ("header line of 70000 bytes", {
            let mut v = b"+".to_vec();
            v.extend(std::iter::repeat_n(b'a', 70_000));
            v.extend_from_slice(b"\r\n");
            v
        }),
    ];
    // Declared lengths up to 2^63 (and past it): an error, never an allocation.
    for (name, header) in [
        ("bulk of 2^40 bytes", "$1099511627776"),
        ("bulk of 2^62 bytes", "$4611686018427387904"),
        ("bulk of 2^63-1 bytes", "$9223372036854775807"),
        ("bulk of 2^63 bytes (past i64)", "$9223372036854775808"),
        ("bulk of 2^64 bytes", "$18446744073709551616"),
        ("verbatim of 2^63-1 bytes", "=9223372036854775807"),
        ("bulk error of 2^63-1 bytes", "!9223372036854775807"),
        ("array of 2^63-1 elements", "*9223372036854775807"),
        ("map of 2^62 pairs", "%4611686018427387904"),
        ("set of 2^63-1 elements", "~9223372036854775807"),
        ("push of 2^63-1 elements", ">9223372036854775807"),
        ("attribute of 2^62 pairs", "|4611686018427387904"),
        ("chunk of 2^63-1 bytes", "$?\r\n;9223372036854775807"),
    ] {
        cases.push((name, format!("{header}\r\n").into_bytes()));
    }
    cases
}

fn nested(depth: usize) -> Vec<u8> {
    // Every aggregate type in turn, a million levels deep.
    let levels = [
        &b"*1\r\n"[..],
        b"~1\r\n",
        b">1\r\n",
        b"%1\r\n+k\r\n",
        b"|1\r\n+a\r\n+b\r\n",
    ];
    let mut wire = Vec::with_capacity(depth * 8);
    for i in 0..depth {
        wire.extend_from_slice(levels[i % levels.len()]);
    }
    wire.extend_from_slice(b":1\r\n");
    wire
}

#[test]
fn the_decoder_refuses_every_malformed_frame_with_a_protocol_error() {
    let mut cases = malformed();
    cases.push(("nesting 10^6 deep", nested(1_000_000)));
    for (name, wire) in &cases {
        // Whole, and byte by byte (state carried across every boundary).
        for split in [wire.len(), 1] {
            let mut d = Decoder::new();
            let mut error = None;
            for piece in wire.chunks(split) {
                d.feed(piece);
                match d.decode() {
                    Ok(None) => {}
                    Ok(Some(v)) => panic!("{name}: decoded {v:?}"),
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            let e = error.unwrap_or_else(|| panic!("{name}: no error (split {split})"));
            assert_eq!(e.kind(), ErrorKind::Protocol, "{name}: {e}");
            assert!(
                d.decode().is_err(),
                "{name}: the decoder must stay poisoned"
            );
        }
    }
}

#[test]
fn a_declared_length_below_the_limit_commits_no_memory_for_bytes_that_never_come() {
    // 512 MiB declared (the limit itself), 1 MiB sent: the decoder may reserve address
    // space, but resident memory grows with what arrived, not with the claim.
    let _memory = memory_measured();
    let before = rss();
    let mut decoders = Vec::new();
    for _ in 0..4 {
        let mut d = Decoder::new();
        d.feed(b"$536870912\r\n");
        d.feed(&vec![b'x'; 1 << 20]);
        assert!(d.decode().unwrap().is_none());
        decoders.push(d);
    }
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "4 x 512 MiB declared cost {} MiB resident",
        grown >> 20
    );
    // Limits below it refuse at the header.
    let mut d = Decoder::with_limits(Limits {
        max_bulk_len: 1 << 20,
        ..Limits::default()
    });
    d.feed(b"$1048577\r\n");
    assert_eq!(d.decode().unwrap_err().kind(), ErrorKind::Protocol);
}

/// Held by every test that measures the process's resident memory: the tests of this
/// binary run in parallel, and one's allocations (a 16 MiB body, 1 MiB frames) showed in
/// another's measurement (114 MiB "grown" once, on a loaded machine).
static MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn memory_measured() -> std::sync::MutexGuard<'static, ()> {
    MEMORY.lock().unwrap_or_else(|e| e.into_inner())
}

fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// A server that answers `GET case:<i>` with the i-th bad frame (and everything else
/// correctly).
fn frames_server(resp3: bool, frames: Arc<Vec<(&'static str, Vec<u8>)>>) -> RawServer {
    RawServer::start(resp3, move |cmd, peer| {
        if !is(cmd, "GET", None) {
            return None;
        }
        let arg = String::from_utf8_lossy(cmd.get(1)?).to_string();
        let i: usize = arg.strip_prefix("case:")?.parse().ok()?;
        let (_, wire) = frames.get(i)?;
        peer.send(wire);
        Some(Next::Continue)
    })
}

#[test]
fn malformed_replies_fail_their_caller_and_the_connection_is_replaced() {
    let mut frames = malformed();
    frames.push(("nesting 10^6 deep", nested(1_000_000)));
    let frames = Arc::new(frames);
    for resp3 in [true, false] {
        let server = frames_server(resp3, frames.clone());
        let client = server.client();
        let db = client.database();
        round_trips(&db, "before");
        for (i, (name, _)) in frames.iter().enumerate() {
            let what = format!("{name} (RESP{})", if resp3 { 3 } else { 2 });
            let before = server.accepted();
            let (got, bystanders) =
                with_bystanders(&db, || db.get::<Option<String>>(format!("case:{i}")));
            let e = assert_kind(got, ErrorKind::Protocol, &what);
            assert_eq!(
                e.failure(),
                Some(FailureKind::ProtocolFailure),
                "{what}: {e}"
            );
            assert!(bystanders.ok > 0, "{what}: {bystanders:?}");
            // The stream could not be trusted: closed, and a new connection made.
            round_trips(&db, &what);
            assert!(server.accepted() > before, "{what}: no reconnection");
        }
        client.close();
    }
}

// ---------------------------------------------------------------------------------
// Half a frame, then close.

#[test]
fn half_a_frame_then_close_fails_the_caller_and_the_client_reconnects() {
    let _memory = memory_measured();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("half a bulk", b"$10\r\nabc".to_vec()),
        ("half a header", b"$1".to_vec()),
        ("an array missing elements", b"*3\r\n:1\r\n:2\r\n".to_vec()),
        (
            "a map missing its last value",
            b"%2\r\n+a\r\n:1\r\n+b\r\n".to_vec(),
        ),
        (
            "a streamed string without its end",
            b"$?\r\n;3\r\nabc\r\n".to_vec(),
        ),
        ("a bulk without its CRLF", b"$3\r\nabc".to_vec()),
        // 1 MiB of a declared 512 MiB: the rest never comes.
        ("1 MiB of a 512 MiB bulk", {
            let mut v = b"$536870912\r\n".to_vec();
            v.extend(std::iter::repeat_n(b'x', 1 << 20));
            v
        }),
    ];
    let cases = Arc::new(cases);
    for resp3 in [true, false] {
        let script_cases = cases.clone();
        let server = RawServer::start(resp3, move |cmd, peer| {
            if !is(cmd, "GET", None) {
                return None;
            }
            let arg = String::from_utf8_lossy(cmd.get(1)?).to_string();
            let i: usize = arg.strip_prefix("half:")?.parse().ok()?;
            peer.send(&script_cases.get(i)?.1);
            Some(Next::Close)
        });
        let client = server.client();
        let db = client.database();
        round_trips(&db, "before");
        for (i, (name, _)) in cases.iter().enumerate() {
            let before = server.accepted();
            let rss_before = rss();
            let (got, bystanders) =
                with_bystanders(&db, || db.get::<Option<String>>(format!("half:{i}")));
            let e = assert_kind(got, ErrorKind::ConnectionClosed, name);
            // Closed under the reader (end of stream) or under a bystander's write
            // (broken pipe): either way the socket is gone.
            assert!(
                matches!(
                    e.failure(),
                    Some(FailureKind::SocketClosed | FailureKind::SocketFailure)
                ),
                "{name}: {e}"
            );
            assert!(bystanders.ok > 0, "{name}: {bystanders:?}");
            assert!(
                rss().saturating_sub(rss_before) < 64 << 20,
                "{name}: resident memory grew by {} MiB",
                (rss() - rss_before) >> 20
            );
            round_trips(&db, name);
            assert!(server.accepted() > before, "{name}: no reconnection");
        }
        client.close();
    }
}

// ---------------------------------------------------------------------------------
// Invalid UTF-8 where text is expected.

#[test]
fn invalid_utf8_where_text_is_expected_is_classified_and_the_connection_stays_in_step() {
    // Replies that decode (text fields are taken lossily) but that the caller cannot
    // take as text: the error is the caller's alone, the connection stays.
    let in_step: Vec<(&str, Vec<u8>, ErrorKind)> = vec![
        (
            "bulk string",
            b"$2\r\n\xff\xfe\r\n".to_vec(),
            ErrorKind::TypeMismatch,
        ),
        (
            "verbatim text",
            b"=6\r\ntxt:\xc3\x28\r\n".to_vec(),
            ErrorKind::TypeMismatch,
        ),
        (
            "error reply",
            b"-ERR \xff\xfe bad\r\n".to_vec(),
            ErrorKind::Server,
        ),
        (
            "WRONGTYPE error",
            b"-WRONGTYPE \xff\r\n".to_vec(),
            ErrorKind::WrongType,
        ),
        (
            "bulk error",
            b"!6\r\nERR \xff\xfe\r\n".to_vec(),
            ErrorKind::Server,
        ),
        (
            "array of bulk strings",
            b"*1\r\n$1\r\n\xff\r\n".to_vec(),
            ErrorKind::TypeMismatch,
        ),
    ];
    // Text fields that must be numbers: the frame itself is malformed.
    let closing: Vec<(&str, Vec<u8>)> = vec![
        ("double", b",\xff\r\n".to_vec()),
        ("big number", b"(\xff\r\n".to_vec()),
        ("integer", b":\xff\r\n".to_vec()),
        ("bulk length", b"$\xff\r\n".to_vec()),
    ];
    let replies: Arc<Vec<Vec<u8>>> = Arc::new(
        in_step
            .iter()
            .map(|c| c.1.clone())
            .chain(closing.iter().map(|c| c.1.clone()))
            .collect(),
    );
    let server = RawServer::start(true, move |cmd, peer| {
        if !is(cmd, "GET", None) {
            return None;
        }
        let arg = String::from_utf8_lossy(cmd.get(1)?).to_string();
        let i: usize = arg.strip_prefix("utf8:")?.parse().ok()?;
        peer.send(replies.get(i)?);
        Some(Next::Continue)
    });
    let client = server.client();
    let db = client.database();
    round_trips(&db, "before");
    for (i, (name, _, kind)) in in_step.iter().enumerate() {
        let before = server.accepted();
        let (got, bystanders) = with_bystanders(&db, || {
            if name.starts_with("array") {
                db.cmd("GET")
                    .arg(format!("utf8:{i}"))
                    .query::<Vec<String>>()
                    .map(|_| ())
            } else {
                db.get::<String>(format!("utf8:{i}")).map(|_| ())
            }
        });
        let e = assert_kind(got, *kind, name);
        assert!(e.failure().is_none(), "{name}: {e}");
        // In step: every bystander succeeded, on the same connection.
        assert!(bystanders.errors.is_empty(), "{name}: {bystanders:?}");
        round_trips(&db, name);
        assert_eq!(
            server.accepted(),
            before,
            "{name}: the connection was replaced"
        );
    }
    for (j, (name, _)) in closing.iter().enumerate() {
        let i = in_step.len() + j;
        let before = server.accepted();
        let (got, bystanders) = with_bystanders(&db, || db.get::<String>(format!("utf8:{i}")));
        assert_kind(got, ErrorKind::Protocol, name);
        assert!(bystanders.ok > 0, "{name}: {bystanders:?}");
        round_trips(&db, name);
        assert!(server.accepted() > before, "{name}: no reconnection");
    }
    client.close();
}

#[test]
fn invalid_utf8_in_the_handshake_is_classified() {
    // A HELLO map whose keys and values are not UTF-8: taken lossily, the connection
    // works. An error reply to HELLO that is not UTF-8 and not a known code: RESP2.
    for (name, hello) in [
        (
            "HELLO map with invalid UTF-8",
            &b"%2\r\n+\xff\xfe\r\n$2\r\n\xc3\x28\r\n$4\r\nmode\r\n+\xff\r\n"[..],
        ),
        ("HELLO refused with invalid UTF-8", b"-\xff\xfe unknown\r\n"),
    ] {
        let hello = hello.to_vec();
        let server = RawServer::start(true, move |cmd, peer| {
            is(cmd, "HELLO", None).then(|| {
                peer.send(&hello);
                Next::Continue
            })
        });
        let client = Client::connect(server.options()).unwrap_or_else(|e| panic!("{name}: {e}"));
        round_trips(&client.database(), name);
        client.close();
    }
    // A handshake reply that is not a frame at all: a classified connect failure.
    let server = RawServer::start(true, |cmd, peer| {
        is(cmd, "HELLO", None).then(|| {
            peer.send(b"%1\r\n+\xff\r\n,\xff\r\n");
            Next::Continue
        })
    });
    let e = Client::connect(server.options()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
}

// ---------------------------------------------------------------------------------
// Replies nobody asked for.

#[test]
fn a_reply_nobody_asked_for_closes_the_connection_and_others_carry_on() {
    // The first connection gets `+SURPRISE` 300 ms after its handshake, while the
    // client is idle; the client must not keep a connection that is out of step.
    let server = RawServer::start(true, |cmd, peer| {
        if !is(cmd, "HELLO", None) {
            return None;
        }
        peer.send(HELLO3);
        if peer.conn == 0 {
            let mut out = peer.out.try_clone().ok()?;
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(300));
                let _ = out.write_all(b"+SURPRISE\r\n");
            });
        }
        Some(Next::Continue)
    });
    let client = server.client();
    let events = client.events();
    let db = client.database();
    assert!(
        wait_until(WAIT, || server.accepted() >= 2),
        "the out-of-step connection was kept"
    );
    let mut seen = Vec::new();
    let deadline = Instant::now() + WAIT;
    while !seen.iter().any(|e: &String| e.contains("ProtocolFailure")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(e) => seen.push(format!("{e:?}")),
            Err(_) => panic!("no protocol failure reported; events: {seen:?}"),
        }
    }
    // Others on the same client: all fine on the new connection.
    let ((), bystanders) = with_bystanders(&db, || round_trips(&db, "after the surprise"));
    assert!(bystanders.errors.is_empty(), "{bystanders:?}");
    client.close();

    // A surplus reply right after a real one, with nothing else waiting: the caller
    // gets its own reply; the surplus closes the connection.
    let server = RawServer::start(true, |cmd, peer| {
        is(cmd, "GET", Some("double")).then(|| {
            peer.send(b"$3\r\none\r\n$3\r\ntwo\r\n");
            Next::Continue
        })
    });
    let client = server.client();
    let db = client.database();
    assert_eq!(db.get::<String>("double").unwrap(), "one");
    assert!(
        wait_until(WAIT, || server.accepted() >= 2),
        "surplus reply kept"
    );
    round_trips(&db, "after the surplus");
    client.close();
}

#[test]
fn unsolicited_push_frames_and_error_replies_leave_callers_alone() {
    // RESP3 pushes are out of band by design: unknown ones are dropped, the connection
    // stays in step. Sent before every reply to `GET push`, while bystanders run.
    let server = RawServer::start(true, |cmd, peer| {
        is(cmd, "GET", Some("push")).then(|| {
            peer.send(b">3\r\n$7\r\nunknown\r\n:1\r\n$3\r\n\xff\xfe\xfd\r\n");
            peer.send(b">1\r\n$14\r\nMOVING garbage\r\n>0\r\n");
            peer.send(b"$4\r\npush\r\n");
            Next::Continue
        })
    });
    let client = server.client();
    let db = client.database();
    round_trips(&db, "before");
    for _ in 0..5 {
        let (got, bystanders) = with_bystanders(&db, || db.get::<String>("push"));
        assert_eq!(got.unwrap(), "push");
        assert!(bystanders.errors.is_empty(), "{bystanders:?}");
    }
    assert_eq!(server.accepted(), 1, "the connection was replaced");
    client.close();
}

// ---------------------------------------------------------------------------------
// Bad option strings and URLs.

#[test]
fn bad_option_strings_and_urls_are_config_errors() {
    let long_host = "h".repeat(1 << 20);
    let many_items = format!("h{},syncTimeout=x", ",name=x".repeat(100_000));
    let cases: Vec<String> = [
        "",
        "   ",
        ",",
        ",,,",
        "h,=v",
        "h,fooBar=1",
        "h,syncTimeout=abc",
        "h,syncTimeout=-1",
        "h,syncTimeout=0",
        "h,syncTimeout=99999999999999999999999",
        "h,connectTimeout=1.5",
        "h,ssl=maybe",
        "h,ssl=false,sslHost=x",
        "h,protocol=resp4",
        "h,defaultDatabase=-1",
        "h,backlog=sometimes",
        "h,maintRelaxedTimeout=0",
        "h,maintRelaxedTimeout=nan",
        "h,maintRelaxedTimeout=1e400",
        "h,reconnectMin=5000,reconnectMax=10",
        "h:0",
        "h:65536",
        "h:99999999999999999999",
        "h:-1",
        "h:+80",
        "[::1",
        "[nothex]:1",
        "h o st",
        "h\0",
        "redis://",
        "redis://:0",
        "redis://h:0",
        "redis://h:65536",
        "redis://h:port",
        "redis://[::1",
        "redis://[::1]x",
        "redis://h/notadb",
        "redis://h/1/2",
        "redis://h/-1",
        "redis://h?unknown=1",
        "redis://h?syncTimeout=",
        "redis://h?syncTimeout=-5",
        "redis://h?ssl=false&sslHost=x",
        "redis://u:%zz@h",
        "redis://u:%@h",
        "redis://%FF%FE:p@h",
        "redis://u:%FF%FE@h",
        "redis://h?name=%FF",
        "rediss://h?ssl=false",
        "http://h",
        "redis:/h",
        "redis://h#frag",
        "redis://h?=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        long_host.clone() + ":1:2",
        many_items,
        format!("redis://h?{}", "x".repeat(1 << 16)),
    ])
    .collect();
    for input in &cases {
        let shown: String = input.chars().take(60).collect();
        let started = Instant::now();
        let e = match Options::parse(input) {
            Ok(o) => panic!("{shown:?} parsed as {o}"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), ErrorKind::Config, "{shown:?}: {e}");
        // A hang catcher only: how the time grows is checked below, by ratio, so a
        // loaded machine (a CI run once took 2.7 s here for 100 000 items) cannot fail it.
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{shown:?} took {:?}",
            started.elapsed()
        );
        // Errors point at the problem; they do not echo a megabyte of input.
        assert!(
            e.to_string().len() < 1024,
            "{shown:?}: an error of {} bytes",
            e.to_string().len()
        );
        // Client::connect refuses the same text before opening anything.
        let e = Client::connect(input.as_str()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{shown:?}: {e}");
    }
    // An endpoint the builder could not parse is refused by connect, classified.
    let o = Options::default().endpoint("h o st:1");
    let e = Client::connect(o).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Config | ErrorKind::Connect),
        "{e}"
    );
    let _ = long_host;
}

/// Parsing grows linearly with the input: four times the items (or the host's length)
/// take well under sixteen times as long, which a quadratic parser would. Best of
/// three runs each, so a busy machine's pauses do not count.
#[test]
fn parsing_time_grows_linearly_with_the_input() {
    fn best_of_three(input: &str) -> Duration {
        (0..3)
            .map(|_| {
                let started = Instant::now();
                let _ = Options::parse(input);
                started.elapsed()
            })
            .min()
            .unwrap_or_default()
    }
    let items = |n: usize| format!("h{},syncTimeout=x", ",name=x".repeat(n));
    let host = |n: usize| "h".repeat(n) + ":1:2";
    for (what, small, large) in [
        ("items", items(25_000), items(100_000)),
        ("host", host(1 << 18), host(1 << 20)),
    ] {
        let (t1, t4) = (best_of_three(&small), best_of_three(&large));
        assert!(
            t4 < t1 * 10 + Duration::from_millis(100),
            "{what}: x4 input took {t4:?} against {t1:?}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Maintenance notifications of every shape (a property, run in CI).

const NOTIFICATION_KINDS: [&str; 9] = [
    "MOVING",
    "MIGRATING",
    "MIGRATED",
    "FAILING_OVER",
    "FAILED_OVER",
    "SMIGRATING",
    "SMIGRATED",
    "failed_over",
    "message",
];

fn notification_text(port: u16) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(format!("127.0.0.1:{port}")),
        any::<u16>().prop_map(|p| format!("10.1.2.3:{p}")),
        any::<u16>().prop_map(|p| format!("[::1]:{p}")),
        (any::<u16>(), any::<u16>()).prop_map(|(a, b)| format!("{a}-{b}")),
        vec(0u16..16400, 0..4).prop_map(|v| v
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",")),
        Just("?".to_string()),
        "\\PC{0,12}",
    ]
}

fn notification_element(port: u16) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::Int),
        (-1i64..20).prop_map(Value::Int),
        notification_text(port).prop_map(|t| Value::BulkString(t.into_bytes())),
        notification_text(port).prop_map(Value::SimpleString),
        vec(any::<u8>(), 0..8).prop_map(Value::BulkString),
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Boolean),
        (-1e9f64..1e9).prop_map(Value::Double),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec(inner.clone(), 0..3).prop_map(Value::Set),
            vec((inner.clone(), inner), 0..2).prop_map(Value::Map),
        ]
    })
}

fn notifications(port: u16) -> impl Strategy<Value = Vec<(String, Value)>> {
    let one = (
        select(&NOTIFICATION_KINDS[..]),
        any::<bool>(),
        vec(notification_element(port), 0..5),
    )
        .prop_map(|(kind, bulk, rest)| {
            let name = if bulk {
                Value::BulkString(kind.as_bytes().to_vec())
            } else {
                Value::SimpleString(kind.to_string())
            };
            let mut items = vec![name];
            items.extend(rest);
            (kind.to_string(), Value::Push(items))
        });
    vec(one, 1..4)
}

#[test]
fn maintenance_notifications_of_any_shape_never_take_a_reply_or_break_the_connection() {
    let pushes: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(Vec::new()));
    let to_send = pushes.clone();
    // Written just before the reply to each ECHO, so they are read (and handled, on the
    // reader thread) before that reply.
    let server = RawServer::start(true, move |cmd, peer| {
        if !is(cmd, "ECHO", None) {
            return None;
        }
        let mut out = std::mem::take(&mut *to_send.lock().unwrap());
        out.extend(bulk(cmd.get(1)?));
        peer.send(&out);
        Some(Next::Continue)
    });
    let client = Client::connect(format!(
        "{},maintNotifications=auto,maintRelaxedTimeout=0.5,maintRelaxedWindowMax=1,maintPostEventRelaxed=0.5",
        server.options()
    ))
    .unwrap();
    let events = client.events();
    let db = client.database();
    round_trips(&db, "before");
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    let raised = AtomicUsize::new(0);
    runner
        .run(&notifications(server.port), |frames| {
            let mut wire = Vec::new();
            for (_, frame) in &frames {
                encode_value(&mut wire, frame);
            }
            *pushes.lock().unwrap() = wire;
            let token = format!("case:{}", case.fetch_add(1, Ordering::Relaxed));
            let started = Instant::now();
            let got = db.echo::<String>(&token);
            prop_assert!(started.elapsed() <= TIMEOUT + SLACK);
            prop_assert_eq!(got.map_err(|e| e.to_string()), Ok(token), "{:?}", frames);
            for e in events.try_iter() {
                let shown = format!("{e:?}");
                prop_assert!(
                    !matches!(e, ClientEvent::ConnectionFailed { .. }),
                    "{}: {:?}",
                    shown,
                    frames
                );
                if let ClientEvent::Maintenance(m) = &e {
                    let _ = m.to_string();
                    raised.fetch_add(1, Ordering::Relaxed);
                }
            }
            // No handoff reconnects anywhere: the very first connection is still the one.
            if !frames.iter().any(|(k, _)| k == "MOVING") {
                prop_assert_eq!(server.accepted(), 1);
            }
            Ok(())
        })
        .unwrap();
    assert!(
        raised.load(Ordering::Relaxed) > 0,
        "no generated notification was ever read as one"
    );
    client.close();
}

// ---------------------------------------------------------------------------------
// REST answers to the lag-aware probe: garbage, huge, endless, truncated, not HTTP.

/// A scripted HTTPS server: every connection gets `answer` after its request head.
struct HttpsServer {
    port: u16,
    cert_pem: String,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

type Answer = dyn Fn(&mut dyn Write) + Send + Sync;

impl HttpsServer {
    fn start(answer: impl Fn(&mut dyn Write) + Send + Sync + 'static) -> HttpsServer {
        let answer: Arc<Answer> = Arc::new(answer);
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "bad-input REST server");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let cert_pem = cert.pem();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(
                    vec![cert.der().clone()],
                    rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
                )
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stop = stop.clone();
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok((tcp, _)) = listener.accept() else {
                        thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    let (config, answer, stop) = (config.clone(), answer.clone(), stop.clone());
                    thread::spawn(move || {
                        let _ = tcp.set_nonblocking(false);
                        let _ = tcp.set_write_timeout(Some(Duration::from_secs(5)));
                        let Ok(conn) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        let mut tls = rustls::StreamOwned::new(conn, tcp);
                        let mut head = Vec::new();
                        let mut byte = [0u8; 1];
                        while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                            match std::io::Read::read(&mut tls, &mut byte) {
                                Ok(1) => head.push(byte[0]),
                                _ => return,
                            }
                        }
                        if !stop.load(Ordering::Relaxed) {
                            answer(&mut tls);
                        }
                        let _ = tls.flush();
                        tls.conn.send_close_notify();
                        let _ = tls.flush();
                    });
                }
            })
        };
        HttpsServer {
            port,
            cert_pem,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

fn http_ok(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[test]
fn garbage_or_huge_rest_answers_are_inconclusive_in_time_with_bounded_memory() {
    const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
    let _memory = memory_measured();
    let nested = "[".repeat(1_000_000);
    let cases: Vec<(&str, Arc<Answer>)> = vec![
        (
            "a body that is not JSON",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(&http_ok(b"\x00\xffnot json <<<"));
            }),
        ),
        (
            "JSON of the wrong shape (object)",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(&http_ok(br#"{"bdbs": 5, "uid": "x"}"#));
            }),
        ),
        (
            "JSON of the wrong shape (array)",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(&http_ok(
                    br#"[1, "x", null, {"uid": "one", "endpoints": 7}]"#,
                ));
            }),
        ),
        (
            "JSON nested 10^6 deep",
            Arc::new(move |w: &mut dyn Write| {
                let _ = w.write_all(&http_ok(nested.as_bytes()));
            }),
        ),
        (
            "a 16 MiB body",
            Arc::new(|w: &mut dyn Write| {
                let n = 16 << 20;
                let _ = w.write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n[").as_bytes(),
                );
                let chunk = vec![b' '; 64 * 1024];
                for _ in 0..(n / chunk.len()) {
                    if w.write_all(&chunk).is_err() {
                        return;
                    }
                }
            }),
        ),
        (
            "an endless chunked body",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
                for _ in 0..4096 {
                    if w.write_all(chunk.as_bytes()).is_err() {
                        return;
                    }
                }
            }),
        ),
        (
            "a declared length of 2^63-1",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n[1,2",
                );
            }),
        ),
        (
            "a declared length past u64",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n[]",
                );
            }),
        ),
        (
            "half a body, then close",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[{\"uid\": 1,");
            }),
        ),
        (
            "not HTTP at all",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\xff\xfe\x00garbage\r\n\r\n");
            }),
        ),
        (
            "a 1 MiB header line",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nX-Huge: ");
                let _ = w.write_all(&vec![b'a'; 1 << 20]);
                let _ = w.write_all(b"\r\nContent-Length: 2\r\n\r\n[]");
            }),
        ),
        (
            "an answer that drips past the deadline",
            Arc::new(|w: &mut dyn Write| {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n[");
                for _ in 0..100 {
                    thread::sleep(Duration::from_millis(50));
                    if w.write_all(b" ").and_then(|()| w.flush()).is_err() {
                        return;
                    }
                }
            }),
        ),
    ];
    for (name, answer) in cases {
        let server = HttpsServer::start(move |w| answer(w));
        let options = LagAwareOptions::new(|| Some(RestCredentials::new("monitor", "p")))
            .rest_endpoint(format!("https://127.0.0.1:{}", server.port))
            .trust_issuer_pem(server.cert_pem.as_bytes())
            .unwrap();
        let probe = LagAware::new(options);
        let before = rss();
        let started = Instant::now();
        let outcome = probe.check_endpoint(
            &Endpoint::new("redis-12000.cluster.local", 12000),
            PROBE_TIMEOUT,
        );
        let took = started.elapsed();
        assert_eq!(
            outcome.result(),
            ProbeResult::Inconclusive,
            "{name}: {outcome:?}"
        );
        assert!(took <= PROBE_TIMEOUT + SLACK, "{name}: took {took:?}");
        let grown = rss().saturating_sub(before);
        assert!(
            grown < 64 << 20,
            "{name}: resident memory grew by {} MiB",
            grown >> 20
        );
        // The reason is said, and in words (never the body itself).
        let text = outcome.to_string();
        assert!(!text.is_empty() && text.len() < 1024, "{name}: {text:?}");
    }
}
