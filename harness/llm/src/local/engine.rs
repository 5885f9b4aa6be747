//! The embedded model's engine: GGUF weights, a tokenizer rebuilt from GGUF metadata, greedy decoding.
//! One worker thread owns the (non-shareable, KV-cached) model; requests reach it through a channel, and a
//! dropped request (timeout, cancelled run) raises a flag the decoding loop checks between tokens.

use super::prompt::{chat_messages, ChatTemplate};
use super::DEFAULT_MAX_NEW_TOKENS;
use crate::{LlmError, LlmRequest, LlmResponse, Usage};
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::{ModelWeights, MAX_SEQ_LEN};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Instant;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, Tokenizer};

/// Prompt tokens fed per forward pass: bounds the attention scratch memory on long prompts.
const PREFILL_CHUNK: usize = 256;

enum Job {
    Generate {
        req: LlmRequest,
        cancel: Arc<AtomicBool>,
        reply: tokio::sync::oneshot::Sender<Result<LlmResponse, LlmError>>,
    },
    Count {
        req: LlmRequest,
        reply: tokio::sync::oneshot::Sender<Result<u64, LlmError>>,
    },
}

/// A handle on the worker thread that owns one loaded model.
pub struct EngineHandle {
    jobs: Mutex<mpsc::Sender<Job>>,
    context: usize,
}

/// Sets the cancel flag when the waiting future is dropped, so the worker stops decoding for nobody.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl EngineHandle {
    pub fn context_tokens(&self) -> usize {
        self.context
    }

    fn send(&self, job: Job) -> Result<(), LlmError> {
        self.jobs
            .lock()
            .expect("engine queue lock")
            .send(job)
            .map_err(|_| LlmError::Other("the embedded model's worker thread has stopped".into()))
    }

    pub async fn generate(&self, req: LlmRequest) -> Result<LlmResponse, LlmError> {
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(Arc::clone(&cancel));
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Job::Generate { req, cancel, reply })?;
        answer.await.map_err(|_| LlmError::Other("the embedded model's worker dropped the request".into()))?
    }

    pub async fn count_prompt_tokens(&self, req: LlmRequest) -> Result<u64, LlmError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Job::Count { req, reply })?;
        answer.await.map_err(|_| LlmError::Other("the embedded model's worker dropped the request".into()))?
    }
}

static ENGINES: OnceLock<Mutex<HashMap<PathBuf, Arc<EngineHandle>>>> = OnceLock::new();

/// The process-wide engine for a model file, loaded on first use.
pub fn shared_engine(path: &Path, threads: Option<usize>) -> Result<Arc<EngineHandle>, LlmError> {
    let mut engines = ENGINES.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner());
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if let Some(e) = engines.get(&key) {
        return Ok(Arc::clone(e));
    }
    if let Some(n) = threads {
        set_thread_count(n);
    }
    let engine = Engine::load(&key)?;
    let context = engine.context;
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("compactbench-local-model".into())
        .spawn(move || worker(engine, rx))
        .map_err(|e| LlmError::Other(format!("cannot start the embedded model's worker: {e}")))?;
    let handle = Arc::new(EngineHandle { jobs: Mutex::new(tx), context });
    engines.insert(key, Arc::clone(&handle));
    Ok(handle)
}

/// candle sizes its thread pools from these variables when it first computes, so they must be set before
/// the first model loads; an explicit user setting in the environment wins.
fn set_thread_count(n: usize) {
    for var in ["CANDLE_NUM_THREADS", "RAYON_NUM_THREADS"] {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, n.max(1).to_string());
        }
    }
}

fn worker(mut engine: Engine, jobs: mpsc::Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Generate { req, cancel, reply } => {
                if cancel.load(Ordering::Relaxed) {
                    continue;
                }
                let _ = reply.send(engine.generate(&req, &cancel));
            }
            Job::Count { req, reply } => {
                let _ = reply.send(engine.prompt_tokens(&req).map(|t| t.len() as u64));
            }
        }
    }
}

fn model_err(what: &str) -> impl Fn(candle_core::Error) -> LlmError + '_ {
    move |e| LlmError::Other(format!("embedded model: {what}: {e}"))
}

struct Engine {
    weights: ModelWeights,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    /// Token ids that end generation (`<|im_end|>`, `<|endoftext|>`).
    stop_ids: Vec<u32>,
    context: usize,
}

fn md_string_array(ct: &gguf_file::Content, key: &str) -> Result<Vec<String>, LlmError> {
    let err = |m: String| LlmError::Config(format!("GGUF metadata `{key}`: {m}"));
    let v = ct.metadata.get(key).ok_or_else(|| err("missing".into()))?;
    let items = v.to_vec().map_err(|e| err(e.to_string()))?;
    items.iter().map(|i| i.to_string().cloned().map_err(|e| err(e.to_string()))).collect()
}

