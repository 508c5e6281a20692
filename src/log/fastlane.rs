//! A fast lane for the log-only chunk records that surface-only readers never
//! look into: packed chunk rows (§3.5) and plain `assistant/chunk` lines.
//!
//! Chunks are most of a log's lines and a third of its bytes, yet they change
//! nothing but counts and the clock. This lane checks them straight from the
//! bytes, without building a value: it recognises only the exact spelling a
//! writer produces (canonical key order, no whitespace, short integer
//! literals) and gives up on anything else, which then takes the normal way
//! (full parse and every rule). So a line it takes is one the normal way
//! would accept with the same seqs and times; a line it refuses is never an
//! error by itself.
//!
//! Readers that need chunks only by their lengths (the token meter and
//! `verify`) get rows as [`super::packed::RowFacts`] and chunk lines as
//! [`ChunkFacts`]: what the built event would have told them, read from
//! the same bytes.

use crate::json::{
    MAX_SAFE, check_string_canonical, check_string_len16, check_value, check_value_canonical,
    short_int,
};

use super::packed::{RowFacts, RowSpan};

/// A line the lane took, and what the loader needs from it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lane {
    /// A valid packed row.
    Row(RowSpan, RowFacts),
    /// A valid `assistant/chunk` event line.
    Chunk {
        /// Its seq.
        seq: u64,
        /// Its time.
        time: f64,
    },
    /// A valid `assistant/chunk` event line and what its chunk carries.
    ChunkFacts {
        /// Its seq.
        seq: u64,
        /// Its time.
        time: f64,
        /// Its labels and chunk.
        facts: ChunkFacts,
    },
}

/// What a plain `assistant/chunk` line carries for readers that need its
/// chunk only by kind and lengths (the token meter): the line's labels and
/// its chunk, reduced.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkFacts {
    /// `data.turn` (a number: the lane takes no other).
    pub turn: f64,
    /// `data.step` (a number).
    pub step: f64,
    /// `data.chunk`.
    pub chunk: ChunkFact,
}

/// A block type the lane knows by name; any other goes the normal way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// `text`
    Text,
    /// `reasoning`
    Reasoning,
    /// `tool-call`
    ToolCall,
}

/// One chunk in the spellings the harness writes; lengths are UTF-16
/// lengths of the strings, indexes are numbers.
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkFact {
    /// `{type: "block-start", index, blockType}`.
    BlockStart {
        /// `index`.
        index: f64,
        /// `blockType`.
        block: BlockKind,
    },
    /// `{type: "text-delta" | "reasoning-delta", index, text}`.
    TextDelta {
        /// `index`.
        index: f64,
        /// `reasoning-delta`.
        reasoning: bool,
        /// Length of `text`.
        len: usize,
    },
    /// `{type: "tool-call-delta", index, [id], [name], argumentsDelta}`.
    ToolCallDelta {
        /// `index`.
        index: f64,
        /// Length of `name` when present and not empty.
        name_len: Option<usize>,
        /// Length of `argumentsDelta`.
        args_len: usize,
    },
    /// `{type: "block-end", index, block: {type: "text" | "reasoning", text}}`.
    TextBlockEnd {
        /// `index`.
        index: f64,
        /// A reasoning block.
        reasoning: bool,
        /// Length of `block.text`.
        text_len: usize,
    },
    /// `{type: "block-end", index, block: {type: "tool-call", id, name, arguments}}`.
    ToolCallBlockEnd {
        /// `index`.
        index: f64,
        /// Length of `block.name`.
        name_len: usize,
        /// Length of `block.arguments`.
        args_len: usize,
    },
    /// `{type: "finish", reason: {kind}}`.
    Finish {
        /// `reason.kind === "max-tokens"`.
        max_tokens: bool,
    },
    /// `{type: "usage", usage: {…}}` whose members are integers.
    Usage(UsageFacts),
}

/// The members of a usage chunk's `usage` that token accounting reads
/// (`None`: absent); the others are only checked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageFacts {
    /// `inputTokens`.
    pub input: Option<f64>,
    /// `outputTokens`.
    pub output: Option<f64>,
    /// `cacheReadTokens`.
    pub cache_read: Option<f64>,
    /// `cacheWriteTokens`.
    pub cache_write: Option<f64>,
}

