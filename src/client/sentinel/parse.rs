//! Reading sentinel replies and announcements (socket-free, tested as tables).

use crate::client::roles::decide::port_of;
use crate::config::Endpoint;
use crate::resp::Value;

fn text(v: &Value) -> Option<&str> {
    std::str::from_utf8(v.as_bytes()?).ok()
}

/// `SENTINEL GET-MASTER-ADDR-BY-NAME`: `[ip, port]`; `None` for a nil (the sentinel
/// does not know the service) or anything else.
pub(crate) fn master_addr(v: &Value) -> Option<Endpoint> {
    match v {
        Value::Array(items) if items.len() == 2 => {
            let host = text(&items[0]).filter(|h| !h.is_empty())?;
            Some(Endpoint::new(host, port_of(&items[1])?))
        }
        _ => None,
    }
}

/// The field pairs of one instance in a `SENTINEL SENTINELS` / `REPLICAS` reply: a
/// flat array of names and values (RESP2) or a map (RESP3).
fn fields(v: &Value) -> Vec<(&str, &Value)> {
    match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|p| match p {
                [k, v] => Some((text(k)?, v)),
                _ => None,
            })
            .collect(),
        Value::Map(pairs) => pairs
            .iter()
            .filter_map(|(k, v)| Some((text(k)?, v)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The addresses of the healthy instances in a `SENTINEL SENTINELS` / `REPLICAS`
/// reply: those whose flags say neither down nor disconnected.
pub(crate) fn instances(v: &Value) -> Vec<Endpoint> {
    let list = match v {
        Value::Array(items) | Value::Set(items) => items,
        _ => return Vec::new(),
    };
    list.iter()
        .filter_map(|instance| {
            let f = fields(instance);
            let get = |name: &str| f.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
            let host = get("ip").and_then(text).filter(|h| !h.is_empty())?;
            let port = get("port").and_then(port_of)?;
            let flags = get("flags").and_then(text).unwrap_or("");
            let down = flags
                .split(',')
                .any(|f| matches!(f, "s_down" | "o_down" | "disconnected"));
            (!down).then(|| Endpoint::new(host, port))
        })
        .collect()
}

/// A `+switch-master` message for `service`: `<name> <old ip> <old port> <new ip>
/// <new port>` gives the new primary. Other channels, services or shapes: `None`.
pub(crate) fn switch_master(frame: &Value, service: &str) -> Option<Endpoint> {
    let items = match frame {
        Value::Array(items) | Value::Push(items) => items,
        _ => return None,
    };
    let (channel, payload) = match items.as_slice() {
        [kind, channel, payload] if text(kind)? == "message" => (channel, payload),
        [kind, _pattern, channel, payload] if text(kind)? == "pmessage" => (channel, payload),
        _ => return None,
    };
    if text(channel)? != "+switch-master" {
        return None;
    }
    let words: Vec<&str> = text(payload)?.split_whitespace().collect();
    match words.as_slice() {
        [name, _, _, host, port] if *name == service => {
            Some(Endpoint::new(*host, port.parse().ok()?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn master_addresses_are_read_and_nil_or_junk_is_none() {
        let ep = Endpoint::new("127.0.0.1", 6380);
        let table = vec![
            (
                Value::Array(vec![b("127.0.0.1"), b("6380")]),
                Some(ep.clone()),
            ),
            (
                Value::Array(vec![b("127.0.0.1"), Value::Int(6380)]),
                Some(ep),
            ),
            (Value::Nil, None),
            (Value::Array(vec![b("127.0.0.1")]), None),
            (Value::Array(vec![b(""), b("6380")]), None),
            (Value::Array(vec![b("h"), b("99999")]), None),
            (Value::Array(vec![b("h"), b("port")]), None),
            (
                Value::Error("ERR No such master with that name".into()),
                None,
            ),
        ];
        for (reply, want) in table {
            assert_eq!(master_addr(&reply), want, "{reply:?}");
        }
    }

    #[test]
    fn instances_skip_the_down_and_the_malformed() {
        let inst = |ip: &str, port: &str, flags: &str| {
            Value::Array(vec![
                b("name"),
                b("x"),
                b("ip"),
                b(ip),
                b("port"),
                b(port),
                b("flags"),
                b(flags),
            ])
        };
        let reply = Value::Array(vec![
            inst("10.0.0.1", "6379", "slave"),
            inst("10.0.0.2", "6379", "s_down,slave"),
            inst("10.0.0.3", "6379", "slave,disconnected"),
            inst("10.0.0.4", "nope", "slave"),
            Value::Array(vec![b("ip")]),
            Value::Int(3),
            Value::Map(vec![
                (b("ip"), b("10.0.0.5")),
                (b("port"), Value::Int(26379)),
            ]),
        ]);
        assert_eq!(
            instances(&reply),
            vec![
                Endpoint::new("10.0.0.1", 6379),
                Endpoint::new("10.0.0.5", 26379)
            ]
        );
        assert!(instances(&Value::Nil).is_empty());
    }

    #[test]
    fn switch_master_is_read_for_our_service_only() {
        let msg =
            |channel: &str, payload: &str| Value::Array(vec![b("message"), b(channel), b(payload)]);
        let table = vec![
            (
                msg("+switch-master", "mymaster 127.0.0.1 6379 127.0.0.1 6380"),
                Some(Endpoint::new("127.0.0.1", 6380)),
            ),
            (
                msg("+switch-master", "other 127.0.0.1 6379 127.0.0.1 6380"),
                None,
            ),
            (msg("+sdown", "master mymaster 127.0.0.1 6379"), None),
            (
                msg("+switch-master", "mymaster 127.0.0.1 6379 127.0.0.1"),
                None,
            ),
            (msg("+switch-master", "mymaster a 1 b 70000"), None),
            (
                Value::Array(vec![b("subscribe"), b("+switch-master"), Value::Int(1)]),
                None,
            ),
            (
                Value::Push(vec![
                    b("message"),
                    b("+switch-master"),
                    b("mymaster 10.0.0.1 6379 10.0.0.2 6379"),
                ]),
                Some(Endpoint::new("10.0.0.2", 6379)),
            ),
        ];
        for (frame, want) in table {
            assert_eq!(switch_master(&frame, "mymaster"), want, "{frame:?}");
        }
    }
}
