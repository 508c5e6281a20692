//! The block assembler of compaction §6.6, reduced to what pricing needs.
//!
//! The reference re-assembles the provider output of an `assistant/message`
//! from the `assistant/chunk` events it cites (`BlockAssembler` in
//! `@deepseek-ai/dsh-llm`) and prices the blocks. Pricing only needs lengths,
//! so a chunk is kept as a [`ChunkOp`] of a few words instead of its text:
//! concatenating strings adds their UTF-16 lengths, and a `block-end` payload
//! is priced once when the chunk is read. Everything else follows the
//! reference: blocks ordered by the first appearance of their index (keys
//! compared like a JavaScript `Map`), a `block-end` payload replacing the
//! deltas and freezing the block, unclosed tool calls assembling from their
//! deltas, `max-tokens` dropping tool calls, and the reference's errors for
//! chunks it cannot assemble.
//!
//! The provider layer assembles a live reply by the same rules, keeping the
//! text ([`crate::provider::assemble`]); a change to the §6.6 rules belongs
//! in both.

use crate::heuristic::{price_block, q};
use crate::json::{Value, js_number_string, js_string};
use crate::log::fastlane::{BlockKind, ChunkFact};
use crate::log::packed::RowFacts;

/// A JavaScript value compared with `===` (labels such as `turn`/`step`).
/// Objects and arrays are never equal to anything: two events never share one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    /// `undefined` (the member is absent).
    Undefined,
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number.
    Num(f64),
    /// A string (lossy for lone surrogates).
    Str(Box<str>),
    /// An object or array.
    Object,
}

impl Scalar {
    /// The value of an optional JSON member.
    pub(crate) fn of(v: Option<&Value<'_>>) -> Scalar {
        match v {
            None => Scalar::Undefined,
            Some(Value::Null) => Scalar::Null,
            Some(Value::Bool(b)) => Scalar::Bool(*b),
            Some(Value::Num(n)) => Scalar::Num(*n),
            Some(Value::Str(s)) => Scalar::Str(s.to_lossy().into()),
            Some(_) => Scalar::Object,
        }
    }

    /// JavaScript `a === b`.
    pub(crate) fn strict_eq(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Object, _) | (_, Scalar::Object) => false,
            (a, b) => a == b,
        }
    }

    /// JavaScript `String(v)`, for messages.
    pub(crate) fn display(&self) -> String {
        match self {
            Scalar::Undefined => "undefined".into(),
            Scalar::Null => "null".into(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Num(n) => {
                let mut s = String::new();
                js_number_string(*n, &mut s);
                s
            }
            Scalar::Str(s) => s.to_string(),
            Scalar::Object => "[object Object]".into(),
        }
    }
}

/// UTF-16 length of JavaScript `String(v)` (what `s += v` appends): a
/// string's own length without building anything (nearly every call), any
/// other value measured on [`js_string`].
fn js_string_len16(v: Option<&Value<'_>>) -> usize {
    match v {
        Some(Value::Str(s)) => s.len16(),
        v => js_string(v).encode_utf16().count(),
    }
}

/// A `Map` key compared with SameValueZero.
#[derive(Debug, Clone)]
pub(crate) enum IndexKey {
    /// A scalar key (numbers normalised so `-0` equals `0`).
    Scalar(Scalar),
    /// An object key: equal only to itself (unique per chunk).
    Object(u64),
}

impl IndexKey {
    fn same(&self, other: &IndexKey) -> bool {
        match (self, other) {
            (IndexKey::Object(a), IndexKey::Object(b)) => a == b,
            (IndexKey::Scalar(Scalar::Num(a)), IndexKey::Scalar(Scalar::Num(b))) => {
                a == b || (a.is_nan() && b.is_nan())
            }
            (IndexKey::Scalar(a), IndexKey::Scalar(b)) => a == b,
            _ => false,
        }
    }
}

/// The type a block will assemble as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BlockType {
    /// `text`
    Text,
    /// `reasoning`
    Reasoning,
    /// `tool-call`
    ToolCall,
    /// Anything else, as `String(blockType)`.
    Other(Box<str>),
}

impl BlockType {
    fn of(v: Option<&Value<'_>>) -> BlockType {
        match v {
            Some(t) if t.is_str("text") => BlockType::Text,
            Some(t) if t.is_str("reasoning") => BlockType::Reasoning,
            Some(t) if t.is_str("tool-call") => BlockType::ToolCall,
            other => BlockType::Other(Scalar::of(other).display().into()),
        }
    }
}

