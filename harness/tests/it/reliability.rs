//! Reliability: the gate refuses incomplete runs, damaged and failed cells are redone, the run directory is
//! locked, limits and exit statuses hold, a closed pipe ends quietly.

use compactbench::data::store;
use compactbench::metrics::FigureId;
use compactbench::sweep::{self, planner, runner};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::support::{copy_dir, repo, strings, TestConfig};

/// The module's run: six tau-bench conversations.
fn config() -> TestConfig {
    TestConfig::small("reliability-test", &["datasets/tau-bench"], 6)
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_compactbench"));
    c.current_dir(repo()).env_remove("GITHUB_STEP_SUMMARY");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run_into(config: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--quiet", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    bin().args(&args).output().unwrap()
}

fn write_config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// One clean run shared by the tests of this module.
fn clean() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config().write(tmp.path(), "r.toml");
        let out = tmp.path().join("clean");
        let o = run_into(&cfg, &out, &[]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        (tmp, out)
    })
    .1
}

fn copy_of_clean(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    let dir = tmp.path().join(name);
    copy_dir(clean(), &dir);
    dir
}

fn gate(current: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["gate", "--baseline", clean().to_str().unwrap(), "--current", current.to_str().unwrap()];
    args.extend_from_slice(extra);
    bin().args(&args).output().unwrap()
}

/// Every file of a directory tree, by relative path.
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn gate_fails_a_run_missing_a_configuration_with_exit_4_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_of_clean(&tmp, "missing");
    let plan = store::load_plan(&dir).unwrap();
    let gone = &plan.points[1].id;
    std::fs::remove_dir_all(dir.join("cells").join(gone)).unwrap();
    let out = gate(&dir, &[]);
    let md = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{md}\n{}", text(&out.stderr));
    assert!(md.contains("compactbench gate: INCOMPLETE"), "{md}");
    assert!(md.contains("cell missing from the current run") && md.contains(gone.as_str()), "{md}");
    let junit = std::fs::read_to_string(dir.join("gate-junit.xml")).unwrap();
    assert!(junit.contains("classname=\"completeness\"") && junit.contains("<failure"), "{junit}");
    // The complete copy passes.
    let full = copy_of_clean(&tmp, "full");
    assert_eq!(gate(&full, &[]).status.code(), Some(0));
}

#[test]
fn gate_names_conversations_and_configurations_in_one_run_only() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config().set("max_conversations", 4).write(tmp.path(), "fewer.toml");
    let out_dir = tmp.path().join("fewer");
    assert!(run_into(&cfg, &out_dir, &[]).status.success());
    let out = gate(&out_dir, &[]);
    let md = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{md}");
    assert!(md.contains("conversation missing from the current run"), "{md}");
    let cfg = config().set("grid.strategy", strings(&["gemini", "none"])).write(tmp.path(), "less.toml");
    let out_dir = tmp.path().join("less");
    assert!(run_into(&cfg, &out_dir, &[]).status.success());
    let md = text(&gate(&out_dir, &[]).stdout);
    assert!(md.contains("configuration missing from the current run: drop-oldest"), "{md}");
}

