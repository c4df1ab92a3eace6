//! resilient-redis vs redis-rs (sync, one connection per thread) vs `redis-benchmark`,
//! against one `redis-server` this bench starts, in one run, printed as one table.
//!
//! ```sh
//! cargo bench --bench compare                     # everything (about 3 minutes)
//! BENCH_QUICK=1 cargo bench --bench compare       # short windows, a smoke run
//! cargo bench --bench compare -- p1 p4 sizes      # only these workloads
//! ```
//!
//! Workloads (ids as in `docs/performance.md`): `p1` `p2` `p3` `p4` `p5`, `ref`
//! (redis-benchmark reference figures), `threads` (throughput from 1 to 64 threads),
//! `sizes` (GET latency from 32 B to 16 MiB), `distance` (P10–P12: the server 250 µs,
//! 1 ms and 10 ms away through a delay proxy, a slow server, an idle client; narrowed
//! with `BENCH_PLACES=direct,250us,1ms,10ms,slow` and `BENCH_THREADS=1,4`). The filter can also come from
//! `BENCH_FILTER=p1,p2`. P9 (codec instructions) is measured under callgrind by
//! `scripts/bench.sh`, which passes its figures in `BENCH_P9_OURS`/`BENCH_P9_THEIRS`
//! so they land in the same table.
//!
//! The machine has 2 cores shared by client and server, so every comparison is run
//! interleaved (ours, theirs, ours, theirs…) after a warm-up, and medians are taken.

#[path = "compare/distance.rs"]
mod distance;
/// The machine's idle and stolen CPU time, shared with the integration tests.
#[path = "../tests/support/machine.rs"]
mod machine;
#[path = "compare/report.rs"]
mod report;
#[path = "compare/server.rs"]
mod server;
#[path = "compare/workloads.rs"]
mod workloads;

use std::cell::Cell;
use std::time::{Duration, Instant};

use report::{Row, Target};
use resilient_redis::{Database, StringCommands};
use server::RedisServer;
use workloads::{
    interleave, latency_ab, median, mixed_ours, mixed_theirs, ours_client, ours_get, theirs_conn,
    theirs_get, Keys, Rate,
};

const WORKLOADS: &[&str] = &[
    "p1", "p2", "p3", "p4", "p5", "p9", "ref", "threads", "sizes", "distance",
];

/// What to run and for how long.
struct Plan {
    quick: bool,
    only: Vec<String>,
}

impl Plan {
    fn from_env() -> Plan {
        let mut quick = env_flag("BENCH_QUICK");
        let mut only: Vec<String> = std::env::var("BENCH_FILTER")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        // `cargo bench` passes `--bench`; other flags are ignored the same way.
        for arg in std::env::args().skip(1) {
            match arg.as_str() {
                "--quick" => quick = true,
                a if a.starts_with('-') => {}
                a => only.push(a.to_ascii_lowercase()),
            }
        }
        for w in &only {
            if !WORKLOADS.contains(&w.as_str()) {
                eprintln!("unknown workload {w:?}; known: {}", WORKLOADS.join(" "));
                std::process::exit(2);
            }
        }
        Plan { quick, only }
    }

    fn wants(&self, workload: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w == workload)
    }

    /// Full value, or the quick one.
    fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

fn env_flag(name: &str) -> bool {
    matches!(std::env::var(name).as_deref(), Ok(v) if !v.is_empty() && v != "0")
}