/// One chunk, reduced to what assembly and pricing need.
#[derive(Debug, Clone)]
pub(crate) enum ChunkOp {
    /// `block-start{index, blockType}`.
    BlockStart {
        /// The index.
        index: IndexKey,
        /// The announced type.
        block_type: BlockType,
    },
    /// `text-delta` / `reasoning-delta`: the length `text` appends.
    TextDelta {
        /// The index.
        index: IndexKey,
        /// `reasoning-delta`.
        reasoning: bool,
        /// UTF-16 length of `String(text)`.
        len: usize,
    },
    /// `tool-call-delta`.
    ToolCallDelta {
        /// The index.
        index: IndexKey,
        /// Length of `name` when it is truthy (it replaces the name so far).
        name_len: Option<usize>,
        /// Length of `String(argumentsDelta)`.
        args_len: usize,
    },
    /// `block-end{index, block}`: the block, already priced.
    BlockEnd {
        /// The index.
        index: IndexKey,
        /// `block.type`.
        block_type: BlockType,
        /// `estimateContent([block])`.
        price: u64,
    },
    /// `usage` (no effect on pricing).
    Usage,
    /// `finish{reason}`: whether `reason.kind` is `max-tokens`.
    Finish {
        /// `reason.kind === "max-tokens"`.
        max_tokens: bool,
    },
    /// A chunk the reference assembler throws on, with its message.
    Invalid(Box<str>),
}

/// The `Map` key of a chunk's `index`. `object_id` numbers object-valued
/// indexes so that each is a distinct key.
fn index_key(v: Option<&Value<'_>>, object_id: &mut u64) -> IndexKey {
    match v {
        Some(Value::Obj(_)) | Some(Value::Arr(_)) => {
            *object_id += 1;
            IndexKey::Object(*object_id)
        }
        // SameValueZero: -0 and 0 are one key.
        other => IndexKey::Scalar(match Scalar::of(other) {
            Scalar::Num(n) => Scalar::Num(n + 0.0),
            s => s,
        }),
    }
}

/// Length of a tool-call delta's `name` when it is truthy.
fn name_len(v: Option<&Value<'_>>) -> Option<usize> {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::Num(n)) if *n == 0.0 || n.is_nan() => None,
        Some(Value::Str(s)) if s.is_empty() => None,
        Some(Value::Str(s)) => Some(s.len16()),
        // A truthy non-string name has no `.length`; price it as 0.
        Some(_) => Some(0),
    }
}

impl ChunkOp {
    /// [`ChunkOp::of`] the chunk a packed-row member expands to, without
    /// building it: `{type: "<kind>-delta", index, [id, name,] text |
    /// argumentsDelta}`, where the delta is a string of UTF-16 length `len`.
    pub(crate) fn of_packed(row: &RowFacts, len: usize) -> ChunkOp {
        // A row's index is a number: SameValueZero makes -0 and 0 one key.
        let index = IndexKey::Scalar(Scalar::Num(row.index + 0.0));
        if row.tool {
            ChunkOp::ToolCallDelta {
                index,
                name_len: row.name_len,
                args_len: len,
            }
        } else {
            ChunkOp::TextDelta {
                index,
                reasoning: row.reasoning,
                len,
            }
        }
    }