fn md_u32(ct: &gguf_file::Content, key: &str) -> Option<u32> {
    ct.metadata.get(key).and_then(|v| v.to_u32().ok())
}

/// The GPT-2-style byte-level BPE described by the GGUF (`tokenizer.ggml.*`), with control tokens (type 3)
/// registered as special so the chat template's markers encode to single ids.
fn tokenizer_from_gguf(ct: &gguf_file::Content) -> Result<Tokenizer, LlmError> {
    let kind = ct.metadata.get("tokenizer.ggml.model").and_then(|v| v.to_string().ok()).cloned();
    if kind.as_deref() != Some("gpt2") {
        return Err(LlmError::Config(format!("unsupported GGUF tokenizer {kind:?} (expected gpt2 byte-level BPE)")));
    }
    let tokens = md_string_array(ct, "tokenizer.ggml.tokens")?;
    let merges = md_string_array(ct, "tokenizer.ggml.merges")?
        .into_iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| LlmError::Config(format!("bad BPE merge `{m}`")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let vocab: tokenizers::models::bpe::Vocab = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the BPE tokenizer: {e}")))?;
    let mut tokenizer = Tokenizer::new(bpe);
    // SmolLM2's tokenizer splits digits one by one before the GPT-2 byte-level split.
    let pre = Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ]);
    tokenizer.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(pre)));
    tokenizer.with_decoder(Some(tokenizers::decoders::byte_level::ByteLevel::default()));
    let types: Vec<u32> = ct
        .metadata
        .get("tokenizer.ggml.token_type")
        .and_then(|v| v.to_vec().ok())
        .map(|v| v.iter().map(|t| t.to_i32().map(|x| x as u32).or_else(|_| t.to_u32()).unwrap_or(1)).collect())
        .unwrap_or_default();
    let specials: Vec<AddedToken> = tokens
        .iter()
        .enumerate()
        .filter(|(i, t)| types.get(*i) == Some(&3) || (t.starts_with("<|") && t.ends_with("|>")))
        .map(|(_, t)| AddedToken::from(t.clone(), true))
        .collect();
    tokenizer.add_special_tokens(specials).map_err(|e| LlmError::Config(format!("GGUF special tokens: {e}")))?;
    Ok(tokenizer)
}

/// Re-quantises Q4_1 tensors to Q8_0 in an in-memory GGUF. candle has only a scalar Q4_1 dot product
/// (over 80 % of the time in a profile) but SIMD Q8_0 kernels; Q8_0 holds the Q4_1 values to within
/// 1/254 of each block's range, and the conversion is deterministic, so answers stay reproducible.
fn transcode_q4_1(ct: &gguf_file::Content, file: &mut std::fs::File) -> Result<std::io::Cursor<Vec<u8>>, LlmError> {
    let mut names: Vec<&String> = ct.tensor_infos.keys().collect();
    names.sort();
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        let t = ct.tensor(file, name, &Device::Cpu).map_err(model_err("reading a tensor"))?;
        let t = if t.dtype() == GgmlDType::Q4_1 {
            let dense = t.dequantize(&Device::Cpu).map_err(model_err("dequantizing"))?;
            QTensor::quantize(&dense, GgmlDType::Q8_0).map_err(model_err("re-quantizing"))?
        } else {
            t
        };
        tensors.push((name.as_str(), t));
    }
    let mut metadata: Vec<(&str, &gguf_file::Value)> = ct.metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    metadata.sort_by_key(|(k, _)| *k);
    let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata, &refs).map_err(model_err("writing transcoded weights"))?;
    out.set_position(0);
    Ok(out)
}

impl Engine {
    fn load(path: &Path) -> Result<Engine, LlmError> {
        let started = Instant::now();
        let mut file = std::fs::File::open(path)
            .map_err(|e| LlmError::Config(format!("cannot open model {}: {e}", path.display())))?;
        let ct = gguf_file::Content::read(&mut file)
            .map_err(|e| LlmError::Config(format!("{} is not a readable GGUF file: {e}", path.display())))?;
        let tokenizer = tokenizer_from_gguf(&ct)?;
        let template = ct.metadata.get("tokenizer.chat_template").and_then(|v| v.to_string().ok()).cloned();
        let trained_context = md_u32(&ct, "llama.context_length").map(|c| c as usize).unwrap_or(MAX_SEQ_LEN);
        let mut stop_ids: Vec<u32> = md_u32(&ct, "tokenizer.ggml.eos_token_id").into_iter().collect();
        for marker in ["<|im_end|>", "<|endoftext|>"] {
            if let Some(id) = tokenizer.token_to_id(marker) {
                if !stop_ids.contains(&id) {
                    stop_ids.push(id);
                }
            }
        }
        let weights = if ct.tensor_infos.values().any(|t| t.ggml_dtype == GgmlDType::Q4_1) {
            let mut transcoded = transcode_q4_1(&ct, &mut file)?;
            let ct = gguf_file::Content::read(&mut transcoded).map_err(model_err("re-reading transcoded weights"))?;
            ModelWeights::from_gguf(ct, &mut transcoded, &Device::Cpu)
        } else {
            ModelWeights::from_gguf(ct, &mut file, &Device::Cpu)
        }
        .map_err(model_err("loading weights"))?;
        tracing::debug!(path = %path.display(), elapsed = ?started.elapsed(), "embedded model loaded");
        Ok(Engine {
            weights,
            tokenizer,
            template: ChatTemplate::new(template),
            stop_ids,
            // candle's rotary tables stop at MAX_SEQ_LEN whatever the model was trained for.
            context: trained_context.min(MAX_SEQ_LEN),
        })
    }

