//! The grader against labels (`report::grader_check`): a small synthetic run (one shipped
//! conversation, hand-written probes, a compression of each strategy) and a labels file, checked number by
//! number and through the report's pages.

use super::support::repo;
use compactbench::data::ProbeResults;
use compactbench::data::{Cell, CellResult, Checkpoint, PlannedConversation, ProbeKind};
use compactbench::replay::{CompressionEvent, ConversationResult};
use compactbench::report;
use compactbench::sweep::config::SweepConfig;
use std::path::Path;

/// Recall probes `r0`…`r23` and decision probes `d0`…`d23`; the grader keeps the first twelve of each at the
/// reference's compression, and `r0` at the baseline's.
const PER_KIND: usize = 24;

fn question(id: &str) -> String {
    format!("What did the session settle in {id}?")
}

fn probe_ids() -> Vec<(String, ProbeKind)> {
    let mut out = Vec::new();
    for (prefix, kind) in [("r", ProbeKind::Recall), ("d", ProbeKind::Decision)] {
        out.extend((0..PER_KIND).map(|i| (format!("{prefix}{i}"), kind)));
    }
    out
}

/// The run's plan (its probes read from `dir`, its labels at `dir/labels.json`) and its cells.
fn synthetic_run(dir: &Path) -> (compactbench::data::Plan, Vec<CellResult>) {
    let path = repo().join("datasets/aider/chat-history-2024-08-05-20-40-10.json");
    let conv = compactbench::datasets::load_conversation(&path).unwrap();
    let (id, source) = (conv.meta.id.clone(), conv.meta.source.clone());
    let probes: Vec<serde_json::Value> = probe_ids()
        .iter()
        .map(|(p, kind)| {
            serde_json::json!({"id": p, "conversation": id, "kind": kind.name(), "question": question(p),
                "gold": format!("answer {p}"), "evidence": [0], "source": "manual"})
        })
        .collect();
    let file =
        serde_json::json!({"format": "compactbench.probes/1", "conversation": id, "dataset": source, "probes": probes});
    std::fs::create_dir_all(dir.join("probes").join(&source)).unwrap();
    std::fs::write(dir.join("probes").join(&source).join(format!("{id}.manual.json")), file.to_string()).unwrap();
    let text = format!(
        "name = \"labels-test\"\ndatasets = []\n[grid]\nstrategy = [\"gemini\", \"drop-oldest\", \"none\"]\n\
         summarizer = [\"extractive\"]\nthreshold = [0.5]\nprompt = [\"v5\"]\nverification = [false]\n\
         [probes]\ndir = \"{}\"\nsources = [\"manual\"]\nanswerer = \"extractive\"\ninjection = false\n\
         labels = \"{}\"\n",
        dir.join("probes").display(),
        dir.join("labels.json").display()
    );
    let config = SweepConfig::parse(&text, "labels.toml").unwrap();
    let mut plan = config.plan_without_conversations().unwrap();
    plan.probes = config.probes.clone();
    plan.conversations.push(PlannedConversation { id: id.clone(), path, source: source.clone(), error: None });
    let cells = plan
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let kept = |probe: &str| match i {
                0 => probe[1..].parse::<usize>().unwrap() < PER_KIND / 2,
                1 => probe == "r0",
                _ => true,
            };
            // Built from JSON: fields the grader adds later take their defaults.
            let scores = |at_compression: bool| -> Vec<serde_json::Value> {
                probe_ids()
                    .into_iter()
                    .map(|(probe, kind)| {
                        serde_json::json!({"probe": probe, "kind": kind.name(), "source": "manual",
                            "retained": !at_compression || kept(&probe), "early_only": true})
                    })
                    .collect()
            };
            let compresses = p.strategy.role() != Some(compactbench::replay::strategy::Role::NoCompression);
            let mut checkpoints = Vec::new();
            if compresses {
                checkpoints
                    .push(serde_json::json!({"event": 0, "ordinal": 1, "replaced": true, "scores": scores(true)}));
            }
            checkpoints.push(serde_json::json!({"event": null, "ordinal": compresses as u32, "scores": scores(false)}));
            let checkpoints: Vec<Checkpoint> = serde_json::from_value(serde_json::Value::Array(checkpoints)).unwrap();
            let event = CompressionEvent {
                status: compactbench::compress::CompressionStatus::Compressed,
                request: 1,
                request_tokens_before: 1000,
                request_tokens_after: 400,
                ..Default::default()
            };
            CellResult {
                cell: Cell { point: p.id.clone(), conversation: id.clone(), repeat: 0 },
                source: source.clone(),
                transient_failure: false,
                plan: plan.digest(),
                digest: String::new(),
                result: ConversationResult {
                    conversation: id.clone(),
                    token_limit: 10_000,
                    request_tokens: vec![800, 1000, 500],
                    request_tokens_total: 2300,
                    none_request_tokens_total: 2800,
                    requests: 3,
                    events: if compresses { vec![event] } else { Vec::new() },
                    ..Default::default()
                },
                probes: Some(ProbeResults { probes: 2 * PER_KIND, checkpoints, ..Default::default() }),
            }
        })
        .collect();
    (plan, cells)
}

