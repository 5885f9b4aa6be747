//! `compactbench view` (#24): the page of a run, built from a small real run whose first conversation holds
//! HTML, a script, an ANSI escape and a credential; the located histories checked against what a replay
//! really stored; and the page driven in the system's headless Chromium over the DevTools protocol.
//!
//! Without a browser the browser tests print why and pass (a fresh machine's `cargo test --workspace`
//! needs none); `COMPACTBENCH_REQUIRE_BROWSER=1` (set by `.ci/run`) makes a missing browser a failure.
//! `COMPACTBENCH_UPDATE_SCREENSHOTS=1` also writes the screenshots of harness/docs/viewing.md (`harness/docs/img/view-*.png`)
//! from the committed `reports/baseline/view.html`.

use base64::Engine as _;
use compactbench::compress::curated;
use compactbench::history::Content;
use compactbench::replay::{self, CompressionEvent, ReplayObserver};
use compactbench::view::spans::{self, Acted};
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions, Tab};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use crate::support::repo;

const INJECTION: &str = "</script><script>alert(1)</script>";
const ANSI: &str = "\u{1b}[31mred alert\u{1b}[0m";
const CREDENTIAL: &str = "sk-live-0123456789abcdef";
const QUESTION: &str = "What ticket code did the user give?";
/// Shipped tau-bench conversations beside the planted one: enough for the gate's minimum sample.
const SHIPPED: [&str; 6] =
    ["task000-trial0", "task001-trial0", "task002-trial0", "task003-trial0", "task004-trial0", "task005-trial0"];

fn binary() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_compactbench"));
    c.current_dir(repo());
    c
}

/// A run of the planted conversation and six shipped ones under the reference, drop-oldest and none, made
/// by the binary as a user runs it (so its report stage writes `view.html`).
struct Fixture {
    _tmp: tempfile::TempDir,
    run: PathBuf,
    stderr: String,
}

fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("datasets");
        let probes = tmp.path().join("probes");
        for id in SHIPPED {
            let rel = format!("tau-bench/{id}.json");
            std::fs::create_dir_all(data.join("tau-bench")).unwrap();
            std::fs::copy(repo().join("datasets").join(&rel), data.join(&rel)).unwrap();
            for origin in ["auto", "manual"] {
                let p = repo().join(format!("datasets/probes/tau-bench/{id}.{origin}.json"));
                if p.exists() {
                    std::fs::create_dir_all(probes.join("tau-bench")).unwrap();
                    std::fs::copy(&p, probes.join(format!("tau-bench/{id}.{origin}.json"))).unwrap();
                }
            }
        }
        // The planted conversation: a shipped one whose first turns carry markup, a script, an ANSI escape,
        // a credential, and the facts two probes ask about.
        let mut planted: serde_json::Value =
            serde_json::from_slice(&std::fs::read(repo().join("datasets/tau-bench/task006-trial0.json")).unwrap())
                .unwrap();
        planted["meta"]["id"] = "injected".into();
        planted["meta"]["source"] = "view-test".into();
        let first = planted["history"][0]["parts"][0]["text"].as_str().unwrap().to_string();
        planted["history"][0]["parts"][0]["text"] = format!(
            "{first} My ticket code is ZEBRA-4242. <b>bold</b> {INJECTION} {ANSI} Authorization: Bearer {CREDENTIAL}"
        )
        .into();
        let reply = planted["history"][1]["parts"][0]["text"].as_str().unwrap_or_default().to_string();
        planted["history"][1]["parts"][0]["text"] =
            format!("{reply} I saved your request to notes/booking.txt.").into();
        write_json(&data.join("view-test/injected.json"), &planted);
        write_json(
            &probes.join("view-test/injected.manual.json"),
            &serde_json::json!({
                "format": "compactbench.probes/1", "conversation": "injected", "dataset": "view-test",
                "probes": [
                    {"id": "manual-recall-1", "conversation": "injected", "kind": "recall", "question": QUESTION,
                     "gold": "ZEBRA-4242", "evidence": [0], "source": "manual"},
                    {"id": "manual-artifact-1", "conversation": "injected", "kind": "artifact",
                     "question": "Which file did the agent save the request to?", "gold": "notes/booking.txt",
                     "evidence": [1], "source": "manual"}
                ]
            }),
        );
        let config = format!(
            r#"
name = "view-test"
datasets = ["{data}"]
concurrency = 2
[replay]
token_limit = 2500
prompt_count_source = "measured"
system_prompt_tokens = 200
tool_declaration_tokens = 100
[llm]
cache_mode = "off"
[grid]
strategy = ["gemini", "drop-oldest", "none"]
summarizer = ["extractive"]
threshold = [0.5]
prompt = ["v5"]
verification = [true]
drop_keep_fraction = [0.3]
[probes]
enabled = true
dir = "{probes}"
sources = ["auto", "manual"]
answerer = "extractive"
injection = false
answer_at_events = true
"#,
            data = data.display(),
            probes = probes.display()
        );
        let cfg = tmp.path().join("view.toml");
        std::fs::write(&cfg, config).unwrap();
        let run = tmp.path().join("run");
        let out =
            binary().args(["run", "--config", cfg.to_str().unwrap(), "--out", run.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        Fixture { _tmp: tmp, run, stderr }
    })
}

