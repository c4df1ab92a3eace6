//! P10, P11 and P12: the server at a distance, a slow server, and an idle client.
//!
//! The users of this library talk to a server in another zone or region, so every
//! waiting choice is judged here as well as on loopback. A delay proxy in a process of
//! its own (this bench binary run as `compare proxy …`, serving the testkit's
//! `DelayProxy`) puts the bench's `redis-server` 250 µs, 1 ms and 10 ms away; a slow
//! server is the testkit's fake with `delay_replies(1 ms)`, also in a process of its
//! own (`compare slow-server …`). Only this process's CPU is counted, so neither the
//! proxy's nor the server's work lands on either client.
//!
//! Owns: the child processes (killed when their guard drops) and the P10–P12 table.
//! Must never: count the proxy's or the server's CPU as a client's.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::report;
use crate::workloads::{interleave, median, mixed_ours, mixed_theirs, ours_client, Keys, Rate};
use resilient_redis::StringCommands;

/// Where the server is, as the table names it.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// Loopback, no proxy.
    Direct,
    /// Behind the delay proxy, this round trip away.
    Away(Duration),
    /// The fake in its own process, each reply this late.
    Slow(Duration),
}

impl Place {
    fn label(self) -> String {
        match self {
            Place::Direct => "loopback".into(),
            Place::Away(rt) => format!("{} away", report::time(rt.as_nanos() as f64)),
            Place::Slow(d) => format!(
                "slow server ({} replies)",
                report::time(d.as_nanos() as f64)
            ),
        }
    }

    /// (throughput ratio at least, CPU ratio at most) at `threads`.
    fn goal(self, threads: usize) -> (f64, f64) {
        match self {
            Place::Direct => crate::thread_goal(threads).unwrap_or((1.0, 1.0)),
            Place::Away(_) => (0.98, if threads >= 16 { 0.75 } else { 1.0 }),
            Place::Slow(_) => (1.0, 1.0),
        }
    }

    /// A window long enough for some hundreds of calls at one thread.
    fn window(self, quick: bool) -> Duration {
        let per_call = match self {
            Place::Direct => Duration::from_micros(50),
            Place::Away(rt) => rt,
            Place::Slow(d) => d,
        };
        let full = (per_call * 250).clamp(Duration::from_millis(800), Duration::from_secs(3));
        if quick {
            full / 4
        } else {
            full
        }
    }
}

/// A child process of this bench binary serving something on a loopback port; killed
/// when dropped.
pub struct Sidecar {
    child: Child,
    pub port: u16,
}