fn label(
    plan: &compactbench::data::Plan,
    probe: &str,
    strategy: &str,
    ordinal: u32,
    answerable: bool,
) -> serde_json::Value {
    let c = &plan.conversations[0];
    serde_json::json!({"source": c.source, "conversation": c.id, "probe": probe, "strategy": strategy,
        "ordinal": ordinal, "question_sha256": compactbench::verdict::labels::question_digest(&question(probe)),
        "gold_sha256": compactbench::verdict::labels::question_digest(&format!("answer {probe}")), "answerable": answerable})
}

/// The labels: every recall probe at the reference's and at the baseline's compression as the grader has it
/// (24 of 24 each); the reference's decision probes with 2 false positives and 1 false negative (21 of 24:
/// 87.5 %), none of the baseline's; then a label whose question changed, one whose gold changed, one whose
/// gold was not recorded, one of a probe that is gone and one of a compression that never was.
fn write_labels(dir: &Path, plan: &compactbench::data::Plan) -> (String, String) {
    let reference = plan.points[0].strategy.kind().to_string();
    let baseline = plan.points[1].strategy.kind().to_string();
    let half = PER_KIND / 2;
    let mut labels = Vec::new();
    for i in 0..PER_KIND {
        labels.push(label(plan, &format!("r{i}"), &reference, 1, i < half));
        // Kept d0–d11: d10 and d11 are not answerable; dropped d12–d23: d12 is.
        labels.push(label(plan, &format!("d{i}"), &reference, 1, i < half - 2 || i == half));
        labels.push(label(plan, &format!("r{i}"), &baseline, 1, i == 0));
    }
    let mut changed = label(plan, "r1", &baseline, 1, true);
    changed["question_sha256"] = serde_json::json!(compactbench::verdict::labels::question_digest("an older wording"));
    labels.push(changed);
    let mut gold = label(plan, "r3", &baseline, 1, true);
    gold["gold_sha256"] = serde_json::json!(compactbench::verdict::labels::question_digest("an older gold"));
    labels.push(gold);
    let mut unrecorded = label(plan, "r4", &baseline, 1, true);
    unrecorded["gold_sha256"] = serde_json::json!(compactbench::verdict::labels::UNRECORDED_GOLD);
    labels.push(unrecorded);
    labels.push(label(plan, "gone", &baseline, 1, true));
    labels.push(label(plan, "r2", &reference, 2, true));
    let file = serde_json::json!({"format": compactbench::verdict::labels::LABELS_FORMAT, "dataset": plan.name,
        "method": "made up for this test", "labels": labels});
    std::fs::write(dir.join("labels.json"), file.to_string()).unwrap();
    (reference, baseline)
}

