//! A real Redis Cluster of `redis-server` processes on ephemeral loopback ports,
//! created with `redis-cli --cluster create`, torn down on drop; a raw RESP connection
//! for watching nodes without the client under test; and a per-shard load that records
//! every call, for the failover tests and the benchmark.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use resilient_redis::availability::RetryPolicy;
use resilient_redis::prelude::*;
use resilient_redis::{Database, ErrorKind};

use super::{wait_until, RedisServer};

pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    spec: ClusterSpec,
}

/// The shape and settings of a test cluster.
#[derive(Clone, Copy, Debug)]
pub struct ClusterSpec {
    pub masters: usize,
    pub replicas: usize,
    /// `cluster-node-timeout` in milliseconds (3000 unless set).
    pub node_timeout_ms: u32,
    /// `cluster-require-full-coverage` (yes unless set, as redis-server defaults).
    pub full_coverage: bool,
    /// Whether `start_spec` waits for the replicas to be in sync (yes unless set).
    pub sync_replicas: bool,
}

impl ClusterSpec {
    pub fn new(masters: usize, replicas: usize) -> ClusterSpec {
        ClusterSpec {
            masters,
            replicas,
            node_timeout_ms: 3000,
            full_coverage: true,
            sync_replicas: true,
        }
    }

    pub fn sync_replicas(mut self, wait: bool) -> ClusterSpec {
        self.sync_replicas = wait;
        self
    }

    pub fn node_timeout_ms(mut self, ms: u32) -> ClusterSpec {
        self.node_timeout_ms = ms;
        self
    }

    pub fn full_coverage(mut self, yes: bool) -> ClusterSpec {
        self.full_coverage = yes;
        self
    }
}

/// Runs `redis-cli` and returns its stdout (panics with stderr on failure).
pub fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run redis-cli (apt-get install -y redis-tools)");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn node_id(port: u16) -> String {
    cli(port, &["CLUSTER", "MYID"])
}

fn cluster_node(spec: &ClusterSpec) -> Option<RedisServer> {
    let timeout = spec.node_timeout_ms.to_string();
    let coverage = if spec.full_coverage { "yes" } else { "no" };
    RedisServer::start_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        &timeout,
        "--cluster-require-full-coverage",
        coverage,
    ])
}

impl RedisCluster {
    /// `masters` masters with the slots split evenly; `None` only when skipped.
    pub fn start(masters: usize) -> Option<RedisCluster> {
        RedisCluster::start_with_replicas(masters, 0)
    }

    /// `masters` masters, each with `replicas` replicas.
    pub fn start_with_replicas(masters: usize, replicas: usize) -> Option<RedisCluster> {
        RedisCluster::start_spec(ClusterSpec::new(masters, replicas))
    }

