//! P9, codec cost: encode one `GET key` command and decode one `$32` bulk reply, N
//! times, with our codec or with redis-rs's. Meant to run under
//! `valgrind --tool=callgrind`, which counts instructions (stable on a noisy shared
//! machine, unlike time); `scripts/bench.sh` runs each side at two values of N and
//! divides the difference by the extra iterations, so start-up and first-use costs
//! cancel out.
//!
//! ```sh
//! cargo bench --bench codec_instructions -- ours 100000
//! valgrind --tool=callgrind target/release/deps/codec_instructions-* theirs 100000
//! ```
//!
//! Sides, each doing what its client does per GET:
//! - `ours`: `Cmd::new("GET").key(key)` (what `Database::get` builds; the frame is
//!   encoded as arguments are added) and `Decoder::feed` + `decode` into a `Value`.
//! - `ours-raw`: the bare encoder (`write_command_header` + `write_arg`) into a reused
//!   buffer, and the same decoder: the floor under `ours`.
//! - `theirs`: redis-rs `cmd("GET").arg(key).get_packed_command()` (what its sync
//!   `Connection::req_command` does) and its `Parser::parse_value` (kept, like the
//!   connection keeps it) into a `redis::Value`.
//!
//! Without a valgrind, it also prints wall-clock nanoseconds per iteration (noisy).

use std::hint::black_box;
use std::time::Instant;

use resilient_redis::resp::{write_arg, write_command_header, Decoder, Value};
use resilient_redis::Cmd;

/// One side of the comparison: runs N iterations, returns bytes seen (kept alive).
type Side = (&'static str, fn(u64) -> usize);

const KEY: &str = "bench:key:00000";
const REPLY: &[u8] = b"$32\r\nvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\r\n";
const FRAME: &[u8] = b"*2\r\n$3\r\nGET\r\n$15\r\nbench:key:00000\r\n";

fn ours(n: u64) -> usize {
    let mut decoder = Decoder::new();
    let mut total = 0;
    for _ in 0..n {
        let cmd = Cmd::new("GET").key(black_box(KEY));
        total += black_box(cmd.frame()).len();
        decoder.feed(black_box(REPLY));
        match decoder.decode() {
            Ok(Some(Value::BulkString(v))) => total += black_box(v).len(),
            other => panic!("unexpected decode result {other:?}"),
        }
    }
    total
}

fn ours_raw(n: u64) -> usize {
    let mut decoder = Decoder::new();
    let mut buf = Vec::with_capacity(64);
    let mut total = 0;
    for _ in 0..n {
        buf.clear();
        write_command_header(&mut buf, 2);
        write_arg(&mut buf, b"GET");
        write_arg(&mut buf, black_box(KEY).as_bytes());
        total += black_box(&buf).len();
        decoder.feed(black_box(REPLY));
        match decoder.decode() {
            Ok(Some(Value::BulkString(v))) => total += black_box(v).len(),
            other => panic!("unexpected decode result {other:?}"),
        }
    }
    total
}

fn theirs(n: u64) -> usize {
    let mut parser = redis::Parser::new();
    let mut total = 0;
    for _ in 0..n {
        let packed = redis::cmd("GET").arg(black_box(KEY)).get_packed_command();
        total += black_box(packed).len();
        match parser.parse_value(black_box(REPLY)) {
            Ok(redis::Value::BulkString(v)) => total += black_box(v).len(),
            other => panic!("unexpected parse result {other:?}"),
        }
    }
    total
}

/// Every side must produce the same bytes and the same value, or the counts compare
/// different work.
fn self_check() {
    assert_eq!(Cmd::new("GET").key(KEY).frame(), FRAME);
    let mut buf = Vec::new();
    write_command_header(&mut buf, 2);
    write_arg(&mut buf, b"GET");
    write_arg(&mut buf, KEY.as_bytes());
    assert_eq!(buf, FRAME);
    assert_eq!(redis::cmd("GET").arg(KEY).get_packed_command(), FRAME);
    let per_iter = FRAME.len() + 32;
    for f in [ours, ours_raw, theirs] {
        assert_eq!(f(1), per_iter);
    }
}

fn main() {
    // `cargo bench` passes `--bench`: skip flags.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let side = args.first().map_or("all", String::as_str);
    let n: u64 = match args.get(1).map(|s| s.parse()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(_)) => usage(),
    };
    let run: &[Side] = &[("ours", ours), ("ours-raw", ours_raw), ("theirs", theirs)];
    let chosen: Vec<_> = match side {
        "all" => run.to_vec(),
        s => match run.iter().find(|(name, _)| *name == s) {
            Some(r) => vec![*r],
            None => usage(),
        },
    };
    if side == "all" {
        self_check();
    }
    for (name, f) in chosen {
        let start = Instant::now();
        black_box(f(n));
        if side == "all" && n > 0 {
            let ns = start.elapsed().as_nanos() as f64 / n as f64;
            println!("{name:>8}: {ns:.0} ns per GET encoded + reply decoded (wall clock, noisy)");
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: codec_instructions [ours|ours-raw|theirs|all] [N]");
    std::process::exit(2);
}
