//! Images (and PDFs) in a history, counted as the agent's provider bills them.
//!
//! An image stays in the canonical history as a Gemini `inlineData` part (`{"inlineData": {"mimeType":
//! "image/png", "data": "<base64>"}}`): in a user turn among its text parts, in a tool result right after
//! the `functionResponse` part (as Gemini CLI sends them). A provider does not bill the base64 as text: it
//! bills the image by its size in pixels, by a rule of its own. Every request size of the replay (the o200k
//! path, a model's tokenizer, the `token_scale` calibration) counts an image part as its
//! [`ImageBilling`] rule gives, read from the image's header; never as the JSON of its base64, and never
//! scaled by `token_scale` (the provider's own count, not o200k's).
//!
//! The rules, each from its provider's documentation (checked 2026-11-27):
//!
//! - **Anthropic** (Claude Code), <https://docs.anthropic.com/en/docs/build-with-claude/vision> ("Calculate
//!   image costs"): `tokens = (width px × height px) / 750`, after an image whose long edge is over 1568 px
//!   or whose size is over about 1.15 megapixels (~1,600 tokens) is scaled down, aspect ratio kept. The
//!   cap used here is 1.15 MP (1,534 tokens), between the docs' ~1,600 and the 1,558–1,561 tokens a
//!   third-party measurement with `count_tokens` found for large images on Claude Opus 4.6. The newer
//!   page (platform.claude.com) describes Opus 4.7+ as billing 28×28-px patches up to a 2576-px long edge;
//!   the recorded sessions run Opus 4.6 and earlier, so that rule is not modelled.
//! - **OpenAI** (Codex), <https://platform.openai.com/docs/guides/images-vision#calculating-costs>
//!   (`detail: "high"`, which `auto` and an absent detail mean for these models): fit in 2048×2048, then
//!   scale down so the short side is 768 px, then count 512-px tiles; `base + tiles × per_tile`, with the
//!   table's GPT-5 figures (70 + 140 a tile; GPT-4o's are 85 + 170), since Codex runs GPT-5-family models.
//!   The patch rule of the `-mini`/`-nano` models and `detail: "original"` are not modelled.
//! - **Gemini** (Gemini CLI and the other formats), <https://ai.google.dev/gemini-api/docs/tokens>
//!   (Gemini 2.x): 258 tokens when both sides are at most 384 px, else 258 for each 768×768 tile.
//!
//! An image whose size cannot be read from its header (PNG, JPEG, GIF, WebP, read with `imagesize` from
//! the decoded head of the base64) counts as [`ImageBilling::unreadable_image_tokens`], the most the
//! provider bills for one image (Gemini documents no maximum: 4 tiles); importers warn about such images.
//! A PDF (`application/pdf`) counts as its pages (`/Type /Page` objects, at least 1) times
//! [`ImageBilling::pdf_page_tokens`]: Gemini's documented 258 a page, or one page image at the
//! unreadable-image figure for the others (an estimate: they bill a page's text and its image, and
//! the text is not extracted here). Other inline media count as one unreadable image.
//!
//! The reference's own heuristic (`tokens::estimate`, `IMAGE_TOKEN_ESTIMATE` 3000 an image) is Gemini
//! CLI's estimator as specified and stays as it is.

use crate::history::{self, Content};
use crate::json::Value;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

/// Whose rule counts an image: the provider the agent's requests went to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ImageBilling {
    /// Anthropic (Claude Code).
    Anthropic,
    /// OpenAI (Codex).
    OpenAi,
    /// Gemini (Gemini CLI; the canonical history's own format, and the rule for every format that records
    /// no provider of its own).
    #[default]
    Gemini,
}

crate::named_variants!(ImageBilling, "image billing", {
    Anthropic => "anthropic",
    OpenAi => "openai",
    Gemini => "gemini",
});

