//! The turn loop. Before every recorded model turn (a model request) the session may compress the stored
//! history; then the pending user turns are appended, the request they complete is recorded, and the
//! recorded model turn is appended, so later compressions see earlier snapshots.

use super::accounting::{self, uses_recorded_counts};
use super::counting::{first_compaction_at, Counting};
use super::event::build_event;
use super::input::ReplayInput;
use super::model_counter::CountError;
use super::observer::{first_pass_history, ReplayObserver};
use super::results::{CompressionEvent, ConversationResult, ReplayError};
use super::settings::{CompressAt, PromptCountSource, ReplaySettings};
use super::stored::Stored;
use super::strategy::{Compressor, CompressorSession, SessionContext, TurnInput, TurnOutcome, Window};
use super::uncompressed::Uncompressed;
use super::validity;
use crate::compress::callers::overflow_check;
use crate::compress::CompressionStatus;
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;

/// [`replay_observed`](super::replay_observed) after the first pass.
pub async fn replay_prepared(
    input: ReplayInput<'_>,
    uncompressed: &Uncompressed,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let token_limit = settings.token_limit.resolve(uncompressed.window_basis());
    let result = ConversationResult {
        trigger_tokens: strategy.trigger_tokens(token_limit),
        ..accounting::opening_result(&input, uncompressed, settings, token_limit)
    };
    let counting = match Counting::of(settings, input.image_billing).map(|c| c.scaled(uncompressed.scale)) {
        Ok(c) => c,
        Err(e) => {
            return ConversationResult {
                error: Some(ReplayError::Tokenizer { turn: None, message: e.to_string() }),
                ..result
            }
        }
    };
    let session = strategy.start(SessionContext {
        window: Window { token_limit, max_output_tokens: settings.max_output_tokens },
        recorded_compactions: input.recorded_compactions,
    });
    let mut stored = Stored::new(counting);
    if let Some(env) = &settings.env_text {
        if let Err(e) = stored.push(&history::user_text(env), uncompressed.env).await {
            return ConversationResult {
                error: Some(ReplayError::Tokenizer { turn: None, message: e.to_string() }),
                ..result
            };
        }
    }
    let mut replay = TurnLoop {
        input,
        uncompressed,
        settings,
        token_limit,
        use_recorded: uses_recorded_counts(&input, settings),
        counting,
        session,
        // `getLastPromptTokenCount()` right after the chat is constructed: the heuristic of its history.
        last_prompt: stored.heuristic(),
        stored,
        result,
        compressed_any: false,
        pending_start: 0,
        previous_serials: None,
        changed_from: 0,
        as_recorded: validity::AsRecorded::new(input.history, settings.env_text.as_deref()),
    };
    for (i, turn) in input.history.iter().enumerate() {
        if !history::is_model(turn) {
            continue;
        }
        // An error (the strategy's, or a count that fails: a model tokenizer's) stops the replay.
        if let Err(e) = replay.request(i, turn, llm, observer).await {
            replay.result.error = Some(e);
            break;
        }
    }
    replay.close(observer).await
}

/// The replay between two requests.
struct TurnLoop<'a> {
    input: ReplayInput<'a>,
    uncompressed: &'a Uncompressed,
    settings: &'a ReplaySettings,
    token_limit: u64,
    /// The trigger sees the recorded API counts while the history is as recorded.
    use_recorded: bool,
    counting: Counting<'a>,
    session: Box<dyn CompressorSession>,
    stored: Stored<'a>,
    result: ConversationResult,
    /// `getLastPromptTokenCount()` as the trigger will see it at the next request.
    last_prompt: u64,
    /// A strategy has changed the stored history.
    compressed_any: bool,
    /// Where the recorded turns not yet appended start (the next request's pending user turns).
    pending_start: usize,
    /// The serials of the previous request's Contents, for its cacheable prefix.
    previous_serials: Option<Vec<u64>>,
    /// The first stored Content the session has not seen as it is now.
    changed_from: usize,
    /// The requests without compression, to check compressed ones against.
    as_recorded: validity::AsRecorded<'a>,
}

/// One request as it stands before the session answers.
struct Request {
    /// Index in the recorded history of the model turn it produces.
    turn: usize,
    /// Index among the requests.
    index: usize,
    /// `/compress` here (typed, or the agent compacted here and strategies compress only there).
    force: bool,
    /// The session is asked (by its own trigger, or forced at the agent's points).
    ask: bool,
    /// Tokens of its pending user turns, as the uncompressed pass measured them.
    pending_tokens: u64,
    /// The request the stored history would send without compressing now.
    tokens_before: u64,
    /// Stored Contents before the session answers.
    contents_before: usize,
}

/// A failed count, as the replay's error at `turn`.
fn count_failed(turn: usize) -> impl Fn(CountError) -> ReplayError {
    move |e| ReplayError::Tokenizer { turn: Some(turn), message: e.to_string() }
}

