//! Quick start: connect, run a few commands from several threads, show events.
//!
//! `cargo run --example quickstart` runs against a local `redis-server` it starts on
//! an ephemeral port when one is installed, and otherwise against the in-process fake
//! server of the `testkit` feature (which the crate's own examples and tests have on),
//! so it works on a machine with nothing installed. Give a URL to use your own server:
//! `cargo run --example quickstart -- redis://127.0.0.1:6379`, or `-- --fake` to use
//! the fake even where `redis-server` is installed.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger_lite();
    let (url, _server) = match std::env::args().nth(1) {
        Some(arg) if arg == "--fake" => fake_server("--fake given".into())?,
        Some(url) => (url, Local::Remote),
        None => match start_local_server() {
            Ok((url, child)) => (url, Local::Process(KillOnDrop(child))),
            Err(why) => fake_server(why.to_string())?,
        },
    };
    println!("connecting to {url}");
    let client = Client::connect(url.as_str())?;
    let db = client.database();

    db.set("quickstart:greeting", "hello from resilient-redis")?;
    let greeting: Option<String> = db.get("quickstart:greeting")?;
    println!("GET quickstart:greeting -> {greeting:?}");

    // One client, many threads: their commands share one connection and are
    // pipelined automatically.
    let started = Instant::now();
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let db = db.clone();
            thread::spawn(move || -> resilient_redis::Result<i64> {
                let mut last = 0;
                for _ in 0..1000 {
                    last = db.incr("quickstart:counter", 1)?;
                }
                let _ = t;
                Ok(last)
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "worker panicked")??;
    }
    let total: i64 = db.get("quickstart:counter")?;
    println!(
        "8 threads x 1000 INCR in {:?}; counter = {total}",
        started.elapsed()
    );

    let batch = db.batch();
    let a = batch.set("quickstart:a", 1);
    let b = batch.get::<i64>("quickstart:a");
    batch.execute()?;
    a.wait()?;
    println!("batch: a = {}", b.wait()?);

    let tx = db.transaction();
    let n = tx.incr("quickstart:tx", 10);
    println!(
        "transaction committed = {}, value = {}",
        tx.execute()?,
        n.wait()?
    );

    db.del([
        "quickstart:greeting",
        "quickstart:counter",
        "quickstart:a",
        "quickstart:tx",
    ])?;
    client.close();
    println!("done");
    Ok(())
}

/// What serves the example when no URL is given; dropped (stopped) at the end.
#[allow(dead_code)]
enum Local {
    Remote,
    Process(KillOnDrop),
    #[cfg(feature = "testkit")]
    Fake(resilient_redis::testkit::FakeServer),
}

/// The in-process fake server (feature `testkit`), when there is no `redis-server`.
#[cfg(feature = "testkit")]
fn fake_server(why: String) -> Result<(String, Local), Box<dyn std::error::Error>> {
    let server = resilient_redis::testkit::FakeServer::start()?;
    println!("using the in-process fake server (testkit): {why}");
    Ok((server.url(), Local::Fake(server)))
}

#[cfg(not(feature = "testkit"))]
fn fake_server(why: String) -> Result<(String, Local), Box<dyn std::error::Error>> {
    Err(format!("{why}; run with `--features testkit` to use the in-process fake server").into())
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `redis-server` on a free loopback port, without persistence.
fn start_local_server() -> Result<(String, Child), Box<dyn std::error::Error>> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("no URL given and redis-server could not be started ({e})"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("redis-server did not start".into());
        }
        thread::sleep(Duration::from_millis(10));
    }
    Ok((format!("redis://127.0.0.1:{port}"), child))
}

/// Prints warnings from the library to stderr without pulling in a logger crate.
fn env_logger_lite() {
    struct Stderr;
    impl log::Log for Stderr {
        fn enabled(&self, m: &log::Metadata) -> bool {
            m.level() <= log::Level::Warn
        }
        fn log(&self, r: &log::Record) {
            if self.enabled(r.metadata()) {
                eprintln!("[{}] {}", r.level(), r.args());
            }
        }
        fn flush(&self) {}
    }
    static LOGGER: Stderr = Stderr;
    let _ = log::set_logger(&LOGGER).map(|_| log::set_max_level(log::LevelFilter::Warn));
}
