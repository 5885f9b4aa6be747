//! Replay: a recorded conversation is fed to a compressor turn by turn, as the agent met it.
//!
//! Before every recorded model turn (a model request) the strategy may compress the stored history; then
//! the pending user turns and the recorded model turn are appended to the (possibly compressed) history, so
//! later compressions see earlier snapshots.
//!
//! One accounting: every size a replay reports is a request as it would be sent (system prompt, tool
//! declarations, stored history, pending turn) counted with one tokenizer ([`Tokenizer`], o200k by default),
//! on both sides of every event and for every strategy. The reference's own figures (`originalTokenCount`,
//! `newTokenCount`) are kept next to them under names that say so. Token accounting is incremental: each
//! Content is measured once, in a first pass over the uncompressed conversation that also gives the `none`
//! figures and the peak a relative window ([`TokenLimit::PeakFraction`]) needs.
//!
//! With a model's tokenizer ([`Tokenizer::Model`]) each Content, the system prompt and the tool declarations
//! are counted alone by the caller's [`TokenCounter`] (awaited: the measuring steps are async), and a
//! request's size is the sum of its parts' counts. A count that fails stops that conversation's replay with
//! the error in its result.
//!
//! Where things are: this file is the table of contents (the modules and the names the workspace uses);
//! `settings` holds the replay settings, `input` a conversation's input, `window` the tokenizer and the
//! window; `counting` holds the tokenizer and the fixed part of every request, `stored` the stored history
//! with its figures, `uncompressed` the first pass, `turns` the turn loop, `event` and `accounting` the
//! figures it records, `results` what a replay returns (results and errors), `observer` what watches it,
//! and `run` the entry points (and the tests of a whole replay). Each imports its siblings, never this file.

pub mod model_counter;
pub mod registry;
pub mod results;
pub mod strategies;
pub mod strategy;
pub mod validity;
pub mod window;

mod accounting;
mod counting;
mod event;
mod input;
mod observer;
mod run;
mod settings;
mod stored;
mod turns;
mod uncompressed;

pub use accounting::is_unsplittable;
pub use counting::{calibrated_scale, request_overhead};
pub use input::ReplayInput;
pub use model_counter::{CountError, CounterHandle, ModelCounter, TokenCounter};
pub use observer::{NoObserver, ReplayObserver};
pub use registry::register;
pub use results::{
    CompressionEvent, ConversationResult, ReplayError, ReplayErrorKind, StatusCounts, VerificationDelta,
};
pub use run::{replay, replay_observed, replay_spec};
pub use settings::{CompressAt, OverheadSource, PromptCountSource, ReplaySettings, TokenScale};
pub use strategy::{
    CacheUsage, Compressor, CompressorSession, RecordedCompaction, SessionContext, Strategy, StrategyError,
    StrategySpec, TurnInput, TurnOutcome,
};
pub use turns::replay_prepared;
pub use uncompressed::Uncompressed;
pub use window::{
    recorded_window, PromptCountOrigin, TokenLimit, Tokenizer, WindowBasis, CLAUDE_WINDOWS, MAX_FIXED_SHARE,
};