    /// A cluster as `spec` says; with replicas, returns once every replica is in sync
    /// (a graceful failover needs that).
    pub fn start_spec(spec: ClusterSpec) -> Option<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..spec.masters * (1 + spec.replicas) {
            nodes.push(cluster_node(&spec)?);
        }
        let addrs: Vec<String> = nodes.iter().map(|n| n.addr()).collect();
        let replicas = spec.replicas.to_string();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", replicas.as_str(), "--cluster-yes"]);
        cli(nodes[0].port, &args);
        let cluster = RedisCluster { nodes, spec };
        cluster.wait_ok();
        if spec.replicas > 0 && spec.sync_replicas {
            cluster.wait_replicas_in_sync();
        }
        Some(cluster)
    }

    /// Waits until every node says the cluster is ok and agrees on all slots.
    pub fn wait_ok(&self) {
        let ok = wait_until(Duration::from_secs(30), || {
            self.nodes.iter().all(|n| {
                let info = cli(n.port, &["CLUSTER", "INFO"]);
                info.contains("cluster_state:ok") && info.contains("cluster_slots_assigned:16384")
            })
        });
        assert!(ok, "the cluster did not become ok");
    }

    /// Waits until every replica's link to its master is up and every node lists
    /// every replica (gossip settled).
    pub fn wait_replicas_in_sync(&self) {
        let expected = self.spec.masters * self.spec.replicas;
        let ok = wait_until(Duration::from_secs(30), || {
            let replicas = self
                .nodes
                .iter()
                .filter(|n| cli(n.port, &["ROLE"]).starts_with("slave"))
                .filter(|n| cli(n.port, &["INFO", "replication"]).contains("master_link_status:up"))
                .count();
            replicas == expected
                && self.nodes.iter().all(|n| {
                    cli(n.port, &["CLUSTER", "NODES"])
                        .lines()
                        .filter(|l| {
                            l.split_whitespace()
                                .nth(2)
                                .is_some_and(|flags| flags.contains("slave"))
                        })
                        .count()
                        == expected
                })
        });
        assert!(ok, "the replicas did not come in sync");
    }

    /// The node listening on `port`.
    pub fn node_mut(&mut self, port: u16) -> &mut RedisServer {
        self.nodes
            .iter_mut()
            .find(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    /// The ports of the masters that own slots, and the replica of each (the first
    /// one listed), as `CLUSTER NODES` on a live node says now.
    pub fn shards(&self) -> Vec<(u16, Option<u16>)> {
        let nodes = self.cluster_nodes();
        let port_of = |field: &str| -> u16 {
            field
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(0)
        };
        let lines: Vec<Vec<&str>> = nodes
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        lines
            .iter()
            .filter(|f| f.len() > 8 && f[2].contains("master") && !f[2].contains("fail"))
            .map(|m| {
                let replica = lines
                    .iter()
                    .find(|r| r.len() > 3 && r[3] == m[0] && !r[2].contains("fail"))
                    .map(|r| port_of(r[1]));
                (port_of(m[1]), replica)
            })
            .collect()
    }

    /// `CLUSTER NODES` from the first node that answers.
    fn cluster_nodes(&self) -> String {
        for n in &self.nodes {
            if let Some(reply) = RawConn::connect(n.port)
                .and_then(|mut c| c.command(&["CLUSTER", "NODES"]).ok().map(|r| r.text()))
            {
                return reply;
            }
        }
        panic!("no node answers CLUSTER NODES");
    }

    /// Starts a graceful failover on `replica` (`CLUSTER FAILOVER`).
    pub fn graceful_failover(&self, replica: u16) {
        assert_eq!(cli(replica, &["CLUSTER", "FAILOVER"]), "OK");
    }

    /// Polls `port` (every 2 ms, over one raw connection) until it says it is a master,
    /// and returns when it first did, or `None` when `within` passed first.
    pub fn wait_promoted(port: u16, within: Duration) -> Option<Instant> {
        let deadline = Instant::now() + within;
        let mut conn = None;
        while Instant::now() < deadline {
            if conn.is_none() {
                conn = RawConn::connect(port);
            }
            if let Some(c) = conn.as_mut() {
                match c.command(&["ROLE"]) {
                    Ok(Reply::Array(items)) if matches!(items.first(), Some(Reply::Bulk(r)) if r == "master") =>
                    {
                        return Some(Instant::now());
                    }
                    Ok(_) => {}
                    Err(_) => conn = None,
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        None
    }

    /// Adds an empty master and waits until every node knows it.
    pub fn add_empty_master(&mut self) -> u16 {
        let node = cluster_node(&self.spec).expect("start node");
        let port = node.port;
        cli(
            self.nodes[0].port,
            &["CLUSTER", "MEET", "127.0.0.1", &port.to_string()],
        );
        let id = node_id(port);
        self.nodes.push(node);
        let known = wait_until(Duration::from_secs(30), || {
            self.nodes
                .iter()
                .all(|n| cli(n.port, &["CLUSTER", "NODES"]).contains(&id))
        });
        assert!(known, "the new node was not met by all");
        port
    }

    /// Moves `slot` (and its keys) from the node on `from` to the node on `to` the way
    /// `redis-cli --cluster reshard` does; `between` runs once the slot is MIGRATING and
    /// half of its keys have moved (so ASK redirects are live).
    pub fn migrate_slot(&self, slot: u16, from: u16, to: u16, mut between: impl FnMut()) {
        let (from_id, to_id) = (node_id(from), node_id(to));
        let s = slot.to_string();
        cli(to, &["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id]);
        cli(from, &["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id]);
        let keys_text = cli(from, &["CLUSTER", "GETKEYSINSLOT", &s, "100000"]);
        let keys: Vec<&str> = keys_text.lines().filter(|k| !k.is_empty()).collect();
        let (first, second) = keys.split_at(keys.len() / 2);
        let migrate = |batch: &[&str]| {
            if batch.is_empty() {
                return;
            }
            let port = to.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend_from_slice(batch);
            cli(from, &args);
        };
        migrate(first);
        between();
        migrate(second);
        for n in &self.nodes {
            cli(n.port, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]);
        }
    }

    /// The port of the node that owns `slot` now.
    pub fn owner_of(&self, slot: u16) -> u16 {
        // CLUSTER NODES lists each master's slot ranges after its 8th field.
        let nodes = self.cluster_nodes();
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            for range in fields.iter().skip(8) {
                let (a, b) = match range.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap_or(u16::MAX), b.parse().unwrap_or(0)),
                    None => {
                        let v = range.parse().unwrap_or(u16::MAX);
                        (v, v)
                    }
                };
                if a <= slot && slot <= b {
                    let addr = fields[1].split('@').next().unwrap_or("");
                    return addr
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                }
            }
        }
        panic!("no owner for slot {slot}");
    }
}

/// A reply read by [`RawConn`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(String),
    Nil,
    Array(Vec<Reply>),
}

impl Reply {
    /// The text of a simple or bulk string (empty for anything else).
    pub fn text(&self) -> String {
        match self {
            Reply::Simple(s) | Reply::Bulk(s) => s.clone(),
            _ => String::new(),
        }
    }
}

/// One plain RESP2 connection to one node, without the client under test: what the
/// server itself allows, and a way to watch a node during a failover.
pub struct RawConn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl RawConn {
    /// Connects to `127.0.0.1:port` (`None` when refused).
    pub fn connect(port: u16) -> Option<RawConn> {
        let stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .ok()?;
        stream.set_nodelay(true).ok()?;
        let writer = stream.try_clone().ok()?;
        Some(RawConn {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// Sends one command and reads its reply.
    pub fn command(&mut self, args: &[&str]) -> std::io::Result<Reply> {
        let mut frame = format!("*{}\r\n", args.len());
        for a in args {
            frame.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.writer.write_all(frame.as_bytes())?;
        self.read()
    }

    fn read(&mut self) -> std::io::Result<Reply> {
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "closed",
            ));
        }
        let line = line.trim_end();
        let (kind, rest) = line.split_at(line.len().min(1));
        let n = || rest.parse::<i64>().map_err(|_| bad("a bad length"));
        Ok(match kind {
            "+" => Reply::Simple(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(n()?),
            "$" => {
                let len = n()?;
                if len < 0 {
                    return Ok(Reply::Nil);
                }
                let mut buf = vec![0; len as usize + 2];
                std::io::Read::read_exact(&mut self.reader, &mut buf)?;
                buf.truncate(len as usize);
                Reply::Bulk(String::from_utf8_lossy(&buf).into_owned())
            }
            "*" => {
                let len = n()?;
                if len < 0 {
                    return Ok(Reply::Nil);
                }
                let mut items = Vec::new();
                for _ in 0..len {
                    items.push(self.read()?);
                }
                Reply::Array(items)
            }
            _ => return Err(bad("an unknown reply type")),
        })
    }
}

/// A hash tag (`{...}`) whose slot the node on `port` owns now, different for each
/// `n` asked for.
pub fn tags_owned_by(cluster: &RedisCluster, port: u16, count: usize) -> Vec<String> {
    let nodes = cluster.cluster_nodes();
    let owned: Vec<(u16, u16)> = nodes
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| {
            f.len() > 8
                && f[1]
                    .split('@')
                    .next()
                    .is_some_and(|a| a.ends_with(&format!(":{port}")))
        })
        .flat_map(|f| {
            f[8..]
                .iter()
                .filter_map(|r| match r.split_once('-') {
                    Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                    None => r.parse().ok().map(|v| (v, v)),
                })
                .collect::<Vec<_>>()
        })
        .collect();
    (0u32..)
        .map(|i| format!("t{i}"))
        .filter(|t| {
            let slot = resilient_redis::cluster::key_slot(t.as_bytes());
            owned.iter().any(|&(a, b)| a <= slot && slot <= b)
        })
        .take(count)
        .collect()
}

/// One call the load made: when it ended (since the load started), how long it took,
/// and its error, if any.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub end: Duration,
    pub took: Duration,
    pub error: Option<ErrorKind>,
}

/// Threads writing and reading keys of given shards through one client, each call
/// recorded, and each failed attempt the retry policy saw.
pub struct Load {
    pub start: Instant,
    stop: Arc<AtomicBool>,
    threads: Vec<(usize, JoinHandle<Vec<Call>>)>,
    attempts: Vec<Arc<Mutex<Vec<Call>>>>,
    successes: Vec<Arc<AtomicU64>>,
}

/// What a load recorded, per shard (in the order the tags were given).
pub struct Record {
    pub start: Instant,
    pub shards: Vec<Vec<Call>>,
    /// Failed attempts (retried or not) per shard, when a retry policy was given.
    pub attempts: Vec<Vec<Call>>,
}

impl Load {
    /// `threads` threads per shard, shard `i` using the keys of `shard_tags[i]` (one tag
    /// per thread, reused round-robin): SET then GET of the same key, in a loop; with
    /// `retry`, every call goes through `db.with_retry(retry)`.
    pub fn start(
        db: &Database,
        shard_tags: &[Vec<String>],
        threads: usize,
        retry: Option<RetryPolicy>,
    ) -> Load {
        let start = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        let mut attempts = Vec::new();
        let mut successes = Vec::new();
        for (shard, tags) in shard_tags.iter().enumerate() {
            let served = Arc::new(AtomicU64::new(0));
            successes.push(served.clone());
            let failed = Arc::new(Mutex::new(Vec::new()));
            attempts.push(failed.clone());
            let db = match &retry {
                Some(policy) => db
                    .with_retry(policy.clone().with_decision(move |p, fault| {
                        if let Some(kind) = fault.error_kind {
                            failed.lock().expect("attempts").push(Call {
                                end: start.elapsed(),
                                took: Duration::ZERO,
                                error: Some(kind),
                            });
                        }
                        p.default_decision(fault)
                    }))
                    .expect("a database without retries"),
                None => db.clone(),
            };
            for t in 0..threads {
                let tag = tags[t % tags.len()].clone();
                let (db, stop, served) = (db.clone(), stop.clone(), served.clone());
                let handle = std::thread::Builder::new()
                    .name(format!("load {shard}.{t}"))
                    .spawn(move || {
                        let mut calls = Vec::new();
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let key = format!("{{{tag}}}:{t}:{}", i % 64);
                            let began = Instant::now();
                            let error = db.set(&key, i).err().map(|e| e.kind());
                            served.fetch_add(u64::from(error.is_none()), Ordering::Relaxed);
                            calls.push(Call {
                                end: start.elapsed(),
                                took: began.elapsed(),
                                error,
                            });
                            let began = Instant::now();
                            // A promoted replica may have missed the last write
                            // (replication is asynchronous): any value is an answer.
                            let error = db.get::<Option<u64>>(&key).err().map(|e| e.kind());
                            served.fetch_add(u64::from(error.is_none()), Ordering::Relaxed);
                            calls.push(Call {
                                end: start.elapsed(),
                                took: began.elapsed(),
                                error,
                            });
                            i += 1;
                        }
                        calls
                    })
                    .expect("spawn a load thread");
                handles.push((shard, handle));
            }
        }
        Load {
            start,
            stop,
            threads: handles,
            attempts,
            successes,
        }
    }

    /// Successful calls on `shard` so far.
    pub fn successes(&self, shard: usize) -> u64 {
        self.successes[shard].load(Ordering::Relaxed)
    }

    /// Waits (up to `within`) until `shard` has served `n` more calls than now.
    pub fn wait_served(&self, shard: usize, n: u64, within: Duration) -> bool {
        let target = self.successes(shard) + n;
        wait_until(within, || self.successes(shard) >= target)
    }

    /// Stops every thread and collects what they recorded.
    pub fn finish(self) -> Record {
        self.stop.store(true, Ordering::Relaxed);
        let mut shards = vec![Vec::new(); self.attempts.len()];
        for (shard, handle) in self.threads {
            shards[shard].extend(handle.join().expect("a load thread panicked"));
        }
        for calls in &mut shards {
            calls.sort_by_key(|c| c.end);
        }
        let attempts = self
            .attempts
            .iter()
            .map(|a| a.lock().expect("attempts").clone())
            .collect();
        Record {
            start: self.start,
            shards,
            attempts,
        }
    }
}

impl Record {
    fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.start)
    }

    /// The longest stretch in `[from, to]` without a successful call on `shard`.
    pub fn max_gap(&self, shard: usize, from: Instant, to: Instant) -> Duration {
        self.max_gap_span(shard, from, to).1
    }

    /// The longest stretch in `[from, to]` without a successful call on `shard`: when
    /// it began and how long it lasted.
    pub fn max_gap_span(&self, shard: usize, from: Instant, to: Instant) -> (Instant, Duration) {
        let (from, to) = (self.offset(from), self.offset(to));
        let mut last = from;
        let mut gap = (from, Duration::ZERO);
        for c in self.shards[shard].iter().filter(|c| c.error.is_none()) {
            if c.end < from {
                continue;
            }
            if c.end > to {
                break;
            }
            if c.end - last > gap.1 {
                gap = (last, c.end - last);
            }
            last = c.end;
        }
        if to.saturating_sub(last) > gap.1 {
            gap = (last, to - last);
        }
        (self.start + gap.0, gap.1)
    }

    /// When `shard` first served a call that ended after `at`, as time after `at`.
    pub fn served_after(&self, shard: usize, at: Instant) -> Option<Duration> {
        let at = self.offset(at);
        self.shards[shard]
            .iter()
            .find(|c| c.error.is_none() && c.end >= at)
            .map(|c| c.end - at)
    }

    /// The failed calls on `shard` that ended after `at`.
    pub fn failures_after(&self, shard: usize, at: Instant) -> Vec<Call> {
        let at = self.offset(at);
        self.shards[shard]
            .iter()
            .filter(|c| c.error.is_some() && c.end >= at)
            .copied()
            .collect()
    }

    /// The longest call on `shard` that ended in `[from, to]`.
    pub fn longest_call(&self, shard: usize, from: Instant, to: Instant) -> Duration {
        let (from, to) = (self.offset(from), self.offset(to));
        self.shards[shard]
            .iter()
            .filter(|c| c.end >= from && c.end <= to)
            .map(|c| c.took)
            .max()
            .unwrap_or_default()
    }
}
