//! The socket-free decisions of a primary/replica deployment: reading a `ROLE` reply,
//! choosing the primary from what every node says, and pacing the re-checks a
//! `-READONLY` reply asks for. Tested as tables with an injected time.

use std::time::{Duration, Instant};

use crate::config::Endpoint;
use crate::resp::Value;

/// What one server says it is (`ROLE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `master`.
    Primary,
    /// `slave`: the primary it follows, as it names it.
    Replica { following: Option<Endpoint> },
    /// `sentinel` (or anything else): never a data node.
    Other,
    /// An error reply to `ROLE`: a proxy or a test double without the command. Never
    /// chosen as primary among several endpoints; a sentinel's word is taken for it.
    Unanswered,
}

/// Reads a `ROLE` reply; `None` for anything not shaped like one (an error reply, a
/// server without `ROLE`).
pub(crate) fn parse_role(reply: &Value) -> Option<Role> {
    let items = match reply {
        Value::Array(items) | Value::Set(items) | Value::Push(items) => items,
        _ => return None,
    };
    let kind = items.first()?.as_bytes()?;
    Some(match kind.to_ascii_lowercase().as_slice() {
        b"master" => Role::Primary,
        b"slave" | b"replica" => {
            let host = items
                .get(1)
                .and_then(Value::as_bytes)
                .and_then(|h| std::str::from_utf8(h).ok());
            let port = items.get(2).and_then(port_of);
            Role::Replica {
                following: host
                    .zip(port)
                    .filter(|(h, _)| !h.is_empty())
                    .map(|(h, p)| Endpoint::new(h, p)),
            }
        }
        _ => Role::Other,
    })
}

/// A port given as an integer or as text (sentinel replies hold text).
pub(crate) fn port_of(v: &Value) -> Option<u16> {
    match v {
        Value::Int(n) => u16::try_from(*n).ok(),
        other => std::str::from_utf8(other.as_bytes()?).ok()?.parse().ok(),
    }
}

/// Which server is the primary, from what the servers that answered say of
/// themselves (`observed`), given the one routed to now (`current`).
///
/// - exactly one says `master`: it;
/// - several (a demoted primary not yet reconfigured, a split): the one most replicas
///   follow; on a tie the current one if it is among them, else the first listed
///   (`observed` is in the order the endpoints were given: several independent
///   servers, a configuration mistake, keep working as before, on the first);
/// - none: `None` (a failover in progress), unless no server has a `ROLE` command at
///   all (proxies, test doubles): then the first that answered, as before roles were
///   read, rather than no server at all.
pub(crate) fn choose_primary(
    current: Option<&Endpoint>,
    observed: &[(Endpoint, Role)],
) -> Option<Endpoint> {
    let masters: Vec<&Endpoint> = observed
        .iter()
        .filter(|(_, r)| *r == Role::Primary)
        .map(|(e, _)| e)
        .collect();
    match masters.as_slice() {
        [] if !observed.is_empty() && observed.iter().all(|(_, r)| *r == Role::Unanswered) => {
            observed.first().map(|(e, _)| e.clone())
        }
        [] => None,
        [only] => Some((*only).clone()),
        several => {
            let followers = |m: &Endpoint| {
                observed
                    .iter()
                    .filter(|(_, r)| matches!(r, Role::Replica { following: Some(f) } if f == m))
                    .count()
            };
            let best = several.iter().map(|m| followers(m)).max().unwrap_or(0);
            let leaders: Vec<&&Endpoint> =
                several.iter().filter(|m| followers(m) == best).collect();
            match leaders.as_slice() {
                [one] => Some((**one).clone()),
                _ => current
                    .filter(|c| leaders.iter().any(|l| **l == *c))
                    .or_else(|| leaders.first().map(|l| **l))
                    .cloned(),
            }
        }
    }
}

/// Paces role re-checks: one at once when asked (a `-READONLY` reply, a lost
/// primary), then, while re-checks keep finding no new primary, a doubling gap, so a
/// stream of `-READONLY` replies after a promotion never turns into a loop of `ROLE`
/// round trips. A primary found resets the gap.
#[derive(Clone, Debug)]
pub(crate) struct Pacer {
    min_gap: Duration,
    max_gap: Duration,
    /// Consecutive re-checks that found no primary.
    misses: u32,
    last: Option<Instant>,
}

impl Pacer {
    pub(crate) fn new(min_gap: Duration, max_gap: Duration) -> Pacer {
        Pacer {
            min_gap,
            max_gap,
            misses: 0,
            last: None,
        }
    }

