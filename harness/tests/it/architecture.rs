//! The module graph of every crate of `harness/` has no cycle: no two modules import from each other,
//! directly or in a ring (the architecture issue's acceptance; two rings were broken once and stay broken).
//!
//! A module is one source file; `crate::a::b::Name` (and `super::`/`self::` paths) is an edge to the longest
//! prefix that names a module file, followed through that module's `pub use` re-exports to the module that
//! defines the name (a re-export hides a ring, it does not break one). The `pub use` lines themselves and
//! inline `#[cfg(test)] mod tests` are not edges: they move names, they do not make one module's logic
//! depend on another's.

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
    logic_with_reexports(text)
        .lines()
        .filter(|l| !l.starts_with("pub use") && !l.starts_with("pub(crate) use"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text without inline test modules and comments (the re-exports kept).
fn logic_with_reexports(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    body.lines().map(str::trim_start).filter(|l| !l.starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Paths written in `text` as `crate::…`, `super::…` or `self::…`, resolved against `module`; brace groups
/// of `use` lines are expanded one level (`use crate::a::{b, c::D}`, and right after the prefix:
/// `use crate::{a, b::C}`, `use super::{b, c}`).
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
            // A brace group, right after the prefix (`use crate::{a, b}`) or after a module (`crate::a::{b, c}`).
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
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            if i > start {
                base.push(bytes[start..i].iter().collect());
            }
            if i + 1 < bytes.len() && bytes[i] == ':' && bytes[i + 1] == ':' {
                i += 2;
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

/// Re-exports of one module: exported name → the path it names (absolute, without `crate`), from its
/// `pub use` and `pub(crate) use` statements (one brace group deep, `as` renames kept).
fn reexports(module: &str, text: &str) -> BTreeMap<String, Vec<String>> {
    let here: Vec<String> = module.split("::").filter(|s| !s.is_empty()).map(String::from).collect();
    let absolute = |segs: Vec<String>| -> Vec<String> {
        let mut out = here.clone();
        let mut rest = segs.as_slice();
        match rest.first().map(String::as_str) {
            Some("crate") => {
                out.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            _ => {}
        }
        while rest.first().map(String::as_str) == Some("super") {
            out.pop();
            rest = &rest[1..];
        }
        out.extend(rest.iter().cloned());
        out
    };
    let mut out = BTreeMap::new();
    for statement in text.split(';') {
        let s = statement.trim_start();
        let Some(body) = s.strip_prefix("pub use ").or_else(|| s.strip_prefix("pub(crate) use ")) else { continue };
        let body: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
        let (base, items): (&str, Vec<&str>) = match body.split_once('{') {
            Some((base, group)) => (base.trim_end_matches("::"), group.trim_end_matches('}').split(',').collect()),
            None => ("", vec![body.as_str()]),
        };
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty() && *i != "*") {
            let (path, name) = match item.split_once(" as ") {
                Some((p, alias)) => (p.trim(), alias.trim().to_string()),
                None => (item, item.rsplit("::").next().unwrap_or(item).to_string()),
            };
            let segs: Vec<String> = base
                .split("::")
                .chain(path.split("::"))
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            out.insert(name, absolute(segs));
        }
    }
    out
}

/// The module a path lands in: the longest prefix that names a module, followed through that module's
/// re-exports (`crate::sweep::error::RunError` → `sweep::error` when `sweep` says `pub use runner::RunError` and
/// `runner` says `pub use super::error::RunError`).
fn resolve(
    path: &[String],
    mods: &BTreeMap<String, PathBuf>,
    exports: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
) -> Option<String> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let n = (0..=path.len()).rev().find(|&n| mods.contains_key(&path[..n].join("::")))?;
        let module = path[..n].join("::");
        let Some(target) = path.get(n).and_then(|name| exports.get(&module)?.get(name)) else { return Some(module) };
        let mut next = target.clone();
        next.extend(path[n + 1..].iter().cloned());
        path = next;
    }
    None
}

fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let texts: BTreeMap<String, String> =
        mods.iter().map(|(m, f)| (m.clone(), std::fs::read_to_string(f).unwrap())).collect();
    let exports: BTreeMap<String, BTreeMap<String, Vec<String>>> =
        texts.iter().map(|(m, t)| (m.clone(), reexports(m, &logic_with_reexports(t)))).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in &texts {
        let text = logic(text);
        let edges = graph.entry(module.clone()).or_default();
        for path in referenced_paths(module, &text) {
            if let Some(t) = resolve(&path, &mods, &exports) {
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

/// A source tree of `files` (path, text) in a fresh temporary directory, removed when dropped.
fn planted(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Issue #23: a ring hidden behind a `pub use` (`b` imports `a::Thing`, which `a` re-exports from
/// `a::inner`, which imports `b`) is a ring.
#[test]
fn the_cycle_check_follows_reexports() {
    let tree = planted(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a/mod.rs", "pub mod inner;\npub use inner::{Other, Thing as Thing};\n"),
        ("a/inner.rs", "pub struct Thing;\npub struct Other;\npub fn f() { crate::b::g() }\n"),
        ("b.rs", "use crate::a::Thing;\npub fn g() {}\n"),
        ("c.rs", "pub fn h() {}\n"),
        ("d.rs", "pub fn i() {}\n"),
        ("e.rs", "pub fn j() {}\n"),
    ]);
    let dir = tree.path();
    let graph = module_graph(dir);
    assert!(graph["b"].contains("a::inner"), "{graph:?}");
    assert_eq!(cycles(&graph), vec![vec!["a::inner".to_string(), "b".into()]]);
    // Without the re-export there is no ring.
    std::fs::write(dir.join("b.rs"), "pub fn g() {}\n").unwrap();
    assert!(cycles(&module_graph(dir)).is_empty());
}

#[test]
fn the_cycle_check_sees_a_ring_and_resolves_paths() {
    let paths = referenced_paths(
        "replay::strategies::gemini",
        "use crate::replay::{strategy::Knob, window};\nsuper::common::call(x)\nuse crate::{json, tokens::Tokenizer};\nuse super::{exec, common::Params};",
    );
    // A group right after the prefix names each item, not the prefix alone.
    assert!(paths.contains(&vec!["json".into()]), "{paths:?}");
    assert!(paths.contains(&vec!["tokens".into(), "Tokenizer".into()]), "{paths:?}");
    assert!(paths.contains(&vec!["replay".into(), "strategies".into(), "exec".into()]), "{paths:?}");
    assert!(paths.contains(&vec!["replay".into(), "strategies".into(), "common".into(), "Params".into()]), "{paths:?}");
    assert!(!paths.contains(&vec!["replay".into(), "strategies".into()]), "{paths:?}");
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

/// Issue #35: the children of `replay` import their siblings, never their parent. Every path a file under
/// `replay/` (but `mod.rs`) writes that lands in `replay` itself, as `super::Name` or `crate::replay::Name`
/// where `Name` is no module: an item `mod.rs` defines (an edge to `replay` in the module graph) or one it
/// re-exports (`mod.rs` is the table of contents the rest of the workspace reads, not a place to import
/// from). Re-exports count too; inline test modules and comments do not.
fn imports_of_the_parent(src: &Path, parent: &str) -> Vec<String> {
    let mods = modules(src);
    let graph = module_graph(src);
    let child = |m: &str| m.strip_prefix(parent).is_some_and(|rest| rest.starts_with("::"));
    let mut found = Vec::new();
    for (module, file) in mods.iter().filter(|(m, _)| child(m)) {
        if graph[module].contains(parent) {
            found.push(format!("{module}: an item defined in `{parent}`"));
        }
        let text = logic_with_reexports(&std::fs::read_to_string(file).unwrap());
        for path in referenced_paths(module, &text) {
            let n = (0..=path.len()).rev().find(|&n| mods.contains_key(&path[..n].join("::")));
            if n.is_some_and(|n| path[..n].join("::") == parent && n < path.len()) {
                found.push(format!("{module}: `{}`", path.join("::")));
            }
        }
    }
    found
}

#[test]
fn no_child_of_replay_imports_its_parent() {
    let found = imports_of_the_parent(&Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src"), "replay");
    assert!(found.is_empty(), "import the sibling that defines it, not `replay`: {found:?}");
}

#[test]
fn the_parent_check_finds_a_planted_import() {
    let tree = planted(&[
        ("lib.rs", "pub mod replay;\n"),
        ("replay/mod.rs", "pub mod a;\npub mod b;\npub mod deep;\npub use b::Thing;\npub struct Own;\n"),
        ("replay/a.rs", "use super::b::Thing;\npub fn f(_: Thing) {}\n"),
        ("replay/b.rs", "pub struct Thing;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ("replay/deep/mod.rs", "use crate::replay::{a, b::Thing};\npub fn g(_: Thing) { a::f(Thing) }\n"),
    ]);
    let dir = tree.path();
    assert!(imports_of_the_parent(dir, "replay").is_empty());
    // An item `mod.rs` defines, and one it re-exports, from a child and from a grandchild.
    std::fs::write(dir.join("replay/a.rs"), "use super::{b, Own};\npub fn f(_: b::Thing, _: Own) {}\n").unwrap();
    std::fs::write(dir.join("replay/deep/mod.rs"), "pub fn g(_: crate::replay::Thing) {}\n").unwrap();
    let found = imports_of_the_parent(dir, "replay");
    assert_eq!(
        found,
        ["replay::a: an item defined in `replay`", "replay::a: `replay::Own`", "replay::deep: `replay::Thing`"],
        "{found:?}"
    );
}

/// Places where a registered strategy's name is written as a string literal for another reason: the same
/// word names something else there.
const NOT_A_STRATEGY: [(&str, &str, &str); 4] = [
    ("src/probes/extract/mod.rs", "aider", "a dataset source and format"),
    ("core/src/replay/window.rs", "none", "a prompt-count origin"),
    ("core/src/replay/window.rs", "recorded", "`FROM_RECORDING`: a setting taken from the recording"),
    ("src/audit/mod.rs", "recorded", "the replay settings' `recorded` window, trigger, overhead and scale"),
];

/// Every `"NAME"` literal of a registered strategy in the logic (tests and comments cut) of `files`,
/// as `(path relative to harness/, name, line)`.
fn strategy_literals(harness: &Path, files: &[PathBuf]) -> Vec<(String, String, usize)> {
    let names: Vec<&str> = compactbench::replay::registry::registry().iter().map(|s| s.name()).collect();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let body = text.find("#[cfg(test)]\nmod tests").map_or(text.as_str(), |at| &text[..at]);
        let rel = file.strip_prefix(harness).unwrap().to_string_lossy().replace('\\', "/");
        for (n, line) in body.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in &names {
                if line.contains(&format!("\"{name}\"")) {
                    found.push((rel.clone(), name.to_string(), n + 1));
                }
            }
        }
    }
    found
}

/// Rust files under `dir`, test files (`tests.rs`, `tests/`) left out.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() && name != "tests" {
                stack.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Issue #23: reports, sweeps and the replay find the reference, `none` and the pairs they compare by a
/// strategy's role and knobs, never by its name: no strategy name is written outside its own file and the
/// registry (`core/src/replay/strategies/`, `registry.rs`).
#[test]
fn strategy_names_are_written_only_in_their_own_file_and_the_registry() {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    let strategies = harness.join("core/src/replay/strategies");
    let mut files = rust_files(&harness.join("src"));
    files.extend(
        rust_files(&harness.join("core/src/replay"))
            .into_iter()
            .filter(|f| !f.starts_with(&strategies) && !f.ends_with("registry.rs")),
    );
    assert!(files.len() > 30, "too few files: {}", files.len());
    let found: Vec<_> = strategy_literals(harness, &files)
        .into_iter()
        .filter(|(file, name, _)| !NOT_A_STRATEGY.iter().any(|(f, n, _)| file == f && name == n))
        .collect();
    assert!(found.is_empty(), "strategy names written outside their strategy and the registry: {found:?}");
}

#[test]
fn the_literal_check_finds_a_planted_name() {
    let tree =
        planted(&[("src/planted.rs", "// \"gemini\" in a comment\nfn f(p: &str) -> bool { p == \"drop-oldest\" }\n")]);
    let found = strategy_literals(tree.path(), &[tree.path().join("src/planted.rs")]);
    assert_eq!(found, vec![("src/planted.rs".to_string(), "drop-oldest".to_string(), 2)]);
}

/// Places where a figure's name is written as a string literal for another reason: the same word names
/// something else there.
const NOT_A_FIGURE: [(&str, &str, &str); 2] = [
    ("src/report/aggregate.rs", "reduction", "the column of `results/events.*` holding one event's reduction"),
    ("src/report/probe_section.rs", "judge_score", "the column of `results/probes.*` holding one judge's 0–5 score"),
];

/// Every `"NAME"` literal of a figure of `compactbench::metrics::METRICS` in the logic (tests and comments
/// cut) of `files`, as `(path relative to harness/, name, line)`.
fn figure_literals(harness: &Path, files: &[PathBuf]) -> Vec<(String, String, usize)> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let body = text.find("#[cfg(test)]\nmod tests").map_or(text.as_str(), |at| &text[..at]);
        let rel = file.strip_prefix(harness).unwrap().to_string_lossy().replace('\\', "/");
        for (n, line) in body.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for m in compactbench::metrics::METRICS {
                if line.contains(&format!("\"{}\"", m.name)) {
                    found.push((rel.clone(), m.name.to_string(), n + 1));
                }
            }
        }
    }
    found
}

/// Issue #35: every module names a figure by its id (`metrics::FigureId`) and takes its lists of figures
/// from the named sets beside `METRICS`: no figure's name is written outside its entry there.
#[test]
fn figure_names_are_written_only_in_metrics() {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files: Vec<PathBuf> =
        rust_files(&harness.join("src")).into_iter().filter(|f| !f.ends_with("src/metrics/definitions.rs")).collect();
    assert!(files.len() > 30, "too few files: {}", files.len());
    let found: Vec<_> = figure_literals(harness, &files)
        .into_iter()
        .filter(|(file, name, _)| !NOT_A_FIGURE.iter().any(|(f, n, _)| file == f && name == n))
        .collect();
    assert!(found.is_empty(), "figure names written outside METRICS (use metrics::FigureId): {found:?}");
    let tree = planted(&[(
        "src/planted.rs",
        "// \"retention\" in a comment\nfn f(m: &str) -> bool { m == \"tokens_vs_none\" }\n",
    )]);
    assert_eq!(
        figure_literals(tree.path(), &[tree.path().join("src/planted.rs")]),
        vec![("src/planted.rs".to_string(), "tokens_vs_none".to_string(), 2)]
    );
}

/// Issue #23: the binary crate's modules form layers, each importing only layers below it (the data of a
/// run at the bottom, the CLI at the top); a module may import its own layer's modules. Issue #47: judgement
/// (`verdict`: the gate, the claims' verdicts, the grader check) sits below every renderer, and `report` and
/// `view` share a layer, so neither imports the other: the view and the audit read verdicts from `verdict`;
/// the rework reading computes figures defined in `metrics`, so it sits above it.
#[test]
fn the_binary_crate_imports_only_downwards() {
    const LAYERS: [&[&str]; 11] = [
        &["exit"],
        &["stats", "pricing", "table"],
        &["data"],
        &["probes"],
        &["metrics"],
        &["rework"],
        &["verdict"],
        &["sweep"],
        &["report", "view"],
        &["audit"],
        &["cli"],
    ];
    let layer = |module: &str| {
        let top = module.split("::").next().unwrap_or_default();
        LAYERS.iter().position(|l| l.contains(&top))
    };
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut upwards = Vec::new();
    for (from, targets) in &graph {
        let Some(a) = layer(from) else { continue };
        for to in targets {
            let same_top = from.split("::").next() == to.split("::").next();
            match layer(to) {
                Some(b) if b > a || (b == a && !same_top) => upwards.push(format!("{from} → {to}")),
                _ => {}
            }
        }
    }
    assert!(upwards.is_empty(), "imports that go up or sideways: {upwards:?}");
    assert!(graph.keys().any(|m| m.starts_with("data")), "the data layer exists");
}

/// Imports of the sweep by the modules under `report`, `verdict` and `view` (inline tests cut), as `from → to`.
fn sweep_imports_of_readers(src: &Path) -> Vec<String> {
    let top = |m: &str| m.split("::").next().unwrap_or_default().to_string();
    let mut found = Vec::new();
    for (from, targets) in module_graph(src) {
        if !matches!(top(&from).as_str(), "report" | "verdict" | "view") {
            continue;
        }
        found.extend(targets.iter().filter(|t| top(t) == "sweep").map(|t| format!("{from} → {t}")));
    }
    found
}

/// Issue #35: reports, the gate, `compare` and the view read a finished run through `data::store` (its plan,
/// its verified cells), never through the sweep that wrote it: one path to each stored item.
#[test]
fn reports_and_the_view_read_runs_through_the_data_store_not_the_sweep() {
    let found = sweep_imports_of_readers(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        found.is_empty(),
        "report/, verdict/ or view/ import the sweep (read runs through crate::data::store): {found:?}"
    );
}

#[test]
fn the_store_check_finds_a_planted_sweep_import() {
    let tree = planted(&[
        ("lib.rs", "pub mod data;\npub mod report;\npub mod sweep;\npub mod view;\n"),
        ("data/mod.rs", "pub mod store;\n"),
        ("data/store.rs", "pub fn load_plan() {}\n"),
        ("sweep/mod.rs", "pub mod runner;\npub use runner::load_plan;\n"),
        ("sweep/runner.rs", "pub use crate::data::store::load_plan;\npub fn run() {}\n"),
        ("report/mod.rs", "pub mod gate;\nuse crate::data::store;\npub fn f() { store::load_plan() }\n"),
        ("report/gate.rs", "use crate::{data, sweep::runner};\npub fn g() { runner::run() }\n"),
        ("view/mod.rs", "use crate::sweep;\npub fn h() { sweep::load_plan() }\n"),
    ]);
    let dir = tree.path();
    assert_eq!(sweep_imports_of_readers(dir), ["report::gate → sweep::runner", "view → sweep"]);
    std::fs::write(dir.join("report/gate.rs"), "use crate::data::store;\npub fn g() { store::load_plan() }\n").unwrap();
    std::fs::write(dir.join("view/mod.rs"), "#[cfg(test)]\nmod tests {\n    use crate::sweep;\n}\n").unwrap();
    assert!(sweep_imports_of_readers(dir).is_empty());
}