impl TurnLoop<'_> {
    /// Request `turn` (a recorded model turn): the session may compress, what it did is applied and
    /// recorded, then the request is sent and the model turn appended.
    async fn request(
        &mut self,
        turn: usize,
        model_turn: &Content,
        llm: &dyn LanguageModel,
        observer: &mut dyn ReplayObserver,
    ) -> Result<(), ReplayError> {
        let mut req = self.next_request(turn);
        let mut outcome = self.outcome(&req, llm).await?;
        // A replacement that stands for pending turns too: only the pending turns after it are sent.
        if let (Some(until), Some(_)) = (outcome.covers_until, &outcome.replaced) {
            let from = until.min(turn);
            if from > self.pending_start {
                let rest = &self.input.history[from..turn];
                req.pending_tokens = self.stored.measured_of(rest).await.map_err(count_failed(turn))?;
                self.pending_start = from;
            }
        }
        let status = outcome.info.compression_status;
        let edited = !outcome.edits.is_empty();
        if edited {
            self.stored.edit(std::mem::take(&mut outcome.edits)).await.map_err(count_failed(turn))?;
        }
        let event = if status != CompressionStatus::Noop || req.force {
            Some(self.event(&req, &outcome, edited).await?)
        } else {
            None
        };
        self.result.events_by_status.add(status);
        let first_and_final =
            outcome.trace.as_ref().and_then(|t| Some((t.first_summary.clone()?, t.final_summary.clone()?)));
        let changed = edited || outcome.replaced.is_some();
        self.apply_replacement(&req, outcome.replaced, edited).await?;
        if let Some(event) = event {
            self.record_event(event, first_and_final, observer).await;
        }
        self.send(&req, model_turn, changed).await
    }

    fn next_request(&self, turn: usize) -> Request {
        let settings = self.settings;
        let index = self.result.requests;
        let pending_tokens = self.uncompressed.pending.get(index).copied().unwrap_or(0);
        let at_recorded = settings.compress_at == CompressAt::Recorded
            && self.input.recorded_compactions.iter().any(|c| (self.pending_start..=turn).contains(&c.at));
        let force = settings.manual_compress_turns.contains(&turn) || at_recorded;
        Request {
            turn,
            index,
            force,
            // Only at the agent's points, the session is asked only there (forced).
            ask: settings.compress_at == CompressAt::Own || force,
            pending_tokens,
            tokens_before: self.stored.measured() + self.uncompressed.overhead + pending_tokens,
            contents_before: self.stored.contents.len(),
        }
    }

    /// What the session answers, or a NOOP where it is not asked.
    async fn outcome(&mut self, req: &Request, llm: &dyn LanguageModel) -> Result<TurnOutcome, ReplayError> {
        if !req.ask {
            return Ok(TurnOutcome::noop(self.last_prompt));
        }
        let input = TurnInput {
            stored: &self.stored.contents,
            pending: &self.input.history[self.pending_start..req.turn],
            last_prompt_tokens: self.last_prompt,
            force: req.force,
            prompt_id: format!("{}-{}", self.input.id, req.turn),
            changed_from: self.changed_from,
            turn: req.turn,
        };
        self.session.before_request(input, llm).await.map_err(|e| ReplayError::of_strategy(req.turn, &e))
    }

    /// The event of an outcome, measured before its replaced history (if any) is stored: the request after
    /// is the candidate's, or the edited history's.
    async fn event(
        &mut self,
        req: &Request,
        outcome: &TurnOutcome,
        edited: bool,
    ) -> Result<CompressionEvent, ReplayError> {
        let overhead = self.uncompressed.overhead;
        let tokens_after = match &outcome.candidate {
            Some(c) => {
                self.stored.measured_of(c).await.map_err(count_failed(req.turn))? + overhead + req.pending_tokens
            }
            None if edited => self.stored.measured() + overhead + req.pending_tokens,
            None => req.tokens_before,
        };
        let sizes = (req.tokens_before, tokens_after);
        let mut event = build_event(req.turn, req.index, req.force, outcome, req.contents_before, sizes, self.settings);
        if let Some(summary) = outcome.trace.as_ref().and_then(|t| t.final_summary.as_deref()) {
            event.summary_tokens = self.counting.text(summary).await.map_err(count_failed(req.turn))?;
        }
        Ok(event)
    }

    /// Stores a replaced history (edits are stored already), then what follows from a changed history: the
    /// trigger's next count, and where the session must look next time.
    async fn apply_replacement(
        &mut self,
        req: &Request,
        replaced: Option<Vec<Content>>,
        edited: bool,
    ) -> Result<(), ReplayError> {
        let was_replaced = replaced.is_some();
        if let Some(new) = replaced {
            self.stored.replace(new).await.map_err(count_failed(req.turn))?;
        }
        if was_replaced || edited {
            self.compressed_any = true;
            // After `startChat`/`setHistory` the reference's count is the heuristic of the stored history;
            // measured, it is the new request without its pending turn.
            self.last_prompt = match self.settings.prompt_count_source {
                PromptCountSource::Measured => self.stored.measured() + self.uncompressed.overhead,
                _ => self.stored.heuristic(),
            };
        }
        // Appending may merge into the last Content; a replaced history is new as a whole. A session not
        // asked this time still has to see everything changed since it was last asked.
        let unseen_from = if was_replaced { 0 } else { self.stored.contents.len().saturating_sub(1) };
        self.changed_from = if req.ask { unseen_from } else { self.changed_from.min(unseen_from) };
        Ok(())
    }

    /// Shows the event to the observer with the history now stored, and keeps it.
    async fn record_event(
        &mut self,
        event: CompressionEvent,
        first_and_final: Option<(String, String)>,
        observer: &mut dyn ReplayObserver,
    ) {
        let stored = &self.stored.contents;
        let first_pass = first_and_final.and_then(|(first, fin)| first_pass_history(stored, &first, &fin));
        observer.after_event(self.result.events.len(), &event, stored, first_pass.as_deref()).await;
        self.result.events.push(event);
    }

    /// Sends the request: the pending user turns are appended and the request recorded (and checked, when
    /// the history was `changed` just before it); then the recorded model turn is appended.
    async fn send(&mut self, req: &Request, model_turn: &Content, changed: bool) -> Result<(), ReplayError> {
        let recorded = self.input.history;
        let pending = &recorded[self.pending_start..req.turn];
        let pending_parts: Vec<Value> = pending.iter().flat_map(|c| history::parts(c).iter().cloned()).collect();
        if overflow_check(self.settings.overflow_guard, self.token_limit, self.last_prompt, &pending_parts).is_some() {
            self.result.overflow_guard_refusals += 1;
        }
        for (j, c) in pending.iter().enumerate() {
            let known = self.uncompressed.measures.get(self.pending_start + j).copied().flatten();
            self.stored.push(c, known).await.map_err(count_failed(req.turn))?;
        }
        let request = self.record_request(req.turn);
        if changed {
            self.check_request(req, request);
        }
        self.last_prompt = self.prompt_count_after(req.turn, request);
        let known = self.uncompressed.measures.get(req.turn).copied().flatten();
        self.stored.push(model_turn, known).await.map_err(count_failed(req.turn))?;
        self.pending_start = req.turn + 1;
        Ok(())
    }

    /// Records the request the stored history now sends for model turn `turn`, next to the agent's recorded
    /// count of the same request; returns its size.
    fn record_request(&mut self, turn: usize) -> u64 {
        let overhead = self.uncompressed.overhead;
        let request = self.stored.measured() + overhead;
        // A history whose head changed (a summary replaced it) shares only the system prompt and tools with
        // the previous request; see `Uncompressed::cache_stable_overhead`.
        let cached = self.previous_serials.as_ref().map_or(0, |p| match self.stored.shared_prefix_tokens(p) {
            0 => self.uncompressed.cache_stable_overhead,
            shared => overhead + shared,
        });
        self.previous_serials = Some(self.stored.serials());
        let per_request_cache = !self.input.recorded_cache.is_empty();
        accounting::record_request(
            &mut self.result,
            self.uncompressed,
            self.token_limit,
            (request, cached),
            per_request_cache,
        );
        // The replay sends the agent's own history until the agent compacts or the strategy changes it.
        let as_recorded = !self.compressed_any && turn < first_compaction_at(&self.input);
        accounting::record_recorded_count(&mut self.result, &self.input, turn, as_recorded);
        request
    }

    /// After a change of the history: what the request now sent (of `tokens` tokens) has that a provider
    /// rejects and the same request without compression has not. The event records it and the conversation
    /// counts the request.
    fn check_request(&mut self, req: &Request, tokens: u64) {
        let found = validity::violations(&self.stored.contents, tokens, self.token_limit);
        if found.is_empty() {
            return;
        }
        let none_tokens = self.uncompressed.requests.get(req.index).copied().unwrap_or(tokens);
        let none = validity::violations(self.as_recorded.request(req.turn), none_tokens, self.token_limit);
        let found = validity::introduced(found, &none);
        if found.is_empty() {
            return;
        }
        self.result.invalid_requests += 1;
        if let Some(event) = self.result.events.last_mut().filter(|e| e.request == req.index) {
            event.request_violations = found;
        }
    }

    /// `getLastPromptTokenCount()` after request `turn`, which measured `request` tokens.
    fn prompt_count_after(&self, turn: usize, request: u64) -> u64 {
        match self.settings.prompt_count_source {
            PromptCountSource::Recorded if self.use_recorded && !self.compressed_any => {
                self.input.recorded_prompt_tokens.get(turn).copied().flatten().unwrap_or(request)
            }
            PromptCountSource::Heuristic => self.stored.heuristic() + self.uncompressed.overhead,
            _ => request,
        }
    }

    /// After the last request (or the error that stopped the replay): the observer sees the final history,
    /// and the result gets its totals.
    async fn close(mut self, observer: &mut dyn ReplayObserver) -> ConversationResult {
        observer.at_end(&self.stored.contents).await;
        let final_tokens = self.stored.measured() + self.uncompressed.overhead;
        accounting::close(&mut self.result, final_tokens, self.stored.contents.len());
        self.result
    }
}
