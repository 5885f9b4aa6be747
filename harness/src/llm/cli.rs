//! llm CLI
