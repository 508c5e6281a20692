//! Exact token counts beside the heuristic.
//!
//! The heuristic of §1 guesses 4 UTF-16 units per token. This module counts
//! the **same text the heuristic prices** with a real tokenizer, so the two
//! figures can be put side by side:
//!
//! * envelope: the header's `system` string, and `JSON.stringify(tools)`;
//! * every current surface node's derived message (an empty assistant message
//!   derives none and counts 0), block by block: the `text` of `text` and
//!   `reasoning` blocks, the `name` and the `arguments` of `tool-call` blocks,
//!   the nested content of `tool-result` blocks (recursively), and
//!   `JSON.stringify(block)` of any other block (images, unknown blocks).
//!
//! Each of those strings is encoded on its own, without special tokens (text
//! that looks like one is text), and the counts are added. No framing is
//! added here: the heuristic's +4 per block / message stands for chat-template
//! framing, which differs per provider; DeepSeek's is rendered by
//! `chat.rs`. Lone surrogates are replaced by U+FFFD before
//! encoding.
//!
//! The encodings: OpenAI's `o200k_base` and `cl100k_base` (counts equal to
//! `tiktoken`'s `encode_ordinary(text).len()`, `tiktoken.rs`) and DeepSeek's
//! V4 tokenizer (counts equal to Hugging Face `tokenizers` on its
//! `tokenizer.json`, `deepseek.rs`). Their tables are embedded compressed and
//! expanded on first use (`bpe.rs`); the surface is counted on all cores.

use crate::json::Value;
use crate::log::{LoadError, LoadedLog};
use crate::meter::NodeTokens;
use crate::surface::project;

pub(crate) mod bpe;
pub(crate) mod chat;
pub(crate) mod deepseek;
pub(crate) mod tiktoken;

use bpe::Sym;

/// A tokenizer (in documents: its `--tokenizer` name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
pub enum Encoding {
    /// `o200k_base` (GPT-4o family).
    #[serde(rename = "o200k")]
    O200k,
    /// `cl100k_base` (GPT-4 / GPT-3.5 family).
    #[serde(rename = "cl100k")]
    Cl100k,
    /// DeepSeek's V4 tokenizer (`deepseek-v4-flash`, `deepseek-v4-pro`; V3's
    /// ordinary vocabulary is the same).
    #[serde(rename = "deepseek-v4")]
    DeepSeekV4,
}

impl Encoding {
    /// Every encoding, in the order `--tokenizer` lists them.
    #[cfg(test)]
    const ALL: [Encoding; 3] = [Encoding::O200k, Encoding::Cl100k, Encoding::DeepSeekV4];

    /// `"o200k"` / `"cl100k"` / `"deepseek-v4"`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k",
            Encoding::Cl100k => "cl100k",
            Encoding::DeepSeekV4 => "deepseek-v4",
        }
    }

    /// Parse `o200k` / `o200k_base` / `cl100k` / `cl100k_base` /
    /// `deepseek-v4` / `deepseek`.
    pub fn parse(s: &str) -> Option<Encoding> {
        match s {
            "o200k" | "o200k_base" => Some(Encoding::O200k),
            "cl100k" | "cl100k_base" => Some(Encoding::Cl100k),
            "deepseek-v4" | "deepseek" => Some(Encoding::DeepSeekV4),
            _ => None,
        }
    }

    /// Whether this is a provider's own tokenizer for `provider` (the one
    /// whose counts it reports): DeepSeek's for DeepSeek's routes.
    pub fn is_provider_of(self, provider: &str) -> bool {
        self == Encoding::DeepSeekV4 && provider.starts_with("deepseek")
    }

    /// Build the encoding's tables now (they are built once per process, on
    /// first use), e.g. to keep that out of a timing.
    pub(crate) fn load(self) {
        match self {
            Encoding::O200k => std::sync::LazyLock::force(&tiktoken::O200K).touch(),
            Encoding::Cl100k => std::sync::LazyLock::force(&tiktoken::CL100K).touch(),
            Encoding::DeepSeekV4 => std::sync::LazyLock::force(&deepseek::V4).touch(),
        }
    }
}

