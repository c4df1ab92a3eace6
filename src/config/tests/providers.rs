//! Providers: which one applies, what its defaults fill in, that explicit settings
//! always win, and that `Display` never writes a provider's values.

use super::{assert_round_trips, parse};
use crate::config::{MaintNotifications, Options, Protocol, TlsOptions};

const AMR_HOST: &str = "mycache.westeurope.redis.azure.net:10000";
const CLOUD_HOST: &str = "redis-12345.c1.us-east-1-2.ec2.redns.redis-cloud.com:12345";

#[test]
fn recognised_by_domain_or_chosen_by_name() {
    assert_eq!(parse(AMR_HOST).provider(), Some("amr"));
    assert_eq!(parse(CLOUD_HOST).provider(), Some("rediscloud"));
    assert_eq!(parse("localhost").provider(), None);
    assert_eq!(
        parse("onprem:12000,defaults=enterprise").provider(),
        Some("enterprise")
    );
    assert_eq!(parse("localhost,defaults=AZURE").provider(), Some("amr"));
    // The name beats the domain.
    assert_eq!(
        parse(&format!("{AMR_HOST},defaults=rediscloud")).provider(),
        Some("rediscloud")
    );
    // A mixed seed list is not one deployment: no provider.
    assert_eq!(parse(&format!("{AMR_HOST},localhost")).provider(), None);
}

#[test]
fn amr_fills_auto_tls_resp3_and_display_writes_none_of_it() {
    let user = parse(AMR_HOST);
    let o = user.with_provider_defaults();
    assert_eq!(o.maint_notifications, MaintNotifications::Auto);
    assert_eq!(o.tls, Some(TlsOptions::default()));
    assert_eq!(o.protocol, Some(Protocol::Resp3));
    assert_eq!(o.to_string(), AMR_HOST);
    assert_eq!(user.to_string(), AMR_HOST);
    assert_eq!(o.defaults, None, "recognised, not chosen: no defaults= key");
}

#[test]
fn rediscloud_leaves_tls_off_and_enterprise_sets_only_the_opt_in() {
    let o = parse(CLOUD_HOST).with_provider_defaults();
    assert_eq!(o.maint_notifications, MaintNotifications::Auto);
    assert_eq!(o.tls, None, "Cloud enables TLS per database");
    assert_eq!(o.protocol, Some(Protocol::Resp3));
    assert_eq!(o.to_string(), CLOUD_HOST);

    let o = parse("onprem:12000,defaults=enterprise").with_provider_defaults();
    assert_eq!(o.maint_notifications, MaintNotifications::Auto);
    assert_eq!((o.tls.is_some(), o.protocol), (false, None));
    assert_eq!(o.to_string(), "onprem:12000,defaults=enterprise");
    assert_eq!(
        parse("localhost")
            .with_provider_defaults()
            .maint_notifications,
        MaintNotifications::Disabled
    );
}

#[test]
fn explicit_settings_beat_the_provider_even_at_the_library_default() {
    let user = parse(&format!(
        "{AMR_HOST},ssl=false,maintNotifications=disabled,protocol=resp2"
    ));
    let o = user.with_provider_defaults();
    assert_eq!(
        o.tls, None,
        "an explicit ssl=false beats the provider's TLS"
    );
    assert_eq!(o.maint_notifications, MaintNotifications::Disabled);
    assert_eq!(o.protocol, Some(Protocol::Resp2));
    // Written back pinned, so parsing the string again keeps them.
    let text = o.to_string();
    assert_eq!(
        text,
        format!("{AMR_HOST},ssl=false,protocol=resp2,maintNotifications=disabled")
    );
    let again = Options::parse(&text).unwrap().with_provider_defaults();
    assert_eq!(again.tls, None);
    assert_eq!(again.maint_notifications, MaintNotifications::Disabled);
    assert_round_trips(&user);
    assert_round_trips(&o);

    // Explicit values equal to the provider's are written too (they were chosen).
    let o = parse(&format!(
        "{AMR_HOST},ssl=true,maintNotifications=auto,protocol=3"
    ));
    assert_eq!(
        o.with_provider_defaults().to_string(),
        format!("{AMR_HOST},ssl=true,protocol=resp3,maintNotifications=auto")
    );
    // Enabled (required) is never downgraded to the provider's Auto.
    let o = parse(&format!("{CLOUD_HOST},maintNotifications=enabled")).with_provider_defaults();
    assert_eq!(o.maint_notifications, MaintNotifications::Enabled);
}

#[test]
fn a_rediss_url_is_an_explicit_tls_choice_and_redis_is_not() {
    let o = parse("rediss://mycache.westeurope.redis.azure.net:10000").with_provider_defaults();
    assert!(o.tls.is_some());
    assert_eq!(o.to_string(), format!("{AMR_HOST},ssl=true"));
    let o = parse("redis://mycache.westeurope.redis.azure.net:10000").with_provider_defaults();
    assert!(
        o.tls.is_some(),
        "redis:// is the generic scheme, not a choice of plain TCP"
    );
    assert_eq!(o.to_string(), AMR_HOST);
}

#[test]
fn options_built_in_code() {
    let o = Options::default()
        .endpoint(AMR_HOST)
        .with_provider_defaults();
    assert!(o.tls.is_some());
    let o = Options::default()
        .endpoint(AMR_HOST)
        .no_tls()
        .maint_notifications(MaintNotifications::Disabled)
        .with_provider_defaults();
    assert_eq!(o.tls, None);
    assert_eq!(o.maint_notifications, MaintNotifications::Disabled);
    // A field assigned a non-default value counts as set.
    let mut o = Options::default().endpoint(AMR_HOST);
    let custom = TlsOptions {
        server_name: Some("sni.example".into()),
        ..TlsOptions::default()
    };
    o.tls = Some(custom.clone());
    o.maint_notifications = MaintNotifications::Enabled;
    let r = o.with_provider_defaults();
    assert_eq!(r.tls, Some(custom));
    assert_eq!(r.maint_notifications, MaintNotifications::Enabled);
    assert_eq!(r.to_string(), o.to_string());
}
