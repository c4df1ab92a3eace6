//! Pub/sub: SUBSCRIBE/UNSUBSCRIBE, PSUBSCRIBE/PUNSUBSCRIBE, SSUBSCRIBE/SUNSUBSCRIBE,
//! PUBLISH and SPUBLISH, with confirmations and messages shaped as the server sends
//! them (RESP3 push frames `>`, RESP2 arrays).
//!
//! Owns: who is subscribed to what (kept in each connection's state) and delivery.
//! Must never: deliver a sharded message from a node other than the one that took the
//! SPUBLISH, or share one encoded frame between recipients.

use std::ops::RangeInclusive;
use std::sync::Arc;

use super::glob;
use super::reply::{bulk_value, int, Reply};
use super::server::ServerInner;
use super::session::Ctx;
use super::slots;
use crate::resp::Value;

#[derive(Clone, Copy)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

fn confirmation(kind: &str, name: Option<&[u8]>, count: usize) -> Value {
    Value::Push(vec![
        bulk_value(kind.as_bytes()),
        name.map_or(Value::Nil, bulk_value),
        Value::Int(count as i64),
    ])
}

fn subscribe_generic(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], kind: Kind) -> Reply {
    let mut st = ctx.s.conn.state.lock();
    let mut frames = Vec::with_capacity(args.len() - 1);
    for name in &args[1..] {
        let (label, count) = match kind {
            Kind::Channel => {
                st.channels.insert(name.clone());
                ("subscribe", st.channels.len() + st.patterns.len())
            }
            Kind::Pattern => {
                st.patterns.insert(name.clone());
                ("psubscribe", st.channels.len() + st.patterns.len())
            }
            Kind::Shard => {
                st.shard_channels.insert(name.clone());
                ("ssubscribe", st.shard_channels.len())
            }
        };
        frames.push(confirmation(label, Some(name), count));
    }
    Reply::Frames(frames)
}

fn unsubscribe_generic(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], kind: Kind) -> Reply {
    let mut st = ctx.s.conn.state.lock();
    let st = &mut *st;
    let (label, set) = match kind {
        Kind::Channel => ("unsubscribe", &mut st.channels),
        Kind::Pattern => ("punsubscribe", &mut st.patterns),
        Kind::Shard => ("sunsubscribe", &mut st.shard_channels),
    };
    let names: Vec<Vec<u8>> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        set.iter().cloned().collect()
    };
    let mut frames = Vec::new();
    for name in &names {
        set.remove(name);
        frames.push((name.clone(), set.len()));
    }
    let base = match kind {
        Kind::Shard => 0,
        Kind::Channel => st.patterns.len(),
        Kind::Pattern => st.channels.len(),
    };
    let mut out: Vec<Value> = frames
        .into_iter()
        .map(|(n, left)| confirmation(label, Some(&n), left + base))
        .collect();
    if out.is_empty() {
        let left = match kind {
            Kind::Shard => st.shard_channels.len(),
            _ => st.channels.len() + st.patterns.len(),
        };
        out.push(confirmation(label, None, left));
    }
    Reply::Frames(out)
}

/// `SUBSCRIBE channel ...`
pub(crate) fn subscribe(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    subscribe_generic(ctx, args, Kind::Channel)
}

/// `PSUBSCRIBE pattern ...`
pub(crate) fn psubscribe(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    subscribe_generic(ctx, args, Kind::Pattern)
}

/// `SSUBSCRIBE shardchannel ...` (one slot; routed like keys in a cluster)
pub(crate) fn ssubscribe(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    subscribe_generic(ctx, args, Kind::Shard)
}

/// `UNSUBSCRIBE [channel ...]`
pub(crate) fn unsubscribe(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    unsubscribe_generic(ctx, args, Kind::Channel)
}

/// `PUNSUBSCRIBE [pattern ...]`
pub(crate) fn punsubscribe(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}

/// `SUNSUBSCRIBE [shardchannel ...]`
pub(crate) fn sunsubscribe(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

/// Delivers a `PUBLISH` on one server; returns how many received it.
pub(crate) fn deliver(server: &ServerInner, channel: &[u8], message: &[u8]) -> usize {
    let hung = server.faults.is_hung();
    let mut receivers = 0;
    for conn in server.connections() {
        let mut frames = Vec::new();
        {
            let st = conn.state.lock();
            if st.channels.contains(channel) {
                frames.push(Value::Push(vec![
                    bulk_value(b"message"),
                    bulk_value(channel),
                    bulk_value(message),
                ]));
            }
            for pattern in st.patterns.iter().filter(|p| glob::matches(p, channel)) {
                frames.push(Value::Push(vec![
                    bulk_value(b"pmessage"),
                    bulk_value(pattern),
                    bulk_value(channel),
                    bulk_value(message),
                ]));
            }
        }
        receivers += frames.len();
        for f in &frames {
            conn.push(f, hung);
        }
    }
    receivers
}

/// `PUBLISH channel message`: delivered on this server (and, in a cluster, on every
/// node, as the cluster bus does); answers the receivers on this node.
pub(crate) fn publish(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let me = ctx.s.server.clone();
    let local = deliver(&me, &args[1], &args[2]);
    if let Some(link) = me.cluster.get() {
        for other in link.state.live_servers() {
            if !Arc::ptr_eq(&other, &me) {
                deliver(&other, &args[1], &args[2]);
            }
        }
    }
    int(local as i64)
}

/// `SPUBLISH shardchannel message`: delivered to this node's sharded subscribers.
pub(crate) fn spublish(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    let server = ctx.s.server.clone();
    let hung = server.faults.is_hung();
    let mut receivers = 0;
    for conn in server.connections() {
        if !conn.state.lock().shard_channels.contains(&args[1]) {
            continue;
        }
        receivers += 1;
        conn.push(
            &Value::Push(vec![
                bulk_value(b"smessage"),
                bulk_value(&args[1]),
                bulk_value(&args[2]),
            ]),
            hung,
        );
    }
    int(receivers)
}

/// Like `drop_shard_channels`, without telling the subscribers.
pub(crate) fn forget_shard_channels(server: &ServerInner, slots: &RangeInclusive<u16>) {
    for conn in server.connections() {
        let mut st = conn.state.lock();
        st.shard_channels
            .retain(|c| !slots.contains(&slots::key_slot(c)));
    }
}

/// A node lost `slots`: its sharded subscribers of channels in them are unsubscribed,
/// each told by an unsolicited `sunsubscribe <channel> <count>` push (as the server
/// does when a slot is deleted from it).
pub(crate) fn drop_shard_channels(server: &ServerInner, slots: &RangeInclusive<u16>) {
    let hung = server.faults.is_hung();
    for conn in server.connections() {
        let mut frames = Vec::new();
        {
            let mut st = conn.state.lock();
            let moved: Vec<Vec<u8>> = st
                .shard_channels
                .iter()
                .filter(|c| slots.contains(&slots::key_slot(c)))
                .cloned()
                .collect();
            for c in moved {
                st.shard_channels.remove(&c);
                frames.push(confirmation(
                    "sunsubscribe",
                    Some(&c),
                    st.shard_channels.len(),
                ));
            }
        }
        for f in &frames {
            conn.push(f, hung);
        }
    }
}
