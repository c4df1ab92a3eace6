//! The core as tables: inputs at times, the actions and choices that follow. No
//! threads, no sockets, no clock but the one these tests move by hand.

use super::*;
use ChangeReason as R;
use ProbeResult::{Healthy, Inconclusive, Unhealthy};

const SEC: Duration = Duration::from_secs(1);

pub(super) struct Table {
    pub(super) core: Core,
    pub(super) t0: Instant,
    pub(super) now: Instant,
}

impl Table {
    pub(super) fn new(failback_delay: Duration) -> Table {
        let t0 = Instant::now();
        Table {
            core: Core::new(Settings {
                failback_delay,
                stall_threshold: Duration::from_millis(500),
            }),
            t0,
            now: t0,
        }
    }

    /// Members `1..=weights.len()` with these weights, all up at once.
    pub(super) fn up(weights: &[u32]) -> Table {
        let mut t = Table::new(Duration::ZERO);
        for (i, &w) in weights.iter().enumerate() {
            t.add(i as u64 + 1, w, None);
        }
        for i in 0..weights.len() {
            t.input(Input::Connection {
                id: i as u64 + 1,
                up: true,
            });
        }
        // The checks every member gets once it is up all pass.
        for i in 0..weights.len() {
            t.health(i as u64 + 1, Healthy);
        }
        t
    }

    pub(super) fn add(&mut self, id: MemberId, weight: u32, failback: Option<Duration>) -> Step {
        self.input(Input::Added(MemberSpec {
            id,
            weight,
            health_interval: 5 * SEC,
            failback_interval: failback,
            local_failover: None,
        }))
    }

    pub(super) fn at(&mut self, after_start: Duration) -> &mut Table {
        self.now = self.t0 + after_start;
        self
    }

    pub(super) fn input(&mut self, input: Input) -> Step {
        self.core.handle(self.now, input)
    }

    pub(super) fn health(&mut self, id: MemberId, result: ProbeResult) -> Step {
        self.input(Input::Health {
            id,
            result,
            latency: None,
            connection_lost: false,
        })
    }

    pub(super) fn active(&self) -> Option<MemberId> {
        self.core.active()
    }
}

pub(super) fn changes(step: &Step) -> Vec<(Option<MemberId>, Option<MemberId>, ChangeReason)> {
    step.actions
        .iter()
        .filter_map(|a| match a {
            Action::Announce(Announcement::Active {
                previous,
                current,
                reason,
            }) => Some((*previous, *current, *reason)),
            _ => None,
        })
        .collect()
}

