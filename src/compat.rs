//! redis-rs compatibility (feature `redis-compat`): `redis::ConnectionLike` for
//! [`Database`], so code written against redis-rs's `Commands` trait runs unchanged
//! on our client, including through a failover group.
//!
//! ```no_run
//! # #[cfg(feature = "redis-compat")] {
//! use redis::Commands; // redis-rs's trait, not ours
//! let client = resilient_redis::Client::connect("redis://127.0.0.1:6379")?;
//! let mut con = client.database();
//! let _: () = con.set("k", 1).unwrap();
//! let v: i64 = con.get("k").unwrap();
//! # let _ = v; }
//! # Ok::<(), resilient_redis::Error>(())
//! ```
//!
//! Commands arrive packed, without knowing which arguments are keys, so they run with
//! retry category `Never` and, in a cluster, are routed like keyless commands: use
//! this on standalone deployments and groups of them.

use std::io;

use crate::commands::{Cmd, Database};
use crate::error::{Error, ErrorKind};
use crate::resp::{Decoder, Value};

/// Splits packed commands (RESP arrays of bulk strings) back into `Cmd`s.
fn unpack(packed: &[u8]) -> redis::RedisResult<Vec<Cmd>> {
    let mut decoder = Decoder::new();
    decoder.feed(packed);
    let mut cmds = Vec::new();
    loop {
        match decoder.decode() {
            Ok(Some(Value::Array(args))) => {
                let mut args = args.into_iter().map(|a| match a {
                    Value::BulkString(b) => Ok(b),
                    other => Err(invalid(format!(
                        "a command argument was {}",
                        other.type_name()
                    ))),
                });
                let name = match args.next() {
                    Some(name) => String::from_utf8_lossy(&name?).into_owned(),
                    None => return Err(invalid("an empty command".into())),
                };
                let mut cmd = Cmd::new(name);
                for arg in args {
                    cmd.push_arg(arg?);
                }
                cmds.push(cmd);
            }
            Ok(Some(other)) => {
                return Err(invalid(format!(
                    "a packed command was {}",
                    other.type_name()
                )))
            }
            Ok(None) => break,
            Err(e) => return Err(invalid(e.to_string())),
        }
    }
    Ok(cmds)
}

fn invalid(detail: String) -> redis::RedisError {
    redis::RedisError::from(io::Error::new(io::ErrorKind::InvalidInput, detail))
}

/// Our errors as redis-rs errors: server errors keep their code; connection-level
/// faults become IO errors so redis-rs users' retry logic sees them as such.
fn to_redis_error(e: Error) -> redis::RedisError {
    let io_kind = match e.kind() {
        ErrorKind::Timeout => Some(io::ErrorKind::TimedOut),
        ErrorKind::ConnectionClosed | ErrorKind::Closed => Some(io::ErrorKind::ConnectionReset),
        ErrorKind::Io | ErrorKind::Connect | ErrorKind::Tls | ErrorKind::Protocol => {
            Some(io::ErrorKind::Other)
        }
        _ => None,
    };
    match io_kind {
        Some(kind) => redis::RedisError::from(io::Error::new(kind, e.to_string())),
        None => {
            let detail = e.detail().to_string();
            let (code, rest) = match detail.split_once(' ') {
                Some((c, r)) => (c.to_string(), Some(r.to_string())),
                None => (detail, None),
            };
            redis::make_extension_error(code, rest)
        }
    }
}

