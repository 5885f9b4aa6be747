//! The binary, run as a user would.

use crate::support::data_dir;
use std::process::Command;

fn compactbench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_compactbench")).args(args).output().expect("run compactbench")
}

fn write(dir: &tempfile::TempDir, name: &str, text: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn inspect_reproduces_a_golden_vector_through_the_binary() {
    let dir = data_dir().join("golden");
    let history = dir.join("inputs/case002.history.json");
    let out = compactbench(&[
        "inspect",
        history.to_str().unwrap(),
        "--fraction",
        "0.9",
        "--truncate-threshold",
        "4000",
        "--last-prompt-tokens",
        "1048000",
        "--project-temp-dir",
        "/home/user/.gemini/tmp/demo-project",
        "--no-write",
        "--compress",
        "--force",
        "--has-failed",
        "--threshold",
        "0.2",
        "--summary",
        "scratch\n<state_snapshot><overall_goal>x</overall_goal></state_snapshot>",
        "--verify",
        "   ",
        "--env-text",
        "<session_context>\nThis is a test.\n</session_context>",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let knobs = crate::support::load_json(&dir.join("inputs/case002.knobs.json"));
    assert_eq!(knobs.get("fraction").and_then(|v| v.as_f64()), Some(0.9), "flags above mirror case002's knobs");
    let got = compactbench::json::parse(&out.stdout).unwrap();
    let expected = crate::support::load_json(&dir.join("expected/case002.expected.json"));
    assert_eq!(crate::support::first_difference("$", &got, &expected), None);
}

#[test]
fn inspect_writes_tool_outputs_under_the_project_temp_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let history = data_dir().join("golden/inputs/case002.history.json");
    let out = compactbench(&["inspect", history.to_str().unwrap(), "--project-temp-dir", tmp.path().to_str().unwrap()]);
    assert!(out.status.success());
    let files: Vec<_> =
        std::fs::read_dir(tmp.path().join("tool-outputs")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!files.is_empty());
    let report = compactbench::json::parse(&out.stdout).unwrap();
    let written = report.get("truncated").unwrap().get("filesWritten").unwrap().as_array().unwrap().len();
    assert_eq!(files.len(), written);
}

#[test]
fn bad_input_is_one_clear_line_with_exit_status_2() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(String, Vec<&str>, &str)> = vec![
        (write(&tmp, "notjson.json", b"[{\"role\": \"user\",\n \"parts\": [nope]}]"), vec![], "line 2"),
        (
            write(
                &tmp,
                "shape.json",
                br#"[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":{"text":"b"}}]"#,
            ),
            vec![],
            "$[1].parts",
        ),
        (write(&tmp, "notarray.json", br#"{"role":"user"}"#), vec![], "expected an array"),
        (
            write(&tmp, "ok.json", br#"[{"role":"user","parts":[{"text":"a"}]}]"#),
            vec!["--fraction", "1.5"],
            "Fraction must be between 0 and 1",
        ),
        (write(&tmp, "utf8.json", b"[{\"role\":\"user\",\"parts\":[{\"text\":\"\xff\"}]}]"), vec![], "UTF-8"),
        (tmp.path().join("missing.json").to_string_lossy().into_owned(), vec![], "cannot read"),
    ];
    for (file, extra, needle) in cases {
        let mut args = vec!["inspect", file.as_str()];
        args.extend(extra);
        let out = compactbench(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(needle), "{file}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        if !needle.contains("Fraction") {
            assert!(err.contains(&file), "names the file: {err}");
        }
    }
}

#[test]
fn every_option_has_help_text_and_help_shows_the_exit_statuses() {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            if a.is_hide_set() || ["help", "version"].contains(&a.get_id().as_str()) {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path} {}", a.get_id()));
            }
        }
        for s in cmd.get_subcommands() {
            walk(s, &format!("{path} {}", s.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&compactbench::cli::Cli::command(), "compactbench", &mut missing);
    assert!(missing.is_empty(), "options without help text: {missing:#?}");
    let out = compactbench(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    // Wrapped to the terminal's width: read as one line.
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("Exit status: 0 success; 1 regression") && flat.contains("4 incomplete"), "{help}");
}

/// Every subcommand's `--help` ends with the exit statuses, nested ones included.
#[test]
fn every_subcommand_help_lists_the_exit_statuses() {
    fn check(c: &mut clap::Command, path: &str) -> usize {
        let help = c.render_long_help().to_string();
        assert!(help.contains("Exit status: 0 success"), "{path} --help: {help}");
        let mut n = 1;
        // clap's own `help` subcommands are generated after our help text is set.
        for s in c.get_subcommands_mut().filter(|s| s.get_name() != "help") {
            let name = format!("{path} {}", s.get_name());
            n += check(s, &name);
        }
        n
    }
    let mut c = compactbench::cli::command();
    c.build();
    assert!(check(&mut c, "compactbench") > 20);
}

/// `--format` is parsed from the importers' names: listed in `--help`, any other value refused listing them.
#[test]
fn import_format_takes_the_importer_names_and_lists_them() {
    use clap::Parser;
    use compactbench::cli::datasets::DatasetsCommand;
    use compactbench::cli::{Cli, Command};
    use compactbench::datasets::import::Format;
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    let help = String::from_utf8_lossy(&compactbench(&["datasets", "import", "--help"]).stdout).into_owned();
    let listed = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(listed.contains(&format!("[possible values: {}]", names.join(", "))), "{help}");
    let out = compactbench(&["datasets", "import", "--format", "gemini", "x.json", "--out", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid value 'gemini'") && err.contains(&names.join(", ")), "{err}");
    for &f in Format::ALL {
        let cli = Cli::try_parse_from(["compactbench", "datasets", "import", "--format", f.name(), "x", "--out", "o"]);
        match cli.unwrap().command {
            Command::Datasets(d) => match d.command {
                DatasetsCommand::Import(a) => assert_eq!(a.format, Some(f)),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
}

/// Errors wrapped with where they happened print as before (`WHERE: ERROR`), with the error's status.
#[test]
fn probe_and_manifest_errors_name_the_path_with_their_status() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-probes");
    let out = compactbench(&["probes", "check", missing.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with(&format!("error: {}: cannot read: ", missing.display())), "{err}");
    // A manifest whose repository git cannot read: a failure (3), named by the manifest as before.
    use compactbench::datasets::manifest::{Manifest, ManifestFile};
    let m = Manifest {
        corpus: "test".into(),
        repository: Some(tmp.path().join("no-repo").display().to_string()),
        git_ref: Some("main".into()),
        license: None,
        files: vec![ManifestFile {
            name: "s1.jsonl".into(),
            repository: None,
            commit: "0123456789ab".into(),
            path: "a.jsonl".into(),
            sha256: "0".repeat(64),
        }],
    };
    let manifest = write(&tmp, "m.toml", toml::to_string(&m).unwrap().as_bytes());
    let out = compactbench(&["datasets", "fetch", &manifest, "--into", tmp.path().join("raw").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.starts_with(&format!("error: {manifest}: git ")), "{err}");
}