/// Every data block of a page, decoded.
fn data_blocks(page: &str) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let open = "<script type=\"application/gzip+base64\" id=\"";
    let mut rest = page;
    while let Some(at) = rest.find(open) {
        let after = &rest[at + open.len()..];
        let id_end = after.find('"').unwrap();
        let body_start = after.find('>').unwrap() + 1;
        let body_end = after.find("</script>").unwrap();
        let gz = base64::engine::general_purpose::STANDARD.decode(after[body_start..body_end].trim()).unwrap();
        let mut json = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut json).unwrap();
        out.push((after[..id_end].to_string(), serde_json::from_str(&json).unwrap()));
        rest = &after[body_end..];
    }
    out
}

#[test]
fn run_writes_the_page_next_to_the_report_and_names_it() {
    let f = fixture();
    assert!(f.run.join("report.md").exists());
    assert!(f.run.join("view.html").exists());
    let written = f.stderr.lines().find(|l| l.starts_with("written:")).unwrap_or_default();
    assert!(written.contains("report.md") && written.contains("view.html"), "{}", f.stderr);
}

#[test]
fn the_page_is_self_contained_escaped_redacted_and_reproducible() {
    let f = fixture();
    let page = std::fs::read_to_string(f.run.join("view.html")).unwrap();
    // No network: the only URL is the SVG namespace the script names; nothing is loaded from anywhere.
    let urls = page.matches("http://").count() + page.matches("https://").count();
    assert_eq!(urls, page.matches("http://www.w3.org/2000/svg").count());
    for attribute in [" src=", "<link", "@import", "url("] {
        assert!(!page.contains(attribute), "{attribute}");
    }
    assert!(page.contains("Content-Security-Policy") && page.contains("default-src 'none'"));
    // The conversation's script is data, never markup: not in the page's bytes at all (the data is base64).
    assert!(!page.contains("alert(1)"));
    let blocks = data_blocks(&page);
    let index = &blocks.iter().find(|(id, _)| id == "data-index").unwrap().1;
    assert_eq!(index["format"], "compactbench.view/1");
    assert_eq!(index["points"].as_array().unwrap().len(), 3);
    assert_eq!(index["cells"].as_array().unwrap().len(), 21);
    let all: String = blocks.iter().map(|(_, v)| v.to_string()).collect();
    assert!(all.contains(INJECTION), "the text is kept, as text");
    assert!(all.contains(r"\\x1b[31mred alert\\x1b[0m"), "the ANSI escape is shown as its characters");
    assert!(!all.contains(CREDENTIAL) && all.contains("Bearer [REDACTED]"), "the credential is masked");
    assert!(all.contains(QUESTION) && all.contains("ZEBRA-4242"));
    // No path of the run: the same run gives the same page wherever it lies.
    assert!(!all.contains(f.run.to_str().unwrap()));
    // The command writes the same bytes as the report stage, and prints the path.
    let out_path = f.run.join("again.html");
    let out = binary().args(["view", f.run.to_str().unwrap(), "--out", out_path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), out_path.display().to_string());
    assert!(std::fs::read(&out_path).unwrap() == page.as_bytes(), "the same run gives the same page");
}