    fn prompt_tokens(&self, req: &LlmRequest) -> Result<Vec<u32>, LlmError> {
        let prompt = self.template.render(&chat_messages(req.system_instruction.as_deref(), &req.contents));
        let enc = self
            .tokenizer
            .encode(prompt.as_str(), false)
            .map_err(|e| LlmError::Other(format!("embedded model: cannot tokenize the prompt: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    fn decode(&self, ids: &[u32]) -> Result<String, LlmError> {
        self.tokenizer.decode(ids, true).map_err(|e| LlmError::Other(format!("embedded model: cannot decode: {e}")))
    }

    /// Greedy next token: the highest logit, ties to the lowest id (deterministic).
    fn argmax(logits: &Tensor) -> Result<u32, LlmError> {
        let v: Vec<f32> = logits.squeeze(0).and_then(|t| t.to_vec1()).map_err(model_err("reading logits"))?;
        let mut best = 0usize;
        for (i, x) in v.iter().enumerate() {
            if *x > v[best] {
                best = i;
            }
        }
        Ok(best as u32)
    }

    fn generate(&mut self, req: &LlmRequest, cancel: &AtomicBool) -> Result<LlmResponse, LlmError> {
        let prompt = self.prompt_tokens(req)?;
        // At least one generated token must fit after the prompt.
        if prompt.len() >= self.context {
            return Err(LlmError::ContextOverflow { prompt_tokens: prompt.len() as u64, context: self.context as u64 });
        }
        let wanted = req.params.max_output_tokens.unwrap_or(DEFAULT_MAX_NEW_TOKENS) as usize;
        let budget = wanted.min(self.context - prompt.len());
        self.weights.clear_kv_cache();
        let started = Instant::now();
        let mut logits = None;
        let mut pos = 0;
        for chunk in prompt.chunks(PREFILL_CHUNK) {
            if cancel.load(Ordering::Relaxed) {
                return Err(LlmError::Other("cancelled".into()));
            }
            let input = Tensor::new(chunk, &Device::Cpu).and_then(|t| t.unsqueeze(0)).map_err(model_err("input"))?;
            logits = Some(self.weights.forward(&input, pos).map_err(model_err("prompt pass"))?);
            pos += chunk.len();
        }
        let prefill = started.elapsed();
        let mut generated: Vec<u32> = Vec::new();
        let mut text = String::new();
        let mut finish = "MAX_TOKENS";
        let decode_started = Instant::now();
        while generated.len() < budget {
            if cancel.load(Ordering::Relaxed) {
                return Err(LlmError::Other("cancelled".into()));
            }
            let next = Self::argmax(logits.as_ref().expect("the prompt is never empty"))?;
            if self.stop_ids.contains(&next) {
                finish = "STOP";
                break;
            }
            generated.push(next);
            // Stop strings can span tokens, so the text is re-decoded; without them it is decoded once at the end.
            if !req.params.stop.is_empty() {
                text = self.decode(&generated)?;
                if let Some(cut) = req.params.stop.iter().filter_map(|s| text.find(s.as_str())).min() {
                    text.truncate(cut);
                    finish = "STOP";
                    break;
                }
            }
            if generated.len() == budget {
                break;
            }
            let input = Tensor::new(&[next], &Device::Cpu).and_then(|t| t.unsqueeze(0)).map_err(model_err("input"))?;
            logits = Some(self.weights.forward(&input, pos).map_err(model_err("generation pass"))?);
            pos += 1;
        }
        if req.params.stop.is_empty() {
            text = self.decode(&generated)?;
        }
        let decode = decode_started.elapsed();
        tracing::info!(
            prompt_tokens = prompt.len(),
            output_tokens = generated.len(),
            prompt_tok_per_s = prompt.len() as f64 / prefill.as_secs_f64().max(1e-9),
            gen_tok_per_s = generated.len() as f64 / decode.as_secs_f64().max(1e-9),
            "embedded model generation"
        );
        Ok(LlmResponse {
            text,
            thoughts: String::new(),
            finish_reason: Some(finish.into()),
            usage: Usage {
                prompt_tokens: prompt.len() as u64,
                output_tokens: generated.len() as u64,
                thought_tokens: 0,
            },
        })
    }
}
