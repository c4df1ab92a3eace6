//! Built-in probes (`Ping`, `IsConnected`, `StringSet`) and `ProbeTarget`, what a
//! probe may do with the server it checks.
//!
//! Probe traffic goes through the server's normal queue (so a connection whose queue
//! does not drain is seen as unhealthy) but is not caller work: it never makes a
//! server look busy.

use std::sync::Arc;
use std::time::Duration;

use super::health::{collate, HealthCheck, Probe, ProbeResult, ProbeScope};
use crate::client::cluster::key_slot;
use crate::client::{Deployment, Node};
use crate::commands::{Cmd, FromValue, RetryCategory};
use crate::config::Endpoint;
use crate::connection::slot::Outcome;
use crate::error::{Error, ErrorKind, Result};

/// The server one probe checks.
pub struct ProbeTarget<'a> {
    pub(crate) member: &'a str,
    pub(crate) node: Arc<Node>,
    pub(crate) deployment: Arc<Deployment>,
}

impl std::fmt::Debug for ProbeTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeTarget")
            .field("member", &self.member)
            .field("endpoint", &self.node.endpoint)
            .finish()
    }
}

impl ProbeTarget<'_> {
    /// The name of the group member being checked.
    pub fn member_name(&self) -> &str {
        self.member
    }

    /// The server being checked.
    pub fn endpoint(&self) -> &Endpoint {
        &self.node.endpoint
    }

    /// Whether its interactive connection is up now (no command sent).
    pub fn is_connected(&self) -> bool {
        self.node.current().is_some()
    }

    /// Runs `cmd` on exactly this server (not routed elsewhere), as probe traffic.
    pub fn command<T: FromValue>(&self, cmd: &Cmd, timeout: Duration) -> Result<T> {
        let reply = match self.node.request(cmd.frame(), 1, timeout, false)? {
            Outcome::One(v) => v,
            Outcome::Failed(e) => return Err(e),
            Outcome::Many(_) => return Err(Error::new(ErrorKind::Protocol, "several replies")),
        };
        if let Some(m) = reply.error_message() {
            return Err(Error::from_server_reply(m).with_command(cmd.name()));
        }
        T::from_value(reply)
    }

    /// A key that hashes to this server (in a cluster, to a slot it owns), so a
    /// key-writing probe checks the server it means to and not another node.
    pub fn invent_key(&self, prefix: &str) -> String {
        let Some(state) = self.deployment.cluster() else {
            return format!("{prefix}:{}", unique());
        };
        let me = &self.node.endpoint;
        for tag in 0u32..100_000 {
            let key = format!("{prefix}:{{{tag}}}");
            if state.master_for(key_slot(key.as_bytes())).as_ref() == Some(me) {
                return key;
            }
        }
        format!("{prefix}:{}", unique())
    }
}

/// Runs `check` for a member on the calling probe thread, once per member or once per
/// serving server as its scope says; `None` when there is nothing to probe yet.
pub(crate) fn run_check(
    check: &HealthCheck,
    member: &str,
    deployment: &Arc<Deployment>,
) -> Option<ProbeResult> {
    let primary = deployment.primary()?;
    let nodes = match (check.scope, deployment.cluster()) {
        (ProbeScope::Endpoint, Some(state)) => {
            // The serving masters, read off the slot map on this probe thread (16384
            // lookups, well under a millisecond, once per check).
            let mut masters: Vec<Endpoint> = Vec::new();
            for slot in 0..crate::client::cluster::SLOT_COUNT {
                if let Some(m) = state.master_for(slot) {
                    if !masters.contains(&m) {
                        masters.push(m);
                    }
                }
            }
            let nodes: Vec<Arc<Node>> = masters.iter().filter_map(|e| deployment.find(e)).collect();
            // Before the slot map is known, the seed is all there is to ask.
            if nodes.is_empty() {
                vec![primary]
            } else {
                nodes
            }
        }
        _ => vec![primary],
    };
    Some(collate(nodes.into_iter().map(|node| {
        check.run(&ProbeTarget {
            member,
            node,
            deployment: deployment.clone(),
        })
    })))
}

fn unique() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}

/// `PING`: the default probe.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ping;

impl Probe for Ping {
    fn probe(&self, target: &ProbeTarget<'_>, timeout: Duration) -> ProbeResult {
        let ping = Cmd::typed("PING", RetryCategory::Always);
        match target.command::<String>(&ping, timeout) {
            Ok(_) => ProbeResult::Healthy,
            Err(e) => {
                log::debug!("{}: PING probe failed: {e}", target.endpoint());
                ProbeResult::Unhealthy
            }
        }
    }
}

