//! The module graph of every crate of `harness/` has no cycle: no two modules import from each other,
//! directly or in a ring (the architecture issue's acceptance; two rings were broken once and stay broken).
//!
//! A module is one source file; `crate::a::b::Name` (and `super::`/`self::` paths) is an edge to the longest
//! prefix that names a module file. `pub use` re-exports and inline `#[cfg(test)] mod tests` are left out:
//! they move names, they do not make one module's logic depend on another's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`replay::strategies::gemini`) → source file, for one crate's `src/`.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// The text that counts: inline test modules and `pub use` lines cut, comments dropped.
fn logic(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    body.lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with("//") && !l.starts_with("pub use") && !l.starts_with("pub(crate) use"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths written in `text` as `crate::…`, `super::…` or `self::…`, resolved against `module`; brace groups
/// of `use` lines are expanded one level (`use crate::a::{b, c::D}`).
fn referenced_paths(module: &str, text: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let here: Vec<String> = module.split("::").filter(|s| !s.is_empty()).map(String::from).collect();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !ident(bytes[i - 1]) && bytes[i - 1] != ':';
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let (mut base, skip) = if starts_word && rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if starts_word && rest.starts_with("super::") {
            (here[..here.len().saturating_sub(1)].to_vec(), 7)
        } else if starts_word && rest.starts_with("self::") {
            (here.clone(), 6)
        } else {
            i += 1;
            continue;
        };
        i += skip;
        // Further `super::` hops.
        while bytes[i..].iter().collect::<String>().starts_with("super::") {
            base.pop();
            i += 7;
        }
        loop {
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            if i > start {
                base.push(bytes[start..i].iter().collect());
            }
            if i + 1 < bytes.len() && bytes[i] == ':' && bytes[i + 1] == ':' {
                i += 2;
                if i < bytes.len() && bytes[i] == '{' {
                    let close = bytes[i..].iter().position(|&c| c == '}').map_or(bytes.len(), |p| i + p);
                    let group: String = bytes[i + 1..close].iter().collect();
                    for item in group.split(',') {
                        let mut p = base.clone();
                        p.extend(item.trim().split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
                        out.push(p);
                    }
                    i = close;
                    base.clear();
                    break;
                }
                continue;
            }
            break;
        }
        if !base.is_empty() {
            out.push(base);
        }
    }
    out
}

fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &mods {
        let text = logic(&std::fs::read_to_string(file).unwrap());
        let edges = graph.entry(module.clone()).or_default();
        for path in referenced_paths(module, &text) {
            let target = (0..=path.len()).rev().map(|n| path[..n].join("::")).find(|p| mods.contains_key(p));
            if let Some(t) = target {
                if &t != module && !t.is_empty() {
                    edges.insert(t);
                }
            }
        }
    }
    graph
}

/// Every cycle's modules, by Tarjan's strongly connected components.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_crate_of_the_harness_has_an_import_cycle() {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in ["src", "core/src", "datasets/src", "llm/src"] {
        let graph = module_graph(&harness.join(src));
        assert!(graph.len() > 5, "{src}: too few modules found ({})", graph.len());
        let found = cycles(&graph);
        assert!(found.is_empty(), "harness/{src}: modules importing each other (directly or in a ring): {found:?}");
    }
}

#[test]
fn the_cycle_check_sees_a_ring_and_resolves_paths() {
    let paths = referenced_paths(
        "replay::strategies::gemini",
        "use crate::replay::{strategy::Knob, window};\nsuper::common::call(x)",
    );
    assert!(paths.contains(&vec!["replay".into(), "strategy".into(), "Knob".into()]), "{paths:?}");
    assert!(paths.contains(&vec!["replay".into(), "window".into()]), "{paths:?}");
    assert!(paths.contains(&vec!["replay".into(), "strategies".into(), "common".into(), "call".into()]), "{paths:?}");
    let ring: BTreeMap<String, BTreeSet<String>> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")].into_iter().fold(BTreeMap::new(), |mut g, (x, y)| {
            g.entry(x.to_string()).or_default().insert(y.to_string());
            g
        });
    assert_eq!(cycles(&ring), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
}
