//! The handles a `Client` gives out that belong to this layer: its `Database` (whole,
//! or bound to one node), and the `Subscriber` that publishes through it. `client`
//! sits below `commands` and cannot name `Database`, so these inherent methods are
//! defined here.

use std::sync::Arc;

use super::{Cmd, Database};
use crate::client::{Client, NodeRole};
use crate::config::Endpoint;
use crate::error::Result;
use crate::pubsub::{Publisher, Subscriber};

impl Client {
    /// A handle for running commands (cheap; clones share everything).
    pub fn database(&self) -> Database {
        Database::new(self.router())
    }

    /// A handle whose every command goes to the node at `endpoint` and nowhere else
    /// (no redirect is followed: a `-MOVED` is the answer), for what is asked of one
    /// server: `INFO`, `MEMORY STATS`, `CLIENT LIST`, `SLOWLOG GET`, or a
    /// [`Database::scan_iter`] of its keys alone. `endpoint` is one of
    /// [`Client::nodes`] (an alias a cluster node answers to is accepted); an
    /// `ErrorKind::InvalidInput` error otherwise.
    ///
    /// ```no_run
    /// use resilient_redis::prelude::*;
    /// let client = Client::connect("redis://127.0.0.1:7000")?;
    /// let node = client.nodes()[0].endpoint.clone();
    /// let clients: String = client.on_node(&node)?.cmd("CLIENT").arg("LIST").query()?;
    /// # let _ = clients;
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn on_node(&self, endpoint: &Endpoint) -> Result<Database> {
        Ok(Database::new(self.node_router(endpoint)?))
    }

    /// Runs `f` with a handle bound to each master (see [`Client::on_node`]), one
    /// after the other, and returns each master's result: in a cluster every master
    /// the topology lists, elsewhere the one server (the primary). Nothing is hidden:
    /// a master that failed has its error in the list.
    ///
    /// ```no_run
    /// use resilient_redis::prelude::*;
    /// let client = Client::connect("redis://127.0.0.1:7000")?;
    /// for (node, memory) in client.for_each_master(|db| db.info(Some("memory"))) {
    ///     println!("{node}: {} bytes of text", memory?.len());
    /// }
    /// # Ok::<(), resilient_redis::Error>(())
    /// ```
    pub fn for_each_master<T>(
        &self,
        mut f: impl FnMut(&Database) -> Result<T>,
    ) -> Vec<(Endpoint, Result<T>)> {
        self.nodes()
            .into_iter()
            .filter(|n| n.role == NodeRole::Master)
            .map(|n| {
                let result = self.on_node(&n.endpoint).and_then(|db| f(&db));
                (n.endpoint, result)
            })
            .collect()
    }

    /// Subscribes and publishes (see [`Subscriber`]).
    pub fn subscriber(&self) -> Subscriber {
        self.subscriber_publishing_to(Arc::new(self.database()))
    }
}

impl Publisher for Database {
    fn publish(&self, cmd: &Cmd) -> Result<i64> {
        self.query(cmd)
    }
}
