//! Server and connection commands: `PING`, `INFO`, `DBSIZE`, `FLUSHDB`, `TIME`,
//! `WAIT`, `CLIENT`, `CONFIG`.

use std::time::Duration;

use super::time_args::millis_ceil;
use super::{Cmd, Commands, FromValue, RetryCategory::*, ToArgs};

/// Server commands (`PING`, `INFO`, `FLUSHDB`, `WAIT` ...), on `Database`, `Batch` and
/// `Transaction`.
pub trait ServerCommands: Commands {
    /// `PING`: `PONG`.
    fn ping(&self) -> Self::Out<String> {
        self.run(Cmd::typed("PING", Always))
    }

    /// `ECHO message`: the message back.
    fn echo<T: FromValue>(&self, message: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("ECHO", Always).arg(message))
    }

    /// `INFO [section]`: the server's report as text (`# Section` headers and
    /// `field:value` lines).
    fn info(&self, section: Option<&str>) -> Self::Out<String> {
        self.run(Cmd::typed("INFO", Always).arg(section))
    }

    /// `DBSIZE`: the number of keys in the selected database.
    fn dbsize(&self) -> Self::Out<i64> {
        self.run(Cmd::typed("DBSIZE", ReadOnly))
    }

    /// `FLUSHDB`: deletes every key of the selected database.
    fn flushdb(&self) -> Self::Out<()> {
        self.run(Cmd::typed("FLUSHDB", ServerAdmin))
    }

    /// `FLUSHALL`: deletes every key of every database.
    fn flushall(&self) -> Self::Out<()> {
        self.run(Cmd::typed("FLUSHALL", ServerAdmin))
    }

    /// `TIME`: the server's clock as (unix seconds, microseconds).
    fn time(&self) -> Self::Out<(u64, u64)> {
        self.run(Cmd::typed("TIME", Always))
    }

    /// `WAIT numreplicas timeout-ms`: waits until `numreplicas` replicas acknowledged
    /// the writes sent before it, or `timeout` passes; returns how many did.
    ///
    /// Runs on the shared connection, *not* on a dedicated blocking one, although it
    /// blocks. The server waits for the replication offset as of the *previous command
    /// on the same connection*. Every caller's writes travel on the shared connection,
    /// so there that offset covers them; a pooled dedicated connection's offset dates
    /// from its last use, possibly before the caller's write, and `WAIT` there reports
    /// replicas that never received it (a test shows this with a paused replica). The
    /// cost: replies queued behind it wait too, so keep `timeout` short, and below the
    /// command timeout (`syncTimeout`, or `Database::with_timeout`), or the call times
    /// out and the connection, silent meanwhile, may be judged dead.
    /// `Duration::ZERO` would wait forever: don't.
    fn wait(&self, numreplicas: u32, timeout: Duration) -> Self::Out<i64> {
        let cmd = Cmd::typed("WAIT", Always).arg(numreplicas);
        self.run(cmd.arg(millis_ceil(timeout)))
    }

    /// `CLIENT ID` of the connection the command runs on.
    fn client_id(&self) -> Self::Out<i64> {
        self.run(Cmd::typed("CLIENT ID", Always))
    }

    /// `CLIENT SETNAME name` on the shared connection (for every caller on it). A
    /// reconnect forgets it; a name that must last belongs in `Options::client_name`.
    fn client_setname(&self, name: impl ToArgs) -> Self::Out<()> {
        self.run(Cmd::typed("CLIENT SETNAME", Connection).arg(name))
    }

    /// `CLIENT GETNAME` (`None` when no name is set).
    fn client_getname(&self) -> Self::Out<Option<String>> {
        self.run(Cmd::typed("CLIENT GETNAME", Always))
    }

    /// `CONFIG GET pattern` as a map (`HashMap<String, String>`); RESP2's flat array
    /// and RESP3's map both convert.
    fn config_get<T: FromValue>(&self, pattern: impl ToArgs) -> Self::Out<T> {
        self.run(Cmd::typed("CONFIG GET", ServerAdmin).arg(pattern))
    }

    /// `CONFIG SET parameter value`
    fn config_set(&self, parameter: impl ToArgs, value: impl ToArgs) -> Self::Out<()> {
        let cmd = Cmd::typed("CONFIG SET", ServerAdmin).arg(parameter);
        self.run(cmd.arg(value))
    }
}

impl<C: Commands + ?Sized> ServerCommands for C {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::recorder::{line, Recorder};

    #[test]
    fn frames() {
        let r = Recorder;
        assert_eq!(line(&r.ping()), "PING");
        assert_eq!(line(&r.info(None)), "INFO");
        assert_eq!(line(&r.info(Some("replication"))), "INFO replication");
        assert_eq!(
            line(&r.config_get::<Vec<String>>("maxmemory")),
            "CONFIG GET maxmemory"
        );
        assert_eq!(line(&r.client_setname("app")), "CLIENT SETNAME app");
        let wait = r.wait(1, Duration::from_micros(1500));
        assert_eq!(line(&wait), "WAIT 1 2");
        // See `wait`: it must run where the caller's writes went.
        assert_eq!(wait.block_time(), None);
    }

    #[test]
    fn retry_categories() {
        let r = Recorder;
        assert_eq!(r.ping().retry_category(), Always);
        assert_eq!(r.dbsize().retry_category(), ReadOnly);
        assert_eq!(r.flushdb().retry_category(), ServerAdmin);
        assert_eq!(r.config_set("a", "b").retry_category(), ServerAdmin);
        assert_eq!(r.client_setname("n").retry_category(), Connection);
    }
}
