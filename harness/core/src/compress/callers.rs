//! The two callers of `compress` and what they do with its result (`packages/core/src/core/client.ts`,
//! `packages/core/src/agents/local-executor.ts`), plus the context-window overflow guard (`processTurn` in
//! `client.ts`). Pure state machines: the replay engine drives them.

use super::{CompressOutcome, CompressionStatus};
use crate::history::{self, Content};
use crate::json::Value;
use crate::tokens::Estimator;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallerKind {
    /// `GeminiClient.tryCompressChat`: before every main-loop request; `/compress` forces.
    #[default]
    Interactive,
    /// `LocalAgentExecutor.tryCompressChat`: at the start of every sub-agent turn, never forced.
    SubAgent,
}

/// How a failure sets the flag, by era.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Latch {
    /// 2025-08-27: `hasFailed = !force` on a failure (a forced failure clears it).
    SetIfNotForced,
    /// Since 2025-12-04: `hasFailed = hasFailed || !force` (a forced failure never clears it).
    #[default]
    Latched,
}

/// The caller's state across a conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub kind: CallerKind,
    pub latch: Latch,
    pub has_failed: bool,
}

/// What the caller did with the stored history.
#[derive(Clone, Debug, PartialEq)]
pub enum HistoryUpdate {
    Unchanged,
    /// The stored history is replaced (`startChat` / `setHistory`).
    Replaced(Vec<Content>),
}

impl Caller {
    pub fn new(kind: CallerKind, latch: Latch) -> Self {
        Caller { kind, latch, has_failed: false }
    }

    /// The `hasFailedCompressionAttempt` argument for the next call.
    pub fn has_failed_argument(&self) -> bool {
        self.has_failed
    }

    /// Applies a result. `env_turn` is the turn `startChat` prepends (interactive, COMPRESSED only).
    pub fn apply(&mut self, outcome: &CompressOutcome, force: bool, env_turn: Option<&Content>) -> HistoryUpdate {
        use CompressionStatus::*;
        match (self.kind, outcome.info.compression_status, &outcome.new_history) {
            (CallerKind::Interactive, FailedInflatedTokenCount, _) => {
                self.has_failed = match self.latch {
                    Latch::Latched => self.has_failed || !force,
                    Latch::SetIfNotForced => !force,
                };
                HistoryUpdate::Unchanged
            }
            (CallerKind::SubAgent, FailedInflatedTokenCount, _) => {
                self.has_failed = true;
                HistoryUpdate::Unchanged
            }
            (kind, Compressed, Some(h)) => {
                self.has_failed = false;
                let mut new = Vec::with_capacity(h.len() + 1);
                if kind == CallerKind::Interactive {
                    new.extend(env_turn.cloned());
                }
                new.extend_from_slice(h);
                HistoryUpdate::Replaced(new)
            }
            (_, ContentTruncated, Some(h)) => HistoryUpdate::Replaced(h.clone()),
            _ => HistoryUpdate::Unchanged,
        }
    }

    /// A new chat (session reset or resume) clears the flag.
    pub fn reset(&mut self) {
        self.has_failed = false;
    }
}

/// The overflow guard's behaviour by era.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverflowGuard {
    /// Before 2025-10-08.
    None,
    /// 2025-10-08 … 2026-01-18: before compression, `floor(jslen(request)/4) > remaining × 0.95`.
    Before95,
    /// Since 2026-01-18: after compression, `calculateRequestTokenCount(request) > remaining`.
    #[default]
    After,
}

/// `ContextWindowWillOverflow` payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Overflow {
    pub estimated_request_token_count: u64,
    pub remaining_token_count: i64,
}

/// Checks the pending request against the room left; `None` when it fits (or the guard is off).
pub fn overflow_check(
    guard: OverflowGuard,
    token_limit: u64,
    last_prompt_tokens: u64,
    request: &[Value],
) -> Option<Overflow> {
    let remaining = token_limit as i64 - last_prompt_tokens as i64;
    let (est, over) = match guard {
        OverflowGuard::None => return None,
        OverflowGuard::Before95 => {
            let est = (crate::json::jslen(&Value::Array(request.to_vec())) / 4) as u64;
            (est, est as f64 > remaining as f64 * 0.95)
        }
        OverflowGuard::After => {
            let est = Estimator::Current.parts(request.iter(), 4.0);
            (est, est as i64 > remaining)
        }
    };
    over.then_some(Overflow { estimated_request_token_count: est, remaining_token_count: remaining })
}

/// The request parts a Content would send (for the overflow guard).
pub fn request_parts(c: &Content) -> &[Value] {
    history::parts(c)
}