/// One of our values as a redis-rs value; an error reply becomes an `Err`.
fn to_redis_value(v: Value) -> redis::RedisResult<redis::Value> {
    let list = |items: Vec<Value>| -> redis::RedisResult<Vec<redis::Value>> {
        items.into_iter().map(to_redis_value).collect()
    };
    let pairs =
        |pairs: Vec<(Value, Value)>| -> redis::RedisResult<Vec<(redis::Value, redis::Value)>> {
            pairs
                .into_iter()
                .map(|(k, v)| Ok((to_redis_value(k)?, to_redis_value(v)?)))
                .collect()
        };
    Ok(match v {
        Value::SimpleString(s) if s == "OK" => redis::Value::Okay,
        Value::SimpleString(s) => redis::Value::SimpleString(s),
        Value::Error(m) | Value::BulkError(m) => {
            return Err(to_redis_error(Error::from_server_reply(&m)))
        }
        Value::Int(i) => redis::Value::Int(i),
        Value::BulkString(b) => redis::Value::BulkString(b),
        Value::Array(items) => redis::Value::Array(list(items)?),
        Value::Nil => redis::Value::Nil,
        Value::Double(d) => redis::Value::Double(d),
        Value::Boolean(b) => redis::Value::Boolean(b),
        Value::BigNumber(n) => redis::Value::BigNumber(n.into_bytes()),
        Value::VerbatimString { format, text } => redis::Value::VerbatimString {
            format: match format.as_str() {
                "txt" => redis::VerbatimFormat::Text,
                "mkd" => redis::VerbatimFormat::Markdown,
                other => redis::VerbatimFormat::Unknown(other.to_string()),
            },
            text: String::from_utf8_lossy(&text).into_owned(),
        },
        Value::Map(p) => redis::Value::Map(pairs(p)?),
        Value::Set(items) => redis::Value::Set(list(items)?),
        Value::Attribute { data, attributes } => redis::Value::Attribute {
            data: Box::new(to_redis_value(*data)?),
            attributes: pairs(attributes)?,
        },
        Value::Push(items) => redis::Value::Array(list(items)?),
    })
}

impl redis::ConnectionLike for Database {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        let mut cmds = unpack(cmd)?;
        let cmd = match (cmds.pop(), cmds.is_empty()) {
            (Some(c), true) => c,
            _ => return Err(invalid("expected exactly one packed command".into())),
        };
        let reply = self.query::<Value>(&cmd);
        match reply {
            Ok(v) => to_redis_value(v),
            Err(e) => Err(to_redis_error(e)),
        }
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        let cmds = unpack(cmd)?;
        let atomic = cmds
            .first()
            .is_some_and(|c| c.name().eq_ignore_ascii_case("MULTI"));
        let replies = self.send_many(&cmds, atomic).map_err(to_redis_error)?;
        // redis-rs skips the replies of MULTI and the QUEUED acknowledgements itself
        // through `offset`, and reads EXEC's array as the pipeline's result.
        let selected: Vec<Result<Value, Error>> =
            replies.into_iter().skip(offset).take(count).collect();
        let mut out = Vec::with_capacity(selected.len());
        for v in selected {
            let v = v.map_err(to_redis_error)?;
            // In a pipeline an error reply belongs to its slot, not to the whole call.
            out.push(match v {
                Value::Error(m) | Value::BulkError(m) => {
                    let e = to_redis_error(Error::from_server_reply(&m));
                    return Err(e);
                }
                v => to_redis_value(v)?,
            });
        }
        Ok(out)
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn check_connection(&mut self) -> bool {
        self.query::<String>(&Cmd::new("PING")).is_ok()
    }

    fn is_open(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_commands_round_trip() {
        let packed = redis::cmd("SET")
            .arg("k")
            .arg(b"v\r\n")
            .get_packed_command();
        let cmds = unpack(&packed).unwrap();
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0].frame(), &packed[..]);
        assert!(unpack(b"*1\r\n:1\r\n").is_err());
    }

    #[test]
    fn values_and_errors_convert() {
        assert_eq!(
            to_redis_value(Value::SimpleString("OK".into())).unwrap(),
            redis::Value::Okay
        );
        assert_eq!(
            to_redis_value(Value::Map(vec![(Value::Int(1), Value::Nil)])).unwrap(),
            redis::Value::Map(vec![(redis::Value::Int(1), redis::Value::Nil)])
        );
        let e = to_redis_value(Value::Error("WRONGTYPE Operation".into())).unwrap_err();
        assert_eq!(e.code(), Some("WRONGTYPE"));
        let io = to_redis_error(Error::new(ErrorKind::Timeout, "slow"));
        assert!(io.is_timeout());
    }
}
