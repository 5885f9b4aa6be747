//! The subset of `compactbench::datasets` the importers need.

#[path = "../../src/datasets/error.rs"]
mod error;
#[path = "../../src/datasets/import/mod.rs"]
pub mod import;
#[path = "../../src/datasets/layout.rs"]
pub mod layout;
#[path = "../../src/datasets/model.rs"]
mod model;

pub use error::DatasetError;
pub use model::{Conversation, ConversationMeta};
