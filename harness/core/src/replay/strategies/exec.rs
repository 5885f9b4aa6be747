//! External compressors: `strategy = "exec:COMMAND"` runs a program (one per conversation, for the whole
//! replay) that speaks the `compactbench.exec/1` protocol, JSON lines on stdin/stdout (documented in
//! `harness/docs/exec-protocol.md`; example in `harness/examples/summarize_head.py`).
//!
//! Before every model request the harness sends a `request` line (the Contents that changed since the
//! last request, token counts, the knobs); the program answers `unchanged`, `replace` with the new
//! history, or `call` with model calls it wants made, which the harness makes through its own model
//! layer (so recording, caching, costs and probes work as for the built-ins) and answers with a
//! `responses` line. A crash, a hang past `timeout_secs` or a malformed line is an error naming the
//! program and the request; it fails this conversation's cell, not the run.

use crate::compress::{CompressTrace, LlmCallRecord};
use crate::history::{self, Content};
use crate::json::{self, Value};
use crate::llm::LanguageModel;
use crate::replay::strategies::common;
use crate::replay::strategies::reference_grid::THRESHOLD;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The protocol version every line carries.
pub const PROTOCOL: &str = "compactbench.exec/1";

pub struct Exec;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct ExecParams {
    command: String,
    threshold: f64,
    keep_fraction: f64,
    timeout_secs: u64,
}

impl Strategy for Exec {
    fn name(&self) -> &'static str {
        "exec"
    }
    fn about(&self) -> &'static str {
        "an external program speaking compactbench.exec/1 JSON lines (harness/docs/exec-protocol.md); its model calls go through the harness"
    }
    fn system(&self) -> Option<&'static str> {
        Some("external program")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn takes_argument(&self) -> bool {
        true
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(1)
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::number(
                THRESHOLD,
                0.5,
                Bound::Open(0.0),
                Bound::Closed(1.0),
                "passed to the program: trigger share of the window",
            )
            .labelled("t")
            .headed("thr"),
            Knob::number(
                "keep_fraction",
                0.3,
                Bound::Open(0.0),
                Bound::Open(1.0),
                "passed to the program: share kept verbatim",
            ),
            Knob::integer("timeout_secs", 60, 1, "longest wait for one answer line"),
        ]
    }
    fn expand(&self, g: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        let command = g.argument.map(str::trim).unwrap_or_default();
        let mut out = g.knob_product()?;
        for v in &mut out {
            // The command first: it names the point.
            let mut params = Params::new();
            params.insert("command".into(), command.into());
            params.extend(std::mem::take(&mut v.params));
            v.params = params;
        }
        Ok(out)
    }
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(parse_params::<ExecParams>(self.name(), params)?))
    }
}

impl Compressor for ExecParams {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(ExecSession { p: self.clone(), window: conversation.window, running: None, request: 0 })
    }
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        Some(threshold_trigger(self.threshold, token_limit))
    }
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The last lines the program wrote to stderr, for error messages.
    stderr_tail: Arc<Mutex<Vec<String>>>,
}

struct ExecSession {
    p: ExecParams,
    window: Window,
    running: Option<Running>,
    /// Requests sent so far (1-based in messages).
    request: u64,
}

/// A model call the program asked for.
#[derive(Deserialize)]
struct CallRequest {
    id: String,
    #[serde(default)]
    system: Option<String>,
    /// Gemini `Content[]`; or `prompt`, one user turn.
    #[serde(default)]
    contents: Option<serde_json::Value>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    max_output_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Reply {
    protocol: Option<String>,
    action: String,
    #[serde(default)]
    calls: Vec<CallRequest>,
    #[serde(default)]
    summary: Option<String>,
}

impl ExecSession {
    fn fail(&self, what: &str, prompt_id: &str) -> StrategyError {
        let tail = self.running.as_ref().map(|r| r.stderr_tail.lock().map(|t| t.join("\n")).unwrap_or_default());
        let stderr = match tail.as_deref() {
            Some(t) if !t.trim().is_empty() => format!("; its stderr ends: {}", t.trim()),
            _ => String::new(),
        };
        StrategyError::Failed {
            strategy: "exec".into(),
            message: format!("program `{}`, request {} ({prompt_id}): {what}{stderr}", self.p.command, self.request),
        }
    }