/// Which chunk lines [`classify`] takes, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ChunkLines {
    /// None: they go the normal way.
    #[default]
    Parse,
    /// Every valid one, by seq and time only (readers that want nothing of
    /// chunks).
    Count,
    /// Those whose chunk [`ChunkFacts`] describes, with their facts.
    Facts,
}

/// Take the line (valid UTF-8, as the parse stage checks first) if it is a
/// packed row, or a plain chunk line as `chunk_lines` says, in its canonical
/// spelling and valid; `None` means "read it the normal way", not "invalid".
/// Readers that count chunk lines want nothing of chunks: their rows' facts
/// carry no lengths.
pub(crate) fn classify(line: &[u8], chunk_lines: ChunkLines) -> Option<Lane> {
    const CHUNK: &[u8] = br#"{"type":"assistant/chunk","seq":"#;
    if line.starts_with(CHUNK) {
        return match chunk_lines {
            ChunkLines::Parse => None,
            ChunkLines::Count => chunk_line(line, CHUNK.len()),
            ChunkLines::Facts => chunk_line_facts(line, CHUNK.len()),
        };
    }
    packed_row(line, chunk_lines != ChunkLines::Count)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    #[inline(always)]
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(s) {
            self.i += s.len();
            Some(())
        } else {
            None
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// A JSON integer literal of at most 15 digits (so exact as a double and
    /// a safe integer), not `-0` and not followed by a fraction or exponent.
    #[inline(always)]
    fn int(&mut self) -> Option<i64> {
        let (neg, v, end) = short_int(self.b, self.i)?;
        if neg && v == 0 {
            return None;
        }
        self.i = end;
        Some(if neg { -(v as i64) } else { v as i64 })
    }

    fn count(&mut self) -> Option<u64> {
        if self.peek() == Some(b'-') {
            return None;
        }
        self.int().map(|v| v as u64)
    }

    /// A string; gives its UTF-16 length.
    #[inline(always)]
    fn string(&mut self) -> Option<usize> {
        let (end, len16) = check_string_len16(self.b, self.i).ok()?;
        self.i = end;
        Some(len16)
    }

    /// A string spelled as `JSON.stringify` writes it; gives its UTF-16
    /// length.
    #[inline(always)]
    fn canonical_string(&mut self) -> Option<usize> {
        let (end, len16, canonical) = check_string_canonical(self.b, self.i).ok()?;
        if !canonical {
            return None;
        }
        self.i = end;
        Some(len16)
    }

    /// The rest of a packed row's `dt` array (after its `[`): each delta
    /// moves `last_time` on (within the safe integers); `in_order` turns
    /// false at a negative one. Returns how many there were.
    #[inline(always)]
    fn dt_list(&mut self, last_time: &mut i64, in_order: &mut bool) -> Option<u64> {
        let mut n = 0;
        if self.lit(b"]").is_none() {
            loop {
                let d = self.int()?;
                *in_order &= d >= 0;
                *last_time += d;
                if last_time.unsigned_abs() as f64 > MAX_SAFE {
                    return None;
                }
                n += 1;
                if self.lit(b",").is_none() {
                    break;
                }
            }
            self.lit(b"]")?;
        }
        Some(n)
    }

    /// The rest of an array of strings (after its `[`), each string's
    /// length pushed to `lens` when given. Returns how many there were.
    #[inline(always)]
    fn string_list(&mut self, mut lens: Option<&mut Vec<u32>>) -> Option<u64> {
        let mut n = 0;
        if self.lit(b"]").is_none() {
            loop {
                let len = self.string()?;
                if let Some(lens) = lens.as_mut() {
                    lens.push(u32::try_from(len).ok()?);
                }
                n += 1;
                if self.lit(b",").is_none() {
                    break;
                }
            }
            self.lit(b"]")?;
        }
        Some(n)
    }

    fn end(&self) -> Option<()> {
        (self.i == self.b.len()).then_some(())
    }

    /// A block type spelled as one of the three names, without escapes.
    fn block_kind(&mut self) -> Option<BlockKind> {
        if self.lit(br#""text""#).is_some() {
            Some(BlockKind::Text)
        } else if self.lit(br#""reasoning""#).is_some() {
            Some(BlockKind::Reasoning)
        } else {
            self.lit(br#""tool-call""#).map(|()| BlockKind::ToolCall)
        }
    }
}

/// `{"type":"assistant/chunk","seq":N,"time":N,"data":…}`: the envelope
/// rules of a non-surface event, checked.
fn chunk_line(line: &[u8], at: usize) -> Option<Lane> {
    let mut c = Cursor { b: line, i: at };
    let seq = c.count()?;
    c.lit(br#","time":"#)?;
    let time = c.int()?;
    c.lit(br#","data":"#)?;
    c.i = check_value(line, c.i, 1).ok()?;
    c.lit(b"}")?;
    c.end()?;
    Some(Lane::Chunk {
        seq,
        time: time as f64,
    })
}

/// `{"type":"assistant/chunk","seq":N,"time":N,"data":{"turn":N,"step":N,
/// "chunk":{…}}}` with a chunk [`ChunkFact`] describes, spelled as the
/// harness writes it (keys in its order, no whitespace); any other line,
/// even a valid one, goes the normal way. Every string is checked as the
/// parser checks it, so a line taken is valid JSON.
fn chunk_line_facts(line: &[u8], at: usize) -> Option<Lane> {
    let mut c = Cursor { b: line, i: at };
    let seq = c.count()?;
    c.lit(br#","time":"#)?;
    let time = c.int()?;
    c.lit(br#","data":{"turn":"#)?;
    let turn = c.int()? as f64;
    c.lit(br#","step":"#)?;
    let step = c.int()? as f64;
    c.lit(br#","chunk":{"type":""#)?;
    let chunk = if c.lit(br#"block-start","index":"#).is_some() {
        let index = c.count()? as f64;
        c.lit(br#","blockType":"#)?;
        let block = c.block_kind()?;
        ChunkFact::BlockStart { index, block }
    } else if c.lit(br#"block-end","index":"#).is_some() {
        let index = c.count()? as f64;
        c.lit(br#","block":{"type":"#)?;
        let fact = match c.block_kind()? {
            BlockKind::ToolCall => {
                c.lit(br#","id":"#)?;
                c.string()?;
                c.lit(br#","name":"#)?;
                let name_len = c.string()?;
                c.lit(br#","arguments":"#)?;
                let args_len = c.string()?;
                ChunkFact::ToolCallBlockEnd {
                    index,
                    name_len,
                    args_len,
                }
            }
            kind => {
                c.lit(br#","text":"#)?;
                ChunkFact::TextBlockEnd {
                    index,
                    reasoning: kind == BlockKind::Reasoning,
                    text_len: c.string()?,
                }
            }
        };
        c.lit(b"}")?;
        fact
    } else if c.lit(br#"tool-call-delta","index":"#).is_some() {
        let index = c.count()? as f64;
        if c.lit(br#","id":"#).is_some() {
            c.string()?;
        }
        let name_len = match c.lit(br#","name":"#) {
            Some(()) => Some(c.string()?).filter(|&n| n > 0),
            None => None,
        };
        c.lit(br#","argumentsDelta":"#)?;
        ChunkFact::ToolCallDelta {
            index,
            name_len,
            args_len: c.string()?,
        }
    } else if c.lit(br#"usage","usage":{"#).is_some() {
        let mut u = UsageFacts::default();
        if c.lit(b"}").is_none() {
            loop {
                let start = c.i;
                c.string()?;
                let key = &line[start..c.i];
                // An escaped key could spell one that is read: the normal way.
                if key.contains(&b'\\') {
                    return None;
                }
                c.lit(b":")?;
                let n = Some(c.int()? as f64);
                // Duplicates: the last one wins, as in JSON.parse.
                match key {
                    br#""inputTokens""# => u.input = n,
                    br#""outputTokens""# => u.output = n,
                    br#""cacheReadTokens""# => u.cache_read = n,
                    br#""cacheWriteTokens""# => u.cache_write = n,
                    _ => {}
                }
                if c.lit(b",").is_none() {
                    break;
                }
            }
            c.lit(b"}")?;
        }
        ChunkFact::Usage(u)
    } else if c.lit(br#"finish","reason":{"kind":"#).is_some() {
        let start = c.i;
        c.string()?;
        let kind = &line[start..c.i];
        // An escaped spelling could still mean "max-tokens": the normal way.
        if kind.contains(&b'\\') {
            return None;
        }
        c.lit(b"}")?;
        ChunkFact::Finish {
            max_tokens: kind == br#""max-tokens""#,
        }
    } else {
        let reasoning = c.lit(br#"reasoning-delta","index":"#).is_some();
        if !reasoning {
            c.lit(br#"text-delta","index":"#)?;
        }
        let index = c.count()? as f64;
        c.lit(br#","text":"#)?;
        ChunkFact::TextDelta {
            index,
            reasoning,
            len: c.string()?,
        }
    };
    c.lit(b"}}}")?;
    c.end()?;
    Some(Lane::ChunkFacts {
        seq,
        time: time as f64,
        facts: ChunkFacts { turn, step, chunk },
    })
}

/// A packed row, checked as [`super::packed::check`] does.
fn packed_row(line: &[u8], with_lengths: bool) -> Option<Lane> {
    let mut c = Cursor { b: line, i: 0 };
    c.lit(br#"{"type":""#)?;
    let tool = if c.lit(br#"text-chunks""#).is_some() || c.lit(br#"reasoning-chunks""#).is_some() {
        false
    } else {
        c.lit(br#"tool-call-chunks""#)?;
        true
    };
    c.lit(br#","seq0":"#)?;
    let seq0 = c.count()?;
    c.lit(br#","time0":"#)?;
    let time0 = c.int()?;
    c.lit(br#","data":{"#)?;
    // Data keys, each at most once, in any order.
    const TURN: u8 = 1;
    const STEP: u8 = 2;
    const INDEX: u8 = 4;
    const DT: u8 = 8;
    const PAYLOAD: u8 = 16;
    const ID: u8 = 32;
    const NAME: u8 = 64;
    let payload_key: &[u8] = if tool {
        br#""args":["#
    } else {
        br#""texts":["#
    };
    let mut seen = 0u8;
    let mut members = 0u64;
    let mut dt_len = 0u64;
    let mut last_time = time0;
    let mut in_order = true;
    let mut facts = RowFacts {
        tool,
        reasoning: line[9..].starts_with(b"reasoning"),
        turn: 0.0,
        step: 0.0,
        index: 0.0,
        name_len: None,
        lens: Vec::new(),
    };
    loop {
        let key = if c.lit(br#""turn":"#).is_some() {
            TURN
        } else if c.lit(br#""step":"#).is_some() {
            STEP
        } else if c.lit(br#""index":"#).is_some() {
            INDEX
        } else if c.lit(br#""dt":["#).is_some() {
            DT
        } else if c.lit(payload_key).is_some() {
            PAYLOAD
        } else if tool && c.lit(br#""id":"#).is_some() {
            ID
        } else if tool && c.lit(br#""name":"#).is_some() {
            NAME
        } else {
            return None;
        };
        if seen & key != 0 {
            return None;
        }
        seen |= key;
        match key {
            TURN => facts.turn = c.int()? as f64,
            STEP => facts.step = c.int()? as f64,
            INDEX => facts.index = c.int()? as f64,
            DT => dt_len = c.dt_list(&mut last_time, &mut in_order)?,
            PAYLOAD => members = c.string_list(with_lengths.then_some(&mut facts.lens))?,
            NAME => facts.name_len = Some(c.string()?).filter(|&n| n > 0),
            _ => {
                c.string()?;
            }
        }
        if c.lit(b",").is_none() {
            break;
        }
    }
    c.lit(b"}}")?;
    c.end()?;
    let payload_len = members;
    let required = TURN | STEP | INDEX | DT | PAYLOAD | if tool { ID } else { 0 };
    if seen & required != required || payload_len == 0 || dt_len != payload_len - 1 {
        return None;
    }
    if (seq0 + payload_len - 1) as f64 > MAX_SAFE {
        return None;
    }
    Some(Lane::Row(
        RowSpan {
            seq0,
            count: payload_len,
            first_time: time0,
            last_time,
            in_order,
        },
        facts,
    ))
}

/// A G2+ `data.stream` (session-log §13.2) checked straight from its bytes,
/// for readers that never look into embedded streams (the lane of
/// [`crate::log::LoadOptions::skip_chunk_events`] in generations 2 and
/// later): an array of records in the spelling DSH's encoder writes —
/// `{"type":"chunk","time":T,"chunk":{…}}`, or a run
/// `{"type":"text-chunks"|"reasoning-chunks","time0":T,"index":I,"dt":[…],"texts":[…]}` /
/// `{"type":"tool-call-chunks","time0":T,"index":I,"dt":[…],"id":S,"name":S?,"args":[…]}` —
/// every rule the normal way checks (`later::check_stream`) holding, every
/// string and value spelled as `JSON.stringify` writes it. Gives the offset
/// just past the array; `None` means "parse it the normal way", not
/// "invalid". `depth` is the array's nesting depth in its line.
pub(crate) fn skip_stream(b: &[u8], at: usize, depth: usize) -> Option<usize> {
    let mut c = Cursor { b, i: at };
    c.lit(b"[")?;
    if c.lit(b"]").is_some() {
        return Some(c.i);
    }
    loop {
        stream_record(&mut c, depth + 1)?;
        if c.lit(b",").is_none() {
            break;
        }
    }
    c.lit(b"]")?;
    Some(c.i)
}

/// One record of a stream ([`skip_stream`]) at the cursor.
fn stream_record(c: &mut Cursor<'_>, depth: usize) -> Option<()> {
    c.lit(br#"{"type":""#)?;
    if c.lit(br#"chunk","time":"#).is_some() {
        c.int()?;
        c.lit(br#","chunk":"#)?;
        if c.peek() != Some(b'{') {
            return None;
        }
        let (end, canonical) = check_value_canonical(c.b, c.i, depth + 1).ok()?;
        if !canonical {
            return None;
        }
        c.i = end;
        return c.lit(b"}");
    }
    let tool = if c.lit(br#"text-chunks""#).is_some() || c.lit(br#"reasoning-chunks""#).is_some() {
        false
    } else {
        c.lit(br#"tool-call-chunks""#)?;
        true
    };
    c.lit(br#","time0":"#)?;
    let mut time = c.int()?;
    c.lit(br#","index":"#)?;
    c.count()?;
    c.lit(br#","dt":["#)?;
    let mut gaps = 0u64;
    if c.lit(b"]").is_none() {
        loop {
            time += c.int()?;
            if time.unsigned_abs() as f64 > MAX_SAFE {
                return None;
            }
            gaps += 1;
            if c.lit(b",").is_none() {
                break;
            }
        }
        c.lit(b"]")?;
    }
    if tool {
        c.lit(br#","id":"#)?;
        if c.canonical_string()? == 0 {
            return None;
        }
        if c.lit(br#","name":"#).is_some() {
            c.canonical_string()?;
        }
        c.lit(br#","args":["#)?;
    } else {
        c.lit(br#","texts":["#)?;
    }
    let mut members = 0u64;
    loop {
        c.canonical_string()?;
        members += 1;
        if c.lit(b",").is_none() {
            break;
        }
    }
    c.lit(b"]}")?;
    (gaps + 1 == members).then_some(())
}

/// For tests here and in the meter: a line as the normal way reads it,
/// when that is a valid `assistant/chunk` event (parsed, built, checked,
/// no surface op), handed to `f` with its envelope.
#[cfg(test)]
pub(crate) fn normal_chunk_event<R>(
    line: &[u8],
    f: impl FnOnce(&crate::event::Event<'_>, super::validate::Envelope) -> R,
) -> Option<R> {
    use crate::event::{Event, Kind};
    let v = crate::json::Value::parse(std::str::from_utf8(line).ok()?).ok()?;
    let ev = Event {
        kind: Kind::of(&v.get("type")?.as_str()?),
        seq: v.get("seq")?.as_count()?,
        line: 2,
        value: v,
    };
    let (env, op) = super::validate::check_event(&ev).ok()?;
    (ev.kind == Kind::AssistantChunk && op.is_none()).then(|| f(&ev, env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Value;
    use crate::log::packed;

    fn normal_way(line: &[u8]) -> Option<Lane> {
        let v = Value::parse(std::str::from_utf8(line).ok()?).ok()?;
        let span = packed::check(&v).ok()?;
        Some(Lane::Row(span, RowFacts::of(&v)?))
    }

    #[test]
    fn rows_agree_with_the_normal_way() {
        let rows: &[&str] = &[
            r#"{"type":"text-chunks","seq0":1,"time0":10,"data":{"turn":1,"step":1,"index":0,"dt":[1,2],"texts":["a","b","c"]}}"#,
            r#"{"type":"reasoning-chunks","seq0":7,"time0":-5,"data":{"dt":[],"texts":["\ud800x"],"turn":2,"step":3,"index":1}}"#,
            r#"{"type":"tool-call-chunks","seq0":6,"time0":100,"data":{"turn":1,"step":1,"index":0,"id":"c","name":"bash","dt":[2,-1],"args":["{\"a","\":","1}"]}}"#,
            r#"{"type":"tool-call-chunks","seq0":6,"time0":100,"data":{"turn":1,"step":1,"index":0,"id":"c","dt":[],"args":["x"]}}"#,
        ];
        for r in rows {
            let fast = classify(r.as_bytes(), ChunkLines::Parse).expect(r);
            assert_eq!(Some(fast), normal_way(r.as_bytes()), "{r}");
            // Without lengths when nothing of chunks is wanted.
            let Some(Lane::Row(span, facts)) = classify(r.as_bytes(), ChunkLines::Count) else {
                panic!("{r}")
            };
            assert_eq!(
                Some(Lane::Row(
                    span,
                    RowFacts {
                        lens: vec![],
                        ..facts
                    }
                )),
                {
                    let Some(Lane::Row(s, f)) = normal_way(r.as_bytes()) else {
                        panic!()
                    };
                    Some(Lane::Row(s, RowFacts { lens: vec![], ..f }))
                }
            );
        }
    }

    #[test]
    fn anything_unusual_goes_the_normal_way() {
        let lines: &[&str] = &[
            // wrong dt length, empty payload, missing key, duplicate key
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b"]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"dt":[],"texts":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            // tool keys on a text row, missing id, unknown key
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"id":"x","dt":[],"texts":["a"]}}"#,
            r#"{"type":"tool-call-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"args":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"],"x":1}}"#,
            // spelling the lane does not take: whitespace, fractions, -0, long numbers
            r#"{"type":"text-chunks", "seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":0.5,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":-0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            r#"{"type":"text-chunks","seq0":1,"time0":9007199254740993,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
            // bad JSON inside a string, trailing bytes
            "{\"type\":\"text-chunks\",\"seq0\":1,\"time0\":0,\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[],\"texts\":[\"a\u{1}\"]}}",
            r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}} "#,
            // chunk lines: extra keys, bad data, negative seq, trailing comma
            r#"{"type":"assistant/chunk","seq":3,"time":1,"data":{},"surfaceOp":{"op":"append"}}"#,
            r#"{"type":"assistant/chunk","seq":3,"time":1,"data":{"a":[1,]}}"#,
            r#"{"type":"assistant/chunk","seq":-3,"time":1,"data":{}}"#,
            r#"{"type":"assistant/chunk","seq":3,"time":1}"#,
        ];
        for l in lines {
            assert_eq!(classify(l.as_bytes(), ChunkLines::Count), None, "{l}");
            assert_eq!(classify(l.as_bytes(), ChunkLines::Facts), None, "{l}");
        }
    }

    /// What the normal way makes of a line the lane took.
    fn normal_lane(line: &[u8]) -> Option<Lane> {
        let v = Value::parse(std::str::from_utf8(line).ok()?).ok()?;
        if packed::is_row(&v) {
            let span = packed::check(&v).ok()?;
            return Some(Lane::Row(span, RowFacts::of(&v)?));
        }
        normal_chunk_event(line, |ev, env| Lane::Chunk {
            seq: ev.seq,
            time: env.time,
        })
    }

    #[test]
    fn mutated_lines_the_lane_takes_agree_with_the_normal_way() {
        let seeds: &[&[u8]] = &[
            br#"{"type":"text-chunks","seq0":1,"time0":10,"data":{"turn":1,"step":1,"index":0,"dt":[1,2],"texts":["a","b\n","c"]}}"#,
            br#"{"type":"tool-call-chunks","seq0":6,"time0":100,"data":{"turn":1,"step":1,"index":0,"id":"c","name":"bash","dt":[2,-1],"args":["{\"a","\":","1}"]}}"#,
            br#"{"type":"assistant/chunk","seq":8,"time":7,"data":{"turn":1,"chunk":{"type":"text-delta","index":0,"text":"h\u00e9"}}}"#,
        ];
        let mut rng = crate::test_rng::Lcg(42);
        let (mut taken, mut total) = (0, 0);
        for base in seeds {
            assert_eq!(
                classify(base, ChunkLines::Parse).or(classify(base, ChunkLines::Count)),
                normal_lane(base)
            );
            for _ in 0..20_000 {
                let l = rng.mutate_json(base);
                // The parse stage hands over valid UTF-8 only.
                if std::str::from_utf8(&l).is_err() {
                    continue;
                }
                total += 1;
                if let Some(lane) =
                    classify(&l, ChunkLines::Parse).or_else(|| classify(&l, ChunkLines::Count))
                {
                    taken += 1;
                    assert_eq!(
                        Some(lane),
                        normal_lane(&l),
                        "{}",
                        String::from_utf8_lossy(&l)
                    );
                }
            }
        }
        assert!(taken > 1000 && taken < total, "{taken} of {total}");
    }

    #[test]
    fn chunk_lines() {
        let l = br#"{"type":"assistant/chunk","seq":8,"time":-7,"data":{"turn":1,"chunk":{"type":"block-start","index":0,"x":[1.5e3,null,true,"\u00e9"]}}}"#;
        assert_eq!(
            classify(l, ChunkLines::Count),
            Some(Lane::Chunk { seq: 8, time: -7.0 })
        );
        assert_eq!(classify(l, ChunkLines::Parse), None);
        // Not a chunk the facts describe.
        assert_eq!(classify(l, ChunkLines::Facts), None);
    }

    #[test]
    fn streams_in_the_encoders_spelling_are_checked_from_their_bytes() {
        let ok = [
            r#"[]"#,
            r#"[{"type":"chunk","time":5,"chunk":{"type":"block-start","index":0,"blockType":"text"}},{"type":"text-chunks","time0":6,"index":0,"dt":[1,-2],"texts":["a","b\n","c"]}]"#,
            r#"[{"type":"tool-call-chunks","time0":1,"index":1,"dt":[],"id":"c1","name":"grep","args":["{"]},{"type":"tool-call-chunks","time0":2,"index":1,"dt":[0],"id":"c1","args":["x","}"]}]"#,
            r#"[{"type":"reasoning-chunks","time0":1,"index":0,"dt":[],"texts":[""]}]"#,
        ];
        for s in ok {
            let b = format!("{s}}}");
            assert_eq!(skip_stream(b.as_bytes(), 0, 2), Some(s.len()), "{s}");
        }
        // Anything else goes the normal way (which may accept or refuse it).
        let normal = [
            r#"[{"type":"text-chunks","time0":6,"index":0,"dt":[],"texts":[]}]"#,
            r#"[{"type":"text-chunks","time0":6,"index":0,"dt":[1],"texts":["a"]}]"#,
            r#"[{"type":"text-chunks","index":0,"time0":6,"dt":[],"texts":["a"]}]"#,
            r#"[{"type":"text-chunks","time0":6,"index":-1,"dt":[],"texts":["a"]}]"#,
            r#"[{"type":"text-chunks","time0":6,"index":0,"dt":[],"texts":["\/"]}]"#,
            r#"[{"type":"tool-call-chunks","time0":1,"index":1,"dt":[],"id":"","args":["{"]}]"#,
            r#"[{"type":"chunk","time":5,"chunk":{"type":"usage","usage":{"inputTokens":1.0}}}]"#,
            r#"[{"type":"chunk","time":5,"chunk":[]}]"#,
            r#"[{"type":"other","time":5}]"#,
            r#"[ {"type":"chunk","time":5,"chunk":{}}]"#,
            r#"[{"type":"text-chunks","time0":9007199254740990,"index":0,"dt":[5],"texts":["a","b"]}]"#,
        ];
        for s in normal {
            assert_eq!(skip_stream(s.as_bytes(), 0, 2), None, "{s}");
        }
    }
}
