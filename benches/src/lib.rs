//! Inputs for the criterion benches in `benches/`: a small seeded generator of Gemini `Content[]`
//! histories (no wall clock, no global RNG) and the shipped 4 MB reference history.
//!
//! A generated history is a sequence of rounds shaped like an agent session: a user request, a model turn
//! with text and one or two `functionCall`s, a user turn with the matching `functionResponse`s (shell
//! output, file contents or search hits of 5 to 2,000 lines, most of them short), and a model reply. Text
//! mixes ASCII with `é`, `中` and `😀`, quotes, backslashes and tabs, so the UTF-16 and escape metrics all
//! have work to do.

use compactbench_core::compress::{
    truncate::effective_max_chars, CallerKind, CompressSettings, Latch, TruncationSettings, TruncationVariant,
};
use compactbench_core::history::{self, Content};
use compactbench_core::json::{self, Value};
use compactbench_core::llm::LanguageModel;
use compactbench_core::replay::{
    replay_spec, strategies, ConversationResult, NoObserver, ReplaySettings, StrategySpec, TokenLimit,
};
use compactbench_core::tokens::Estimator;
use compactbench_datasets as datasets;
use compactbench_llm::ExtractiveModel;
use std::path::{Path, PathBuf};

/// SplitMix64: tiny, seedable and good enough to vary sizes and words.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.range(0, items.len() - 1)]
    }
}

/// When to stop generating.
#[derive(Clone, Copy, Debug)]
pub enum Stop {
    /// Exactly this many Contents.
    Contents(usize),
    /// Whole rounds until the history estimates (current estimator) at least this many tokens.
    Tokens(u64),
}

const WORDS: &[&str] = &[
    "let", "fn", "match", "self", "value", "config", "history", "token", "split", "index", "return", "error", "result",
    "parse", "buffer", "stream", "async", "await", "impl", "struct", "trait", "vec", "map", "len",
];
const NON_ASCII: &[&str] = &["é", "中", "😀", "café", "中文", "naïve", "😀😀", "résumé"];
const ESCAPED: &[&str] = &["\"quoted\"", "a\\b", "\tindent", "C:\\path\\file"];
const TOOLS: &[&str] = &["run_shell_command", "read_file", "grep_search"];

fn sentence(rng: &mut Rng, words: usize, out: &mut String) {
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        match rng.next_u64() % 20 {
            0 => out.push_str(rng.pick(NON_ASCII)),
            1 => out.push_str(rng.pick(ESCAPED)),
            _ => out.push_str(rng.pick(WORDS)),
        }
    }
}

/// Tool output of `lines` lines; roughly one line in eight carries non-ASCII text.
fn tool_output(rng: &mut Rng, file: usize, lines: usize) -> String {
    let mut out = String::with_capacity(lines * 48);
    for l in 0..lines {
        if l > 0 {
            out.push('\n');
        }
        out.push_str(&format!("src/module_{file}.rs:{l}: "));
        let words = rng.range(3, 9);
        if rng.chance(12) {
            out.push_str("let s = \"");
            out.push_str(rng.pick(NON_ASCII));
            out.push_str("\"; ");
        }
        sentence(rng, words, &mut out);
    }
    out
}

/// Line count of one tool output: mostly short, sometimes long, rarely huge (5 to 2,000 lines).
fn output_lines(rng: &mut Rng) -> usize {
    match rng.next_u64() % 100 {
        0..=69 => rng.range(5, 40),
        70..=94 => rng.range(40, 400),
        _ => rng.range(400, 2000),
    }
}

fn text_content(role: &str, text: String) -> Content {
    Value::object([
        ("role", Value::str(role)),
        ("parts", Value::Array(vec![Value::object([("text", Value::from(text))])])),
    ])
}

/// One round of four Contents.
fn round(rng: &mut Rng, n: usize, call_id: &mut u64) -> [Content; 4] {
    let file = n % 97;
    let mut ask = format!("Round {n}: please look at src/module_{file}.rs and fix the failing test. ");
    let words = rng.range(5, 60);
    sentence(rng, words, &mut ask);
    let calls = if rng.chance(20) { 2 } else { 1 };
    let mut model_parts = Vec::with_capacity(calls + 1);
    let mut plan = String::from("I'll inspect it first. ");
    let words = rng.range(3, 30);
    sentence(rng, words, &mut plan);
    model_parts.push(Value::object([("text", Value::from(plan))]));
    let mut responses = Vec::with_capacity(calls);
    for _ in 0..calls {
        *call_id += 1;
        let tool = rng.pick(TOOLS);
        let id = format!("{tool}_{call_id}");
        let (args, key) = match tool {
            "run_shell_command" => {
                (Value::object([("command", Value::from(format!("cargo test -p m{file}")))]), "output")
            }
            "read_file" => {
                (Value::object([("absolute_path", Value::from(format!("/repo/src/module_{file}.rs")))]), "content")
            }
            _ => (Value::object([("pattern", Value::str("fn f_")), ("path", Value::str("src"))]), "output"),
        };
        model_parts.push(Value::object([(
            "functionCall",
            Value::object([("id", Value::from(id.clone())), ("name", Value::str(tool)), ("args", args)]),
        )]));
        let lines = output_lines(rng);
        let output = tool_output(rng, file, lines);
        let response = Value::object([(key, Value::from(output))]);
        responses.push(Value::object([(
            "functionResponse",
            Value::object([("id", Value::from(id)), ("name", Value::str(tool)), ("response", response)]),
        )]));
    }
    let mut reply = String::from("Done: ");
    let words = rng.range(10, 80);
    sentence(rng, words, &mut reply);
    [
        text_content("user", ask),
        Value::object([("role", Value::str("model")), ("parts", Value::Array(model_parts))]),
        Value::object([("role", Value::str("user")), ("parts", Value::Array(responses))]),
        text_content("model", reply),
    ]
}

