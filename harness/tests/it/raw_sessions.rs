//! Raw agent logs named in a config: imported in place (gzip read as is, cached by content hash), and
//! `compress_at = "recorded"` making every strategy compress exactly where the agent did.

use super::support::{repo, strings, sweep, table, TestConfig};
use compactbench::sweep::config::SweepConfig;
use std::io::Write;

fn gzipped_fixture(dir: &std::path::Path) {
    let bytes = std::fs::read(repo().join("harness/datasets/src/fixtures/claude-code-compacted.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("logs/session-1.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(
        dir.join("logs/SOURCE.md"),
        "| file | repository | commit |\n|---|---|---|\n| `session-1.jsonl.gz` | someone/project (MIT) | `abc123` |\n",
    )
    .unwrap();
}

/// A sweep over the planted raw sessions, as a user's own logs are read.
pub fn raw_config(name: &str, dir: &std::path::Path, compress_at: &str, strategies: &[&str]) -> TestConfig {
    let logs = dir.join("logs").display().to_string();
    TestConfig::new(name)
        .set(
            "datasets",
            toml::Value::Array(vec![table(&[("raw", &logs), ("format", "claude-code"), ("source", "mine")])]),
        )
        .set("import_cache", dir.join("cache").display().to_string())
        .set("replay.token_limit", 200000)
        .set("replay.compress_at", compress_at)
        .set("grid.strategy", strings(strategies))
        .set("grid.summarizer", strings(&["extractive"]))
        .set("grid.verification", vec![false])
}

fn config(dir: &std::path::Path, compress_at: &str) -> SweepConfig {
    raw_config("raw", dir, compress_at, &["recorded", "gemini", "drop-oldest", "none"]).parse("raw.toml")
}

fn events_by_strategy(out: &std::path::Path, plan: &compactbench::data::Plan) -> Vec<(String, Vec<(u64, String)>)> {
    let mut rows = Vec::new();
    for point in &plan.points {
        let name = point.strategy.kind().to_string();
        let cells = std::fs::read_dir(out.join("cells").join(&point.id)).unwrap();
        for cell in cells {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(cell.unwrap().path()).unwrap()).unwrap();
            assert!(v["result"]["error"].is_null(), "{name}: {}", v["result"]["error"]);
            let events = v["result"]["events"].as_array().unwrap();
            let turns = events
                .iter()
                .map(|e| (e["turn"].as_u64().unwrap(), e["status"].as_str().unwrap_or_default().to_string()))
                .collect();
            rows.push((name.clone(), turns));
        }
    }
    rows
}

#[test]
fn raw_logs_are_imported_in_place_and_every_strategy_compresses_at_the_agents_point() {
    let dir = tempfile::tempdir().unwrap();
    gzipped_fixture(dir.path());
    let cfg = config(dir.path(), "recorded");
    let (plan, _) = sweep(&cfg, &dir.path().join("out"), false);
    assert_eq!(plan.conversations.len(), 1);
    let conv = &plan.conversations[0];
    assert_eq!((conv.source.as_str(), conv.error.as_deref()), ("mine", None));
    // Converted into the cache, keyed by content hash; provenance from SOURCE.md, no machine path.
    let loaded = compactbench::datasets::load_conversation(&repo().join(&conv.path)).unwrap();
    assert!(conv.path.starts_with(dir.path().join("cache")), "{}", conv.path.display());
    assert_eq!(loaded.meta.repository.as_deref(), Some("someone/project"));
    assert_eq!(loaded.meta.license.as_deref(), Some("MIT"));
    assert_eq!(loaded.meta.path.as_deref(), Some("session-1.jsonl.gz"));
    let at = loaded.recorded_compactions[0].at;
    let rows = events_by_strategy(&dir.path().join("out"), &plan);
    assert_eq!(rows.len(), 4);
    let turns: Vec<u64> = rows
        .iter()
        .map(|(_, e)| e.iter().map(|t| t.0).collect::<Vec<_>>())
        .map(|t| {
            assert_eq!(t.len(), 1, "{rows:?}");
            t[0]
        })
        .collect();
    // One event per strategy, all before the same request: the first model turn at or after `at`.
    assert!(turns.iter().all(|&t| t == turns[0] && t as usize >= at), "{rows:?} at {at}");
    // Forced there: `none` records a NOOP, the others act (on this short fixture the reference's summary
    // is larger than what it replaces, and its inflation guard rejects it, as upstream does).
    for (name, events) in &rows {
        let expected: &[&str] = match name.as_str() {
            // Forced, it drops nothing from a history far below 30 % of the window.
            "none" | "drop-oldest" => &["NOOP"],
            "gemini" => &["COMPRESSED", "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"],
            _ => &["COMPRESSED"],
        };
        assert!(expected.contains(&events[0].1.as_str()), "{name}: {events:?}");
    }
    // A second plan reads the conversion from the cache (same file).
    let again = compactbench::sweep::planner::make_plan(&cfg, &repo()).unwrap();
    assert_eq!(again.conversations[0].path, conv.path);

    // Under their own triggers, nothing reaches 200k tokens in this short session: only `recorded` compacts.
    let own = config(dir.path(), "own");
    let (plan, _) = sweep(&own, &dir.path().join("out-own"), false);
    for (name, events) in events_by_strategy(&dir.path().join("out-own"), &plan) {
        let n = events.iter().filter(|e| e.1 != "NOOP").count();
        assert_eq!(n, usize::from(name == "recorded"), "{name}: {events:?}");
    }
}

#[test]
fn a_raw_log_that_cannot_be_read_fails_its_cells_and_the_others_run() {
    let dir = tempfile::tempdir().unwrap();
    gzipped_fixture(dir.path());
    std::fs::write(dir.path().join("logs/broken.jsonl"), "{\"type\":\"user\",\n").unwrap();
    let (plan, _) = sweep(&config(dir.path(), "recorded"), &dir.path().join("out"), false);
    assert_eq!(plan.conversations.len(), 2);
    let broken = plan.conversations.iter().find(|c| c.error.is_some()).expect("the broken log is listed");
    let e = broken.error.as_deref().unwrap();
    assert!(e.contains("broken.jsonl") && e.contains("line 1"), "{e}");
    assert!(plan.conversations.iter().any(|c| c.error.is_none() && c.source == "mine"));
}

/// `recorded` replays what the agent sent, which never overflowed the window the agent ran in: on both
/// Claude Code corpora (read in place from ../shared, as their configs name them) no session overflows under
/// it, with each window, fixed part and token scale taken from the session's recorded usage
/// (`token_limit`, `overhead`, `token_scale = "recorded"`); every window holds the largest request the agent
/// counted. The size model is checked out of sample: the replay's scale and fixed part are fitted on the
/// requests before the agent's first compaction (so the replayed sizes there match by construction), and a
/// scale fitted on each session's first half of those requests must predict the second half (median within
/// 5 %; `metrics::holdout_ratios`).
#[test]
fn no_claude_code_session_overflows_under_the_agents_own_compactions() {
    use compactbench::replay::strategy::Role;
    let recorded = compactbench::replay::registry::role_name(Role::Recorded).expect("a strategy replays the agent's");
    let llm = compactbench::llm::ScriptedModel::new(["unused"]);
    for (config, sessions) in [("configs/long-sessions.toml", 24), ("configs/agent-sessions-claude-code.toml", 24)] {
        let cfg = SweepConfig::load(&repo().join(config)).unwrap();
        assert_eq!(cfg.replay.token_limit, compactbench::replay::TokenLimit::Recorded, "{config}");
        let point = cfg.points().unwrap().into_iter().find(|p| p.strategy.kind() == recorded).expect("recorded point");
        let plan = compactbench::sweep::planner::make_plan(&cfg, &repo())
            .unwrap_or_else(|e| panic!("{config}: {e} (the real-session tests need ../shared beside the checkout)"));
        assert_eq!(plan.conversations.len(), sessions, "{config}");
        let (mut ratios, mut overflowed) = (Vec::new(), Vec::new());
        for planned in &plan.conversations {
            assert!(planned.error.is_none(), "{config}: {}: {:?}", planned.id, planned.error);
            let conv = compactbench::datasets::load_conversation(&repo().join(&planned.path)).unwrap();
            let input = conv.replay_input(&planned.id);
            let r = futures::executor::block_on(compactbench::replay::replay_spec(
                input,
                &point.strategy,
                &cfg.replay,
                &llm,
                &mut compactbench::replay::NoObserver,
            ));
            assert!(r.error.is_none(), "{config}: {}: {:?}", planned.id, r.error);
            let agent_peak = conv.recorded_prompt_tokens.iter().flatten().copied().max().unwrap_or(0);
            assert!(r.token_limit >= agent_peak, "{}: window {} < {agent_peak}", planned.id, r.token_limit);
            assert!([200_000, 1_000_000].contains(&r.token_limit), "{}: window {}", planned.id, r.token_limit);
            if r.overflowed() {
                overflowed.push((planned.id.clone(), r.peak_request_tokens, r.token_limit));
            }
            let (before, _) = r.recorded_request_pairs();
            ratios.extend(compactbench::metrics::holdout_ratios(&before));
        }
        assert!(overflowed.is_empty(), "{config}: sessions overflowing under `{recorded}`: {overflowed:?}");
        assert!(ratios.len() > 100, "{config}: {} requests to check out of sample", ratios.len());
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        assert!((0.95..=1.05).contains(&median), "{config}: out-of-sample median predicted/recorded {median}");
    }
}

/// Issue #36, a user's own directory as it is: beside a good session, a session still being written (its
/// last line cut), a README, a JSON report, a text note and a damaged `.gz`. The live session is read with a
/// note naming the cut line; the files that are no sessions are skipped with one note; the damaged one is
/// named, in the report and on stderr; the report of the others is written and `run` exits incomplete (4).
#[test]
fn a_run_with_a_failed_conversation_still_writes_the_report_of_the_others() {
    let dir = tempfile::tempdir().unwrap();
    gzipped_fixture(dir.path());
    let logs = dir.path().join("logs");
    std::fs::write(logs.join("damaged.jsonl.gz"), b"\x1f\x8b\x08\x00not gzip at all").unwrap();
    let fixture = std::fs::read_to_string(repo().join("harness/datasets/src/fixtures/claude-code.jsonl")).unwrap();
    let cut = "{\"parentUuid\":\"x\",\"type\":\"assistant\",\"message\":{\"role\":\"assist";
    std::fs::write(logs.join("live.jsonl"), format!("{}\n{cut}", fixture.trim_end())).unwrap();
    std::fs::write(logs.join("README.md"), "# my sessions\n").unwrap();
    std::fs::write(logs.join("report.json"), "{\n  \"name\": \"weekly\",\n  \"figures\": [1, 2]\n}\n").unwrap();
    std::fs::write(logs.join("notes.txt"), "remember to compact\n").unwrap();
    let cfg = dir.path().join("raw.toml");
    let text = format!(
        "name = \"raw\"\ndatasets = [{{ raw = \"{logs}\", format = \"claude-code\", source = \"mine\" }}]\n\
         import_cache = \"{cache}\"\n[replay]\ntoken_limit = 200000\ncompress_at = \"recorded\"\n\
         [grid]\nstrategy = [\"recorded\", \"none\"]\nsummarizer = [\"extractive\"]\nverification = [false]\n",
        logs = dir.path().join("logs").display(),
        cache = dir.path().join("cache").display(),
    );
    std::fs::write(&cfg, text).unwrap();
    let out = dir.path().join("out");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .args(["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert_eq!(status.status.code(), Some(compactbench::exit::EXIT_INCOMPLETE), "{stderr}");
    assert!(stderr.contains("failed: damaged") && stderr.contains("the report of the others was written"), "{stderr}");
    let live_lines = fixture.trim_end().lines().count() + 1;
    assert!(stderr.contains(&format!("note: mine: live.jsonl: line {live_lines}, column")), "{stderr}");
    assert!(
        stderr.contains("note: mine: 2 file(s) are not claude-code sessions, skipped: notes.txt, report.json"),
        "{stderr}"
    );
    assert!(!stderr.contains("README"), "{stderr}");
    let main = std::fs::read_to_string(out.join("report.md")).expect("the report is written");
    let section = main.split("## Conversations that failed").nth(1).expect("the failed conversations are named");
    assert!(section.contains("`damaged`") && section.contains("damaged.jsonl.gz"), "{section}");
    // Named relative to the raw directory, as every other import error names its file.
    let logs = dir.path().join("logs").display().to_string();
    assert!(!section.contains(&logs) && !stderr.contains(&logs), "an absolute path: {section}\n{stderr}");
    assert!(out.join("results/conversations.csv").is_file());
    // The good session's figures are there, and the live one's.
    let conversations = std::fs::read_to_string(out.join("results/conversations.csv")).unwrap();
    assert!(conversations.contains("session-1") && conversations.contains("live"), "{conversations}");
    assert!(!conversations.contains("report") && !conversations.contains("notes"), "{conversations}");

    // The same run in two shards, merged: the merge writes the report of the others too, names the failed
    // conversation and exits incomplete, as the run does.
    let bin = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_compactbench")).args(args).current_dir(repo()).output().unwrap()
    };
    let shards: Vec<String> = (1..=2).map(|i| dir.path().join(format!("shard{i}")).display().to_string()).collect();
    for (i, shard) in shards.iter().enumerate() {
        let spec = format!("{}/2", i + 1);
        let out = bin(&["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", shard, "--shard", &spec]);
        assert!(out.status.code().is_some_and(|c| c == 0 || c == compactbench::exit::EXIT_INCOMPLETE), "{out:?}");
    }
    let merged = dir.path().join("merged");
    let out = bin(&["merge", "--out", merged.to_str().unwrap(), &shards[0], &shards[1]]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(compactbench::exit::EXIT_INCOMPLETE), "{stderr}");
    assert!(stderr.contains("failed: damaged") && stderr.contains("the report of the others was written"), "{stderr}");
    let main = std::fs::read_to_string(merged.join("report.md")).expect("the merge writes the report");
    assert!(main.contains("## Conversations that failed"), "{main}");
}
