//! A Sentinel-managed deployment of real processes on ephemeral loopback ports: a
//! primary, a replica and three sentinels (`redis-server <conf> --sentinel`), with the
//! short timings the tests need (`down-after-milliseconds` 1000, a small
//! `failover-timeout`). Everything is killed on drop.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{free_port, skipped, wait_until, RedisServer};

pub const SERVICE: &str = "mymaster";

/// One sentinel process.
pub struct Sentinel {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

impl Sentinel {
    /// The sentinel's own log (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sentinel.log")).unwrap_or_default()
    }

    fn start(primary_port: u16, extra: &[String]) -> Sentinel {
        static N: AtomicUsize = AtomicUsize::new(0);
        for _ in 0..10 {
            let port = free_port();
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("rr-sentinel-{}-{port}-{n}", std::process::id()));
            let _ = std::fs::create_dir_all(&dir);
            let pid_file = dir.join("sentinel.pid");
            let conf = dir.join("sentinel.conf");
            let mut text = format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\npidfile {}\ndir {}\n\
                 logfile {}\n\
                 sentinel resolve-hostnames no\nsentinel announce-ip 127.0.0.1\n\
                 sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 2\n\
                 sentinel down-after-milliseconds {SERVICE} 1000\n\
                 sentinel failover-timeout {SERVICE} 3000\n\
                 sentinel parallel-syncs {SERVICE} 1\n",
                pid_file.display(),
                dir.display(),
                dir.join("sentinel.log").display()
            );
            for line in extra {
                text.push_str(line);
                text.push('\n');
            }
            std::fs::write(&conf, text).expect("write the sentinel config");
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("run redis-server --sentinel (apt-get install -y redis-server)");
            let pid = child.id();
            let mut s = Sentinel {
                child: Some(child),
                port,
                dir,
            };
            let mut exited = false;
            let up = wait_until(Duration::from_secs(10), || {
                if let Some(c) = s.child.as_mut() {
                    if !matches!(c.try_wait(), Ok(None)) {
                        exited = true;
                        return true;
                    }
                }
                let ours =
                    std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim() == pid.to_string());
                ours && TcpStream::connect(("127.0.0.1", port)).is_ok()
            });
            if up && !exited {
                return s;
            }
            s.kill();
        }
        panic!("a sentinel did not start on any of 10 ephemeral ports");
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A primary and its replica, no sentinel (a deployment of several endpoints whose
/// roles the client reads with `ROLE`), once the replica's link is up. `None` only
/// when skipped.
pub fn replica_pair() -> Option<(RedisServer, RedisServer)> {
    // Without it the primary waits 5 s for more replicas before a diskless full sync.
    let primary = RedisServer::start_with(&["--repl-diskless-sync-delay", "0"])?;
    let port = primary.port.to_string();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &port])?;
    assert!(wait_until(Duration::from_secs(10), || {
        super::cluster::cli(replica.port, &["INFO", "replication"])
            .contains("master_link_status:up")
    }));
    Some((primary, replica))
}

/// A primary, a replica and three sentinels watching them.
pub struct SentinelSetup {
    pub primary: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<Sentinel>,
}

impl SentinelSetup {
    /// Starts everything and waits until every sentinel knows the replica and the
    /// other two sentinels (a failover needs both). `None` only when skipped.
    pub fn start() -> Option<SentinelSetup> {
        SentinelSetup::start_with(&[], &[])
    }

    /// With extra data-node arguments and extra sentinel config lines.
    pub fn start_with(node_args: &[&str], sentinel_lines: &[&str]) -> Option<SentinelSetup> {
        if skipped() {
            return None;
        }
        let primary = RedisServer::start_with(node_args)?;
        let replica_of = primary.port.to_string();
        let mut args = vec!["--replicaof", "127.0.0.1", replica_of.as_str()];
        args.extend_from_slice(node_args);
        let replica = RedisServer::start_with(&args)?;
        let lines: Vec<String> = sentinel_lines.iter().map(|s| s.to_string()).collect();
        let sentinels = (0..3)
            .map(|_| Sentinel::start(primary.port, &lines))
            .collect::<Vec<_>>();
        let setup = SentinelSetup {
            primary,
            replica,
            sentinels,
        };
        let ready = wait_until(Duration::from_secs(20), || {
            setup
                .sentinels
                .iter()
                .all(|s| count(s.port, "SENTINELS") == 2 && count(s.port, "REPLICAS") == 1)
        });
        assert!(
            ready,
            "the sentinels did not discover each other and the replica"
        );
        Some(setup)
    }

    /// `host:port,host:port,...` of the sentinels.
    pub fn sentinel_list(&self) -> String {
        self.sentinels
            .iter()
            .map(|s| s.addr())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `redis+sentinel://h1,h2,h3/mymaster`
    pub fn url(&self) -> String {
        format!("redis+sentinel://{}/{SERVICE}", self.sentinel_list())
    }
}

/// `redis-cli` against a sentinel; `None` when it fails.
pub fn sentinel_cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// How many sentinels / replicas a sentinel knows for the service.
fn count(port: u16, what: &str) -> usize {
    sentinel_cli(port, &["SENTINEL", what, SERVICE])
        .map(|out| out.lines().filter(|l| l.trim() == "name").count())
        .unwrap_or(0)
}

/// The `ROLE` of a data node (`master`, `slave`), or "" when it does not answer.
pub fn role(port: u16) -> String {
    Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "ROLE"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_default()
}

/// `CLIENT LIST` of a data node. When the sentinels reconfigure a node they end its
/// normal clients (`CLIENT KILL TYPE normal`), this observer's own connection
/// included, so a closed connection is asked again for up to 5 s before it fails.
pub fn client_list(port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "CLIENT", "LIST"])
            .output()
            .expect("run redis-cli (apt-get install -y redis-tools)");
        if out.status.success() {
            return String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "redis-cli CLIENT LIST on {port}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Client names connected to a data node (`CLIENT LIST`).
pub fn client_names(port: u16) -> Vec<String> {
    client_list(port)
        .lines()
        .filter_map(|l| {
            l.split(' ')
                .find_map(|f| f.strip_prefix("name="))
                .map(str::to_string)
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// Watches a sentinel's `+switch-master` channel on a plain socket (not through the
/// client under test) and records when each announcement arrived.
pub struct SwitchWatch {
    pub announced: std::sync::Arc<std::sync::Mutex<Vec<(Instant, String)>>>,
    stream: TcpStream,
}

impl SwitchWatch {
    pub fn start(port: u16) -> SwitchWatch {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to a sentinel");
        stream
            .write_all(b"*2\r\n$9\r\nSUBSCRIBE\r\n$14\r\n+switch-master\r\n")
            .expect("subscribe");
        let announced = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = announced.clone();
        let reader = stream.try_clone().expect("clone the socket");
        std::thread::Builder::new()
            .name("test-switch-watch".into())
            .spawn(move || {
                for line in BufReader::new(reader).lines() {
                    let Ok(line) = line else { return };
                    if line.starts_with(SERVICE) {
                        seen.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((Instant::now(), line));
                    }
                }
            })
            .expect("spawn the watcher");
        SwitchWatch { announced, stream }
    }

    /// When the first announcement arrived, if one did.
    pub fn first(&self) -> Option<(Instant, String)> {
        self.announced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first()
            .cloned()
    }
}

impl Drop for SwitchWatch {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
