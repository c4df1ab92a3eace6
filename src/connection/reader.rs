//! The reader thread: decodes frames as they arrive, hands push frames to the push
//! handler, and completes waiters in FIFO order. A frame that belongs to no waiter
//! means the stream is out of step: the connection is failed rather than guessed at.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::slot::Outcome;
use super::transport::ReadHalf;
use super::Shared;
use crate::error::{Error, ErrorKind, FailureKind};
use crate::resp::{Decoder, Value};

/// RESP2 delivers pub/sub messages and confirmations as plain arrays whose first
/// element names the kind; a subscribed RESP2 `PING` answers `["pong", ""]`, which is
/// a reply, not a message.
fn is_pubsub_array(frame: &Value) -> bool {
    let Value::Array(items) = frame else {
        return false;
    };
    let Some(kind) = items.first().and_then(Value::as_bytes) else {
        return false;
    };
    matches!(
        kind,
        b"message"
            | b"pmessage"
            | b"smessage"
            | b"subscribe"
            | b"psubscribe"
            | b"ssubscribe"
            | b"unsubscribe"
            | b"punsubscribe"
            | b"sunsubscribe"
    )
}

pub(super) fn run(shared: Arc<Shared>, mut decoder: Decoder, mut read: ReadHalf) {
    let mut partial: Vec<Value> = Vec::new();
    loop {
        let frame = match decoder.decode() {
            Ok(Some(frame)) => frame,
            Ok(None) => match decoder.read_from(&mut read) {
                Ok(0) => {
                    let e = Error::new(
                        ErrorKind::ConnectionClosed,
                        "the server closed the connection",
                    );
                    return shared.fail(FailureKind::SocketClosed, e);
                }
                Ok(_) => {
                    shared
                        .last_read_ms
                        .store(shared.now_ms(), Ordering::Relaxed);
                    continue;
                }
                Err(e) => return shared.fail(FailureKind::SocketFailure, e.into()),
            },
            Err(e) => return shared.fail(FailureKind::ProtocolFailure, e),
        };
        if matches!(frame, Value::Push(_)) || (shared.subscriber && is_pubsub_array(&frame)) {
            shared.dispatch_push(frame);
            continue;
        }
        let mut pending = shared.pending.lock();
        let Some(front) = pending.front() else {
            drop(pending);
            if shared.subscriber && frame.is_error() {
                shared.dispatch_push(frame);
                continue;
            }
            let e = Error::new(
                ErrorKind::Protocol,
                "a reply arrived with no request waiting for it",
            );
            return shared.fail(FailureKind::ProtocolFailure, e);
        };
        let outcome = if front.expected == 1 && partial.is_empty() {
            Outcome::One(frame)
        } else {
            partial.push(frame);
            if partial.len() < front.expected {
                continue;
            }
            Outcome::Many(std::mem::take(&mut partial))
        };
        let Some(done) = pending.pop_front() else {
            continue;
        };
        drop(pending);
        if done.caller_work {
            shared.caller_inflight.fetch_sub(1, Ordering::Relaxed);
        }
        done.slot.complete(outcome);
    }
}