/// A deterministic history: the same `seed` and `stop` always give the same Contents.
pub fn generate(seed: u64, stop: Stop) -> Vec<Content> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut call_id = 0u64;
    let mut tokens = 0u64;
    for n in 0.. {
        let done = match stop {
            Stop::Contents(k) => out.len() >= k,
            Stop::Tokens(t) => tokens >= t,
        };
        if done {
            break;
        }
        for c in round(&mut rng, n, &mut call_id) {
            if let Stop::Contents(k) = stop {
                if out.len() == k {
                    break;
                }
            }
            tokens += Estimator::Current.content(&c);
            out.push(c);
        }
    }
    out
}

/// A history ready to bench: the Contents and the compact JSON (`JSON.stringify`) they came from.
pub struct Fixture {
    pub name: String,
    pub history: Vec<Content>,
    /// The history's JSON text; its length is the throughput unit.
    pub json: Vec<u8>,
}

impl Fixture {
    pub fn from_history(name: impl Into<String>, history: Vec<Content>) -> Self {
        let json = json::to_string(&Value::Array(history.clone())).into_bytes();
        Fixture { name: name.into(), history, json }
    }

    pub fn bytes(&self) -> u64 {
        self.json.len() as u64
    }
}

/// Seed of every generated fixture.
pub const SEED: u64 = 0x00C0_FFEE;

/// The generated sizes: 100, 300 and 1,000 Contents, and a history of about one million estimated tokens
/// (the reference's whole context window).
pub fn generated() -> Vec<Fixture> {
    let mut out: Vec<Fixture> = [100, 300, 1000]
        .into_iter()
        .map(|n| Fixture::from_history(format!("gen-{n}"), generate(SEED, Stop::Contents(n))))
        .collect();
    out.push(Fixture::from_history("gen-1Mtok", generate(SEED, Stop::Tokens(1_000_000))));
    out
}

/// Path of the shipped reference input.
pub fn history_4mb_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/history-4mb.json")
}

/// `benches/data/history-4mb.json`; its throughput unit is the file's own size (as in the TypeScript figures).
pub fn history_4mb() -> Fixture {
    let path = history_4mb_path();
    let json = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let history = history::parse_history(&json, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
    Fixture { name: "history-4mb".into(), history, json }
}

/// Every fixture: the generated sizes, then the reference file.
pub fn all() -> Vec<Fixture> {
    let mut v = generated();
    v.push(history_4mb());
    v
}

/// The workspace root (configs, datasets).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One strategy point a bench replays: what the default run's cells use, without the sweep machinery (the
/// benches depend only on the crates they measure).
#[derive(Clone, Debug)]
pub struct BenchPoint {
    pub strategy: StrategySpec,
    pub token_limit: TokenLimit,
}

/// The default run (`configs/default.toml`): its `[replay]` settings and, per strategy, the main grid's first
/// point (threshold 0.5, preserve 0.3, prompt v5 with verification for the reference, `[llm]`'s output cap;
/// observation masking keeping 5 outputs; drop-oldest keeping 30 %).
pub fn default_points() -> (ReplaySettings, Vec<BenchPoint>) {
    let config = config_table("default");
    let max_output_tokens = config.get("llm").and_then(|l| l.get("max_output_tokens")).and_then(|v| v.as_integer());
    let settings = ReplaySettings {
        max_output_tokens: max_output_tokens.map(|n| n as u32),
        ..replay_settings_in(&config, "default")
    };
    let limit = settings.token_limit;
    let compress = |verification: bool| CompressSettings {
        threshold: Some(0.5),
        preserve_fraction: 0.3,
        verification,
        ..CompressSettings::default()
    };
    let points = [
        strategies::gemini::spec(compress(true), CallerKind::Interactive, Latch::default()),
        StrategySpec::new("truncation-only", &serde_json::json!({ "settings": compress(false) }))
            .unwrap_or_else(|e| panic!("{e}")),
        strategies::observation_masking::spec(5, "Old environment output: ({num_text_lines} lines omitted)"),
        strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams { threshold: 0.5, keep_fraction: 0.3 }),
        strategies::none::spec(),
    ];
    (settings, points.into_iter().map(|strategy| BenchPoint { strategy, token_limit: limit }).collect())
}

