//! Reading requests the way the real server does: multibulk (`*N` then `N` bulk
//! strings) or inline (a line split on whitespace, with quotes).
//!
//! Owns: bytes -> argument vectors, and the real server's protocol error texts. Must
//! never: allocate what a peer merely declares (a bulk is copied only once it is all
//! in the buffer), or accept a frame the real server would refuse.

/// Longest inline request or `*`/`$` header line the real server accepts (64 KiB).
const MAX_INLINE: usize = 64 * 1024;
/// Largest multibulk count the real server accepts from an unauthenticated peer and
/// the default `proto-max-bulk-len`.
const MAX_MULTIBULK: i64 = 1024 * 1024;
const MAX_BULK: i64 = 512 * 1024 * 1024;

/// One request parsed out of the front of a buffer.
#[derive(Debug, PartialEq)]
pub(crate) struct Parsed {
    /// The arguments; empty for an empty inline line or `*0` (ignored, like the server).
    pub args: Vec<Vec<u8>>,
    /// Bytes of the buffer the request used.
    pub used: usize,
}

/// Parses the request at the start of `buf`: `Ok(None)` when more bytes are needed,
/// `Err(text)` with the server's `Protocol error: ...` text when the peer broke the
/// protocol (the server answers it and closes the connection).
pub(crate) fn parse(buf: &[u8]) -> Result<Option<Parsed>, String> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_multibulk(buf),
        Some(_) => parse_inline(buf),
    }
}

fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let rest = &buf[from..];
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let end = if nl > 0 && rest[nl - 1] == b'\r' {
        nl - 1
    } else {
        nl
    };
    Some((&rest[..end], from + nl + 1))
}

fn number(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn parse_multibulk(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let Some((head, mut pos)) = line(buf, 0) else {
        if buf.len() > MAX_INLINE {
            return Err("Protocol error: too big mbulk count string".into());
        }
        return Ok(None);
    };
    let count = match number(&head[1..]) {
        Some(n) if n <= MAX_MULTIBULK => n,
        _ => return Err("Protocol error: invalid multibulk length".into()),
    };
    if count <= 0 {
        return Ok(Some(Parsed {
            args: Vec::new(),
            used: pos,
        }));
    }
    let mut args = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        let Some((head, after)) = line(buf, pos) else {
            if buf.len() - pos > MAX_INLINE {
                return Err("Protocol error: too big bulk count string".into());
            }
            return Ok(None);
        };
        match head.first() {
            Some(b'$') => {}
            Some(&c) => return Err(format!("Protocol error: expected '$', got '{}'", c as char)),
            None => return Err("Protocol error: expected '$', got ' '".into()),
        }
        let len = match number(&head[1..]) {
            Some(n) if (0..=MAX_BULK).contains(&n) => n as usize,
            _ => return Err("Protocol error: invalid bulk length".into()),
        };
        if buf.len() < after + len + 2 {
            return Ok(None);
        }
        args.push(buf[after..after + len].to_vec());
        pos = after + len + 2;
    }
    Ok(Some(Parsed { args, used: pos }))
}

fn parse_inline(buf: &[u8]) -> Result<Option<Parsed>, String> {
    let Some((text, used)) = line(buf, 0) else {
        if buf.len() > MAX_INLINE {
            return Err("Protocol error: too big inline request".into());
        }
        return Ok(None);
    };
    match split_args(text) {
        Some(args) => Ok(Some(Parsed { args, used })),
        None => Err("Protocol error: unbalanced quotes in request".into()),
    }
}

/// The server's `sdssplitargs`: whitespace-separated words, `"..."` with escapes
/// (`\n \r \t \b \a \\ \" \xHH`), `'...'` with only `\'`; a closing quote must be
/// followed by whitespace or the end. `None` for unbalanced quotes.
pub(crate) fn split_args(text: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    let n = text.len();
    loop {
        while i < n && text[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Some(args);
        }
        let mut cur = Vec::new();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return None;
                }
                if text[i] == b'\\' && i + 3 < n && text[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex(text[i + 2]), hex(text[i + 3])) {
                        cur.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if text[i] == b'\\' && i + 1 < n {
                    cur.push(match text[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        c => c,
                    });
                    i += 2;
                    continue;
                }
                if text[i] == b'"' {
                    if i + 1 < n && !text[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                cur.push(text[i]);
                i += 1;
            } else if in_sq {
                if i >= n {
                    return None;
                }
                if text[i] == b'\\' && i + 1 < n && text[i + 1] == b'\'' {
                    cur.push(b'\'');
                    i += 2;
                    continue;
                }
                if text[i] == b'\'' {
                    if i + 1 < n && !text[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                cur.push(text[i]);
                i += 1;
            } else {
                if i >= n || text[i].is_ascii_whitespace() {
                    break;
                }
                match text[i] {
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => cur.push(c),
                }
                i += 1;
            }
        }
        args.push(cur);
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(p: Option<Parsed>) -> Vec<String> {
        p.unwrap()
            .args
            .into_iter()
            .map(|a| String::from_utf8(a).unwrap())
            .collect()
    }

    #[test]
    fn multibulk_whole_and_split_at_every_byte() {
        let frame = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        assert_eq!(args(parse(frame).unwrap()), ["GET", "key"]);
        for cut in 0..frame.len() {
            assert_eq!(parse(&frame[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(parse(frame).unwrap().unwrap().used, frame.len());
    }

    #[test]
    fn inline_with_quotes() {
        assert_eq!(
            args(parse(b"SET k \"a b\\x41\" 'c d'\r\n").unwrap()),
            ["SET", "k", "a bA", "c d"]
        );
        assert!(parse(b"SET \"k\r\n").is_err());
        assert_eq!(parse(b"\r\n").unwrap().unwrap().args.len(), 0);
    }

    #[test]
    fn protocol_errors_use_server_texts() {
        assert_eq!(
            parse(b"*2\r\n:1\r\n").unwrap_err(),
            "Protocol error: expected '$', got ':'"
        );
        assert_eq!(
            parse(b"*x\r\n").unwrap_err(),
            "Protocol error: invalid multibulk length"
        );
        assert_eq!(
            parse(b"*1\r\n$-5\r\n").unwrap_err(),
            "Protocol error: invalid bulk length"
        );
    }

    #[test]
    fn declared_length_is_not_allocated() {
        // 512 MiB declared, nothing sent: needs more, allocates nothing big.
        assert_eq!(parse(b"*1\r\n$536870912\r\nab").unwrap(), None);
    }
}
