//! Faults on demand, per server, switchable at run time from the test thread.
//!
//! Owns: the fault switches and what they mean for one connection's next step. Must
//! never: block a thread other than the affected connection's own (a hang parks only
//! connection threads; delays only hold a connection's outbox).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::conn::ConnHandle;
use super::rng;
use super::server::ServerInner;
use super::FakeServer;

#[derive(Default)]
struct Switches {
    delay: Option<Duration>,
    jitter: Option<Duration>,
    failures: HashMap<String, String>,
    /// (generation, n): each connection answers n more commands, then drops.
    close_after: Option<(u64, u64)>,
    generation: u64,
}

/// The fault switches of one server.
#[derive(Default)]
pub(crate) struct Faults {
    switches: Mutex<Switches>,
    hung: AtomicBool,
    changed: Condvar,
    parked: Mutex<()>,
}

impl Faults {
    pub(crate) fn is_hung(&self) -> bool {
        self.hung.load(Ordering::Acquire)
    }

    /// Wakes connection threads parked by a hang (on un-hang and shutdown).
    pub(crate) fn wake(&self) {
        let _guard = self.parked.lock();
        self.changed.notify_all();
    }

    /// Parks the connection's thread while the server hangs; `false` when the
    /// connection or server closed meanwhile.
    pub(crate) fn wait_while_hung(&self, conn: &ConnHandle, server: &ServerInner) -> bool {
        let mut guard = self.parked.lock();
        while self.is_hung() {
            if conn.is_closed() || server.is_shutdown() {
                return false;
            }
            self.changed.wait_for(&mut guard, Duration::from_millis(50));
        }
        !(conn.is_closed() || server.is_shutdown())
    }

    /// When a reply produced now should be written (delay plus jitter).
    pub(crate) fn reply_due(&self, now: Instant) -> Instant {
        let s = self.switches.lock();
        let mut due = now;
        if let Some(d) = s.delay {
            due += d;
        }
        if let Some(j) = s.jitter {
            due += rng::duration_below(j);
        }
        due
    }

    /// The injected error for a command (uppercase name), if any.
    pub(crate) fn injected(&self, name: &str) -> Option<String> {
        let s = self.switches.lock();
        if s.failures.is_empty() {
            return None;
        }
        s.failures
            .get(name)
            .or_else(|| family(name).and_then(|f| s.failures.get(f)))
            .cloned()
    }

    /// Counts a command against `close_after_commands`; `true` when the connection
    /// must drop now, unanswered.
    pub(crate) fn close_now(&self, budget: &mut Option<(u64, u64)>) -> bool {
        let s = self.switches.lock();
        let Some((generation, n)) = s.close_after else {
            *budget = None;
            return false;
        };
        let (g, used) = budget.get_or_insert((generation, 0));
        if *g != generation {
            *g = generation;
            *used = 0;
        }
        if *used >= n {
            return true;
        }
        *used += 1;
        false
    }
}

/// Faults, switchable at run time from any thread.
impl FakeServer {
    /// Stops answering (`true`), like a server stopped with SIGSTOP: sockets stay
    /// open, connections are accepted by the kernel, nothing is read, executed or
    /// written. `hang(false)` resumes: commands that arrived meanwhile are then
    /// executed and everything held (replies, pushes) is **released**, in order, as
    /// SIGCONT would; a client that gave up on them must discard the late replies.
    pub fn hang(&self, on: bool) {
        self.inner.faults.hung.store(on, Ordering::Release);
        if !on {
            self.inner.faults.wake();
            for c in self.inner.connections() {
                c.flush(false);
            }
        }
    }

    /// Closes every open connection now (clients see the socket closed); the server
    /// goes on accepting new ones. Returns once their threads have let go.
    pub fn close_all_connections(&self) {
        self.inner.close_all();
    }

    /// `true`: stops listening, so new connections fail at once with "connection
    /// refused" (what a stopped process gives); open connections are left alone
    /// (combine with [`close_all_connections`](Self::close_all_connections) to
    /// model a crash). `false`: listens again on the same port. Returns once the
    /// change is in effect.
    pub fn refuse_connections(&self, refuse: bool) {
        self.set_refusing(refuse);
    }

