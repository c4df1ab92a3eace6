//! The soak's own machinery, apart from the soak itself (`tests/soak.rs`): the proxy
//! that plays the network and a server misbehaving, and the observers that tell a
//! late call's cause.

pub mod observe;
pub mod proxy;
