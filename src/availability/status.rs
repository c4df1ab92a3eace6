//! `GroupStatus`: a point-in-time snapshot of a group's members, for logs, dashboards
//! and examples, with a `Display` that writes it as a table.
//!
//! Owns: what a group snapshot holds and how it reads. Must never: run a probe or send
//! a command (it reads the state the supervisor keeps, so it is cheap and never blocks
//! behind a member that is down).

use std::fmt;
use std::time::Duration;

use super::member::GroupMember;
use super::target::ProbeResult;
use crate::client::status::{write_table, yes_no};
use crate::client::ClientStatus;

/// A snapshot of a [`Group`](super::Group): every member, which one is active, and each member's
/// client. `Display` writes one row per member, the active one marked `*`:
///
/// ```text
/// group of 3, active: us-west
///     member      weight  connected  unhealthy  provisional  latency  failback check
///     us-east     30      no         yes        no           -        -
///   * us-west     20      yes        no         no           310 µs   -
///     eu-central  10      yes        no         no           2.6 ms   -
/// ```
///
/// The alternate form (`{:#}`) adds each member's [`ClientStatus`] table below.
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use resilient_redis::availability::{Group, GroupOptions, Member};
/// use resilient_redis::testkit::FakeServer;
/// let (east, west) = (FakeServer::start()?, FakeServer::start()?);
/// let group = Group::connect(
///     vec![
///         Member::new(east.url()).with_name("east").with_weight(2),
///         Member::new(west.url()).with_name("west"),
///     ],
///     Default::default(),
/// )?;
/// let status = group.status();
/// // `connect` returns once a member serves (the heavier east, unless west was up
/// // well before it); the other may still be connecting.
/// assert!(status.active.is_some());
/// assert_eq!(status.members.len(), 2);
/// println!("{status}");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupStatus {
    /// The name of the member serving now; `None` when none is.
    pub active: Option<String>,
    /// Every member, in the group's order.
    pub members: Vec<MemberStatus>,
}

/// One member of a [`GroupStatus`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemberStatus {
    /// Its name.
    pub name: String,
    /// Its weight now (higher is preferred).
    pub weight: u32,
    /// Whether it serves now.
    pub active: bool,
    /// Whether its connection is up.
    pub connected: bool,
    /// Whether a failed health check or a tripped breaker took it out of rotation.
    pub unhealthy: bool,
    /// Whether it is active only through the liveness fallback (no live member passed
    /// its failback check).
    pub provisional: bool,
    /// Its measured round-trip time (smoothed), once measured.
    pub latency: Option<Duration>,
    /// The latest verdict of its failback check, if it has one and was asked since it
    /// last stopped being active or live.
    pub failback_result: Option<ProbeResult>,
    /// Its client's servers (`None` before it joined a group).
    pub client: Option<ClientStatus>,
}

impl GroupStatus {
    /// Takes the snapshot (see [`Group::status`](super::Group::status)).
    pub(crate) fn of(members: &[GroupMember], active: Option<&GroupMember>) -> GroupStatus {
        let members = members
            .iter()
            .map(|m| MemberStatus {
                name: m.name().to_string(),
                weight: m.weight(),
                active: active == Some(m),
                connected: m.is_connected(),
                unhealthy: m.is_unhealthy(),
                provisional: m.is_provisional(),
                latency: m.latency(),
                failback_result: m.failback_result(),
                client: m.client().map(|c| c.status()),
            })
            .collect();
        GroupStatus {
            active: active.map(|m| m.name().to_string()),
            members,
        }
    }
}

impl fmt::Display for GroupStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "group of {}, active: {}",
            self.members.len(),
            self.active.as_deref().unwrap_or("none")
        )?;
        let rows: Vec<Vec<String>> = self
            .members
            .iter()
            .map(|m| {
                vec![
                    format!("{} {}", if m.active { "*" } else { " " }, m.name),
                    m.weight.to_string(),
                    yes_no(m.connected).to_string(),
                    yes_no(m.unhealthy).to_string(),
                    yes_no(m.provisional).to_string(),
                    m.latency.map_or_else(|| "-".to_string(), millis),
                    m.failback_result
                        .map_or_else(|| "-".to_string(), |r| format!("{r:?}")),
                ]
            })
            .collect();
        write_table(
            f,
            "  ",
            &[
                "  member",
                "weight",
                "connected",
                "unhealthy",
                "provisional",
                "latency",
                "failback check",
            ],
            &rows,
        )?;
        if f.alternate() {
            for m in &self.members {
                if let Some(c) = &m.client {
                    write!(f, "\n\n{}: {c}", m.name)?;
                }
            }
        }
        Ok(())
    }
}

/// `450 µs`, `2.5 ms`, `12 ms`, `1.5 s`: enough digits to compare members at a glance
/// (a server on the same host answers in tens of microseconds).
fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{} µs", d.as_micros())
    } else if ms < 10.0 {
        format!("{ms:.1} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, weight: u32, active: bool) -> MemberStatus {
        MemberStatus {
            name: name.to_string(),
            weight,
            active,
            connected: true,
            unhealthy: false,
            provisional: false,
            latency: Some(Duration::from_micros(400)),
            failback_result: None,
            client: None,
        }
    }

    #[test]
    fn the_active_member_is_marked_and_columns_line_up() {
        let mut east = member("us-east", 30, false);
        east.connected = false;
        east.unhealthy = true;
        east.latency = None;
        let mut west = member("us-west", 20, true);
        west.provisional = true;
        west.failback_result = Some(ProbeResult::Inconclusive);
        west.latency = Some(Duration::from_millis(35));
        let status = GroupStatus {
            active: Some("us-west".into()),
            members: vec![east, west, member("eu-central", 10, false)],
        };
        let text = status.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "group of 3, active: us-west");
        assert_eq!(
            lines[1],
            "    member      weight  connected  unhealthy  provisional  latency  failback check"
        );
        assert_eq!(
            lines[2],
            "    us-east     30      no         yes        no           -        -"
        );
        assert_eq!(
            lines[3],
            "  * us-west     20      yes        no         yes          35 ms    Inconclusive"
        );
        assert_eq!(
            lines[4],
            "    eu-central  10      yes        no         no           400 µs   -"
        );
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn durations_keep_a_readable_precision() {
        assert_eq!(millis(Duration::from_micros(340)), "340 µs");
        assert_eq!(millis(Duration::from_micros(2500)), "2.5 ms");
        assert_eq!(millis(Duration::from_millis(42)), "42 ms");
        assert_eq!(millis(Duration::from_millis(1500)), "1.5 s");
    }
}