    /// Delays every reply by `delay` (`None`: no delay) — like network latency: the
    /// replies to the commands of one read are written together, `delay` after that
    /// read (as a network delays a segment whole), replies keep their order, and a
    /// pipelined batch is answered `delay` later (not n × `delay`).
    /// Push frames are not delayed but never overtake a delayed reply.
    pub fn delay_replies(&self, delay: Option<Duration>) {
        self.inner.faults.switches.lock().delay = delay.filter(|d| !d.is_zero());
    }

    /// Delays each reply by a random duration in `0..max` (on top of any
    /// [`delay_replies`](Self::delay_replies)); replies still keep their order on
    /// each connection. `Duration::ZERO` turns jitter off.
    pub fn jitter(&self, max: Duration) {
        self.inner.faults.switches.lock().jitter = Some(max).filter(|d| !d.is_zero());
    }

    /// Answers every `command` (case-insensitive) with `error` instead of running it,
    /// e.g. `fail_command("GET", "-LOADING Redis is loading the dataset in memory")`.
    /// The leading `-` is optional. Applies before anything else (authentication,
    /// redirects, MULTI queueing), also to commands the fake does not implement.
    ///
    /// It matches the command name as sent on the wire, and for `INCR` and `DECR` also
    /// their `BY` forms, which is what the typed `incr` and `decr` send: a rule for
    /// `INCR` fails `db.incr(..)` as a user expects (a rule for `INCRBY` fails only
    /// `INCRBY`).
    pub fn fail_command(&self, command: &str, error: &str) {
        let text = error.strip_prefix('-').unwrap_or(error).to_string();
        self.inner
            .faults
            .switches
            .lock()
            .failures
            .insert(command.to_ascii_uppercase(), text);
    }

    /// Changes the password `user` (`default` included) logs in with from now on, as a
    /// rotation or a renewed token does; connections already authenticated stay so
    /// until [`expire_credentials`](Self::expire_credentials).
    pub fn set_password(&self, user: &str, password: &str) {
        let config = &self.inner.config;
        if user == "default" {
            *config.password.lock() = Some(password.to_string());
        } else {
            config
                .users
                .lock()
                .insert(user.to_string(), password.to_string());
        }
    }

    /// Ends the credentials of `user` that are no longer its password: every connection
    /// still authenticated with an old one is closed (as a server does when a token
    /// expires), while those that re-authenticated with the current one stay. Returns
    /// how many were closed.
    pub fn expire_credentials(&self, user: &str) -> usize {
        let config = &self.inner.config;
        let current = if user == "default" {
            config.password.lock().clone()
        } else {
            config.users.lock().get(user).cloned()
        };
        let stale: Vec<_> = self
            .inner
            .connections()
            .into_iter()
            .filter(|c| {
                c.state
                    .lock()
                    .auth
                    .as_ref()
                    .is_some_and(|(u, p)| u == user && Some(p) != current.as_ref())
            })
            .collect();
        for c in &stale {
            c.close();
        }
        stale.len()
    }

    /// Removes every [`fail_command`](Self::fail_command) rule.
    pub fn clear_failures(&self) {
        self.inner.faults.switches.lock().failures.clear();
    }

    /// Every connection (open now or opened later) answers `n` more commands
    /// (handshake commands included), then drops without answering the next one.
    /// `None` turns it off.
    pub fn close_after_commands(&self, n: Option<u64>) {
        let mut s = self.inner.faults.switches.lock();
        s.generation += 1;
        s.close_after = n.map(|n| (s.generation, n));
    }

    /// Turns every fault off: no hang, no delay or jitter, no injected errors, no
    /// close-after, listening.
    pub fn clear_faults(&self) {
        {
            let mut s = self.inner.faults.switches.lock();
            s.delay = None;
            s.jitter = None;
            s.failures.clear();
            s.close_after = None;
        }
        self.hang(false);
        self.refuse_connections(false);
    }
}

/// The short command a typed method's wire form stands for (`INCRBY` is how `incr` is
/// sent), so a rule set on the short name also fires for it.
fn family(name: &str) -> Option<&'static str> {
    match name {
        "INCRBY" => Some("INCR"),
        "DECRBY" => Some("DECR"),
        _ => None,
    }
}
