//! The opted-in run of the suite: `RR_TEST_MAINT=on` makes every client a test builds
//! through this module ask for maintenance notifications, because an opted-in
//! connection takes other paths (the pipelined opt-in, pushes mid-handshake, relaxed
//! deadlines) and a change that breaks only those must fail a test.
//!
//! The one place the switch is read.
//!
//! With the switch on, a client configuration that does not set `maintNotifications`
//! (nor a provider's `defaults=`) gets:
//! - `enabled` when it names only servers that are not real `redis-server`s (the
//!   testkit's fakes accept the opt-in unless told otherwise): the connection is
//!   refused if the opt-in does not go live, so a silent regression cannot pass;
//! - `auto` when it names a real server (Redis 7 refuses the subcommand, so `enabled`
//!   could never connect; `auto` still sends the opt-in in the pipelined first round
//!   and absorbs the refusal), or when it forces RESP2 (no opt-in possible).
//!
//! Tests of the opt-in itself set `maintNotifications` explicitly and are left alone.
use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use resilient_redis::config::{MaintNotifications, Protocol};
use resilient_redis::Options;

/// The environment variable: `on` (or `1`) turns the opted-in run on.
pub const SWITCH: &str = "RR_TEST_MAINT";

/// Whether this run opts every client in.
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| match std::env::var(SWITCH) {
        Err(_) => false,
        Ok(v) => match v.to_ascii_lowercase().as_str() {
            "" | "0" | "off" => false,
            "1" | "on" => true,
            // A typo must not quietly run the suite without the opt-in.
            other => panic!("{SWITCH}={other}: expected on or off"),
        },
    })
}

/// Ports of real `redis-server`s (and sentinels) started by this test binary.
static REAL: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// Records that `port` belongs to a real server (called by `support::free_port`).
pub fn note_real_server(port: u16) {
    REAL.lock().unwrap_or_else(|e| e.into_inner()).insert(port);
}

fn is_real(port: u16) -> bool {
    REAL.lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&port)
}

/// The mode the switch asks for with these options, or `None` to leave them alone.
fn mode_for(o: &Options, best_effort: bool) -> Option<MaintNotifications> {
    if !on() || o.maint_notifications != MaintNotifications::Disabled || o.defaults.is_some() {
        return None;
    }
    let real = o.endpoints.iter().any(|e| is_real(e.port));
    if best_effort || real || o.protocol == Some(Protocol::Resp2) {
        Some(MaintNotifications::Auto)
    } else {
        Some(MaintNotifications::Enabled)
    }
}

/// A client configuration as the switch wants it: `Options`, a URL or an option
/// string in, the same kind out (text stays text, so a test of a parse error still
/// gets its error from `Client::connect`).
pub trait OptIn {
    type Out;
    fn opt_in(self, best_effort: bool) -> Self::Out;
}

impl OptIn for Options {
    type Out = Options;
    fn opt_in(mut self, best_effort: bool) -> Options {
        if let Some(mode) = mode_for(&self, best_effort) {
            self.maint_notifications = mode;
        }
        self
    }
}

impl OptIn for &Options {
    type Out = Options;
    fn opt_in(self, best_effort: bool) -> Options {
        self.clone().opt_in(best_effort)
    }
}

impl OptIn for String {
    type Out = String;
    fn opt_in(self, best_effort: bool) -> String {
        text(&self, best_effort)
    }
}

impl OptIn for &String {
    type Out = String;
    fn opt_in(self, best_effort: bool) -> String {
        text(self, best_effort)
    }
}

impl OptIn for &str {
    type Out = String;
    fn opt_in(self, best_effort: bool) -> String {
        text(self, best_effort)
    }
}

/// `config` with the switch's setting (see the module docs).
pub fn opt_in<T: OptIn>(config: T) -> T::Out {
    config.opt_in(false)
}

/// `config` with `auto` under the switch, for a server that cannot take the opt-in
/// (a fake told to refuse it or to speak RESP2 only): the opt-in is still sent.
pub fn opt_in_auto<T: OptIn>(config: T) -> T::Out {
    config.opt_in(true)
}

fn text(s: &str, best_effort: bool) -> String {
    let Ok(parsed) = Options::parse(s) else {
        return s.to_string();
    };
    // An explicit `maintNotifications=disabled` parses to the default: look at the text.
    if s.to_ascii_lowercase().contains("maintnotifications") {
        return s.to_string();
    }
    let Some(mode) = mode_for(&parsed, best_effort) else {
        return s.to_string();
    };
    let value = match mode {
        MaintNotifications::Enabled => "enabled",
        _ => "auto",
    };
    let edited = if s.contains("://") {
        let sep = if s.contains('?') { '&' } else { '?' };
        format!("{s}{sep}maintNotifications={value}")
    } else {
        format!("{s},maintNotifications={value}")
    };
    // After an unquoted password the appended item could become part of it.
    match Options::parse(&edited) {
        Ok(o) if o.maint_notifications == mode && same_password(&o, &parsed) => edited,
        _ => s.to_string(),
    }
}

fn same_password(a: &Options, b: &Options) -> bool {
    a.password.as_ref().map(|p| p.expose().to_string())
        == b.password.as_ref().map(|p| p.expose().to_string())
}
