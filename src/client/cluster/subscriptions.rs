//! Pub/sub in a cluster: where each subscription lives and how it follows the topology.
//!
//! - Sharded (`SSUBSCRIBE`): on the master of the channel's slot, moved at once when
//!   the slot moves (messages published meanwhile would otherwise be lost).
//! - Plain and pattern: on one master (the server broadcasts `PUBLISH` to every node).
//! - Keyspace notifications (a channel or pattern beginning `__keyspace@`,
//!   `__keyevent@`, or a pattern beginning `__key`): every master publishes the events
//!   of its own keys only, so these are held on every master the topology lists, and
//!   follow it: a new master (a promoted replica, an added node) gets them at the next
//!   refresh, one that left (demoted, removed) is told to drop them. A subscription is
//!   confirmed once every master it was sent to has confirmed it.

use super::cluster_router::ClusterRouter;
use super::{key_slot, ClusterState};
use crate::client::Deployment;
use crate::command::Cmd;
use crate::config::Endpoint;
use crate::error::Result;
use crate::pubsub::{is_keyspace_notification, Key, MessageKind};

impl ClusterState {
    /// The node a subscription belongs on: sharded by slot, the rest on the first
    /// master (plain pub/sub is broadcast across the cluster).
    pub(crate) fn subscription_home(&self, key: &Key) -> Option<Endpoint> {
        match key.0 {
            MessageKind::Sharded => self.master_for(key_slot(&key.1)),
            _ => self.any_master(0),
        }
    }

    /// The masters a keyspace-notification subscription goes to now.
    fn spread_targets(&self) -> Vec<Endpoint> {
        self.masters()
    }
}

impl ClusterRouter<'_> {
    /// Sends (un)subscribe for one name to the node(s) that carry it.
    pub(crate) fn subscription(&self, key: &Key, subscribe: bool) -> Result<()> {
        let deployment = self.deployment();
        let state = self.state();
        if is_keyspace_notification(key) {
            return spread(deployment, state, key, subscribe, self);
        }
        let home = match state.subscription_home(key) {
            Some(h) => h,
            None => self.first_target(&Cmd::new("PING"), None)?,
        };
        let route = if subscribe {
            state.sub_routes.lock().insert(key.clone(), home.clone());
            home
        } else {
            match state.sub_routes.lock().remove(key) {
                Some(r) => r,
                None => return Ok(()),
            }
        };
        let node = deployment.node_for(&route)?;
        let keys = || subscriptions_for(deployment, state, &route);
        node.send_subscription(key, subscribe, keys)
    }

    /// How many servers must confirm a subscription to `key`.
    pub(crate) fn carriers(&self, key: &Key) -> usize {
        if !is_keyspace_notification(key) {
            return 1;
        }
        match self.state().spread_routes.lock().get(key) {
            Some(carriers) => carriers.len().max(1),
            None => self.state().spread_targets().len().max(1),
        }
    }
}

/// (Un)subscribes a keyspace-notification name on every master.
fn spread(
    deployment: &Deployment,
    state: &ClusterState,
    key: &Key,
    subscribe: bool,
    router: &ClusterRouter,
) -> Result<()> {
    if !subscribe {
        let carriers = state.spread_routes.lock().remove(key).unwrap_or_default();
        for endpoint in carriers {
            if let Some(node) = deployment.find(&endpoint) {
                let _ = node.send_subscription(key, false, Vec::new);
            }
        }
        return Ok(());
    }
    let mut targets = state.spread_targets();
    if targets.is_empty() {
        targets.push(router.first_target(&Cmd::new("PING"), None)?);
    }
    state
        .spread_routes
        .lock()
        .insert(key.clone(), targets.clone());
    for endpoint in targets {
        subscribe_on(deployment, state, key, &endpoint);
    }
    Ok(())
}

/// Sends SUBSCRIBE for `key` to `endpoint` (a failure is left to the reconnect, which
/// re-subscribes what the node carries).
fn subscribe_on(deployment: &Deployment, state: &ClusterState, key: &Key, endpoint: &Endpoint) {
    match deployment.node_for(endpoint) {
        Ok(node) => {
            let keys = || subscriptions_for(deployment, state, endpoint);
            if let Err(e) = node.send_subscription(key, true, keys) {
                log::debug!("{endpoint}: subscribing deferred: {e}");
            }
        }
        Err(e) => log::warn!("{endpoint}: cannot add node: {e}"),
    }
}

/// Puts every subscription where the map says it belongs now: a sharded one on its
/// slot's owner, at once (not after a jittered delay: messages published meanwhile
/// would be lost); a keyspace-notification one on every master.
pub(crate) fn reroute_subscriptions(deployment: &Deployment, state: &ClusterState) {
    for key in deployment.registry.wanted() {
        if is_keyspace_notification(&key) {
            follow_masters(deployment, state, &key);
            continue;
        }
        let Some(home) = state.subscription_home(&key) else {
            continue;
        };
        let previous = state.sub_routes.lock().get(&key).cloned();
        let confirmed = deployment.registry.is_confirmed(&key);
        if previous.as_ref() == Some(&home) && confirmed {
            continue;
        }
        move_subscription(deployment, state, &key, previous, home);
    }
}

/// A keyspace-notification subscription onto every master the map lists now, and off
/// every node that is no longer one.
fn follow_masters(deployment: &Deployment, state: &ClusterState, key: &Key) {
    let targets = state.spread_targets();
    if targets.is_empty() {
        return;
    }
    let carriers = state
        .spread_routes
        .lock()
        .insert(key.clone(), targets.clone())
        .unwrap_or_default();
    for gone in carriers.iter().filter(|c| !targets.contains(c)) {
        log::debug!("{gone}: no longer a master; its keyspace subscription is dropped");
        if let Some(node) = deployment.find(gone) {
            let _ = node.send_subscription(key, false, Vec::new);
        }
    }
    for new in targets.iter().filter(|t| !carriers.contains(t)) {
        log::debug!("{new}: a master now; it gets the keyspace subscription");
        subscribe_on(deployment, state, key, new);
    }
}

/// Moves one subscription from `previous` (if any) to `home`.
pub(crate) fn move_subscription(
    deployment: &Deployment,
    state: &ClusterState,
    key: &Key,
    previous: Option<Endpoint>,
    home: Endpoint,
) {
    if let Some(old) = previous.filter(|p| *p != home) {
        if let Some(node) = deployment.find(&old) {
            let _ = node.send_subscription(key, false, Vec::new);
        }
    }
    state.sub_routes.lock().insert(key.clone(), home.clone());
    subscribe_on(deployment, state, key, &home);
}

/// The subscriptions a node carries (what to re-send on a fresh connection to it).
pub(crate) fn subscriptions_for(
    deployment: &Deployment,
    state: &ClusterState,
    endpoint: &Endpoint,
) -> Vec<Key> {
    let routes = state.sub_routes.lock();
    let spread = state.spread_routes.lock();
    deployment
        .registry
        .wanted()
        .into_iter()
        .filter(|k| {
            if is_keyspace_notification(k) {
                return spread.get(k).is_some_and(|c| c.contains(endpoint));
            }
            match routes.get(k) {
                Some(home) => home == endpoint,
                None => state.subscription_home(k).as_ref() == Some(endpoint),
            }
        })
        .collect()
}