/// Anthropic: pixels per token.
pub const ANTHROPIC_PIXELS_PER_TOKEN: f64 = 750.0;
/// Anthropic: the long edge an image is scaled down to fit.
pub const ANTHROPIC_MAX_EDGE: f64 = 1568.0;
/// Anthropic: the size in pixels an image is scaled down to fit (about 1.15 megapixels).
pub const ANTHROPIC_MAX_PIXELS: f64 = 1_150_000.0;
/// OpenAI: the square an image is first fitted in, the short side it is then scaled down to, the tile.
pub const OPENAI_FIT: f64 = 2048.0;
pub const OPENAI_SHORT_SIDE: f64 = 768.0;
pub const OPENAI_TILE: f64 = 512.0;
/// OpenAI, GPT-5 family: tokens of every image, and of each tile.
pub const OPENAI_BASE_TOKENS: u64 = 70;
pub const OPENAI_TILE_TOKENS: u64 = 140;
/// Gemini: tokens of a small image or of one tile; the small image's largest side; the tile.
pub const GEMINI_TILE_TOKENS: u64 = 258;
pub const GEMINI_SMALL_SIDE: u32 = 384;
pub const GEMINI_TILE: u32 = 768;

impl ImageBilling {
    /// The rule of a conversation's source format (`meta.format`): Claude Code → Anthropic, Codex → OpenAI,
    /// Gemini CLI sessions and every other format → Gemini (none of the others imports images today).
    pub fn of_format(format: &str) -> Self {
        match format {
            "claude-code" => ImageBilling::Anthropic,
            "codex" => ImageBilling::OpenAi,
            _ => ImageBilling::Gemini,
        }
    }

    /// The provider's name as pages show it.
    pub fn provider(self) -> &'static str {
        match self {
            ImageBilling::Anthropic => "Anthropic",
            ImageBilling::OpenAi => "OpenAI",
            ImageBilling::Gemini => "Gemini",
        }
    }

    /// Tokens of a `width` × `height` image.
    pub fn image_tokens(self, width: u32, height: u32) -> u64 {
        match self {
            ImageBilling::Anthropic => anthropic_image_tokens(width, height),
            ImageBilling::OpenAi => openai_image_tokens(width, height, OPENAI_BASE_TOKENS, OPENAI_TILE_TOKENS),
            ImageBilling::Gemini => gemini_image_tokens(width, height),
        }
    }

    /// Tokens of an image whose size cannot be read: the most the provider bills for one image (Anthropic
    /// 1,534: the size cap; OpenAI 1,190: 8 tiles, a 2048×768 image; Gemini, which documents no maximum,
    /// 1,032: 4 tiles, a 1536×1536 image).
    pub fn unreadable_image_tokens(self) -> u64 {
        match self {
            ImageBilling::Anthropic => (ANTHROPIC_MAX_PIXELS / ANTHROPIC_PIXELS_PER_TOKEN).ceil() as u64,
            ImageBilling::OpenAi => OPENAI_BASE_TOKENS + 8 * OPENAI_TILE_TOKENS,
            ImageBilling::Gemini => 4 * GEMINI_TILE_TOKENS,
        }
    }

    /// Tokens of one PDF page: Gemini's documented 258; for the others one page image at
    /// [`unreadable_image_tokens`](Self::unreadable_image_tokens) (an estimate).
    pub fn pdf_page_tokens(self) -> u64 {
        match self {
            ImageBilling::Gemini => GEMINI_TILE_TOKENS,
            other => other.unreadable_image_tokens(),
        }
    }

    /// Tokens of one inline medium.
    pub fn media_tokens(self, media: &Media) -> u64 {
        match media.kind {
            MediaKind::Image(Some((w, h))) => self.image_tokens(w, h),
            MediaKind::Image(None) | MediaKind::Other => self.unreadable_image_tokens(),
            MediaKind::Pdf(pages) => u64::from(pages.unwrap_or(1).max(1)) * self.pdf_page_tokens(),
        }
    }
}

/// Anthropic: `ceil(w × h / 750)` after scaling down (aspect ratio kept) to a 1568-px long edge and
/// 1.15 megapixels.
pub fn anthropic_image_tokens(width: u32, height: u32) -> u64 {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let area = w * h;
    let scale = 1f64.min(ANTHROPIC_MAX_EDGE / w.max(h)).min((ANTHROPIC_MAX_PIXELS / area).sqrt());
    (area * scale * scale / ANTHROPIC_PIXELS_PER_TOKEN - 1e-9).ceil().max(1.0) as u64
}

