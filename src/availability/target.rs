//! What a probe is: the `Probe` trait, its three-valued `ProbeResult`, and
//! `ProbeTarget`, what a probe may do with the server it checks.
//!
//! Probe traffic goes through the server's normal queue (so a connection whose queue
//! does not drain is seen as unhealthy) but is not caller work: it never makes a
//! server look busy.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::client::cluster::key_slot;
use crate::client::{Deployment, Node};
use crate::commands::{Cmd, FromValue};
use crate::config::Endpoint;
use crate::connection::reply_slot::Outcome;
use crate::connection::{Deadline, Traffic};
use crate::error::{Error, ErrorKind, Result};

/// What a probe (or a whole check) concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeResult {
    /// It works.
    Healthy,
    /// It does not.
    Unhealthy,
    /// Could not tell (e.g. a write probe on a replica, a management API that did not
    /// answer). Never counts as a failure.
    Inconclusive,
}

impl ProbeResult {
    /// The variant's name (`Healthy`, `Unhealthy`, `Inconclusive`), as metrics label it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ProbeResult::Healthy => "Healthy",
            ProbeResult::Unhealthy => "Unhealthy",
            ProbeResult::Inconclusive => "Inconclusive",
        }
    }
}

/// One probe of one server. Runs on a probe thread, never on a caller's thread or a
/// connection's reader or writer; it must respect `timeout`.
pub trait Probe: Send + Sync + fmt::Debug {
    /// Probes the target once.
    fn probe(&self, target: &ProbeTarget<'_>, timeout: Duration) -> ProbeResult;
}

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
        let outcome =
            self.node
                .request(cmd.frame(), 1, Deadline::after(timeout), Traffic::Internal)?;
        let reply = match outcome {
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

/// A value that differs between calls (probe keys and values).
pub(crate) fn unique() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}
