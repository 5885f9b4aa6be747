//! The hand-written probes of the long real sessions (`datasets/probes/claude-code-long.manual.json`),
//! against the sessions themselves (`../shared/datasets-raw`, read in place): no probe fails a lint that
//! makes it unmeasurable (dead gold, gold in its question, gold over 8 words, known at start), and the
//! uncompressed history (what `none` sends) keeps every one of them.

use super::support::repo;
use compactbench::datasets;
use compactbench::probes::{grader::Grader, lint, load_probes, text_match};
use compactbench::sweep::config::SweepConfig;

#[test]
fn every_hand_written_probe_is_measurable_and_kept_by_the_uncompressed_history() {
    let root = repo();
    if super::support::shared_or_skip("datasets-raw/claude-code-long", "hand-written probes").is_none() {
        return;
    }
    let config = SweepConfig::load(&root.join("configs/long-sessions.toml")).unwrap();
    let plan = compactbench::sweep::planner::make_plan(&config, &root).unwrap();
    let pc = plan.probes.clone().expect("probes enabled");
    let (mut probes_seen, mut errors, mut lost) = (0, Vec::new(), Vec::new());
    for planned in &plan.conversations {
        assert!(planned.error.is_none(), "{}: {:?}", planned.id, planned.error);
        let conv = datasets::load_conversation(&root.join(&planned.path)).unwrap();
        let manual = load_probes(
            &root.join(&pc.dir),
            &conv.meta.source,
            &conv.meta.id,
            &[compactbench::data::ProbeOrigin::Manual],
            conv.history.len(),
        )
        .unwrap();
        if manual.is_empty() {
            continue;
        }
        probes_seen += manual.len();
        errors.extend(
            lint::lint_conversation(&manual, None, Some(&conv))
                .into_iter()
                .filter(|l| l.kind.is_error())
                .map(|l| l.to_string()),
        );
        let grader = Grader::of_conversation(&conv, &manual);
        let hay = text_match::history_haystack(&conv.history);
        let matchers: Vec<_> = manual.iter().map(|p| grader.matcher(p)).collect();
        for (p, kept_by) in manual.iter().zip(grader.kept_all(&hay, &matchers)) {
            if kept_by.is_none() {
                lost.push(format!("{}: {}", conv.meta.id, p.id));
            }
        }
    }
    assert!(probes_seen >= 60, "only {probes_seen} hand-written probes found");
    assert!(errors.is_empty(), "{} error lints:\n{}", errors.len(), errors.join("\n"));
    assert!(lost.is_empty(), "the uncompressed history loses {} probes: {lost:?}", lost.len());
}
