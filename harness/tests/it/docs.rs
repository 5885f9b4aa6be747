//! The documentation's links resolve: every relative link and `#anchor` of the README, the guides under
//! `harness/docs/`, the folders' READMEs and the findings page points at a committed file of the repository
//! and, for an anchor, at a heading of that file (as GitHub slugs headings).

use crate::support::repo;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// GitHub's anchor of a heading: lower case, spaces to `-`, every other character but letters, digits,
/// `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c == '-' || c == '_' || c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a Markdown text offers: its headings' slugs (a repeated slug numbered `-1`, `-2`, …) and
/// explicit `<a name>`/`<a id>` anchors.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut heading: Option<String> = None;
    let explicit = regex::Regex::new(r#"<a\s+(?:name|id)="([^"]+)""#).unwrap();
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let s = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(s.clone()).or_default();
                out.insert(if *n == 0 { s.clone() } else { format!("{s}-{n}") });
                *n += 1;
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                out.extend(explicit.captures_iter(&h).map(|c| c[1].to_string()));
            }
            _ => {}
        }
    }
    out
}

/// Every link and image target of a Markdown text.
fn links(text: &str) -> Vec<String> {
    Parser::new(text)
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

/// What is wrong with one link of `file` (`None`: it resolves).
fn broken(file: &Path, target: &str) -> Option<String> {
    let external = regex::Regex::new(r"^[a-zA-Z][a-zA-Z0-9+.-]*:").unwrap();
    if external.is_match(target) || target.starts_with("//") {
        return None;
    }
    let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
    let joined = if path.is_empty() { file.to_path_buf() } else { file.parent().unwrap_or(Path::new(".")).join(path) };
    let Ok(resolved) = std::fs::canonicalize(&joined) else { return Some("no such file".into()) };
    if !resolved.starts_with(std::fs::canonicalize(repo()).unwrap()) {
        return Some("outside the repository".into());
    }
    let ignored = Command::new("git").current_dir(repo()).arg("check-ignore").arg("-q").arg(&resolved).status();
    if ignored.is_ok_and(|s| s.success()) {
        return Some("git ignores it: a clone does not have it".into());
    }
    if !fragment.is_empty() {
        let text = std::fs::read_to_string(&resolved).ok().filter(|_| resolved.extension().is_some_and(|e| e == "md"));
        match text {
            None => return Some("an anchor into a file that is not Markdown".into()),
            Some(t) if !anchors(&t).contains(fragment) => {
                return Some(format!("no heading with the anchor #{fragment}"))
            }
            Some(_) => {}
        }
    }
    None
}

#[test]
fn slugs_and_anchors_are_githubs() {
    assert_eq!(slug("Grading: when a history keeps a probe"), "grading-when-a-history-keeps-a-probe");
    assert_eq!(slug("`compactbench audit` — your own sessions"), "compactbench-audit--your-own-sessions");
    let a = anchors("# Title\n\n## Notes\n\n## Notes\n\n<a name=\"here\"></a>\n\n```\n# not a heading\n```\n");
    assert_eq!(a, ["here", "notes", "notes-1", "title"].map(String::from).into_iter().collect());
    assert_eq!(links("see [a](b.md#c), ![i](img/x.png) and `[not](a link)`"), ["b.md#c", "img/x.png"]);
}

/// Every relative link and anchor of the documentation resolves in a clone of the repository.
#[test]
fn every_documentation_link_resolves() {
    let root = repo();
    let mut files: Vec<PathBuf> = ["README.md", "datasets/README.md", "benches/README.md", "reports/FINDINGS.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    let docs = std::fs::read_dir(root.join("harness/docs")).unwrap();
    let mut guides: Vec<PathBuf> =
        docs.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
    guides.sort();
    files.extend(guides);
    let mut problems = Vec::new();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for target in links(&text) {
            checked += 1;
            if let Some(why) = broken(f, &target) {
                problems.push(format!("{}: ({target}): {why}", f.strip_prefix(&root).unwrap_or(f).display()));
            }
        }
    }
    assert!(checked > 50, "the check read the documentation's links: {checked}");
    assert!(problems.is_empty(), "links that do not resolve:\n{}", problems.join("\n"));
}

/// The README states no result of its own: its findings come from the generated box (written by
/// `compactbench findings`, checked by CI), so a share or a difference typed anywhere else in it would be a
/// figure no check ties to its label. The confidence level of an interval is a setting, not a result.
#[test]
fn the_readme_states_no_result_figure_outside_the_generated_box() {
    use compactbench::report::findings_page::{README_BEGIN, README_END};
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let begin = readme.find(README_BEGIN).expect("the findings box opens");
    let end = readme.find(README_END).expect("the findings box closes");
    let outside = format!("{}{}", &readme[..begin], &readme[end..]);
    let figure = regex::Regex::new(r"\b\d+(?:\.\d+)?\s?(?:%|pp\b)").unwrap();
    let typed: Vec<&str> = figure.find_iter(&outside).map(|m| m.as_str()).filter(|f| *f != "95 %").collect();
    assert!(typed.is_empty(), "result figures typed into the README outside the findings box: {typed:?}");
    assert!(figure.is_match(&readme[begin..end]), "the box holds the figures");
}
