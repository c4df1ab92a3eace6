//! Test support: a `Commands` implementation that returns the `Cmd` a typed method
//! built instead of running it, so unit tests can check the frame, the keys, the
//! retry category and the block time without a server.

use super::{Cmd, Commands, FromValue};

/// Returns every command it is given.
pub(crate) struct Recorder;

impl Commands for Recorder {
    type Out<T: FromValue> = Cmd;

    fn run<T: FromValue>(&self, cmd: Cmd) -> Cmd {
        cmd
    }
}

/// The arguments of a frame as text: `*3\r\n$3\r\nSET\r\n...` -> `["SET", "k", "v"]`.
pub(crate) fn args(cmd: &Cmd) -> Vec<String> {
    let text = String::from_utf8_lossy(cmd.frame()).into_owned();
    let mut lines = text.split("\r\n");
    let header = lines.next().expect("a header");
    let argc: usize = header[1..].parse().expect("an argument count");
    let mut out = Vec::with_capacity(argc);
    for _ in 0..argc {
        let len = lines.next().expect("a length");
        assert!(len.starts_with('$'), "not a bulk string: {len}");
        out.push(lines.next().expect("an argument").to_string());
    }
    out
}

/// The arguments joined by spaces, for compact assertions.
pub(crate) fn line(cmd: &Cmd) -> String {
    args(cmd).join(" ")
}

/// The key arguments, decoded.
pub(crate) fn keys(cmd: &Cmd) -> Vec<String> {
    cmd.keys()
        .map(|raw| String::from_utf8_lossy(raw).into_owned())
        .collect()
}