impl Sidecar {
    /// Runs `compare <args…>`, which prints the port it serves on its first line.
    fn spawn(args: &[String]) -> Sidecar {
        let exe = std::env::current_exe().expect("the bench's own path");
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a child of the bench");
        let stdout = child.stdout.take().expect("the child's stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the child's port");
        let port = line.trim().parse().expect("a port number from the child");
        Sidecar { child, port }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A delay proxy in front of the server on `port`, `round_trip` away.
    pub fn proxy(port: u16, round_trip: Duration) -> Sidecar {
        Sidecar::spawn(&[
            "proxy".into(),
            port.to_string(),
            round_trip.as_micros().to_string(),
        ])
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `compare proxy <upstream port> <round trip µs>`: a `DelayProxy` in this process
/// until stdin closes (the bench ended or died).
pub fn serve_proxy(args: &[String]) {
    let usage = "usage: compare proxy <upstream port> <round trip µs>";
    let port: u16 = args.first().and_then(|a| a.parse().ok()).expect(usage);
    let us: u64 = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let proxy =
        resilient_redis::testkit::DelayProxy::start(("127.0.0.1", port), Duration::from_micros(us))
            .expect("start the delay proxy");
    println!("{}", proxy.port());
    wait_for_stdin_to_close();
}

/// `compare slow-server <reply delay µs>`: the testkit's fake with delayed replies,
/// in this process until stdin closes.
pub fn serve_slow(args: &[String]) {
    let us: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .expect("usage: compare slow-server <reply delay µs>");
    let server = resilient_redis::testkit::FakeServer::start().expect("start the fake");
    server.delay_replies(Some(Duration::from_micros(us)));
    println!("{}", server.addr().port());
    wait_for_stdin_to_close();
}

fn wait_for_stdin_to_close() {
    use std::io::Read;
    let mut sink = [0u8; 64];
    while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
}

/// The P10–P12 table: ours (one shared `Client`) against redis-rs (a connection per
/// thread) at each place and thread count, interleaved, client process CPU only; and
/// an idle client's CPU.
pub fn table(quick: bool, direct_port: u16, keys: &Keys, notes: &mut Vec<String>) -> String {
    let places = places();
    let counts: Vec<usize> = std::env::var("BENCH_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1, 2, 4, 16, 64]);
    let rounds = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if quick { 1 } else { 3 });
    let load_start = crate::load_average();
    let mut cells = Vec::new();
    let mut errors = (0, 0);
    for place in places {
        let child = match place {
            Place::Direct => None,
            Place::Away(rt) => Some(Sidecar::proxy(direct_port, rt)),
            Place::Slow(d) => Some(Sidecar::spawn(&[
                "slow-server".into(),
                d.as_micros().to_string(),
            ])),
        };
        let url = child
            .as_ref()
            .map_or_else(|| format!("redis://127.0.0.1:{direct_port}"), Sidecar::url);
        if let Place::Slow(_) = place {
            keys.populate(&ours_client(&url).database());
        }
        let dur = place.window(quick);
        for &threads in &counts {
            let mut ours_run = || mixed_ours(&url, threads, dur, keys);
            let mut theirs_run = || mixed_theirs(&url, threads, dur, keys);
            let results: Vec<Vec<Rate>> = interleave(rounds, &mut [&mut ours_run, &mut theirs_run]);
            let rate = |rs: &[Rate]| median(&rs.iter().map(Rate::per_sec).collect::<Vec<_>>());
            let cpu = |rs: &[Rate]| median(&rs.iter().map(Rate::cpu_per_call).collect::<Vec<_>>());
            let (a, b) = (rate(&results[0]), rate(&results[1]));
            let (ca, cb) = (cpu(&results[0]), cpu(&results[1]));
            errors.0 += results[0].iter().map(|r| r.errors).sum::<u64>();
            errors.1 += results[1].iter().map(|r| r.errors).sum::<u64>();
            let (min_ratio, max_cpu) = place.goal(threads);
            let met = a / b >= min_ratio && ca / cb <= max_cpu;
            cells.push(vec![
                place.label(),
                threads.to_string(),
                report::rate(a),
                report::rate(b),
                format!("{:.2}", a / b),
                format!("{:.1} µs", ca / 1000.0),
                format!("{:.1} µs", cb / 1000.0),
                format!("{:.2}", ca / cb),
                format!("≥ {min_ratio:.2}, ≤ {max_cpu:.2}"),
                if met { "pass" } else { "FAIL" }.to_string(),
            ]);
        }
    }
    let idle = idle_share(quick, direct_port);
    cells.push(vec![
        "idle client (loopback)".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        format!("{:.3} % of a core", idle * 100.0),
        "-".into(),
        "-".into(),
        "< 0.5 %".into(),
        if idle < 0.005 { "pass" } else { "FAIL" }.to_string(),
    ]);
    notes.push(format!(
        "distance: GET/SET 50/50 on 32 B, median of {rounds} interleaved windows per point \
         (800 ms to 3 s, longer when the server is farther); CPU = user + system time of \
         this process only (callers and the client's threads; the proxy and the slow \
         server run in processes of their own), per completed call{}",
        if errors == (0, 0) {
            String::new()
        } else {
            format!("; ERRORS: ours {}, redis-rs {}", errors.0, errors.1)
        }
    ));
    format!(
        "The server at a distance (P10), a slow server (P11), an idle client (P12); load \
         average {load_start} at the start, {} at the end:\n{}",
        crate::load_average(),
        report::table(
            &[
                "where",
                "threads",
                "ours",
                "redis-rs",
                "ratio",
                "ours CPU/call",
                "redis-rs CPU/call",
                "CPU ratio",
                "goal (ratio, CPU ratio)",
                "met",
            ],
            &cells
        )
    )
}

/// The places to measure: all, or `BENCH_PLACES=direct,250us,1ms,10ms,slow`.
fn places() -> Vec<Place> {
    let all = vec![
        Place::Direct,
        Place::Away(Duration::from_micros(250)),
        Place::Away(Duration::from_millis(1)),
        Place::Away(Duration::from_millis(10)),
        Place::Slow(Duration::from_millis(1)),
    ];
    let Ok(wanted) = std::env::var("BENCH_PLACES") else {
        return all;
    };
    wanted
        .split(',')
        .filter_map(|w| match w.trim() {
            "direct" => Some(Place::Direct),
            "slow" => Some(Place::Slow(Duration::from_millis(1))),
            t => t
                .strip_suffix("us")
                .and_then(|n| n.parse().ok())
                .map(Duration::from_micros)
                .or_else(|| {
                    t.strip_suffix("ms")
                        .and_then(|n| n.parse().ok())
                        .map(Duration::from_millis)
                })
                .map(Place::Away),
        })
        .collect()
}

/// The share of one core an idle client (connected, one call made, then nothing)
/// takes over a window.
fn idle_share(quick: bool, port: u16) -> f64 {
    let client = ours_client(&format!("redis://127.0.0.1:{port}"));
    let db = client.database();
    let _ = db.get::<Option<Vec<u8>>>("bench:idle");
    // Let the connection settle (its reader's ticks reach their longest) first.
    std::thread::sleep(Duration::from_secs(1));
    let window = if quick {
        Duration::from_secs(2)
    } else {
        Duration::from_secs(10)
    };
    let cpu = crate::workloads::process_cpu();
    let start = Instant::now();
    std::thread::sleep(window);
    let used = crate::workloads::process_cpu().saturating_sub(cpu);
    let share = used.as_secs_f64() / start.elapsed().as_secs_f64();
    client.close();
    share
}
