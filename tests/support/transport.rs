//! The transport a scenario runs over: plain TCP, or TLS with every fake's certificate
//! from one issuer the client trusts, verification on (so a handoff or a redirect from
//! one fake to another verifies too). `over_both_transports!(scenario, ...)` turns each
//! `fn scenario(t: Transport)` into two tests, `scenario::tcp` and `scenario::tls`.
use resilient_redis::testkit::{FakeCluster, FakeIssuer, FakeServer, FakeServerBuilder};
use resilient_redis::Options;

/// Plain TCP, or TLS under one issuer.
#[derive(Clone, Debug)]
pub enum Transport {
    Tcp,
    Tls(FakeIssuer),
}

impl Transport {
    pub fn tcp() -> Transport {
        Transport::Tcp
    }

    /// TLS under an issuer minted for this scenario.
    pub fn tls() -> Transport {
        Transport::Tls(FakeIssuer::new().expect("mint a test CA"))
    }

    /// A fake's builder serving this transport; over TLS its certificate also names
    /// `names` (what a scripted resolver calls it).
    pub fn builder_named(&self, names: &[&str]) -> FakeServerBuilder {
        let b = FakeServer::builder();
        match self {
            Transport::Tcp => b,
            Transport::Tls(issuer) => names.iter().fold(b.tls(issuer), |b, n| b.tls_name(*n)),
        }
    }

    pub fn builder(&self) -> FakeServerBuilder {
        self.builder_named(&[])
    }

    pub fn server(&self) -> FakeServer {
        self.builder().start().expect("start a fake")
    }

    pub fn server_named(&self, names: &[&str]) -> FakeServer {
        self.builder_named(names).start().expect("start a fake")
    }

    pub fn cluster(&self, masters: usize) -> FakeCluster {
        match self {
            Transport::Tcp => FakeCluster::start(masters),
            Transport::Tls(issuer) => FakeCluster::start_with_issuer(masters, issuer),
        }
        .expect("start a fake cluster")
    }

    /// `o`, trusting the issuer (TLS on, verification on); as is over TCP.
    pub fn trust(&self, mut o: Options) -> Options {
        if let Transport::Tls(issuer) = self {
            let mut tls = issuer.tls_options();
            tls.server_name = o.tls.take().and_then(|t| t.server_name);
            o.tls = Some(tls);
        }
        o
    }

    /// A URL or option string, parsed, trusting the issuer.
    pub fn options(&self, spec: &str) -> Options {
        self.trust(Options::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}")))
    }
}

/// `over_both_transports!(a, b)`: for each `fn a(t: Transport)`, a module `a` with the
/// tests `tcp` and `tls`.
#[macro_export]
macro_rules! over_both_transports {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn tcp() {
                super::$scenario($crate::support::transport::Transport::tcp())
            }

            #[test]
            fn tls() {
                super::$scenario($crate::support::transport::Transport::tls())
            }
        }
    )*};
}