    /// [`ChunkOp::of`] the chunk of a plain chunk line the loader described
    /// by its facts instead of building it.
    pub(crate) fn of_line(chunk: &ChunkFact) -> ChunkOp {
        // A number index: SameValueZero makes -0 and 0 one key.
        let key = |index: f64| IndexKey::Scalar(Scalar::Num(index + 0.0));
        let block_type = |kind: BlockKind| match kind {
            BlockKind::Text => BlockType::Text,
            BlockKind::Reasoning => BlockType::Reasoning,
            BlockKind::ToolCall => BlockType::ToolCall,
        };
        match *chunk {
            ChunkFact::BlockStart { index, block } => ChunkOp::BlockStart {
                index: key(index),
                block_type: block_type(block),
            },
            ChunkFact::TextDelta {
                index,
                reasoning,
                len,
            } => ChunkOp::TextDelta {
                index: key(index),
                reasoning,
                len,
            },
            ChunkFact::ToolCallDelta {
                index,
                name_len,
                args_len,
            } => ChunkOp::ToolCallDelta {
                index: key(index),
                name_len,
                args_len,
            },
            // Priced as `price_block` prices these blocks: by lengths.
            ChunkFact::TextBlockEnd {
                index,
                reasoning,
                text_len,
            } => ChunkOp::BlockEnd {
                index: key(index),
                block_type: if reasoning {
                    BlockType::Reasoning
                } else {
                    BlockType::Text
                },
                price: q(text_len) + 4,
            },
            ChunkFact::ToolCallBlockEnd {
                index,
                name_len,
                args_len,
            } => ChunkOp::BlockEnd {
                index: key(index),
                block_type: BlockType::ToolCall,
                price: q(name_len) + q(args_len) + 4,
            },
            ChunkFact::Finish { max_tokens } => ChunkOp::Finish { max_tokens },
            ChunkFact::Usage(_) => ChunkOp::Usage,
        }
    }

    /// Reduce one `assistant/chunk`'s `data.chunk`. `object_id` numbers
    /// object-valued indexes so that each is a distinct key.
    pub(crate) fn of(chunk: Option<&Value<'_>>, object_id: &mut u64) -> ChunkOp {
        let Some(c) = chunk.filter(|c| c.is_obj()) else {
            let what = match chunk {
                Some(Value::Null) => "null",
                None => "undefined",
                // Property access on a primitive yields undefined: assertNever.
                Some(v) => {
                    return ChunkOp::Invalid(
                        format!(
                            "unreachable variant in BlockAssembler.push: {}",
                            v.to_json()
                        )
                        .into(),
                    );
                }
            };
            return ChunkOp::Invalid(
                format!("Cannot read properties of {what} (reading 'type')").into(),
            );
        };
        let mut key = |v: Option<&Value<'_>>| index_key(v, object_id);
        let ty = c.get("type");
        let is = |t: &str| ty.is_some_and(|x| x.is_str(t));
        if is("block-start") {
            ChunkOp::BlockStart {
                index: key(c.get("index")),
                block_type: BlockType::of(c.get("blockType")),
            }
        } else if is("text-delta") || is("reasoning-delta") {
            ChunkOp::TextDelta {
                index: key(c.get("index")),
                reasoning: is("reasoning-delta"),
                len: js_string_len16(c.get("text")),
            }
        } else if is("tool-call-delta") {
            ChunkOp::ToolCallDelta {
                index: key(c.get("index")),
                name_len: name_len(c.get("name")),
                args_len: js_string_len16(c.get("argumentsDelta")),
            }
        } else if is("block-end") {
            match c.get("block") {
                Some(b @ Value::Obj(_)) => ChunkOp::BlockEnd {
                    index: key(c.get("index")),
                    block_type: BlockType::of(b.get("type")),
                    price: price_block(b),
                },
                None => {
                    ChunkOp::Invalid("Cannot read properties of undefined (reading 'type')".into())
                }
                Some(Value::Null) => {
                    ChunkOp::Invalid("Cannot read properties of null (reading 'type')".into())
                }
                Some(b) => ChunkOp::BlockEnd {
                    index: key(c.get("index")),
                    block_type: BlockType::of(None),
                    price: price_block(b),
                },
            }
        } else if is("usage") {
            ChunkOp::Usage
        } else if is("finish") {
            ChunkOp::Finish {
                max_tokens: c
                    .get("reason")
                    .and_then(|r| r.get("kind"))
                    .is_some_and(|k| k.is_str("max-tokens")),
            }
        } else {
            ChunkOp::Invalid(
                format!(
                    "unreachable variant in BlockAssembler.push: {}",
                    c.to_json()
                )
                .into(),
            )
        }
    }
}

/// Why chunks cannot be assembled: the reference's throw, in its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct AssembleError(pub String);

