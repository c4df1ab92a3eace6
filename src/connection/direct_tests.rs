//! The read token's hand-over between the reader thread and callers, against the fake
//! server: a sequential caller reads its own replies, callers in flight together hand
//! the token to each other, a push or the close on a connection left idle is still
//! seen by the reader thread, a caller reading for itself still times out on a silent
//! server, and neither a caller giving up nor one who never comes back leaves a reply
//! unread or a frame unsent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::reply_slot::{Outcome, ReplySlot};
use super::transport::Dial;
use super::*;
use crate::clock;
use crate::resp::{write_arg, write_command_header};
use crate::testkit::{FakeServer, Notification};

fn command(args: &[&str]) -> Vec<u8> {
    let mut buf = Vec::new();
    write_command_header(&mut buf, args.len());
    for a in args {
        write_arg(&mut buf, a.as_bytes());
    }
    buf
}

fn config(
    server: &FakeServer,
    pushes: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
) -> ConnectionConfig {
    config_to(
        server.addr(),
        "maintNotifications=enabled",
        pushes,
        failures,
    )
}

fn config_to(
    addr: std::net::SocketAddr,
    settings: &str,
    pushes: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
) -> ConnectionConfig {
    let options = Options::parse(&format!("{addr},{settings}")).expect("options");
    ConnectionConfig {
        endpoint: Endpoint::new(addr.ip().to_string(), addr.port()),
        options: Arc::new(options),
        tls: None,
        timeouts: Arc::new(ServerTimeouts::new(clock::system())),
        on_push: Some(Arc::new(move |_: &ConnectionInfo, _: Value| {
            pushes.fetch_add(1, Ordering::SeqCst);
        })),
        on_failure: Some(Arc::new(
            move |_: &ConnectionInfo, _: FailureKind, _: &Error| {
                failures.fetch_add(1, Ordering::SeqCst);
            },
        )),
        role: "",
        subscriber: false,
        readonly: false,
        breaker: None,
        dial: Arc::new(Dial::default()),
        census: None,
        company: Default::default(),
    }
}

fn wait_until(what: impl Fn() -> bool) -> bool {
    crate::clock::poll_until(Duration::from_secs(10), what)
}

fn echo(conn: &Connection, token: &str, timeout: Duration) -> std::result::Result<Value, String> {
    match conn.request(
        &command(&["ECHO", token]),
        1,
        Deadline::after(timeout),
        Traffic::Caller,
    ) {
        Ok(Outcome::One(v)) => Ok(v),
        Ok(Outcome::Failed(e)) | Err(RequestError::Failed(e)) | Err(RequestError::Unsent(e)) => {
            Err(e.to_string())
        }
        Ok(Outcome::Many(_)) => Err("several replies".into()),
    }
}

