//! The strategy registry as a contributor meets it: a strategy defined here, registered and swept without
//! touching any other file (the `harness/ARCHITECTURE.md` walk-through), and the point ids of the shipped
//! default config unchanged by the registry.

use compactbench::compress::CompressionStatus;
use compactbench::history;
use compactbench::llm::LanguageModel;
use compactbench::metrics::FigureId;
use compactbench::replay::strategy::{
    parse_params, Bound, Compressor, CompressorSession, Knob, Params, SessionContext, Strategy, StrategyError,
    TurnInput, TurnOutcome,
};
use compactbench::sweep::config::SweepConfig;
use serde::Deserialize;
use std::sync::Arc;

use crate::support::{copy_dir, repo, sweep};

/// Keep the newest `keep_last` Contents once the last request passes `trigger × window`.
struct KeepLast;

#[derive(Clone, Deserialize)]
struct KeepLastParams {
    trigger: f64,
    keep_last: usize,
}

impl Strategy for KeepLast {
    fn name(&self) -> &'static str {
        "test-keep-last"
    }
    fn about(&self) -> &'static str {
        "keeps the newest N Contents above a trigger (a test strategy)"
    }
    fn uses_llm(&self) -> bool {
        false
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::number("trigger", 0.5, Bound::Open(0.0), Bound::Closed(1.0), "fraction of the window")
                .labelled("trig")
                .headed("trig share"),
            Knob::integer("keep_last", 4, 1, "Contents kept").labelled("last").headed("last N"),
        ]
    }
    // `expand` is the default: the product of the knobs' values.
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(parse_params::<KeepLastParams>(self.name(), params)?))
    }
}

impl Compressor for KeepLastParams {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(KeepLastSession { p: self.clone(), token_limit: conversation.window.token_limit })
    }
}

struct KeepLastSession {
    p: KeepLastParams,
    token_limit: u64,
}

#[async_trait::async_trait]
impl CompressorSession for KeepLastSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let p = &self.p;
        let orig = turn.last_prompt_tokens;
        if (orig as f64) < p.trigger * self.token_limit as f64 || turn.stored.len() <= p.keep_last {
            return Ok(TurnOutcome::noop(orig));
        }
        // Start at a plain user turn, never at a tool response.
        let plain_user = |c: &compactbench::history::Content| history::is_user(c) && !history::has_function_response(c);
        let Some(start) = (turn.stored.len() - p.keep_last..turn.stored.len()).find(|&i| plain_user(&turn.stored[i]))
        else {
            return Ok(TurnOutcome::noop(orig));
        };
        let kept = turn.stored[start..].to_vec();
        let new = compactbench::tokens::Estimator::Current.history(&kept);
        Ok(TurnOutcome::replaced(orig, new, CompressionStatus::Compressed, kept))
    }
}

fn register_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| compactbench::replay::register(Arc::new(KeepLast)).unwrap());
}

