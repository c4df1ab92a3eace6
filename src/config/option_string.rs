//! Option strings: `host:port,key=value,key="quoted, value",...`.
//!
//! Owns: splitting the string into items (a double-quoted value may hold commas),
//! telling endpoints from `key=value` pairs, and the quoting `Display` writes back.
//! Must never: quote an item in an error (see `keys`: an item after an unquoted
//! password may hold part of it).

use std::borrow::Cow;

use super::parse::{config_error, Position};
use super::settings::Settings;
use super::Options;
use crate::error::Result;

/// Parses an option string (see `Options::parse` for the syntax).
pub(super) fn parse_option_string(s: &str) -> Result<Options> {
    let mut settings = Settings::new(false);
    let mut rest = Some(s);
    let mut index = 0;
    while let Some(text) = rest {
        index += 1;
        let at = Position::Item(index);
        let (item, next) = next_item(text, at)?;
        rest = next;
        match item {
            // Why skip: a trailing comma is common in strings assembled by templates
            // and carries nothing. It still counts, so "item 3" is the third
            // comma-separated piece the user sees.
            Item::Empty => {}
            Item::Endpoint(endpoint) => settings.add_endpoint(endpoint, at)?,
            Item::Pair { key, value, quoted } => settings.apply(key, &value, quoted, at)?,
        }
    }
    settings.finish()
}

/// One item of an option string.
#[derive(Debug, PartialEq, Eq)]
enum Item<'a> {
    Empty,
    Endpoint(&'a str),
    /// `key=value`, trimmed; a quoted value is unescaped and kept as written inside
    /// its quotes (whitespace included).
    Pair {
        key: &'a str,
        value: Cow<'a, str>,
        quoted: bool,
    },
}

/// Reads the item at the start of `text`; returns it and what follows its comma (`None`
/// at the end of the input).
fn next_item(text: &str, at: Position) -> Result<(Item<'_>, Option<&str>)> {
    let comma = text.find(',');
    let equals = text.find('=').filter(|&e| comma.is_none_or(|c| e < c));
    let Some(equals) = equals else {
        let (item, next) = split_at_comma(text, comma);
        let item = item.trim();
        let item = if item.is_empty() {
            Item::Empty
        } else {
            Item::Endpoint(item)
        };
        return Ok((item, next));
    };
    let key = text[..equals].trim();
    let after = &text[equals + 1..];
    let value_start = after.trim_start();
    if let Some(quoted) = value_start.strip_prefix('"') {
        let (value, tail) = unquote(quoted, at)?;
        let tail = tail.trim_start();
        let next = match tail.strip_prefix(',') {
            Some(next) => Some(next),
            None if tail.is_empty() => None,
            None => {
                return Err(config_error(format!(
                    "unexpected text after the closing quote at {at}: a quoted value must be followed by ',' or the end"
                )))
            }
        };
        let item = Item::Pair {
            key,
            value: Cow::Owned(value),
            quoted: true,
        };
        return Ok((item, next));
    }
    let (value, next) = split_at_comma(after, after.find(','));
    let item = Item::Pair {
        key,
        value: Cow::Borrowed(value.trim()),
        quoted: false,
    };
    Ok((item, next))
}

fn split_at_comma(text: &str, comma: Option<usize>) -> (&str, Option<&str>) {
    match comma {
        Some(c) => (&text[..c], Some(&text[c + 1..])),
        None => (text, None),
    }
}

/// Reads a quoted value whose opening quote is already consumed: up to the closing
/// quote, with `\"` and `\\` as the only escapes. Returns the value and what follows
/// the closing quote.
fn unquote(text: &str, at: Position) -> Result<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &text[i + 1..])),
            '\\' => match chars.next() {
                Some((_, escaped @ ('"' | '\\'))) => value.push(escaped),
                // Why strict: a lenient rule (keep the backslash, or drop it) would turn a
                // mistyped secret into a different one in silence; an error says so.
                _ => {
                    return Err(config_error(format!(
                        "bad escape in the quoted value at {at}: inside double quotes only \\\" and \\\\ are escapes"
                    )))
                }
            },
            c => value.push(c),
        }
    }
    Err(config_error(format!(
        "unterminated quoted value at {at}: a value that starts with '\"' ends with '\"' (write \\\" for a quote inside it)"
    )))
}

