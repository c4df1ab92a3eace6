//! Reading a push frame as a maintenance notification.
//!
//! Shape: `[type, seq, (time), payload]`. The type decides whether a time element is
//! expected, never the content: a one-slot `SMIGRATING` list `123` is indistinguishable
//! from a duration by inspection. When elements are missing, the RESP type of what is
//! there decides (an integer where a time may stand is the time), so a frame that omits
//! the time, or adds one where the contract has none, is still read.

use std::ops::RangeInclusive;
use std::time::Duration;

use super::event::{MaintenanceEvent, NotificationKind, SlotMigration};
use crate::config::{parse_endpoint, Endpoint};
use crate::resp::Value;

/// Slots of a Redis Cluster: 0 to 16383.
const SLOT_COUNT: u32 = 16384;

/// What a push frame turned out to be.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// Not a maintenance notification (pub/sub, or anything else): handed back.
    NotMaintenance(Value),
    /// It names a maintenance kind but cannot be read: dropped with a log line.
    Unreadable(NotificationKind, &'static str),
    /// A notification.
    Event(Box<MaintenanceEvent>),
}

/// Reads `frame`, received from `from`.
pub(crate) fn parse(frame: Value, from: &Endpoint) -> Parsed {
    let kind = match &frame {
        Value::Push(items) => items
            .first()
            .and_then(Value::as_bytes)
            .and_then(NotificationKind::from_name),
        _ => None,
    };
    let Some(kind) = kind else {
        return Parsed::NotMaintenance(frame);
    };
    let mut event = MaintenanceEvent::new(kind, Value::Nil, from.clone());
    let result = match &frame {
        Value::Push(items) => read_into(&mut event, &items[1..]),
        _ => Err("not a push"),
    };
    match result {
        Ok(()) => {
            event.raw = frame;
            Parsed::Event(Box::new(event))
        }
        Err(why) => Parsed::Unreadable(kind, why),
    }
}

fn read_into(event: &mut MaintenanceEvent, mut rest: &[Value]) -> Result<(), &'static str> {
    let kind = event.kind;
    // A missing sequence id costs only de-duplication: go-redis reads none at all for
    // the shard kinds and works against real servers.
    if let Some(Value::Int(n)) = rest.first() {
        event.sequence = u64::try_from(*n).ok();
        rest = &rest[1..];
    }
    if let Some(Value::Int(n)) = rest.first() {
        if kind.carries_time() || rest.len() >= 2 {
            event.time = u64::try_from(*n).ok().map(Duration::from_secs);
            rest = &rest[1..];
        }
    }
    let payload = rest.first();
    match kind {
        NotificationKind::SMigrated => {
            event.migrations = match payload {
                None | Some(Value::Nil) => Vec::new(),
                Some(Value::Array(triplets)) | Some(Value::Set(triplets)) => {
                    let mut kept = Vec::with_capacity(triplets.len());
                    for t in triplets {
                        match triplet(t) {
                            Some(m) => kept.push(m),
                            // Skipped, not the frame: the other triplets still say
                            // something (go-redis does the same).
                            None => event.skipped_migrations += 1,
                        }
                    }
                    kept
                }
                Some(_) => return Err("the SMIGRATED payload is not an array of triplets"),
            };
        }
        _ => {
            // The DMC kinds are flat: nesting there means a frame we do not understand.
            if rest.iter().any(is_aggregate) {
                return Err("a nested element where a flat notification was expected");
            }
            let text = match payload {
                None => None,
                Some(v) => scalar_text(v).ok_or("an element that is neither text nor a number")?,
            };
            match kind {
                NotificationKind::Moving => {
                    event.new_endpoint = text.as_deref().and_then(endpoint_with_port);
                    event.endpoint_text = text;
                }
                NotificationKind::SMigrating => {
                    event.slots = text.as_deref().and_then(slot_list);
                    event.slots_text = text;
                }
                _ => event.shards = text,
            }
        }
    }
    Ok(())
}

fn is_aggregate(v: &Value) -> bool {
    matches!(
        v,
        Value::Array(_) | Value::Map(_) | Value::Set(_) | Value::Push(_) | Value::Attribute { .. }
    )
}

