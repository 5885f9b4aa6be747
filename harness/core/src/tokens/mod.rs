//! Token counting: the reference heuristic with its historical variants, and a real BPE tokenizer.

mod estimate;
pub mod images;
mod tiktoken;

pub use estimate::{
    estimate_history, estimate_parts, Estimator, DEFAULT_CHARS_PER_TOKEN, IMAGE_TOKEN_ESTIMATE,
    MAX_CHARS_FOR_FULL_HEURISTIC, NON_ASCII_TOKENS_PER_CHAR, PDF_TOKEN_ESTIMATE,
};
pub use images::ImageBilling;
pub use tiktoken::{
    known_o200k_counts, o200k_count_history, o200k_count_history_text, o200k_count_text, o200k_fingerprint,
    preload_o200k_counts, render_for_tokenizer,
};
