//! `Cmd`: one command, encoded as its arguments are added, kept whole so it can be
//! sent again (a redirect, a retry) without re-encoding.

use std::borrow::Cow;
use std::ops::Range;
use std::time::Duration;

use super::flags::{CommandFlags, RetryCategory};
use super::to_args::ToArgs;
use crate::resp::write_arg;

/// Room kept at the front of the buffer for the `*argc\r\n` header, written last, so
/// the frame is one contiguous slice with no copy (20 digits + `*` + CRLF fits).
const HEADER_ROOM: usize = 24;

/// One encoded command.
///
/// ```
/// use resilient_redis::Cmd;
/// let cmd = Cmd::new("SET").key("k").arg("v");
/// assert_eq!(cmd.frame(), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
/// ```
#[derive(Clone, Debug)]
pub struct Cmd {
    buf: Vec<u8>,
    header_start: usize,
    argc: usize,
    name: Cow<'static, str>,
    category: RetryCategory,
    keys: KeyRanges,
    block: Option<Duration>,
}

impl Cmd {
    /// A command with the given name (sent as given) and retry category `Never`.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Cmd {
        let name = name.into();
        // Room for the name and a typical key and value, so a small command is
        // encoded without growing its buffer.
        let mut buf = Vec::with_capacity(HEADER_ROOM + 80 + name.len());
        buf.resize(HEADER_ROOM, 0);
        let mut cmd = Cmd {
            buf,
            header_start: HEADER_ROOM,
            argc: 0,
            name: Cow::Borrowed(""),
            category: RetryCategory::Never,
            keys: KeyRanges::default(),
            block: None,
        };
        // Subcommand names ("CLIENT SETNAME") are sent as separate arguments.
        if name.as_bytes().contains(&b' ') {
            for part in name.split(' ').filter(|p| !p.is_empty()) {
                write_arg(&mut cmd.buf, part.as_bytes());
                cmd.argc += 1;
            }
        } else if !name.is_empty() {
            write_arg(&mut cmd.buf, name.as_bytes());
            cmd.argc = 1;
        }
        cmd.name = name;
        cmd.seal();
        cmd
    }

    /// A typed command with its retry category.
    pub(crate) fn typed(name: &'static str, category: RetryCategory) -> Cmd {
        let mut cmd = Cmd::new(name);
        cmd.category = category;
        cmd
    }

    /// A command of the same name and retry category, without arguments (a part of
    /// one split across cluster slots).
    pub(crate) fn empty_like(&self) -> Cmd {
        let mut cmd = Cmd::new(self.name.clone());
        cmd.category = self.category;
        cmd
    }

    /// Appends argument(s).
    pub fn arg(mut self, arg: impl ToArgs) -> Cmd {
        self.push_arg(arg);
        self
    }

    /// Appends argument(s) that are keys (used for cluster routing).
    pub fn key(mut self, key: impl ToArgs) -> Cmd {
        self.push_key(key);
        self
    }

    /// Appends argument(s) in place.
    pub fn push_arg(&mut self, arg: impl ToArgs) {
        let mut w = ArgWriter {
            buf: &mut self.buf,
            argc: 0,
            keys: None,
        };
        arg.write_args(&mut w);
        self.argc += w.argc;
        self.seal();
    }

    /// Appends key argument(s) in place.
    pub fn push_key(&mut self, key: impl ToArgs) {
        let mut w = ArgWriter {
            buf: &mut self.buf,
            argc: 0,
            keys: Some(&mut self.keys),
        };
        key.write_args(&mut w);
        self.argc += w.argc;
        self.seal();
    }

    /// States the retry category through flags.
    pub fn flags(mut self, flags: CommandFlags) -> Cmd {
        if let Some(c) = flags.retry_category() {
            self.category = c;
        }
        self
    }

    /// Marks this a blocking command that asks the server to block for `block`
    /// (`Duration::ZERO`: forever). It then runs on a dedicated connection and its
    /// client-side timeout is the caller's timeout plus `block`.
    pub fn blocking(mut self, block: Duration) -> Cmd {
        self.block = Some(block);
        self
    }

    /// The command name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name, cheap to keep (typed commands' names are static).
    pub(crate) fn name_cow(&self) -> Cow<'static, str> {
        self.name.clone()
    }

    /// The name as stored, borrowed (a typed command's is `Cow::Borrowed('static)`),
    /// for a metric label that costs no copy.
    pub(crate) fn name_as_stored(&self) -> &Cow<'static, str> {
        &self.name
    }

    /// The retry category.
    pub fn retry_category(&self) -> RetryCategory {
        self.category
    }

    /// The server-side block time of a blocking command.
    pub fn block_time(&self) -> Option<Duration> {
        self.block
    }

    /// The frames of several commands, one after the other: one write for a pipeline.
    pub(crate) fn concat<'a>(cmds: impl IntoIterator<Item = &'a Cmd> + Clone) -> Vec<u8> {
        let len = cmds.clone().into_iter().map(|c| c.frame().len()).sum();
        let mut frame = Vec::with_capacity(len);
        for c in cmds {
            frame.extend_from_slice(c.frame());
        }
        frame
    }

    /// The encoded frame, ready for the wire.
    pub fn frame(&self) -> &[u8] {
        &self.buf[self.header_start..]
    }

    /// The key arguments, for routing by slot.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.keys.iter().map(|r| &self.buf[r])
    }

    /// Every argument, the command name (and a subcommand's) included, raw: what the
    /// server calls `argv` (for finding keys by the command table).
    pub(crate) fn argv(&self) -> Vec<&[u8]> {
        let mut out = Vec::with_capacity(self.argc);
        let mut rest = &self.buf[HEADER_ROOM..];
        while let Some(after_dollar) = rest.strip_prefix(b"$") {
            let Some(crlf) = after_dollar.iter().position(|&b| b == b'\r') else {
                break;
            };
            let len: usize = std::str::from_utf8(&after_dollar[..crlf])
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let start = crlf + 2;
            let Some(arg) = after_dollar.get(start..start + len) else {
                break;
            };
            out.push(arg);
            rest = after_dollar.get(start + len + 2..).unwrap_or(&[]);
        }
        out
    }

    /// Rewrites the header for the current argument count.
    fn seal(&mut self) {
        if self.argc < 10 {
            // Nearly every command: written at once (this runs after every argument).
            let start = HEADER_ROOM - 4;
            self.buf[start..HEADER_ROOM].copy_from_slice(&[
                b'*',
                b'0' + self.argc as u8,
                b'\r',
                b'\n',
            ]);
            self.header_start = start;
            return;
        }
        let mut digits = [0u8; 20];
        let mut n = self.argc;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let len = 1 + (digits.len() - i) + 2;
        let start = HEADER_ROOM - len;
        self.buf[start] = b'*';
        self.buf[start + 1..HEADER_ROOM - 2].copy_from_slice(&digits[i..]);
        self.buf[HEADER_ROOM - 2] = b'\r';
        self.buf[HEADER_ROOM - 1] = b'\n';
        self.header_start = start;
    }
}

