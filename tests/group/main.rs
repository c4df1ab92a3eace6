//! Failover groups: real and fake members, the default options, lag-aware health
//! checks and their REST probe. One test binary; each module was its own test file.

#[path = "../support/mod.rs"]
mod support;

mod group;
mod group_breaker;
mod group_cluster_keyspace;
mod group_defaults;
mod group_distance;
mod group_fake;
mod group_probes;
mod group_retry;
mod group_roles;
mod lag_aware_group;
mod lag_aware_probe;
mod lag_aware_tls;