#[test]
fn view_of_a_directory_without_a_plan_is_bad_input_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = binary().args(["view", tmp.path().to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("plan.json"), "{stderr}");
    assert!(!tmp.path().join("view.html").exists());
}

#[test]
fn a_run_with_a_missing_cell_gets_a_page_that_names_it() {
    use compactbench::data::store;
    use compactbench::sweep;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("partial");
    let plan = store::load_plan(&fixture().run).unwrap();
    sweep::run_dir::ensure_plan(&dir, &plan).unwrap();
    let cells = store::collect(&fixture().run, &plan);
    for c in &cells[1..] {
        sweep::run_dir::write_cell(&dir, c).unwrap();
    }
    let out = binary().args(["view", dir.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let missing = cells[0].cell.relative_path().display().to_string();
    assert!(stderr.contains("warning: left out of the page") && stderr.contains(&missing), "{stderr}");
    let page = std::fs::read_to_string(dir.join("view.html")).unwrap();
    let blocks = data_blocks(&page);
    let index = &blocks.iter().find(|(id, _)| id == "data-index").unwrap().1;
    assert_eq!(index["cells"].as_array().unwrap().len(), cells.len() - 1);
    assert!(index["runs"][0]["problems"][0].as_str().unwrap().contains(&missing));
}

/// The fixture's run with every reference cell made 10 % dearer: a regression the gate flags.
fn regressed_run() -> &'static Path {
    static RUN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &RUN.get_or_init(|| {
        use compactbench::data::store;
        use compactbench::sweep;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("regressed");
        let plan = store::load_plan(&fixture().run).unwrap();
        sweep::run_dir::ensure_plan(&dir, &plan).unwrap();
        let reference = &plan.points[0].id;
        for mut c in store::collect(&fixture().run, &plan) {
            if &c.cell.point == reference {
                c.result.request_tokens_total = (c.result.request_tokens_total as f64 * 1.10) as u64;
            }
            sweep::run_dir::write_cell(&dir, &c).unwrap();
        }
        (tmp, dir)
    })
    .1
}

fn compare_page() -> &'static Path {
    static PAGE: OnceLock<PathBuf> = OnceLock::new();
    PAGE.get_or_init(|| {
        let out_path = regressed_run().join("compare.html");
        let out = binary()
            .args(["view", regressed_run().to_str().unwrap(), "--compare", fixture().run.to_str().unwrap()])
            .args(["--out", out_path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out_path
    })
}

#[test]
fn compare_names_the_regression_and_the_cells_behind_it() {
    let page = std::fs::read_to_string(compare_page()).unwrap();
    let blocks = data_blocks(&page);
    let index = &blocks.iter().find(|(id, _)| id == "data-index").unwrap().1;
    assert_eq!(index["runs"].as_array().unwrap().len(), 2);
    assert_eq!(index["points"].as_array().unwrap().len(), 6);
    let gate = &index["gate"];
    let regressions = gate["regressions"].as_array().unwrap();
    assert!(regressions.iter().any(|r| r["metric"] == "tokens_vs_none"), "{gate}");
    let flagged = gate["cells"].as_array().unwrap();
    assert_eq!(flagged.iter().filter(|c| c["metric"] == "tokens_vs_none").count(), 7, "{gate}");
    assert!(flagged.iter().all(|c| c["current"].as_f64() > c["baseline"].as_f64()));
    // A run with nothing in common is refused.
    let tmp = tempfile::tempdir().unwrap();
    let mut plan = compactbench::data::store::load_plan(&fixture().run).unwrap();
    for p in &mut plan.points {
        p.id = format!("other-{}", p.id);
    }
    compactbench::sweep::run_dir::ensure_plan(tmp.path(), &plan).unwrap();
    let out = binary()
        .args(["view", fixture().run.to_str().unwrap(), "--compare", tmp.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no configuration in common"));
}

// ---------------------------------------------------------------------------------------------------------
// The located histories against the histories a replay really stored.

/// Keeps the stored history after every event.
#[derive(Default)]
struct Stored(Vec<(CompressionEvent, Vec<Content>)>);

#[async_trait::async_trait]
impl ReplayObserver for Stored {
    async fn after_event(&mut self, _: usize, event: &CompressionEvent, stored: &[Content], _: Option<&[Content]>) {
        self.0.push((event.clone(), stored.to_vec()));
    }
    async fn at_end(&mut self, _: &[Content]) {}
}

#[test]
fn located_histories_are_the_ones_the_replay_stored() {
    // The default config's first point of each strategy, in the stress window (many compressions, storms).
    let config = compactbench::sweep::config::SweepConfig::load(&repo().join("configs/default.toml")).unwrap();
    let points = config.points().unwrap();
    let settings =
        replay::ReplaySettings { token_limit: replay::TokenLimit::PeakFraction(0.6), ..config.replay.clone() };
    let llm = compactbench::llm::ExtractiveModel::new();
    let mut checked = [0usize; 3];
    let mut kinds = std::collections::BTreeSet::new();
    for rel in [
        "datasets/tau-bench/task003-trial0.json",
        "datasets/tau-bench/task010-trial0.json",
        "datasets/aider/chat-history-2024-08-09-10-05-35.json",
    ] {
        let conversation = compactbench::datasets::load_conversation(&repo().join(rel)).unwrap();
        for point in points.iter().filter(|p| kinds.insert((rel, p.strategy.kind().to_string()))) {
            let mut stored = Stored::default();
            let input = conversation.replay_input(&conversation.meta.id);
            let r =
                futures::executor::block_on(replay::replay_spec(input, &point.strategy, &settings, &llm, &mut stored));
            assert!(r.error.is_none(), "{:?}", r.error);
            let located = spans::event_spans(&conversation.history, &r.events);
            assert_eq!(located.len(), stored.0.len());
            for ((event, after), span) in stored.0.iter().zip(&located) {
                match span.acted {
                    Acted::Replaced => {
                        // The located tail is what the strategy kept: as many stored Contents, equal to the
                        // end of the history it stored.
                        let tail =
                            curated::strip_thoughts_and_coalesce(conversation.history[span.to..span.end].to_vec());
                        let head = if event.summarized_contents > 0 {
                            event.summarized_contents
                        } else {
                            event.stored_contents_before - event.stored_contents_after
                        };
                        assert_eq!(tail.len(), event.stored_contents_before - head, "{rel} {} {event:?}", point.id);
                        if event.truncated_outputs == 0 {
                            assert_eq!(&after[after.len() - tail.len()..], &tail[..], "{rel} {}", point.id);
                        }
                        assert!(span.from <= span.to && span.to <= span.end);
                        checked[0] += 1;
                    }
                    Acted::InPlace => {
                        assert_eq!(span.from, span.to);
                        checked[1] += 1;
                    }
                    Acted::Unchanged => checked[2] += 1,
                }
            }
        }
    }
    assert!(checked[0] >= 10 && checked[1] >= 1, "replaced, in place, unchanged: {checked:?}");
}

// ---------------------------------------------------------------------------------------------------------
// In a real browser.

const REQUIRE_BROWSER: &str = "COMPACTBENCH_REQUIRE_BROWSER";
const UPDATE_SCREENSHOTS: &str = "COMPACTBENCH_UPDATE_SCREENSHOTS";

/// The system's Chromium (or Chrome), headless, its window `width` pixels wide; `None`, said loudly, when
/// there is none and none is required.
fn browser_of_width(width: u32) -> Option<Browser> {
    let path = match headless_chrome::browser::default_executable() {
        Ok(p) => p,
        Err(e) => {
            if std::env::var(REQUIRE_BROWSER).is_ok_and(|v| v == "1") {
                panic!("{REQUIRE_BROWSER}=1 but no browser: {e} (apt-get install -y chromium)");
            }
            // Written to stderr itself, not through `eprintln!`, which the test harness captures: the skip
            // must show in a plain `cargo test`.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr().lock(),
                "\n!!! SKIPPED: the view's browser tests need Chromium or Chrome ({e}); \
                 `apt-get install -y chromium` runs them ({REQUIRE_BROWSER}=1 makes this a failure) !!!\n"
            );
            return None;
        }
    };
    // As root in a container Chromium needs no sandbox; --headless=new is the current headless mode.
    let args: Vec<&std::ffi::OsStr> =
        ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"]
            .iter()
            .map(std::ffi::OsStr::new)
            .collect();
    let options = LaunchOptions {
        path: Some(path),
        headless: true,
        sandbox: false,
        window_size: Some((width, 1000)),
        args,
        idle_browser_timeout: std::time::Duration::from_secs(120),
        ..LaunchOptions::default()
    };
    Some(Browser::new(options).expect("the browser starts"))
}

fn browser() -> Option<Browser> {
    browser_of_width(1400)
}

/// A page opened in a tab, with everything it reported on the console, every exception and every dialog.
struct Opened {
    tab: Arc<Tab>,
    problems: Arc<Mutex<Vec<String>>>,
    dialogs: Arc<Mutex<Vec<String>>>,
}

fn open(browser: &Browser, page: &Path, route: &str) -> Opened {
    let tab = browser.new_tab().unwrap();
    tab.set_default_timeout(std::time::Duration::from_secs(30));
    let problems = Arc::new(Mutex::new(Vec::new()));
    let dialogs = Arc::new(Mutex::new(Vec::new()));
    let (p, d) = (Arc::clone(&problems), Arc::clone(&dialogs));
    tab.add_event_listener(Arc::new(move |event: &Event| match event {
        Event::RuntimeExceptionThrown(e) => {
            p.lock().unwrap().push(format!("exception: {:?}", e.params.exception_details))
        }
        Event::RuntimeConsoleAPICalled(e) => {
            let kind = format!("{:?}", e.params.Type);
            if kind.contains("Error") || kind.contains("Warning") || kind.contains("Assert") {
                p.lock().unwrap().push(format!("console {kind}: {:?}", e.params.args));
            }
        }
        Event::LogEntryAdded(e) => {
            let level = format!("{:?}", e.params.entry.level);
            if level.contains("Error") || level.contains("Warning") {
                p.lock().unwrap().push(format!("log {level}: {}", e.params.entry.text));
            }
        }
        Event::PageJavascriptDialogOpening(e) => d.lock().unwrap().push(e.params.message.clone()),
        _ => {}
    }))
    .unwrap();
    tab.enable_runtime().unwrap();
    tab.enable_log().unwrap();
    let url = format!("file://{}{route}", page.canonicalize().unwrap().display());
    tab.navigate_to(&url).unwrap().wait_until_navigated().unwrap();
    tab.wait_for_element("html[data-opened-ms]").unwrap();
    Opened { tab, problems, dialogs }
}

impl Opened {
    fn eval(&self, js: &str) -> serde_json::Value {
        self.tab.evaluate(js, true).unwrap().value.unwrap_or(serde_json::Value::Null)
    }

    fn text(&self, selector: &str) -> String {
        let js =
            format!("(document.querySelector({}) || {{}}).innerText || ''", serde_json::to_string(selector).unwrap());
        self.eval(&js).as_str().unwrap_or_default().to_string()
    }

    fn click(&self, selector: &str) {
        self.tab.wait_for_element(selector).unwrap().click().unwrap();
    }

    fn screenshot(&self, path: &Path) {
        let png = self
            .tab
            .capture_screenshot(
                headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption::Png,
                None,
                None,
                true,
            )
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Milliseconds from navigation to the first view on screen.
    fn opened_ms(&self) -> f64 {
        self.eval("+document.documentElement.dataset.openedMs").as_f64().unwrap()
    }

    fn assert_clean(&self) {
        assert!(self.problems.lock().unwrap().is_empty(), "{:?}", self.problems.lock().unwrap());
        assert!(self.dialogs.lock().unwrap().is_empty(), "a dialog opened: {:?}", self.dialogs.lock().unwrap());
    }
}

fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("view-screenshots")
}

#[test]
fn the_page_works_in_a_real_browser_and_shows_the_injection_as_text() {
    let Some(browser) = browser() else { return };
    let page_path = fixture().run.join("view.html");
    let html = std::fs::read_to_string(&page_path).unwrap();
    let page = open(&browser, &page_path, "");
    let shots = screenshot_dir();
    // Points: one row per point; click the reference's.
    assert_eq!(page.eval("document.querySelectorAll('#points tbody tr').length"), 3);
    page.screenshot(&shots.join("points.png"));
    page.click("#points tbody tr:first-child td:nth-child(2)");
    // Its conversations: open the planted one.
    page.tab.wait_for_element("#conversations tbody tr").unwrap();
    assert_eq!(page.eval("document.querySelectorAll('#conversations tbody tr').length"), 7);
    page.screenshot(&shots.join("conversations.png"));
    page.tab.wait_for_xpath("//table[@id='conversations']//a[text()='injected']").unwrap().click().unwrap();
    // Its timeline: the requests, the window, the compressions; open the first.
    page.tab.wait_for_element("#timeline .marker").unwrap();
    assert!(
        page.eval("document.querySelectorAll('#timeline polyline').length").as_u64() >= Some(2),
        "strategy and none"
    );
    page.screenshot(&shots.join("conversation.png"));
    page.click("#timeline .marker[data-event='0']");
    // The event: the replaced history, the summary, the probes scored there.
    page.tab.wait_for_element("#event #summary pre").unwrap();
    assert!(page.text("#event #summary pre").len() > 20, "the summary is shown");
    assert!(page.text("#event").contains(QUESTION), "the probe's question is shown");
    assert!(page.eval("document.querySelectorAll('#event table tbody tr').length").as_u64() >= Some(2));
    // Opening the replaced history shows the planted turn: the script and markup as text, the escape as
    // its characters, the credential masked.
    page.eval("document.querySelectorAll('#replaced details').forEach((d) => { d.open = true; })");
    page.tab.wait_for_element("#replaced [data-content='0'] pre").unwrap();
    let shown = page.text("#replaced [data-content='0'] pre");
    assert!(shown.contains(INJECTION) && shown.contains("<b>bold</b>"), "{shown}");
    assert!(shown.contains(r"\x1b[31mred alert\x1b[0m") && shown.contains("[REDACTED]") && !shown.contains(CREDENTIAL));
    let scripts = html.matches("<script").count();
    assert_eq!(page.eval("document.scripts.length").as_u64(), Some(scripts as u64), "no script element was added");
    assert_eq!(page.eval("document.querySelectorAll('b').length").as_u64(), Some(0), "no markup from the data");
    page.screenshot(&shots.join("event.png"));
    // The end of the replay lists the lost file, when the artifact probe was lost.
    page.tab.wait_for_element("#end-probes").unwrap();
    page.assert_clean();
    // Compare: two runs, the gate's regression and its cells.
    let compare = open(&browser, compare_page(), "#/compare");
    compare.tab.wait_for_element("#gate-cells tbody tr").unwrap();
    assert!(compare.text("#gate").contains("tokens_vs_none"));
    assert!(compare.eval("document.querySelectorAll('#changed tbody tr').length").as_u64() >= Some(1));
    // A changed conversation's probes: decoded on demand, listed with both outcomes.
    compare.click("#changed button.probe-diff");
    compare.tab.wait_for_element("#changed .probe-changes tbody tr").unwrap();
    compare.screenshot(&shots.join("compare.png"));
    compare.assert_clean();
    eprintln!("view screenshots: {}", shots.display());
}

/// Walks a run's page as a reader does: the first point, its first conversation with a compression, that
/// compression. Returns the milliseconds the conversation took to decode and draw.
fn walk_to_a_compression(page: &Opened) -> f64 {
    page.click("#points tbody tr:first-child td:nth-child(2)");
    page.tab.wait_for_element("#conversations").unwrap();
    // Only the conversations that compressed.
    page.eval("document.querySelectorAll('.controls input[type=checkbox]')[0].click()");
    page.click("#conversations tbody tr:first-child a");
    page.tab.wait_for_element("#timeline .marker").unwrap();
    let conversation_ms = page.eval("+document.documentElement.dataset.renderMs").as_f64().unwrap();
    page.click("#timeline .marker[data-event='0']");
    page.tab.wait_for_element("#event #replaced").unwrap();
    conversation_ms
}

/// The committed default run's page (1,603 cells) opens with its points table on screen and draws a
/// conversation at a compression with no console error, and so do the long sessions' pages when a local run
/// has made them (they are never committed). The times are printed, not asserted: tests never assert
/// wall-clock times (the page's open time is measured in harness/docs/viewing.md). With
/// `COMPACTBENCH_UPDATE_SCREENSHOTS=1` the default run's views become the screenshots of
/// harness/docs/viewing.md.
#[test]
fn the_report_pages_open_and_draw_a_conversation_cleanly() {
    let Some(browser) = browser() else { return };
    let default_page = repo().join("reports/baseline/view.html");
    assert!(default_page.exists(), "reports/baseline/view.html is committed");
    assert!(std::fs::metadata(&default_page).unwrap().len() < 25_000_000, "under 25 MB");
    let local = ["reports/long-sessions/view.html", "reports/long-sessions-policy/view.html"].map(|p| repo().join(p));
    for page_path in std::iter::once(default_page.clone()).chain(local.into_iter().filter(|p| p.exists())) {
        let page = open(&browser, &page_path, "");
        page.tab.wait_for_element("#points tbody tr").unwrap();
        let opened_ms = page.opened_ms();
        let conversation_ms = walk_to_a_compression(&page);
        page.assert_clean();
        let mb = std::fs::metadata(&page_path).unwrap().len() as f64 / 1e6;
        eprintln!(
            "{}: {mb:.1} MB, first view on screen {opened_ms:.0} ms after navigation, a conversation drawn in {conversation_ms:.0} ms",
            page_path.display()
        );
    }
    if std::env::var(UPDATE_SCREENSHOTS).is_ok_and(|v| v == "1") {
        // Wide enough for every column of the points table.
        let Some(wide) = browser_of_width(1880) else { return };
        let img = repo().join("harness/docs/img");
        let page = open(&wide, &default_page, "");
        page.screenshot(&img.join("view-points.png"));
        page.click("#points tbody tr:first-child td:nth-child(2)");
        page.tab.wait_for_xpath("//table[@id='conversations']//a[text()='task003-trial0']").unwrap().click().unwrap();
        page.tab.wait_for_element("#timeline .marker").unwrap();
        page.eval("window.scrollTo(0, 0)");
        page.screenshot(&img.join("view-conversation.png"));
        page.click("#timeline .marker[data-event='0']");
        page.tab.wait_for_element("#event #summary pre").unwrap();
        page.click("#replaced details summary");
        page.tab.wait_for_element("#replaced [data-content='0']").unwrap();
        page.eval("document.querySelector('#event').scrollIntoView()");
        page.screenshot(&img.join("view-event.png"));
        page.assert_clean();
        eprintln!("wrote {}/view-*.png", img.display());
    }
}
