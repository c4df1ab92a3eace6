//! Maintenance notifications: the opt-in, the events, relaxed timeouts and handoffs
//! (and the handoff decision on its own). One test binary; each module was its own
//! test file.

#[path = "../support/mod.rs"]
mod support;

mod handoff;
mod handoff_decision;
mod maintenance_events;
mod maintenance_optin;
mod maintenance_relax;
