//! Shared helpers for the integration tests.

use compactbench::json::{self, Value};
use std::path::{Path, PathBuf};

/// The repository root (the shipped datasets live there).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("harness is inside the workspace").to_path_buf()
}

/// `../shared` beside the checkout (CI and every session), or `$COMPACTBENCH_SHARED`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("COMPACTBENCH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => repo().parent().expect("the checkout has a parent").join("shared"),
    }
}

/// A directory of `../shared` a real-session test reads, or `None` (the test then checks nothing, and says so
/// on stderr) where it is missing. With `COMPACTBENCH_REQUIRE_SHARED=1` (CI sets it) a missing directory fails
/// the test instead: a skipped test there would pass without checking anything.
pub fn shared_or_skip(rel: &str, test: &str) -> Option<PathBuf> {
    let dir = shared_dir().join(rel);
    if dir.exists() {
        return Some(dir);
    }
    let required = std::env::var("COMPACTBENCH_REQUIRE_SHARED").is_ok_and(|v| v == "1");
    assert!(!required, "{test}: {} is missing and COMPACTBENCH_REQUIRE_SHARED=1", dir.display());
    eprintln!("\n!!!!!!!! SKIPPED {test}: {} is missing (../shared beside the checkout, or $COMPACTBENCH_SHARED); this test checks nothing without it !!!!!!!!\n", dir.display());
    None
}

/// Copies a directory tree (a run directory, to change a copy of it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

pub fn load_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    json::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Describes the first difference between two values, with its JSON path.
pub fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x.iter() {
                let p = format!("{path}.{k}");
                match y.get(k.as_wtf8()) {
                    None => return Some(format!("{p}: missing on the right")),
                    Some(vb) => {
                        if let Some(d) = first_difference(&p, va, vb) {
                            return Some(d);
                        }
                    }
                }
            }
            y.keys().find(|k| x.get(k.as_wtf8()).is_none()).map(|k| format!("{path}.{k}: missing on the left"))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y.iter()).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: lengths {} vs {}", x.len(), y.len()))
        }
        _ if a == b => None,
        _ => {
            let show = |v: &Value| {
                let s = json::to_string(v);
                if s.len() > 300 {
                    format!("{}…({} chars)", &s[..s.char_indices().nth(300).map(|c| c.0).unwrap_or(s.len())], s.len())
                } else {
                    s
                }
            };
            Some(format!("{path}: {} != {}", show(a), show(b)))
        }
    }
}

/// Runs a sweep config into `out` from the repository root, offline; `retry_failed` redoes failed cells.
pub fn sweep(
    config: &compactbench::sweep::config::SweepConfig,
    out: &Path,
    retry_failed: bool,
) -> (compactbench::data::Plan, compactbench::sweep::runner::RunSummary) {
    use compactbench::sweep::{planner, runner};
    let plan = planner::make_plan(config, &repo()).unwrap();
    let opts = runner::RunOptions {
        run_dir: out.to_path_buf(),
        base_dir: repo(),
        shard: None,
        cache_mode: None,
        progress: false,
        retry_failed,
        config_text: None,
        wrap_model: None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let summary = rt.block_on(runner::run(config, &plan, &opts)).unwrap();
    (plan, summary)
}

/// Every file under `dir`, in no set order, not descending into (nor listing) what `skip` names.
pub fn walk(dir: &Path, skip: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if skip(&p) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Every file under `dir` with a digest of its bytes (readable when an assertion fails).
pub fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                let digest = sha2::Digest::finalize(sha2::Digest::chain_update(sha2::Sha256::default(), &bytes));
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), hex::encode(digest)));
            }
        }
    }
    out.sort();
    out
}

/// A sweep config for a test, built key by key and written as TOML: the tests that run a sweep start from
/// one of these instead of keeping their own copy of the text, and change a key by name (a typo in a key
/// fails the config's own validation, which names it).
#[derive(Clone, Debug)]
pub struct TestConfig {
    root: toml::Table,
}

impl TestConfig {
    /// A config with a name only.
    pub fn new(name: &str) -> TestConfig {
        TestConfig { root: toml::Table::new() }.set("name", name)
    }

    /// The small run several tests share: the reference (extractive summarizer, threshold 0.5, prompt v5,
    /// verification on), `drop-oldest` and `none` over `max_conversations` shipped conversations of
    /// `datasets`, in a 4,096-token window with estimated prompt counts, two workers, no LLM cache.
    pub fn small(name: &str, datasets: &[&str], max_conversations: i64) -> TestConfig {
        TestConfig::new(name)
            .set("datasets", strings(datasets))
            .set("max_conversations", max_conversations)
            .set("concurrency", 2)
            .set("replay.token_limit", 4096)
            .set("replay.prompt_count_source", "heuristic")
            .set("replay.system_prompt_tokens", 500)
            .set("llm.cache_mode", "off")
            .set("grid.strategy", strings(&["gemini", "drop-oldest", "none"]))
            .set("grid.summarizer", strings(&["extractive"]))
            .set("grid.threshold", vec![0.5])
            .set("grid.prompt", strings(&["v5"]))
            .set("grid.verification", vec![true])
    }

    /// Sets a key, `section.key` for a table's (`replay.token_limit`, `grid.strategy`).
    pub fn set(mut self, key: &str, value: impl Into<toml::Value>) -> TestConfig {
        let mut table = &mut self.root;
        let mut parts: Vec<&str> = key.split('.').collect();
        let last = parts.pop().expect("a key");
        for p in parts {
            table = table
                .entry(p)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .unwrap_or_else(|| panic!("{p} is not a table"));
        }
        table.insert(last.to_string(), value.into());
        self
    }

    /// The config as TOML.
    pub fn text(&self) -> String {
        toml::to_string(&self.root).expect("a TOML table")
    }

    /// The config, parsed and validated as a file of that name would be.
    pub fn parse(&self, file: &str) -> compactbench::sweep::config::SweepConfig {
        compactbench::sweep::config::SweepConfig::parse(&self.text(), file).unwrap()
    }

    /// Writes the config to `dir/file` and returns its path (for the binary's `--config`).
    pub fn write(&self, dir: &Path, file: &str) -> PathBuf {
        let path = dir.join(file);
        std::fs::write(&path, self.text()).unwrap();
        path
    }
}

/// A TOML array of strings.
pub fn strings(items: &[&str]) -> toml::Value {
    toml::Value::Array(items.iter().map(|s| toml::Value::String(s.to_string())).collect())
}

/// A TOML inline table (a raw dataset entry: `{ raw = …, format = …, source = … }`).
pub fn table(entries: &[(&str, &str)]) -> toml::Value {
    toml::Value::Table(entries.iter().map(|(k, v)| (k.to_string(), toml::Value::String(v.to_string()))).collect())
}
