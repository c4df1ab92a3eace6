//! Built-in probes: `Ping` (the default), `IsConnected`, `StringSet`, and `KeyWrite`,
//! the building block of probes that write a key of their own.

use std::time::Duration;

use super::target::{unique, Probe, ProbeResult, ProbeTarget};
use crate::commands::{Cmd, RetryCategory};
use crate::error::{ErrorKind, Result};

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
/// let check = HealthCheck::default().probe(std::sync::Arc::new(probe));
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
