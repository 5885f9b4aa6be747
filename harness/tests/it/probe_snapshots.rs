//! `compactbench probes snapshots`: one snapshot per compression, with the probes a run scores there.

use super::support::{repo, strings, sweep};
use compactbench::probes::snapshots::SnapshotProbes;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// The shipped compacted Claude Code fixture as a raw log, a hand-written probe before its compaction and
/// one after it, and a config replaying it at the recorded compaction with derived auto probes.
fn setup(dir: &Path) -> (std::path::PathBuf, compactbench::datasets::Conversation) {
    let bytes = std::fs::read(repo().join("harness/datasets/src/fixtures/claude-code-compacted.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("logs/session-1.jsonl.gz"), gz.finish().unwrap()).unwrap();
    let text = crate::raw_sessions::raw_config("snap", dir, "recorded", &["recorded", "gemini", "none"])
        .set("probes.dir", dir.join("probes").display().to_string())
        .set("probes.sources", strings(&["auto", "manual"]))
        .set("probes.answerer", "extractive")
        .set("probes.injection", false)
        .set("probes.answer_at_events", false)
        .set("probes.derive_auto", true)
        .text();
    let config_path = dir.join("snap.toml");
    std::fs::write(&config_path, &text).unwrap();
    let config = compactbench::sweep::config::SweepConfig::parse(&text, "snap.toml").unwrap();
    let plan = compactbench::sweep::planner::make_plan(&config, &repo()).unwrap();
    let conv = compactbench::datasets::load_conversation(&repo().join(&plan.conversations[0].path)).unwrap();
    let at = conv.recorded_compactions[0].at;
    assert!(at > 0 && at < conv.history.len() - 1, "the fixture compacts mid-session");
    // A gold the probe's evidence holds and no other Content does (so no lint marks the probe).
    let texts: Vec<String> = conv.history.iter().map(compactbench::probes::text_match::content_text).collect();
    let distinctive = |range: std::ops::Range<usize>| {
        range.rev().find_map(|i| {
            let words = texts[i].split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 8);
            let mut unique = words.filter(|w| texts.iter().filter(|t| t.contains(*w)).count() == 1);
            unique.next().map(|w| (i, w.to_string()))
        })
    };
    let (early_at, early_gold) = distinctive(1..at).expect("a distinctive word before the compaction");
    let (late_at, late_gold) = distinctive(at + 1..conv.history.len()).expect("a distinctive word after it");
    let probe = |id: &str, evidence: usize, gold: &str| {
        serde_json::json!({"id": id, "conversation": conv.meta.id, "kind": "recall",
            "question": format!("Which code name did the user give in {id}?"), "gold": gold, "evidence": [evidence], "source": "manual"})
    };
    let manual = serde_json::json!({"format": "compactbench.corpus-probes/1", "dataset": "mine", "conversations": [
        {"format": "compactbench.probes/1", "conversation": conv.meta.id, "dataset": "mine",
         "probes": [probe("m-early", early_at, &early_gold), probe("m-late", late_at, &late_gold)]}
    ]});
    std::fs::create_dir_all(dir.join("probes")).unwrap();
    std::fs::write(dir.join("probes/mine.manual.json"), manual.to_string()).unwrap();
    (config_path, conv)
}

#[test]
fn snapshots_are_written_per_compression_with_the_probes_a_run_scores_there() {
    let dir = tempfile::tempdir().unwrap();
    let (config_path, conv) = setup(dir.path());
    let out = dir.path().join("snapshots");
    let run = Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .current_dir(repo())
        .args(["probes", "snapshots", "--config"])
        .arg(&config_path)
        .args(["--strategy", "recorded", "--strategy", "gemini", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    // The same config swept: each compression's checkpoint scores the probes the snapshot lists.
    let config =
        compactbench::sweep::config::SweepConfig::parse(&std::fs::read_to_string(&config_path).unwrap(), "snap.toml")
            .unwrap();
    let (plan, _) = sweep(&config, &dir.path().join("run"), false);
    let id = &plan.conversations[0].id;
    let mut seen = 0;
    for point in plan.points.iter().filter(|p| p.strategy.kind() != "none") {
        let name = point.strategy.kind();
        let cell = std::fs::read_dir(dir.path().join("run/cells").join(&point.id)).unwrap().next().unwrap().unwrap();
        let cell: compactbench::data::CellResult =
            serde_json::from_slice(&std::fs::read(cell.path()).unwrap()).unwrap();
        let checkpoints: Vec<_> = cell.probes.unwrap().checkpoints.into_iter().filter(|c| c.replaced).collect();
        for cp in &checkpoints {
            let ordinal = cp.ordinal.unwrap();
            let stem = out.join(id).join(format!("{name}-{ordinal}"));
            let listed: SnapshotProbes =
                serde_json::from_slice(&std::fs::read(stem.with_extension("probes.json")).unwrap()).unwrap();
            let ids: BTreeSet<&str> = listed.probes.iter().map(|p| p.id.as_str()).collect();
            let scored: BTreeSet<&str> = cp.scores.iter().map(|s| s.probe.as_str()).collect();
            assert_eq!(ids, scored, "{name}-{ordinal}");
            assert_eq!((listed.ordinal, Some(listed.event)), (ordinal, cp.event));
            assert!(ids.contains("m-early") && !ids.contains("m-late"), "{ids:?}");
            assert!(listed.probes.iter().any(|p| p.origin == "auto"), "derived auto probes are listed");
            let text = std::fs::read_to_string(stem.with_extension("txt")).unwrap();
            assert!(text.contains("===== [0] user ====="), "{text}");
            if name == "recorded" {
                // Claude Code's own summary is what the agent has right after its compaction.
                let summary = &conv.recorded_compactions[0].summary;
                let line = summary.lines().find(|l| l.trim().len() > 20).unwrap().trim();
                assert!(text.contains(line), "{line}");
            }
            seen += 1;
        }
        // No snapshot for an event that replaced nothing.
        let files = std::fs::read_dir(out.join(id)).unwrap().flatten();
        let of_name = files.filter(|f| f.file_name().to_string_lossy().starts_with(&format!("{name}-"))).count();
        assert_eq!(of_name, 2 * checkpoints.len(), "{name}");
    }
    assert!(seen >= 1, "the recorded compaction is a snapshot");
}

#[test]
fn snapshots_are_refused_inside_a_work_tree_unless_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (config_path, _) = setup(dir.path());
    let git = |args: &[&str]| Command::new("git").arg("-C").arg(dir.path()).args(args).output();
    if !git(&["init", "-q"]).is_ok_and(|o| o.status.success()) {
        return; // no git here: nothing to check
    }
    std::fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
    let snapshots = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_compactbench"))
            .current_dir(repo())
            .args(["probes", "snapshots", "--config"])
            .arg(&config_path)
            .args(["--strategy", "recorded", "--out"])
            .arg(dir.path().join(out))
            .output()
            .unwrap()
    };
    let refused = snapshots("tracked/snap");
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not ignored"));
    assert!(!dir.path().join("tracked").exists());
    let ok = snapshots("ignored/snap");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(dir.path().join("ignored/snap").is_dir());
}
