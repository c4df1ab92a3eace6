//! Pub/sub frames: messages and (un)subscribe confirmations, read from RESP3 pushes or
//! the RESP2 arrays a subscribed connection receives.

use std::borrow::Cow;

use crate::resp::Value;

/// Which kind of subscription a message or name belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    /// `SUBSCRIBE` / `PUBLISH`.
    Channel,
    /// `PSUBSCRIBE` (glob pattern).
    Pattern,
    /// `SSUBSCRIBE` / `SPUBLISH` (sharded, routed by slot).
    Sharded,
}

impl MessageKind {
    pub(crate) fn subscribe_command(self) -> &'static str {
        match self {
            MessageKind::Channel => "SUBSCRIBE",
            MessageKind::Pattern => "PSUBSCRIBE",
            MessageKind::Sharded => "SSUBSCRIBE",
        }
    }

    pub(crate) fn unsubscribe_command(self) -> &'static str {
        match self {
            MessageKind::Channel => "UNSUBSCRIBE",
            MessageKind::Pattern => "PUNSUBSCRIBE",
            MessageKind::Sharded => "SUNSUBSCRIBE",
        }
    }
}

/// One published message.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Message {
    /// How it was subscribed to.
    pub kind: MessageKind,
    /// The channel it was published to.
    pub channel: Vec<u8>,
    /// The pattern that matched (pattern subscriptions only).
    pub pattern: Option<Vec<u8>>,
    /// The payload.
    pub payload: Vec<u8>,
    /// When it was read off the connection (a group delivers a message only if its
    /// member was active then).
    pub(crate) received_at: std::time::Instant,
}

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        (self.kind, &self.channel, &self.pattern, &self.payload)
            == (other.kind, &other.channel, &other.pattern, &other.payload)
    }
}

impl Eq for Message {}

impl Message {
    /// The channel as text (invalid UTF-8 replaced).
    pub fn channel_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.channel)
    }

    /// The payload as text (invalid UTF-8 replaced).
    pub fn payload_str(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.payload)
    }
}

/// What a pub/sub push frame says.
#[derive(Debug, PartialEq)]
pub(crate) enum PubSubFrame {
    Message(Message),
    Subscribed(MessageKind, Vec<u8>),
    Unsubscribed(MessageKind, Vec<u8>),
}

/// Reads a push (or RESP2 pub/sub array); `None` when it is not pub/sub.
pub(crate) fn parse(frame: &Value) -> Option<PubSubFrame> {
    let items = match frame {
        Value::Push(items) | Value::Array(items) => items,
        _ => return None,
    };
    let kind = items.first()?.as_bytes()?;
    let text = |i: usize| items.get(i).and_then(Value::as_bytes).map(<[u8]>::to_vec);
    let frame = match kind {
        b"message" | b"smessage" => PubSubFrame::Message(Message {
            kind: if kind == b"message" {
                MessageKind::Channel
            } else {
                MessageKind::Sharded
            },
            channel: text(1)?,
            pattern: None,
            payload: text(2)?,
            received_at: std::time::Instant::now(),
        }),
        b"pmessage" => PubSubFrame::Message(Message {
            kind: MessageKind::Pattern,
            pattern: Some(text(1)?),
            channel: text(2)?,
            payload: text(3)?,
            received_at: std::time::Instant::now(),
        }),
        b"subscribe" => PubSubFrame::Subscribed(MessageKind::Channel, text(1)?),
        b"psubscribe" => PubSubFrame::Subscribed(MessageKind::Pattern, text(1)?),
        b"ssubscribe" => PubSubFrame::Subscribed(MessageKind::Sharded, text(1)?),
        b"unsubscribe" => PubSubFrame::Unsubscribed(MessageKind::Channel, text(1)?),
        b"punsubscribe" => PubSubFrame::Unsubscribed(MessageKind::Pattern, text(1)?),
        b"sunsubscribe" => PubSubFrame::Unsubscribed(MessageKind::Sharded, text(1)?),
        _ => return None,
    };
    Some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn messages_and_confirmations_in_both_protocols() {
        let m = parse(&Value::Push(vec![
            bulk("message"),
            bulk("news"),
            bulk("hi"),
        ]));
        assert!(
            matches!(m, Some(PubSubFrame::Message(ref m)) if m.channel == b"news" && m.payload == b"hi")
        );
        let p = parse(&Value::Array(vec![
            bulk("pmessage"),
            bulk("n*"),
            bulk("news"),
            bulk("x"),
        ]));
        assert!(
            matches!(p, Some(PubSubFrame::Message(ref m)) if m.pattern.as_deref() == Some(&b"n*"[..]))
        );
        let s = parse(&Value::Push(vec![
            bulk("ssubscribe"),
            bulk("{a}"),
            Value::Int(1),
        ]));
        assert_eq!(
            s,
            Some(PubSubFrame::Subscribed(
                MessageKind::Sharded,
                b"{a}".to_vec()
            ))
        );
        // The subscribed-RESP2 PING answer is a reply, not pub/sub.
        assert_eq!(parse(&Value::Array(vec![bulk("pong"), bulk("")])), None);
        // Short or odd frames are not taken for messages.
        assert_eq!(parse(&Value::Push(vec![bulk("message"), bulk("ch")])), None);
        assert_eq!(parse(&Value::Push(vec![Value::Int(1)])), None);
    }
}
