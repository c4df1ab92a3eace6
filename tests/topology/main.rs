//! Deployments the client discovers: a cluster (real, with its own failovers and a slot
//! migration, and fake) and sentinels. One test binary; each module was its own test
//! file.

#[path = "../support/mod.rs"]
mod support;

mod cluster;
mod cluster_failover;
mod cluster_fake;
mod cluster_fake_keyspace;
mod cluster_keyspace;
mod cluster_migration;
mod sentinel;
