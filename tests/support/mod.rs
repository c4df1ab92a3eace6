//! Real `redis-server` processes for integration tests: started on ephemeral loopback
//! ports, killed when dropped (also when a test panics).
//!
//! A missing binary fails the test with how to install it. Setting
//! `RESILIENT_REDIS_SKIP_SERVER_TESTS=1` skips these tests explicitly, and says so.
//!
//! The one helper tree of the integration tests (and of `benches/cluster_failover.rs`):
//! every test binary includes all of it, and the submodules serve one concern each.
// Each binary uses only part of the tree, so what one leaves unused is not dead: the
// one allow for the whole tree. A helper no binary uses is deleted (checked by
// building every binary and the bench with this line removed).
#![allow(dead_code)]

pub mod cluster;
pub mod commands;
pub mod credentials;
pub mod lanes;
pub mod load;
pub mod logs;
pub mod machine;
pub mod maintenance;
pub mod optin;
pub mod raw;
pub mod sentinel;
pub mod transport;

use std::collections::BTreeSet;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    args: Vec<String>,
}

/// Whether server tests are skipped on purpose (loudly).
pub fn skipped() -> bool {
    if std::env::var("RESILIENT_REDIS_SKIP_SERVER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("*** SKIPPED: real redis-server test (RESILIENT_REDIS_SKIP_SERVER_TESTS=1) ***");
        return true;
    }
    false
}

/// A port nobody listens on right now, and never handed out before by this process.
///
/// Only a hint: the port is released before the caller binds it, so another process
/// (or another test) may take it first. `RedisServer` therefore checks that the server
/// answering is the one it started, and moves to another port otherwise. The set of
/// ports handed out stops two tests of one process from even trying the same one.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    for _ in 0..100 {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
        let port = l.local_addr().expect("local addr").port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.insert(port) {
            // Handed out for a real server (or one that must stay unanswered): the
            // opted-in run uses `auto` there.
            optin::note_real_server(port);
            return port;
        }
    }
    panic!("the kernel kept handing out ports this process already used")
}

fn binary() -> String {
    std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".to_string())
}

/// The endpoints of every node `client` knows, in its order.
pub fn endpoints(client: &resilient_redis::Client) -> Vec<resilient_redis::Endpoint> {
    client.nodes().into_iter().map(|n| n.endpoint).collect()
}

/// Waits until `cond` holds or `within` passes; returns whether it held.
pub fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl RedisServer {
    /// Starts a plain server; `None` only when skipped explicitly.
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(&[])
    }

    /// Starts a server with extra `--key value` arguments.
    ///
    /// Race-free: a port found free may be taken by another test's server before ours
    /// binds it. Ours then exits at once (`Address already in use`), while the port
    /// answers anyway, for the other server. So the server counts as started only when
    /// our child is alive, has written its pid file (Redis writes it only after binding
    /// its listening sockets) and the port accepts; otherwise it is retried on another
    /// port.
    pub fn start_with(extra: &[&str]) -> Option<RedisServer> {
        if skipped() {
            return None;
        }
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        const ATTEMPTS: usize = 10;
        for _ in 0..ATTEMPTS {
            let port = free_port();
            // Unique per attempt: a directory per port alone was shared (and removed by
            // the other's drop) when two tests of one process got the same port.
            let n = STARTED.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("rr-test-{}-{port}-{n}", std::process::id()));
            let mut server = RedisServer {
                child: None,
                port,
                dir,
                args: args.clone(),
            };
            if server.spawn() {
                return Some(server);
            }
        }
        panic!("redis-server did not start on any of {ATTEMPTS} ephemeral ports");
    }

    /// Starts a server on `port` exactly, once; an error when the process that answers
    /// there is not the one started (or none does). For tests of the start itself.
    pub fn try_start_on(port: u16, extra: &[&str]) -> Result<RedisServer, String> {
        static ON: AtomicUsize = AtomicUsize::new(0);
        let n = ON.fetch_add(1, Ordering::Relaxed);
        let mut server = RedisServer {
            child: None,
            port,
            dir: std::env::temp_dir().join(format!("rr-test-{}-{port}-on{n}", std::process::id())),
            args: extra.iter().map(|s| s.to_string()).collect(),
        };
        if server.spawn() {
            Ok(server)
        } else {
            Err(format!("no redis-server of ours answers on port {port}"))
        }
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.join("redis.pid")
    }

    /// Starts the process on `self.port`; true once it is ours that answers there.
    fn spawn(&mut self) -> bool {
        let _ = std::fs::create_dir_all(&self.dir);
        // A pid file left by a killed earlier run (SIGKILL skips the cleanup) would
        // vouch for a process that is gone.
        let _ = std::fs::remove_file(self.pid_file());
        let mut cmd = Command::new(binary());
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--pidfile")
            .arg(self.pid_file())
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!(
                "cannot run `{}` ({e}). Install it with `apt-get install -y redis-server` \
                 (the README's test command does this), or set \
                 RESILIENT_REDIS_SKIP_SERVER_TESTS=1 to skip these tests explicitly",
                binary()
            ),
        };
        let pid = child.id();
        self.child = Some(child);
        let (port, pid_file) = (self.port, self.pid_file());
        let mut exited = false;
        let up = wait_until(Duration::from_secs(10), || {
            // Exited: the port was taken (or an argument refused); no use waiting.
            if let Some(c) = self.child.as_mut() {
                if !matches!(c.try_wait(), Ok(None)) {
                    exited = true;
                    return true;
                }
            }
            let ours =
                std::fs::read_to_string(&pid_file).is_ok_and(|text| text.trim() == pid.to_string());
            ours && TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        if !up || exited {
            self.kill();
            return false;
        }
        true
    }

    /// `redis://127.0.0.1:port`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:port`
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts again on the same port (after `kill`).
    pub fn restart(&mut self) {
        self.kill();
        // The port may linger briefly in the kernel; retry the bind for a few seconds.
        let ok = wait_until(Duration::from_secs(10), || self.spawn());
        assert!(ok, "redis-server did not restart on port {}", self.port);
    }

    /// SIGSTOP: the socket stays open, nothing answers.
    pub fn pause(&self) {
        signal(self.pid(), "-STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        signal(self.pid(), "-CONT");
    }
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid} failed");
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            // A stopped process must be resumed to die promptly on some kernels.
            signal_quiet(c.id(), "-CONT");
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn signal_quiet(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// Names of this process's threads that start with `prefix` (Linux `/proc`).
pub fn threads_named(prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc/self/task") {
        for e in entries.flatten() {
            if let Ok(name) = std::fs::read_to_string(e.path().join("comm")) {
                let name = name.trim().to_string();
                if name.starts_with(prefix) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// The threads named `prefix...` still listed once threads just joined have had time
/// to leave `/proc/self/task`: the kernel can list an exited thread there for a moment
/// after the join returns (its tid is released after the join's wake-up; seen in
/// fresh-clone runs). A short deadline, not a leak's: a thread that was not joined
/// shows.
pub fn threads_left_after_join(prefix: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_millis(500);
    while !threads_named(prefix).is_empty() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    threads_named(prefix)
}

/// Events received until one matches `until` (or `within` passes): a group publishes
/// its state before the events that announce it, so a test that saw the state waits
/// for the event rather than reading the queue once.
pub fn events_until<E>(
    events: &crossbeam_channel::Receiver<E>,
    within: Duration,
    until: impl Fn(&E) -> bool,
) -> Vec<E> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    while let Ok(e) = events.recv_deadline(deadline) {
        let done = until(&e);
        seen.push(e);
        if done {
            break;
        }
    }
    seen.extend(events.try_iter());
    seen
}