/// The price of the provider output a G2+ `assistant/message` embeds as its
/// `stream` (session-log §13.2): assembled as its chunks one by one would
/// be, a run's members being deltas of one index (their lengths add up), a
/// `chunk` record its own chunk. `price + 4`, or 0 when nothing assembled,
/// as for chunks cited by a G0 message.
pub(crate) fn price_stream(records: &[Value<'_>]) -> Result<u64, AssembleError> {
    let mut asm = Assembler::new();
    let mut object_id = 0u64;
    for r in records {
        let ty = r.get("type");
        let is = |t: &str| ty.is_some_and(|x| x.is_str(t));
        if is("chunk") {
            asm.push(&ChunkOp::of(r.get("chunk"), &mut object_id))?;
            continue;
        }
        let tool = is("tool-call-chunks");
        let members = r
            .get(if tool { "args" } else { "texts" })
            .and_then(|m| m.as_arr());
        let len: usize = members
            .into_iter()
            .flatten()
            .map(|m| js_string_len16(Some(m)))
            .sum();
        // A run's index is a count: SameValueZero makes -0 and 0 one key.
        let index = IndexKey::Scalar(Scalar::Num(
            r.get("index").and_then(|i| i.as_f64()).unwrap_or(0.0) + 0.0,
        ));
        let op = if tool {
            ChunkOp::ToolCallDelta {
                index,
                name_len: name_len(r.get("name")),
                args_len: len,
            }
        } else {
            ChunkOp::TextDelta {
                index,
                reasoning: is("reasoning-chunks"),
                len,
            }
        };
        asm.push_delta(&op, len)?;
    }
    Ok(asm.price()?.map_or(0, |p| p + 4))
}

#[derive(Debug)]
struct Partial {
    index: IndexKey,
    block_type: BlockType,
    text_len: usize,
    args_len: usize,
    name_len: Option<usize>,
    /// A `block-end` payload: its type and price.
    block: Option<(BlockType, u64)>,
}

/// Re-assembles priced blocks from [`ChunkOp`]s fed in the cited order.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    partials: Vec<Partial>,
    max_tokens: bool,
}

impl Assembler {
    /// A fresh assembler.
    pub(crate) fn new() -> Assembler {
        Assembler::default()
    }

    fn ensure(&mut self, index: &IndexKey, block_type: BlockType) -> &mut Partial {
        let pos = match self.partials.iter().position(|p| p.index.same(index)) {
            Some(p) => p,
            None => {
                self.partials.push(Partial {
                    index: index.clone(),
                    block_type,
                    text_len: 0,
                    args_len: 0,
                    name_len: None,
                    block: None,
                });
                self.partials.len() - 1
            }
        };
        &mut self.partials[pos]
    }

    /// [`Self::push`] of a delta `op` with length `len` instead of its own:
    /// a packed-row member (the row's op and the member's length), or a
    /// run of them (their lengths summed: deltas to one index add up). Any
    /// other op is pushed as it is.
    pub(crate) fn push_delta(&mut self, op: &ChunkOp, len: usize) -> Result<(), AssembleError> {
        if self.add_delta(op, len) {
            Ok(())
        } else {
            self.push(op)
        }
    }

    /// Feed one chunk (`BlockAssembler.push`); an error is the reference's throw.
    pub(crate) fn push(&mut self, op: &ChunkOp) -> Result<(), AssembleError> {
        match op {
            ChunkOp::BlockStart { index, block_type } => {
                self.ensure(index, block_type.clone());
            }
            ChunkOp::TextDelta { len, .. } => {
                self.add_delta(op, *len);
            }
            ChunkOp::ToolCallDelta { args_len, .. } => {
                self.add_delta(op, *args_len);
            }
            ChunkOp::BlockEnd {
                index,
                block_type,
                price,
            } => {
                let p = self.ensure(index, block_type.clone());
                if p.block.is_none() {
                    p.block = Some((block_type.clone(), *price));
                }
            }
            ChunkOp::Usage => {}
            ChunkOp::Finish { max_tokens } => self.max_tokens = *max_tokens,
            ChunkOp::Invalid(m) => return Err(AssembleError(m.to_string())),
        }
        Ok(())
    }

    /// Add a delta of length `len` to its block (nothing once the block
    /// has ended); `false` when `op` is not a delta.
    fn add_delta(&mut self, op: &ChunkOp, len: usize) -> bool {
        match op {
            ChunkOp::TextDelta {
                index, reasoning, ..
            } => {
                let t = if *reasoning {
                    BlockType::Reasoning
                } else {
                    BlockType::Text
                };
                let p = self.ensure(index, t);
                if p.block.is_none() {
                    p.text_len += len;
                }
            }
            ChunkOp::ToolCallDelta {
                index, name_len, ..
            } => {
                let p = self.ensure(index, BlockType::ToolCall);
                if p.block.is_none() {
                    if let Some(n) = name_len {
                        p.name_len = Some(*n);
                    }
                    p.args_len += len;
                }
            }
            _ => return false,
        }
        true
    }

