//! `LagAware`: a failback probe that asks a Redis Enterprise cluster's database
//! availability API whether a member's database is available *and caught up*.
//!
//! Why: a region that comes back is reachable long before it has caught up, and the
//! data plane cannot tell (Active-Active membership and sync lag have no RESP signal).
//! Measured on Redis Enterprise 8.0.22: pausing sync into one member flips only that
//! member's lag check within seconds while its plain availability stays 200.
//!
//! Only the management credentials are required:
//!
//! | setting | default | why |
//! |---|---|---|
//! | REST endpoint | `https://{cluster}:9443/` from `redis-{port}.{cluster}` | only the master answers every route; others redirect to its internal address |
//! | database id | discovered by host and port, filtered requests only | an unfiltered `/v1/bdbs` returns database passwords, even to a read-only role |
//! | lag question | asked only of Active-Active databases (`fields=crdt`) | asked of any other, the server reports it unavailable whatever the tolerance |
//! | tolerance | none sent: the cluster's own applies | the server says 100 ms, other clients send 5000 ms |
//! | could not ask | `Inconclusive`, never `Unhealthy` | a management-plane problem must not fail anything over |
//! | certificate | public roots; trust an issuer, pin on first use, or a custom verifier | 9443's certificate is self-signed by the cluster |
//! | client certificate | PEM (PKCS#12: convert to PEM) | mutual TLS to the REST API |
//! | redirects | never followed; Inconclusive with the target in the log | following one hangs on an unreachable internal address |
//!
//! Every REST call has a deadline (the probe's timeout), runs on a probe thread (never
//! a connection's reader or writer), and every Inconclusive is logged with exactly why.
//! Secrets never reach a log line or an error: the password only ever goes into the
//! `Authorization` header.

mod decide;
mod endpoint;
mod http;
mod options;
#[cfg(test)]
mod tests;
mod trust;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use decide::LagOutcome;
#[cfg(feature = "testkit")]
pub(crate) use http::base64;
pub use options::{
    CertificatePins, ClientCertificate, CredentialsFn, LagAwareOptions, LagCheckMode,
    RestCredentials, RestTrust,
};

use super::health::{AllSuccess, HealthCheck, ProbeScope};
use super::target::{Probe, ProbeResult, ProbeTarget};
use crate::config::Endpoint;
use decide::{Cache, Rest};

/// The Redis Enterprise availability probe (see the [module](self) docs). Member-scoped:
/// it asks about the database behind the member's configured endpoint, once per check.
///
/// ```
/// use resilient_redis::availability::{HealthCheck, LagAware, LagAwareOptions, RestCredentials};
/// let probe = LagAware::new(LagAwareOptions::new(|| {
///     Some(RestCredentials::new("monitor@example.com", "secret"))
/// }));
/// // Usually through a health check, as a member's or a group's failback check:
/// let check = HealthCheck::lag_aware(probe.options().clone());
/// # let _ = check;
/// ```
pub struct LagAware {
    options: LagAwareOptions,
    rest: Result<Box<dyn Rest + Send + Sync>, String>,
    cache: Cache,
    /// The last outcome per endpoint, so a management plane that stays down logs one
    /// warning per change rather than one every interval for hours.
    last: Mutex<HashMap<String, LagOutcome>>,
}

impl fmt::Debug for LagAware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LagAware")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl LagAware {
    /// A probe with these options.
    pub fn new(options: LagAwareOptions) -> LagAware {
        let rest = trust::client_config(&options.trust, options.client_certificate.as_ref())
            .map(|tls| Box::new(http::UreqRest::new(tls)) as Box<dyn Rest + Send + Sync>);
        LagAware {
            options,
            rest,
            cache: Cache::default(),
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Its options.
    pub fn options(&self) -> &LagAwareOptions {
        &self.options
    }

    /// Asks once about the database at `endpoint`, within `timeout` in all, and says
    /// what it found. The same words are logged: a warning when Inconclusive (debug
    /// when repeating the previous outcome for this endpoint), info when Unhealthy.
    pub fn check_endpoint(&self, endpoint: &Endpoint, timeout: Duration) -> LagOutcome {
        let outcome = self.ask(endpoint, timeout);
        let repeated = {
            let mut last = self.last.lock();
            last.insert(endpoint.to_string(), outcome.clone()).as_ref() == Some(&outcome)
        };
        match outcome.result() {
            ProbeResult::Healthy => log::debug!("lag-aware probe of {endpoint}: {outcome}"),
            ProbeResult::Unhealthy if !repeated => {
                log::info!("lag-aware probe of {endpoint}: {outcome}")
            }
            ProbeResult::Inconclusive if !repeated => {
                log::warn!("lag-aware probe of {endpoint}: inconclusive: {outcome}")
            }
            ProbeResult::Unhealthy => log::debug!("lag-aware probe of {endpoint}: {outcome}"),
            ProbeResult::Inconclusive => {
                log::debug!("lag-aware probe of {endpoint}: inconclusive: {outcome}")
            }
        }
        outcome
    }

    fn ask(&self, endpoint: &Endpoint, timeout: Duration) -> LagOutcome {
        let rest = match &self.rest {
            Ok(r) => r,
            Err(e) => return LagOutcome::Config(e.clone()),
        };
        let base = match &self.options.rest_endpoint {
            Some(url) => endpoint::normalize_base(url),
            None => endpoint::derive_rest_endpoint(&endpoint.host, endpoint.port),
        };
        let base = match base {
            Ok(b) => b,
            Err(e) => return LagOutcome::Config(e),
        };
        decide::check(
            rest.as_ref(),
            &self.options,
            &self.cache,
            &base,
            (&endpoint.host, endpoint.port),
            decide::deadline(timeout),
        )
    }
}

impl Probe for LagAware {
    fn probe(&self, target: &ProbeTarget<'_>, timeout: Duration) -> ProbeResult {
        self.check_endpoint(target.endpoint(), timeout).result()
    }
}

impl HealthCheck {
    /// A failback check that asks Redis Enterprise whether the member's database is
    /// available and caught up: [`LagAware`], once per member, every 5 s, one REST
    /// question per check within 3 s.
    ///
    /// One probe per check because a retry inside a check asks the same question again
    /// at once; the next check, one interval later, is the retry.
    pub fn lag_aware(options: LagAwareOptions) -> HealthCheck {
        HealthCheck {
            interval: Duration::from_secs(5),
            probe_count: 1,
            probe_timeout: Duration::from_secs(3),
            probe_interval: Duration::from_millis(500),
            probe: Arc::new(LagAware::new(options)),
            policy: Arc::new(AllSuccess),
            scope: ProbeScope::Member,
        }
    }
}
