//! A password must never appear in `Display`, `Debug` or any error, whatever goes wrong.

use crate::config::Options;

const SECRET: &str = "Xyzzy-Pl0ver-9137";

fn assert_hidden(text: &str, context: &str) {
    assert!(
        !text.contains(SECRET),
        "{context}: secret leaked in {text:?}"
    );
    // Parts of it must not leak either (a mis-split could print a fragment).
    assert!(
        !text.contains("Xyzzy"),
        "{context}: fragment leaked in {text:?}"
    );
    assert!(
        !text.contains("Pl0ver"),
        "{context}: fragment leaked in {text:?}"
    );
}

/// Parses `input`; checks that neither the options nor the error show the secret.
fn check(input: &str) {
    match Options::parse(input) {
        Ok(o) => {
            assert_hidden(&o.to_string(), input);
            assert_hidden(&format!("{o:?}"), input);
            assert_hidden(&format!("{o:#?}"), input);
        }
        Err(e) => {
            assert_hidden(&e.to_string(), input);
            assert_hidden(&format!("{e:?}"), input);
        }
    }
}

#[test]
fn display_and_debug_never_show_the_password() {
    let url = format!("redis://app:{SECRET}@h");
    let o = Options::parse(&url).unwrap();
    assert_eq!(o.password.as_ref().unwrap().expose(), SECRET);
    check(&url);
    check(&format!("h,password={SECRET}"));
    check(&format!("redis://h?password={SECRET}"));
    check(&format!("s1,serviceName=m,sentinelPassword={SECRET}"));
    check(&format!(
        "redis+sentinel://:{SECRET}@s1/m?sentinelPassword={SECRET}"
    ));
    let o = Options::parse(&format!("s1,serviceName=m,sentinelPassword={SECRET}")).unwrap();
    assert_eq!(o.sentinel_password.as_ref().unwrap().expose(), SECRET);
}

#[test]
fn errors_never_show_the_password() {
    let inputs = [
        // A bad key or value after the password.
        format!("h,password={SECRET},fooBar=1"),
        format!("h,password={SECRET},syncTimeout=x"),
        format!("password={SECRET}"),
        format!("redis://:{SECRET}@h?fooBar=1"),
        format!("redis://:{SECRET}@h?syncTimeout=x"),
        format!("redis://:{SECRET}@h/notadb"),
        format!("redis://:{SECRET}@h:0"),
        format!("redis://:{SECRET}@"),
        format!("rediss://:{SECRET}@h?ssl=false"),
        format!("redis://:{SECRET}@h?sslHost=x"),
        format!("http://:{SECRET}@h"),
        // Sentinel URLs: a password mis-split into the service name.
        "redis+sentinel://u:Xyzzy/Pl0ver-9137@s1/mymaster".to_string(),
        "redis+sentinel://u:p@s1/Xyzzy/Pl0ver@x".to_string(),
        format!("s1,serviceName=m,sentinelPassword={SECRET},fooBar=1"),
        "s1,sentinelPassword=Xyzzy,Pl0ver:0,serviceName=m".to_string(),
        format!("redis+sentinel://s1/m?sentinelPassword={SECRET}&syncTimeout=x"),
        // Bad percent-encoding inside the password.
        format!("redis://:{SECRET}%zz@h"),
        format!("redis://:{SECRET}%@h"),
        // Characters that should have been percent-encoded: the password is mis-split
        // into the hosts, the path, the query or a fragment.
        "redis://u:Xyzzy/Pl0ver-9137@h".to_string(),
        "redis://u:Xyzzy?Pl0ver-9137@h".to_string(),
        "redis://u:Xyzzy#Pl0ver-9137@h".to_string(),
        "redis://h?password=Xyzzy#Pl0ver".to_string(),
        "redis://h?password=Xyzzy&Pl0ver".to_string(),
        // Option strings whose password holds a comma: the tail becomes another item.
        "h,password=Xyzzy,Pl0ver ter".to_string(),
        "h,password=Xyzzy,Pl0ver:0".to_string(),
        "h,password=Xyzzy,x=Pl0ver".to_string(),
        // The password as the value of a key that rejects it.
        format!("h,name={SECRET} x"),
        // The issue's reports: the tail after a comma taken as an endpoint (it went to
        // DNS and Display), or quoted as an unknown key.
        "cache.example:6379,password=hun,Xyzzy".to_string(),
        "cache.example:6379,password=hun,Xyzzy:6380".to_string(),
        "h,password=abc,Xyzzy=Pl0ver".to_string(),
        "h,password=abc,Xyzzy=f".to_string(),
        "h,password=abc,syncTimeout=Xyzzy".to_string(),
        "h,password=abc,,Pl0ver".to_string(),
        "redis://h?password=abc&Xyzzy=Pl0ver".to_string(),
        "redis://h?password=abc&Xyzzy".to_string(),
        // Malformed quoting around the secret.
        format!(r#"h,password="{SECRET}"#),
        format!(r#"h,password="{SECRET}"x,name=a"#),
        format!(r#"h,password="{SECRET}\n""#),
    ];
    for input in &inputs {
        assert!(Options::parse(input).is_err(), "{input:?} should fail");
        check(input);
    }
}

#[test]
fn percent_encoded_comma_in_url_password_is_kept_whole_and_hidden() {
    let o = Options::parse("redis://:Xyzzy%2CPl0ver@h").unwrap();
    assert_eq!(o.password.as_ref().unwrap().expose(), "Xyzzy,Pl0ver");
    check("redis://:Xyzzy%2CPl0ver@h");
}

#[test]
fn a_quoted_password_with_commas_and_quotes_is_kept_whole_and_hidden() {
    let input = r#"h:1,password="Xyzzy,Pl0ver \"9137\"",name=web"#;
    let o = Options::parse(input).unwrap();
    assert_eq!(
        o.password.as_ref().unwrap().expose(),
        r#"Xyzzy,Pl0ver "9137""#
    );
    assert_eq!(o.to_string(), "h:1,name=web");
    check(input);
}