/// Text of a string-like or integer element; `Ok(None)` for a null.
fn scalar_text(v: &Value) -> Option<Option<String>> {
    match v {
        Value::Nil => Some(None),
        Value::Int(n) => Some(Some(n.to_string())),
        other => other
            .as_bytes()
            .map(|b| Some(String::from_utf8_lossy(b).into_owned())),
    }
}

fn triplet(v: &Value) -> Option<SlotMigration> {
    let Value::Array(parts) = v else {
        return None;
    };
    let [source, target, slots] = parts.as_slice() else {
        return None;
    };
    let text = |v: &Value| {
        v.as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let slots_text = text(slots)?;
    Some(SlotMigration {
        source: endpoint_with_port(&text(source)?)?,
        target: endpoint_with_port(&text(target)?)?,
        slots: slot_list(&slots_text)?,
        slots_text,
    })
}

/// `host:port` or `[v6]:port` with an explicit, non-zero port. Anything else (the
/// placeholders `?` and port 0 included) is "no endpoint": an address that cannot be
/// dialled must never be replaced by a guess, such as the default port or the server
/// that answered.
pub(crate) fn endpoint_with_port(text: &str) -> Option<Endpoint> {
    let text = text.trim();
    let has_port = match text.strip_prefix('[') {
        Some(rest) => rest.contains("]:"),
        None => text.matches(':').count() == 1,
    };
    if !has_port {
        return None;
    }
    parse_endpoint(text).ok()
}

/// A slot list: comma-separated slots and `a-b` ranges, every number below 16384 and
/// every range ascending. Anything else is rejected as a whole (never a panic: this runs
/// on the reader thread).
pub(crate) fn slot_list(text: &str) -> Option<Vec<RangeInclusive<u16>>> {
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b) = (slot(a)?, slot(b)?);
        if a > b {
            return None;
        }
        ranges.push(a..=b);
    }
    Some(ranges)
}