#[test]
fn a_hand_edited_cell_is_named_by_report_and_gate_and_redone_by_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_of_clean(&tmp, "edited");
    let plan = store::load_plan(&dir).unwrap();
    let cell = &plan.cells()[0];
    let path = dir.join(cell.relative_path());
    let original = std::fs::read_to_string(&path).unwrap();
    let edited = original.replacen("\"requests\": ", "\"requests\": 1", 1);
    assert_ne!(edited, original);
    std::fs::write(&path, &edited).unwrap();
    let stored = store::load_cells(&dir, &plan);
    assert_eq!(stored.damaged.len(), 1);
    assert_eq!(stored.damaged[0].1, store::CellDamage::DigestMismatch, "{:?}", stored.damaged);
    // report: builds from the others, names the cell, exits 4.
    let out = bin().args(["report", dir.to_str().unwrap()]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("damaged") && err.contains(&cell.conversation), "{err}");
    // gate: incomplete.
    let out = gate(&dir, &[]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out.stdout).contains("cell damaged in the current run"), "{}", text(&out.stdout));
    // run: redoes exactly that cell and restores the original bytes.
    let cfg = config().write(tmp.path(), "r.toml");
    let out = run_into(&cfg, &dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("1 run of which 1 damaged"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    assert_eq!(gate(&dir, &[]).status.code(), Some(0));
}

#[test]
fn failed_cells_exit_4_transient_ones_are_retried_and_permanent_ones_with_retry_failed() {
    let tmp = tempfile::tempdir().unwrap();
    // Nothing listens on port 9 of the loopback: every call is a transport error (transient).
    let down =
        config().set("grid.summarizer", strings(&["openai:m@http://127.0.0.1:9/v1"])).set("max_conversations", 2);
    let cfg = down.clone().set("llm.max_attempts", 1).write(tmp.path(), "down.toml");
    let dir = tmp.path().join("down");
    let out = run_into(&cfg, &dir, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("recorded an error"), "{err}");
    let plan = store::load_plan(&dir).unwrap();
    let failed: Vec<_> = store::collect(&dir, &plan).into_iter().filter(|c| c.result.error.is_some()).collect();
    assert!(!failed.is_empty() && failed.iter().all(|c| c.transient_failure), "{failed:?}");
    // The next run redoes them (and only them).
    let out = run_into(&cfg, &dir, &[]);
    assert!(text(&out.stderr).contains(&format!("{} failed before", failed.len())), "{}", text(&out.stderr));

    // A replay-only cache miss is not transient: kept unless --retry-failed.
    let cfg = down
        .set("llm.cache_mode", "replay")
        .set("llm.cache_dir", tmp.path().join("empty-cache").display().to_string())
        .write(tmp.path(), "miss.toml");
    let dir = tmp.path().join("miss");
    assert_eq!(run_into(&cfg, &dir, &[]).status.code(), Some(4));
    let out = run_into(&cfg, &dir, &[]);
    assert!(text(&out.stderr).contains(" 0 run "), "{}", text(&out.stderr));
    let out = run_into(&cfg, &dir, &["--retry-failed"]);
    assert!(!text(&out.stderr).contains(" 0 run "), "{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn a_refused_run_leaves_config_toml_alone_and_a_locked_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_of_clean(&tmp, "locked");
    let before = std::fs::read(dir.join("config.toml")).unwrap();
    let other = config().set("grid.threshold", vec![0.6]).write(tmp.path(), "other.toml");
    let out = run_into(&other, &dir, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("holds another plan"));
    assert_eq!(std::fs::read(dir.join("config.toml")).unwrap(), before);

    // A live holder: refused with exit 3, naming pid and host.
    let cfg = config().write(tmp.path(), "r.toml");
    let lock = sweep::run_dir::lock_run_dir(&dir).unwrap();
    let out = run_into(&cfg, &dir, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("in use by pid") && err.contains(&std::process::id().to_string()), "{err}");
    drop(lock);
    assert!(!dir.join(sweep::run_dir::LOCK_FILE).exists(), "a released lock leaves no file");
    // A stale lock file (its holder died, so nobody holds the flock): taken over.
    std::fs::write(dir.join(sweep::run_dir::LOCK_FILE), "pid 4194303 on elsewhere\n").unwrap();
    let out = run_into(&cfg, &dir, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Issue #29: a finished run leaves no lock behind.
    assert!(!dir.join(sweep::run_dir::LOCK_FILE).exists(), "run.lock left after a finished run");
}

/// Two lockers racing on one directory: exactly one holds it at a time, and the file a finished holder
/// removed is never locked by the next (it opens the directory's current file again).
#[test]
fn the_lock_survives_its_file_being_removed_by_a_finished_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    for _ in 0..50 {
        let first = sweep::run_dir::lock_run_dir(&dir).unwrap();
        assert!(sweep::run_dir::lock_run_dir(&dir).is_err(), "a second lock while the first is held");
        drop(first);
        let second = sweep::run_dir::lock_run_dir(&dir).unwrap();
        assert!(dir.join(sweep::run_dir::LOCK_FILE).exists());
        drop(second);
    }
}

#[test]
fn an_oversized_plan_is_refused_before_allocation_with_its_count() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config().set("repeats", 4294967295_i64).write(tmp.path(), "huge.toml");
    let out = run_into(&cfg, &tmp.path().join("huge"), &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("77309411310 cells") && err.contains("limit"), "{err}");
    assert!(!tmp.path().join("huge").exists());
}

#[test]
fn gate_names_an_unwritable_junit_path_with_exit_3() {
    // A path below a regular file cannot be created, even by root.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("file"), "").unwrap();
    let junit = tmp.path().join("file/j.xml");
    let out = gate(clean(), &["--junit", junit.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(junit.to_str().unwrap()), "{err}");
    assert!(text(&out.stdout).contains("compactbench gate: PASS"));
}

#[test]
fn a_closed_pipe_ends_inspect_and_replay_quietly() {
    let conv = repo().join("datasets/tau-bench");
    let first = std::fs::read_dir(&conv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("manifest.json"))
        .min()
        .unwrap();
    for args in [
        vec!["inspect".to_string(), "harness/tests/data/golden/inputs/case002.history.json".into(), "--pretty".into()],
        vec!["replay".into(), first.display().to_string()],
    ] {
        let mut child = bin().args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take()); // the reader goes away before anything is written
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn dataset_commands_that_do_nothing_useful_say_so_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = bin().args(["datasets", "validate", empty.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no conversation found"));
    let broken = tmp.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("a.json"), "{").unwrap();
    let out = bin().args(["datasets", "stats", broken.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    // A Content[] file imported as OpenAI chat: no turns, nothing imported.
    let contents = write_config(tmp.path(), "contents.json", r#"[{"role":"user","parts":[{"text":"hi"}]}]"#);
    let out = bin()
        .args(["datasets", "import", "--format", "openai-chat", contents.to_str().unwrap(), "--out"])
        .arg(tmp.path().join("imported"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn shards_merge_to_the_clean_run_and_merge_names_missing_cells() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config().write(tmp.path(), "r.toml");
    let shards: Vec<PathBuf> = (1..=2).map(|i| tmp.path().join(format!("s{i}"))).collect();
    for (i, s) in shards.iter().enumerate() {
        let o = run_into(&cfg, s, &["--shard", &format!("{}/2", i + 1)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let merged = tmp.path().join("merged");
    let o = bin().args(["merge", "--out", merged.to_str().unwrap()]).args(&shards).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (a, b) = (tree(&clean().join("cells")), tree(&merged.join("cells")));
    assert_eq!(a, b);
    // Only one shard: the other half is missing, named, exit 4.
    let o = bin().args(["merge", "--out", tmp.path().join("half").to_str().unwrap()]).arg(&shards[0]).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("missing in every shard"));
}

/// Issue #28: N shard processes started at once, as the pods of a Kubernetes Indexed Job (`--shard auto`,
/// the index from $JOB_COMPLETION_INDEX), each writing its own directory; merged, they equal the unsharded
/// run cell for cell, and the merged report's results files equal the unsharded run's.
#[test]
fn concurrent_auto_shards_merge_to_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config().write(tmp.path(), "r.toml");
    let n = 3;
    let dirs: Vec<PathBuf> = (0..n).map(|i| tmp.path().join(format!("pod{i}"))).collect();
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            bin()
                .args(["run", "--quiet", "--no-report", "--shard", "auto", "--config"])
                .arg(&cfg)
                .arg("--out")
                .arg(d)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("COMPACTBENCH_SHARD_COUNT", n.to_string())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let sizes: Vec<usize> = dirs.iter().map(|d| tree(&d.join("cells")).len()).collect();
    assert!(sizes.iter().all(|&k| k > 0), "every pod ran its share: {sizes:?}");
    let merged = tmp.path().join("merged");
    let o = bin().args(["merge", "--out", merged.to_str().unwrap()]).args(&dirs).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(tree(&clean().join("cells")), tree(&merged.join("cells")));
    for f in ["points.csv", "conversations.csv", "events.csv"] {
        let (a, b) = (clean().join("results").join(f), merged.join("results").join(f));
        if a.exists() {
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{f}");
        }
    }
    // Outside a Job, `auto` says what it needs.
    let o = bin()
        .args(["run", "--quiet", "--shard", "auto/3", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(tmp.path().join("nojob"))
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("JOB_COMPLETION_INDEX"), "{}", text(&o.stderr));
}

#[test]
fn configs_that_would_run_nothing_or_escape_are_refused_naming_the_key() {
    use compactbench::sweep::config::SweepConfig;
    let empty = || toml::Value::Array(Vec::new());
    let cases = [
        (config().set("llm.timeout_secs", 0), "llm.timeout_secs"),
        (config().set("grid.threshold", empty()), "grid.threshold"),
        (config().set("grid.preserve_fraction", empty()), "grid.preserve_fraction"),
        (config().set("grid.prompt", strings(&["../../x:y"])), "grid.prompt"),
    ];
    for (config, key) in cases {
        let err = SweepConfig::parse(&config.text(), "c.toml").unwrap_err().to_string();
        assert!(err.contains("c.toml") && err.contains(&format!("`{key}`")), "{key}: {err}");
    }
    // No datasets, or a slice of a source the datasets do not hold: refused by the plan.
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config().set("datasets", strings(&[])).write(tmp.path(), "none.toml");
    let out = run_into(&cfg, &tmp.path().join("none"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text_of(&out.stderr).contains("key `datasets`"), "{}", text_of(&out.stderr));
    let slice: toml::Table = toml::from_str(
        "[[slice]]\nname = \"slow\"\nconversations = 2\nsource = \"nope\"\n[slice.grid]\nstrategy = [\"none\"]\nsummarizer = [\"extractive\"]\n",
    )
    .unwrap();
    let cfg = config().set("slice", slice["slice"].clone()).write(tmp.path(), "slice.toml");
    let out = run_into(&cfg, &tmp.path().join("o"), &[]);
    let err = text_of(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("source `nope` matches no conversation") && err.contains("tau-bench"), "{err}");
    // inspect --threshold NaN.
    let out = bin()
        .args(["inspect", "harness/tests/data/golden/inputs/case002.history.json", "--compress", "--threshold", "NaN"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out.stderr));
    assert!(text_of(&out.stderr).contains("--threshold NaN"));
}

fn text_of(b: &[u8]) -> String {
    text(b)
}

/// A loopback OpenAI-compatible server. In fault mode each distinct request first meets one or two faults
/// (429 and 500 echoing the Authorization header, a hang, a malformed and an oversized answer), chosen by
/// the request's hash; afterwards, and always in clean mode, it answers deterministically from the request.
struct FaultyServer {
    base: String,
    faults: std::sync::Arc<std::sync::atomic::AtomicBool>,
    _runtime: tokio::runtime::Runtime,
}

impl FaultyServer {
    fn start() -> FaultyServer {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        use std::collections::HashMap;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let faults = Arc::new(AtomicBool::new(true));
        let seen: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
        let (f, s) = (Arc::clone(&faults), Arc::clone(&seen));
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: String| {
            let (faults, seen) = (Arc::clone(&f), Arc::clone(&s));
            async move {
                let hash = body.bytes().fold(1469598103934665603u64, |h, b| (h ^ b as u64).wrapping_mul(1099511628211));
                let attempt = {
                    let mut m = seen.lock().unwrap();
                    let n = m.entry(hash).or_insert(0);
                    *n += 1;
                    *n - 1
                };
                let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                let faulty = if hash % 3 == 0 { 2 } else { 1 };
                if faults.load(Ordering::SeqCst) && attempt < faulty {
                    let echo = format!(r#"{{"error":"try later","you_sent":"Authorization: {auth}"}}"#);
                    return match (hash / 3 + attempt) % 5 {
                        0 => (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "0")], echo).into_response(),
                        1 => (StatusCode::INTERNAL_SERVER_ERROR, echo).into_response(),
                        2 => {
                            tokio::time::sleep(std::time::Duration::from_secs(4)).await;
                            (StatusCode::OK, "{}".to_string()).into_response()
                        }
                        3 => (StatusCode::OK, format!("<html>{auth}</html>")).into_response(),
                        _ => (StatusCode::OK, "x".repeat(200_000)).into_response(),
                    };
                }
                let messages = body.matches("\"role\"").count();
                let text = format!(
                    "<state_snapshot><overall_goal>goal of {messages} messages</overall_goal><key_knowledge>k{}</key_knowledge></state_snapshot>",
                    hash % 97
                );
                let answer = serde_json::json!({
                    "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20}
                });
                (StatusCode::OK, answer.to_string()).into_response()
            }
        });
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FaultyServer { base: format!("http://{addr}/v1"), faults, _runtime: runtime }
    }
}

#[test]
fn a_sweep_against_a_faulty_server_heals_in_three_reruns_equals_a_clean_run_and_stores_no_key() {
    const KEY: &str = "sk-fault-injection-0123456789abcdef";
    let server = FaultyServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let config = format!(
        r#"
name = "faults"
datasets = ["datasets/tau-bench"]
max_conversations = 3
concurrency = 2
[replay]
token_limit = 4096
prompt_count_source = "heuristic"
system_prompt_tokens = 500
[llm]
cache_dir = "{}"
timeout_secs = 1
max_attempts = 2
max_response_bytes = 65536
[grid]
strategy = ["gemini"]
summarizer = ["openai:faulty@{}"]
threshold = [0.5]
prompt = ["v5"]
verification = [false]
"#,
        cache.display(),
        server.base
    );
    let cfg = write_config(tmp.path(), "faults.toml", &config);
    let run = |dir: &Path, cfg: &Path| {
        bin()
            .args(["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", dir.to_str().unwrap()])
            .env("OPENAI_API_KEY", KEY)
            .output()
            .unwrap()
    };
    let dir = tmp.path().join("faulty");
    let mut outputs = Vec::new();
    let mut healed = false;
    for _ in 0..4 {
        let out = run(&dir, &cfg);
        outputs.push(text(&out.stdout) + &text(&out.stderr));
        if out.status.success() {
            healed = true;
            break;
        }
        assert_eq!(out.status.code(), Some(4), "{}", outputs.last().unwrap());
    }
    assert!(healed, "not complete after three re-runs:\n{}", outputs.join("\n---\n"));
    assert!(outputs.len() > 1, "the faults made no cell fail: the test tests nothing");
    let plan = store::load_plan(&dir).unwrap();
    let cells = store::collect(&dir, &plan);
    assert!(cells.iter().all(|c| c.result.error.is_none()));
    assert!(
        cells.iter().any(|c| c
            .result
            .events
            .iter()
            .any(|e| e.status == compactbench::compress::CompressionStatus::Compressed)),
        "nothing compressed"
    );

    // The same sweep against the same server with faults off, without a cache: the same cells.
    server.faults.store(false, std::sync::atomic::Ordering::SeqCst);
    let clean_cfg = write_config(
        tmp.path(),
        "clean.toml",
        &config.replace(&format!("cache_dir = \"{}\"", cache.display()), "cache_mode = \"off\""),
    );
    let clean_dir = tmp.path().join("clean");
    let out = run(&clean_dir, &clean_cfg);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(tree(&dir.join("cells")), tree(&clean_dir.join("cells")));

    // The key echoed in error bodies is nowhere on disk or in the output.
    for root in [&dir, &cache, &clean_dir] {
        for (path, bytes) in tree(root) {
            assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "{}", root.join(path).display());
        }
    }
    for o in &outputs {
        assert!(!o.contains(KEY));
    }
}

const POWER: &str = r#"
name = "power"
datasets = ["datasets/aider", "datasets/tau-bench"]
# Every aider and tau-bench conversation: with 30, the at-risk pairs were too few for the gate to tell the
# halved summarizer apart once the grader credits facts in any form (its interval reached past -2 pp).
max_conversations = 62
concurrency = 2
[replay]
token_limit = 4096
prompt_count_source = "heuristic"
system_prompt_tokens = 500
[llm]
cache_mode = "off"
[grid]
strategy = ["gemini"]
summarizer = ["extractive"]
threshold = [0.5]
preserve_fraction = [0.3]
prompt = ["v5"]
verification = [true]
[probes]
enabled = true
dir = "datasets/probes"
sources = ["auto", "manual"]
answerer = "extractive"
"#;

/// A summarizer that drops half of every section of its snapshot: every second item (line), or the second
/// half of a one-line section's words; the verification pass is passed through.
struct HalfSections(std::sync::Arc<dyn compactbench::llm::LanguageModel>);

fn half_sections(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let close_tag = format!("</{name}>");
        let body_start = open + 1 + name.len() + 1;
        let closing = (!name.is_empty() && name != "state_snapshot" && after[name.len()..].starts_with('>'))
            .then(|| rest[body_start..].find(&close_tag))
            .flatten();
        let Some(len) = closing else {
            out.push_str(&rest[..open + 1]);
            rest = &rest[open + 1..];
            continue;
        };
        out.push_str(&rest[..body_start]);
        let body = &rest[body_start..body_start + len];
        let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() > 1 {
            out.push('\n');
            out.push_str(&lines.iter().step_by(2).copied().collect::<Vec<_>>().join("\n"));
            out.push('\n');
        } else {
            let words: Vec<&str> = body.split_whitespace().collect();
            out.push_str(&words[..words.len() / 2].join(" "));
        }
        out.push_str(&close_tag);
        rest = &rest[body_start + len + close_tag.len()..];
    }
    out.push_str(rest);
    out
}

#[async_trait::async_trait]
impl compactbench::llm::LanguageModel for HalfSections {
    fn spec(&self) -> &str {
        self.0.spec()
    }
    async fn generate(
        &self,
        req: &compactbench::llm::LlmRequest,
    ) -> Result<compactbench::llm::LlmResponse, compactbench::llm::LlmError> {
        let mut r = self.0.generate(req).await?;
        if req.label.role == "utility_compressor" && !req.label.prompt_id.ends_with("verify") {
            r.text = half_sections(&r.text);
        }
        Ok(r)
    }
}

fn run_in_process(
    config: &str,
    dir: &Path,
    wrap: Option<compactbench::sweep::models::ModelWrapper>,
) -> compactbench::data::Plan {
    let config = sweep::config::SweepConfig::parse(config, "power.toml").unwrap();
    let plan = planner::make_plan(&config, &repo()).unwrap();
    let opts = runner::RunOptions {
        run_dir: dir.to_path_buf(),
        base_dir: repo(),
        shard: None,
        cache_mode: None,
        progress: false,
        retry_failed: false,
        config_text: None,
        wrap_model: wrap,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let summary = rt.block_on(runner::run(&config, &plan, &opts)).unwrap();
    assert_eq!(summary.failed, 0);
    plan
}

#[test]
fn the_default_gate_fails_a_summarizer_that_drops_half_of_each_section_and_a_split_that_keeps_less() {
    use compactbench::verdict::gate;
    assert_eq!(
        half_sections("<state_snapshot><a>\n- 1\n- 2\n- 3\n- 4\n</a><b>one two three four</b></state_snapshot>"),
        "<state_snapshot><a>\n- 1\n- 3\n</a><b>one two</b></state_snapshot>"
    );
    let tmp = tempfile::tempdir().unwrap();
    let baseline = tmp.path().join("baseline");
    let plan = run_in_process(POWER, &baseline, None);
    let rules = gate::Rules::load(&repo().join("configs/gate.toml")).unwrap();
    let same = gate::compare(&baseline, &baseline, &rules).unwrap();
    assert!(same.passed());
    let retention = |r: &gate::GateReport| {
        // The summary's own recall: what halving its sections loses. (Retention at events moves less: after a
        // conversation's first request over the window every probe scores as lost in both runs.)
        r.checks
            .iter()
            .find(|c| c.metric == FigureId::AtRiskRetention && c.only == gate::Only::Compressed)
            .unwrap()
            .clone()
    };
    let power = retention(&same);
    assert!(power.n >= 5 && power.detectable.is_some_and(|d| d > 0.0 && d < 0.1), "{power:?}");

    // The summarizer that drops half of each section, same plan.
    let halved = tmp.path().join("halved");
    let wrap = compactbench::sweep::models::ModelWrapper(std::sync::Arc::new(|m| std::sync::Arc::new(HalfSections(m))));
    run_in_process(POWER, &halved, Some(wrap));
    let r = gate::compare(&baseline, &halved, &rules).unwrap();
    assert!(r.complete(), "{:?}", r.completeness);
    let check = retention(&r);
    assert_eq!(check.verdict, gate::Verdict::Regression, "{}", gate::markdown(&r));
    assert!(!r.passed());

    // A split that keeps a third as much (preserve fraction 0.1 instead of 0.3), presented to the gate as the
    // same configuration: its cells moved into a copy of the baseline's plan. (0.2 is within noise on 20
    // conversations' early-only probes; the gate no longer rules on unconditional retention.)
    let less = tmp.path().join("less");
    let less_plan =
        run_in_process(&POWER.replace("preserve_fraction = [0.3]", "preserve_fraction = [0.1]"), &less, None);
    let moved = tmp.path().join("moved");
    copy_dir(&baseline, &moved);
    std::fs::remove_dir_all(moved.join("cells")).unwrap();
    for mut c in store::collect(&less, &less_plan) {
        c.cell.point = plan.points[0].id.clone();
        c.plan = plan.digest();
        sweep::run_dir::write_cell(&moved, &c).unwrap();
    }
    let r = gate::compare(&baseline, &moved, &rules).unwrap();
    assert!(r.complete(), "{:?}", r.completeness);
    assert!(!r.passed(), "{}", gate::markdown(&r));
    assert!(r.regressions().any(|c| c.metric.name().contains("retention")), "{}", gate::markdown(&r));
}

/// Token counts kept between runs (`<import_cache>/o200k-counts.bin`) change nothing but the time: a run
/// that starts from them writes the same results as one that counts every text, and a damaged file is not
/// read (the run counts again and writes it anew).
#[test]
fn kept_token_counts_change_no_result_and_a_damaged_file_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("imports");
    let cfg = config()
        .set("max_conversations", 2)
        .set("import_cache", cache.display().to_string())
        .write(tmp.path(), "counts.toml");
    let counts = cache.join(compactbench::sweep::token_counts::FILE);
    let results = |dir: &Path| {
        tree(&dir.join("results"))
            .into_iter()
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "csv"))
            .collect::<Vec<_>>()
    };
    let cold = tmp.path().join("cold");
    assert!(run_into(&cfg, &cold, &[]).status.success());
    let kept = std::fs::read(&counts).expect("the first run keeps its counts");
    assert!(kept.len() > 1000, "{} bytes", kept.len());
    let modified = || std::fs::metadata(&counts).unwrap().modified().unwrap();
    let written = modified();
    let warm = tmp.path().join("warm");
    assert!(run_into(&cfg, &warm, &[]).status.success());
    // It read the file: it learnt no count it did not start from, so it left the file alone.
    assert_eq!(modified(), written, "the warm run started from the kept counts");
    assert_eq!(results(&cold), results(&warm));
    assert_eq!(tree(&cold.join("cells")), tree(&warm.join("cells")));
    // A flipped byte in a count: the file fails its checksum and is counted anew.
    let mut damaged = kept.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x55;
    std::fs::write(&counts, &damaged).unwrap();
    let again = tmp.path().join("again");
    assert!(run_into(&cfg, &again, &[]).status.success());
    assert_eq!(results(&cold), results(&again));
    assert_eq!(std::fs::read(&counts).unwrap(), kept, "rewritten whole");
}