pub(super) fn checks(step: &Step) -> Vec<(MemberId, CheckKind)> {
    step.actions
        .iter()
        .filter_map(|a| match a {
            Action::StartCheck { id, kind } => Some((*id, *kind)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_first_choice_waits_for_every_first_attempt_or_the_grace_then_weight_decides() {
    let mut t = Table::new(Duration::ZERO);
    t.add(1, 10, None);
    t.add(2, 5, None);
    t.add(3, 1, None);
    // The light members answer first: nobody is chosen while the heaviest may follow.
    let s = t.input(Input::Connection { id: 3, up: true });
    assert_eq!(t.active(), None);
    assert!(changes(&s).is_empty());
    t.at(Duration::from_millis(5));
    t.input(Input::Connection { id: 2, up: true });
    assert_eq!(t.active(), None);
    assert_eq!(t.core.next_due(), Some(t.t0 + START_GRACE));
    // The heaviest answers within the grace: it is the first choice, no flapping.
    t.at(Duration::from_millis(30));
    let s = t.input(Input::Connection { id: 1, up: true });
    assert_eq!(changes(&s), vec![(None, Some(1), R::Initial)]);
}

#[test]
fn a_hung_heavy_member_does_not_hold_up_the_start_and_takes_traffic_once_up() {
    let mut t = Table::new(Duration::ZERO);
    t.add(1, 10, None);
    t.add(2, 5, None);
    t.input(Input::Connection { id: 2, up: true });
    t.at(START_GRACE - Duration::from_millis(1));
    assert!(changes(&t.input(Input::Tick)).is_empty());
    t.at(START_GRACE);
    assert_eq!(
        changes(&t.input(Input::Tick)),
        vec![(None, Some(2), R::Initial)]
    );
    // Its first attempt finally succeeds: it is checked at once, and traffic moves.
    t.at(6 * SEC);
    let s = t.input(Input::Connection { id: 1, up: true });
    assert_eq!(changes(&s), vec![(Some(2), Some(1), R::Failback)]);
    assert!(checks(&s).contains(&(1, CheckKind::Health)));
}

#[test]
fn every_first_attempt_failing_but_one_ends_the_start_at_once() {
    let mut t = Table::new(Duration::ZERO);
    t.add(1, 10, None);
    t.add(2, 5, None);
    t.input(Input::Connection { id: 1, up: false });
    let s = t.input(Input::Connection { id: 2, up: true });
    assert_eq!(changes(&s), vec![(None, Some(2), R::Initial)]);
    // The member that could not connect is checked (and found down).
    let s = t.health(1, Unhealthy);
    assert!(changes(&s).is_empty());
    assert!(t.core.view(1).is_some_and(|v| v.unhealthy));
}

#[test]
fn losing_the_active_member_moves_traffic_and_it_comes_back_after_the_delay() {
    let mut t = Table::up(&[10, 5, 1]);
    assert_eq!(t.active(), Some(1));
    let s = t.input(Input::Connection { id: 1, up: false });
    assert_eq!(changes(&s), vec![(Some(1), Some(2), R::HealthCheck)]);
    let mut t2 = Table::up(&[10, 5, 1]);
    t2.core.settings.failback_delay = 60 * SEC;
    t2.input(Input::Connection { id: 1, up: false });
    t2.at(10 * SEC);
    let s = t2.input(Input::Connection { id: 1, up: true });
    assert!(changes(&s).is_empty(), "still within its failback delay");
    assert!(
        checks(&s).contains(&(1, CheckKind::Health)),
        "checked at once"
    );
    assert!(changes(&t2.health(1, Healthy)).is_empty());
    // Inclusive: exactly the delay after the last failure.
    t2.at(60 * SEC);
    assert_eq!(
        changes(&t2.health(1, Healthy)),
        vec![(Some(2), Some(1), R::Failback)]
    );
}

#[test]
fn a_check_that_started_on_an_earlier_connection_does_not_fail_the_new_one() {
    let mut t = Table::up(&[10, 5]);
    t.at(5 * SEC);
    let s = t.input(Input::Tick);
    assert!(checks(&s).contains(&(1, CheckKind::Health)));
    t.input(Input::Connection { id: 1, up: false });
    t.input(Input::Connection { id: 1, up: true });
    let s = t.health(1, Unhealthy);
    assert!(changes(&s).is_empty(), "measured before the reconnect");
    assert!(
        t.core.view(1).is_some_and(|v| v.unhealthy),
        "lost, not yet passed"
    );
    // The reconnect's own check runs at once.
    assert!(checks(&s).contains(&(1, CheckKind::Health)));
    t.health(1, Healthy);
    assert_eq!(t.active(), Some(1));
}

#[test]
fn a_failback_delay_of_max_means_manual_failback_only() {
    let mut t = Table::up(&[10, 5]);
    t.core.settings.failback_delay = Duration::MAX;
    t.health(1, Unhealthy);
    assert_eq!(t.active(), Some(2));
    t.at(100_000 * SEC);
    t.health(1, Healthy);
    assert_eq!(t.active(), Some(2));
    t.input(Input::ResetUnhealthy(1));
    assert_eq!(t.active(), Some(1));
}

#[test]
fn a_tripped_breaker_keeps_a_member_out_until_its_next_check_not_its_reconnect() {
    let mut t = Table::up(&[10, 5]);
    t.at(SEC);
    t.input(Input::BreakerTripped(1));
    // The trip closed its connection; it reconnects at once.
    t.input(Input::Connection { id: 1, up: false });
    let s = t.input(Input::Connection { id: 1, up: true });
    assert!(checks(&s).is_empty(), "no check out of turn");
    assert_eq!(t.active(), Some(2));
    t.at(5 * SEC);
    let s = t.input(Input::Tick);
    assert!(checks(&s).contains(&(1, CheckKind::Health)));
    t.health(1, Healthy);
    assert_eq!(t.active(), Some(1));
}

#[test]
fn an_inconclusive_check_brings_a_member_back_like_a_healthy_one() {
    let mut t = Table::up(&[10, 5]);
    t.input(Input::BreakerTripped(1));
    assert_eq!(t.active(), Some(2));
    t.at(5 * SEC);
    assert!(checks(&t.input(Input::Tick)).contains(&(1, CheckKind::Health)));
    let s = t.health(1, Inconclusive);
    assert_eq!(changes(&s), vec![(Some(2), Some(1), R::Failback)]);
}

/// A check that failed because the connection went away (a breaker closed it) before
/// the member's own report arrived leaves the decision to that report, so the
/// failover is announced with its cause.
#[test]
fn a_check_failed_by_a_lost_connection_waits_for_the_connections_own_report() {
    let mut t = Table::up(&[10, 5]);
    t.at(5 * SEC);
    assert!(checks(&t.input(Input::Tick)).contains(&(1, CheckKind::Health)));
    let s = t.input(Input::Health {
        id: 1,
        result: Unhealthy,
        latency: None,
        connection_lost: true,
    });
    assert!(changes(&s).is_empty(), "{:?}", changes(&s));
    let s = t.input(Input::BreakerTripped(1));
    assert_eq!(changes(&s), vec![(Some(1), Some(2), R::CircuitBreaker)]);
    // Known down already: the failed check counts as ever.
    t.input(Input::Connection { id: 1, up: false });
    t.at(10 * SEC);
    t.input(Input::Tick);
    let s = t.input(Input::Health {
        id: 1,
        result: Unhealthy,
        latency: None,
        connection_lost: true,
    });
    assert!(
        t.core.view(1).is_some_and(|v| v.unhealthy),
        "{:?}",
        changes(&s)
    );
}

/// A check that started before a breaker tripped and passes after it (its probe ran
/// before the trouble, or does not exercise what failed) is stale: the member stays
/// out until a check that started after the trip passes.
#[test]
fn a_pass_from_a_check_started_before_the_trip_does_not_bring_the_member_back() {
    let mut t = Table::up(&[10, 5]);
    t.at(5 * SEC);
    assert!(checks(&t.input(Input::Tick)).contains(&(1, CheckKind::Health)));
    t.input(Input::BreakerTripped(1));
    assert_eq!(t.active(), Some(2));
    let s = t.health(1, Healthy);
    assert!(changes(&s).is_empty(), "{:?}", changes(&s));
    assert_eq!(t.active(), Some(2));
    t.at(10 * SEC);
    assert!(checks(&t.input(Input::Tick)).contains(&(1, CheckKind::Health)));
    let s = t.health(1, Healthy);
    assert_eq!(changes(&s), vec![(Some(2), Some(1), R::Failback)]);
}

#[test]
fn a_stall_past_the_threshold_checks_out_of_turn_and_a_failed_check_abandons_the_stall() {
    let mut t = Table::up(&[10, 5]);
    t.at(SEC);
    let s = t.input(Input::Stalled {
        id: 1,
        stalled: Duration::from_millis(499),
    });
    assert!(checks(&s).is_empty(), "under the threshold");
    let s = t.input(Input::Stalled {
        id: 1,
        stalled: Duration::from_millis(500),
    });
    assert_eq!(checks(&s), vec![(1, CheckKind::Health)]);
    // While that check runs, more stall reports start nothing more.
    let s = t.input(Input::Stalled {
        id: 1,
        stalled: SEC,
    });
    assert!(checks(&s).is_empty());
    t.at(4 * SEC);
    let s = t.health(1, Unhealthy);
    let active_at = s
        .actions
        .iter()
        .position(|a| matches!(a, Action::Announce(Announcement::Active { .. })));
    let abandon_at = s
        .actions
        .iter()
        .position(|a| *a == Action::AbandonStalled(1));
    assert!(
        active_at.is_some() && abandon_at.is_some(),
        "{:?}",
        s.actions
    );
    assert_eq!(t.active(), Some(2));
}

#[test]
fn with_nobody_available_a_connected_member_is_preferred_over_a_disconnected_current_one() {
    let mut t = Table::up(&[10, 5, 1]);
    t.health(2, Unhealthy);
    t.health(3, Unhealthy);
    let s = t.input(Input::Connection { id: 1, up: false });
    // Nobody live: the heaviest connected one, unhealthy as it is.
    assert_eq!(changes(&s), vec![(Some(1), Some(2), R::HealthCheck)]);
    // The current one, still connected, is kept while nobody is live.
    t.health(3, Unhealthy);
    assert_eq!(t.active(), Some(2));
    t.input(Input::Connection { id: 2, up: false });
    assert_eq!(t.active(), Some(3), "the one still connected");
    // Nobody connected at all: the current member stays (its backlog may save a call).
    t.input(Input::Connection { id: 3, up: false });
    assert_eq!(t.active(), Some(3));
}

#[test]
fn an_override_needs_a_connected_member_clears_its_flag_and_ends_when_it_disconnects() {
    let mut t = Table::up(&[10, 5, 1]);
    t.health(3, Unhealthy);
    assert!(
        !t.input(Input::Override(Some(9))).accepted,
        "not in the group"
    );
    let s = t.input(Input::Override(Some(3)));
    assert!(s.accepted);
    assert_eq!(changes(&s), vec![(Some(1), Some(3), R::Manual)]);
    assert!(t.core.view(3).is_some_and(|v| !v.unhealthy));
    // Weight does not move it off.
    t.input(Input::Weight { id: 2, weight: 100 });
    assert_eq!(t.active(), Some(3));
    let s = t.input(Input::Connection { id: 3, up: false });
    assert_eq!(changes(&s), vec![(Some(3), Some(2), R::HealthCheck)]);
    assert!(
        !t.input(Input::Override(None)).accepted,
        "it ended by itself"
    );
    assert!(!t.input(Input::Override(Some(3))).accepted, "not connected");
}

#[test]
fn removing_the_active_member_or_the_overridden_one_reselects() {
    let mut t = Table::up(&[10, 5]);
    t.input(Input::Override(Some(2)));
    let s = t.input(Input::Removed(2));
    assert!(s.accepted);
    assert_eq!(changes(&s), vec![(Some(2), Some(1), R::MemberRemoved)]);
    assert!(!t.input(Input::Removed(2)).accepted);
    let s = t.input(Input::Removed(1));
    assert_eq!(changes(&s), vec![(Some(1), None, R::MemberRemoved)]);
}

#[test]
fn a_member_added_later_is_checked_and_takes_traffic_by_weight_once_up() {
    let mut t = Table::up(&[5]);
    let s = t.add(7, 10, None);
    assert!(changes(&s).is_empty());
    assert!(checks(&s).is_empty(), "not before its first attempt");
    let s = t.input(Input::Connection { id: 7, up: true });
    assert_eq!(changes(&s), vec![(Some(1), Some(7), R::Failback)]);
    assert_eq!(checks(&s), vec![(7, CheckKind::Health)]);
}

#[test]
fn health_checks_follow_the_interval_and_latency_ranks_equal_weights() {
    let mut t = Table::up(&[1, 1]);
    t.input(Input::Health {
        id: 1,
        result: Healthy,
        latency: Some(Duration::from_millis(80)),
        connection_lost: false,
    });
    t.input(Input::Health {
        id: 2,
        result: Healthy,
        latency: Some(Duration::from_millis(20)),
        connection_lost: false,
    });
    assert_eq!(t.active(), Some(2), "lower latency wins");
    assert_eq!(t.core.next_due(), Some(t.t0 + 5 * SEC));
    t.at(5 * SEC);
    let s = t.input(Input::Tick);
    assert_eq!(
        checks(&s),
        vec![(1, CheckKind::Health), (2, CheckKind::Health)]
    );
}

/// Members 1 (weight 10) and 2 (weight 5), both with a failback check, both up.
fn gated() -> Table {
    let mut t = Table::new(Duration::ZERO);
    t.add(1, 10, Some(SEC));
    t.add(2, 5, Some(SEC));
    t.input(Input::Connection { id: 1, up: true });
    t.input(Input::Connection { id: 2, up: true });
    t
}

fn failback(t: &mut Table, id: MemberId, result: ProbeResult) -> Step {
    let epoch = t.core.find(id).map_or(0, MemberState::epoch_for_tests);
    t.input(Input::Failback { id, epoch, result })
}

#[test]
fn at_start_the_best_live_member_serves_provisionally_until_its_own_verdict() {
    let mut t = gated();
    assert_eq!(t.active(), Some(1));
    assert!(t.core.view(1).is_some_and(|v| v.provisional));
    // The lighter one passes first: the heavier is kept while its verdict is pending.
    failback(&mut t, 2, Healthy);
    assert_eq!(t.active(), Some(1));
    // Its own verdict is not Healthy: the eligible member takes over at once.
    let s = failback(&mut t, 1, Unhealthy);
    assert_eq!(changes(&s), vec![(Some(1), Some(2), R::FailbackCheck)]);
    assert!(t.core.view(1).is_some_and(|v| !v.provisional));
}

#[test]
fn a_provisional_member_becomes_ordinary_once_it_passes() {
    let mut t = gated();
    let s = failback(&mut t, 1, Healthy);
    assert!(s
        .actions
        .contains(&Action::Announce(Announcement::Provisional {
            id: 1,
            provisional: false
        })));
    // An ordinary active member is never asked (its check never evicts it).
    t.at(10 * SEC);
    let s = t.input(Input::Tick);
    assert!(!checks(&s)
        .iter()
        .any(|(id, k)| *id == 1 && matches!(k, CheckKind::Failback { .. })));
}

#[test]
fn a_member_back_from_an_outage_is_held_off_until_its_failback_check_passes() {
    let mut t = gated();
    failback(&mut t, 1, Healthy);
    t.input(Input::Connection { id: 1, up: false });
    assert_eq!(t.active(), Some(2));
    t.at(2 * SEC);
    t.input(Input::Connection { id: 1, up: true });
    // The check that was under way when it left passes: stale, and the check its
    // reconnect asked for starts at once.
    let s = t.health(1, Healthy);
    assert_eq!(checks(&s), vec![(1, CheckKind::Health)]);
    assert_eq!(t.active(), Some(2));
    // Back and healthy, but behind until asked: its earlier verdict was forgotten, and
    // it is asked as soon as it is live again.
    let s = t.health(1, Healthy);
    assert!(checks(&s)
        .iter()
        .any(|(id, k)| *id == 1 && matches!(k, CheckKind::Failback { .. })));
    assert_eq!(t.active(), Some(2));
    let s = failback(&mut t, 1, Inconclusive);
    assert!(changes(&s).is_empty(), "could not ask is not a pass");
    let s = failback(&mut t, 1, Healthy);
    assert_eq!(changes(&s), vec![(Some(2), Some(1), R::FailbackCheck)]);
}

#[test]
fn a_verdict_from_a_check_started_before_the_member_left_does_not_count() {
    let mut t = gated();
    failback(&mut t, 1, Healthy);
    let stale_epoch = t.core.find(2).map_or(0, MemberState::epoch_for_tests);
    t.input(Input::Connection { id: 2, up: false });
    t.input(Input::Connection { id: 2, up: true });
    t.health(2, Healthy);
    let s = t.input(Input::Failback {
        id: 2,
        epoch: stale_epoch,
        result: Healthy,
    });
    assert!(!s
        .actions
        .iter()
        .any(|a| matches!(a, Action::Announce(Announcement::Failback { .. }))));
    assert_eq!(t.core.view(2).and_then(|v| v.failback_result), None);
}

#[test]
fn in_a_partition_the_group_serves_provisionally_and_leaves_for_an_eligible_member() {
    let mut t = gated();
    failback(&mut t, 1, Unhealthy);
    failback(&mut t, 2, Unhealthy);
    assert_eq!(t.active(), Some(1), "nobody eligible: the best live one");
    assert!(t.core.view(1).is_some_and(|v| v.provisional));
    let s = failback(&mut t, 2, Healthy);
    assert_eq!(changes(&s), vec![(Some(1), Some(2), R::FailbackCheck)]);
    assert!(t.core.view(2).is_some_and(|v| !v.provisional));
}

#[test]
fn an_override_stands_in_for_a_passed_failback_check() {
    let mut t = gated();
    failback(&mut t, 1, Healthy);
    failback(&mut t, 2, Unhealthy);
    let s = t.input(Input::Override(Some(2)));
    assert!(s.accepted);
    assert_eq!(t.active(), Some(2));
    assert_eq!(
        t.core.view(2).and_then(|v| v.failback_result),
        Some(Healthy)
    );
}

#[test]
fn without_failback_checks_no_failback_check_ever_starts() {
    let mut t = Table::up(&[10, 5]);
    for s in 1..20 {
        t.at(s * SEC);
        let step = t.input(Input::Tick);
        assert!(checks(&step).iter().all(|(_, k)| *k == CheckKind::Health));
    }
}

#[test]
fn a_member_that_fails_over_inside_itself_is_held_for_its_grace() {
    let mut t = Table::new(Duration::ZERO);
    t.input(Input::Added(MemberSpec {
        id: 1,
        weight: 10,
        health_interval: 5 * SEC,
        failback_interval: None,
        local_failover: Some(3 * SEC),
    }));
    t.add(2, 5, None);
    t.input(Input::Connection { id: 1, up: true });
    t.input(Input::Connection { id: 2, up: true });
    t.health(1, Healthy);
    t.health(2, Healthy);
    assert_eq!(t.active(), Some(1));
    // Its primary dies: held, traffic stays (callers wait for its new primary).
    t.at(SEC);
    let s = t.input(Input::Connection { id: 1, up: false });
    assert!(changes(&s).is_empty());
    assert_eq!(t.core.next_due(), Some(t.t0 + 4 * SEC));
    // A probe that fails meanwhile does not cut the hold short.
    assert!(changes(&t.health(1, Unhealthy)).is_empty());
    // Its replica is promoted within the grace: nothing moved, nothing flagged.
    t.at(3 * SEC);
    let s = t.input(Input::Connection { id: 1, up: true });
    assert!(changes(&s).is_empty());
    assert!(t.core.view(1).is_some_and(|v| !v.unhealthy));
    // The next time it does not come back: traffic moves when the grace runs out.
    t.at(10 * SEC);
    t.input(Input::Connection { id: 1, up: false });
    t.at(13 * SEC - Duration::from_millis(1));
    assert!(changes(&t.input(Input::Tick)).is_empty());
    t.at(13 * SEC);
    assert_eq!(
        changes(&t.input(Input::Tick)),
        vec![(Some(1), Some(2), R::HealthCheck)]
    );
}

/// The start-up race the suite caught: the lighter member connects first and its
/// failback verdict arrives before the heavier one has even connected.
fn lighter_member_verdict_first() -> Table {
    let mut t = Table::new(Duration::ZERO);
    t.add(1, 10, Some(SEC));
    t.add(2, 5, Some(SEC));
    t.input(Input::Connection { id: 2, up: true });
    failback(&mut t, 2, Healthy);
    assert_eq!(
        t.active(),
        None,
        "still waiting for member 1's first attempt"
    );
    t.at(Duration::from_millis(10));
    t
}

#[test]
fn at_start_a_heavier_member_with_its_verdict_pending_beats_a_lighter_one_that_passed() {
    let mut t = lighter_member_verdict_first();
    let s = t.input(Input::Connection { id: 1, up: true });
    assert_eq!(changes(&s), vec![(None, Some(1), R::Initial)]);
    assert!(t.core.view(1).is_some_and(|v| v.provisional));
    assert!(checks(&s)
        .iter()
        .any(|(id, k)| *id == 1 && matches!(k, CheckKind::Failback { .. })));
    // It passes: it stays, as an ordinary member.
    let s = failback(&mut t, 1, Healthy);
    assert!(changes(&s).is_empty());
    assert!(t.core.view(1).is_some_and(|v| !v.provisional));
}

#[test]
fn at_start_a_heavier_member_that_then_fails_its_verdict_leaves_at_once() {
    let mut t = lighter_member_verdict_first();
    t.input(Input::Connection { id: 1, up: true });
    let s = failback(&mut t, 1, Inconclusive);
    assert_eq!(changes(&s), vec![(Some(1), Some(2), R::FailbackCheck)]);
    assert!(t.core.view(1).is_some_and(|v| !v.provisional));
    assert!(t.core.view(2).is_some_and(|v| !v.provisional));
}

#[test]
fn at_start_a_member_already_found_behind_does_not_compete() {
    let mut t = Table::new(Duration::ZERO);
    t.add(1, 10, Some(SEC));
    t.add(2, 5, Some(SEC));
    t.input(Input::Connection { id: 1, up: true });
    failback(&mut t, 1, Unhealthy);
    failback(&mut t, 2, Healthy);
    let s = t.input(Input::Connection { id: 2, up: true });
    assert_eq!(changes(&s), vec![(None, Some(2), R::Initial)]);
    assert!(t.core.view(2).is_some_and(|v| !v.provisional));
}
