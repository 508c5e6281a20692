//! Exact BPE counts beside the heuristic (`tiktoken-rs`).
//!
//! The heuristic of §1 guesses 4 UTF-16 units per token. This module counts
//! the **same text the heuristic prices** with a real byte-pair encoding, so
//! the two figures can be put side by side:
//!
//! * envelope: the header's `system` string, and `JSON.stringify(tools)`;
//! * every current surface node's derived message (an empty assistant message
//!   derives none and counts 0), block by block: the `text` of `text` and
//!   `reasoning` blocks, the `name` and the `arguments` of `tool-call` blocks,
//!   the nested content of `tool-result` blocks (recursively), and
//!   `JSON.stringify(block)` of any other block (images, unknown blocks).
//!
//! Each of those strings is encoded on its own with `encode_ordinary` (no
//! special tokens) and the counts are added. No framing is added: the
//! heuristic's +4 per block / message stands for chat-template framing,
//! which differs per provider and is not guessed here. Lone surrogates are
//! replaced by U+FFFD before encoding.

use crate::json::Value;
use crate::log::{LoadError, LoadedLog};
use crate::meter::NodeTokens;
use crate::surface::project;

/// A byte-pair encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `o200k_base` (GPT-4o family).
    O200k,
    /// `cl100k_base` (GPT-4 / GPT-3.5 family).
    Cl100k,
}

impl Encoding {
    /// `"o200k"` / `"cl100k"`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k",
            Encoding::Cl100k => "cl100k",
        }
    }

    /// Parse `o200k` / `o200k_base` / `cl100k` / `cl100k_base`.
    pub fn parse(s: &str) -> Option<Encoding> {
        match s {
            "o200k" | "o200k_base" => Some(Encoding::O200k),
            "cl100k" | "cl100k_base" => Some(Encoding::Cl100k),
            _ => None,
        }
    }

    /// Build the encoding's tables now (they are built once per process, on
    /// first use), e.g. to keep that out of a timing.
    pub fn load(self) {
        let _ = self.bpe();
    }

    fn bpe(self) -> &'static tiktoken_rs::CoreBPE {
        match self {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

/// Token counts of one encoding.
#[derive(Debug, Clone, PartialEq)]
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
    /// Per surface node, in surface order.
    pub nodes: Vec<NodeTokens>,
    /// UTF-8 bytes of text encoded.
    pub text_bytes: u64,
}

/// Counts strings with one encoding, keeping a running byte total.
pub struct Counter {
    bpe: &'static tiktoken_rs::CoreBPE,
    /// UTF-8 bytes encoded so far.
    pub bytes: u64,
}

impl Counter {
    /// A counter (loads the encoding's tables on first use).
    pub fn new(enc: Encoding) -> Counter {
        Counter {
            bpe: enc.bpe(),
            bytes: 0,
        }
    }

    /// Tokens of one string.
    pub fn count_str(&mut self, s: &str) -> u64 {
        self.bytes += s.len() as u64;
        if s.is_empty() {
            return 0;
        }
        self.bpe.encode_ordinary(s).len() as u64
    }

    fn count_value_str(&mut self, v: Option<&Value<'_>>) -> u64 {
        match v {
            Some(Value::Str(s)) => self.count_str(&s.to_lossy()),
            _ => 0,
        }
    }

    /// Tokens of a content-block list (the text the heuristic prices).
    pub fn count_blocks(&mut self, content: Option<&Value<'_>>) -> u64 {
        let Some(blocks) = content.and_then(|c| c.as_arr()) else {
            return 0;
        };
        let mut n = 0;
        for b in blocks {
            let ty = b.get("type");
            let is = |t: &str| ty.is_some_and(|x| x.is_str(t));
            n += if is("text") || is("reasoning") {
                self.count_value_str(b.get("text"))
            } else if is("tool-call") {
                self.count_value_str(b.get("name")) + self.count_value_str(b.get("arguments"))
            } else if is("tool-result") {
                self.count_blocks(b.get("content"))
            } else {
                self.count_str(&b.to_json())
            };
        }
        n
    }
}

/// Count the envelope of `header` (canonical or logged) and the current
/// surface of `log` (node events are re-read one at a time).
pub fn count(
    log: &LoadedLog,
    header: Option<&Value<'_>>,
    enc: Encoding,
) -> Result<TokenCounts, LoadError> {
    let mut c = Counter::new(enc);
    let system_tokens = c.count_value_str(header.and_then(|h| h.get("system")));
    let tools_tokens = match header.and_then(|h| h.get("tools")) {
        Some(t @ Value::Arr(a)) if !a.is_empty() => c.count_str(&t.to_json()),
        _ => 0,
    };
    let mut file = None;
    let mut nodes = Vec::with_capacity(log.surface.nodes.len());
    let mut message_tokens = 0;
    for n in &log.surface.nodes {
        let ev = log.read_body(&n.body, n.seq, &mut file)?;
        let tokens = match project(&ev) {
            Some(m) => c.count_blocks(m.get("content")),
            None => 0,
        };
        message_tokens += tokens;
        nodes.push(NodeTokens { seq: n.seq, tokens });
    }
    Ok(TokenCounts {
        encoding: enc,
        system_tokens,
        tools_tokens,
        message_tokens,
        total_tokens: system_tokens + tools_tokens + message_tokens,
        nodes,
        text_bytes: c.bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn encodings_parse() {
        assert_eq!(Encoding::parse("o200k"), Some(Encoding::O200k));
        assert_eq!(Encoding::parse("cl100k_base"), Some(Encoding::Cl100k));
        assert_eq!(Encoding::parse("p50k"), None);
    }
}
