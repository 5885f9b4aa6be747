//! The page itself: the template with the style and script inlined, and the data as gzip + base64 blocks
//! the script decodes with the browser's own `DecompressionStream`. Nothing is fetched: a Content Security
//! Policy allows only the inlined script and style (by hash) and images from `data:` URLs, so the page
//! works from disk, offline, and a string that slipped past escaping still could not load or run anything.
//! A base64 block holds only `[A-Za-z0-9+/=]`, so no data can close its `<script>` element.

use super::payload::{ConversationChunk, Index};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::io::Write as _;

/// The page's template, style and script (`harness/assets/view/`).
pub const TEMPLATE: &str = include_str!("../../assets/view/view.html");
pub const STYLE: &str = include_str!("../../assets/view/view.css");
pub const SCRIPT: &str = include_str!("../../assets/view/view.js");

/// `'sha256-…'` of an inline element's text, for the Content Security Policy.
fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes())))
}

/// JSON, gzipped, base64: the form every data block has in the page.
fn packed<T: serde::Serialize>(value: &T) -> Result<String, std::io::Error> {
    let json = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    // A gzip header without a timestamp (flate2 writes mtime 0): the same data gives the same bytes.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(gz.finish()?))
}

/// One data block.
fn block(id: &str, data: &str) -> String {
    format!("<script type=\"application/gzip+base64\" id=\"{id}\">{data}</script>\n")
}

/// The whole page.
pub fn page(index: &Index, chunks: &[(String, ConversationChunk)]) -> Result<String, std::io::Error> {
    let mut data = block("data-index", &packed(index)?);
    for (id, chunk) in chunks {
        data.push_str(&block(&format!("data-{id}"), &packed(chunk)?));
    }
    let page = TEMPLATE
        .replacen("{{SCRIPT_HASH}}", &csp_hash(SCRIPT), 1)
        .replacen("{{STYLE_HASH}}", &csp_hash(STYLE), 1)
        .replacen("{{STYLE}}", STYLE, 1)
        .replacen("{{DATA}}", &data, 1)
        .replacen("{{SCRIPT}}", SCRIPT, 1);
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assets_cannot_end_their_elements_early_and_the_template_has_every_slot() {
        for (name, text) in [("style", STYLE), ("script", SCRIPT)] {
            let lower = text.to_ascii_lowercase();
            assert!(!lower.contains("</script") && !lower.contains("</style"), "{name} closes its element");
            assert!(!text.contains("{{"), "{name} holds a template slot");
        }
        // The script builds the page from nodes and text only: nothing parses a string as markup or code.
        for parser in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            assert!(!SCRIPT.contains(parser), "the script uses {parser}");
        }
        for slot in ["{{SCRIPT_HASH}}", "{{STYLE_HASH}}", "{{STYLE}}", "{{DATA}}", "{{SCRIPT}}"] {
            assert_eq!(TEMPLATE.matches(slot).count(), 1, "{slot}");
        }
    }

    #[test]
    fn data_blocks_are_base64_only_and_round_trip() {
        let value = serde_json::json!({"text": "</script><script>alert(1)</script>"});
        let b64 = packed(&value).unwrap();
        assert!(b64.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)));
        let gz = base64::engine::general_purpose::STANDARD.decode(&b64).unwrap();
        let mut json = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut json).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&json).unwrap(), value);
        assert_eq!(packed(&value).unwrap(), b64, "the same data packs to the same bytes");
    }
}
