//! compactbench-core: the reference compressor and the replay engine, with no heavy dependency, so an agent
//! can embed the faithful port of Gemini CLI's chat compression on its own.
//!
//! Along the pipeline: [`json`] and [`history`] (the data model: JSON with JavaScript semantics, Gemini
//! `Content[]` helpers), [`tokens`] and [`model_tables`] (counting and model tables), [`compress`] (the port of
//! `ChatCompressionService` and its historical variants), [`llm`] (the one model interface the compressor
//! calls), [`replay`] (strategies and the turn-by-turn replay) and [`inspect`] (one compression, explained).
//! Most of it is functions over data, with no network (models are reached through the [`llm`] trait, which the caller
//! implements) and no clock read into any result (the date the environment context names is an input). The exceptions,
//! so a caller knows where I/O happens: [`history::load_history`] and [`compress::prompts::PromptFile::load`] read
//! files, [`compress::truncate::FsToolOutputStore`] writes the tool outputs the truncation saves,
//! [`fsutil::write_atomic`] writes a file atomically, and the `exec:` strategy ([`replay::strategies::exec`]) spawns
//! the user's program and times its answers out.

pub mod compress;
pub mod fsutil;
pub mod history;
pub mod inspect;
pub mod json;
pub mod llm;
pub mod memo;
pub mod model_tables;
pub mod named;
pub mod replay;
pub mod tokens;
