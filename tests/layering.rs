//! The crate's layers import one way, and so do the modules of `availability`.
//!
//! Top level: a module imports only from the layers listed before its own (see
//! `LAYERS` and CONTRIBUTING.md, "Layers"); where a lower layer must reach a higher
//! one, it defines a trait the higher one implements. Inside `availability`: no
//! cycle, which is how decision state ended up with several owners before. Both are
//! read from the source tree, test code excluded. Its own test binary: it reads files
//! and does not link the crate, so it costs little to build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `availability`'s modules and the sibling modules each one names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/availability");
    let mut files: Vec<(String, String, bool)> = Vec::new();
    for entry in std::fs::read_dir(&root).expect("src/availability") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).expect("a module folder") {
                let inner = inner.expect("entry").path();
                let is_mod = inner.file_name().is_some_and(|n| n == "mod.rs");
                files.push((name.clone(), read(&inner), is_mod));
            }
        } else if name != "mod" {
            files.push((name, read(&path), true));
        }
    }
    let modules: BTreeSet<String> = files.iter().map(|(m, _, _)| m.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text, super_is_availability) in &files {
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut names = Vec::new();
        if *super_is_availability {
            names.extend(paths_after(code, "super::"));
        }
        names.extend(paths_after(code, "crate::availability::"));
        let edges = graph.entry(module.clone()).or_default();
        for n in names {
            if modules.contains(&n) && n != *module {
                edges.insert(n);
            }
        }
    }
    graph
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The lowercase identifiers right after each `prefix` (module names, not items).
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    code.match_indices(prefix)
        .map(|(i, _)| {
            code[i + prefix.len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect::<String>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// A cycle, if there is one, as the modules along it.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(c) = visit(node, graph, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn availability_modules_import_one_way() {
    let graph = graph();
    assert!(graph.contains_key("core") && graph.contains_key("group"));
    assert_eq!(cycle(&graph), None, "an import cycle in src/availability");
    // The decision core imports nothing that does IO or holds state of its own.
    let core = &graph["core"];
    for forbidden in [
        "group",
        "member",
        "supervisor",
        "shared",
        "checks",
        "router",
    ] {
        assert!(!core.contains(forbidden), "core imports {forbidden}");
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert!(cycle(&g).is_some());
}

// ---------------------------------------------------------------------------------
// The crate's top-level layers.

/// The top-level modules from the bottom up. A module may import from the layers
/// before its own, never from its own layer's other modules or a later layer.
const LAYERS: &[&[&str]] = &[
    &["error"],
    // `metrics`: what every layer records through (imports only `error`).
    &["resp", "clock", "resolve", "metrics"],
    &["config"],
    // One command as data (`Cmd`, `ToArgs`, flags, `RetryCategory`).
    &["command"],
    // Breaker, retry and fault policies, which connection and commands consult.
    &["policy"],
    // Maintenance's socket-free parts: parsing, relaxed-timeout state, decisions.
    &["maintenance"],
    &["connection"],
    &["pubsub"],
    &["client"],
    &["commands"],
    &["availability"],
    &["compat", "testkit"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// One import that crosses into another top-level module.
#[derive(Debug)]
struct Import {
    file: String,
    from: String,
    to: String,
    text: String,
}

/// `text` with comments, string and char literals blanked (newlines kept), so doc
/// links and messages never count as imports.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let start = i + 2 + hashes;
            let end = text[start..]
                .find(&close)
                .map_or(b.len(), |p| start + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '{'), not a lifetime ('a).
            let len = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(len) => {
                    blank(&mut out, i, i + len);
                    i += len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `code` without the items under a `#[cfg(...test...)]` attribute.
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(") {
        let attr_end = match rest[at..].find(")]") {
            Some(p) => at + p + 2,
            None => break,
        };
        let attr = &rest[at..attr_end];
        let is_test = attr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == "test");
        if !is_test {
            out.push_str(&rest[..attr_end]);
            rest = &rest[attr_end..];
            continue;
        }
        out.push_str(&rest[..at]);
        // The item ends at its first `;` outside braces, or its matching `}`.
        let item = &rest[attr_end..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Files that only tests compile: `*_tests.rs`, and modules declared under a
/// `#[cfg(...test...)]` (with their folders).
fn test_only(files: &[(std::path::PathBuf, String)]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for (path, text) in files {
        let dir = if path
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
        {
            path.parent().expect("a folder").to_path_buf()
        } else {
            path.with_extension("")
        };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(name) = line
                .trim_start_matches("pub(crate) ")
                .strip_prefix("mod ")
                .and_then(|l| l.strip_suffix(';'))
            else {
                continue;
            };
            let attrs: Vec<&str> = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.starts_with("#["))
                .copied()
                .collect();
            let is_test = attrs.iter().any(|a| {
                a.starts_with("#[cfg(")
                    && a.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .any(|w| w == "test")
            });
            if !is_test {
                continue;
            }
            match attrs.iter().find_map(|a| a.strip_prefix("#[path = \"")) {
                Some(p) => out.push(
                    path.parent()
                        .expect("a folder")
                        .join(p.trim_end_matches("\"]")),
                ),
                None => {
                    out.push(dir.join(format!("{name}.rs")));
                    out.push(dir.join(name));
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The identifiers a path names right after `at`: `x` in `x::..`, or each first
/// segment of a `{a::b, c}` group.
fn first_segments(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(group) = code.trim_start().strip_prefix('{') {
        let mut names = Vec::new();
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    names.push(ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        names.retain(|n| !n.is_empty());
        names
    } else {
        vec![ident(code)]
    }
}

/// Every import, outside test code, from one top-level module into another.
fn imports() -> (Vec<String>, Vec<Import>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: Vec<(std::path::PathBuf, String)> =
        paths.into_iter().map(|p| (p.clone(), read(&p))).collect();
    let tests_only = test_only(&files);
    let lib = strip(&read(&src.join("lib.rs")));
    let top: Vec<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub ")
                .or(l.strip_prefix("pub(crate) "))
                .unwrap_or(l);
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect();
    // `crate::Name` for a root re-export counts as the module it comes from.
    let mut root: BTreeMap<String, String> = BTreeMap::new();
    for (at, _) in lib.match_indices("pub use ") {
        let stmt = &lib[at + "pub use ".len()..];
        let stmt = stmt.strip_prefix("crate::").unwrap_or(stmt);
        let Some((module, rest)) = stmt.split_once("::") else {
            continue;
        };
        if top.iter().any(|t| t == module) {
            for name in first_segments(rest) {
                root.insert(name, module.to_string());
            }
            let single: String = rest.split(';').next().unwrap_or_default().to_string();
            if let Some(last) = single.rsplit("::").next() {
                if !last.contains('{') {
                    root.insert(last.trim().to_string(), module.to_string());
                }
            }
        }
    }
    let mut found = Vec::new();
    for (path, text) in &files {
        let rel = path.strip_prefix(&src).expect("under src");
        let name = rel.to_string_lossy().replace('\\', "/");
        if name == "lib.rs"
            || name.ends_with("_tests.rs")
            || tests_only.iter().any(|t| path.starts_with(t))
        {
            continue;
        }
        // The module path of this file: src/a/b.rs and src/a/b/mod.rs are a::b.
        let mut module: Vec<String> = name
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_string)
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let from = module[0].clone();
        let code = without_test_items(&strip(text));
        let mut targets: Vec<(usize, Vec<String>)> = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            targets.push((at, first_segments(&code[at + "crate::".len()..])));
        }
        let mut at = 0;
        while let Some(p) = code[at..].find("super::") {
            let start = at + p;
            let before = code[..start].chars().next_back();
            let mut end = start;
            let mut depth = 0;
            while code[end..].starts_with("super::") {
                end += "super::".len();
                depth += 1;
            }
            at = end;
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            // Only a path that climbs to the crate root leaves this top-level module.
            if depth == module.len() {
                targets.push((start, first_segments(&code[end..])));
            }
        }
        for (at, names) in targets {
            let line_start = code[..at].rfind('\n').map_or(0, |p| p + 1);
            let line_end = code[at..].find('\n').map_or(code.len(), |p| at + p);
            let line = text.get(line_start..line_end).unwrap_or_default().trim();
            for n in names {
                let to = if top.contains(&n) {
                    n
                } else if let Some(m) = root.get(&n) {
                    m.clone()
                } else {
                    continue;
                };
                if to != from {
                    found.push(Import {
                        file: format!("src/{name}"),
                        from: from.clone(),
                        to,
                        text: line.to_string(),
                    });
                }
            }
        }
    }
    (top, found)
}

#[test]
fn every_top_level_module_has_a_layer() {
    let (top, _) = imports();
    for m in &top {
        assert!(
            layer_of(m).is_some(),
            "src/{m} is in no layer: add it to LAYERS in tests/layering.rs (and to \
             CONTRIBUTING.md, \"Layers\")"
        );
    }
    for m in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(
            top.iter().any(|t| t == m),
            "LAYERS names {m}, which lib.rs does not declare"
        );
    }
}

#[test]
fn top_level_modules_import_only_from_lower_layers() {
    let (_, imports) = imports();
    // The scan must see the imports it is there to police.
    assert!(imports
        .iter()
        .any(|i| i.from == "client" && i.to == "connection"));
    assert!(imports
        .iter()
        .any(|i| i.from == "commands" && i.to == "client"));
    let upward: Vec<String> = imports
        .iter()
        .filter(|i| match (layer_of(&i.from), layer_of(&i.to)) {
            (Some(from), Some(to)) => to >= from,
            _ => false,
        })
        .map(|i| format!("{} ({} -> {}): {}", i.file, i.from, i.to, i.text))
        .collect();
    assert!(
        upward.is_empty(),
        "imports from the same or a higher layer (define a trait below, move the type \
         down, or move the impl up):\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_import_scan_reads_paths_as_the_compiler_does() {
    let code = strip(
        "use crate::{a::X, b::{c, d}};\n// crate::doc\nlet s = \"crate::str\"; let c = '{';\n\
         #[cfg(test)]\nmod tests { use crate::t; }\nuse crate::e;",
    );
    let code = without_test_items(&code);
    assert!(!code.contains("doc") && !code.contains("str") && !code.contains("crate::t"));
    assert_eq!(first_segments("{a::X, b::{c, d}};"), ["a", "b"]);
    assert_eq!(first_segments("e::f;"), ["e"]);
    assert!(code.contains("crate::e"));
}