/// Token counts of one encoding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenCounts {
    /// The encoding.
    pub encoding: Encoding,
    /// `system` prompt tokens.
    pub system_tokens: u64,
    /// `JSON.stringify(tools)` tokens.
    pub tools_tokens: u64,
    /// Surface tokens (sum of `nodes`).
    pub message_tokens: u64,
    /// `system + tools + messages`.
    pub total_tokens: u64,
    /// UTF-8 bytes of text encoded.
    pub text_bytes: u64,
    /// Per surface node, in surface order.
    pub nodes: Vec<NodeTokens>,
}

/// An encoding's pre-tokenizer and merges, with one worker's caches of its
/// patterns (one per worker: the size of the caches does not matter).
#[allow(clippy::large_enum_variant)]
enum Engine {
    Tiktoken(&'static tiktoken::Engine, regex_automata::meta::Cache),
    DeepSeek(&'static deepseek::Engine, deepseek::Caches),
}

impl Engine {
    fn new(enc: Encoding) -> Engine {
        match enc {
            Encoding::O200k => Engine::tiktoken(&tiktoken::O200K),
            Encoding::Cl100k => Engine::tiktoken(&tiktoken::CL100K),
            Encoding::DeepSeekV4 => {
                let e: &'static deepseek::Engine = &deepseek::V4;
                Engine::DeepSeek(e, e.caches())
            }
        }
    }

    fn tiktoken(e: &'static tiktoken::Engine) -> Engine {
        Engine::Tiktoken(e, e.split.create_cache())
    }
}

/// Pieces up to this long are remembered with their count: most pieces are
/// words and numbers that recur, and a lookup is cheaper than encoding.
const MEMO_PIECE: usize = 32;
/// Remembered pieces per counter before the memo starts again.
const MEMO_ENTRIES: usize = 1 << 18;

/// One thread's counting state: the patterns' caches (a shared pool would
/// make the threads queue for them), the memo of piece counts and the
/// merging buffer.
struct Worker {
    engine: Engine,
    pieces: Pieces,
}

/// Counts pieces, remembering the short ones.
#[derive(Default)]
struct Pieces {
    memo: std::collections::HashMap<Box<[u8]>, u32, FxBuild>,
    syms: Vec<Sym>,
}

impl Pieces {
    fn count(&mut self, piece: &[u8], merge: impl Fn(&[u8], &mut Vec<Sym>) -> u64) -> u64 {
        if piece.len() > MEMO_PIECE {
            return merge(piece, &mut self.syms);
        }
        if let Some(&n) = self.memo.get(piece) {
            return n as u64;
        }
        let n = merge(piece, &mut self.syms) as u32;
        if self.memo.len() >= MEMO_ENTRIES {
            self.memo.clear();
        }
        self.memo.insert(piece.into(), n);
        n as u64
    }
}

impl Worker {
    fn new(enc: Encoding) -> Worker {
        Worker {
            engine: Engine::new(enc),
            pieces: Pieces::default(),
        }
    }

    /// Tokens of `text`, without special tokens.
    fn count(&mut self, text: &str) -> u64 {
        let mut n = 0u64;
        let pieces = &mut self.pieces;
        match &mut self.engine {
            Engine::Tiktoken(e, cache) => e.split(cache, text, |p| {
                n += pieces.count(p, |p, syms| {
                    bpe::merge(&e.ranks, p, syms);
                    syms.len() as u64
                })
            }),
            Engine::DeepSeek(e, caches) => e.split(caches, text, |p| {
                n += pieces.count(p, |p, syms| deepseek::piece_tokens(e, p, syms))
            }),
        }
        n
    }
}

/// A fast hash for short byte strings (the multiply-rotate of rustc's
/// FxHasher): the memo is keyed by text the process itself counts, so a
/// hash-flooding defence buys nothing here.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Counts strings with one encoding, keeping a running byte total.
pub struct Counter {
    worker: Worker,
    /// DeepSeek's chat encoding, for its encoding (see [`Counter::count_message`]).
    chat: Option<chat::Chat>,
    /// UTF-8 bytes encoded so far.
    pub bytes: u64,
}

impl Counter {
    /// A counter (loads the encoding's tables on first use).
    pub fn new(enc: Encoding) -> Counter {
        Counter {
            worker: Worker::new(enc),
            chat: (enc == Encoding::DeepSeekV4).then(chat::Chat::default),
            bytes: 0,
        }
    }

    /// Whether counts are of the provider's rendered request (DeepSeek's
    /// chat encoding) rather than of the texts alone.
    fn renders_requests(&self) -> bool {
        self.chat.is_some()
    }

    /// Tokens of one string.
    pub fn count_str(&mut self, s: &str) -> u64 {
        self.bytes += s.len() as u64;
        if s.is_empty() {
            return 0;
        }
        self.worker.count(s)
    }

    /// Tokens of a content-block list (the text the heuristic prices).
    pub(crate) fn count_blocks(&mut self, content: Option<&Value<'_>>) -> u64 {
        let mut texts = Texts::default();
        texts.push_blocks(content);
        self.count_texts(&texts)
    }

    /// Tokens of one content block (what [`Counter::count_blocks`] adds for
    /// it: the sum over a list equals the list's count).
    pub(crate) fn count_block(&mut self, block: &Value<'_>) -> u64 {
        let mut texts = Texts::default();
        texts.push_block(block);
        self.count_texts(&texts)
    }

    /// The system prompt's tokens: with DeepSeek's encoding, the request's
    /// start and the prompt (see docs/tokenizers.md); else the text's.
    pub(crate) fn count_system(&mut self, system: &str) -> u64 {
        match &mut self.chat {
            Some(c) => {
                let parts = c.system(system);
                self.count_parts(&parts)
            }
            None => self.count_str(system),
        }
    }

    /// The tools' tokens: with DeepSeek's encoding, its tool section after
    /// `system` (see docs/tokenizers.md); else `JSON.stringify(tools)`'s.
    pub(crate) fn count_tools(&mut self, system: &str, tools: &Value<'_>) -> u64 {
        match &mut self.chat {
            Some(c) => {
                let Worker { engine, .. } = &mut self.worker;
                let parts = c.tools(system, tools, |t| last_piece(engine, t));
                self.count_parts(&parts)
            }
            None => self.count_str(&tools.to_json()),
        }
    }

    /// One derived message's tokens: with DeepSeek's encoding, its part of
    /// the rendered request, after the messages counted before it
    /// (see docs/tokenizers.md); else its content blocks' ([`Counter::count_blocks`]).
    pub(crate) fn count_message(&mut self, message: &Value<'_>) -> u64 {
        match &mut self.chat {
            Some(c) => {
                let Worker { engine, .. } = &mut self.worker;
                let parts = c.message(message, |t| last_piece(engine, t));
                self.count_parts(&parts)
            }
            None => self.count_blocks(message.get("content")),
        }
    }

    /// One derived message's rendering, with DeepSeek's encoding.
    fn message_parts(&mut self, message: &Value<'_>) -> Option<Vec<chat::Part>> {
        let c = self.chat.as_mut()?;
        let Worker { engine, .. } = &mut self.worker;
        Some(c.message(message, |t| last_piece(engine, t)))
    }

    fn count_parts(&mut self, parts: &[chat::Part]) -> u64 {
        let mut texts = Texts::default();
        texts.push_parts(parts);
        self.count_texts(&texts)
    }

    fn count_texts(&mut self, texts: &Texts) -> u64 {
        let (n, b) = texts.count_all(&mut self.worker);
        self.bytes += b;
        n
    }
}

/// The last piece the pre-tokenizer cuts `text` into (DeepSeek's; other
/// encodings are not rendered).
fn last_piece(engine: &mut Engine, text: &str) -> String {
    let Engine::DeepSeek(e, caches) = engine else {
        return String::new();
    };
    let base = text.as_ptr() as usize;
    let mut start = text.len();
    e.split(caches, text, |p| start = p.as_ptr() as usize - base);
    text[start..].to_string()
}

/// The strings a node's message is counted by, in order, with where each
/// node's strings end (so that batches of nodes can be counted elsewhere).
/// A string may be subtracted (the context of a join), and a node may have
/// special tokens (one token each).
#[derive(Default)]
struct Texts {
    strings: Vec<(String, bool)>,
    ends: Vec<usize>,
    /// Special tokens per node, and of the node being gathered.
    specials: Vec<u64>,
    open_specials: u64,
    bytes: usize,
}

impl Texts {
    fn push_str(&mut self, s: std::borrow::Cow<'_, str>) {
        self.bytes += s.len();
        self.strings.push((s.into_owned(), false));
    }

    fn push_parts(&mut self, parts: &[chat::Part]) {
        for p in parts {
            match p {
                chat::Part::Special => self.open_specials += 1,
                chat::Part::Text(t) => self.push_str(t.as_str().into()),
                chat::Part::Joined { context, text } => {
                    self.push_str(format!("{context}{text}").into());
                    self.strings.push((context.clone(), true));
                }
            }
        }
    }

    fn push_value_str(&mut self, v: Option<&Value<'_>>) {
        if let Some(Value::Str(s)) = v {
            self.push_str(s.to_lossy());
        }
    }

    fn push_blocks(&mut self, content: Option<&Value<'_>>) {
        let Some(blocks) = content.and_then(|c| c.as_arr()) else {
            return;
        };
        for b in blocks {
            self.push_block(b);
        }
    }

    fn push_block(&mut self, b: &Value<'_>) {
        let ty = b.get("type");
        let is = |t: &str| ty.is_some_and(|x| x.is_str(t));
        if is("text") || is("reasoning") {
            self.push_value_str(b.get("text"));
        } else if is("tool-call") {
            self.push_value_str(b.get("name"));
            self.push_value_str(b.get("arguments"));
        } else if is("tool-result") {
            self.push_blocks(b.get("content"));
        } else {
            self.push_str(b.to_json().into());
        }
    }

    /// Close the current node.
    fn end_node(&mut self) {
        self.ends.push(self.strings.len());
        self.specials.push(std::mem::take(&mut self.open_specials));
    }

    /// Tokens of everything gathered (closed nodes or not), and the bytes
    /// counted (a join's context is not counted twice).
    fn count_all(&self, worker: &mut Worker) -> (u64, u64) {
        let mut n = self.open_specials + self.specials.iter().sum::<u64>();
        let mut bytes = 0;
        for (s, minus) in &self.strings {
            let k = if s.is_empty() { 0 } else { worker.count(s) };
            if *minus {
                n -= k;
                bytes -= s.len() as u64;
            } else {
                n += k;
                bytes += s.len() as u64;
            }
        }
        (n, bytes)
    }

    /// Per node: its tokens; and the bytes counted.
    fn count(&self, worker: &mut Worker) -> (Vec<u64>, u64) {
        let mut out = Vec::with_capacity(self.ends.len());
        let mut bytes = 0u64;
        let mut start = 0;
        for (k, &end) in self.ends.iter().enumerate() {
            let mut n = self.specials[k];
            for (s, minus) in &self.strings[start..end] {
                let t = if s.is_empty() { 0 } else { worker.count(s) };
                if *minus {
                    n -= t;
                    bytes -= s.len() as u64;
                } else {
                    n += t;
                    bytes += s.len() as u64;
                }
            }
            out.push(n);
            start = end;
        }
        (out, bytes)
    }
}

/// Text gathered per batch handed to a counting thread.
const BATCH_BYTES: usize = 1 << 20;

/// Count the envelope of `header` (canonical or logged) and the current
/// surface of `log` (node events are re-read one at a time, and counted in
/// batches on every core while the next ones are read).
pub fn count(
    log: &LoadedLog,
    header: Option<&Value<'_>>,
    enc: Encoding,
) -> Result<TokenCounts, LoadError> {
    count_on(log, header, enc, crate::par::cores().min(8))
}

/// The system prompt's and the tools' tokens (with DeepSeek's encoding, the
/// request's start even without a system prompt).
fn envelope(c: &mut Counter, header: Option<&Value<'_>>) -> (u64, u64) {
    let system = match header.and_then(|h| h.get("system")) {
        Some(Value::Str(s)) => Some(s.to_lossy().into_owned()),
        _ => None,
    };
    let system_tokens = match &system {
        Some(s) => c.count_system(s),
        None if c.renders_requests() => c.count_system(""),
        None => 0,
    };
    let tools_tokens = match header.and_then(|h| h.get("tools")) {
        Some(t @ Value::Arr(a)) if !a.is_empty() => {
            c.count_tools(system.as_deref().unwrap_or(""), t)
        }
        _ => 0,
    };
    (system_tokens, tools_tokens)
}

/// [`count`] with `threads` counting threads (none: this thread counts).
fn count_on(
    log: &LoadedLog,
    header: Option<&Value<'_>>,
    enc: Encoding,
    threads: usize,
) -> Result<TokenCounts, LoadError> {
    let mut c = Counter::new(enc);
    let (system_tokens, tools_tokens) = envelope(&mut c, header);
    let mut node_tokens: Vec<u64> = Vec::with_capacity(log.surface.nodes.len());
    let mut bytes = c.bytes;
    std::thread::scope(|scope| -> Result<(), LoadError> {
        // Batches go out numbered and come back in any order.
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Texts)>(threads * 2);
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Vec<u64>, u64)>();
        let mut started = 0;
        for _ in 0..threads {
            let (rx, done_tx) = (rx.clone(), done_tx.clone());
            let counting = move || {
                let mut worker = Worker::new(enc);
                loop {
                    let next = rx.lock().ok().and_then(|r| r.recv().ok());
                    let Some((i, texts)) = next else { break };
                    let (counts, b) = texts.count(&mut worker);
                    if done_tx.send((i, counts, b)).is_err() {
                        break;
                    }
                }
            };
            // A thread that cannot start (a process short of memory or
            // threads) leaves the counting to the others, or to this one.
            if std::thread::Builder::new()
                .spawn_scoped(scope, counting)
                .is_err()
            {
                break;
            }
            started += 1;
        }
        // Nobody to send batches to: they are counted here as they fill.
        let mut here = (started == 0).then(|| (Worker::new(enc), done_tx.clone()));
        drop(done_tx);
        // A full batch goes to the counting threads, or is counted here.
        type Done = std::sync::mpsc::Sender<(usize, Vec<u64>, u64)>;
        let hand_over = |here: &mut Option<(Worker, Done)>, i: usize, texts: Texts| match here {
            Some((worker, done)) => {
                let (counts, b) = texts.count(worker);
                let _ = done.send((i, counts, b));
                true
            }
            None => tx.send((i, texts)).is_ok(),
        };
        let mut batches = 0usize;
        let mut texts = Texts::default();
        let (mut file, mut line) = (None, Vec::new());
        let mut read = || -> Result<(), LoadError> {
            for n in &log.surface.nodes {
                // Borrowed from the line: the strings are copied once, into
                // the batch.
                log.with_body(&n.body, n.seq, &mut file, &mut line, |ev| {
                    if let Some(m) = project(ev) {
                        match c.message_parts(m) {
                            Some(parts) => texts.push_parts(&parts),
                            None => texts.push_blocks(m.get("content")),
                        }
                    }
                })?;
                texts.end_node();
                if texts.bytes >= BATCH_BYTES {
                    let full = std::mem::take(&mut texts);
                    if !hand_over(&mut here, batches, full) {
                        break;
                    }
                    batches += 1;
                }
            }
            if !texts.ends.is_empty() {
                hand_over(&mut here, batches, std::mem::take(&mut texts));
                batches += 1;
            }
            Ok(())
        };
        let result = read();
        drop(here);
        drop(tx);
        let mut parts: Vec<Option<Vec<u64>>> = vec![None; batches];
        for (i, counts, b) in done_rx {
            bytes += b;
            if let Some(slot) = parts.get_mut(i) {
                *slot = Some(counts);
            }
        }
        result?;
        for p in parts {
            node_tokens.extend(p.unwrap_or_default());
        }
        Ok(())
    })?;
    let mut message_tokens = 0;
    let nodes = log
        .surface
        .nodes
        .iter()
        .zip(node_tokens)
        .map(|(n, tokens)| {
            message_tokens += tokens;
            NodeTokens { seq: n.seq, tokens }
        })
        .collect();
    Ok(TokenCounts {
        encoding: enc,
        system_tokens,
        tools_tokens,
        message_tokens,
        total_tokens: system_tokens + tools_tokens + message_tokens,
        nodes,
        text_bytes: bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_surface_is_counted_alike_without_counting_threads() {
        // No thread could start: the batches are counted on this one.
        let src = crate::LogSource::File("samples/compacted.jsonl".into());
        let log = crate::log::load(
            &src,
            &crate::LoadOptions::default(),
            &mut |_: &crate::Event<'_>, _: &crate::log::Folded<'_>| {},
        )
        .unwrap();
        for enc in Encoding::ALL {
            let shared = count_on(&log, None, enc, 2).unwrap();
            let here = count_on(&log, None, enc, 0).unwrap();
            assert!(shared.message_tokens > 0);
            assert_eq!(here.message_tokens, shared.message_tokens);
            assert_eq!(here.text_bytes, shared.text_bytes);
            let seqs = |c: &TokenCounts| {
                c.nodes
                    .iter()
                    .map(|n| (n.seq, n.tokens))
                    .collect::<Vec<_>>()
            };
            assert_eq!(seqs(&here), seqs(&shared));
        }
    }

    #[test]
    fn counts_the_priced_text_only() {
        let mut c = Counter::new(Encoding::O200k);
        let v = Value::parse(
            r#"[{"type":"text","text":"hello world"},{"type":"tool-call","id":"ignored id","name":"bash","arguments":"{}"}]"#,
        )
        .unwrap();
        let direct = c.count_str("hello world") + c.count_str("bash") + c.count_str("{}");
        assert_eq!(c.count_blocks(Some(&v)), direct);
        assert_eq!(c.count_str("hello world"), 2);
        assert_eq!(c.count_str(""), 0);
    }

    /// Deterministic text that stresses the split pattern: every script and
    /// category it names, contractions in both cases, long runs of spaces,
    /// tabs, newlines and digits, emoji (with joiners and modifiers), CJK,
    /// combining marks, U+FFFD (what a lone surrogate becomes).
    pub(crate) fn fuzzed(seed: u64, n: usize) -> Vec<String> {
        const PIECES: &[&str] = &[
            "a",
            "Z",
            "hello",
            "World",
            "HTTPServer",
            "camelCase",
            "'s",
            "'S",
            "'ll",
            "'LL",
            "'re",
            "'ve",
            "'d",
            "'m",
            "'t",
            "don't",
            " ",
            "  ",
            "    ",
            "\t",
            "\n",
            "\r\n",
            "\n\n\n",
            " \n ",
            "\u{a0}",
            "\u{3000}",
            "\u{2028}",
            "0",
            "7",
            "42",
            "123",
            "4567",
            "0000000",
            "3.14",
            "-1",
            "_",
            "/",
            "//",
            "\\",
            "{",
            "}\n",
            "\"",
            "'",
            "...",
            "!!",
            "?",
            "#",
            "@",
            "é",
            "e\u{301}",
            "ß",
            "İ",
            "ǅ",
            "ﬁ",
            "Ω",
            "ж",
            "Привет",
            "日本語",
            "中文字",
            "한국어",
            "ひらがな",
            "カタカナ",
            "١٢٣",
            "٣",
            "Ⅻ",
            "½",
            "²",
            "😀",
            "👍🏽",
            "👨\u{200d}👩\u{200d}👧",
            "🇺🇳",
            "\u{fffd}",
            "\u{feff}",
            "\u{200b}",
            "\u{0}",
            "\u{7f}",
            "\u{1f}",
            "ℌ",
            "𝔘",
            "fn main() {",
            "    let x = 1;",
            "</div>",
            "https://example.com/a?b=c",
            "\u{b}",
            "\u{c}",
            "\u{85}",
            "'x",
            "' ",
            "'r",
            "'L",
            "/\n",
            " /",
            "ſ",
            "\u{212a}",
        ];
        let mut rng = crate::test_rng::Lcg(seed);
        let mut next = || rng.high() as usize;
        (0..n)
            .map(|_| {
                let len = next() % 40;
                let mut s = String::new();
                for _ in 0..len {
                    let p = PIECES[next() % PIECES.len()];
                    // Runs: sometimes repeat a piece many times.
                    let times = if next() % 8 == 0 { 1 + next() % 30 } else { 1 };
                    for _ in 0..times {
                        s.push_str(p);
                    }
                }
                s
            })
            .collect()
    }

    #[test]
    fn counts_equal_tiktoken_on_fuzzed_text() {
        for (enc, reference) in [
            (Encoding::O200k, tiktoken_rs::o200k_base_singleton()),
            (Encoding::Cl100k, tiktoken_rs::cl100k_base_singleton()),
        ] {
            let mut c = Counter::new(enc);
            for (i, s) in fuzzed(7 + enc as u64, 3000).iter().enumerate() {
                // Twice: the second count comes from the memo.
                for _ in 0..2 {
                    assert_eq!(
                        c.count_str(s),
                        reference.encode_ordinary(s).len() as u64,
                        "{} #{i}: {s:?}",
                        enc.name()
                    );
                }
            }
        }
    }

    #[test]
    fn encodings_parse() {
        assert_eq!(Encoding::parse("o200k"), Some(Encoding::O200k));
        assert_eq!(Encoding::parse("cl100k_base"), Some(Encoding::Cl100k));
        assert_eq!(Encoding::parse("deepseek-v4"), Some(Encoding::DeepSeekV4));
        assert_eq!(Encoding::parse("p50k"), None);
        for e in Encoding::ALL {
            assert_eq!(Encoding::parse(e.name()), Some(e));
        }
    }
}