    /// `estimateContent(blocks())`, or `None` when no block was assembled
    /// (the reference's "0, not +4" case); an error is the reference's throw
    /// for an unclosed block of an unknown type.
    pub(crate) fn price(&self) -> Result<Option<u64>, AssembleError> {
        let mut total = 0u64;
        let mut kept = 0usize;
        for p in &self.partials {
            let (ty, price) = match &p.block {
                Some((ty, price)) => (ty.clone(), *price),
                None => match &p.block_type {
                    BlockType::Text | BlockType::Reasoning => {
                        (p.block_type.clone(), q(p.text_len) + 4)
                    }
                    BlockType::ToolCall => (
                        BlockType::ToolCall,
                        q(p.name_len.unwrap_or(0)) + q(p.args_len) + 4,
                    ),
                    BlockType::Other(t) => {
                        return Err(AssembleError(format!(
                            "cannot assemble incomplete block of type \"{t}\""
                        )));
                    }
                },
            };
            if self.max_tokens && ty == BlockType::ToolCall {
                continue;
            }
            kept += 1;
            total += price;
        }
        Ok((kept > 0).then_some(total))
    }

    /// Number of distinct block indexes seen.
    #[cfg(test)]
    fn block_count(&self) -> usize {
        self.partials.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::fastlane::{self, ChunkFact, ChunkLines, Lane};

    /// What the normal way makes of a chunk line: its seq and time, and
    /// its labels and chunk as the meter reads them from the built event.
    fn normal_chunk(line: &[u8]) -> Option<(u64, f64, String)> {
        fastlane::normal_chunk_event(line, |ev, env| {
            let d = ev.data();
            let chunk = ChunkOp::of(d.get("chunk"), &mut 0);
            // The usage members the projections read.
            let usage = d.get("chunk").and_then(|c| c.get("usage")).map(|u| {
                [
                    "inputTokens",
                    "outputTokens",
                    "cacheReadTokens",
                    "cacheWriteTokens",
                ]
                .map(|k| u.get(k).map(|v| v.as_f64()))
            });
            let facts = format!(
                "{:?} {:?} {chunk:?} {usage:?}",
                Scalar::of(d.get("turn")),
                Scalar::of(d.get("step"))
            );
            (ev.seq, env.time, facts)
        })
    }

    /// The same of a line the facts lane took.
    fn fast_chunk(lane: Lane) -> (u64, f64, String) {
        let Lane::ChunkFacts { seq, time, facts } = lane else {
            panic!("{lane:?}")
        };
        let chunk = ChunkOp::of_line(&facts.chunk);
        let usage = match facts.chunk {
            ChunkFact::Usage(u) => {
                Some([u.input, u.output, u.cache_read, u.cache_write].map(|n| n.map(Some)))
            }
            _ => None,
        };
        let facts = format!(
            "{:?} {:?} {chunk:?} {usage:?}",
            Scalar::Num(facts.turn),
            Scalar::Num(facts.step)
        );
        (seq, time, facts)
    }

    const CHUNK_LINES: &[&str] = &[
        r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"reasoning"}}}"#,
        r#"{"type":"assistant/chunk","seq":9,"time":2,"data":{"turn":1,"step":2,"chunk":{"type":"block-start","index":3,"blockType":"tool-call"}}}"#,
        r#"{"type":"assistant/chunk","seq":9,"time":2,"data":{"turn":1,"step":2,"chunk":{"type":"block-start","index":3,"blockType":"text"}}}"#,
        r#"{"type":"assistant/chunk","seq":10,"time":-3,"data":{"turn":2,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"reasoning","text":"a\"b\u00e9😀c"}}}}"#,
        r#"{"type":"assistant/chunk","seq":10,"time":3,"data":{"turn":2,"step":1,"chunk":{"type":"block-end","index":1,"block":{"type":"text","text":""}}}}"#,
        r#"{"type":"assistant/chunk","seq":11,"time":4,"data":{"turn":2,"step":1,"chunk":{"type":"block-end","index":1,"block":{"type":"tool-call","id":"c1","name":"grep","arguments":"{\"pattern\":\"fn\\\\s*\"}"}}}}"#,
        r#"{"type":"assistant/chunk","seq":12,"time":5,"data":{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"c1","name":"grep","argumentsDelta":"{\"pat"}}}"#,
        r#"{"type":"assistant/chunk","seq":12,"time":5,"data":{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"c1","argumentsDelta":"tern\":"}}}"#,
        r#"{"type":"assistant/chunk","seq":12,"time":5,"data":{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":1,"name":"","argumentsDelta":""}}}"#,
        r#"{"type":"assistant/chunk","seq":13,"time":6,"data":{"turn":2,"step":1,"chunk":{"type":"text-delta","index":2,"text":"h\u00e9\ud800"}}}"#,
        r#"{"type":"assistant/chunk","seq":13,"time":6,"data":{"turn":2,"step":1,"chunk":{"type":"reasoning-delta","index":2,"text":"x"}}}"#,
        r#"{"type":"assistant/chunk","seq":14,"time":7,"data":{"turn":2,"step":1,"chunk":{"type":"finish","reason":{"kind":"max-tokens"}}}}"#,
        r#"{"type":"assistant/chunk","seq":14,"time":7,"data":{"turn":2,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}"#,
        r#"{"type":"assistant/chunk","seq":15,"time":8,"data":{"turn":2,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":999,"outputTokens":279,"cacheReadTokens":2048,"reasoningTokens":252}}}}"#,
        r#"{"type":"assistant/chunk","seq":15,"time":8,"data":{"turn":2,"step":1,"chunk":{"type":"usage","usage":{"cacheWriteTokens":3,"inputTokens":1,"inputTokens":-2}}}}"#,
        r#"{"type":"assistant/chunk","seq":15,"time":8,"data":{"turn":2,"step":1,"chunk":{"type":"usage","usage":{}}}}"#,
    ];

    #[test]
    fn chunk_line_facts_agree_with_the_normal_way() {
        for l in CHUNK_LINES {
            let lane = fastlane::classify(l.as_bytes(), ChunkLines::Facts).expect(l);
            assert_eq!(Some(fast_chunk(lane)), normal_chunk(l.as_bytes()), "{l}");
        }
        // Valid lines the facts do not describe go the normal way.
        let others: &[&str] = &[
            // usage members that are not integers or have escaped names,
            // unknown block types, escaped names, other keys or order
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":1.5}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":null}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"input\u0054okens":1}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"x":{"inputTokens":1}}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":null}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"image"}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"te\u0078t"}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"max\u002dtokens"}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop","raw":1}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"step":1,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"chunk":{"type":"text-delta","index":0,"text":"a"}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":"0","text":"a"}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":1}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a","x":1}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":"a","extra":true}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"tool-call","id":"c","name":"n","arguments":{}}}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1.5,"chunk":{"type":"text-delta","index":0,"text":"a"}}}"#,
            r#"{"type":"assistant/chunk","seq":8,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":-0,"text":"a"}}}"#,
        ];
        for l in others {
            assert!(normal_chunk(l.as_bytes()).is_some(), "{l}");
            assert_eq!(
                fastlane::classify(l.as_bytes(), ChunkLines::Facts),
                None,
                "{l}"
            );
        }
    }

    #[test]
    fn mutated_chunk_lines_the_facts_lane_takes_agree_with_the_normal_way() {
        let mut rng = crate::test_rng::Lcg(7);
        let (mut taken, mut total) = (0, 0);
        for base in CHUNK_LINES {
            for _ in 0..5_000 {
                let l = rng.mutate_json(base.as_bytes());
                if std::str::from_utf8(&l).is_err() {
                    continue;
                }
                total += 1;
                if let Some(lane) = fastlane::classify(&l, ChunkLines::Facts) {
                    taken += 1;
                    assert_eq!(
                        Some(fast_chunk(lane)),
                        normal_chunk(&l),
                        "{}",
                        String::from_utf8_lossy(&l)
                    );
                }
            }
        }
        assert!(taken > 1000 && taken < total, "{taken} of {total}");
    }

    fn op(json: &str) -> ChunkOp {
        let v = Value::parse(json).unwrap();
        let mut id = 0;
        ChunkOp::of(Some(&v), &mut id)
    }

    fn price(chunks: &[&str]) -> Result<Option<u64>, String> {
        let mut a = Assembler::new();
        for c in chunks {
            a.push(&op(c)).map_err(|e| e.0)?;
        }
        a.price().map_err(|e| e.0)
    }

    #[test]
    fn deltas_concatenate_and_price_once() {
        // "abcde" + "fgh" = 8 units → q(8)+4 = 6; two separate fields would give 2+1+8.
        let p = price(&[
            r#"{"type":"block-start","index":0,"blockType":"text"}"#,
            r#"{"type":"text-delta","index":0,"text":"abcde"}"#,
            r#"{"type":"text-delta","index":0,"text":"fgh"}"#,
        ]);
        assert_eq!(p, Ok(Some(6)));
    }

    #[test]
    fn block_end_replaces_deltas_and_freezes() {
        let p = price(&[
            r#"{"type":"text-delta","index":0,"text":"x"}"#,
            r#"{"type":"block-end","index":0,"block":{"type":"text","text":"123456789"}}"#,
            r#"{"type":"text-delta","index":0,"text":"ignored after end"}"#,
        ]);
        assert_eq!(p, Ok(Some(3 + 4)));
    }

    #[test]
    fn max_tokens_drops_tool_calls_and_empty_is_none() {
        let p = price(&[
            r#"{"type":"tool-call-delta","index":1,"id":"c","name":"bash","argumentsDelta":"{}"}"#,
            r#"{"type":"finish","reason":{"kind":"max-tokens"}}"#,
        ]);
        assert_eq!(p, Ok(None));
        let p = price(&[
            r#"{"type":"tool-call-delta","index":1,"id":"c","name":"bash","argumentsDelta":"{\"a\":"}"#,
            r#"{"type":"tool-call-delta","index":1,"argumentsDelta":"1}"}"#,
            r#"{"type":"finish","reason":{"kind":"stop"}}"#,
        ]);
        // name 4 → 1, arguments 7 → 2, +4
        assert_eq!(p, Ok(Some(7)));
    }

    #[test]
    fn order_is_first_appearance_and_zero_keys_match() {
        let mut a = Assembler::new();
        a.push(&op(r#"{"type":"text-delta","index":-0,"text":"ab"}"#))
            .unwrap();
        a.push(&op(r#"{"type":"text-delta","index":0,"text":"cd"}"#))
            .unwrap();
        a.push(&op(r#"{"type":"text-delta","index":"0","text":"x"}"#))
            .unwrap();
        assert_eq!(a.block_count(), 2);
        assert_eq!(a.price(), Ok(Some(5 + 5)));
    }

    #[test]
    fn javascript_concatenation_lengths() {
        // undefined text appends "undefined" (9 units); an emoji counts 2.
        assert_eq!(js_string_len16(None), 9);
        let v = Value::parse("\"🙂\"").unwrap();
        assert_eq!(js_string_len16(Some(&v)), 2);
        let v = Value::parse("[1,null,\"ab\"]").unwrap();
        assert_eq!(js_string_len16(Some(&v)), 5); // "1,,ab"
        let v = Value::parse("1e21").unwrap();
        assert_eq!(js_string_len16(Some(&v)), 5); // "1e+21"
    }

    #[test]
    fn reference_errors() {
        assert_eq!(
            price(&[r#"{"type":"block-start","index":0,"blockType":"image"}"#]),
            Err("cannot assemble incomplete block of type \"image\"".into())
        );
        assert!(
            price(&[r#"{"type":"mystery"}"#])
                .unwrap_err()
                .starts_with("unreachable variant in BlockAssembler.push: {")
        );
        assert_eq!(
            price(&[r#"{"type":"block-end","index":0}"#]),
            Err("Cannot read properties of undefined (reading 'type')".into())
        );
    }

    #[test]
    fn strict_equality_of_labels() {
        assert!(Scalar::Num(1.0).strict_eq(&Scalar::Num(1.0)));
        assert!(!Scalar::Num(1.0).strict_eq(&Scalar::Str("1".into())));
        assert!(Scalar::Undefined.strict_eq(&Scalar::Undefined));
        assert!(!Scalar::Object.strict_eq(&Scalar::Object));
        assert!(!Scalar::Num(f64::NAN).strict_eq(&Scalar::Num(f64::NAN)));
    }
}
