//! A throw-away `redis-server` for one bench run, and `redis-benchmark` against it.
//!
//! Owns: starting the server on a free loopback port with persistence off, and killing
//! it when the guard drops (normal exit or unwinding panic alike). Must never: touch a
//! server it did not start, or leave one running after the bench ends.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The running server; dropping it kills the process and removes its directory.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts `redis-server` (or `$REDIS_SERVER`) on a free loopback port.
    pub fn start() -> RedisServer {
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let mut last_error = String::new();
        // A port found free can be taken by someone else before the server binds it:
        // retry with another one rather than fail the whole run.
        for attempt in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("rr-bench-{}-{attempt}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create the server's directory");
            let child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--daemonize", "no", "--loglevel", "warning"])
                .arg("--dir")
                .arg(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn();
            let child = match child {
                Ok(c) => c,
                Err(e) => {
                    panic!("cannot run {bin} ({e}); install it (apt-get install redis-server)")
                }
            };
            let mut server = RedisServer { child, port, dir };
            if server.wait_ready(Duration::from_secs(5)) {
                return server;
            }
            last_error = format!("{bin} did not answer PING on port {port}");
            if let Ok(Some(status)) = server.child.try_wait() {
                last_error = format!("{bin} exited with {status} on port {port}");
            }
            drop(server);
        }
        panic!("cannot start redis-server: {last_error}");
    }

    /// The server's process id (to read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if ping(self.port) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// `redis-server --version`, for the report header.
pub fn server_version() -> String {
    let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| {
            s.split_whitespace()
                .find_map(|w| w.strip_prefix("v=").map(str::to_string))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Requests per second that `redis-benchmark -c clients -P pipeline -t get -d 32`
/// measures against the server. The benchmark GETs the literal key
/// `key:__rand_int__` (no `-r`), which the caller must have set to a 32-byte value.
pub fn redis_benchmark_get(port: u16, clients: usize, pipeline: usize, requests: u64) -> f64 {
    let bin = std::env::var("REDIS_BENCHMARK").unwrap_or_else(|_| "redis-benchmark".into());
    let out = Command::new(&bin)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-c", &clients.to_string(), "-P", &pipeline.to_string()])
        .args([
            "-n",
            &requests.to_string(),
            "-t",
            "get",
            "-d",
            "32",
            "--csv",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin} ({e}); install redis-tools"));
    let text = String::from_utf8_lossy(&out.stdout);
    parse_csv_rps(&text, "GET").unwrap_or_else(|| {
        panic!(
            "no GET line in redis-benchmark --csv output (status {}): {text}",
            out.status
        )
    })
}

/// The `rps` column of the row named `test` in `redis-benchmark --csv` output:
/// `"test","rps","avg_latency_ms",...` then `"GET","98039.22",...`.
fn parse_csv_rps(csv: &str, test: &str) -> Option<f64> {
    let mut lines = csv.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines.next()?.split(',').map(unquote).collect();
    let col = header.iter().position(|h| h == "rps")?;
    lines.find_map(|line| {
        let fields: Vec<String> = line.split(',').map(unquote).collect();
        if fields.first().map(String::as_str) == Some(test) {
            fields.get(col)?.parse().ok()
        } else {
            None
        }
    })
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').to_string()
}
