//! `Settings`: options being assembled from the items of an option string or a URL,
//! and the checks that can only run once every item has been seen.
//!
//! Owns: applying one `key=value` (through its declaration in `keys`), remembering
//! where an unquoted secret was, and the end-of-input checks (an endpoint, TLS
//! coherence, reconnect bounds). Must never: quote a value in an error, nor anything
//! at all from an item after an unquoted password: a password holding a comma (or, in a
//! URL query, an `&`) spills into the next items, so they may be part of the secret.

use super::keys::{OptionKey, Role};
use super::parse::{config_error, endpoint_from, Position};
use super::{Options, TlsOptions};
use crate::error::{Error, Result};

/// Options being assembled from items, plus what the end-of-input checks need.
pub(super) struct Settings {
    pub(super) options: Options,
    /// TLS required by a `rediss://`/`valkeys://` scheme.
    scheme_tls: bool,
    /// The last `ssl=` item and where it was.
    pub(super) ssl: Option<(bool, Position)>,
    /// TLS details, kept apart until we know whether TLS is on at all: `ssl=true` may
    /// come after `sslHost=`.
    pub(super) tls: TlsOptions,
    /// The first TLS detail key seen, to name it if TLS turns out to be off.
    first_tls_detail: Option<(OptionKey, Position)>,
    /// Where the last unquoted secret value was (an option-string item, a URL query
    /// item): every item after it may be its tail, so errors about them quote nothing.
    after_secret: Option<Position>,
    /// The keys set by items after an unquoted secret, for the end-of-input checks.
    keys_after_secret: Vec<OptionKey>,
}

impl Settings {
    pub(super) fn new(scheme_tls: bool) -> Settings {
        Settings {
            options: Options::default(),
            scheme_tls,
            ssl: None,
            tls: TlsOptions::default(),
            first_tls_detail: None,
            after_secret: None,
            keys_after_secret: Vec::new(),
        }
    }

    /// Adds an endpoint item; the error gives the position, not the text.
    pub(super) fn add_endpoint(&mut self, item: &str, at: Position) -> Result<()> {
        if let Some(secret) = self.after_secret {
            // Why refused even when it parses: `h:6379,password=hun,ter2` would
            // otherwise connect to a server named `ter2`, sending a piece of the
            // password to DNS and writing it in `Display`.
            return Err(config_error(format!(
                "an endpoint at {at} is refused (not shown: {}; or list the endpoints before the password)",
                secret_tail_hint(secret)
            )));
        }
        let endpoint = endpoint_from(item)
            .map_err(|why| config_error(format!("bad endpoint at {at}: {why}")))?;
        self.options.endpoints.push(endpoint);
        Ok(())
    }

    /// Applies `name=value` (name matched case-insensitively); `quoted` when the value
    /// was written in double quotes (so it cannot have spilled into later items).
    pub(super) fn apply(
        &mut self,
        name: &str,
        value: &str,
        quoted: bool,
        at: Position,
    ) -> Result<()> {
        if name.is_empty() {
            return Err(config_error(format!(
                "missing key before '=' at {at}{}",
                self.not_shown()
            )));
        }
        let Some(key) = OptionKey::lookup(name) else {
            return Err(self.unknown_key(name, at));
        };
        self.apply_key(key, value, at)?;
        let unquoted_item = !quoted && matches!(at, Position::Item(_) | Position::QueryItem(_));
        if key.spec().role == Role::Secret && unquoted_item {
            self.after_secret = Some(at);
        }
        Ok(())
    }

    fn unknown_key(&self, name: &str, at: Position) -> Error {
        if self.after_secret.is_some() {
            return config_error(format!("unknown option key at {at}{}", self.not_shown()));
        }
        // Quoted: the caller needs to see what was not understood, and with no
        // unquoted password before it, this item cannot be a piece of one.
        config_error(format!(
            "unknown option key '{}' at {at}",
            name.escape_debug()
        ))
    }

    /// Applies a value to a known key.
    pub(super) fn apply_key(&mut self, key: OptionKey, value: &str, at: Position) -> Result<()> {
        let spec = key.spec();
        if self.after_secret.is_some() {
            self.keys_after_secret.push(key);
        }
        if spec.role == Role::TlsDetail && self.first_tls_detail.is_none() {
            self.first_tls_detail = Some((key, at));
        }
        match (spec.parse)(self, value, at) {
            Some(()) => Ok(()),
            None => Err(self.bad_value(key, at)),
        }
    }

    fn bad_value(&self, key: OptionKey, at: Position) -> Error {
        let hidden = self.not_shown();
        if hidden.is_empty() {
            let spec = key.spec();
            return config_error(format!(
                "bad value for '{}' at {at}: expected {}",
                spec.name, spec.expected
            ));
        }
        // Not even the key: which key matched says what the password holds.
        config_error(format!("bad value at {at}{hidden}"))
    }

