//! Redis Sentinel: a client that names a service and its sentinels, writes from
//! several threads, and follows a failover to the promoted replica.
//!
//! `cargo run --example sentinel` starts throw-away local processes when
//! `redis-server` is installed (a primary, a replica and three sentinels on free
//! loopback ports, removed at the end) and asks the sentinels for a graceful
//! `SENTINEL FAILOVER`; without it, it runs on the testkit's fakes (two
//! `FakeServer`s and a `FakeSentinel` that publishes `+switch-master`). Either way it
//! prints what the client did and exits non-zero if the writes did not follow the
//! switch.
//!
//! Give your own service to watch it instead:
//! `cargo run --example sentinel -- "redis+sentinel://127.0.0.1:26379/mymaster"`
//! writes for twenty seconds while printing where the writes go: run
//! `redis-cli -p 26379 SENTINEL FAILOVER mymaster` meanwhile.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::RetryPolicy;
use resilient_redis::prelude::*;
use resilient_redis::testkit::{FakeSentinel, FakeServer};
use resilient_redis::Endpoint;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(url) = std::env::args().nth(1) {
        return watch(&url);
    }
    let redis_installed = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if redis_installed {
        on_local_processes()
    } else {
        println!("redis-server is not installed: running on the testkit's fakes");
        on_fakes()
    }
}

