//! What the client does about maintenance: the home of every reaction that opens
//! connections or changes routing (the decisions themselves are socket-free, in
//! `crate::maintenance`). Here: the maintenance inbox of one node (`NodeMaintenance`),
//! which its connections' reader threads fill (a `MOVING` to hand off, a `MIGRATED` to
//! check against DNS, an `SMIGRATED` whose slots left this node), the once-per-event
//! gate and the counters; the handoff worker (`worker`); and what an `SMIGRATED` does
//! to a cluster's slot map (`slot_migration`).
//!
//! Reader threads only record and wake the supervisor (they never resolve or wait);
//! the supervisor starts one short-lived worker per node (`rr-handoff <endpoint>`,
//! see `worker`) to do the waiting, so a 15 s DNS poll never delays another node's
//! heartbeats or reconnects.

mod slot_migration;
pub(crate) mod worker;

pub(crate) use slot_migration::on_smigrated;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::clock::deadline_after;
use crate::config::Endpoint;
use crate::maintenance::{
    HandoffDecision, HandoffOutcome, HandoffReport, HandoffStats, MaintenanceEvent,
    NotificationKind, SlotMigration,
};
use crate::resolve::is_address_literal;

/// Tasks waiting for the node's worker. A newer `MOVING` replaces whatever is queued,
/// so two are the most there ever are (a `MIGRATED` watch behind a `MOVING`).
const TASK_QUEUE_BOUND: usize = 4;
/// `SMIGRATED` triplets waiting for the supervisor; beyond this the oldest go (the
/// refresh they ask for reads the whole topology anyway).
const MIGRATIONS_BOUND: usize = 256;

/// What the worker does next.
#[derive(Clone, Debug)]
pub(crate) enum Task {
    Moving {
        sequence: Option<u64>,
        window: Duration,
        new_endpoint: Option<Endpoint>,
        received: Instant,
        /// The address of the connection that told us (if the interactive one is down).
        peer: Option<SocketAddr>,
    },
    /// Watch whether our address is still advertised; `trigger` is the completion
    /// that prompted it (`MIGRATED` or `FAILED_OVER`).
    Migrated {
        trigger: NotificationKind,
        sequence: Option<u64>,
        received: Instant,
    },
}

impl Task {
    fn kind(&self) -> NotificationKind {
        match self {
            Task::Moving { .. } => NotificationKind::Moving,
            Task::Migrated { .. } => NotificationKind::Migrated,
        }
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Task>,
    /// The kind of task the worker is running, when one runs.
    running: Option<NotificationKind>,
    worker: bool,
    /// Bumped by every accepted `MOVING`: a running task of an older generation stops
    /// at its next wait.
    generation: u64,
    cancelled: bool,
    /// The last `MOVING` acted on, by sequence id.
    moving_acted: Option<u64>,
    /// Until when an id-less `MOVING` counts as a repeat of the last one.
    moving_until: Option<Instant>,
    migrations: VecDeque<SlotMigration>,
    stats: HandoffStats,
    last: Option<HandoffReport>,
}

/// The maintenance inbox and handoff state of one node.
pub(crate) struct NodeMaintenance {
    endpoint: Endpoint,
    state: Mutex<State>,
    wake: Condvar,
}

impl NodeMaintenance {
    pub(crate) fn new(endpoint: Endpoint) -> NodeMaintenance {
        NodeMaintenance {
            endpoint,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        }
    }