fn slot(s: &str) -> Option<u16> {
    let s = s.trim();
    // Digits only: `str::parse` takes a leading '+'; u32 first so that a long number is
    // rejected by the range check, not by an overflow.
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = s.parse().ok()?;
    if n >= SLOT_COUNT {
        return None;
    }
    u16::try_from(n).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn from() -> Endpoint {
        Endpoint::new("10.0.0.1", 12000)
    }

    fn event(items: Vec<Value>) -> MaintenanceEvent {
        match parse(Value::Push(items), &from()) {
            Parsed::Event(e) => *e,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn the_type_decides_the_time_element_never_the_content() {
        // A one-slot list looks like a duration; SMIGRATING carries no time.
        let e = event(vec![b("SMIGRATING"), Value::Int(3), b("123")]);
        assert_eq!(e.time, None);
        assert_eq!(e.slots, Some(vec![123..=123]));
        // Even sent as an integer, the last element of a timeless kind is its payload.
        let e = event(vec![b("SMIGRATING"), Value::Int(3), Value::Int(123)]);
        assert_eq!((e.time, e.slots), (None, Some(vec![123..=123])));
        // An added time is still accepted.
        let e = event(vec![
            b("MIGRATED"),
            Value::Int(1),
            Value::Int(5),
            b("[\"27\"]"),
        ]);
        assert_eq!(e.time, Some(Duration::from_secs(5)));
        assert_eq!(e.shards.as_deref(), Some("[\"27\"]"));
        // An omitted time too.
        let e = event(vec![b("MIGRATING"), Value::Int(0), b("[\"27\"]")]);
        assert_eq!((e.sequence, e.time), (Some(0), None));
        assert_eq!(e.shards.as_deref(), Some("[\"27\"]"));
    }

    #[test]
    fn type_names_are_case_insensitive_and_simple_strings_count() {
        let e = event(vec![Value::SimpleString("migrated".into()), Value::Int(7)]);
        assert_eq!((e.kind, e.sequence), (NotificationKind::Migrated, Some(7)));
        assert!(matches!(
            parse(Value::Push(vec![b("message"), b("ch"), b("x")]), &from()),
            Parsed::NotMaintenance(_)
        ));
        assert!(matches!(
            parse(Value::Array(vec![b("MOVING")]), &from()),
            Parsed::NotMaintenance(_)
        ));
    }

    #[test]
    fn moving_placeholders_give_no_endpoint_and_keep_the_text() {
        for (payload, text) in [
            (Value::Nil, None),
            (b("?"), Some("?")),
            (b("10.0.0.9:0"), Some("10.0.0.9:0")),
            (b("10.0.0.9"), Some("10.0.0.9")),
            (b(""), Some("")),
        ] {
            let e = event(vec![b("MOVING"), Value::Int(0), Value::Int(15), payload]);
            assert_eq!(e.new_endpoint, None);
            assert_eq!(e.endpoint_text.as_deref(), text);
            assert_eq!(e.time, Some(Duration::from_secs(15)));
        }
        let e = event(vec![
            b("MOVING"),
            Value::Int(1),
            Value::Int(15),
            b("[::1]:7000"),
        ]);
        assert_eq!(e.new_endpoint, Some(Endpoint::new("::1", 7000)));
        // No time, endpoint only; and nothing after the type at all.
        let e = event(vec![b("MOVING"), Value::Int(1), b("h.example:7000")]);
        assert_eq!(e.time, None);
        assert_eq!(e.new_endpoint, Some(Endpoint::new("h.example", 7000)));
        let e = event(vec![b("MOVING")]);
        assert_eq!((e.sequence, e.time, e.new_endpoint), (None, None, None));
    }

    #[test]
    fn a_missing_sequence_id_costs_only_deduplication() {
        let e = event(vec![b("FAILED_OVER"), b("[\"21\"]")]);
        assert_eq!(e.sequence, None);
        assert_eq!(e.shards.as_deref(), Some("[\"21\"]"));
        let e = event(vec![b("MIGRATED"), Value::Int(-1), b("[\"21\"]")]);
        assert_eq!(e.sequence, None);
    }

    #[test]
    fn smigrated_skips_malformed_triplets_only() {
        let good = Value::Array(vec![b("10.0.0.1:7000"), b("10.0.0.2:7001"), b("1,5-9")]);
        let frame = vec![
            b("SMIGRATED"),
            Value::Int(19),
            Value::Array(vec![
                good,
                Value::Array(vec![b("a:1"), b("b:2")]),
                Value::Array(vec![b("a:1"), b("b:2"), b("16384")]),
                Value::Array(vec![b("a"), b("b:2"), b("1")]),
                b("not a triplet"),
                Value::Array(vec![b("x:1"), b("y:2"), b("0-16383")]),
            ]),
        ];
        let e = event(frame);
        assert_eq!(e.migrations.len(), 2);
        assert_eq!(e.skipped_migrations, 4);
        assert_eq!(e.migrations[0].source, Endpoint::new("10.0.0.1", 7000));
        assert_eq!(e.migrations[0].slots, vec![1..=1, 5..=9]);
        assert_eq!(e.migrations[1].slots, vec![0..=16383]);
    }

    #[test]
    fn unreadable_frames_are_reported_not_guessed() {
        for items in [
            vec![b("MOVING"), Value::Int(1), Value::Array(vec![])],
            vec![
                b("MIGRATING"),
                Value::Int(1),
                Value::Int(2),
                Value::Boolean(true),
            ],
            vec![b("SMIGRATED"), Value::Int(1), b("1-2")],
            vec![b("FAILED_OVER"), Value::Int(1), Value::Map(vec![])],
        ] {
            assert!(
                matches!(
                    parse(Value::Push(items.clone()), &from()),
                    Parsed::Unreadable(..)
                ),
                "{items:?}"
            );
        }
    }

    #[test]
    fn slot_lists_are_range_checked_never_a_panic() {
        assert_eq!(slot_list("8892-8991"), Some(vec![8892..=8991]));
        assert_eq!(slot_list("1, 5-9"), Some(vec![1..=1, 5..=9]));
        assert_eq!(slot_list("16383"), Some(vec![16383..=16383]));
        for bad in [
            "16384",
            "99999999999999999999",
            "65536",
            "9-1",
            "",
            "1,",
            "+1",
            "-",
            "a-b",
            "1-2-3",
        ] {
            assert_eq!(slot_list(bad), None, "{bad:?}");
        }
        // An out-of-range SMIGRATING list keeps the frame and its text.
        let e = event(vec![b("SMIGRATING"), Value::Int(4), b("1-70000")]);
        assert_eq!(e.slots, None);
        assert_eq!(e.slots_text.as_deref(), Some("1-70000"));
    }
}
