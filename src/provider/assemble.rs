//! The block assembler (compaction §6.6): stream chunks → content blocks.
//!
//! Blocks are ordered by the first appearance of their index. A `block-end`
//! payload replaces what the deltas accumulated, and later deltas for that
//! index are ignored. An unclosed tool call assembles as `{id: <last id or
//! "call-<index>">, name: <last name or "">, arguments}`. On a `max-tokens`
//! finish tool-call blocks are dropped. A missing finish counts as `stop`;
//! the last usage wins. Text accumulates as UTF-16 code units, so a
//! surrogate pair split across two deltas joins up as it does in JavaScript.
//!
//! The token meter re-assembles logged chunks by the same rules but keeps only
//! lengths ([`crate::meter::assemble`]), so that metering a long log holds no
//! text; a change to the §6.6 rules belongs in both.

use super::ErrorCode;
use crate::json::{JStr, OwnedValue, Value};

use super::Usage;

/// How a stream finished.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// `stop`
    Stop,
    /// `tool-calls`
    ToolCalls,
    /// `max-tokens`
    MaxTokens,
    /// `error`, with the failure.
    Error {
        /// `failure.message`
        message: String,
        /// `failure.code`
        code: ErrorCode,
    },
    /// `aborted`
    Aborted,
}

impl Finish {
    /// A provider's stop reason that means none of the others: an error
    /// naming it (`content_filter` → code `CONTENT_FILTER`).
    pub(crate) fn unknown(reason: &str) -> Finish {
        Finish::Error {
            message: format!("model stopped: {reason}"),
            code: ErrorCode::from_stop_reason(reason),
        }
    }
}

/// One stream chunk (the `assistant/chunk` vocabulary).
#[derive(Debug, Clone)]
pub(crate) enum Chunk {
    /// A block opens.
    BlockStart {
        /// Block index.
        index: u64,
        /// `text`, `reasoning`, `tool-call`, …
        block_type: String,
    },
    /// Text for a text block.
    TextDelta {
        /// Block index.
        index: u64,
        /// The fragment (UTF-16 units).
        text: Vec<u16>,
    },
    /// Text for a reasoning block.
    ReasoningDelta {
        /// Block index.
        index: u64,
        /// The fragment (UTF-16 units).
        text: Vec<u16>,
    },
    /// A tool-call fragment.
    ToolCallDelta {
        /// Block index.
        index: u64,
        /// Call id, when sent.
        id: Option<String>,
        /// Tool name, when sent.
        name: Option<String>,
        /// Arguments fragment (UTF-16 units).
        arguments: Vec<u16>,
    },
    /// A block closes, optionally with its final form.
    BlockEnd {
        /// Block index.
        index: u64,
        /// The complete block, replacing the deltas.
        block: Option<OwnedValue>,
    },
    /// Usage report.
    Usage(Usage),
    /// The finish.
    Finish(Finish),
}

#[derive(Debug)]
struct Slot {
    index: u64,
    block_type: String,
    text: Vec<u16>,
    id: Option<String>,
    name: Option<String>,
    ended: Option<Option<OwnedValue>>,
}

/// Assembles chunks into blocks.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    slots: Vec<Slot>,
    usage: Option<Usage>,
    finish: Option<Finish>,
}

impl Assembler {
    fn slot(&mut self, index: u64, block_type: &str) -> &mut Slot {
        let pos = match self.slots.iter().position(|s| s.index == index) {
            Some(p) => p,
            None => {
                self.slots.push(Slot {
                    index,
                    block_type: block_type.to_string(),
                    text: Vec::new(),
                    id: None,
                    name: None,
                    ended: None,
                });
                self.slots.len() - 1
            }
        };
        &mut self.slots[pos]
    }