/// A registered strategy with its knobs' defaults.
pub fn registry_default(name: &str) -> StrategySpec {
    let def = compactbench_core::replay::registry::find(name).unwrap_or_else(|e| panic!("`{name}`: {e}"));
    let params = def.knobs().into_iter().map(|k| (k.name.to_string(), k.default)).collect();
    StrategySpec::configure(name, params).unwrap_or_else(|e| panic!("`{name}`: {e}"))
}

fn config_path(name: &str) -> PathBuf {
    workspace_root().join("configs").join(format!("{name}.toml"))
}

/// A config file of the workspace (`configs/NAME.toml`) as a TOML table.
fn config_table(name: &str) -> toml::Table {
    let path = config_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `[replay]` of a config file of the workspace (`configs/NAME.toml`).
pub fn replay_settings_of(name: &str) -> ReplaySettings {
    replay_settings_in(&config_table(name), name)
}

/// `[replay]` of the table of `configs/NAME.toml`.
fn replay_settings_in(config: &toml::Table, name: &str) -> ReplaySettings {
    let replay_table = config.get("replay").cloned().unwrap_or_else(|| toml::Value::Table(Default::default()));
    replay_table.try_into().unwrap_or_else(|e| panic!("{}: [replay]: {e}", config_path(name).display()))
}

/// Reads, parses and replays one conversation file with the extractive summarizer, as a cell of the
/// default run does (without probes).
pub fn replay_file(path: &Path, settings: &ReplaySettings, point: &BenchPoint) -> ConversationResult {
    replay_file_with(path, settings, point, &ExtractiveModel::new())
}

/// [`replay_file`] with another summarizer.
pub fn replay_file_with(
    path: &Path,
    settings: &ReplaySettings,
    point: &BenchPoint,
    llm: &dyn LanguageModel,
) -> ConversationResult {
    // SAFETY: bench inputs are read-only files of the repository; nothing rewrites them during a bench.
    let conv = unsafe { datasets::load_conversation_mapped(path) }.unwrap_or_else(|e| panic!("{e}"));
    let id = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let input = conv.replay_input(&id);
    let settings = ReplaySettings { token_limit: point.token_limit, ..settings.clone() };
    futures::executor::block_on(replay_spec(input, &point.strategy, &settings, llm, &mut NoObserver))
}

/// The `k` largest shipped conversation files (`datasets/`), largest first.
pub fn largest_conversations(k: usize) -> Vec<PathBuf> {
    let files = datasets::find_conversations(&[workspace_root().join("datasets")]).unwrap_or_else(|e| panic!("{e}"));
    let mut sized: Vec<(u64, PathBuf)> =
        files.into_iter().map(|p| (std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0), p)).collect();
    sized.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    sized.into_iter().take(k).map(|(_, p)| p).collect()
}

/// The truncation the reference runs inside `compress` for `gemini-2.5-pro` with an empty UI count.
pub fn truncation_settings() -> TruncationSettings {
    let limit = CompressSettings::default().token_limit();
    TruncationSettings {
        variant: TruncationVariant::Current,
        budget: compactbench_core::compress::truncate::COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET,
        max_chars: effective_max_chars(
            limit,
            0,
            compactbench_core::compress::truncate::DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,
        ),
        estimator: Estimator::Current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_sized() {
        let a = generate(7, Stop::Contents(41));
        let b = generate(7, Stop::Contents(41));
        assert_eq!(a.len(), 41);
        assert_eq!(json::to_string(&Value::Array(a.clone())), json::to_string(&Value::Array(b)));
        let c = generate(8, Stop::Contents(41));
        assert_ne!(json::to_string(&Value::Array(a)), json::to_string(&Value::Array(c)));
        let t = generate(7, Stop::Tokens(20_000));
        assert!(Estimator::Current.history(&t) >= 20_000);
        assert_eq!(t.len() % 4, 0);
    }

    /// `cargo test -p compactbench-benches --lib -- --ignored --nocapture`: the fixture table of the README.
    #[test]
    #[ignore]
    fn print_fixture_sizes() {
        for fx in all() {
            println!(
                "{}: {} Contents, {} bytes of JSON, {} estimated tokens",
                fx.name,
                fx.history.len(),
                fx.bytes(),
                Estimator::Current.history(&fx.history)
            );
        }
    }

    #[test]
    fn generated_json_round_trips_through_the_parser() {
        let h = generate(3, Stop::Contents(40));
        let text = json::to_string(&Value::Array(h.clone()));
        assert!(text.contains('é') && text.contains('中') && text.contains('😀') && text.contains("\\\""));
        let back = history::parse_history(text.as_bytes(), "gen").unwrap();
        assert_eq!(back, h);
    }
}