    fn start(&mut self, prompt_id: &str) -> Result<(), StrategyError> {
        if self.running.is_some() {
            return Ok(());
        }
        let spawned = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {}", self.p.command))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = spawned.map_err(|e| self.fail(&format!("cannot start: {e}"), prompt_id))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.fail("cannot open its stdin/stdout", prompt_id));
        };
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut t) = tail.lock() {
                    t.push(line);
                    let excess = t.len().saturating_sub(10);
                    t.drain(..excess);
                }
            }
        });
        self.running = Some(Running { child, stdin, stdout: BufReader::new(stdout), stderr_tail });
        Ok(())
    }

    async fn send(&mut self, line: String, prompt_id: &str) -> Result<(), StrategyError> {
        if self.running.is_none() {
            return Err(self.fail("not running", prompt_id));
        }
        let Some(r) = self.running.as_mut() else {
            return Err(StrategyError::Failed { strategy: "exec".into(), message: "not running".into() });
        };
        let written = async {
            r.stdin.write_all(line.as_bytes()).await?;
            r.stdin.write_all(b"\n").await?;
            r.stdin.flush().await
        }
        .await;
        match written {
            Ok(()) => Ok(()),
            Err(e) => Err(self.crashed(&format!("cannot write to it ({e})"), prompt_id).await),
        }
    }

    /// The program stopped: how it ended.
    async fn crashed(&mut self, what: &str, prompt_id: &str) -> StrategyError {
        let status = match self.running.as_mut() {
            Some(r) => match tokio::time::timeout(Duration::from_secs(5), r.child.wait()).await {
                Ok(Ok(s)) => format!("exited with {s}"),
                _ => "stopped answering".to_string(),
            },
            None => "is not running".to_string(),
        };
        // Let the stderr reader catch up.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = self.fail(&format!("{what}: the program {status}"), prompt_id);
        self.running = None;
        e
    }

    async fn receive(&mut self, prompt_id: &str) -> Result<(Reply, Value), StrategyError> {
        let timeout = Duration::from_secs(self.p.timeout_secs);
        if self.running.is_none() {
            return Err(self.fail("not running", prompt_id));
        }
        let Some(r) = self.running.as_mut() else {
            return Err(StrategyError::Failed { strategy: "exec".into(), message: "not running".into() });
        };
        let mut line = String::new();
        match tokio::time::timeout(timeout, r.stdout.read_line(&mut line)).await {
            Err(_) => {
                let e = self.fail(&format!("no answer within {} s (timeout_secs)", self.p.timeout_secs), prompt_id);
                self.running = None; // killed on drop
                return Err(e);
            }
            Ok(Err(e)) => return Err(self.crashed(&format!("cannot read its answer ({e})"), prompt_id).await),
            Ok(Ok(0)) => return Err(self.crashed("no answer", prompt_id).await),
            Ok(Ok(_)) => {}
        }
        let clipped = common::clip_chars(line.trim_end(), 200).0;
        let reply: Reply = serde_json::from_str(&line)
            .map_err(|e| self.fail(&format!("malformed JSON answer ({e}): {clipped}"), prompt_id))?;
        if reply.protocol.as_deref().is_some_and(|p| p != PROTOCOL) {
            return Err(self.fail(
                &format!("speaks protocol `{}`, expected `{PROTOCOL}`", reply.protocol.unwrap_or_default()),
                prompt_id,
            ));
        }
        let value =
            json::parse_str(&line).map_err(|e| self.fail(&format!("malformed JSON answer ({e})"), prompt_id))?;
        Ok((reply, value))
    }
}