/// OpenAI's tile rule (`detail: "high"`): fit in 2048×2048, scale down to a 768-px short side (whole
/// pixels, as the documentation's examples), then `base + ⌈w/512⌉ × ⌈h/512⌉ × per_tile`.
pub fn openai_image_tokens(width: u32, height: u32, base: u64, per_tile: u64) -> u64 {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    if w.max(h) > OPENAI_FIT {
        let s = OPENAI_FIT / w.max(h);
        (w, h) = ((w * s).floor().max(1.0), (h * s).floor().max(1.0));
    }
    if w.min(h) > OPENAI_SHORT_SIDE {
        let s = OPENAI_SHORT_SIDE / w.min(h);
        (w, h) = ((w * s).floor().max(1.0), (h * s).floor().max(1.0));
    }
    let tiles = (w / OPENAI_TILE).ceil() * (h / OPENAI_TILE).ceil();
    base + tiles as u64 * per_tile
}

/// Gemini: 258 when both sides are at most 384 px, else 258 for each 768×768 tile.
pub fn gemini_image_tokens(width: u32, height: u32) -> u64 {
    if width <= GEMINI_SMALL_SIDE && height <= GEMINI_SMALL_SIDE {
        return GEMINI_TILE_TOKENS;
    }
    let tiles = u64::from(width.max(1).div_ceil(GEMINI_TILE)) * u64::from(height.max(1).div_ceil(GEMINI_TILE));
    tiles * GEMINI_TILE_TOKENS
}

/// What an inline medium is, as far as billing goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaKind {
    /// An image (`image/*`), with its width and height when its header could be read.
    Image(Option<(u32, u32)>),
    /// A PDF, with its page count when any page object was found.
    Pdf(Option<u32>),
    /// Any other inline data (audio, …).
    Other,
}

/// One `inlineData` part's medium: its MIME type and what billing needs of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Media {
    pub mime: String,
    pub kind: MediaKind,
}

impl Media {
    /// The format as a short name: `png` of `image/png`.
    pub fn format(&self) -> &str {
        self.mime.rsplit('/').next().unwrap_or(&self.mime)
    }

    /// What the medium is, without its cost: `[image 1280×720 png]`, `[pdf, 3 page(s)]` (what a summarizer's
    /// prompt shows instead of the base64).
    pub fn label(&self) -> String {
        match self.kind {
            MediaKind::Image(Some((w, h))) => format!("[image {w}×{h} {}]", self.format()),
            MediaKind::Image(None) => format!("[image {}]", self.format()),
            MediaKind::Pdf(pages) => format!("[pdf, {} page(s)]", pages.unwrap_or(1).max(1)),
            MediaKind::Other => format!("[{}]", self.mime),
        }
    }

