//! The 40 golden vectors produced by running the original TypeScript (`tests/data/golden`), reproduced
//! field by field through `inspect`.

use crate::support::{data_dir, first_difference, load_json};
use compactbench::compress::MemoryToolOutputStore;
use compactbench::inspect::{inspect, InspectCompress, InspectOptions};
use compactbench::json::Value;

const PROJECT_TEMP_DIR: &str = "/home/user/.gemini/tmp/demo-project";

fn options(knobs: &Value) -> InspectOptions {
    let c = knobs.get("compress").expect("compress knobs");
    let opt_str = |v: Option<&Value>| v.and_then(|v| v.as_str()).map(str::to_string);
    InspectOptions {
        fraction: knobs.get("fraction").and_then(Value::as_f64).unwrap(),
        model: "gemini-2.5-pro".into(),
        truncate_threshold: knobs.get("truncate_threshold").and_then(Value::as_f64).unwrap() as i64,
        last_prompt_tokens: knobs.get("last_prompt_tokens").and_then(Value::as_f64).unwrap() as u64,
        compress: Some(InspectCompress {
            force: c.get("force").and_then(Value::as_bool).unwrap(),
            has_failed: c.get("has_failed").and_then(Value::as_bool).unwrap(),
            threshold: c.get("threshold").and_then(Value::as_f64),
            summary: opt_str(c.get("summary")).unwrap(),
            verify: opt_str(c.get("verify")),
            env_text: opt_str(c.get("env_text")),
            prompt_id: "oracle-prompt".into(),
        }),
    }
}

async fn run_case(n: usize) -> Result<(), String> {
    let dir = data_dir().join("golden");
    let history = load_json(&dir.join(format!("inputs/case{n:03}.history.json")));
    let knobs = load_json(&dir.join(format!("inputs/case{n:03}.knobs.json")));
    let expected = load_json(&dir.join(format!("expected/case{n:03}.expected.json")));
    let mut a = MemoryToolOutputStore::new(PROJECT_TEMP_DIR);
    let mut b = MemoryToolOutputStore::new(PROJECT_TEMP_DIR);
    let history = history.as_array().unwrap().to_vec();
    let got = inspect(&history, &options(&knobs), &mut a, &mut b).await.map_err(|e| e.to_string())?;
    match first_difference("$", &got, &expected) {
        None => Ok(()),
        Some(d) => Err(format!("case{n:03}: {d}")),
    }
}

#[tokio::test]
async fn all_forty_golden_vectors_match() {
    let mut failures = Vec::new();
    for n in 0..40 {
        if let Err(e) = run_case(n).await {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} of 40 vectors differ:\n{}", failures.len(), failures.join("\n"));
}
