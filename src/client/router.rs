//! The router behind a client's `Database` and `Subscriber`: a standalone server gets
//! every command; a cluster routes by slot (see `cluster/`). Blocking commands go to
//! a leased connection either way.

use std::sync::Arc;
use std::time::Duration;

use super::blocking::Lease;
use super::cluster::ClusterRouter;
use super::ClientHandle;
use crate::commands::{Cmd, Router};
use crate::connection::slot::Outcome;
use crate::error::{Error, ErrorKind, Result};
use crate::pubsub::{Key, PubSubLinks};
use crate::resp::Value;

pub(crate) struct DeploymentRouter {
    // Holding the handle keeps the client alive while any `Database` exists.
    handle: Arc<ClientHandle>,
}

impl DeploymentRouter {
    pub(crate) fn new(handle: Arc<ClientHandle>) -> DeploymentRouter {
        DeploymentRouter { handle }
    }

    fn primary(&self) -> Result<Arc<super::node::Node>> {
        self.handle
            .inner
            .deployment
            .primary()
            .ok_or_else(|| Error::new(ErrorKind::Closed, "the client has no server"))
    }
}

impl Router for DeploymentRouter {
    fn send(&self, cmd: &Cmd, timeout: Option<Duration>) -> Result<Value> {
        let deployment = &self.handle.inner.deployment;
        if let Some(state) = deployment.cluster() {
            return ClusterRouter::new(deployment, &state).send(cmd, timeout);
        }
        let timeout = timeout.unwrap_or(deployment.options.command_timeout);
        let node = self.primary()?;
        let result = match cmd.block_time() {
            Some(block) => node.blocking.run(cmd.frame(), timeout, block),
            None => node.request(cmd.frame(), 1, timeout, true).and_then(single),
        };
        result.map_err(|e| e.with_command(cmd.name()))
    }

    fn leased(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        self.lease(key, timeout)
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        timeout: Option<Duration>,
        atomic: bool,
    ) -> Result<Vec<Value>> {
        let deployment = &self.handle.inner.deployment;
        if let Some(state) = deployment.cluster() {
            return ClusterRouter::new(deployment, &state).send_many(cmds, timeout, atomic);
        }
        let timeout = timeout.unwrap_or(deployment.options.command_timeout);
        let name = cmds.first().map_or("", |c| c.name());
        self.primary()?
            .request(&Cmd::concat(cmds), cmds.len(), timeout, true)
            .and_then(Outcome::into_values)
            .map_err(|e| e.with_command(name))
    }
}

impl DeploymentRouter {
    fn lease(&self, key: Option<&[u8]>, timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        let deployment = &self.handle.inner.deployment;
        let timeout = timeout.unwrap_or(deployment.options.command_timeout);
        let node = match (deployment.cluster(), key) {
            (Some(state), Some(key)) => {
                let slot = crate::client::cluster::key_slot(key);
                match state.master_for(slot) {
                    Some(e) => deployment.node_for(&e)?,
                    None => self.primary()?,
                }
            }
            _ => self.primary()?,
        };
        Ok(Arc::new(LeasedRouter {
            lease: node.blocking.lease_for(timeout)?,
            timeout,
            _handle: self.handle.clone(),
        }))
    }
}

/// Every command on one leased dedicated connection.
struct LeasedRouter {
    lease: Lease,
    timeout: Duration,
    _handle: Arc<ClientHandle>,
}

impl Router for LeasedRouter {
    fn send(&self, cmd: &Cmd, timeout: Option<Duration>) -> Result<Value> {
        let timeout = timeout
            .unwrap_or(self.timeout)
            .saturating_add(cmd.block_time().unwrap_or_default());
        self.lease
            .request(cmd.frame(), 1, timeout)
            .and_then(single)
            .map_err(|e| {
                e.with_command(cmd.name())
                    .with_endpoint(self.lease.endpoint())
            })
    }

    fn send_many(
        &self,
        cmds: &[Cmd],
        timeout: Option<Duration>,
        _atomic: bool,
    ) -> Result<Vec<Value>> {
        let timeout = timeout.unwrap_or(self.timeout);
        self.lease
            .request(&Cmd::concat(cmds), cmds.len(), timeout)?
            .into_values()
    }

    fn leased(&self, _key: Option<&[u8]>, _timeout: Option<Duration>) -> Result<Arc<dyn Router>> {
        Err(Error::new(
            ErrorKind::InvalidInput,
            "already on a dedicated connection",
        ))
    }
}

impl PubSubLinks for DeploymentRouter {
    fn send(&self, key: &Key, subscribe: bool) -> Result<()> {
        let deployment = &self.handle.inner.deployment;
        if let Some(state) = deployment.cluster() {
            return ClusterRouter::new(deployment, &state).subscription(key, subscribe);
        }
        let registry = deployment.registry.clone();
        self.primary()?
            .send_subscription(key, subscribe, move || registry.wanted())
    }
}

fn single(outcome: Outcome) -> Result<Value> {
    match outcome {
        Outcome::One(v) => Ok(v),
        Outcome::Failed(e) => Err(e),
        Outcome::Many(_) => Err(Error::new(
            ErrorKind::Protocol,
            "several replies to one command",
        )),
    }
}
