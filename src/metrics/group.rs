//! Availability groups: active-member changes with their reason, members taken out of
//! rotation and put back, and the verdicts of health and failback checks. Recorded by
//! the group's supervisor where it announces what its core decided, and by the probe
//! threads as each check ends: never on a caller's path.
#![cfg_attr(not(feature = "metrics"), allow(unused_variables))]

/// The active member changed from `previous` to `current` (member names; `None` at the
/// start, or when no member is available) for `reason` (a `ChangeReason` variant).
#[inline(always)]
pub(crate) fn active_member_changed(
    previous: Option<&str>,
    current: Option<&str>,
    reason: &'static str,
) {
    #[cfg(feature = "metrics")]
    {
        use super::label::{FROM, MEMBER, REASON, TO};
        use ::metrics::Label;
        let labels = vec![
            Label::new(FROM, super::or_none(previous)),
            Label::new(TO, super::or_none(current)),
            Label::from_static_parts(REASON, reason),
        ];
        ::metrics::counter!(super::ACTIVE_MEMBER_CHANGES, labels).increment(1);
        // The gauges last: whoever sees who serves sees the change counted.
        if let Some(previous) = previous {
            ::metrics::gauge!(super::MEMBER_ACTIVE, MEMBER => previous.to_string()).set(0.0);
        }
        if let Some(current) = current {
            ::metrics::gauge!(super::MEMBER_ACTIVE, MEMBER => current.to_string()).set(1.0);
        }
    }
}

/// `member` was taken out of rotation (`healthy: false`) or put back.
#[inline(always)]
pub(crate) fn member_health_changed(member: &str, healthy: bool) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(
        super::MEMBER_HEALTH_CHANGES,
        super::label::MEMBER => member.to_string(),
        super::label::HEALTHY => if healthy { "true" } else { "false" }
    )
    .increment(1);
}

/// A check of `member` ended: `check` is `health` or `failback`, `verdict` a
/// `ProbeResult` variant.
#[inline(always)]
pub(crate) fn check_completed(member: &str, check: &'static str, verdict: &'static str) {
    #[cfg(feature = "metrics")]
    ::metrics::counter!(
        super::CHECKS,
        super::label::MEMBER => member.to_string(),
        super::label::CHECK => check,
        super::label::VERDICT => verdict
    )
    .increment(1);
}
