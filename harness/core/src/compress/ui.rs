//! The reference's user-facing texts (`packages/cli/src/ui/commands/compressCommand.ts`, `CompressionMessage.tsx`),
//! verbatim.

use super::CompressionStatus;

pub const PENDING: &str = "Compressing chat history";
pub const ALREADY_COMPRESSING: &str = "Already compressing, wait for previous request to complete";
pub const FAILED: &str = "Failed to compress chat history.";

pub fn failed_with(message: &str) -> String {
    format!("Failed to compress chat history: {message}")
}

/// The `/compress` result line for a status.
pub fn compress_result(status: CompressionStatus, original: u64, new: u64) -> String {
    match status {
        CompressionStatus::Compressed => format!("Chat history compressed from {original} to {new} tokens."),
        CompressionStatus::FailedInflatedTokenCount if original < 50_000 => {
            "Compression was not beneficial for this history size.".into()
        }
        CompressionStatus::FailedInflatedTokenCount => {
            "Chat history compression did not reduce size. This may indicate issues with the compression prompt.".into()
        }
        CompressionStatus::FailedTokenCountError => {
            "Could not compress chat history due to a token counting error.".into()
        }
        CompressionStatus::FailedEmptySummary => {
            "Chat history compression failed: the model returned an empty summary.".into()
        }
        CompressionStatus::Noop => "Nothing to compress.".into(),
        CompressionStatus::ContentTruncated => String::new(),
    }
}

/// The automatic compression info line and its secondary text.
pub fn auto_compressed(original: u64, new: u64, token_limit: u64) -> (String, &'static str) {
    let pct = |n: u64| (n as f64 / token_limit as f64 * 100.0).round() as i64;
    (format!("Context compressed from {}% to {}%.", pct(original), pct(new)), "Change threshold in /settings.")
}

/// The context-window overflow warning.
pub fn overflow_warning(estimated: u64, remaining: i64, token_limit: u64) -> String {
    let mut s = format!(
        "Sending this message ({estimated} tokens) might exceed the context window limit ({} tokens left).",
        super::truncate::en_us_grouping(remaining)
    );
    if (remaining as f64) < 0.75 * token_limit as f64 {
        s.push_str(" Please try reducing the size of your message or use the `/compress` command to compress the chat history.");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use CompressionStatus::*;

    #[test]
    fn upstream_message_cases() {
        for (o, n) in [(100, 50), (50000, 25000), (700000, 350000), (200, 80), (500, 150), (1500, 400)] {
            assert_eq!(compress_result(Compressed, o, n), format!("Chat history compressed from {o} to {n} tokens."));
        }
        for (o, n) in [(50, 75), (50, 50), (50, 60), (100, 100), (49999, 50000)] {
            assert_eq!(
                compress_result(FailedInflatedTokenCount, o, n),
                "Compression was not beneficial for this history size."
            );
        }
        for (o, n) in [(50000, 50100), (700000, 710000), (100000, 100000)] {
            assert!(compress_result(FailedInflatedTokenCount, o, n).contains("compression did not reduce size"));
        }
        assert_eq!(
            compress_result(FailedEmptySummary, 1, 1),
            "Chat history compression failed: the model returned an empty summary."
        );
        assert_eq!(
            compress_result(FailedTokenCountError, 1, 1),
            "Could not compress chat history due to a token counting error."
        );
        assert_eq!(compress_result(Noop, 0, 0), "Nothing to compress.");
        assert_eq!(auto_compressed(524288, 104858, 1048576).0, "Context compressed from 50% to 10%.");
        assert!(overflow_warning(101, 100, 1000).ends_with("compress the chat history."));
        assert_eq!(
            overflow_warning(101, 1_000_000, 1_048_576),
            "Sending this message (101 tokens) might exceed the context window limit (1,000,000 tokens left)."
        );
    }
}
