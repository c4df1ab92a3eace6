//! When a caller takes a lane instead of the shared connection: a socket-free rule,
//! tested as a table.
//!
//! With two callers on one connection, at most two requests are in flight per round
//! trip and each caller waits for the other's reply to be read first; on a connection
//! of its own each reads its own reply, as a connection per thread would (measured at
//! 2 threads: 1.04× redis-rs against 0.72× on one connection). With more callers than
//! lanes, the shared connection's cohorts batch them (one write and one read for
//! several calls), and taking a lane would split a cohort into round trips of one
//! (measured at 4 threads: 0.94× against 1.39×). See `docs/performance.md`.

/// Whether a caller's request goes on a lane: the shared connection already carries
/// `shared_callers` callers' requests, `others_waiting` callers of the process wait
/// for a reply on any connection, and the node has `lanes` lanes.
pub(crate) fn takes_a_lane(shared_callers: usize, others_waiting: usize, lanes: usize) -> bool {
    // Alone on the shared connection: it reads its own reply there.
    shared_callers > 0
        // Every caller can be alone on a connection (the shared one plus the lanes).
        && others_waiting <= lanes
}

#[cfg(test)]
mod tests {
    use super::takes_a_lane;

    #[test]
    fn a_lane_is_taken_only_while_every_caller_can_be_alone_on_a_connection() {
        // (callers on the shared connection, callers waiting in the process, lanes,
        // takes a lane)
        let table = [
            (0, 0, 1, false), // alone: the shared connection is its own
            (0, 1, 1, false), // the other one waits on another node
            (1, 1, 1, true),  // the second caller: a lane each
            (1, 2, 1, false), // a third: the shared connection batches them
            (3, 3, 1, false),
            (2, 3, 3, true), // lanes=3: up to four callers, each alone
            (3, 4, 3, false),
            (1, 1, 0, false), // lanes off
        ];
        for (shared, others, lanes, expected) in table {
            assert_eq!(
                takes_a_lane(shared, others, lanes),
                expected,
                "shared {shared}, others {others}, lanes {lanes}"
            );
        }
    }
}