/// A 32-byte value, the size every small workload uses.
const SMALL: usize = 32;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("profile") => return profile(),
        // Children of a distance run (see `distance`).
        Some("proxy") => return distance::serve_proxy(&args[1..]),
        Some("slow-server") => return distance::serve_slow(&args[1..]),
        _ => {}
    }
    let plan = Plan::from_env();
    let server = RedisServer::start();
    workloads::watch_server(server.pid());
    let url = server.url();
    let started = Instant::now();
    println!(
        "resilient-redis comparison: redis-server {} on 127.0.0.1:{}, {} cores, {} mode, \
         load average at start {}",
        server::server_version(),
        server.port,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if plan.quick {
            "QUICK (not for the record)"
        } else {
            "full"
        },
        load_average(),
    );

    let client = ours_client(&url);
    let db = client.database();
    let small = Keys::new("bench:key", 1024, SMALL);
    small.populate(&db);
    // redis-benchmark GETs this literal key when given no -r.
    db.set("key:__rand_int__", vec![b'x'; SMALL])
        .expect("set the redis-benchmark key");

    let mut rows: Vec<Row> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut sections: Vec<String> = Vec::new();

    if plan.wants("p1") {
        p1(&plan, &url, &db, &mut rows, &mut notes);
    }
    if plan.wants("p2") {
        p2_p3(&plan, &server, 16, 2.0, None, &small, &mut rows, &mut notes);
    }
    if plan.wants("p3") {
        p2_p3(
            &plan,
            &server,
            64,
            3.0,
            Some(0.3),
            &small,
            &mut rows,
            &mut notes,
        );
    }
    if plan.wants("p4") {
        p4(&plan, &url, &mut rows, &mut notes);
    }
    if plan.wants("p5") {
        p5(&plan, &url, &db, &mut rows, &mut notes);
    }
    if plan.wants("p9") {
        rows.push(p9_row());
    }
    if plan.wants("ref") {
        sections.push(reference(&plan, &server));
    }
    if plan.wants("threads") {
        sections.push(thread_growth(&plan, &server, &url, &small, &mut notes));
    }
    if plan.wants("sizes") {
        sections.push(size_growth(&plan, &url, &db, &mut notes));
    }
    if plan.wants("distance") {
        sections.push(distance::table(plan.quick, server.port, &small, &mut notes));
    }
    client.close();

    println!();
    if !rows.is_empty() {
        print!("{}", report::comparison(&rows));
        println!();
    }
    for s in &sections {
        println!("{s}");
    }
    if !notes.is_empty() {
        println!("Notes:");
        for n in &notes {
            println!("- {n}");
        }
    }
    println!(
        "\n(total bench time {:.0} s; load average at the end {}: above ~1 at the start \
         means other processes shared the 2 cores)",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    drop(server);
}

/// `compare profile <ours|theirs> <threads> <seconds> [get|mixed]`: one side alone,
/// for `perf stat`, `perf record` and `strace -c -f` (syscalls and context switches
/// per op: divide by the op count printed). Starts its own server like the bench.
fn profile() {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let usage = "usage: compare profile <ours|theirs> <threads> <seconds> [get|mixed]";
    let side = args.first().map(String::as_str).unwrap_or_default();
    let threads: usize = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let secs: f64 = args.get(2).and_then(|a| a.parse().ok()).expect(usage);
    let mixed = match args.get(3).map(String::as_str) {
        None | Some("mixed") => true,
        Some("get") => false,
        Some(_) => panic!("{usage}"),
    };
    // `BENCH_URL=redis://…`: a server (or proxy) started by hand, so that `perf stat`
    // and `strace -f` see this process alone.
    let given = std::env::var("BENCH_URL").ok();
    let server = given.is_none().then(RedisServer::start);
    if let Some(server) = &server {
        workloads::watch_server(server.pid());
    }
    // `BENCH_RTT_US=250`: through a delay proxy in its own process (see `distance`).
    let proxy = server.as_ref().and_then(|server| {
        std::env::var("BENCH_RTT_US")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map(|us| distance::Sidecar::proxy(server.port, Duration::from_micros(us)))
    });
    let url = match (&given, &proxy, &server) {
        (Some(url), _, _) => url.clone(),
        (None, Some(proxy), _) => proxy.url(),
        (None, None, Some(server)) => server.url(),
        (None, None, None) => unreachable!("a server is started when none is given"),
    };
    let client = ours_client(&url);
    let keys = Keys::new("bench:key", 1024, SMALL);
    keys.populate(&client.database());
    client.close();
    let dur = Duration::from_secs_f64(secs);
    let rate = match (side, mixed) {
        ("ours", true) => mixed_ours(&url, threads, dur, &keys),
        ("theirs", true) => mixed_theirs(&url, threads, dur, &keys),
        ("split", true) => workloads::mixed_split(&url, threads, dur, &keys),
        ("ours", false) => workloads::gets_ours(&url, threads, dur, &keys),
        ("theirs", false) => workloads::gets_theirs(&url, threads, dur, &keys),
        _ => panic!("{usage}"),
    };
    println!(
        "{side} {threads} threads {}: {} ops in {:.2} s = {} ({} errors), CPU per call {:.1} µs, \
         with server {:.1} µs; machine idle {:.0} %, stolen {:.0} %",
        if mixed { "GET/SET" } else { "GET" },
        rate.ops,
        rate.elapsed.as_secs_f64(),
        report::rate(rate.per_sec()),
        rate.errors,
        rate.cpu_per_call() / 1000.0,
        rate.machine_cpu_per_call() / 1000.0,
        rate.machine.idle * 100.0,
        rate.machine.steal * 100.0,
    );
}

