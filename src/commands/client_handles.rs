//! The handles a `Client` gives out that belong to this layer: its `Database`, and the
//! `Subscriber` that publishes through it. `client` sits below `commands` and cannot
//! name `Database`, so these inherent methods are defined here.

use std::sync::Arc;

use super::{Cmd, Database};
use crate::client::Client;
use crate::error::Result;
use crate::pubsub::{Publisher, Subscriber};

impl Client {
    /// A handle for running commands (cheap; clones share everything).
    pub fn database(&self) -> Database {
        Database::new(self.router())
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
