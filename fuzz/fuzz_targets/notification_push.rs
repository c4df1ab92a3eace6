//! The maintenance-notification parser, driven the way a server drives it: push frames
//! on a live connection of a real client (the parser is crate-private; every push frame
//! a connection receives goes through it, on the reader thread).
//!
//! Each input becomes one or more well-formed RESP3 push frames (so the decoder is not
//! what is fuzzed here): a maintenance kind name (any case) or another word, then
//! elements of every RESP3 type, with texts drawn from endpoint and slot-list shapes.
//! A scripted server writes them just before its reply to an `ECHO`. Checked: no panic
//! on any thread (libFuzzer aborts on one), the `ECHO` gets its own token back (a
//! notification never takes a reply, never breaks the stream), and every event raised
//! can be shown.
#![no_main]

use std::io::{BufRead, BufReader, Write};

use resilient_redis::prelude::*;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use resilient_redis::resp::{encode_value, Value};
use resilient_redis::ClientEvent;

struct Harness {
    db: Database,
    _client: Client,
    events: crossbeam_channel::Receiver<ClientEvent>,
    pushes: Arc<Mutex<Vec<u8>>>,
    port: u16,
}

static HARNESS: OnceLock<Harness> = OnceLock::new();
static TOKEN: AtomicU64 = AtomicU64::new(0);

fn read_command(r: &mut impl BufRead) -> Option<Vec<Vec<u8>>> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let n: usize = line.trim_end().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        r.read_line(&mut line).ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut arg = vec![0; len + 2];
        r.read_exact(&mut arg).ok()?;
        arg.truncate(len);
        args.push(arg);
    }
    Some(args)
}

fn serve(stream: TcpStream, pushes: Arc<Mutex<Vec<u8>>>) {
    let Ok(mut out) = stream.try_clone() else { return };
    let mut r = BufReader::new(stream);
    while let Some(cmd) = read_command(&mut r) {
        let name = cmd.first().map(|n| n.to_ascii_uppercase()).unwrap_or_default();
        let reply: Vec<u8> = match name.as_slice() {
            b"HELLO" => b"%3\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n+mode\r\n+standalone\r\n".to_vec(),
            b"PING" => b"+PONG\r\n".to_vec(),
            b"ECHO" => {
                let arg = cmd.get(1).cloned().unwrap_or_default();
                let mut reply = std::mem::take(&mut *pushes.lock().unwrap());
                reply.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                reply.extend_from_slice(&arg);
                reply.extend_from_slice(b"\r\n");
                reply
            }
            _ => b"+OK\r\n".to_vec(),
        };
        if out.write_all(&reply).is_err() {
            return;
        }
    }
}

fn harness() -> &'static Harness {
    HARNESS.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let pushes = Arc::new(Mutex::new(Vec::new()));
        let served = pushes.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let pushes = served.clone();
                std::thread::spawn(move || serve(stream, pushes));
            }
        });
        let client = Client::connect(format!(
            "127.0.0.1:{port},syncTimeout=10000,maintNotifications=auto,\
             maintRelaxedTimeout=0.5,maintRelaxedWindowMax=1,maintPostEventRelaxed=0.5"
        ))
        .expect("connect to the scripted server");
        Harness {
            db: client.database(),
            events: client.events(),
            _client: client,
            pushes,
            port,
        }
    })
}

const KINDS: [&str; 9] = [
    "MOVING", "MIGRATING", "MIGRATED", "FAILING_OVER", "FAILED_OVER", "SMIGRATING", "SMIGRATED",
    "moving", "message",
];

