//! Geo failover: three regions in one group, a writer and a reader thread, then a
//! scripted regional outage and recovery, printed as a timeline.
//!
//! `cargo run --example geo_failover` starts three throw-away `redis-server`s on free
//! loopback ports (the "regions"), or three in-process fake servers (feature
//! `testkit`, on for the crate's examples) when `redis-server` is not installed or
//! `-- --fake` is given; pass three URLs to use your own:
//! `cargo run --example geo_failover -- redis://a:6379 redis://b:6379 redis://c:6379`
//! (the outage is then simulated by a manual failover instead of killing a server).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::availability::{Group, GroupEvent, GroupOptions, HealthCheck, Member};
use resilient_redis::prelude::*;

const REGIONS: [(&str, u32); 3] = [("us-east", 30), ("us-west", 20), ("eu-central", 10)];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut local = Vec::new();
    let urls = if args.len() == 3 {
        args
    } else {
        let fake = args.iter().any(|a| a == "--fake");
        for _ in 0..3 {
            local.push(if fake {
                LocalServer::fake()?
            } else {
                LocalServer::start()?
            });
        }
        local.iter().map(|s| s.url()).collect()
    };
    let members: Vec<Member> = REGIONS
        .iter()
        .zip(&urls)
        .map(|((name, weight), url)| {
            Member::new(format!(
                "{url}?syncTimeout=500&connectTimeout=500&reconnectMax=500"
            ))
            .with_name(*name)
            .with_weight(*weight)
        })
        .collect();
    let options = GroupOptions::default()
        .health_check(
            HealthCheck::default()
                .interval(Duration::from_millis(500))
                .probe_timeout(Duration::from_millis(400))
                .probe_count(2),
        )
        .failback_delay(Duration::from_secs(2));
    let group = Group::connect(members, options)?;
    let events = group.events();
    let db = group.database();
    println!("group up:\n{}\n", group.status());

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for role in ["writer", "reader"] {
        let (db, stop, ok, failed) = (db.clone(), stop.clone(), ok.clone(), failed.clone());
        workers.push(thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let result = if role == "writer" {
                    db.set("geo:last", i)
                } else {
                    db.get::<Option<u64>>("geo:last").map(|_| ())
                };
                match result {
                    Ok(()) => ok.fetch_add(1, Ordering::Relaxed),
                    Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                };
                i += 1;
            }
        }));
    }

    let started = Instant::now();
    let mut last = (0, 0);
    for second in 1..=12 {
        thread::sleep(Duration::from_secs(1));
        match second {
            3 => {
                println!("--- t={second}s: regional outage in {} ---", name(&group));
                match local.first_mut() {
                    Some(server) => server.stop(),
                    None => {
                        if let Some(other) = group.members().get(1) {
                            group.try_failover_to(Some(other));
                        }
                    }
                }
            }
            6 => println!(
                "--- t={second}s: the group during the outage ---\n{}",
                group.status()
            ),
            7 => {
                println!("--- t={second}s: {} recovers ---", REGIONS[0].0);
                match local.first_mut() {
                    Some(server) => server.restart()?,
                    None => {
                        group.try_failover_to(None);
                    }
                }
            }
            _ => {}
        }
        let (o, f) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
        println!(
            "t={:>4.1}s  active={:<11} ok/s={:<7} failed/s={}",
            started.elapsed().as_secs_f64(),
            name(&group),
            o - last.0,
            f - last.1
        );
        last = (o, f);
        for e in events.try_iter() {
            match e {
                GroupEvent::ActiveChanged {
                    previous,
                    current,
                    reason,
                } => println!(
                    "          event: active {} -> {} ({reason:?})",
                    previous.as_ref().map_or("none", |m| m.name()),
                    current.as_ref().map_or("none", |m| m.name())
                ),
                GroupEvent::MemberHealthChanged { member, healthy } => println!(
                    "          event: {} is {}",
                    member.name(),
                    if healthy { "healthy" } else { "unhealthy" }
                ),
                other => println!("          event: {other:?}"),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    println!(
        "done: {} ok, {} failed\n\n{:#}",
        ok.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        group.status()
    );
    group.close();
    Ok(())
}

fn name(group: &Group) -> String {
    group
        .active()
        .map_or_else(|| "none".to_string(), |m| m.name().to_string())
}

/// A throw-away region: a `redis-server` on a free loopback port, or an in-process
/// fake when none is installed.
enum LocalServer {
    Process {
        port: u16,
        child: Option<Child>,
    },
    #[cfg(feature = "testkit")]
    Fake(resilient_redis::testkit::FakeServer),
}

impl LocalServer {
    fn start() -> Result<LocalServer, Box<dyn std::error::Error>> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut s = LocalServer::Process { port, child: None };
        match s.spawn() {
            Ok(()) => Ok(s),
            Err(why) => {
                println!("{why}: using in-process fake servers");
                LocalServer::fake()
            }
        }
    }

    #[cfg(feature = "testkit")]
    fn fake() -> Result<LocalServer, Box<dyn std::error::Error>> {
        Ok(LocalServer::Fake(
            resilient_redis::testkit::FakeServer::start()?,
        ))
    }

    #[cfg(not(feature = "testkit"))]
    fn fake() -> Result<LocalServer, Box<dyn std::error::Error>> {
        Err("no redis-server; build with `--features testkit` for the in-process fake".into())
    }

    fn spawn(&mut self) -> Result<(), Box<dyn std::error::Error>> {
        let LocalServer::Process { port, child } = self else {
            return Ok(());
        };
        let port = *port;
        let spawned = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("redis-server could not be started ({e})"))?;
        *child = Some(spawned);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("redis-server did not start".into());
            }
            thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    fn url(&self) -> String {
        match self {
            LocalServer::Process { port, .. } => format!("redis://127.0.0.1:{port}"),
            #[cfg(feature = "testkit")]
            LocalServer::Fake(f) => f.url(),
        }
    }

    /// The outage: the process dies; a fake refuses and drops every connection.
    fn stop(&mut self) {
        match self {
            LocalServer::Process { child, .. } => {
                if let Some(mut c) = child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
            #[cfg(feature = "testkit")]
            LocalServer::Fake(f) => {
                f.refuse_connections(true);
                f.close_all_connections();
            }
        }
    }

    fn restart(&mut self) -> Result<(), Box<dyn std::error::Error>> {
        self.stop();
        match self {
            #[cfg(feature = "testkit")]
            LocalServer::Fake(f) => {
                f.refuse_connections(false);
                Ok(())
            }
            _ => self.spawn(),
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let LocalServer::Process { .. } = self {
            self.stop();
        }
    }
}
