//! What reaches a group's supervisor: inputs for its decision core, questions that
//! want the core's answer, and what member clients report.

use crossbeam_channel::Sender;

use super::core::{Input, MemberId};
use crate::client::MemberSignal;

/// How many messages may wait for the supervisor. Senders that find it full either
/// wait (user threads) or drop a message the next poll recovers (connection threads).
pub(crate) const INBOX_BOUND: usize = 1024;

/// One message for the supervisor.
pub(crate) enum Message {
    /// An input for the core.
    Input(Input),
    /// An input whose `accepted` answer the sender waits for.
    Ask(Input, Sender<bool>),
    /// A member client's report about its connections.
    Signal(MemberId, MemberSignal),
    /// The group is closing.
    Shutdown,
}

/// The sending side of a supervisor's inbox.
pub(crate) type Inbox = Sender<Message>;

/// Sends `input` and waits for the core's answer; `false` when the group is closed.
pub(crate) fn ask(inbox: &Inbox, input: Input) -> bool {
    let (tx, rx) = crossbeam_channel::bounded(1);
    if inbox.send(Message::Ask(input, tx)).is_err() {
        return false;
    }
    rx.recv().unwrap_or(false)
}
