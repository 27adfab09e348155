//! `connection/` stays in one-way layers: the host's handle over the tasks,
//! the tasks over the state they share, the state over the leaves. A module
//! may use modules of its own layer or below, never above, and no modules
//! may form a cycle. A new module must be given a layer here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `connection/` and its layer (higher uses lower).
const LAYERS: &[(&str, u8)] = &[
    // The host's handle: spawns the tasks, makes the host's calls.
    ("handle", 5),
    // The tasks that read, watch and drain the agent.
    ("reader", 4),
    // The reader's work when the host reads stdout on its own thread.
    ("host_reader", 4),
    ("stderr", 4),
    ("supervisor", 4),
    // Work the tasks hand their lines to.
    ("builtin_route", 3),
    ("text_run", 3),
    // The state every task shares, and what spans its pieces.
    ("shared", 2),
    // The pieces of that state, one owner each.
    ("host_queue", 1),
    ("lifecycle", 1),
    ("requests", 1),
    ("stderr_log", 1),
    ("views", 1),
    ("wire", 1),
    // Leaves: types, encodings, the trace, the worker slice.
    ("config", 0),
    ("cut_results", 0),
    ("delivery", 0),
    ("event", 0),
    ("exit", 0),
    ("trace", 0),
    ("worker_slice", 0),
];

/// The `connection` modules `source` names (`super::x`,
/// `crate::connection::x`, also inside `use super::{x, y::z}`), outside
/// comments and before its tests (where `super` is the file's own module).
fn named_modules(source: &str) -> BTreeSet<String> {
    let code: String = source
        .split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    for prefix in ["super::", "crate::connection::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(prefix) {
            rest = &rest[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let first = item.trim().split("::").next().unwrap_or("").trim();
                    if !first.is_empty() {
                        names.insert(first.to_string());
                    }
                }
            } else {
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !ident.is_empty() {
                    names.insert(ident);
                }
            }
        }
    }
    names
}

#[test]
fn connection_modules_only_use_their_own_layer_or_below() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/connection");
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut faults = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/connection") {
        let path = entry.expect("a directory entry").path();
        // A module split into a folder is read through its own files'
        // layer: its inner `super::` names its siblings, not ours.
        let Some(module) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".rs"))
        else {
            continue;
        };
        if module == "mod" {
            continue;
        }
        let Some(&layer) = layers.get(module) else {
            faults.push(format!("connection/{module}.rs has no layer in LAYERS"));
            continue;
        };
        let source = std::fs::read_to_string(&path).expect("a module's source");
        for used in named_modules(&source) {
            match layers.get(used.as_str()) {
                Some(&to) if to > layer => faults.push(format!(
                    "{module} (layer {layer}) uses {used} (layer {to}): an upward import"
                )),
                Some(_) => {
                    edges.entry(module.to_string()).or_default().insert(used);
                }
                // Not a module of ours (an item of mod.rs, say).
                None => {}
            }
        }
    }
    for cycle in cycles(&edges) {
        faults.push(format!("an import cycle: {}", cycle.join(" -> ")));
    }
    assert!(
        faults.is_empty(),
        "connection/ layering broken:\n{}",
        faults.join("\n")
    );
}

/// One cycle through each module that is on one (depth-first search).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            found.push(cycle);
            return;
        }
        if !done.insert(node.to_string()) {
            return;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn the_reader_of_imports_sees_grouped_and_inline_paths() {
    let source = "use super::{event::Event, shared::Shared};\n\
                  use crate::connection::views::Views;\n\
                  // super::handle in a comment\n\
                  fn f() { super::worker_slice::offer().await; }\n\
                  #[cfg(test)]\nmod tests { use super::*; }\n";
    let names: Vec<String> = named_modules(source).into_iter().collect();
    assert_eq!(names, ["event", "shared", "views", "worker_slice"]);
}
