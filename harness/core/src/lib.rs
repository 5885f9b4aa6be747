//! compactbench-core: the reference compressor and the replay engine, with no heavy dependency, so an agent
//! can embed the faithful port of Gemini CLI's chat compression on its own.
//!
//! Along the pipeline: [`json`] and [`history`] (the data model: JSON with JavaScript semantics, Gemini
//! `Content[]` helpers), [`tokens`] and [`models`] (counting and model tables), [`compress`] (the port of
//! `ChatCompressionService` and its historical variants), [`llm`] (the one model interface the compressor
//! calls), [`replay`] (strategies and the turn-by-turn replay) and [`inspect`] (one compression, explained).
//! Everything here is a pure function over data; files, network and clocks stay in the callers.

pub mod compress;
pub mod fsutil;
pub mod history;
pub mod inspect;
pub mod json;
pub mod llm;
pub mod memo;
pub mod models;
pub mod named;
pub mod replay;
pub mod tokens;