fn text(u: &mut Unstructured<'_>, port: u16) -> Vec<u8> {
    let templates: [&dyn Fn(&mut Unstructured<'_>) -> String; 8] = [
        &|_| format!("127.0.0.1:{port}"),
        &|u| format!("{}.example:{}", u.int_in_range(0..=99u8).unwrap_or(0), u.arbitrary::<u16>().unwrap_or(0)),
        &|u| format!("[::{}]:{}", u.int_in_range(0..=9u8).unwrap_or(1), u.arbitrary::<u16>().unwrap_or(0)),
        &|u| format!("{}-{}", u.arbitrary::<u16>().unwrap_or(0), u.arbitrary::<u16>().unwrap_or(0)),
        &|u| {
            let n = u.int_in_range(0..=5u8).unwrap_or(0);
            (0..n)
                .map(|_| u.int_in_range(0..=16400u16).unwrap_or(0).to_string())
                .collect::<Vec<_>>()
                .join(",")
        },
        &|_| "?".to_string(),
        &|u| u.arbitrary::<i64>().unwrap_or(0).to_string(),
        &|u| {
            let n = u.int_in_range(0..=12usize).unwrap_or(0);
            String::from_utf8_lossy(u.bytes(n).unwrap_or(&[])).into_owned()
        },
    ];
    let i = u.choose_index(templates.len()).unwrap_or(0);
    let mut t = templates[i](u).into_bytes();
    if u.ratio(1u8, 16u8).unwrap_or(false) {
        // Not UTF-8.
        t.push(0xff);
    }
    t
}

fn element(u: &mut Unstructured<'_>, depth: u32, port: u16) -> Value {
    let top = if depth >= 3 { 6 } else { 12 };
    match u.int_in_range(0..=top).unwrap_or(0) {
        0 => Value::Int(u.arbitrary().unwrap_or(0)),
        1 => Value::Int(u.int_in_range(-1..=20i64).unwrap_or(0)),
        2 => Value::BulkString(text(u, port)),
        3 => Value::SimpleString(String::from_utf8_lossy(&text(u, port)).replace(['\r', '\n'], " ")),
        4 => Value::Nil,
        5 => Value::Double(u.arbitrary().unwrap_or(0.0)),
        6 => Value::Boolean(u.arbitrary().unwrap_or(false)),
        7 => Value::BigNumber(u.arbitrary::<u64>().unwrap_or(0).to_string()),
        8 => Value::VerbatimString {
            format: "txt".into(),
            text: text(u, port),
        },
        9 => {
            // An SMIGRATED-style triplet, or an array of them.
            let n = u.int_in_range(0..=3usize).unwrap_or(0);
            Value::Array((0..n).map(|_| element(u, depth + 1, port)).collect())
        }
        10 => Value::Set((0..u.int_in_range(0..=3usize).unwrap_or(0)).map(|_| element(u, depth + 1, port)).collect()),
        11 => Value::Map(
            (0..u.int_in_range(0..=2usize).unwrap_or(0))
                .map(|_| (element(u, depth + 1, port), element(u, depth + 1, port)))
                .collect(),
        ),
        _ => Value::Push((0..u.int_in_range(0..=3usize).unwrap_or(0)).map(|_| element(u, depth + 1, port)).collect()),
    }
}

fn push(u: &mut Unstructured<'_>, port: u16) -> Value {
    let mut items = Vec::new();
    let kind = KINDS[u.choose_index(KINDS.len()).unwrap_or(0)];
    if u.ratio(15u8, 16u8).unwrap_or(true) {
        items.push(if u.arbitrary().unwrap_or(false) {
            Value::BulkString(kind.as_bytes().to_vec())
        } else {
            Value::SimpleString(kind.to_string())
        });
    }
    let n = u.int_in_range(0..=5usize).unwrap_or(0);
    for _ in 0..n {
        items.push(element(u, 0, port));
    }
    Value::Push(items)
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    let mut u = Unstructured::new(data);
    let mut wire = Vec::new();
    let count = u.int_in_range(1..=4u8).unwrap_or(1);
    for _ in 0..count {
        encode_value(&mut wire, &push(&mut u, h.port));
    }
    *h.pushes.lock().unwrap() = wire;
    let token = format!("t{}", TOKEN.fetch_add(1, Ordering::Relaxed));
    match h.db.with_timeout(Duration::from_secs(10)).echo::<String>(&token) {
        Ok(got) => assert_eq!(got, token, "a notification took a reply"),
        Err(e) => panic!("the round trip after the notifications failed: {e}"),
    }
    for event in h.events.try_iter() {
        let shown = format!("{event:?}");
        if let ClientEvent::ConnectionFailed { .. } = event {
            panic!("notifications broke the connection: {shown}");
        }
        if let ClientEvent::Maintenance(m) = &event {
            let _ = m.to_string();
        }
    }
});
