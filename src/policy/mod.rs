//! The socket-free policies every layer consults: how a fault is described
//! (`FaultContext`), when a circuit breaker trips (`BreakerPolicy`, `CircuitBreaker`),
//! and whether and when a failed command is retried (`RetryPolicy`).
//!
//! Owns: those decisions as plain data and arithmetic. It sits below `connection`
//! (whose faults feed a breaker) and `commands` (which retries), so neither reaches up
//! to `availability`, which configures them for a group and re-exports them from its
//! public path. Must never: do IO, hold a connection, or sleep other than through a
//! `Clock`.

mod breaker;
mod fault;
mod retry;

pub use breaker::{Accumulator, BreakerPolicy, CircuitBreaker};
pub use fault::FaultContext;
pub use retry::{RetryDecision, RetryPolicy};
