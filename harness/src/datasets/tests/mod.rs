//! Dataset tests.