/// Four writers through the default retry policy, counting what succeeded and failed.
struct Writers {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Writers {
    fn start(db: &Database) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let threads = (0..4)
            .map(|t| {
                let (db, stop, ok, failed) = (db.clone(), stop.clone(), ok.clone(), failed.clone());
                thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        match db.set(format!("example:{t}"), i) {
                            Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                            Err(e) => {
                                eprintln!("   write failed: {e}");
                                failed.fetch_add(1, Ordering::Relaxed)
                            }
                        };
                        thread::sleep(Duration::from_millis(5));
                    }
                })
            })
            .collect();
        Writers {
            stop,
            ok,
            failed,
            threads,
        }
    }

    fn ok(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    fn stop(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// The servers the client talks to now (the primary; replicas too with `replicaReads`).
fn nodes(client: &Client) -> String {
    let list: Vec<String> = client
        .nodes()
        .iter()
        .map(|n| n.endpoint.to_string())
        .collect();
    list.join(", ")
}

fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// The same client code on the fakes: the fake sentinel announces the switch.
fn on_fakes() -> Result<(), Box<dyn std::error::Error>> {
    let (a, b) = (FakeServer::start()?, FakeServer::start()?);
    let sentinel = FakeSentinel::start("mymaster", a.addr())?;
    let url = format!("redis+sentinel://{}/mymaster", sentinel.addr());
    println!("connecting to {url}");
    let client = Client::connect(url.as_str())?;
    let db = client.database().with_retry(RetryPolicy::default())?;
    println!("1. the sentinel names the primary: {}", nodes(&client));
    let writers = Writers::start(&db);
    wait_until(Duration::from_secs(5), || writers.ok() > 20);
    println!("2. +switch-master to {}", b.addr());
    let switched = Instant::now();
    sentinel.switch_master(b.addr());
    let followed = wait_until(Duration::from_secs(5), || b.commands_received("SET") > 0);
    let took = switched.elapsed();
    let (ok, failed) = writers.stop();
    println!("3. writes on the new primary after {took:?}; {ok} writes ok, {failed} failed");
    client.close();
    if !followed || failed > 0 {
        return Err("the client did not follow the switch cleanly".into());
    }
    Ok(())
}

/// A process of the local deployment, killed and its files removed on drop.
struct Process {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn spawn(
    name: &str,
    conf: impl FnOnce(u16, &PathBuf) -> String,
    sentinel: bool,
) -> Result<Process, Box<dyn std::error::Error>> {
    let port = free_port()?;
    let dir = std::env::temp_dir().join(format!("rr-example-{}-{name}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("redis.conf");
    std::fs::write(&file, conf(port, &dir))?;
    let mut cmd = Command::new("redis-server");
    cmd.arg(&file);
    if sentinel {
        cmd.arg("--sentinel");
    }
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let p = Process { child, dir, port };
    if !wait_until(Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    }) {
        return Err(format!("{name} did not start on port {port}").into());
    }
    Ok(p)
}

/// One command on a fresh socket; the raw reply, lossily as text.
fn query(port: u16, args: &[&str]) -> String {
    let mut frame = format!("*{}\r\n", args.len());
    for a in args {
        frame.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(frame.as_bytes()).is_err() {
        return String::new();
    }
    let mut buf = vec![0u8; 16 * 1024];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn on_local_processes() -> Result<(), Box<dyn std::error::Error>> {
    let node = |extra: String| {
        move |port: u16, dir: &PathBuf| {
            format!(
                "port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir {}\n{extra}\n",
                dir.display()
            )
        }
    };
    let primary = spawn("primary", node(String::new()), false)?;
    let replica = spawn(
        "replica",
        node(format!("replicaof 127.0.0.1 {}", primary.port)),
        false,
    )?;
    let mut sentinels = Vec::new();
    for i in 0..3 {
        let primary_port = primary.port;
        sentinels.push(spawn(
            &format!("sentinel{i}"),
            move |port, dir| {
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nsentinel resolve-hostnames no\n\
                     sentinel announce-ip 127.0.0.1\n\
                     sentinel monitor mymaster 127.0.0.1 {primary_port} 2\n\
                     sentinel down-after-milliseconds mymaster 1000\n\
                     sentinel failover-timeout mymaster 3000\n",
                    dir.display()
                )
            },
            true,
        )?);
    }
    println!(
        "local deployment: primary :{}, replica :{}, sentinels :{} :{} :{}",
        primary.port, replica.port, sentinels[0].port, sentinels[1].port, sentinels[2].port
    );
    // A failover needs each sentinel to know the replica and the two others.
    let ready = wait_until(Duration::from_secs(10), || {
        sentinels.iter().all(|s| {
            query(s.port, &["SENTINEL", "SENTINELS", "mymaster"])
                .matches("$4\r\nname\r\n")
                .count()
                == 2
                && query(s.port, &["SENTINEL", "REPLICAS", "mymaster"])
                    .matches("$4\r\nname\r\n")
                    .count()
                    == 1
        })
    });
    if !ready {
        return Err("the sentinels did not discover each other in time".into());
    }
    let list: Vec<String> = sentinels
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let url = format!("redis+sentinel://{}/mymaster", list.join(","));
    println!("connecting to {url}");
    let client = Client::connect(url.as_str())?;
    let db = client.database().with_retry(RetryPolicy::default())?;
    println!("1. the sentinels name the primary: {}", nodes(&client));
    let writers = Writers::start(&db);
    wait_until(Duration::from_secs(5), || writers.ok() > 50);
    println!("2. SENTINEL FAILOVER mymaster (graceful) under load");
    let started = Instant::now();
    let reply = query(sentinels[0].port, &["SENTINEL", "FAILOVER", "mymaster"]);
    if !reply.starts_with("+OK") {
        return Err(format!("SENTINEL FAILOVER refused: {}", reply.trim()).into());
    }
    let new_primary = Endpoint::new("127.0.0.1", replica.port);
    let followed = wait_until(Duration::from_secs(10), || {
        client
            .nodes()
            .iter()
            .map(|n| &n.endpoint)
            .eq([&new_primary])
    });
    let took = started.elapsed();
    let before = writers.ok();
    let writing = wait_until(Duration::from_secs(5), || writers.ok() > before + 50);
    let (ok, failed) = writers.stop();
    println!(
        "3. writing to {new_primary} {took:?} after the request; {ok} writes ok, {failed} failed"
    );
    client.close();
    if !followed || !writing {
        return Err("the client did not follow the failover".into());
    }
    Ok(())
}

/// Writes to a service of your own for twenty seconds, printing where they go.
fn watch(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::connect(url)?;
    let db = client.database().with_retry(RetryPolicy::default())?;
    let writers = Writers::start(&db);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        println!(
            "{:>5.1}s  primary {}  writes ok {}",
            start.elapsed().as_secs_f32(),
            nodes(&client),
            writers.ok()
        );
        thread::sleep(Duration::from_secs(1));
    }
    let (ok, failed) = writers.stop();
    println!("{ok} writes ok, {failed} failed");
    Ok(())
}
