//! `Display`: what is written, in which unit, and that it parses back.

use std::time::Duration;

use super::{assert_round_trips, parse};
use crate::config::{Options, TlsOptions};

#[test]
fn defaults_are_not_written() {
    assert_eq!(parse("h").to_string(), "h:6379");
    assert_eq!(
        parse("h,syncTimeout=5000,abortConnect=true,backlog=queue,maintNotifications=disabled,maintRelaxedTimeout=10").to_string(),
        "h:6379"
    );
    assert_eq!(
        parse("h,ssl=true,sslVerify=true").to_string(),
        "h:6379,ssl=true"
    );
    assert_eq!(Options::default().to_string(), "");
}

#[test]
fn writes_every_key_in_table_order_and_unit() {
    let o = parse(
        "defaults=AMR,maintMovingEndpointType=external-fqdn,maintPostEventRelaxed=0.5,\
         maintRelaxedWindowMax=45,maintRelaxedTimeout=2.5,maintNotifications=Auto,\
         blockingPool=2,reconnectMax=9000,reconnectMin=50,backlogLimit=7,backlog=failfast,\
         abortConnect=no,protocol=3,keepAlive=1000,syncTimeout=250,connectTimeout=1500,\
         sslVerify=0,sslKey=/k.pem,sslCert=/c.pem,sslCaFile=/ca.pem,sslHost=sni.example,\
         ssl=yes,defaultDatabase=3,name=web,user=app,password=\"hunter2\",h1:7000,[::1]",
    );
    assert_eq!(
        o.to_string(),
        "h1:7000,[::1]:6379,user=app,name=web,defaultDatabase=3,ssl=true,sslHost=sni.example,\
         sslCaFile=/ca.pem,sslCert=/c.pem,sslKey=/k.pem,sslVerify=false,connectTimeout=1500,\
         syncTimeout=250,keepAlive=1000,protocol=resp3,abortConnect=false,backlog=failfast,\
         backlogLimit=7,reconnectMin=50,reconnectMax=9000,blockingPool=2,\
         maintNotifications=auto,maintRelaxedTimeout=2.5,maintRelaxedWindowMax=45,\
         maintPostEventRelaxed=0.5,maintMovingEndpointType=external-fqdn,defaults=amr"
    );
    assert_round_trips(&o);
}

#[test]
fn url_becomes_option_string() {
    let o = parse("rediss://app:pw@h1:7000,[::1]/2?name=web&syncTimeout=250&defaults=AMR");
    assert_eq!(
        o.to_string(),
        "h1:7000,[::1]:6379,user=app,name=web,defaultDatabase=2,ssl=true,syncTimeout=250,defaults=amr"
    );
}

/// A dozen representative configurations, in both input forms.
#[test]
fn representative_options_round_trip() {
    for s in [
        "localhost",
        "redis://localhost:6380/1",
        "rediss://default:s3cret@cache.example.com:6380",
        "valkeys://h?sslCaFile=/etc/ssl/ca.pem&sslHost=internal.example",
        "10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000,password=p,name=svc",
        "[::1]:6380,::2,[fe80::1]",
        "h,ssl=true,sslCert=/c.pem,sslKey=/k.pem,sslVerify=false",
        "h,protocol=resp2,abortConnect=false,backlog=failfast,backlogLimit=1",
        "h,reconnectMin=1,reconnectMax=1,blockingPool=64,keepAlive=1",
        "h,maintNotifications=enabled,maintRelaxedTimeout=0.001,maintRelaxedWindowMax=3.25",
        "h,maintPostEventRelaxed=7.123456789,maintMovingEndpointType=none,defaults=enterprise",
        "redis://u@h/4294967295?connectTimeout=18446744073709551615&defaults=rediscloud",
        "h,user=app,sslCaFile=file://odd/but/allowed,ssl=1",
    ] {
        assert_round_trips(&parse(s));
    }
}

/// Values that would not read back as written are quoted, with `"` and `\` escaped;
/// the password is still never written, quoted or not.
#[test]
fn values_that_need_quotes_are_written_quoted() {
    let o = parse(
        r#"h,password="p,w",user="a,b",name=x"y,ssl=true,sslCaFile=" /c\\a,\"d\" ",sslHost=s"#,
    );
    assert_eq!(o.user.as_deref(), Some("a,b"));
    assert_eq!(o.client_name.as_deref(), Some("x\"y"));
    let ca = o.tls.as_ref().and_then(|t| t.ca_file.clone()).unwrap();
    assert_eq!(ca.to_str(), Some(r#" /c\a,"d" "#));
    assert_eq!(
        o.to_string(),
        r#"h:6379,user="a,b",name=x"y,ssl=true,sslHost=s,sslCaFile=" /c\\a,\"d\" ""#
    );
    assert_round_trips(&o);
    let mut o = parse("h");
    o.user = Some("\"starts with a quote".to_string());
    assert_eq!(o.to_string(), r#"h:6379,user="\"starts with a quote""#);
    assert_round_trips(&o);
}

#[test]
fn seconds_are_written_with_the_fraction_needed() {
    let secs = |s: &str| parse(&format!("h,maintRelaxedTimeout={s}")).to_string();
    assert_eq!(secs("2.5"), "h:6379,maintRelaxedTimeout=2.5");
    assert_eq!(secs("2.50"), "h:6379,maintRelaxedTimeout=2.5");
    assert_eq!(
        secs("0.000000001"),
        "h:6379,maintRelaxedTimeout=0.000000001"
    );
    assert_eq!(secs("20.0"), "h:6379,maintRelaxedTimeout=20");
}

#[test]
fn options_built_in_code_round_trip() {
    let o = Options::default()
        .endpoint("a:1")
        .endpoint("[::1]:2")
        .user("u")
        .password("p")
        .database(9)
        .client_name("c")
        .tls(TlsOptions::default())
        .connect_timeout(Duration::from_millis(1))
        .command_timeout(Duration::from_secs(60))
        .reconnect_delay(Duration::from_millis(10), Duration::from_millis(20));
    assert_round_trips(&o);
}

#[test]
fn sub_millisecond_durations_are_rounded_up_not_to_zero() {
    let mut o = parse("h");
    o.command_timeout = Duration::from_micros(1500);
    o.keep_alive = Duration::from_nanos(1);
    assert_eq!(o.to_string(), "h:6379,syncTimeout=2,keepAlive=1");
}

#[test]
fn in_memory_ca_certificates_are_not_written() {
    let mut o = parse("h");
    o.tls = Some(TlsOptions {
        ca_pem: Some(b"-----BEGIN CERTIFICATE-----".to_vec()),
        ..TlsOptions::default()
    });
    assert_eq!(o.to_string(), "h:6379,ssl=true");
}

#[test]
fn defaults_is_written_only_when_chosen() {
    assert!(!parse("cache.region.redis.azure.net")
        .to_string()
        .contains("defaults"));
    assert!(parse("h,defaults=azure")
        .to_string()
        .ends_with(",defaults=azure"));
}