fn request_line(p: &ExecParams, window: Window, n: u64, turn: &TurnInput<'_>) -> String {
    let from = turn.changed_from.min(turn.stored.len());
    let meta = serde_json::json!({
        "protocol": PROTOCOL,
        "type": "request",
        "request": n,
        "prompt_id": turn.prompt_id,
        "force": turn.force,
        "last_prompt_tokens": turn.last_prompt_tokens,
        "token_limit": window.token_limit,
        "history_length": turn.stored.len(),
        "changed_from": from,
        "knobs": {"threshold": p.threshold, "keep_fraction": p.keep_fraction},
    });
    let contents = json::to_string(&Value::Array(turn.stored[from..].to_vec()));
    // `contents` last, spliced in with the harness's own JSON writer (JavaScript string semantics).
    let mut s = meta.to_string();
    s.pop();
    format!("{s},\"contents\":{contents}}}")
}

#[async_trait]
impl CompressorSession for ExecSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        let prompt_id = turn.prompt_id.clone();
        // A fresh program after a failure sees the whole history again.
        let turn = if self.running.is_none() { TurnInput { changed_from: 0, ..turn } } else { turn };
        self.start(&prompt_id)?;
        self.request += 1;
        self.send(request_line(&self.p, self.window, self.request, &turn), &prompt_id).await?;
        let mut records: Vec<LlmCallRecord> = Vec::new();
        let mut last_text = None;
        loop {
            let (reply, value) = self.receive(&prompt_id).await?;
            match reply.action.as_str() {
                "unchanged" => return Ok(TurnOutcome::noop(orig)),
                "replace" => {
                    let h = value.get("history").cloned().unwrap_or(Value::Null);
                    history::validate_shape(&h)
                        .map_err(|e| self.fail(&format!("bad `history` in its answer: {e}"), &prompt_id))?;
                    let new: Vec<Content> = h.as_array().map(|a| a.to_vec()).unwrap_or_default();
                    let summary = reply.summary.or(last_text);
                    let tr = CompressTrace {
                        first_summary: summary.clone(),
                        final_summary: summary,
                        llm_calls: records,
                        candidate_history: Some(new.clone()),
                        kept_contents: new.len(),
                        ..CompressTrace::default()
                    };
                    return Ok(TurnOutcome::summarized(orig, common::tokens(&new), new, tr));
                }
                "call" => {
                    let mut answers = Vec::new();
                    for c in reply.calls {
                        let contents = match (&c.contents, &c.prompt) {
                            (Some(v), _) => {
                                let v = json::parse_str(&v.to_string())
                                    .map_err(|e| self.fail(&format!("bad call `{}`: {e}", c.id), &prompt_id))?;
                                history::validate_shape(&v).map_err(|e| {
                                    self.fail(&format!("bad call `{}` contents: {e}", c.id), &prompt_id)
                                })?;
                                v.as_array().map(|a| a.to_vec()).unwrap_or_default()
                            }
                            (None, Some(p)) => vec![history::user_text(p)],
                            (None, None) => {
                                return Err(
                                    self.fail(&format!("call `{}` has neither contents nor prompt", c.id), &prompt_id)
                                )
                            }
                        };
                        let id = format!("{prompt_id}-exec-{}", c.id);
                        let (text, record) = common::call(
                            llm,
                            c.system,
                            contents,
                            &id,
                            c.max_output_tokens.or(self.window.max_output_tokens),
                        )
                        .await?;
                        records.push(record);
                        answers.push(serde_json::json!({"id": c.id, "text": text}));
                        last_text = answers.last().and_then(|a| a["text"].as_str()).map(str::to_string);
                    }
                    let line = serde_json::json!({"protocol": PROTOCOL, "type": "responses", "request": self.request, "responses": answers});
                    self.send(line.to_string(), &prompt_id).await?;
                }
                other => {
                    return Err(self
                        .fail(&format!("unknown action `{other}` (expected unchanged, replace or call)"), &prompt_id))
                }
            }
        }
    }
}

impl Drop for ExecSession {
    fn drop(&mut self) {
        if let Some(mut r) = self.running.take() {
            let _ = r.child.start_kill();
        }
    }
}
