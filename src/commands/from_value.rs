//! `FromValue`: turning replies into Rust values, with errors that say what was
//! expected and what came (the type, never the payload).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hash};

use crate::error::{Error, ErrorKind, Result};
use crate::resp::Value;

/// A type a reply can be converted into.
pub trait FromValue: Sized {
    /// Converts one reply.
    fn from_value(v: Value) -> Result<Self>;

    /// Converts the items of a flat array where each `Self` spans several items
    /// (pairs in RESP2 replies such as `HGETALL` or `ZRANGE ... WITHSCORES`).
    /// `None` means `Self` is one item each.
    #[doc(hidden)]
    fn from_flat(_items: &mut std::vec::IntoIter<Value>) -> Option<Result<Self>> {
        None
    }

    /// Converts a reply into `Vec<Self>`: one item per element, except bytes, where a
    /// string reply is the vector (so `Vec<u8>` reads a binary-safe string).
    #[doc(hidden)]
    fn vec_from_value(v: Value) -> Result<Vec<Self>> {
        // A map reply (RESP3 HGETALL) becomes pairs when Self is a pair.
        if let Value::Map(pairs) = v {
            return pairs
                .into_iter()
                .map(|(k, v)| Self::from_value(Value::Array(vec![k, v])))
                .collect();
        }
        collect_items(items(v, "an array")?)
    }
}

pub(crate) fn mismatch(expected: &str, got: &Value) -> Error {
    if let Some(m) = got.error_message() {
        return Error::from_server_reply(m);
    }
    Error::new(
        ErrorKind::TypeMismatch,
        format!("expected {expected}, the reply was {}", got.type_name()),
    )
}

/// Unwraps attributes, which annotate a reply without changing it.
fn strip(v: Value) -> Value {
    match v {
        Value::Attribute { data, .. } => strip(*data),
        v => v,
    }
}

impl FromValue for Value {
    fn from_value(v: Value) -> Result<Value> {
        Ok(v)
    }
}

impl FromValue for () {
    fn from_value(v: Value) -> Result<()> {
        match strip(v) {
            v if v.is_error() => Err(mismatch("a reply", &v)),
            _ => Ok(()),
        }
    }
}

fn bytes_from_value(v: Value) -> Result<Vec<u8>> {
    {
        match strip(v) {
            Value::BulkString(b) => Ok(b),
            Value::SimpleString(s) => Ok(s.into_bytes()),
            Value::VerbatimString { text, .. } => Ok(text),
            Value::Int(i) => Ok(i.to_string().into_bytes()),
            Value::Double(d) => Ok(d.to_string().into_bytes()),
            Value::BigNumber(n) => Ok(n.into_bytes()),
            v => Err(mismatch("a string", &v)),
        }
    }
}

impl FromValue for String {
    fn from_value(v: Value) -> Result<String> {
        let bytes = bytes_from_value(v)?;
        String::from_utf8(bytes)
            .map_err(|_| Error::new(ErrorKind::TypeMismatch, "the reply is not valid UTF-8"))
    }
}

/// Parses a string reply that must be exactly a number: no whitespace is trimmed,
/// because Redis itself refuses `" 1"` as a number (`INCR`, `INCRBYFLOAT`), so a
/// client that read it as 1 would disagree with the server about the same value.
fn parse_text<T: std::str::FromStr>(bytes: &[u8], expected: &str) -> Result<T> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::TypeMismatch,
                format!("expected {expected}, the reply was a string that is not one"),
            )
        })
}

macro_rules! int_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: Value) -> Result<$t> {
                let expected = concat!("an integer (", stringify!($t), ")");
                match strip(v) {
                    Value::Int(i) => <$t>::try_from(i).map_err(|_| {
                        Error::new(ErrorKind::TypeMismatch, format!("{i} does not fit {}", stringify!($t)))
                    }),
                    Value::Boolean(b) => Ok(<$t>::from(b)),
                    Value::BulkString(b) => parse_text(&b, expected),
                    Value::SimpleString(s) => parse_text(s.as_bytes(), expected),
                    Value::BigNumber(n) => parse_text(n.as_bytes(), expected),
                    v => Err(mismatch(expected, &v)),
                }
            }
        }
    )*};
}
int_from_value!(i8, i16, i32, i64, i128, isize, u16, u32, u64, u128, usize);

impl FromValue for u8 {
    fn from_value(v: Value) -> Result<u8> {
        let n = i64::from_value(v)?;
        u8::try_from(n)
            .map_err(|_| Error::new(ErrorKind::TypeMismatch, format!("{n} does not fit u8")))
    }

    fn vec_from_value(v: Value) -> Result<Vec<u8>> {
        bytes_from_value(v)
    }
}

impl FromValue for f64 {
    fn from_value(v: Value) -> Result<f64> {
        match strip(v) {
            Value::Double(d) => Ok(d),
            Value::Int(i) => Ok(i as f64),
            Value::BulkString(b) => parse_float(&b),
            Value::SimpleString(s) => parse_float(s.as_bytes()),
            v => Err(mismatch("a number", &v)),
        }
    }
}

