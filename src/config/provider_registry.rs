//! The provider registry: hosted and on-premise deployments whose settings differ from
//! the library defaults, recognised by domain where that is possible and chosen by
//! name with `defaults=<name>`.
//!
//! Resolution is by name against this fixed list only, never anything a configuration
//! string could use to pick arbitrary code.

use super::MaintNotifications;

/// What a provider sets when the user did not.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Provider {
    /// The canonical name (`defaults=<name>`).
    pub name: &'static str,
    /// Other names that pick it.
    pub aliases: &'static [&'static str],
    /// Host suffixes that recognise it (each starts with a dot).
    pub domains: &'static [&'static str],
    pub maint_notifications: MaintNotifications,
    /// TLS on.
    pub tls: bool,
    /// RESP3 required (the notifications are RESP3 push frames).
    pub resp3: bool,
}

/// Azure Managed Redis: TLS-only, RESP3 everywhere, and the deployment family the
/// notifications exist for. `Auto`, not `Enabled`: a cache not updated yet must keep
/// working (the opt-in is then refused and the feature stays off).
///
/// Not `*.redis.cache.windows.net`: that is Azure Cache for Redis, the OSS-based
/// service, which serves plain TCP on 6379 (assuming TLS would fail those connects)
/// and has no `CLIENT MAINT_NOTIFICATIONS`. `*.redisenterprise.cache.azure.net` is the
/// Enterprise tier that became AMR, TLS by default.
pub(crate) const AMR: Provider = Provider {
    name: "amr",
    aliases: &["azure"],
    domains: &[
        ".redis.azure.net",
        ".redis.chinacloudapi.cn",
        ".redis.usgovcloudapi.net",
        ".redis.sovcloud-api.de",
        ".redis.sovcloud-api.fr",
        ".redisenterprise.cache.azure.net",
    ],
    maint_notifications: MaintNotifications::Auto,
    tls: true,
    resp3: true,
};

/// Redis Cloud. Deliberately not a copy of AMR: Cloud enables TLS per database and
/// plenty are plaintext, so guessing TLS would fail their connect outright; RESP3 and
/// the opt-in are what it shares with AMR.
pub(crate) const REDIS_CLOUD: Provider = Provider {
    name: "rediscloud",
    aliases: &[],
    domains: &[
        // The endpoints Cloud hands out today: redis-NNNNN.cNNN.<region>.redns.redis-cloud.com
        ".redns.redis-cloud.com",
        // Fully managed endpoints under the older domain, and older subscriptions.
        ".cloud.redislabs.com",
        ".redislabs.com",
        // The newer routing scheme.
        ".cloud.redis.io",
    ],
    maint_notifications: MaintNotifications::Auto,
    tls: false,
    resp3: true,
};

/// Redis Enterprise on premise: matches no host (a cluster has whatever DNS its
/// operator gave it), so it is only ever chosen by name. It also covers a hosted
/// deployment reached through private DNS or a proxy.
pub(crate) const ENTERPRISE: Provider = Provider {
    name: "enterprise",
    aliases: &[],
    domains: &[],
    maint_notifications: MaintNotifications::Auto,
    tls: false,
    resp3: false,
};

/// Every provider, in lookup order.
pub(crate) const ALL: [&Provider; 3] = [&AMR, &REDIS_CLOUD, &ENTERPRISE];

/// The provider `name` picks (case-insensitive, aliases included).
pub(crate) fn by_name(name: &str) -> Option<&'static Provider> {
    ALL.into_iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// The provider whose domain `host` is in (a trailing dot of a fully qualified name
/// ignored, case-insensitive); a bare domain (`redis.azure.net` itself) is not a host
/// of it.
pub(crate) fn by_host(host: &str) -> Option<&'static Provider> {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    ALL.into_iter()
        .find(|p| p.domains.iter().any(|d| host.ends_with(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        assert_eq!(by_name("AMR"), Some(&AMR));
        assert_eq!(by_name("azure"), Some(&AMR));
        assert_eq!(by_name("RedisCloud"), Some(&REDIS_CLOUD));
        assert_eq!(by_name("enterprise"), Some(&ENTERPRISE));
        assert_eq!(by_name("std::process::Command"), None);
        // Every name the option-string key accepts resolves.
        for name in crate::config::provider_names() {
            assert!(by_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn recognised_by_domain() {
        assert_eq!(by_host("mycache.westeurope.redis.azure.net"), Some(&AMR));
        assert_eq!(by_host("MyCache.WestEurope.Redis.Azure.Net."), Some(&AMR));
        assert_eq!(
            by_host("c.eastus.redisenterprise.cache.azure.net"),
            Some(&AMR)
        );
        assert_eq!(by_host("x.redis.chinacloudapi.cn"), Some(&AMR));
        assert_eq!(
            by_host("redis-12345.c1.us-east-1-2.ec2.redns.redis-cloud.com"),
            Some(&REDIS_CLOUD)
        );
        assert_eq!(
            by_host("redis-1.c2.eu-west-1-1.ec2.cloud.redislabs.com"),
            Some(&REDIS_CLOUD)
        );
        assert_eq!(by_host("db.cloud.redis.io"), Some(&REDIS_CLOUD));
        for none in [
            "mycache.redis.cache.windows.net",
            "redis.azure.net",
            "evilredis.azure.net",
            "redis-cloud.com.example.org",
            "10.0.0.1",
            "::1",
            "localhost",
        ] {
            assert_eq!(by_host(none), None, "{none}");
        }
    }
}