/// P1: one thread, sequential GET of a 32-byte value, median latency.
fn p1(plan: &Plan, url: &str, db: &Database, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let key = "bench:key:00000";
    let mut con = theirs_conn(url);
    let (rounds, per_round, warmup) = plan.pick((8, 2_500, 2_000), (2, 1_000, 200));
    let (ours, theirs) = latency_ab(
        rounds,
        per_round,
        warmup,
        &mut || ours_get(db, key, SMALL),
        &mut || theirs_get(&mut con, key, SMALL),
    );
    rows.push(Row {
        workload: "P1 GET 32 B, 1 thread, median latency".into(),
        ours: report::time(ours.median()),
        theirs: report::time(theirs.median()) + " (redis-rs)",
        ratio: ours.median() / theirs.median(),
        target: Some(Target::AtMost(1.0)),
    });
    notes.push(format!(
        "P1: {} calls each in {rounds} alternating chunks; p90 ours {} / redis-rs {}, p99 ours {} / redis-rs {}{}",
        rounds * per_round,
        report::time(ours.percentile(90.0)),
        report::time(theirs.percentile(90.0)),
        report::time(ours.percentile(99.0)),
        report::time(theirs.percentile(99.0)),
        errors_text(ours.errors, theirs.errors),
    ));
}

/// P2 (16 threads) and P3 (64 threads, also against `redis-benchmark -c 64 -P 16`):
/// GET/SET 50/50 on 32-byte values, throughput over a fixed window.
#[allow(clippy::too_many_arguments)]
fn p2_p3(
    plan: &Plan,
    server: &RedisServer,
    threads: usize,
    target: f64,
    vs_benchmark: Option<f64>,
    keys: &Keys,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let url = server.url();
    let id = if threads == 16 { "P2" } else { "P3" };
    let dur = plan.pick(Duration::from_secs(2), Duration::from_millis(500));
    let rounds = plan.pick(5, 1);
    let requests = plan.pick(3_000_000, 300_000);
    // Warm-up: both sides once, briefly, untimed.
    let warm = Duration::from_millis(300);
    mixed_ours(&url, threads, warm, keys);
    mixed_theirs(&url, threads, warm, keys);
    let errors = (Cell::new(0), Cell::new(0));
    let mut ours_run = || {
        let r = mixed_ours(&url, threads, dur, keys);
        errors.0.set(errors.0.get() + r.errors);
        r.per_sec()
    };
    let mut theirs_run = || {
        let r = mixed_theirs(&url, threads, dur, keys);
        errors.1.set(errors.1.get() + r.errors);
        r.per_sec()
    };
    let mut bench_run = || server::redis_benchmark_get(server.port, 64, 16, requests);
    let results = match vs_benchmark {
        None => interleave(rounds, &mut [&mut ours_run, &mut theirs_run]),
        Some(_) => interleave(
            rounds,
            &mut [&mut ours_run, &mut theirs_run, &mut bench_run],
        ),
    };
    let ours = median(&results[0]);
    let theirs = median(&results[1]);
    rows.push(Row {
        workload: format!("{id} {threads} threads GET/SET 50/50, throughput"),
        ours: report::rate(ours),
        theirs: format!("{} (redis-rs, {threads} conns)", report::rate(theirs)),
        ratio: ours / theirs,
        target: Some(Target::AtLeast(target)),
    });
    let mut note = format!(
        "{id}: {rounds} rounds of {:.1} s; ours {}; redis-rs {}",
        dur.as_secs_f64(),
        list_rates(&results[0]),
        list_rates(&results[1]),
    ) + &errors_text(errors.0.get(), errors.1.get());
    if let Some(t) = vs_benchmark {
        let rb = median(&results[2]);
        rows.push(Row {
            workload: format!("{id} {threads} threads vs redis-benchmark -c 64 -P 16 GET"),
            ours: report::rate(ours),
            theirs: format!("{} (redis-benchmark)", report::rate(rb)),
            ratio: ours / rb,
            target: Some(Target::AtLeast(t)),
        });
        note += &format!(
            "; redis-benchmark -c 64 -P 16 -t get -n {requests}: {} (GET only, ours is GET/SET)",
            list_rates(&results[2])
        );
    }
    notes.push(note);
}

