//! The terminal listing of an audit: one block per compaction, then the sessions never compacted, the
//! failed ones, and the page's path.

use super::{Audit, CompactionAudit, SessionAudit, AGENT_LABEL};
use std::fmt::Write as _;

/// At most this many files, prompts and probes are named per compaction (then a count; `--json` has all).
const LISTED: usize = 5;

fn tokens(n: Option<u64>) -> String {
    n.map_or_else(|| "?".into(), |n| n.to_string())
}

fn listed(out: &mut String, heading: &str, items: &[String]) {
    let _ = writeln!(out, "      {heading}");
    for item in items.iter().take(LISTED) {
        let _ = writeln!(out, "        - {item}");
    }
    if items.len() > LISTED {
        let _ = writeln!(out, "        … and {} more (--json lists all)", items.len() - LISTED);
    }
}

fn compaction(out: &mut String, c: &CompactionAudit) {
    let when = c.time.as_deref().map(|t| format!("{t}, ")).unwrap_or_default();
    let trigger = c.trigger.as_deref().map(|t| format!(", {t}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "  #{} {when}after model turn {}{trigger}: {} → {} tokens (summary {} tokens)",
        c.ordinal,
        c.turn,
        tokens(c.tokens_before),
        tokens(c.tokens_after),
        c.summary_tokens
    );
    match &c.files_edited_not_named {
        None => {
            let _ = writeln!(
                out,
                "      files changed before: {}; the summary is encrypted in the recording: what it names is unknown",
                c.files_edited_before
            );
        }
        Some(files) if files.is_empty() => {
            let _ = writeln!(out, "      files changed before: {}, all named by the summary", c.files_edited_before);
        }
        Some(files) => listed(
            out,
            &format!("files changed before: {}, not named by the summary: {}", c.files_edited_before, files.len()),
            files,
        ),
    }
    match &c.prompts_not_echoed {
        None => {}
        Some(p) if p.is_empty() => {
            let _ = writeln!(out, "      your prompts before: {}, all echoed in what the agent kept", c.prompts_before);
        }
        Some(p) => listed(
            out,
            &format!("your prompts before: {}, not echoed in what it kept: {}", c.prompts_before, p.len()),
            p,
        ),
    }
    let lost: Vec<String> = c
        .probes
        .iter()
        .filter(|p| p.kept.get(AGENT_LABEL) == Some(&false))
        .map(|p| {
            let by = if p.origin == crate::data::ProbeOrigin::Manual { ", hand-written" } else { "" };
            format!("[{}{by}] {} → {}", p.kind.name(), p.question, p.gold)
        })
        .collect();
    let asked = c.probes.iter().filter(|p| p.kept.contains_key(AGENT_LABEL)).count();
    if asked > 0 {
        if lost.is_empty() {
            let _ = writeln!(out, "      probes: all {asked} kept");
        } else {
            let heading = if c.summary_readable {
                format!("probes lost by the agent's summary: {} of {asked}", lost.len())
            } else {
                // The grader reads only what the agent kept verbatim beside its encrypted summary.
                format!(
                    "probes not in what the agent kept verbatim (its summary is encrypted): {} of {asked}",
                    lost.len()
                )
            };
            listed(out, &heading, &lost);
        }
    }
    let columns: Vec<String> = c
        .strategies
        .iter()
        .filter(|s| s.probes_asked > 0 || s.request_tokens_after.is_some())
        .map(|s| format!("{} {}/{} ({} tok)", s.label, s.probes_kept, s.probes_asked, tokens(s.request_tokens_after)))
        .collect();
    if !columns.is_empty() {
        let _ = writeln!(out, "      kept at this point: {}", columns.join(" · "));
    }
}

fn session(out: &mut String, s: &SessionAudit) {
    let file = s.file.as_deref().map(|f| format!(" ({f})")).unwrap_or_default();
    let window = s.window_tokens.map(|w| format!(", window {}", w)).unwrap_or_default();
    let _ = writeln!(out, "{} {}{file}{window}", s.source, s.session);
    for c in &s.compactions {
        compaction(out, c);
    }
}

/// The listing `audit` prints.
pub fn render(audit: &Audit) -> String {
    let mut out = String::new();
    // One agent may write two formats (Gemini CLI's `.json` and `.jsonl` chats): each directory and agent once.
    let mut agents: Vec<String> = Vec::new();
    for d in &audit.dirs {
        let shown = format!("{} ({})", d.dir.display(), d.agent);
        if !agents.contains(&shown) {
            agents.push(shown);
        }
    }
    let _ = writeln!(
        out,
        "audit of {}: {} sessions, {} compactions in {} of them\n",
        agents.join(", "),
        audit.sessions,
        audit.compactions,
        audit.compacted.len()
    );
    for s in &audit.compacted {
        session(&mut out, s);
        out.push('\n');
    }
    if !audit.not_compacted.is_empty() {
        let _ = writeln!(
            out,
            "never compacted: {} sessions (peak context, recorded unless marked ~replayed)",
            audit.not_compacted.len()
        );
        for s in &audit.not_compacted {
            let peak = match (s.peak_tokens, s.peak_recorded) {
                (Some(p), true) => p.to_string(),
                (Some(p), false) => format!("~{}", p),
                (None, _) => "?".into(),
            };
            let window = s.window_tokens.map(|w| format!(" of {}", w)).unwrap_or_default();
            let _ = writeln!(out, "  {} {}: peak {peak}{window} tokens", s.source, s.session);
        }
        out.push('\n');
    }
    if !audit.failed.is_empty() {
        let _ = writeln!(out, "failed: {} sessions", audit.failed.len());
        for f in &audit.failed {
            let _ = writeln!(out, "  {}: {}", f.session, f.reason);
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "agent = the agent's own summary; reference = Gemini CLI's compression; probes kept / asked by the project's \
         grader; tok = the request after compressing, as replayed."
    );
    out
}
