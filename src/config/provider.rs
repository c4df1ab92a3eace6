//! Applying a provider's defaults (the registry is `provider_registry`).
//!
//! Owns: which provider applies to a set of options, and filling in its defaults where
//! the user set nothing. Must never: override an explicit setting, or put a provider's
//! values where `Display` would write them.
//!
//! Where: once, when a client is made (`Client::connect` and group members), on a copy;
//! the `Options` the user holds are never changed. So parsing stays a pure reading of
//! the text, `Display` of the user's options never sees provider values, and options
//! built in code get the same treatment as parsed ones. `Client::options` returns the
//! copy, whose `Display` still omits the provider's values (they are re-derived from
//! the endpoints or `defaults=` when the string is parsed again).

use super::provider_registry::{self as providers, Provider};
use super::{MaintNotifications, Options, Protocol, TlsOptions};

impl Options {
    /// The name of the provider whose defaults apply: the one chosen with
    /// `defaults=<name>`, else the one whose domain **every** endpoint is in (a mixed
    /// list gets none); `None` for anything else.
    ///
    /// | provider | chosen by | recognised hosts | defaults |
    /// |---|---|---|---|
    /// | `amr` (alias `azure`) | `defaults=amr` | `*.redis.azure.net`, `*.redisenterprise.cache.azure.net`, Azure's national clouds | `maintNotifications=auto`, TLS, RESP3 |
    /// | `rediscloud` | `defaults=rediscloud` | `*.redns.redis-cloud.com`, `*.redislabs.com`, `*.cloud.redis.io` | `maintNotifications=auto`, RESP3 (TLS left off: Cloud enables it per database) |
    /// | `enterprise` | `defaults=enterprise` only | none: an on-premise cluster has whatever DNS its operator gave it | `maintNotifications=auto` |
    ///
    /// A provider's defaults fill only what was not set: a key given in an option
    /// string or URL (even to the library default: `ssl=false` beats a provider's TLS),
    /// a setter of [`Options`](super::Options), or a field that differs from
    /// the library default. A field assigned its default value directly in code cannot
    /// be told from an unset one: pin such a value with the builder (`no_tls`,
    /// `maint_notifications`) or the option string.
    ///
    /// ```
    /// use resilient_redis::Options;
    /// let o = Options::parse("mycache.westeurope.redis.azure.net:10000").unwrap();
    /// assert_eq!(o.provider(), Some("amr"));
    /// assert!(o.tls.is_none(), "parsing does not apply it: connecting does");
    /// assert_eq!(o.to_string(), "mycache.westeurope.redis.azure.net:10000");
    /// let pinned = Options::parse("onprem.example:12000,defaults=enterprise").unwrap();
    /// assert_eq!(pinned.provider(), Some("enterprise"));
    /// ```
    pub fn provider(&self) -> Option<&'static str> {
        self.provider_entry().map(|p| p.name)
    }

    pub(crate) fn provider_entry(&self) -> Option<&'static Provider> {
        if let Some(name) = &self.defaults {
            return providers::by_name(name);
        }
        let mut each = self.endpoints.iter().map(|e| providers::by_host(&e.host));
        let first = each.next()??;
        each.all(|p| p == Some(first)).then_some(first)
    }

    /// A copy with the provider's defaults filled in where nothing was set.
    pub(crate) fn with_provider_defaults(&self) -> Options {
        let mut o = self.clone();
        let Some(p) = self.provider_entry() else {
            return o;
        };
        if !o.explicit.maint && o.maint_notifications == MaintNotifications::Disabled {
            o.maint_notifications = p.maint_notifications;
        }
        if p.tls && !o.explicit.tls && o.tls.is_none() {
            o.tls = Some(TlsOptions::default());
        }
        if p.resp3 && o.protocol.is_none() {
            o.protocol = Some(Protocol::Resp3);
        }
        o
    }

    /// `Display`: whether the TLS setting is one the provider would fill in anyway (so
    /// it is not written), or an explicit `false` it must keep (so it is).
    pub(super) fn provider_tls(&self) -> ProviderSays {
        let Some(p) = self.provider_entry() else {
            return ProviderSays::Nothing;
        };
        match &self.tls {
            Some(t) if p.tls && !self.explicit.tls && *t == TlsOptions::default() => {
                ProviderSays::Omit
            }
            None if self.explicit.tls => ProviderSays::WritePinnedDefault,
            _ => ProviderSays::Nothing,
        }
    }

    /// `Display`: the same for `protocol`.
    pub(super) fn provider_protocol(&self) -> ProviderSays {
        match self.provider_entry() {
            Some(p)
                if p.resp3 && !self.explicit.protocol && self.protocol == Some(Protocol::Resp3) =>
            {
                ProviderSays::Omit
            }
            _ => ProviderSays::Nothing,
        }
    }

    /// `Display`: the same for `maintNotifications`.
    pub(super) fn provider_maint(&self) -> ProviderSays {
        let Some(p) = self.provider_entry() else {
            return ProviderSays::Nothing;
        };
        if self.explicit.maint {
            ProviderSays::WritePinnedDefault
        } else if self.maint_notifications == p.maint_notifications {
            ProviderSays::Omit
        } else {
            ProviderSays::Nothing
        }
    }
}

/// How a provider changes what `Display` writes for one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ProviderSays {
    /// The usual rule: written when it differs from the library default.
    Nothing,
    /// The value is the provider's, filled in: not written (re-derived on parsing).
    Omit,
    /// Explicitly set, even to the library default: written, so that parsing the
    /// string again keeps it pinned against the provider.
    WritePinnedDefault,
}
