//! The renewal thread carrying out its decisions, with real (short) time: the
//! decisions themselves are tested as tables in `renewal`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn token(n: u32, life: Duration) -> Token {
    Token::new(
        Credentials::user(format!("u{n}"), format!("secret-{n}")),
        life,
    )
}

/// A source issuing `secret-<n>` tokens of `life`, failing while `down` is set.
fn source(life: Duration, down: Arc<AtomicBool>) -> impl TokenSource {
    let mut issued = 0;
    move || {
        if down.load(Ordering::SeqCst) {
            return Err(Error::new(
                ErrorKind::Connect,
                "identity service unreachable",
            ));
        }
        let t = token(issued, life);
        issued += 1;
        Ok(t)
    }
}

#[test]
fn tokens_are_renewed_ahead_of_their_end_and_a_generation_never_runs_ahead() {
    let tokens = TokenCredentials::builder(source(ms(200), Arc::default()))
        .renew_after(0.5)
        .retry_delays(ms(10), ms(100))
        .start()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut checked = 0;
    while tokens.generation() < 5 {
        assert!(Instant::now() < deadline, "{tokens:?}");
        let before = tokens.generation();
        let credentials = tokens.credentials().expect("never ended: renewed at half");
        let after = tokens.generation();
        // The generation read before the credentials is at most theirs.
        let n: u64 = credentials.secret().expose()["secret-".len()..]
            .parse()
            .unwrap();
        assert!(before <= n && n <= after, "{before} {n} {after}");
        checked += 1;
    }
    assert!(checked > 0);
    assert!(tokens.renewal_failure().is_none());
}

#[test]
fn a_failing_source_is_retried_and_reported_while_the_token_serves_then_recovers() {
    let down = Arc::new(AtomicBool::new(false));
    let tokens = TokenCredentials::builder(source(Duration::from_secs(2), down.clone()))
        .renew_after(0.25)
        .retry_delays(ms(20), ms(1_000))
        .start()
        .unwrap();
    down.store(true, Ordering::SeqCst);
    assert!(crate::clock::poll_until(Duration::from_secs(5), || tokens
        .renewal_failure()
        .is_some_and(|f| f.sequence >= 3)));
    let failure = tokens.renewal_failure().unwrap();
    assert_eq!(
        failure.error.kind(),
        ErrorKind::Connect,
        "the source's kind"
    );
    assert!(failure.attempt >= 3, "{failure:?}");
    assert!(failure.valid_for.is_some(), "{failure:?}");
    assert!(
        failure
            .error
            .detail()
            .contains("identity service unreachable"),
        "{failure:?}"
    );
    assert!(!format!("{failure:?}").contains("secret-"));
    assert_eq!(tokens.generation(), 0);
    assert_eq!(tokens.credentials().unwrap().secret().expose(), "secret-0");
    down.store(false, Ordering::SeqCst);
    assert!(crate::clock::poll_until(Duration::from_secs(5), || tokens
        .generation()
        == 1));
    assert_eq!(tokens.credentials().unwrap().secret().expose(), "secret-1");
    // Kept after the recovery: an observer tells new failures by their sequence.
    assert!(tokens.renewal_failure().is_some());
}

#[test]
fn once_the_token_has_ended_credentials_is_an_auth_error_that_says_why() {
    let down = Arc::new(AtomicBool::new(false));
    let tokens = TokenCredentials::builder(source(ms(150), down.clone()))
        .retry_delays(ms(20), ms(50))
        .start()
        .unwrap();
    down.store(true, Ordering::SeqCst);
    assert!(crate::clock::poll_until(Duration::from_secs(5), || tokens
        .credentials()
        .is_err()));
    let e = tokens.credentials().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth);
    assert!(e.detail().contains("no valid token"), "{e}");
    assert!(
        crate::clock::poll_until(Duration::from_secs(5), || tokens
            .credentials()
            .is_err_and(|e| e.detail().contains("identity service unreachable"))),
        "{:?}",
        tokens.credentials()
    );
    assert!(!e.to_string().contains("secret-"), "{e}");
    assert_eq!(tokens.valid_for(), None);
    assert!(crate::clock::poll_until(Duration::from_secs(5), || tokens
        .renewal_failure()
        .is_some_and(|f| f.valid_for.is_none())));
    // Asked again, at the longest pause: it comes back.
    down.store(false, Ordering::SeqCst);
    assert!(crate::clock::poll_until(Duration::from_secs(5), || tokens
        .credentials()
        .is_ok()));
}

