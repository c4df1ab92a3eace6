//! The modules of `availability` import one way: no cycle among them. A cycle there is
//! how decision state ended up with several owners before; this keeps it from coming
//! back. Read from the source tree (test code excluded).

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