    /// The checks that need the whole input: an endpoint, TLS coherence, reconnect bounds.
    pub(super) fn finish(mut self) -> Result<Options> {
        if self.options.endpoints.is_empty() {
            return Err(config_error(
                "no endpoint given: add at least one host[:port] item",
            ));
        }
        self.finish_tls()?;
        self.check_reconnect_bounds()?;
        Ok(self.options)
    }

    /// Turns TLS on or off, with its details, or says why the combination is wrong.
    fn finish_tls(&mut self) -> Result<()> {
        let tls_on = match self.ssl {
            Some((false, at)) if self.scheme_tls => {
                let (what, hidden) = match self.hidden_after_secret(&[OptionKey::Ssl]) {
                    Some(hidden) => (format!("a setting at {at}"), hidden),
                    None => (format!("'ssl=false' at {at}"), String::new()),
                };
                return Err(config_error(format!(
                    "{what} contradicts the rediss:// (or valkeys://) scheme{hidden}"
                )));
            }
            Some((on, _)) => on || self.scheme_tls,
            None => self.scheme_tls,
        };
        // Explicit either way: `ssl=false` must beat a provider's TLS default.
        self.options.explicit.tls = self.ssl.is_some() || self.scheme_tls;
        if tls_on {
            self.check_client_certificate()?;
            self.options.tls = Some(std::mem::take(&mut self.tls));
        } else if let Some((key, at)) = self.first_tls_detail {
            let (what, hidden) = match self.hidden_after_secret(&[key]) {
                Some(hidden) => (format!("the setting at {at}"), hidden),
                None => (format!("'{}' at {at}", key.name()), String::new()),
            };
            return Err(config_error(format!(
                "{what} needs TLS: add ssl=true or use a rediss:// URL (without TLS it would do nothing){hidden}"
            )));
        }
        Ok(())
    }

    /// `sslCert` and `sslKey` come together.
    fn check_client_certificate(&self) -> Result<()> {
        let pair_hidden = self.hidden_after_secret(&[OptionKey::SslCert, OptionKey::SslKey]);
        match (
            &self.tls.client_cert_file,
            &self.tls.client_key_file,
            pair_hidden,
        ) {
            (Some(_), None, None) => {
                Err(config_error("'sslCert' needs 'sslKey' (its private key)"))
            }
            (None, Some(_), None) => Err(config_error(
                "'sslKey' needs 'sslCert' (the certificate it belongs to)",
            )),
            (Some(_), None, Some(hidden)) | (None, Some(_), Some(hidden)) => Err(config_error(
                format!("a client certificate and its private key go together{hidden}"),
            )),
            _ => Ok(()),
        }
    }

    fn check_reconnect_bounds(&self) -> Result<()> {
        let (min, max) = (
            self.options.reconnect_min_delay,
            self.options.reconnect_max_delay,
        );
        if min <= max {
            return Ok(());
        }
        let reconnect = [OptionKey::ReconnectMin, OptionKey::ReconnectMax];
        if let Some(hidden) = self.hidden_after_secret(&reconnect) {
            return Err(config_error(format!(
                "the minimum reconnect delay is greater than the maximum{hidden}"
            )));
        }
        Err(config_error(format!(
            "reconnectMin ({} ms) is greater than reconnectMax ({} ms)",
            min.as_millis(),
            max.as_millis()
        )))
    }

    /// What an error about the current item says instead of quoting it, when it
    /// follows an unquoted secret; empty otherwise.
    pub(super) fn not_shown(&self) -> String {
        self.after_secret
            .map(|secret| format!(" (not shown: {})", secret_tail_hint(secret)))
            .unwrap_or_default()
    }

    /// `Some(what to say instead)` when any of `keys` was set after an unquoted secret.
    fn hidden_after_secret(&self, keys: &[OptionKey]) -> Option<String> {
        let secret = self.after_secret?;
        keys.iter()
            .any(|k| self.keys_after_secret.contains(k))
            .then(|| format!(" (not shown: {})", secret_tail_hint(secret)))
    }
}

/// Why something after the secret at `secret` is not shown, and how to write a secret
/// that holds the separator.
fn secret_tail_hint(secret: Position) -> String {
    match secret {
        Position::QueryItem(_) => format!(
            "it follows the password at {secret} and may be part of it: percent-encode an '&' in a password as %26"
        ),
        _ => format!(
            "it follows the unquoted password at {secret} and may be part of it: write a password that holds a comma in double quotes, password=\"...\""
        ),
    }
}