/// Whether the connection is up: no command is sent.
#[derive(Clone, Copy, Debug, Default)]
pub struct IsConnected;

impl Probe for IsConnected {
    fn probe(&self, target: &ProbeTarget<'_>, _timeout: Duration) -> ProbeResult {
        if target.is_connected() {
            ProbeResult::Healthy
        } else {
            ProbeResult::Unhealthy
        }
    }
}

/// A probe that works on a key of its own, the building block of write probes: the
/// key is invented so it routes to the server being checked (in a cluster, to a slot
/// that server owns, or the probe would check another node), a replica that refuses
/// the write (`READONLY`) is Inconclusive rather than a failure, and any other error
/// is Unhealthy. `check` returns whether the server did what was asked.
///
/// ```
/// use std::time::Duration;
/// use resilient_redis::availability::{HealthCheck, KeyWrite};
/// use resilient_redis::Cmd;
/// // INCR a counter of its own and read it back.
/// let probe = KeyWrite::new("__health", |target, key, timeout| {
///     let n: i64 = target.command(&Cmd::new("INCR").key(key), timeout)?;
///     let get = Cmd::new("GET").key(key);
///     let read: i64 = target.command(&get, timeout)?;
///     Ok(read >= n)
/// });
/// let check = HealthCheck { probe: std::sync::Arc::new(probe), ..HealthCheck::default() };
/// # let _ = check;
/// ```
pub struct KeyWrite<F> {
    key_prefix: String,
    check: F,
}

impl<F> KeyWrite<F>
where
    F: Fn(&ProbeTarget<'_>, &str, Duration) -> Result<bool> + Send + Sync,
{
    /// A probe running `check` on a fresh key starting with `key_prefix`.
    pub fn new(key_prefix: impl Into<String>, check: F) -> KeyWrite<F> {
        KeyWrite {
            key_prefix: key_prefix.into(),
            check,
        }
    }
}

impl<F> std::fmt::Debug for KeyWrite<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyWrite")
            .field("key_prefix", &self.key_prefix)
            .finish_non_exhaustive()
    }
}

impl<F> Probe for KeyWrite<F>
where
    F: Fn(&ProbeTarget<'_>, &str, Duration) -> Result<bool> + Send + Sync,
{
    fn probe(&self, target: &ProbeTarget<'_>, timeout: Duration) -> ProbeResult {
        key_write(target, &self.key_prefix, timeout, &self.check)
    }
}

fn key_write(
    target: &ProbeTarget<'_>,
    prefix: &str,
    timeout: Duration,
    check: &dyn Fn(&ProbeTarget<'_>, &str, Duration) -> Result<bool>,
) -> ProbeResult {
    let key = target.invent_key(prefix);
    match check(target, &key, timeout) {
        Ok(true) => ProbeResult::Healthy,
        Ok(false) => ProbeResult::Unhealthy,
        Err(e) if e.kind() == ErrorKind::ReadOnly => ProbeResult::Inconclusive,
        Err(e) => {
            log::debug!("{}: key probe failed: {e}", target.endpoint());
            ProbeResult::Unhealthy
        }
    }
}

/// Writes a random value under a key that routes to the checked server, reads it back
/// (a [`KeyWrite`] probe). On a replica the write is refused (`READONLY`): that is
/// Inconclusive, not a failure.
#[derive(Clone, Debug)]
pub struct StringSet {
    /// Prefix of the probe keys (they expire after a minute).
    pub key_prefix: String,
}

impl Default for StringSet {
    fn default() -> StringSet {
        StringSet {
            key_prefix: "__rr_probe".to_string(),
        }
    }
}

impl Probe for StringSet {
    fn probe(&self, target: &ProbeTarget<'_>, timeout: Duration) -> ProbeResult {
        key_write(
            target,
            &self.key_prefix,
            timeout,
            &|target, key, timeout| {
                let value = unique().to_string();
                let set = Cmd::typed("SET", RetryCategory::WriteLastWins)
                    .key(key)
                    .arg(&value)
                    .arg("EX")
                    .arg(60);
                target.command::<()>(&set, timeout)?;
                let get = Cmd::typed("GET", RetryCategory::ReadOnly).key(key);
                Ok(target.command::<Option<String>>(&get, timeout)? == Some(value))
            },
        )
    }
}