#[test]
fn the_grader_is_checked_against_labels_and_a_kind_below_ninety_percent_is_not_gradable() {
    let tmp = tempfile::tempdir().unwrap();
    let (plan, cells) = synthetic_run(tmp.path());
    assert_eq!(
        compactbench::verdict::labels::check(&plan, &cells),
        compactbench::verdict::labels::Labels::Missing(tmp.path().join("labels.json"))
    );
    let (reference, baseline) = write_labels(tmp.path(), &plan);
    let compactbench::verdict::labels::Labels::Checked(c) = compactbench::verdict::labels::check(&plan, &cells) else {
        panic!("labels not read")
    };
    assert_eq!(c.labels, 3 * PER_KIND + 5);
    assert_eq!(c.method.as_deref(), Some("made up for this test"));
    let recall = c.by_kind["recall"];
    assert_eq!(
        (recall.pairs, recall.agree, recall.kept, recall.answerable, recall.kept_answerable),
        (48, 48, 13, 13, 13)
    );
    let decision = c.by_kind["decision"];
    assert_eq!((decision.pairs, decision.agree), (24, 21));
    assert_eq!(decision.agreement(), Some(0.875));
    assert_eq!(decision.precision(), Some(10.0 / 12.0), "kept d0–d11, of them d0–d9 answerable");
    assert_eq!(decision.recall(), Some(10.0 / 11.0), "answerable d0–d9 and d12, the grader kept d0–d9");
    assert!(!decision.gradable());
    assert_eq!(c.by_kind["artifact"].pairs, 0);
    assert_eq!(c.by_strategy[&reference].pairs, 2 * PER_KIND);
    assert_eq!(c.by_strategy[&baseline].pairs, PER_KIND);
    assert_eq!(c.by_kind_strategy["recall"][&baseline].pairs, PER_KIND);
    assert!(!c.by_kind_strategy["decision"].contains_key(&baseline));
    assert_eq!((c.all.pairs, c.all.agree, c.all.kept, c.all.answerable, c.all.kept_answerable), (72, 69, 25, 24, 23));
    let stale: Vec<(&str, &str)> = c.stale.iter().map(|u| (u.id.as_str(), u.reason.as_str())).collect();
    assert_eq!(stale.len(), 4, "{stale:?}");
    assert!(stale[0].0.contains("/r1@") && stale[0].1.contains("question changed"), "{stale:?}");
    assert!(stale[1].0.contains("/r3@") && stale[1].1.contains("gold changed"), "{stale:?}");
    assert!(stale[2].0.contains("/r4@") && stale[2].1.contains("not recorded"), "{stale:?}");
    assert!(stale[3].0.contains("/gone@") && stale[3].1.contains("no longer exists"), "{stale:?}");
    assert_eq!(c.unmatched.len(), 1, "{:?}", c.unmatched);
    assert!(c.unmatched[0].id.ends_with(&format!("/r2@{reference}#2")), "{:?}", c.unmatched);
    let g = compactbench::verdict::labels::gradable_kinds(&plan, &cells).unwrap();
    assert_eq!(g.gradable(), ["recall"]);
    // Decision fails on the reference (87.5 %) and has no labels on the baseline: both reasons are given.
    let why = g.why_not("decision").unwrap();
    assert!(
        why.contains(&format!("{baseline}: 0 labelled pairs"))
            && why.contains(&format!("{reference}: agreement below")),
        "{why}"
    );

    // Every other probe figure reads the gradable kinds only.
    let (_, scored) = compactbench::verdict::labels::scored_cells(&plan, cells.clone());
    let kinds: std::collections::BTreeSet<&str> = scored
        .iter()
        .flat_map(|c| c.probes.iter().flat_map(|p| &p.checkpoints).flat_map(|k| &k.scores))
        .map(|s| s.kind.name())
        .collect();
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), ["recall"]);

    // The per-kind table draws no difference from the decision probes and pools `all` over recall only.
    let t = report::probe_kinds::table(&plan, &cells, Some(&g)).unwrap();
    let decision_rows: Vec<&Vec<String>> = t.rows.iter().filter(|r| r[2].starts_with("decision")).collect();
    assert_eq!(decision_rows.len(), 2, "{:?}", t.rows);
    for r in &decision_rows {
        assert_eq!(r[2], format!("decision ({})", compactbench::verdict::labels::NOT_GRADABLE));
        let difference = if r[1] == reference { "–" } else { compactbench::verdict::labels::NOT_GRADABLE };
        assert_eq!(r.last().unwrap(), difference, "{r:?}");
    }
    let all: Vec<&Vec<String>> = t.rows.iter().filter(|r| r[2].starts_with("all")).collect();
    assert!(all.iter().all(|r| r[2] == "all gradable (recall)"), "{all:?}");
    // Each row carries its own number of pairs: the reference 24 recall pairs, the baseline as many.
    assert!(all.iter().all(|r| r[4].ends_with(&format!("(n={PER_KIND})"))), "{all:?}");
    let recall_reference = t.rows.iter().find(|r| r[1] == reference && r[2] == "recall").unwrap();
    assert!(recall_reference[4].starts_with("50.0% "), "{recall_reference:?}");
    // Without labels nothing is gated: `all` counts every kind.
    let ungated = report::probe_kinds::table(&plan, &cells, None).unwrap();
    let all = ungated.rows.iter().find(|r| r[1] == reference && r[2] == "all").unwrap();
    assert!(all[4].ends_with(&format!("(n={})", 2 * PER_KIND)), "{all:?}");

    // The report's pages: the section on the probes page, a line on the main page.
    let run = tmp.path().join("run");
    compactbench::sweep::run_dir::ensure_plan(&run, &plan).unwrap();
    for c in &cells {
        compactbench::sweep::run_dir::write_cell(&run, c).unwrap();
    }
    report::build(&run, false).unwrap();
    let probes = std::fs::read_to_string(run.join(report::PROBES)).unwrap();
    let section = &probes[probes.find("## Grader against labels").expect("the section")..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let no_decision = format!("no: {baseline}: 0 labelled pairs, fewer than 20; {reference}: agreement below 90 %");
    let no_artifact =
        format!("no: {baseline}: 0 labelled pairs, fewer than 20; {reference}: 0 labelled pairs, fewer than 20");
    for row in [
        format!("| decision | 24 | 87.5% (21/24) | 83.3% (10/12) | 90.9% (10/11) | {no_decision} |"),
        "| recall | 48 | 100.0% (48/48) | 100.0% (13/13) | 100.0% (13/13) | yes |".to_string(),
        format!("| artifact | 0 | – | – | – | {no_artifact} |"),
        "| all | 72 | 95.8% (69/72) | 92.0% (23/25) | 95.8% (23/24) | – |".to_string(),
        format!("| decision × {reference} | 24 | 87.5% (21/24) | 83.3% (10/12) | 90.9% (10/11) | no: agreement below 90 % | 45.8% (11/24) | 50.0% (12/24) |"),
        format!("| recall | {baseline} − {reference} | -45.8 | -45.8 | yes |"),
    ] {
        let squeezed: String =
            section.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n");
        assert!(squeezed.contains(&row), "{row} not in {section}");
    }
    assert!(section.contains("made up for this test"), "{section}");
    assert!(section.contains("Stale labels") && section.contains("4: "), "{section}");
    assert!(probes.contains(&format!("decision ({})", compactbench::verdict::labels::NOT_GRADABLE)), "{probes}");
    let main = std::fs::read_to_string(run.join(report::MAIN)).unwrap();
    let line = main.lines().find(|l| l.starts_with("Grader against labels")).expect("the main page's line");
    assert!(line.contains("1 of 5 kinds (recall)") && line.contains("4 stale labels"), "{line}");
}