/// P4: one batch of 10k SETs (32-byte values), time per batch including building it.
fn p4(plan: &Plan, url: &str, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let keys = Keys::new("bench:batch", 10_000, SMALL);
    let client = ours_client(url);
    let db = client.database();
    let mut con = theirs_conn(url);
    let rounds = plan.pick(11, 3);
    let mut ours = || {
        let batch = db.batch();
        for k in &keys.names {
            let _ = batch.set(k.as_str(), keys.value.as_slice());
        }
        batch.execute().is_ok()
    };
    let mut theirs = || {
        let mut pipe = redis::pipe();
        for k in &keys.names {
            pipe.cmd("SET").arg(k).arg(keys.value.as_slice()).ignore();
        }
        pipe.query::<()>(&mut con).is_ok()
    };
    let (a, b) = latency_ab(rounds, 1, 2, &mut ours, &mut theirs);
    rows.push(Row {
        workload: "P4 batch of 10k SET, time per batch".into(),
        ours: report::time(a.median()),
        theirs: report::time(b.median()) + " (redis-rs pipe)",
        ratio: a.median() / b.median(),
        target: Some(Target::AtMost(1.0)),
    });
    notes.push(format!(
        "P4: median of {rounds} alternating batches (building the batch included){}",
        errors_text(a.errors, b.errors)
    ));
    client.close();
}

/// P5: GET of a 16 MiB value.
fn p5(plan: &Plan, url: &str, db: &Database, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let len = 16 << 20;
    let key = "bench:big:16MiB";
    db.set(key, vec![b'b'; len]).expect("set the 16 MiB value");
    let mut con = theirs_conn(url);
    let rounds = plan.pick(21, 5);
    let (a, b) = latency_ab(rounds, 1, 2, &mut || ours_get(db, key, len), &mut || {
        theirs_get(&mut con, key, len)
    });
    rows.push(Row {
        workload: "P5 GET 16 MiB, median time".into(),
        ours: report::time(a.median()),
        theirs: report::time(b.median()) + " (redis-rs)",
        ratio: a.median() / b.median(),
        target: Some(Target::AtMost(1.0)),
    });
    notes.push(format!(
        "P5: median of {rounds} alternating GETs{}",
        errors_text(a.errors, b.errors)
    ));
}

/// P9 comes from callgrind (scripts/bench.sh), passed in through the environment.
fn p9_row() -> Row {
    let read = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let workload = "P9 codec: GET encoded + $32 reply decoded, instructions".to_string();
    match (read("BENCH_P9_OURS"), read("BENCH_P9_THEIRS")) {
        (Some(ours), Some(theirs)) => Row {
            workload,
            ours: format!("{ours:.0} instr"),
            theirs: format!("{theirs:.0} instr (redis-rs)"),
            ratio: ours / theirs,
            target: Some(Target::AtMost(1.0)),
        },
        _ => Row {
            workload,
            ours: "not measured".into(),
            theirs: "run scripts/bench.sh".into(),
            ratio: f64::NAN,
            target: Some(Target::AtMost(1.0)),
        },
    }
}