#[test]
fn a_sequential_caller_reads_its_own_replies_and_an_idle_connection_is_still_read() {
    let server = FakeServer::start().expect("fake");
    let (pushes, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Connection::open(&config(&server, pushes.clone(), failures.clone())).expect("open");
    for i in 0..200 {
        let token = format!("t{i}");
        let reply = echo(&conn, &token, Duration::from_secs(5)).expect("reply");
        assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
    }
    // How many depends on scheduling (a caller descheduled for a whole tick finds the
    // thread back), so only that it happens is asserted; a quiet run reads ~197.
    let direct = conn.shared.pending.lock().token.caller_turns();
    assert!(direct > 0, "no reply of 200 read directly");

    // Left idle, the reader thread takes the token back: a push still arrives, and
    // so does the close.
    assert!(conn.maint_notifications());
    push_and_close_are_seen(&server, &pushes, &failures);
    assert!(conn.is_closed());
}

#[test]
fn a_write_that_never_returns_does_not_keep_the_reader_from_reading() {
    // A blocking read lets a send in progress return first, but only briefly: with
    // the write half held for good (a write stuck on a full socket), pushes are
    // still read, one after another.
    let server = FakeServer::start().expect("fake");
    let (pushes, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Connection::open(&config(&server, pushes.clone(), failures.clone())).expect("open");
    let _stuck = conn.shared.socket.lock();
    for seen in 1..=3 {
        server.notify(Notification::failing_over(5, &["1"]));
        assert!(
            wait_until(|| pushes.load(Ordering::SeqCst) == seen),
            "push {seen} read"
        );
    }
    assert_eq!(failures.load(Ordering::SeqCst), 0);
}

/// On a connection left idle: a push reaches the handler, then the server's close
/// fails the connection.
fn push_and_close_are_seen(server: &FakeServer, pushes: &AtomicUsize, failures: &AtomicUsize) {
    server.notify(Notification::failing_over(5, &["1"]));
    assert!(
        wait_until(|| pushes.load(Ordering::SeqCst) == 1),
        "push seen"
    );
    server.close_all_connections();
    assert!(
        wait_until(|| failures.load(Ordering::SeqCst) == 1),
        "close seen"
    );
}

/// Runs two lone calls (the thread stands down) and then `call`; `true` when `call`
/// was read directly. It is not when the test thread was descheduled for a whole tick
/// between them, so callers try again.
fn after_two_lone_calls<T>(conn: &Connection, call: impl FnOnce() -> T) -> (T, bool) {
    // A late reply still owed to an earlier try would make "a" not alone.
    assert!(wait_until(|| !conn.has_pending()), "the late reply came");
    echo(conn, "a", Duration::from_secs(5)).expect("a");
    echo(conn, "b", Duration::from_secs(5)).expect("b");
    let before = conn.shared.pending.lock().token.caller_turns();
    let out = call();
    (
        out,
        conn.shared.pending.lock().token.caller_turns() > before,
    )
}

#[test]
fn a_waiting_caller_reads_the_replies_while_the_token_s_holder_is_away() {
    // The token goes to a caller (the thread stood down) that then does not read: a
    // caller waiting next to it reads and hands out the reply instead, and the
    // holder, when it comes to read, finds its reply and passes the token on.
    let server = FakeServer::start().expect("fake");
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Connection::open(&config(&server, counters.0, counters.1)).expect("open");
    for _ in 0..20 {
        let slot = Arc::new(ReplySlot::on_board(conn.shared.board.clone()));
        let (submitted, _) = after_two_lone_calls(&conn, || {
            conn.submit(
                &command(&["ECHO", "away"]),
                1,
                Deadline::after(Duration::from_secs(5)),
                Traffic::Caller,
                slot.clone(),
            )
            .expect("queued")
        });
        if !submitted.direct {
            // The thread reads this one; let it, and try again.
            assert!(wait_until(|| slot.is_done()), "the thread read it");
            continue;
        }
        assert!(
            wait_until(|| {
                reader::help_read(&conn.shared);
                slot.is_done()
            }),
            "a waiting caller read the reply"
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        read_turns::direct(&conn.shared, &slot, || deadline);
        match slot.try_take() {
            Some(Outcome::One(v)) => assert_eq!(v.as_bytes(), Some(&b"away"[..])),
            _ => panic!("expected the reply"),
        }
        // In step, and the token moved on: the next calls are answered.
        for token in ["next", "and next"] {
            let reply = echo(&conn, token, Duration::from_secs(5)).expect("reply");
            assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
        }
        return;
    }
    panic!("the token never went to a caller in 20 tries");
}

#[test]
fn a_direct_reader_times_out_on_a_silent_server_and_the_next_caller_gets_its_own_reply() {
    let server = FakeServer::start().expect("fake");
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Connection::open(&config(&server, counters.0, counters.1)).expect("open");
    let mut direct = false;
    for _ in 0..20 {
        server.delay_replies(None);
        let (err, was_direct) = after_two_lone_calls(&conn, || {
            server.delay_replies(Some(Duration::from_millis(300)));
            echo(&conn, "late", Duration::from_millis(50)).expect_err("timed out")
        });
        assert!(err.contains("no reply within"), "{err}");
        if was_direct {
            direct = true;
            break;
        }
    }
    assert!(direct, "never read directly in 20 tries");
    server.delay_replies(None);
    // The late reply is discarded; the next caller gets its own.
    let reply = echo(&conn, "next", Duration::from_secs(5)).expect("next");
    assert_eq!(reply.as_bytes(), Some(&b"next"[..]));
    assert!(!conn.is_closed());
}

#[test]
fn a_push_that_arrives_while_a_caller_reads_for_itself_is_dispatched_in_order() {
    let server = FakeServer::start().expect("fake");
    let (pushes, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Connection::open(&config(&server, pushes.clone(), failures)).expect("open");
    assert!(conn.maint_notifications());
    for attempt in 1..=20 {
        let before = conn.shared.pending.lock().token.caller_turns();
        let token = format!("c{attempt}");
        let (reply, was_direct) = std::thread::scope(|s| {
            let reading = s.spawn(|| {
                after_two_lone_calls(&conn, || {
                    server.delay_replies(Some(Duration::from_millis(200)));
                    echo(&conn, &token, Duration::from_secs(5))
                })
            });
            // The push goes out while the reply is held back, or (not direct) after.
            wait_until(|| {
                conn.shared.pending.lock().token.caller_turns() > before || reading.is_finished()
            });
            server.notify(Notification::failing_over(5, &["1"]));
            reading.join().expect("caller")
        });
        server.delay_replies(None);
        assert_eq!(reply.expect("reply").as_bytes(), Some(token.as_bytes()));
        assert!(wait_until(|| pushes.load(Ordering::SeqCst) == attempt));
        if was_direct {
            let reply = echo(&conn, "d", Duration::from_secs(5)).expect("d");
            assert_eq!(reply.as_bytes(), Some(&b"d"[..]));
            return;
        }
    }
    panic!("never read directly in 20 tries");
}

#[test]
fn many_callers_after_a_lone_one_are_all_answered() {
    let server = FakeServer::start().expect("fake");
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Arc::new(Connection::open(&config(&server, counters.0, counters.1)).expect("open"));
    for round in 0..20 {
        // A lone call stands the reader thread down; then 8 callers at once.
        echo(&conn, "lone", Duration::from_secs(5)).expect("lone");
        std::thread::scope(|s| {
            for t in 0..8 {
                let conn = conn.clone();
                s.spawn(move || {
                    let token = format!("r{round}t{t}");
                    let reply = echo(&conn, &token, Duration::from_secs(10)).expect("reply");
                    assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
                });
            }
        });
    }
}

#[test]
fn callers_in_flight_together_hand_the_token_to_each_other_and_each_gets_its_own_replies() {
    let server = FakeServer::start().expect("fake");
    let (pushes, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Arc::new(
        Connection::open(&config(&server, pushes.clone(), failures.clone())).expect("open"),
    );
    // How often a caller reads depends on scheduling (on a busy machine the thread
    // may find every reply in one read, with nobody left waiting): rounds until one
    // did.
    let mut read_by_a_caller = false;
    for round in 0..20 {
        let before = conn.shared.pending.lock().token.caller_turns();
        std::thread::scope(|s| {
            for t in 0..3 {
                let conn = conn.clone();
                s.spawn(move || {
                    for i in 0..100 {
                        let token = format!("r{round}t{t}-{i}");
                        let reply = echo(&conn, &token, Duration::from_secs(10)).expect("reply");
                        assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
                    }
                });
            }
        });
        if conn.shared.pending.lock().token.caller_turns() > before {
            read_by_a_caller = true;
            break;
        }
    }
    assert!(
        read_by_a_caller,
        "no reply of 20 rounds of 300 read by a caller"
    );
    // Left idle, the reader thread takes the token back from the callers.
    push_and_close_are_seen(&server, &pushes, &failures);
}

#[test]
fn a_frame_held_for_callers_who_never_come_back_is_sent_anyway() {
    let server = FakeServer::start().expect("fake");
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Connection::open(&config(&server, counters.0, counters.1)).expect("open");
    // Once the writer thread waits for frames, nobody but the holder sends a held one.
    assert!(wait_until(|| conn.shared.out.lock().writer_waiting));
    for i in 0..8 {
        // As if eight callers were just answered together and went elsewhere.
        conn.shared.returning.store(8, Ordering::SeqCst);
        let token = format!("h{i}");
        let reply = echo(&conn, &token, Duration::from_secs(5)).expect("reply");
        assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
        if i == 0 {
            // A miss forgets who was expected; this call's own answer counts again.
            let r = conn.shared.returning.load(Ordering::SeqCst);
            assert!(r <= 1, "returning {r}");
        }
    }
}

#[test]
fn callers_giving_up_while_others_wait_never_leave_the_token_with_nobody() {
    // Below `FEW_IN_FLIGHT` (callers read for each other), around it (12) and across
    // it (20: callers park and the reader thread reads, then serve each other again).
    for threads in [4, 12, 20] {
        callers_giving_up_while_others_wait(threads);
    }
}

fn callers_giving_up_while_others_wait(threads: usize) {
    let server = FakeServer::start().expect("fake");
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Arc::new(Connection::open(&config(&server, counters.0, counters.1)).expect("open"));
    server.jitter(Duration::from_millis(4));
    let (answered, gave_up) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for t in 0..threads {
            let (conn, answered, gave_up) = (conn.clone(), &answered, &gave_up);
            s.spawn(move || {
                for i in 0..40 {
                    // Every other call gives up before most replies come.
                    let timeout = if (t + i) % 2 == 0 { 2 } else { 10_000 };
                    let token = format!("g{t}-{i}");
                    match echo(&conn, &token, Duration::from_millis(timeout)) {
                        Ok(reply) => {
                            assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => {
                            assert!(e.contains("no reply within"), "{e}");
                            assert_eq!(timeout, 2, "a patient caller failed: {e}");
                            gave_up.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    assert!(
        answered.load(Ordering::SeqCst) >= threads * 20,
        "every patient caller answered ({threads} threads)"
    );
    server.jitter(Duration::ZERO);
    assert!(
        wait_until(|| !conn.has_pending()),
        "the late replies were read"
    );
    let reply = echo(&conn, "after", Duration::from_secs(5)).expect("after");
    assert_eq!(reply.as_bytes(), Some(&b"after"[..]));
    assert!(!conn.is_closed());
}

/// Watches for lock cycles (parking_lot's deadlock detection) while callers time out,
/// hand the token to each other and hold frames, the server pushes and then closes:
/// a cycle aborts with every stuck thread's backtrace instead of hanging the suite.
#[cfg(feature = "deadlock-detection")]
#[test]
fn no_lock_cycle_while_callers_read_for_each_other_time_out_and_the_server_pushes_and_closes() {
    use std::sync::atomic::AtomicBool;
    let done = Arc::new(AtomicBool::new(false));
    let watch = {
        let done = done.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let cycles = parking_lot::deadlock::check_deadlock();
                if !cycles.is_empty() {
                    for (i, threads) in cycles.iter().enumerate() {
                        for t in threads {
                            eprintln!(
                                "lock cycle {i}, thread {:?}:\n{:?}",
                                t.thread_id(),
                                t.backtrace()
                            );
                        }
                    }
                    eprintln!("{} lock cycle(s) in the connection", cycles.len());
                    std::process::abort();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let server = FakeServer::start().expect("fake");
    let (pushes, failures) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn =
        Arc::new(Connection::open(&config(&server, pushes, failures.clone())).expect("open"));
    server.jitter(Duration::from_millis(2));
    std::thread::scope(|s| {
        // Across `FEW_IN_FLIGHT`: callers serve each other, then park, and back.
        for t in 0..20 {
            let conn = conn.clone();
            s.spawn(move || {
                for i in 0..150 {
                    let timeout = if (t + i) % 3 == 0 { 1 } else { 10_000 };
                    let token = format!("d{t}-{i}");
                    if let Ok(reply) = echo(&conn, &token, Duration::from_millis(timeout)) {
                        assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
                    }
                }
            });
        }
        s.spawn(|| {
            for _ in 0..20 {
                server.notify(Notification::failing_over(5, &["1"]));
                std::thread::yield_now();
            }
        });
    });
    server.close_all_connections();
    assert!(
        wait_until(|| failures.load(Ordering::SeqCst) == 1),
        "close seen"
    );
    done.store(true, Ordering::SeqCst);
    watch.join().expect("watch");
}

#[test]
fn large_frames_are_written_by_their_callers_in_order_among_small_ones() {
    let server = FakeServer::start().expect("fake");
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let conn = Arc::new(Connection::open(&config(&server, counters.0, counters.1)).expect("open"));
    std::thread::scope(|s| {
        for t in 0..6 {
            let conn = conn.clone();
            s.spawn(move || {
                for i in 0..40 {
                    // Every third caller's frames are large: they wait for the turn to
                    // write them while the others' small ones are queued and sent.
                    let token = if t % 3 == 0 {
                        format!("{t}-{i}-{}", "L".repeat(100 * 1024 + i))
                    } else {
                        format!("{t}-{i}")
                    };
                    let reply = echo(&conn, &token, Duration::from_secs(10)).expect("reply");
                    assert_eq!(reply.as_bytes(), Some(token.as_bytes()));
                }
            });
        }
    });
    let out = conn.shared.out.lock();
    assert!(
        out.buf.capacity() <= 64 * 1024 && out.spare.capacity() <= 64 * 1024,
        "the connection kept a large buffer"
    );
}

/// A server that answers its first `ECHO before` and then stops reading, with the
/// socket left open until `stop` is set.
fn stops_reading_after_one_reply(
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let t = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !seen.windows(6).any(|w| w == b"before") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        let _ = s.write_all(b"$6\r\nbefore\r\n");
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    (addr, t)
}

#[test]
fn a_large_frame_to_a_server_that_stops_reading_ends_with_its_call() {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (addr, server) = stops_reading_after_one_reply(stop.clone());
    let counters = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let cfg = config_to(addr, "protocol=resp2", counters.0, counters.1.clone());
    let conn = Connection::open(&cfg).expect("open");
    echo(&conn, "before", Duration::from_secs(5)).expect("a reply before it stops reading");
    // More than the kernel's buffers hold: the write blocks once they are full.
    let large = "x".repeat(64 << 20);
    let started = Instant::now();
    let result = echo(&conn, &large, Duration::from_millis(300));
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    assert!(result.is_err(), "a reply from a server that reads nothing");
    assert!(
        took < Duration::from_secs(3),
        "held {took:?} past a 300 ms call"
    );
    // Part of a frame went out: the connection is out of step, so it is failed.
    assert!(wait_until(|| conn.is_closed()), "the connection stays open");
    assert_eq!(
        counters.1.load(Ordering::SeqCst),
        1,
        "its owner was told once"
    );
    drop(conn);
    server.join().expect("server");
}