    /// Records what `event` (new for this server) asks of the node; `true` when the
    /// supervisor has work. Runs on a reader thread: no waiting, no resolving.
    pub(crate) fn offer(&self, event: &MaintenanceEvent, peer: Option<SocketAddr>) -> bool {
        let now = Instant::now();
        let mut st = self.state.lock();
        if st.cancelled {
            return false;
        }
        match event.kind {
            NotificationKind::Moving => {
                // Once per event. The server re-sends MOVING to every connection that
                // opts in while the window is open (a reconnect, the subscription
                // connection); acting on each copy recycled twelve times live.
                let repeat = match event.sequence {
                    Some(id) => st.moving_acted == Some(id),
                    None => st.moving_until.is_some_and(|t| now < t),
                };
                if repeat {
                    st.stats.repeats_ignored += 1;
                    log::debug!("{}: {event} is a repeat; already handled", self.endpoint);
                    return false;
                }
                let window = event.time.unwrap_or(Duration::ZERO);
                st.moving_acted = event.sequence.or(st.moving_acted);
                st.moving_until = Some(deadline_after(now, window));
                st.stats.moving += 1;
                // Each MOVING has its own window: it supersedes whatever is queued or
                // running (a chained handoff, a MIGRATED watch).
                st.queue.clear();
                st.generation += 1;
                st.queue.push_back(Task::Moving {
                    sequence: event.sequence,
                    window,
                    new_endpoint: event.new_endpoint.clone(),
                    received: now,
                    peer,
                });
                self.wake.notify_all();
                true
            }
            // A shard-scoped completion: on a proxied deployment the proxy behind our
            // address may be the one leaving, silently (spec §7: relaxation plus the
            // advertised-address check, for FAILED_OVER as for MIGRATED).
            NotificationKind::Migrated | NotificationKind::FailedOver => {
                // An address literal is never dropped from a record: nothing to ask.
                let watching = st.running == Some(NotificationKind::Migrated)
                    || st
                        .queue
                        .iter()
                        .any(|t| t.kind() == NotificationKind::Migrated);
                if is_address_literal(&self.endpoint.host)
                    || watching
                    || st.queue.len() >= TASK_QUEUE_BOUND
                {
                    return false;
                }
                st.queue.push_back(Task::Migrated {
                    trigger: event.kind,
                    sequence: event.sequence,
                    received: now,
                });
                true
            }
            NotificationKind::SMigrated => {
                for m in &event.migrations {
                    if st.migrations.len() >= MIGRATIONS_BOUND {
                        st.migrations.pop_front();
                    }
                    st.migrations.push_back(m.clone());
                }
                !event.migrations.is_empty()
            }
            _ => false,
        }
    }

    /// Whether a worker should start now; marks one as started.
    pub(crate) fn claim_worker(&self) -> bool {
        let mut st = self.state.lock();
        if st.worker || st.cancelled || st.queue.is_empty() {
            return false;
        }
        st.worker = true;
        true
    }

    /// The worker could not be started: the tasks wait for the next tick.
    pub(crate) fn worker_failed(&self) {
        self.state.lock().worker = false;
    }

    /// The next task and its generation; `None` ends the worker.
    pub(crate) fn next_task(&self) -> Option<(Task, u64)> {
        let mut st = self.state.lock();
        let next = if st.cancelled {
            None
        } else {
            st.queue.pop_front()
        };
        match next {
            Some(task) => {
                st.running = Some(task.kind());
                Some((task, st.generation))
            }
            None => {
                st.running = None;
                st.worker = false;
                None
            }
        }
    }

    /// Waits up to `d`; `false` when the wait was cut short because the node closed or
    /// a newer `MOVING` superseded the task of `generation`.
    pub(crate) fn pause(&self, d: Duration, generation: u64) -> bool {
        let deadline = deadline_after(Instant::now(), d);
        let mut st = self.state.lock();
        loop {
            if st.cancelled || st.generation != generation {
                return false;
            }
            if self.wake.wait_until(&mut st, deadline).timed_out() {
                return !st.cancelled && st.generation == generation;
            }
        }
    }

    /// Whether the client is closing (or the node retired).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.state.lock().cancelled
    }

    /// The node is closing: no new work; a waiting worker wakes and ends.
    pub(crate) fn cancel(&self) {
        self.state.lock().cancelled = true;
        self.wake.notify_all();
    }

    /// Records how a handoff ended.
    pub(crate) fn finish(&self, report: &HandoffReport) {
        let mut st = self.state.lock();
        let s = &mut st.stats;
        if report.recycled {
            s.recycles += 1;
        }
        if report.error.is_some() {
            s.failed += 1;
        }
        match &report.outcome {
            HandoffOutcome::Decided(HandoffDecision::StepSideways(_)) => s.stepped_sideways += 1,
            HandoffOutcome::Decided(HandoffDecision::RecordMoved { .. }) => s.record_moved += 1,
            HandoffOutcome::Decided(HandoffDecision::StillStale { .. }) => s.still_stale += 1,
            HandoffOutcome::Decided(HandoffDecision::ConnectTo(_)) => s.named_endpoint += 1,
            HandoffOutcome::NoLongerAdvertised(_) => s.no_longer_advertised += 1,
            _ => {}
        }
        st.last = Some(report.clone());
    }

    /// `SMIGRATED` triplets received since the last call.
    pub(crate) fn take_migrations(&self) -> Vec<SlotMigration> {
        self.state.lock().migrations.drain(..).collect()
    }

    pub(crate) fn stats(&self) -> HandoffStats {
        self.state.lock().stats
    }

    pub(crate) fn last(&self) -> Option<HandoffReport> {
        self.state.lock().last.clone()
    }
}

#[cfg(test)]
mod tests;