    /// Feed one chunk.
    pub(crate) fn push(&mut self, chunk: Chunk) {
        match chunk {
            Chunk::BlockStart { index, block_type } => {
                self.slot(index, &block_type);
            }
            Chunk::TextDelta { index, text } => {
                let s = self.slot(index, "text");
                if s.ended.is_none() {
                    s.text.extend(text);
                }
            }
            Chunk::ReasoningDelta { index, text } => {
                let s = self.slot(index, "reasoning");
                if s.ended.is_none() {
                    s.text.extend(text);
                }
            }
            Chunk::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                let s = self.slot(index, "tool-call");
                if s.ended.is_none() {
                    if id.is_some() {
                        s.id = id;
                    }
                    if name.is_some() {
                        s.name = name;
                    }
                    s.text.extend(arguments);
                }
            }
            Chunk::BlockEnd { index, block } => {
                let s = self.slot(index, "text");
                if s.ended.is_none() {
                    s.ended = Some(block);
                }
            }
            Chunk::Usage(u) => self.usage = Some(u),
            Chunk::Finish(f) => self.finish = Some(f),
        }
    }

    /// Whether any block was opened.
    pub(crate) fn has_blocks(&self) -> bool {
        !self.slots.is_empty()
    }

    /// The blocks, usage and finish.
    pub(crate) fn finish(self) -> (Vec<OwnedValue>, Finish, Option<Usage>) {
        let finish = self.finish.unwrap_or(Finish::Stop);
        let mut blocks = Vec::with_capacity(self.slots.len());
        for s in self.slots {
            let block = match s.ended {
                Some(Some(b)) => b,
                _ => match s.block_type.as_str() {
                    "text" | "reasoning" => Value::obj()
                        .with("type", s.block_type.clone().into())
                        .with("text", Value::Str(JStr::from_units(&s.text))),
                    "tool-call" => Value::obj()
                        .with("type", "tool-call".into())
                        .with(
                            "id",
                            s.id.unwrap_or_else(|| format!("call-{}", s.index)).into(),
                        )
                        .with("name", s.name.unwrap_or_default().into())
                        .with("arguments", Value::Str(JStr::from_units(&s.text))),
                    _ => continue,
                },
            };
            if finish == Finish::MaxTokens
                && block.get("type").is_some_and(|t| t.is_str("tool-call"))
            {
                continue;
            }
            blocks.push(block);
        }
        (blocks, finish, self.usage)
    }
}

/// UTF-16 units of a string value.
pub(crate) fn units_of(v: Option<&Value<'_>>) -> Vec<u16> {
    match v {
        Some(Value::Str(s)) => s.units(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn orders_by_first_index_and_defaults_tool_calls() {
        let mut a = Assembler::default();
        a.push(Chunk::ReasoningDelta {
            index: 0,
            text: u("think"),
        });
        a.push(Chunk::ToolCallDelta {
            index: 2,
            id: None,
            name: Some("read".into()),
            arguments: u("{\"p\":"),
        });
        a.push(Chunk::TextDelta {
            index: 1,
            text: u("hi"),
        });
        a.push(Chunk::ToolCallDelta {
            index: 2,
            id: None,
            name: None,
            arguments: u("1}"),
        });
        let (blocks, finish, usage) = a.finish();
        assert_eq!(finish, Finish::Stop);
        assert!(usage.is_none());
        let json: Vec<String> = blocks.iter().map(|b| b.to_json()).collect();
        assert_eq!(
            json,
            vec![
                r#"{"type":"reasoning","text":"think"}"#,
                r#"{"type":"tool-call","id":"call-2","name":"read","arguments":"{\"p\":1}"}"#,
                r#"{"type":"text","text":"hi"}"#,
            ]
        );
    }

    #[test]
    fn block_end_replaces_and_max_tokens_drops_calls() {
        let mut a = Assembler::default();
        a.push(Chunk::TextDelta {
            index: 0,
            text: u("draft"),
        });
        a.push(Chunk::BlockEnd {
            index: 0,
            block: Some(
                Value::obj()
                    .with("type", "text".into())
                    .with("text", "final".into()),
            ),
        });
        a.push(Chunk::TextDelta {
            index: 0,
            text: u("ignored"),
        });
        a.push(Chunk::ToolCallDelta {
            index: 1,
            id: Some("c".into()),
            name: Some("n".into()),
            arguments: u("{}"),
        });
        a.push(Chunk::Finish(Finish::MaxTokens));
        let (blocks, finish, _) = a.finish();
        assert_eq!(finish, Finish::MaxTokens);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].to_json(), r#"{"type":"text","text":"final"}"#);
    }

    #[test]
    fn split_surrogate_pair_joins() {
        let mut a = Assembler::default();
        let smile = u("\u{1F600}");
        a.push(Chunk::TextDelta {
            index: 0,
            text: vec![smile[0]],
        });
        a.push(Chunk::TextDelta {
            index: 0,
            text: vec![smile[1]],
        });
        let (blocks, _, _) = a.finish();
        assert_eq!(
            blocks[0].to_json(),
            "{\"type\":\"text\",\"text\":\"\u{1F600}\"}"
        );
    }
}
