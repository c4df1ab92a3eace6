//! Combining the replies of several nodes into the one reply a command meant for all of
//! them gives, by its response policy: a sum (`DBSIZE`), every node succeeded
//! (`FLUSHDB`), arrays concatenated (`KEYS`), the least (`WAIT`), element-wise AND
//! (`SCRIPT EXISTS`).
//!
//! Pure: answers in, one reply or one error out. Must never: pass a partial answer off
//! as whole. When a node failed, the result is an error that names every node that
//! did and how, whatever the others answered (`OneSucceeded` aside, which asks for one).

use super::command_table::ResponsePolicy;
use crate::config::Endpoint;
use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// One node's answer: its reply (an error reply counts as a failure) or the error that
/// kept it from answering.
pub(crate) type Answer = (Endpoint, Result<Value>);

/// Combines the answers of every node a command went to.
pub(crate) fn combine(
    response: ResponsePolicy,
    command: &str,
    answers: Vec<Answer>,
) -> Result<Value> {
    let total = answers.len();
    let mut replies = Vec::with_capacity(total);
    let mut failures = Vec::new();
    for (endpoint, answer) in answers {
        match answer {
            Ok(v) => match v.error_message() {
                Some(m) => failures.push((endpoint, Error::from_server_reply(m))),
                None => replies.push(v),
            },
            Err(e) => failures.push((endpoint, e)),
        }
    }
    if response == ResponsePolicy::OneSucceeded {
        if let Some(first) = replies.into_iter().next() {
            return Ok(first);
        }
    } else if failures.is_empty() {
        return merge(response, replies).map_err(|e| e.with_command(command));
    }
    Err(partial(command, total, failures))
}

/// The error for answers some node did not give: the first failure's kind (so a retry
/// policy judges it as it would that node's error), every failure named.
fn partial(command: &str, total: usize, failures: Vec<(Endpoint, Error)>) -> Error {
    let kind = failures
        .first()
        .map_or(ErrorKind::Protocol, |(_, e)| e.kind());
    let named: Vec<String> = failures
        .iter()
        .map(|(ep, e)| format!("{ep}: {:?}: {}", e.kind(), e.detail()))
        .collect();
    let answered = total - failures.len();
    let mut error = Error::new(
        kind,
        format!(
            "{answered} of {total} nodes answered, so there is no whole reply; failed: {}",
            named.join("; ")
        ),
    )
    .with_command(command);
    if failures.len() == 1 {
        error = error.with_endpoint(failures[0].0.to_string());
    }
    error
}

fn mismatch(what: &str, v: &Value) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("cannot combine {what}: a node answered {}", v.type_name()),
    )
}

fn integer(v: &Value) -> Result<i64> {
    match v {
        Value::Int(n) => Ok(*n),
        Value::Boolean(b) => Ok(i64::from(*b)),
        other => Err(mismatch("integers", other)),
    }
}

/// The replies of every node (all succeeded), as one.
fn merge(response: ResponsePolicy, replies: Vec<Value>) -> Result<Value> {
    let ints = || replies.iter().map(integer).collect::<Result<Vec<i64>>>();
    match response {
        ResponsePolicy::AggSum => Ok(Value::Int(ints()?.into_iter().sum())),
        ResponsePolicy::AggMin => Ok(Value::Int(ints()?.into_iter().min().unwrap_or(0))),
        ResponsePolicy::AggMax => Ok(Value::Int(ints()?.into_iter().max().unwrap_or(0))),
        ResponsePolicy::AggLogicalAnd | ResponsePolicy::AggLogicalOr => {
            logical(response == ResponsePolicy::AggLogicalAnd, replies)
        }
        ResponsePolicy::AllSucceeded | ResponsePolicy::OneSucceeded => {
            Ok(replies.into_iter().next().unwrap_or(Value::Nil))
        }
        ResponsePolicy::Default => concatenate(replies),
        ResponsePolicy::Special => Err(Error::new(
            ErrorKind::InvalidInput,
            "a per-node reply cannot be combined",
        )),
    }
}

/// Element-wise AND (or OR) of arrays of 0/1 (`SCRIPT EXISTS` on every master).
fn logical(and: bool, replies: Vec<Value>) -> Result<Value> {
    let mut out: Option<Vec<bool>> = None;
    for reply in replies {
        let Value::Array(items) = &reply else {
            return Err(mismatch("arrays", &reply));
        };
        let bits = items
            .iter()
            .map(|v| integer(v).map(|n| n != 0))
            .collect::<Result<Vec<bool>>>()?;
        out = Some(match out {
            None => bits,
            Some(acc) if acc.len() == bits.len() => acc
                .into_iter()
                .zip(bits)
                .map(|(a, b)| if and { a && b } else { a || b })
                .collect(),
            Some(_) => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    "nodes answered arrays of different lengths",
                ))
            }
        });
    }
    Ok(Value::Array(
        out.unwrap_or_default()
            .into_iter()
            .map(|b| Value::Int(i64::from(b)))
            .collect(),
    ))
}

