#![no_main]
//! Arbitrary bytes through format detection and then the detected importer.

use compactbench_datasets::import::import_bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = import_bytes(data, "fuzz-input.jsonl", None);
});