/// Where the keys are in the buffer. Nearly every command has one key: it is kept
/// inline, so a keyed command costs no allocation for it (a batch of 10k SETs did
/// 10k of them).
#[derive(Clone, Debug, Default)]
struct KeyRanges {
    first: Option<Range<usize>>,
    rest: Vec<Range<usize>>,
}

impl KeyRanges {
    fn push(&mut self, r: Range<usize>) {
        if self.first.is_none() {
            self.first = Some(r);
        } else {
            self.rest.push(r);
        }
    }

    fn iter(&self) -> impl ExactSizeIterator<Item = Range<usize>> + '_ {
        let n = usize::from(self.first.is_some()) + self.rest.len();
        Counted {
            inner: self.first.iter().chain(self.rest.iter()).cloned(),
            left: n,
        }
    }
}

/// An iterator that knows its length (a `Chain` does not claim to).
struct Counted<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.left = self.left.saturating_sub(1);
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {}

/// Where `ToArgs` implementations write: each `write` is one argument.
pub struct ArgWriter<'a> {
    buf: &'a mut Vec<u8>,
    argc: usize,
    keys: Option<&'a mut KeyRanges>,
}

impl ArgWriter<'_> {
    /// Writes one argument.
    pub fn write(&mut self, arg: &[u8]) {
        let before = self.buf.len();
        write_arg(self.buf, arg);
        self.added(before);
    }

    /// Writes one integer argument without allocating.
    pub fn write_int(&mut self, n: i64) {
        let before = self.buf.len();
        crate::resp::write_int_arg(self.buf, n);
        self.added(before);
    }

    /// Counts the argument written at `before` and, for keys, remembers where its
    /// payload is (after the `$len\r\n` header, before the closing CRLF).
    fn added(&mut self, before: usize) {
        self.argc += 1;
        if let Some(keys) = self.keys.as_deref_mut() {
            let end = self.buf.len() - 2;
            let header_len = self.buf[before..end]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            keys.push(before + header_len..end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_count_is_right_on_both_sides_of_ten() {
        let mut cmd = Cmd::new("RPUSH").key("k");
        for i in 0..12 {
            cmd = cmd.arg(i);
            let header = format!("*{}\r\n", i + 3);
            assert!(cmd.frame().starts_with(header.as_bytes()), "{i}");
        }
        assert!(cmd.frame().ends_with(b"$2\r\n11\r\n"));
    }

    #[test]
    fn keys_and_args_are_found_again() {
        let cmd = Cmd::new("MSET").key("a\r\nb").arg(1).key(42).arg("v");
        let keys: Vec<&[u8]> = cmd.keys().collect();
        assert_eq!(keys, vec![&b"a\r\nb"[..], &b"42"[..]]);
        assert_eq!(cmd.argv(), vec![&b"MSET"[..], b"a\r\nb", b"1", b"42", b"v"]);
        let sub = Cmd::new("CLIENT SETNAME").arg("n");
        assert_eq!(sub.argv(), vec![&b"CLIENT"[..], b"SETNAME", b"n"]);
        assert_eq!(
            sub.frame(),
            b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$1\r\nn\r\n"
        );
    }
}