/// Whether `value` must be quoted to be read back as it is: it holds a comma, starts
/// with a quote, is empty, or starts or ends with whitespace (which is trimmed).
pub(super) fn needs_quotes(value: &str) -> bool {
    value.is_empty()
        || value.contains(',')
        || value.starts_with('"')
        || value.starts_with(char::is_whitespace)
        || value.ends_with(char::is_whitespace)
}

/// `value` as an option-string value: as it is when that reads back, else in double
/// quotes with `"` and `\` escaped.
pub(super) fn quote_if_needed(value: &str) -> Cow<'_, str> {
    if !needs_quotes(value) {
        return Cow::Borrowed(value);
    }
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    Cow::Owned(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(s: &str) -> Vec<Item<'_>> {
        let mut out = Vec::new();
        let mut rest = Some(s);
        let mut index = 0;
        while let Some(text) = rest {
            index += 1;
            let (item, next) = next_item(text, Position::Item(index)).unwrap();
            out.push(item);
            rest = next;
        }
        out
    }

    fn pair<'a>(key: &'a str, value: &'a str, quoted: bool) -> Item<'a> {
        Item::Pair {
            key,
            value: Cow::Borrowed(value),
            quoted,
        }
    }

    #[test]
    fn items_split_at_commas_outside_quotes() {
        assert_eq!(
            items(r#"h:1, password = "a,b\"c\\d" ,x=y=z,,"#),
            vec![
                Item::Endpoint("h:1"),
                pair("password", r#"a,b"c\d"#, true),
                pair("x", "y=z", false),
                Item::Empty,
                Item::Empty,
            ]
        );
        // Inside quotes, whitespace is kept; a quote not at the start is plain text.
        assert_eq!(
            items(r#"k=" a ",k=a"b,k="""#),
            vec![
                pair("k", " a ", true),
                pair("k", "a\"b", false),
                pair("k", "", true)
            ]
        );
    }

    #[test]
    fn malformed_quotes_are_errors_that_quote_nothing() {
        for (s, expected) in [
            (
                r#"password="abc,def"#,
                "unterminated quoted value at item 1",
            ),
            (
                r#"password="ab"cd,e"#,
                "unexpected text after the closing quote at item 1",
            ),
            (
                r#"password="a\nb""#,
                "bad escape in the quoted value at item 1",
            ),
            (
                r#"password="a\"#,
                "bad escape in the quoted value at item 1",
            ),
        ] {
            let e = next_item(s, Position::Item(1)).unwrap_err().to_string();
            assert!(e.contains(expected), "{s}: {e}");
            for fragment in ["abc", "def", "ab", "cd"] {
                assert!(!e.contains(fragment), "{s}: {e}");
            }
        }
    }

    #[test]
    fn quoting_is_added_only_where_needed_and_reads_back() {
        for (value, written) in [
            ("plain", "plain"),
            (r"C:\ca.pem", r"C:\ca.pem"),
            ("a\"b", "a\"b"),
            ("a,b", r#""a,b""#),
            ("\"a", r#""\"a""#),
            (" a", r#"" a""#),
            ("a\t", "\"a\t\""),
            ("", r#""""#),
            (r#"x,\"y"#, r#""x,\\\"y""#),
        ] {
            assert_eq!(quote_if_needed(value), written);
            let item = format!("k={written}");
            let parsed = items(&item);
            assert_eq!(parsed.len(), 1, "{item}");
            match &parsed[0] {
                Item::Pair { value: back, .. } => assert_eq!(back, value, "{item}"),
                other => panic!("{item}: {other:?}"),
            }
        }
    }
}