    /// How a page shows the part instead of its base64, e.g. `[image 1280×720 png, 1,229 tokens
    /// (Anthropic)]`.
    pub fn describe(&self, billing: ImageBilling) -> String {
        let tokens = thousands(billing.media_tokens(self));
        let provider = billing.provider();
        match self.kind {
            MediaKind::Image(Some((w, h))) => {
                format!("[image {w}×{h} {}, {tokens} tokens ({provider})]", self.format())
            }
            MediaKind::Image(None) => {
                format!("[image {}, size unreadable, {tokens} tokens ({provider}, its maximum)]", self.format())
            }
            MediaKind::Pdf(pages) => {
                format!("[pdf, {} page(s), {tokens} tokens ({provider}, estimated)]", pages.unwrap_or(1).max(1))
            }
            MediaKind::Other => format!("[{}, {tokens} tokens ({provider}, as an image)]", self.mime),
        }
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Whether a part is an `inlineData` part (an image, a PDF, other media).
pub fn is_media_part(p: &Value) -> bool {
    p.get("inlineData").is_some_and(|d| d.as_object().is_some())
}

/// The medium of an `inlineData` part; `None` for every other part.
pub fn media_of(p: &Value) -> Option<Media> {
    let d = p.get("inlineData").filter(|d| d.as_object().is_some())?;
    let mime = d.get("mimeType").and_then(Value::as_str).unwrap_or("").trim().to_ascii_lowercase();
    let data = d.get("data").and_then(Value::as_str).unwrap_or("");
    let kind = if mime.starts_with("image/") {
        MediaKind::Image(image_size(data))
    } else if mime == "application/pdf" {
        MediaKind::Pdf(pdf_pages(data))
    } else {
        MediaKind::Other
    };
    Some(Media { mime, kind })
}

/// The media parts of a part: itself, or the parts nested in a `functionResponse.parts` (newer Gemini CLI
/// versions put a tool's images there).
fn media_in<'a>(p: &'a Value, out: &mut Vec<&'a Value>) {
    if is_media_part(p) {
        out.push(p);
    } else if let Some(nested) = history::function_response(p).and_then(|fr| fr.get("parts")).and_then(Value::as_array)
    {
        nested.iter().for_each(|n| media_in(n, out));
    }
}

/// Every medium of a Content, nested ones included, in order.
pub fn content_media(c: &Content) -> Vec<Media> {
    let mut parts = Vec::new();
    history::parts(c).iter().for_each(|p| media_in(p, &mut parts));
    parts.into_iter().filter_map(media_of).collect()
}

/// Whether a Content holds any medium (nested ones included).
pub fn has_media(c: &Content) -> bool {
    history::parts(c).iter().any(|p| {
        let mut found = Vec::new();
        media_in(p, &mut found);
        !found.is_empty()
    })
}

/// The tokens the provider bills for the media of a Content.
pub fn content_media_tokens(c: &Content, billing: ImageBilling) -> u64 {
    if !has_media(c) {
        return 0;
    }
    content_media(c).iter().map(|m| billing.media_tokens(m)).sum()
}

/// The Content without its media (nested ones included): what a text tokenizer reads of it. `None` when
/// it holds none (the Content is then read as it is).
pub fn without_media(c: &Content) -> Option<Content> {
    if !has_media(c) {
        return None;
    }
    let mut out = c.clone();
    if let Some(parts) = out.get_mut("parts").and_then(Value::as_array_mut) {
        parts.retain(|p| !is_media_part(p));
        for p in parts.iter_mut() {
            strip_nested(p);
        }
    }
    Some(out)
}

fn strip_nested(p: &mut Value) {
    let Some(fr) = p.get_mut("functionResponse") else { return };
    if let Some(nested) = fr.get_mut("parts").and_then(Value::as_array_mut) {
        nested.retain(|n| !is_media_part(n));
        nested.iter_mut().for_each(strip_nested);
    }
}

/// The Content with each medium replaced by a text part describing it ([`Media::describe`] with the cost
/// `billing` gives, else [`Media::label`]): what a text summarizer's prompt or a page shows instead of
/// base64. `None` when it holds none.
pub fn with_media_described(c: &Content, billing: Option<ImageBilling>) -> Option<Content> {
    if !has_media(c) {
        return None;
    }
    let mut out = c.clone();
    if let Some(parts) = out.get_mut("parts").and_then(Value::as_array_mut) {
        describe_all(parts, billing);
    }
    Some(out)
}

fn describe_all(parts: &mut [Value], billing: Option<ImageBilling>) {
    for p in parts.iter_mut() {
        if let Some(m) = media_of(p) {
            *p = history::text_part(&billing.map_or_else(|| m.label(), |b| m.describe(b)));
        } else if let Some(nested) =
            p.get_mut("functionResponse").and_then(|fr| fr.get_mut("parts")).and_then(Value::as_array_mut)
        {
            describe_all(nested, billing);
        }
    }
}

/// Base64 as recordings write it: the standard alphabet, padding or not.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes the first `chars` characters of `data` (a multiple of 4, so a prefix decodes alone); the whole
/// of it when it is shorter. URL-safe base64 and line breaks are tolerated.
fn decode_head(data: &str, chars: usize) -> Option<Vec<u8>> {
    let data = data.trim().as_bytes();
    let cut = |b: &[u8]| -> usize {
        if b.len() > chars {
            chars / 4 * 4
        } else {
            b.len()
        }
    };
    BASE64.decode(&data[..cut(data)]).ok().or_else(|| {
        let clean: Vec<u8> = data
            .iter()
            .filter(|c| !c.is_ascii_whitespace())
            .map(|&c| match c {
                b'-' => b'+',
                b'_' => b'/',
                c => c,
            })
            .collect();
        BASE64.decode(&clean[..cut(&clean)]).ok()
    })
}

/// Width and height from an image's header: the decoded head of its base64 first (a PNG's, GIF's and
/// WebP's size is in its first 30 bytes; a JPEG's after its metadata segments), more of it when that is
/// not enough. `None` when the data is not a readable PNG, JPEG, GIF or WebP.
pub fn image_size(data: &str) -> Option<(u32, u32)> {
    for chars in [4 * 1024, 256 * 1024, usize::MAX] {
        if let Some(bytes) = decode_head(data, chars) {
            if let Ok(s) = imagesize::blob_size(&bytes) {
                let (w, h) = (u32::try_from(s.width).ok()?, u32::try_from(s.height).ok()?);
                return (w > 0 && h > 0).then_some((w, h));
            }
        }
        if data.len() <= chars {
            break;
        }
    }
    None
}

/// The page objects of a PDF (`/Type /Page`, not `/Pages`); `None` when none is found.
fn pdf_pages(data: &str) -> Option<u32> {
    let bytes = decode_head(data, usize::MAX)?;
    let mut pages = 0u32;
    let mut i = 0;
    while let Some(at) = find(&bytes[i..], b"/Type") {
        let mut j = i + at + 5;
        while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if bytes[j..].starts_with(b"/Page") && !bytes[j + 5..].starts_with(b"s") {
            pages += 1;
        }
        i = j;
    }
    (pages > 0).then_some(pages)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first bytes of a PNG of `w` × `h`: signature and IHDR, all a header reader needs.
    pub(crate) fn png_header(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    fn inline(mime: &str, bytes: &[u8]) -> Value {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        Value::object([("inlineData", Value::object([("mimeType", Value::str(mime)), ("data", Value::str(&data))]))])
    }

    /// The rules at the documentation's own examples and at their edges.
    #[test]
    fn each_rule_at_its_documented_examples_and_edges() {
        // Anthropic: 1000×1000 ≈ 1334 and 200×200 ≈ 54 (the docs' table); 1280×720 = 921,600 / 750.
        assert_eq!(anthropic_image_tokens(1000, 1000), 1334);
        assert_eq!(anthropic_image_tokens(200, 200), 54);
        assert_eq!(anthropic_image_tokens(1280, 720), 1229);
        // Over 1.15 MP: capped; over a 1568-px edge and thin: the edge binds (1568 × 522.67 / 750).
        assert_eq!(anthropic_image_tokens(4000, 3000), 1534);
        assert_eq!(anthropic_image_tokens(3000, 1000), 1093);
        assert_eq!(anthropic_image_tokens(1, 1), 1);
        // OpenAI, GPT-4o figures (the docs' examples: 765 and 1105); GPT-5's (70 + 140 a tile).
        assert_eq!(openai_image_tokens(1024, 1024, 85, 170), 765);
        assert_eq!(openai_image_tokens(2048, 4096, 85, 170), 1105);
        assert_eq!(ImageBilling::OpenAi.image_tokens(1024, 1024), 70 + 4 * 140);
        assert_eq!(ImageBilling::OpenAi.image_tokens(512, 512), 70 + 140);
        assert_eq!(ImageBilling::OpenAi.image_tokens(513, 512), 70 + 2 * 140);
        // 1280×720: short side 720 ≤ 768, so 3 × 2 tiles.
        assert_eq!(ImageBilling::OpenAi.image_tokens(1280, 720), 70 + 6 * 140);
        assert_eq!(ImageBilling::OpenAi.image_tokens(20_000, 20_000), 70 + 4 * 140);
        // Gemini: both sides ≤ 384 → 258; else 768-px tiles.
        assert_eq!(gemini_image_tokens(384, 384), 258);
        assert_eq!(gemini_image_tokens(385, 10), 258);
        assert_eq!(gemini_image_tokens(769, 768), 2 * 258);
        assert_eq!(gemini_image_tokens(1280, 720), 2 * 258);
        // The unreadable figure is each provider's most for one image.
        assert_eq!(ImageBilling::Anthropic.unreadable_image_tokens(), anthropic_image_tokens(9000, 9000));
        assert_eq!(ImageBilling::OpenAi.unreadable_image_tokens(), ImageBilling::OpenAi.image_tokens(2048, 768));
        assert_eq!(ImageBilling::Gemini.unreadable_image_tokens(), 1032);
    }

    proptest! {
        /// Tokens never fall as an image grows with its aspect ratio kept, never exceed the provider's
        /// maximum (Anthropic, OpenAI), and are never 0.
        #[test]
        fn tokens_grow_with_the_image_and_are_capped(w in 1u32..6000, h in 1u32..6000, k in 1u32..4) {
            for b in ImageBilling::ALL {
                let small = b.image_tokens(w, h);
                let large = b.image_tokens(w * k, h * k);
                prop_assert!(small >= 1 && small <= large, "{b}: {w}×{h} {small}, ×{k} {large}");
                if *b != ImageBilling::Gemini {
                    prop_assert!(large <= b.unreadable_image_tokens(), "{b}: {large}");
                }
            }
            // Within Anthropic's limits the count is the area over 750, rounded up.
            if w.max(h) <= 1000 && u64::from(w) * u64::from(h) <= 1_000_000 {
                prop_assert_eq!(anthropic_image_tokens(w, h), (u64::from(w) * u64::from(h)).div_ceil(750));
            }
        }
    }

    /// Sizes come from the headers of each format; a part whose header is unreadable counts as the
    /// provider's maximum; a PDF by its pages.
    #[test]
    fn media_are_read_from_their_headers() {
        let png = inline("image/png", &png_header(1280, 720));
        let m = media_of(&png).unwrap();
        assert_eq!(m.kind, MediaKind::Image(Some((1280, 720))));
        assert_eq!(m.describe(ImageBilling::Anthropic), "[image 1280×720 png, 1,229 tokens (Anthropic)]");
        let gif = inline("image/gif", b"GIF89a\x40\x01\xf0\x00\0\0\0");
        assert_eq!(media_of(&gif).unwrap().kind, MediaKind::Image(Some((320, 240))));
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        webp.extend([0x1f, 0x03, 0x00, 0xdf, 0x01, 0x00]); // 800×480, stored minus one
        assert_eq!(media_of(&inline("image/webp", &webp)).unwrap().kind, MediaKind::Image(Some((800, 480))));
        // A JPEG whose size comes after a large metadata segment: more of the base64 is decoded.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe1, 0xff, 0xf0];
        jpeg.extend(std::iter::repeat_n(0u8, 0xfff0 - 2));
        jpeg.extend([0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0xd0, 0x05, 0x00, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        assert_eq!(media_of(&inline("image/jpeg", &jpeg)).unwrap().kind, MediaKind::Image(Some((1280, 720))));
        let broken = inline("image/png", b"not a png at all");
        let m = media_of(&broken).unwrap();
        assert_eq!(m.kind, MediaKind::Image(None));
        assert_eq!(ImageBilling::OpenAi.media_tokens(&m), 1190);
        let garbage = Value::object([("inlineData", Value::object([("mimeType", Value::str("image/png"))]))]);
        assert_eq!(ImageBilling::Gemini.media_tokens(&media_of(&garbage).unwrap()), 1032);
        let pdf =
            inline("application/pdf", b"%PDF-1.4 1 0 obj <</Type /Pages>> 2 0 obj <</Type /Page>> <</Type/Page>>");
        assert_eq!(media_of(&pdf).unwrap().kind, MediaKind::Pdf(Some(2)));
        assert_eq!(ImageBilling::Gemini.media_tokens(&media_of(&pdf).unwrap()), 516);
        assert!(media_of(&history::text_part("x")).is_none());
    }

    /// A tool result's image after its functionResponse, and one nested in `functionResponse.parts`: both
    /// are counted, both are stripped for a text tokenizer, both are described for a page.
    #[test]
    fn media_of_a_content_nested_or_not() {
        let img = inline("image/png", &png_header(512, 320));
        let fr = Value::object([(
            "functionResponse",
            Value::object([
                ("name", Value::str("Read")),
                ("response", Value::object([("output", Value::str("ok"))])),
                ("parts", Value::Array(vec![img.clone()])),
            ]),
        )]);
        let c = Value::object([("role", Value::str("user")), ("parts", Value::Array(vec![fr, img]))]);
        assert_eq!(content_media(&c).len(), 2);
        assert_eq!(content_media_tokens(&c, ImageBilling::Anthropic), 2 * 219);
        let text = crate::json::to_string(&without_media(&c).unwrap());
        assert!(!text.contains("inlineData") && text.contains("\"ok\""), "{text}");
        let shown = crate::json::to_string(&with_media_described(&c, Some(ImageBilling::Gemini)).unwrap());
        assert!(shown.contains("[image 512×320 png, 258 tokens (Gemini)]") && !shown.contains("iVBOR"), "{shown}");
        let labelled = crate::json::to_string(&with_media_described(&c, None).unwrap());
        assert!(labelled.contains("[image 512×320 png]") && !labelled.contains("iVBOR"), "{labelled}");
        let plain = history::user_text("no images");
        assert!(without_media(&plain).is_none() && content_media_tokens(&plain, ImageBilling::OpenAi) == 0);
    }
}
