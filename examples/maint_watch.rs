//! Watch maintenance notifications: connect, opt in, and print every notification as
//! parsed next to its raw frame, and every handoff the client performs.
//!
//! ```text
//! cargo run --example maint_watch                       # an in-process fake plays a maintenance
//! cargo run --example maint_watch -- redis://host:12000 # a real endpoint, until Ctrl-C
//! cargo run --example maint_watch -- rediss://host:12000 --enabled --for 600
//! ```
//!
//! RESP3 is forced (notifications are RESP3 push frames) and the opt-in is `auto`;
//! `--enabled` makes it strict, so the connection is refused with the server's reason
//! when it does not accept `CLIENT MAINT_NOTIFICATIONS ON`: a probe of whether a
//! server supports the feature (on Redis Enterprise a cluster-level flag decides).
//!
//! With no connection string, two fake proxies sit behind one scripted DNS name; the
//! first announces a migration, a failover and a slot migration, then `MOVING` while
//! the record trails it by 0.6 s (the measured timings, scaled from 15 s to 2 s), and
//! the client hands its connections over to the second before the first closes them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use resilient_redis::config::{MaintNotifications, Protocol};
use resilient_redis::prelude::*;
use resilient_redis::resp::{encode_value, Value};
use resilient_redis::testkit::{Answer, FakeServer, Notification, ScriptedResolver};
use resilient_redis::ClientEvent;

struct Args {
    target: Option<String>,
    enabled: bool,
    run_for: Option<Duration>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        target: None,
        enabled: false,
        run_for: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--enabled" => a.enabled = true,
            "--for" => {
                let secs = it.next().ok_or("--for needs a number of seconds")?;
                let secs: f64 = secs.parse().map_err(|_| format!("--for {secs}?"))?;
                a.run_for = Some(Duration::from_secs_f64(secs.max(0.0)));
            }
            "-h" | "--help" => {
                return Err(
                    "usage: maint_watch [CONNECTION-STRING] [--enabled] [--for SECONDS]".into(),
                )
            }
            s if a.target.is_none() && !s.starts_with("--") => a.target = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s:?}")),
        }
    }
    Ok(a)
}

/// The raw frame as RESP, with `\r\n` shown.
fn raw(frame: &Value) -> String {
    let mut buf = Vec::new();
    encode_value(&mut buf, frame);
    String::from_utf8_lossy(&buf).escape_debug().to_string()
}

/// Prints client events until `until` (or forever) or `done` says stop.
fn watch(client: &Client, until: Option<Instant>, mut done: impl FnMut(&ClientEvent) -> bool) {
    let events = client.events();
    loop {
        let wait = until.map_or(Duration::from_secs(3600), |u| {
            u.saturating_duration_since(Instant::now())
        });
        let event = match events.recv_timeout(wait) {
            Ok(e) => e,
            Err(_) if until.is_some_and(|u| Instant::now() >= u) => return,
            Err(_) => continue,
        };
        match &event {
            ClientEvent::Maintenance(e) => {
                println!("notification  {e}\n      raw     {}", raw(&e.raw))
            }
            ClientEvent::Handoff(h) => println!("handoff       {h}"),
            ClientEvent::ConnectionFailed {
                endpoint, failure, ..
            } => println!("connection    {endpoint} failed: {failure:?}"),
            ClientEvent::ConnectionRestored { endpoint } => {
                println!("connection    {endpoint} restored")
            }
            other => println!("event         {other:?}"),
        }
        if done(&event) {
            return;
        }
    }
}

fn options(target: &str, enabled: bool) -> Result<Options, resilient_redis::Error> {
    let mut o = Options::parse(target)?;
    o.protocol = Some(Protocol::Resp3);
    o.maint_notifications = if enabled {
        MaintNotifications::Enabled
    } else {
        MaintNotifications::Auto
    };
    Ok(o)
}

fn print_status(client: &Client) {
    for s in client.maintenance_status() {
        println!(
            "status        {} connected={} opted_in={} in_force={:?} handoffs={:?}",
            s.endpoint, s.connected, s.opted_in, s.in_force, s.handoffs
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match args.target {
        Some(target) => {
            let client = Client::connect(options(&target, args.enabled)?)?;
            print_status(&client);
            println!("watching (Ctrl-C to stop)");
            watch(&client, args.run_for.map(|d| Instant::now() + d), |_| false);
            print_status(&client);
        }
        None => scripted(args.enabled)?,
    }
    Ok(())
}

/// The in-process maintenance: two fake proxies behind one scripted name.
fn scripted(enabled: bool) -> Result<(), Box<dyn std::error::Error>> {
    const NAME: &str = "db.maint-watch.test";
    let (a, b) = (FakeServer::start()?, FakeServer::start()?);
    a.set_moving_slack(Duration::from_millis(300));
    let dns = ScriptedResolver::new();
    dns.set(NAME, Answer::addrs([a.addr()]));
    let mut o = options(&format!("{NAME}:12000"), enabled)?;
    o.resolver = Some(Arc::new(dns.clone()));
    let client = Client::connect(o)?;
    println!("fake proxies: A {} (retiring), B {}", a.addr(), b.addr());
    print_status(&client);
    let db = client.database();
    let player = std::thread::spawn({
        let dns = dns.clone();
        move || {
            let step = Duration::from_millis(200);
            a.notify(Notification::migrating(1, &["1"]));
            std::thread::sleep(step);
            a.notify(Notification::migrated(&["1"]));
            std::thread::sleep(step);
            a.notify(Notification::failing_over(1, &["2"]));
            std::thread::sleep(step);
            a.notify(Notification::failed_over(&["2"]));
            std::thread::sleep(step);
            a.notify(Notification::SMigrating {
                slots: "100-199".into(),
            });
            a.notify(Notification::SMigrated {
                triplets: vec![(a.addr().to_string(), b.addr().to_string(), "100-199".into())],
            });
            std::thread::sleep(step);
            // DNS trails the MOVING by 0.6 s; the server closes after 2 s + slack.
            dns.restart();
            dns.script(
                NAME,
                vec![
                    (Duration::ZERO, Answer::addrs([a.addr()])),
                    (Duration::from_millis(600), Answer::addrs([b.addr()])),
                ],
            );
            a.notify(Notification::moving(2));
            (a, b)
        }
    });
    let deadline = Instant::now() + Duration::from_secs(8);
    watch(
        &client,
        Some(deadline),
        |e| matches!(e, ClientEvent::Handoff(h) if h.recycled),
    );
    let (_a, b) = player
        .join()
        .map_err(|_| "the scripted maintenance panicked")?;
    db.set("maint_watch", "still served")?;
    println!(
        "after the handoff: B has {} connection(s); SET answered",
        b.connections_open()
    );
    print_status(&client);
    client.close();
    Ok(())
}
