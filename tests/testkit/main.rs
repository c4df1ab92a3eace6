//! The testkit's fakes tested on their own (a fake's bug would hide a client's): the
//! protocol, data, faults, pub/sub, cluster, maintenance and TLS, raw and through the
//! client. One test binary; each module was its own test file.

#[path = "../support/mod.rs"]
mod support;

mod testkit_client;
mod testkit_cluster;
mod testkit_data;
mod testkit_faults;
mod testkit_maintenance;
mod testkit_parity;
mod testkit_parity_cluster;
mod testkit_protocol;
mod testkit_pubsub;
mod testkit_tls;
