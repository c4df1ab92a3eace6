//! Stream commands against a real redis-server, over RESP2 and RESP3 (`XREAD` replies
//! with an array of pairs in RESP2 and a map in RESP3).

use crate::support;

use std::thread;
use std::time::{Duration, Instant};

use resilient_redis::prelude::*;
use resilient_redis::resp::Value;
use resilient_redis::ErrorKind;
use support::commands::{blocked_clients, each_protocol, server};
use support::wait_until;

type Read = Option<Vec<(String, Vec<StreamEntry>)>>;

#[test]
fn add_range_trim_delete() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let s = format!("{p}stream");
        let id1 = db
            .xadd(&s, "*", [("sensor", "a"), ("temp", "20.5")])
            .unwrap();
        assert!(id1.contains('-'), "{id1}");
        let id2 = db.xadd(&s, "*", ("sensor", "b")).unwrap();
        db.xadd(&s, "9999999999999-0", ("sensor", "c")).unwrap();
        let e = db.xadd(&s, "1-0", ("sensor", "old")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Server);
        assert_eq!(e.command(), Some("XADD"));
        assert_eq!(db.xlen(&s).unwrap(), 3);

        let entries: Vec<StreamEntry> = db.xrange(&s, "-", "+", None).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].id, id1);
        assert_eq!(entries[0].get("temp").map(String::as_str), Some("20.5"));
        assert_eq!(entries[0].fields[0].0, "sensor", "field order is kept");
        let first: Vec<StreamEntry<Vec<u8>>> = db.xrange(&s, "-", "+", Some(1)).unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].get("sensor").map(Vec::as_slice), Some(&b"a"[..]));
        let raw: Value = db.xrange(&s, &id2, &id2, None).unwrap();
        assert!(
            matches!(raw, Value::Array(ref v) if v.len() == 1),
            "{raw:?}"
        );

        assert_eq!(db.xdel(&s, [&id2, &"0-1".to_string()]).unwrap(), 1);
        assert_eq!(db.xtrim_maxlen(&s, 1, false).unwrap(), 1);
        let left: Vec<StreamEntry> = db.xrange(&s, "-", "+", None).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].id, "9999999999999-0");
        assert_eq!(db.xtrim_maxlen(&s, 100, true).unwrap(), 0);
    });
}

#[test]
fn xread_without_blocking() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let (a, b) = (format!("{p}xa"), format!("{p}xb"));
        db.xadd(&a, "1-1", ("n", 1)).unwrap();
        db.xadd(&a, "1-2", ("n", 2)).unwrap();
        db.xadd(&b, "2-1", ("n", 3)).unwrap();
        let got: Read = db.xread([&a, &b], ["0", "0"], Some(1)).unwrap();
        let got = got.expect("entries");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, a);
        assert_eq!(got[0].1.len(), 1, "COUNT 1 per stream");
        assert_eq!(got[0].1[0].id, "1-1");
        assert_eq!(got[1].1[0].get("n").map(String::as_str), Some("3"));
        let none: Read = db.xread(&a, "1-2", None).unwrap();
        assert_eq!(none, None);
    });
}

#[test]
fn xread_block_times_out_with_none_and_wakes_for_new_entries() {
    let Some(server) = server() else { return };
    each_protocol(&server, |db, p| {
        let s = format!("{p}events");
        let start = Instant::now();
        let got: Read = db
            .xread_block(&s, "$", Duration::from_millis(300), None)
            .unwrap();
        assert_eq!(got, None);
        assert!(start.elapsed() >= Duration::from_millis(290));

        let writer = db.clone();
        let key = s.clone();
        let t = thread::spawn(move || {
            assert!(wait_until(Duration::from_secs(5), || blocked_clients(
                &writer
            ) == 1));
            writer.xadd(&key, "*", ("kind", "created")).unwrap()
        });
        let start = Instant::now();
        let got: Read = db
            .xread_block(&s, "$", Duration::from_secs(10), Some(10))
            .unwrap();
        let id = t.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        let got = got.expect("the entry added meanwhile");
        assert_eq!(got[0].0, s);
        assert_eq!(got[0].1[0].id, id);
        assert_eq!(got[0].1[0].get("kind").map(String::as_str), Some("created"));
    });
}