fn parse_float(bytes: &[u8]) -> Result<f64> {
    match bytes {
        b"inf" | b"+inf" => Ok(f64::INFINITY),
        b"-inf" => Ok(f64::NEG_INFINITY),
        _ => parse_text(bytes, "a number"),
    }
}

impl FromValue for f32 {
    fn from_value(v: Value) -> Result<f32> {
        f64::from_value(v).map(|d| d as f32)
    }
}

impl FromValue for bool {
    /// RESP3 booleans; integers (non-zero is true); the strings `1` and `0`; the status
    /// `OK` as true; nil as false. Any other string is a `TypeMismatch` error rather
    /// than `false`: `"687"` or `"yes"` is not a boolean, and reading it as one would
    /// disagree with the integer reply 687, which is true. The same rules as redis-rs.
    fn from_value(v: Value) -> Result<bool> {
        const EXPECTED: &str = "a boolean (1 or 0)";
        let not_a_boolean = || {
            Error::new(
                ErrorKind::TypeMismatch,
                format!("expected {EXPECTED}, the reply was a string that is not one"),
            )
        };
        match strip(v) {
            Value::Boolean(b) => Ok(b),
            Value::Int(i) => Ok(i != 0),
            Value::Nil => Ok(false),
            Value::SimpleString(s) => match s.as_str() {
                "1" | "OK" => Ok(true),
                "0" => Ok(false),
                _ => Err(not_a_boolean()),
            },
            Value::BulkString(b) => match b.as_slice() {
                b"1" => Ok(true),
                b"0" => Ok(false),
                _ => Err(not_a_boolean()),
            },
            v => Err(mismatch(EXPECTED, &v)),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: Value) -> Result<Option<T>> {
        match strip(v) {
            Value::Nil => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// The items of an aggregate reply; a map is flattened key, value, key, value.
fn items(v: Value, expected: &str) -> Result<Vec<Value>> {
    match strip(v) {
        Value::Array(items) | Value::Set(items) | Value::Push(items) => Ok(items),
        Value::Map(pairs) => Ok(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
        Value::Nil => Ok(Vec::new()),
        v => Err(mismatch(expected, &v)),
    }
}

fn collect_items<T: FromValue>(items: Vec<Value>) -> Result<Vec<T>> {
    let flat_pairs = items
        .first()
        .is_some_and(|first| !matches!(first, Value::Array(_) | Value::Map(_)));
    let mut iter = items.into_iter();
    let mut out = Vec::with_capacity(iter.len());
    if flat_pairs {
        if let Some(first) = T::from_flat(&mut iter) {
            out.push(first?);
            while iter.len() > 0 {
                match T::from_flat(&mut iter) {
                    Some(item) => out.push(item?),
                    None => break,
                }
            }
            return Ok(out);
        }
    }
    for item in iter {
        out.push(T::from_value(item)?);
    }
    Ok(out)
}

impl<T: FromValue> FromValue for Vec<T> {
    fn from_value(v: Value) -> Result<Vec<T>> {
        T::vec_from_value(v)
    }
}

impl<T: FromValue + Eq + Hash, S: BuildHasher + Default> FromValue for HashSet<T, S> {
    fn from_value(v: Value) -> Result<HashSet<T, S>> {
        Ok(Vec::<T>::from_value(v)?.into_iter().collect())
    }
}

fn pairs(v: Value) -> Result<Vec<(Value, Value)>> {
    match strip(v) {
        Value::Map(pairs) => Ok(pairs),
        // A RESP3 set is members, not fields and values: pairing them up would make a
        // map that the server never sent (found by tests/client/differential.rs).
        v @ (Value::Set(_) | Value::Push(_)) => Err(mismatch("a map", &v)),
        v => {
            let items = items(v, "a map")?;
            if items.len() % 2 != 0 {
                return Err(Error::new(
                    ErrorKind::TypeMismatch,
                    "expected a map, the reply was an array of odd length",
                ));
            }
            let mut it = items.into_iter();
            let mut out = Vec::with_capacity(it.len() / 2);
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((k, v));
            }
            Ok(out)
        }
    }
}

impl<K: FromValue + Eq + Hash, V: FromValue, S: BuildHasher + Default> FromValue
    for HashMap<K, V, S>
{
    fn from_value(v: Value) -> Result<HashMap<K, V, S>> {
        pairs(v)?
            .into_iter()
            .map(|(k, v)| Ok((K::from_value(k)?, V::from_value(v)?)))
            .collect()
    }
}

impl<K: FromValue + Ord, V: FromValue> FromValue for BTreeMap<K, V> {
    fn from_value(v: Value) -> Result<BTreeMap<K, V>> {
        pairs(v)?
            .into_iter()
            .map(|(k, v)| Ok((K::from_value(k)?, V::from_value(v)?)))
            .collect()
    }
}

macro_rules! tuple_from_value {
    ($n:expr; $($name:ident)+) => {
        impl<$($name: FromValue),+> FromValue for ($($name,)+) {
            fn from_value(v: Value) -> Result<Self> {
                let items = items(v, concat!("an array of ", stringify!($n)))?;
                if items.len() != $n {
                    return Err(Error::new(
                        ErrorKind::TypeMismatch,
                        format!("expected an array of {}, the reply had {}", $n, items.len()),
                    ));
                }
                let mut it = items.into_iter();
                Ok(($($name::from_value(it.next().unwrap_or(Value::Nil))?,)+))
            }

            fn from_flat(items: &mut std::vec::IntoIter<Value>) -> Option<Result<Self>> {
                if items.len() < $n {
                    return Some(Err(Error::new(
                        ErrorKind::TypeMismatch,
                        format!("expected groups of {}, the reply had {} left over", $n, items.len()),
                    )));
                }
                Some((|| Ok(($($name::from_value(items.next().unwrap_or(Value::Nil))?,)+)))())
            }
        }
    };
}
tuple_from_value!(1; A);
tuple_from_value!(2; A B);
tuple_from_value!(3; A B C);
tuple_from_value!(4; A B C D);

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn scalars_convert_across_reply_types() {
        assert_eq!(i64::from_value(bulk("42")).unwrap(), 42);
        assert_eq!(String::from_value(Value::Int(7)).unwrap(), "7");
        assert_eq!(f64::from_value(bulk("inf")).unwrap(), f64::INFINITY);
        assert!(bool::from_value(Value::SimpleString("OK".into())).unwrap());
        assert_eq!(Option::<String>::from_value(Value::Nil).unwrap(), None);
        let e = i64::from_value(bulk("zqzq")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch);
        assert!(!e.to_string().contains("zqzq"), "payload leaked: {e}");
        assert_eq!(
            u8::from_value(Value::Int(300)).unwrap_err().kind(),
            ErrorKind::TypeMismatch
        );
    }

    /// The reports: "687" read as false, " 1" read as 1.
    #[test]
    fn what_is_not_exactly_a_number_or_a_boolean_is_refused() {
        for text in ["687", "yes", "true", "OK", "", " 1", "1 ", "10"] {
            let e = bool::from_value(bulk(text)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{text:?}");
        }
        for text in ["yes", "2", " 1"] {
            let e = bool::from_value(Value::SimpleString(text.into())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{text:?}");
        }
        assert!(bool::from_value(bulk("1")).unwrap());
        assert!(!bool::from_value(bulk("0")).unwrap());
        assert!(!bool::from_value(Value::SimpleString("0".into())).unwrap());
        assert!(bool::from_value(Value::Int(687)).unwrap());
        assert!(!bool::from_value(Value::Nil).unwrap());
        assert_eq!(
            bool::from_value(Value::Double(1.0)).unwrap_err().kind(),
            ErrorKind::TypeMismatch
        );
        for text in [" 1", "1 ", "\t1", "1\n", "", "1.5", "0x10", "1e3"] {
            for e in [
                i64::from_value(bulk(text)).unwrap_err(),
                i64::from_value(Value::SimpleString(text.into())).unwrap_err(),
                u32::from_value(bulk(text)).unwrap_err(),
            ] {
                assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{text:?}");
            }
        }
        for text in [" 1.5", "1.5 ", " inf", "", "0x10"] {
            let e = f64::from_value(bulk(text)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{text:?}");
        }
        assert_eq!(i64::from_value(bulk("-12")).unwrap(), -12);
        assert_eq!(f64::from_value(bulk("1e3")).unwrap(), 1000.0);
        assert_eq!(f64::from_value(bulk("-inf")).unwrap(), f64::NEG_INFINITY);
    }

    #[test]
    fn pairs_come_from_flat_arrays_and_maps() {
        let flat = Value::Array(vec![bulk("a"), bulk("1.5"), bulk("b"), bulk("2")]);
        let v: Vec<(String, f64)> = FromValue::from_value(flat).unwrap();
        assert_eq!(v, vec![("a".into(), 1.5), ("b".into(), 2.0)]);
        let nested = Value::Array(vec![
            Value::Array(vec![bulk("a"), Value::Double(1.5)]),
            Value::Array(vec![bulk("b"), Value::Double(2.0)]),
        ]);
        let v: Vec<(String, f64)> = FromValue::from_value(nested).unwrap();
        assert_eq!(v, vec![("a".into(), 1.5), ("b".into(), 2.0)]);
        let map = Value::Map(vec![(bulk("f"), bulk("v"))]);
        let m: HashMap<String, String> = FromValue::from_value(map.clone()).unwrap();
        assert_eq!(m["f"], "v");
        let v: Vec<(String, String)> = FromValue::from_value(map).unwrap();
        assert_eq!(v, vec![("f".into(), "v".into())]);
        let odd = Value::Array(vec![bulk("a")]);
        assert!(HashMap::<String, String>::from_value(odd).is_err());
        let set = Value::Set(vec![bulk("a"), bulk("b")]);
        let e = BTreeMap::<String, String>::from_value(set).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch);
    }

    #[test]
    fn error_replies_inside_aggregates_surface_classified() {
        let v = Value::Array(vec![Value::Error("WRONGTYPE bad".into())]);
        let e = Vec::<String>::from_value(v).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WrongType);
    }
}
