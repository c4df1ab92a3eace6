//! A fake Redis Sentinel: answers the `SENTINEL` queries a client makes
//! (`GET-MASTER-ADDR-BY-NAME`, `SENTINELS`, `REPLICAS`), takes `SUBSCRIBE`, and
//! publishes `+switch-master` when told to, so code can be tested against a switch of
//! primary without starting real sentinels.
//!
//! Owns: its listener and connection threads (`fake-sentinel …`, all joined when it is
//! dropped or shut down). Must never: block a control call on a client.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;

use crate::resp::{encode_value_resp2, Decoder, Value};

/// What the fake sentinel answers, switchable at run time.
#[derive(Debug)]
struct State {
    service: String,
    primary: SocketAddr,
    replicas: Vec<SocketAddr>,
    sentinels: Vec<SocketAddr>,
    password: Option<String>,
    /// Answer `GET-MASTER-ADDR-BY-NAME` with a nil (the service is unknown here).
    forget_service: bool,
    /// Answer every query with an error (a sentinel that answers wrongly).
    broken: bool,
}

struct Shared {
    state: Mutex<State>,
    closed: AtomicBool,
    /// Subscribed connections (a write half each), for `+switch-master`.
    subscribers: Mutex<Vec<TcpStream>>,
    conns: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
    queries: AtomicU64,
    addr: SocketAddr,
}

/// A fake Redis Sentinel for one service, on an ephemeral port of 127.0.0.1.
///
/// ```
/// # #[cfg(feature = "testkit")] {
/// use resilient_redis::prelude::*;
/// use resilient_redis::testkit::{FakeServer, FakeSentinel};
///
/// let (a, b) = (FakeServer::start()?, FakeServer::start()?);
/// let sentinel = FakeSentinel::start("mymaster", a.addr())?;
/// let client = Client::connect(format!("{},serviceName=mymaster", sentinel.addr()))?;
/// let db = client.database();
/// db.set("k", "on a")?;
/// sentinel.switch_master(b.addr()); // publishes +switch-master
/// // The client follows at once: the next writes land on b.
/// let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
/// while b.commands_received("SET") == 0 && std::time::Instant::now() < deadline {
///     let _ = db.set("k", "on b");
///     std::thread::sleep(std::time::Duration::from_millis(10));
/// }
/// assert!(b.commands_received("SET") > 0);
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FakeSentinel {
    shared: Arc<Shared>,
    accept: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for FakeSentinel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSentinel")
            .field("addr", &self.shared.addr)
            .finish_non_exhaustive()
    }
}

impl FakeSentinel {
    /// Starts a sentinel that names `primary` as the primary of `service`.
    pub fn start(service: impl Into<String>, primary: SocketAddr) -> io::Result<FakeSentinel> {
        FakeSentinel::start_with(service, primary, None)
    }

    /// Like [`start`](Self::start), requiring `AUTH <password>` (or `AUTH user
    /// <password>`) before any query.
    pub fn start_with(
        service: impl Into<String>,
        primary: SocketAddr,
        password: Option<&str>,
    ) -> io::Result<FakeSentinel> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                service: service.into(),
                primary,
                replicas: Vec::new(),
                sentinels: Vec::new(),
                password: password.map(str::to_string),
                forget_service: false,
                broken: false,
            }),
            closed: AtomicBool::new(false),
            subscribers: Mutex::new(Vec::new()),
            conns: Mutex::new(Vec::new()),
            queries: AtomicU64::new(0),
            addr,
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name(format!("fake-sentinel-accept {addr}"))
            .spawn(move || accept_loop(listener, s))?;
        Ok(FakeSentinel {
            shared,
            accept: Mutex::new(Some(accept)),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The primary it names now.
    pub fn primary(&self) -> SocketAddr {
        self.shared.state.lock().primary
    }

    /// Names `primary` from now on, without announcing it (as a sentinel whose
    /// `+switch-master` a client missed).
    pub fn set_primary(&self, primary: SocketAddr) {
        self.shared.state.lock().primary = primary;
    }

    /// Names `primary` from now on and publishes `+switch-master <service> <old ip>
    /// <old port> <new ip> <new port>` to every subscriber.
    pub fn switch_master(&self, primary: SocketAddr) {
        let (service, old) = {
            let mut st = self.shared.state.lock();
            let old = st.primary;
            st.primary = primary;
            (st.service.clone(), old)
        };
        let payload = format!(
            "{service} {} {} {} {}",
            old.ip(),
            old.port(),
            primary.ip(),
            primary.port()
        );
        let mut frame = Vec::new();
        encode_value_resp2(
            &mut frame,
            &Value::Array(vec![
                bulk("message"),
                bulk("+switch-master"),
                bulk(&payload),
            ]),
        );
        let mut subs = self.shared.subscribers.lock();
        // A subscriber that cannot take the frame is gone: forget it.
        subs.retain_mut(|s| s.write_all(&frame).is_ok());
    }

    /// The replicas `SENTINEL REPLICAS` lists.
    pub fn set_replicas(&self, replicas: Vec<SocketAddr>) {
        self.shared.state.lock().replicas = replicas;
    }

    /// The other sentinels `SENTINEL SENTINELS` lists.
    pub fn set_sentinels(&self, sentinels: Vec<SocketAddr>) {
        self.shared.state.lock().sentinels = sentinels;
    }

    /// Answer `GET-MASTER-ADDR-BY-NAME` with a nil, as a sentinel that does not
    /// monitor the service.
    pub fn forget_service(&self, forget: bool) {
        self.shared.state.lock().forget_service = forget;
    }

    /// Answer every `SENTINEL` query with an error.
    pub fn break_answers(&self, broken: bool) {
        self.shared.state.lock().broken = broken;
    }

    /// How many `SENTINEL` queries it has answered.
    pub fn queries(&self) -> u64 {
        self.shared.queries.load(Ordering::Relaxed)
    }

    /// How many connections are subscribed to `+switch-master` now.
    pub fn subscribers(&self) -> usize {
        self.shared.subscribers.lock().len()
    }

    /// Closes every connection and stops listening; idempotent.
    pub fn shutdown(&self) {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wakes the blocking accept.
        let _ = TcpStream::connect(self.shared.addr);
        if let Some(t) = self.accept.lock().take() {
            let _ = t.join();
        }
        let conns = std::mem::take(&mut *self.shared.conns.lock());
        for (stream, thread) in conns {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = thread.join();
        }
        self.shared.subscribers.lock().clear();
    }
}

impl Drop for FakeSentinel {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.closed.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        let s = shared.clone();
        let name = format!("fake-sentinel {}", shared.addr);
        if let Ok(t) = std::thread::Builder::new()
            .name(name)
            .spawn(move || serve(stream, s))
        {
            let mut conns = shared.conns.lock();
            // Finished connections are reaped here, so the list stays bounded by the
            // connections open at once.
            conns.retain(|(_, t)| !t.is_finished());
            conns.push((handle, t));
        }
    }
}

fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut decoder = Decoder::new();
    let mut authed = shared.state.lock().password.is_none();
    let mut buf = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        decoder.feed(&buf[..n]);
        loop {
            let frame = match decoder.decode() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return,
            };
            let args: Vec<String> = match frame {
                Value::Array(items) => items
                    .iter()
                    .map(|v| String::from_utf8_lossy(v.as_bytes().unwrap_or(b"")).into_owned())
                    .collect(),
                _ => return,
            };
            let reply = answer(&shared, &args, &mut authed, &stream);
            let mut out = Vec::new();
            encode_value_resp2(&mut out, &reply);
            if stream.write_all(&out).is_err() {
                return;
            }
        }
    }
}

fn answer(shared: &Shared, args: &[String], authed: &mut bool, stream: &TcpStream) -> Value {
    let err = |m: &str| Value::Error(m.to_string());
    let Some(cmd) = args.first().map(|c| c.to_ascii_uppercase()) else {
        return err("ERR empty command");
    };
    let st = shared.state.lock();
    if cmd == "AUTH" {
        let given = args.last().map(String::as_str);
        return if st.password.is_none() || st.password.as_deref() == given {
            *authed = true;
            Value::SimpleString("OK".into())
        } else {
            err("WRONGPASS invalid username-password pair or user is disabled.")
        };
    }
    if !*authed {
        return err("NOAUTH Authentication required.");
    }
    match cmd.as_str() {
        "PING" => Value::SimpleString("PONG".into()),
        "CLIENT" => Value::SimpleString("OK".into()),
        "ROLE" => Value::Array(vec![
            bulk("sentinel"),
            Value::Array(vec![bulk(&st.service)]),
        ]),
        "SUBSCRIBE" => {
            if let Ok(w) = stream.try_clone() {
                shared.subscribers.lock().push(w);
            }
            let channel = args.get(1).cloned().unwrap_or_default();
            Value::Array(vec![bulk("subscribe"), bulk(&channel), Value::Int(1)])
        }
        "SENTINEL" => {
            shared.queries.fetch_add(1, Ordering::Relaxed);
            if st.broken {
                return err("ERR the fake sentinel was told to answer wrongly");
            }
            let sub = args
                .get(1)
                .map(|s| s.to_ascii_uppercase())
                .unwrap_or_default();
            let named = args.get(2).is_some_and(|s| *s == st.service);
            match sub.as_str() {
                "GET-MASTER-ADDR-BY-NAME" if named && !st.forget_service => Value::Array(vec![
                    bulk(&st.primary.ip().to_string()),
                    bulk(&st.primary.port().to_string()),
                ]),
                "GET-MASTER-ADDR-BY-NAME" => Value::Nil,
                "SENTINELS" | "REPLICAS" | "SLAVES" if named => {
                    let (list, flags) = if sub == "SENTINELS" {
                        (&st.sentinels, "sentinel")
                    } else {
                        (&st.replicas, "slave")
                    };
                    Value::Array(
                        list.iter()
                            .map(|a| {
                                Value::Array(vec![
                                    bulk("name"),
                                    bulk(&a.to_string()),
                                    bulk("ip"),
                                    bulk(&a.ip().to_string()),
                                    bulk("port"),
                                    bulk(&a.port().to_string()),
                                    bulk("flags"),
                                    bulk(flags),
                                ])
                            })
                            .collect(),
                    )
                }
                _ => err("ERR No such master with that name"),
            }
        }
        _ => err(&format!(
            "ERR unknown command '{}', with args beginning with: ",
            args[0]
        )),
    }
}