/// The reference figures: what the server takes from redis-benchmark, GET of 32 bytes.
fn reference(plan: &Plan, server: &RedisServer) -> String {
    let configs: [(usize, usize, u64); 4] = [
        (1, 1, 60_000),
        (50, 1, 300_000),
        (1, 16, 1_000_000),
        (50, 16, 5_000_000),
    ];
    let mut cells = Vec::new();
    for (clients, pipeline, n) in configs {
        let n = plan.pick(n, n / 10);
        let rps = server::redis_benchmark_get(server.port, clients, pipeline, n);
        cells.push(vec![
            format!("redis-benchmark -c {clients} -P {pipeline} -t get -d 32 -n {n}"),
            report::rate(rps),
        ]);
    }
    format!(
        "Reference (what the server takes):\n{}",
        report::table(&["command", "throughput"], &cells)
    )
}

/// Throughput and CPU per call at 1..64 threads, ours (one shared Client) vs redis-rs
/// (a connection each), against the goals, with what `redis-benchmark` gets from the
/// same server at as many connections without and with pipelining (the server's
/// ceiling), and on one connection with as many requests in flight as threads (what a
/// single multiplexed connection can get at that depth).
fn thread_growth(
    plan: &Plan,
    server: &RedisServer,
    url: &str,
    keys: &Keys,
    notes: &mut Vec<String>,
) -> String {
    let dur = plan.pick(Duration::from_millis(700), Duration::from_millis(200));
    // Five rounds, not three: on a VM whose speed drifts, a median of three moved
    // a ratio by 10-15 % between runs.
    let rounds = plan.pick(5, 1);
    let mut cells = Vec::new();
    let mut errors = (0, 0);
    // `BENCH_THREADS=2,4` measures only those points (for prototyping).
    let counts: Vec<usize> = std::env::var("BENCH_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16, 32, 64]);
    for threads in counts {
        let mut ours_run = || mixed_ours(url, threads, dur, keys);
        let mut theirs_run = || mixed_theirs(url, threads, dur, keys);
        let results: Vec<Vec<Rate>> = interleave(rounds, &mut [&mut ours_run, &mut theirs_run]);
        let rate = |rs: &[Rate]| median(&rs.iter().map(Rate::per_sec).collect::<Vec<_>>());
        let cpu = |rs: &[Rate]| median(&rs.iter().map(Rate::cpu_per_call).collect::<Vec<_>>());
        let (a, b) = (rate(&results[0]), rate(&results[1]));
        let (ca, cb) = (cpu(&results[0]), cpu(&results[1]));
        let machine = |rs: &[Rate]| {
            median(
                &rs.iter()
                    .map(Rate::machine_cpu_per_call)
                    .collect::<Vec<_>>(),
            )
        };
        let (ma, mb) = (machine(&results[0]), machine(&results[1]));
        errors.0 += results[0].iter().map(|r| r.errors).sum::<u64>();
        errors.1 += results[1].iter().map(|r| r.errors).sum::<u64>();
        let n = plan.pick(200_000, 20_000);
        let plain = server::redis_benchmark_get(server.port, threads, 1, n);
        let piped = server::redis_benchmark_get(server.port, threads, 16, n * 8);
        // One connection with as many requests in flight as there are threads: what
        // the server gives a single multiplexed connection at that depth.
        let one_conn = server::redis_benchmark_get(server.port, 1, threads, n);
        let (goal, met) = match thread_goal(threads) {
            Some((min_ratio, max_cpu)) => (
                format!("≥ {min_ratio:.1}, ≤ {max_cpu:.2}"),
                if a / b >= min_ratio && ca / cb <= max_cpu {
                    "pass"
                } else {
                    "FAIL"
                },
            ),
            None => ("-".to_string(), "-"),
        };
        cells.push(vec![
            threads.to_string(),
            report::rate(a),
            report::rate(b),
            format!("{:.2}", a / b),
            format!("{:.1} µs", ca / 1000.0),
            format!("{:.1} µs", cb / 1000.0),
            format!("{:.2}", ca / cb),
            format!("{:.2}", ma / mb),
            goal,
            met.to_string(),
            report::rate(plain),
            report::rate(piped),
            report::rate(one_conn),
        ]);
    }
    notes.push(format!(
        "threads: GET/SET 50/50 on 32 B, median of {rounds} × {:.1} s windows per point; \
         CPU = user + system time of the whole bench process over the window (callers and \
         the client's own threads), per completed call; with server = the same plus the \
         redis-server's CPU over the window (what a call costs the machine){}",
        dur.as_secs_f64(),
        errors_text(errors.0, errors.1)
    ));
    format!(
        "Throughput and CPU per call by thread count (ours: one shared Client; redis-rs: \
         one connection per thread; redis-benchmark GET, -c threads, and on one connection \
         with as many in flight as threads):\n{}",
        report::table(
            &[
                "threads",
                "ours",
                "redis-rs",
                "ratio",
                "ours CPU/call",
                "redis-rs CPU/call",
                "CPU ratio",
                "CPU ratio with server",
                "goal (ratio, CPU ratio)",
                "met",
                "r-b -P 1",
                "r-b -P 16",
                "r-b -c 1 -P threads",
            ],
            &cells
        )
    )
}

/// The thread-scaling goals (throughput ratio at least, CPU-per-call ratio at most)
/// where the issue sets them.
fn thread_goal(threads: usize) -> Option<(f64, f64)> {
    match threads {
        1 => Some((1.0, 1.0)),
        2 => Some((1.3, 1.0)),
        4 => Some((1.2, 1.0)),
        16 => Some((2.0, 0.75)),
        64 => Some((3.0, 0.75)),
        _ => None,
    }
}

/// GET latency by value size, ours vs redis-rs.
fn size_growth(plan: &Plan, url: &str, db: &Database, notes: &mut Vec<String>) -> String {
    let mut con = theirs_conn(url);
    let sizes: [(usize, usize); 5] = [
        (32, 10_000),
        (1 << 10, 10_000),
        (64 << 10, 2_000),
        (1 << 20, 200),
        (16 << 20, 20),
    ];
    let mut cells = Vec::new();
    let mut errors = (0, 0);
    for (len, count) in sizes {
        let key = format!("bench:size:{len}");
        db.set(key.as_str(), vec![b's'; len])
            .expect("set the value");
        let count = plan.pick(count, (count / 10).max(4));
        let rounds = plan.pick(4, 2);
        let (a, b) = latency_ab(
            rounds,
            count / rounds,
            (count / 10).max(2),
            &mut || ours_get(db, &key, len),
            &mut || theirs_get(&mut con, &key, len),
        );
        errors.0 += a.errors;
        errors.1 += b.errors;
        let mib_per_s = |ns: f64| len as f64 / (ns / 1e9) / (1 << 20) as f64;
        cells.push(vec![
            report::size(len),
            report::time(a.median()),
            report::time(b.median()),
            format!("{:.2}", a.median() / b.median()),
            format!("{:.0}", mib_per_s(a.median())),
            format!("{:.0}", mib_per_s(b.median())),
        ]);
    }
    notes.push(format!(
        "sizes: median of alternating GETs per size{}",
        errors_text(errors.0, errors.1)
    ));
    format!(
        "GET latency by value size (median):\n{}",
        report::table(
            &[
                "value",
                "ours",
                "redis-rs",
                "ratio",
                "ours MiB/s",
                "redis-rs MiB/s"
            ],
            &cells
        )
    )
}

fn list_rates(v: &[f64]) -> String {
    v.iter()
        .map(|r| report::rate(*r))
        .collect::<Vec<_>>()
        .join(", ")
}

fn errors_text(ours: u64, theirs: u64) -> String {
    if ours == 0 && theirs == 0 {
        String::new()
    } else {
        format!("; ERRORS: ours {ours}, redis-rs {theirs} (failed calls are not counted)")
    }
}

/// The 1/5/15-minute load averages, to tell a quiet machine from a shared one.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}
