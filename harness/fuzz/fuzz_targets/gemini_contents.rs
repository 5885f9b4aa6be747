#![no_main]
//! Arbitrary bytes into the gemini_contents importer: it must return Ok or an error naming the file, never panic.

use compactbench_datasets::import::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = Format::GeminiContents.parse(data, "fuzz-input") {
        assert!(e.to_string().starts_with("fuzz-input"));
    }
});