/// No policy: arrays (and sets) are concatenated (`KEYS`), maps merged; a reply of
/// one value is the first node's that is not nil (`RANDOMKEY`: a key of some shard).
fn concatenate(replies: Vec<Value>) -> Result<Value> {
    let Some(first) = replies.first() else {
        return Ok(Value::Nil);
    };
    match first {
        Value::Array(_) | Value::Set(_) | Value::Map(_) => {}
        _ => {
            return Ok(replies
                .into_iter()
                .find(|v| *v != Value::Nil)
                .unwrap_or(Value::Nil))
        }
    }
    let is_set = matches!(first, Value::Set(_));
    let is_map = matches!(first, Value::Map(_));
    let mut items = Vec::new();
    let mut pairs = Vec::new();
    for reply in replies {
        match reply {
            Value::Array(v) | Value::Set(v) if !is_map => items.extend(v),
            Value::Map(p) if is_map => pairs.extend(p),
            Value::Nil => {}
            other => return Err(mismatch("collections", &other)),
        }
    }
    Ok(if is_map {
        Value::Map(pairs)
    } else if is_set {
        Value::Set(items)
    } else {
        Value::Array(items)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(port: u16) -> Endpoint {
        Endpoint::new("10.0.0.1", port)
    }

    fn ok(port: u16, v: Value) -> Answer {
        (ep(port), Ok(v))
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn every_policy_as_a_table() {
        use ResponsePolicy as R;
        let ints = |a: i64, b: i64, c: i64| {
            vec![
                ok(1, Value::Int(a)),
                ok(2, Value::Int(b)),
                ok(3, Value::Int(c)),
            ]
        };
        let arrays = |a: Vec<i64>, b: Vec<i64>| {
            let arr = |v: Vec<i64>| Value::Array(v.into_iter().map(Value::Int).collect());
            vec![ok(1, arr(a)), ok(2, arr(b))]
        };
        let rows: Vec<(R, Vec<Answer>, Value)> = vec![
            (R::AggSum, ints(992, 1009, 999), Value::Int(3000)),
            (R::AggMin, ints(2, 0, 1), Value::Int(0)),
            (R::AggMax, ints(2, 0, 1), Value::Int(2)),
            (
                R::AllSucceeded,
                vec![
                    ok(1, Value::SimpleString("OK".into())),
                    ok(2, Value::SimpleString("OK".into())),
                ],
                Value::SimpleString("OK".into()),
            ),
            (
                R::AggLogicalAnd,
                arrays(vec![1, 1, 0], vec![1, 0, 0]),
                Value::Array(vec![Value::Int(1), Value::Int(0), Value::Int(0)]),
            ),
            (
                R::AggLogicalOr,
                arrays(vec![1, 0, 0], vec![0, 1, 0]),
                Value::Array(vec![Value::Int(1), Value::Int(1), Value::Int(0)]),
            ),
            (
                R::Default,
                vec![
                    ok(1, Value::Array(vec![bulk("a")])),
                    ok(2, Value::Array(vec![])),
                    ok(3, Value::Array(vec![bulk("b"), bulk("c")])),
                ],
                Value::Array(vec![bulk("a"), bulk("b"), bulk("c")]),
            ),
            (
                R::Default,
                vec![ok(1, Value::Nil), ok(2, bulk("k")), ok(3, bulk("j"))],
                bulk("k"),
            ),
            (
                R::OneSucceeded,
                vec![
                    (
                        ep(1),
                        Ok(Value::Error("NOTBUSY No scripts in execution".into())),
                    ),
                    ok(2, Value::SimpleString("OK".into())),
                ],
                Value::SimpleString("OK".into()),
            ),
        ];
        for (policy, answers, want) in rows {
            assert_eq!(combine(policy, "X", answers).unwrap(), want, "{policy:?}");
        }
    }

    #[test]
    fn a_failed_node_fails_the_whole_and_is_named() {
        let answers = vec![
            ok(1, Value::Int(10)),
            (
                ep(2),
                Err(Error::new(ErrorKind::Timeout, "no reply within 5000 ms")),
            ),
            (
                ep(3),
                Ok(Value::Error("LOADING loading the dataset".into())),
            ),
        ];
        let e = combine(ResponsePolicy::AggSum, "DBSIZE", answers).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert_eq!(e.command(), Some("DBSIZE"));
        let text = e.to_string();
        assert!(text.contains("1 of 3 nodes answered"), "{text}");
        assert!(text.contains("10.0.0.1:2: Timeout"), "{text}");
        assert!(text.contains("10.0.0.1:3: Loading"), "{text}");
        // One success is not enough unless the policy asks for one.
        let answers = vec![
            ok(1, Value::SimpleString("OK".into())),
            (
                ep(2),
                Err(Error::new(ErrorKind::ConnectionClosed, "closed")),
            ),
        ];
        let e = combine(ResponsePolicy::AllSucceeded, "FLUSHDB", answers).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionClosed);
        assert_eq!(e.endpoint(), Some("10.0.0.1:2"));
    }

    #[test]
    fn replies_that_do_not_fit_the_policy_are_a_protocol_error() {
        let e = combine(
            ResponsePolicy::AggSum,
            "DBSIZE",
            vec![ok(1, Value::Int(1)), ok(2, bulk("x"))],
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        let e = combine(
            ResponsePolicy::AggLogicalAnd,
            "SCRIPT EXISTS",
            vec![
                ok(1, Value::Array(vec![Value::Int(1)])),
                ok(2, Value::Array(vec![])),
            ],
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
    }
}