#[test]
fn a_strategy_defined_here_is_registered_validated_and_swept() {
    register_once();
    assert!(compactbench::replay::registry::describe().contains("test-keep-last"));
    // Its knobs are grid keys like any built-in's, checked against its declaration.
    let bad =
        "name = \"t\"\ndatasets = [\"datasets/aider\"]\n[grid]\nstrategy = [\"test-keep-last\"]\ntrigger = [1.5]\n";
    let e = SweepConfig::parse(bad, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.toml") && e.contains("grid.trigger") && e.contains("1.5 is not in (0, 1]"), "{e}");
    let text = "name = \"t\"\ndatasets = [\"datasets/aider\"]\nmax_conversations = 2\n[replay]\ntoken_limit = 4096\n\
                prompt_count_source = \"heuristic\"\n[llm]\ncache_mode = \"off\"\n\
                [grid]\nstrategy = [\"test-keep-last\", \"none\"]\ntrigger = [0.3]\nkeep_last = [2, 6]\n";
    let config = SweepConfig::parse(text, "t.toml").unwrap();
    let points = config.points().unwrap();
    let mine: Vec<_> = points.iter().filter(|p| p.strategy.kind() == "test-keep-last").collect();
    assert_eq!(mine.len(), 2);
    assert_eq!(mine[0].axes["keep_last"], "2");
    let out = std::env::temp_dir().join(format!("compactbench-keep-last-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (_, summary) = sweep(&config, &out, false);
    assert_eq!((summary.total_cells, summary.failed), (6, 0));
    let cells: Vec<compactbench::data::CellResult> = std::fs::read_dir(out.join("cells").join(&mine[1].id))
        .unwrap()
        .map(|f| serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert_eq!(cells.len(), 2);
    assert!(cells.iter().all(|c| c.result.error.is_none()));
    assert!(cells.iter().any(|c| c.result.compressed_events() > 0), "no compression");
    // The report labels, heads and types its knobs from its declaration alone.
    assert_eq!(mine[1].short_label(), "test-keep-last trig=0.3 last=6");
    let plan = compactbench::data::store::load_plan(&out).unwrap();
    let all = compactbench::data::store::collect(&out, &plan);
    let summaries = compactbench::report::summary::summarize(&plan, &all);
    let table = compactbench::report::summary::table(&summaries, Default::default());
    assert!(table.lines().any(|l| l.contains("last N")), "{table}");
    let frames = compactbench::report::aggregate::frames(&plan, &all, &[]).unwrap();
    use polars::prelude::DataType;
    let dtype = |name: &str| frames.points.column(name).unwrap().dtype().clone();
    assert_eq!((dtype("trigger"), dtype("keep_last")), (DataType::Float64, DataType::Int64));
    let report = compactbench::report::build(&out, false).unwrap();
    let markdown = std::fs::read_to_string(&report.markdown_path).unwrap();
    assert!(markdown.contains("last N"), "the report heads the knob's column by its declared header");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_knob_declares_its_table_header() {
    register_once();
    assert_eq!(compactbench::report::summary::axis_header("trigger"), "trig share");
    assert_eq!(compactbench::report::summary::axis_header("threshold"), "thr");
    assert_eq!(compactbench::report::summary::axis_header("token_limit"), "window");
}

#[test]
fn default_config_points_keep_the_committed_baseline_ids() {
    let config = SweepConfig::load(&repo().join("configs/default.toml")).unwrap();
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo().join("reports/baseline/plan.json")).unwrap()).unwrap();
    let baseline: Vec<(String, String)> = plan["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap().to_string(), serde_json::to_string(&p["axes"]).unwrap()))
        .collect();
    let now: Vec<(String, String)> =
        config.points().unwrap().iter().map(|p| (p.id.clone(), serde_json::to_string(&p.axes).unwrap())).collect();
    assert_eq!(now, baseline);
    // The baseline's plan, written when the window was among the parameters, holds the points the config
    // makes now (the gate compares them).
    let stored = compactbench::data::store::load_plan(&repo().join("reports/baseline")).unwrap();
    assert_eq!(stored.points, config.points().unwrap());
}

/// `configs/external.toml` with the example's path made absolute (tests run in `harness/`).
fn external_config(extra_args: &str) -> SweepConfig {
    let example = repo().join("harness/examples/summarize_head.py");
    let text = std::fs::read_to_string(repo().join("configs/external.toml"))
        .unwrap()
        .replace("harness/examples/summarize_head.py", &format!("{}{extra_args}", example.display()));
    SweepConfig::parse(&text, "configs/external.toml").unwrap()
}

fn cells_of(out: &std::path::Path, strategy: &str, config: &SweepConfig) -> Vec<compactbench::data::CellResult> {
    let points = config.points().unwrap();
    let p = points.iter().find(|p| p.strategy.kind() == strategy).unwrap();
    let mut cells: Vec<compactbench::data::CellResult> = std::fs::read_dir(out.join("cells").join(&p.id))
        .unwrap()
        .map(|f| serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap())
        .collect();
    cells.sort_by(|a, b| a.cell.conversation.cmp(&b.cell.conversation));
    cells
}

#[test]
fn the_python_example_compresses_through_the_harness_model_layer() {
    let config = external_config("");
    let out = std::env::temp_dir().join(format!("compactbench-external-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (_, summary) = sweep(&config, &out, false);
    assert_eq!((summary.total_cells, summary.failed), (6, 0));
    let cells = cells_of(&out, "exec", &config);
    assert_eq!(cells.len(), 3);
    assert!(
        cells.iter().all(|c| c.result.error.is_none()),
        "{:?}",
        cells.iter().map(|c| &c.result.error).collect::<Vec<_>>()
    );
    let events: Vec<_> = cells.iter().flat_map(|c| &c.result.events).collect();
    assert!(
        events.iter().any(|e| e.status == compactbench::compress::CompressionStatus::Compressed),
        "no compression event"
    );
    // The program's summary request went through the harness: recorded as a summarizer call.
    assert!(events.iter().all(|e| e.summarizer_calls == 1 && e.summarizer_input_tokens > 0));
    assert!(events.iter().all(|e| e.final_summary.as_deref().is_some_and(|s| s.contains("<state_snapshot>"))));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_crashing_program_fails_its_cells_with_a_clear_error_and_the_others_complete() {
    let config = external_config(" --crash-on 2");
    let out = std::env::temp_dir().join(format!("compactbench-external-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (_, summary) = sweep(&config, &out, false);
    assert_eq!((summary.total_cells, summary.failed), (6, 3));
    for c in cells_of(&out, "exec", &config) {
        let e = c.result.error.expect("the program crashed on its second request");
        assert_eq!(e.kind(), compactbench::replay::ReplayErrorKind::Strategy, "{e}");
        let e = e.to_string();
        assert!(e.contains("--crash-on 2`, request 2 ("), "{e}");
        assert!(e.contains("exited with exit status: 1") && e.contains("crashing on request 2 as asked"), "{e}");
        assert_eq!(c.result.requests, 1, "the replay stops at the failed request");
    }
    assert!(cells_of(&out, "none", &config).iter().all(|c| c.result.error.is_none() && c.result.requests > 2));
    let _ = std::fs::remove_dir_all(&out);
}

/// Every strategy of `configs/systems.toml`, replayed on one shipped conversation with the extractive
/// summarizer and the config's knobs, compresses at least once.
#[tokio::test]
async fn every_other_system_compresses_a_shipped_conversation() {
    use compactbench::llm::ExtractiveModel;
    use compactbench::replay::{replay_spec, NoObserver};
    let config = SweepConfig::load(&repo().join("configs/systems.toml")).unwrap();
    let points = config.points().unwrap();
    let conv =
        compactbench::datasets::load_conversation(&repo().join("datasets/aider/chat-history-2024-08-13-13-42-45.json"))
            .unwrap();
    // OpenHands counts events: a longer trajectory for it.
    let long =
        compactbench::datasets::load_conversation(&repo().join("datasets/mini-swe-agent/django__django-11099.json"))
            .unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for p in points.iter().filter(|p| p.strategy.kind() != "none") {
        let c = if p.strategy.kind().starts_with("openhands") { &long } else { &conv };
        let input = c.replay_input("c");
        let settings = compactbench::replay::ReplaySettings { token_limit: p.token_limit, ..config.replay.clone() };
        let r = replay_spec(input, &p.strategy, &settings, &ExtractiveModel::new(), &mut NoObserver).await;
        assert_eq!(r.error, None, "{}", p.strategy.kind());
        let compressions = r
            .events
            .iter()
            .filter(|e| {
                e.status == compactbench::compress::CompressionStatus::Compressed
                    || e.status == compactbench::compress::CompressionStatus::ContentTruncated
            })
            .count();
        assert!(
            compressions >= 1,
            "{} {:?}: {:?} ({} contents)",
            p.strategy.kind(),
            p.axes,
            r.events_by_status,
            c.history.len()
        );
        kinds.insert(p.strategy.kind().to_string());
    }
    assert_eq!(kinds.len(), 9, "{kinds:?}");
}

#[test]
fn compactbench_strategies_lists_at_least_eleven_with_knobs() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_compactbench")).arg("strategies").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ') && !l.is_empty()).collect();
    assert!(names.len() >= 11, "{names:?}");
    assert!(text.contains("codex (calls the summarizer)") && text.contains("exec:COMMAND"));
    assert!(text.lines().any(|l| l.trim_start().starts_with("threshold") && l.contains("default 0.9")), "{text}");
}

/// Issue #23: both Cline modes printed as `cline`; a knob the strategy labels points by tells them apart.
#[test]
fn the_cline_modes_have_distinct_labels() {
    let config = SweepConfig::load(&repo().join("configs/systems.toml")).unwrap();
    let labels: Vec<String> =
        config.points().unwrap().iter().filter(|p| p.strategy.kind() == "cline").map(|p| p.short_label()).collect();
    assert_eq!(labels, ["cline mode=summary", "cline mode=truncate"]);
}

/// Issue #38: a planted compressor that drops the model Contents holding function calls from the older half
/// of the history but keeps their responses. Its requests after each compression carry orphaned responses:
/// counted (`invalid_requests`, the violation on the event), where `none` and the reference count none on
/// the same conversations, and the gate fails it against a valid baseline of the same configuration.
#[test]
fn a_compressor_that_orphans_responses_makes_invalid_requests_and_fails_the_gate() {
    use compactbench::replay::validity::ViolationKind;
    use compactbench::verdict::gate;
    let script = repo().join("harness/tests/data/orphan_responses.py");
    let text = format!(
        "name = \"orphans\"\n\
         datasets = [\"datasets/tau-bench/task001-trial0.json\", \"datasets/tau-bench/task012-trial0.json\", \
                     \"datasets/swe-agent/BabyEncryption.json\", \"datasets/mini-swe-agent/astropy__astropy-14365.json\"]\n\
         concurrency = 2\n\
         [replay]\ntoken_limit = 4096\nprompt_count_source = \"measured\"\nsystem_prompt_tokens = 500\n\
         [llm]\ncache_mode = \"off\"\n\
         [grid]\nstrategy = [\"exec:python3 {}\", \"none\", \"gemini\"]\nsummarizer = [\"extractive\"]\n\
         threshold = [0.5]\npreserve_fraction = [0.3]\nprompt = [\"v5\"]\nverification = [false]\n\
         [grid.exec]\nthreshold = [0.5]\nkeep_fraction = [0.3]\ntimeout_secs = [60]\n",
        script.display()
    );
    let config = SweepConfig::parse(&text, "orphans.toml").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let planted = tmp.path().join("planted");
    let (_, summary) = sweep(&config, &planted, false);
    assert_eq!(summary.failed, 0);

    let exec = cells_of(&planted, "exec", &config);
    assert_eq!(exec.len(), 4);
    assert!(exec.iter().any(|c| c.result.invalid_requests > 0), "the planted compressor was never caught");
    for c in &exec {
        let flagged = c.result.events.iter().filter(|e| !e.request_violations.is_empty()).count() as u64;
        assert_eq!(flagged, c.result.invalid_requests, "{}", c.cell.conversation);
        for e in c.result.events.iter().filter(|e| !e.request_violations.is_empty()) {
            assert!(
                e.request_violations.iter().any(|v| v.kind == ViolationKind::OrphanResponse && v.call.is_some()),
                "{:?}",
                e.request_violations
            );
        }
    }
    for strategy in ["none", "gemini"] {
        let cells = cells_of(&planted, strategy, &config);
        assert_eq!(cells.len(), 4);
        for c in &cells {
            assert_eq!(c.result.invalid_requests, 0, "{strategy} {}", c.cell.conversation);
            assert!(c.result.events.iter().all(|e| e.request_violations.is_empty()));
        }
    }
    assert!(cells_of(&planted, "gemini", &config).iter().any(|c| c.result.compressed_events() > 0));

    // A valid baseline of the same configuration: the planted run with the faults taken out.
    let valid = tmp.path().join("valid");
    copy_dir(&planted, &valid);
    for mut c in exec {
        c.result.invalid_requests = 0;
        c.result.events.iter_mut().for_each(|e| e.request_violations.clear());
        compactbench::sweep::run_dir::write_cell(&valid, &c).unwrap();
    }
    let rules = gate::Rules::load(&repo().join("configs/gate.toml")).unwrap();
    let r = gate::compare(&valid, &planted, &rules).unwrap();
    assert!(r.complete(), "{:?}", r.completeness);
    let regressions: Vec<&gate::Check> = r.regressions().collect();
    assert!(!r.passed());
    assert!(
        regressions.iter().all(|c| c.metric == FigureId::InvalidRequests && c.strategy == "exec"),
        "{}",
        gate::markdown(&r)
    );
    assert!(regressions[0].reason.as_deref().is_some_and(|w| w.contains("where the baseline has 0")));
    assert!(gate::junit(&r).contains("invalid_requests: "), "{}", gate::junit(&r));
    // Both valid, or both with the same faults: it passes.
    assert!(gate::compare(&valid, &valid, &rules).unwrap().passed());
    assert!(gate::compare(&planted, &planted, &rules).unwrap().passed());
    // The faults gone from the current run: no regression either.
    assert!(gate::compare(&planted, &valid, &rules)
        .unwrap()
        .regressions()
        .all(|c| c.metric != FigureId::InvalidRequests));
}
