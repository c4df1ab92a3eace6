//! The wire: `GET` over HTTPS with ureq, TLS by our own rustls configuration (custom
//! verifiers), Basic auth, a deadline on every call, redirects returned and never
//! followed.
//!
//! The TLS step is a ureq `Connector` from its `unversioned` transport API (the only
//! way to install a rustls `ClientConfig` with a custom verifier), which may change in
//! a ureq minor release. Cargo.toml does not cap ureq (an application may need a newer
//! 3.x), so this file is the one place to adapt when it does.

use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Instant;

use rustls::{ClientConfig, ClientConnection, StreamOwned};
use rustls_pki_types::ServerName;
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, TcpConnector,
    Transport, TransportAdapter,
};

use super::decide::{Answer, Failure, Rest};
use super::options::RestCredentials;
use super::trust::describe;

/// The largest answer read: a database listing of a large cluster fits many times over.
const MAX_BODY: u64 = 4 << 20;

/// REST calls through one ureq agent (connections are pooled per host).
pub(crate) struct UreqRest {
    agent: ureq::Agent,
}

impl UreqRest {
    pub(crate) fn new(tls: Arc<ClientConfig>) -> UreqRest {
        let config = ureq::Agent::config_builder()
            // Status codes are answers to classify, not errors.
            .http_status_as_error(false)
            // Measured: a non-master node answers 307 to the master's internal address,
            // which a client cannot reach; following it hangs until the deadline.
            .max_redirects(0)
            // Basic credentials never travel in clear.
            .https_only(true)
            // The connector below does not speak to proxies; say so rather than fail
            // oddly when a proxy variable is set in the environment.
            .proxy(None)
            .user_agent("resilient-redis lag-aware probe")
            .max_idle_connections_per_host(2)
            .build();
        let connector = ().chain(TcpConnector::default()).chain(TlsConnector { config: tls });
        UreqRest {
            agent: ureq::Agent::with_parts(config, connector, DefaultResolver::default()),
        }
    }
}

impl Rest for UreqRest {
    fn get(
        &self,
        base: &str,
        path_and_query: &str,
        credentials: &RestCredentials,
        deadline: Instant,
    ) -> Answer {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Answer::Failed(Failure::Timeout);
        }
        let url = format!("{base}{path_and_query}");
        let result = self
            .agent
            .get(&url)
            .header("Authorization", basic_auth(credentials))
            .header("Accept", "application/json")
            .config()
            .timeout_global(Some(left))
            .build()
            .call();
        let mut response = match result {
            Ok(r) => r,
            Err(e) => return Answer::Failed(failure(e)),
        };
        let code = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
        {
            Ok(body) => Answer::Status {
                code,
                location,
                body,
            },
            Err(e) => Answer::Failed(failure(e)),
        }
    }
}

/// `Basic base64(user:password)`.
fn basic_auth(c: &RestCredentials) -> String {
    let raw = format!("{}:{}", c.user, c.password.expose());
    format!("Basic {}", base64(raw.as_bytes()))
}

/// Standard base64 with padding (RFC 4648), for the one header that needs it.
pub(crate) fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why a call got no answer, without anything secret (the credentials are only ever in
/// a header, which no error of ureq's shows).
fn failure(e: ureq::Error) -> Failure {
    match e {
        ureq::Error::Timeout(_) => Failure::Timeout,
        ureq::Error::Rustls(r) => match r {
            rustls::Error::InvalidCertificate(_) | rustls::Error::AlertReceived(_) => {
                Failure::Certificate(describe(&r))
            }
            other => Failure::Transport(format!("TLS: {other}")),
        },
        ureq::Error::Io(io) if matches!(io.kind(), io::ErrorKind::TimedOut) => Failure::Timeout,
        ureq::Error::Io(io) => Failure::Transport(format!("I/O: {io}")),
        ureq::Error::HostNotFound => Failure::Transport("host not found".to_string()),
        ureq::Error::ConnectionFailed => Failure::Transport("could not connect".to_string()),
        ureq::Error::BodyExceedsLimit(n) => {
            Failure::Transport(format!("answer larger than {n} bytes"))
        }
        other => Failure::Transport(other.to_string()),
    }
}

/// A rustls failure inside an I/O error comes back as itself, so it can be classified
/// (certificate or not); ureq's own errors (its timeouts) are unwrapped by ureq.
fn tls_io_error(e: io::Error) -> ureq::Error {
    if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) {
        if let Some(Ok(r)) = e.into_inner().map(|i| i.downcast::<rustls::Error>()) {
            return ureq::Error::Rustls(*r);
        }
        return ureq::Error::Tls("TLS failed");
    }
    ureq::Error::from(e)
}

/// Wraps the TCP transport in TLS with our configuration.
struct TlsConnector {
    config: Arc<ClientConfig>,
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsConnector")
    }
}

impl<In: Transport> Connector<In> for TlsConnector {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details
            .uri
            .authority()
            .map(|a| a.host().trim_start_matches('[').trim_end_matches(']'))
            .unwrap_or_default();
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| ureq::Error::Tls("the REST host is not a valid TLS name"))?;
        let mut conn = ClientConnection::new(self.config.clone(), name)?;
        let boxed: Box<dyn Transport> = Box::new(transport);
        let mut sock = TransportAdapter::new(boxed, details.current_time.clone());
        sock.set_timeout(details.timeout);
        conn.complete_io(&mut sock).map_err(tls_io_error)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(TlsTransport {
            buffers,
            stream: StreamOwned::new(conn, sock),
        })))
    }
}

/// An HTTP/1.1 transport over our TLS stream.
pub(crate) struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsTransport")
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.sock.set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output).map_err(tls_io_error)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.sock.set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let n = self.stream.read(input).map_err(tls_io_error)?;
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.sock.get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648() {
        for (raw, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), encoded);
        }
        let c = RestCredentials::new("Aladdin", "open sesame");
        assert_eq!(basic_auth(&c), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    }
}