    /// The gap a re-check must wait after the previous one.
    pub(crate) fn gap(&self) -> Duration {
        let exp = self.misses.min(16);
        self.min_gap.saturating_mul(1u32 << exp).min(self.max_gap)
    }

    /// When the next re-check may run (`now` when it may run at once).
    pub(crate) fn next_at(&self, now: Instant) -> Instant {
        match self.last {
            Some(last) => (last + self.gap()).max(now),
            None => now,
        }
    }

    /// Records a re-check that ran at `now` and whether it found a primary.
    pub(crate) fn ran(&mut self, now: Instant, found_primary: bool) {
        self.last = Some(now);
        self.misses = if found_primary {
            0
        } else {
            self.misses.saturating_add(1)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn ep(port: u16) -> Endpoint {
        Endpoint::new("127.0.0.1", port)
    }

    #[test]
    fn role_replies_are_read_and_anything_else_is_none() {
        let table: Vec<(Value, Option<Role>)> = vec![
            (
                Value::Array(vec![bulk("master"), Value::Int(3), Value::Array(vec![])]),
                Some(Role::Primary),
            ),
            (
                Value::Array(vec![
                    bulk("slave"),
                    bulk("127.0.0.1"),
                    Value::Int(7000),
                    bulk("connected"),
                    Value::Int(10),
                ]),
                Some(Role::Replica {
                    following: Some(ep(7000)),
                }),
            ),
            // A replica that has not learned its primary's address yet.
            (
                Value::Array(vec![bulk("slave"), bulk(""), Value::Int(0)]),
                Some(Role::Replica { following: None }),
            ),
            (
                Value::Array(vec![bulk("sentinel"), Value::Array(vec![])]),
                Some(Role::Other),
            ),
            (Value::Error("ERR unknown command".into()), None),
            (Value::Array(vec![]), None),
            (Value::Array(vec![Value::Int(1)]), None),
            (Value::Nil, None),
        ];
        for (reply, want) in table {
            assert_eq!(parse_role(&reply), want, "{reply:?}");
        }
    }

    #[test]
    fn the_primary_is_the_one_master_or_the_one_replicas_follow() {
        let replica_of = |p| Role::Replica {
            following: Some(ep(p)),
        };
        type Row = (
            &'static str,
            Option<Endpoint>,
            Vec<(Endpoint, Role)>,
            Option<Endpoint>,
        );
        let table: Vec<Row> = vec![
            (
                "one master",
                None,
                vec![(ep(1), Role::Primary), (ep(2), replica_of(1))],
                Some(ep(1)),
            ),
            (
                "promoted",
                Some(ep(1)),
                vec![(ep(2), Role::Primary)],
                Some(ep(2)),
            ),
            (
                "none: failover in progress",
                Some(ep(1)),
                vec![(ep(2), replica_of(1))],
                None,
            ),
            ("nobody answered", Some(ep(1)), vec![], None),
            (
                "old primary back as master, replicas follow the new one",
                Some(ep(1)),
                vec![
                    (ep(1), Role::Primary),
                    (ep(2), Role::Primary),
                    (ep(3), replica_of(2)),
                ],
                Some(ep(2)),
            ),
            (
                "two masters, no followers: keep the current",
                Some(ep(2)),
                vec![(ep(1), Role::Primary), (ep(2), Role::Primary)],
                Some(ep(2)),
            ),
            (
                "two masters, no followers, no current: the first listed",
                None,
                vec![(ep(2), Role::Primary), (ep(1), Role::Primary)],
                Some(ep(2)),
            ),
            (
                "sentinels are never data nodes",
                None,
                vec![(ep(9), Role::Other)],
                None,
            ),
        ];
        for (name, current, observed, want) in table {
            assert_eq!(choose_primary(current.as_ref(), &observed), want, "{name}");
        }
    }

    #[test]
    fn rechecks_run_at_once_then_back_off_while_nothing_is_found() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut p = Pacer::new(ms(50), ms(1000));
        assert_eq!(p.next_at(t0), t0, "the first re-check runs at once");
        // (ran at, found a primary, the gap to the next one)
        let table = [
            (0, false, 100),
            (100, false, 200),
            (300, false, 400),
            (700, false, 800),
            (1500, false, 1000),
            (2500, false, 1000),
            (3500, true, 50),
        ];
        for (at, found, gap) in table {
            let now = t0 + ms(at);
            assert!(p.next_at(now) <= now, "due at {at} ms");
            p.ran(now, found);
            assert_eq!(p.gap(), ms(gap), "after the re-check at {at} ms");
            assert_eq!(p.next_at(now), now + ms(gap));
        }
    }
}