#[test]
fn the_first_fetch_is_the_callers_and_bad_settings_are_config_errors() {
    let down = Arc::new(AtomicBool::new(true));
    let e = TokenCredentials::builder(source(ms(100), down))
        .start()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connect);
    let ended = TokenCredentials::builder(|| Ok(token(0, Duration::ZERO)))
        .start()
        .unwrap_err();
    assert_eq!(ended.kind(), ErrorKind::Auth);
    for fraction in [0.0, 1.0, -0.5, f64::NAN, 7.0] {
        let e = TokenCredentials::builder(|| Ok(token(0, ms(100))))
            .renew_after(fraction)
            .start()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{fraction}");
    }
    for (min, max) in [
        (Duration::ZERO, ms(10)),
        (ms(20), ms(10)),
        (ms(1), Duration::MAX),
    ] {
        let e = TokenCredentials::builder(|| Ok(token(0, ms(100))))
            .retry_delays(min, max)
            .start()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{min:?} {max:?}");
    }
    // A lifetime no `Instant` can hold is taken as very long, not a panic.
    let long = TokenCredentials::builder(|| Ok(token(0, Duration::MAX)))
        .start()
        .unwrap();
    assert!(long.valid_for().is_some());
}

#[test]
fn dropping_the_last_clone_ends_the_thread() {
    let tokens = TokenCredentials::builder(source(Duration::from_secs(60), Arc::default()))
        .start()
        .unwrap();
    let shared = Arc::downgrade(&tokens.0.shared);
    let provider: Arc<dyn CredentialsProvider> = Arc::new(tokens.clone());
    drop(tokens);
    assert!(provider.credentials().is_ok());
    assert!(shared.upgrade().is_some(), "a clone is left");
    drop(provider);
    // Joined: gone as soon as the drop returns.
    assert!(shared.upgrade().is_none());
}

#[test]
fn a_fetch_under_way_does_not_hold_up_the_drop_and_the_thread_ends_after_it() {
    let (inside_tx, inside) = crossbeam_channel::bounded::<()>(1);
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let tokens = TokenCredentials::builder(move || {
        if counted.fetch_add(1, Ordering::SeqCst) > 0 {
            let _ = inside_tx.send(());
            // A slow identity service.
            let _ = released.recv_timeout(Duration::from_secs(30));
        }
        Ok(token(0, ms(100)))
    })
    .retry_delays(ms(10), ms(10))
    .start()
    .unwrap();
    let shared = Arc::downgrade(&tokens.0.shared);
    inside.recv_timeout(Duration::from_secs(5)).unwrap();
    let started = Instant::now();
    drop(tokens);
    assert!(started.elapsed() < Duration::from_secs(1), "not waited for");
    assert!(shared.upgrade().is_some(), "still inside the fetch");
    release.send(()).unwrap();
    assert!(crate::clock::poll_until(Duration::from_secs(5), || shared
        .upgrade()
        .is_none()));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "no fetch after the drop");
}

#[test]
fn a_panicking_source_is_a_failure_not_the_end_of_renewals() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let tokens = TokenCredentials::builder(move || {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        assert!(n != 1, "a bug in the source");
        Ok(token(n, ms(200)))
    })
    .retry_delays(ms(10), ms(10))
    .start()
    .unwrap();
    assert!(crate::clock::poll_until(Duration::from_secs(5), || tokens
        .generation()
        >= 1));
    let failure = tokens.renewal_failure().unwrap();
    assert!(failure.error.detail().contains("panicked"), "{failure:?}");
    assert_eq!(failure.sequence, 1);
}

#[test]
fn debug_never_shows_a_token() {
    let tokens = TokenCredentials::builder(|| Ok(token(7, Duration::from_secs(60))))
        .start()
        .unwrap();
    let builder = TokenCredentials::builder(|| Ok(token(8, Duration::from_secs(60))));
    let text = format!(
        "{tokens:?} {builder:?} {:?}",
        token(9, Duration::from_secs(1))
    );
    assert!(!text.contains("secret-"), "{text}");
    assert!(
        text.contains("u7") && text.contains("generation: 0"),
        "{text}"
    );
}
