//! The surface: the ordered nodes the model sees, folded from the log.
//!
//! The log keeps everything; the surface forgets. Most surface events append
//! their own seq. A replacement names a start node and an end node that are
//! both still current, removes that inclusive run and puts its own seq where
//! the start node stood. Endpoints are found by membership, never by comparing
//! seqs: after the first replacement the list is no longer sorted by seq.
//! Checks run before an event changes anything, so a `SurfaceError` shows the
//! surface as it was. Spec: session-log §7 (rules R1–R16).
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! // The model sees the nodes in order; a compaction replaced a span.
//! let seqs: Vec<u64> = log.surface.nodes.iter().map(|n| n.seq).collect();
//! assert!(!seqs.is_empty());
//! assert!(log.surface.replace_generation > 0);
//! println!("{} nodes, {} tokens by DSH's heuristic", seqs.len(), log.surface.tokens);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::hash::Hasher;
use std::sync::Arc;

use crate::event::{Event, Kind, OwnedEvent, ReplaceOp, SurfaceOp};
use crate::json::Value;

/// Where a node's event can be found again.
#[derive(Debug, Clone)]
pub enum NodeBody {
    /// A line of the (plain, seekable) log file: re-read on demand, so the
    /// surface costs memory per node, not per byte.
    Span {
        /// Byte offset of the line.
        offset: u64,
        /// Length of the line without its `\n`.
        len: u32,
    },
    /// Kept in memory: synthetic closers, upgraded legacy events, and every
    /// node of a log that cannot be re-read (stdin, Zstandard).
    Owned(Arc<OwnedEvent>),
}

/// One surface node.
#[derive(Debug, Clone)]
pub struct Node {
    /// The event's seq.
    pub seq: u64,
    /// `user/message`, `assistant/message` or `tool/result`.
    pub kind: Kind,
    /// Heuristic price of its derived message (0 when it derives none).
    pub tokens: u64,
    /// Whether it derives a message (an empty assistant message does not).
    pub derives: bool,
    /// The message id.
    pub msg_id: Option<Box<str>>,
    /// For tool results: the call id.
    pub call_id: Option<Box<str>>,
    /// For assistant messages: the tool-call ids it requests, in order.
    pub tool_calls: Vec<Box<str>>,
    /// Where to find the event again.
    pub body: NodeBody,
    /// Where the derived message's JSON text sits in the node's line (a
    /// range of its bytes), when the line is exactly what `JSON.stringify`
    /// writes: the message is then copied from the file instead of
    /// re-serialised.
    pub message_text: Option<(u32, u32)>,
    /// For tool results the pruner can count without failing, an upper
    /// bound on their text's code points (see
    /// [`text_units_bound`]); `None` otherwise.
    pub(crate) text_units: Option<u64>,
}

/// One replace op as applied (`foldSurface(...).replacements`): the range
/// of raw seqs it shadows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Replacement {
    /// The replacing event.
    pub seq: u64,
    /// Start node seq.
    pub start: u64,
    /// End node seq.
    pub end: u64,
    /// Nodes removed, in surface order.
    #[serde(rename = "shadowedSeqs")]
    pub shadowed: Vec<u64>,
}

/// A rule of session-log §7.4 that an event broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SurfaceError {
    /// `R1` … `R16`.
    pub rule: &'static str,
    /// What was wrong, in the reference's words where it has them.
    pub message: String,
}

/// What applying one surface event did.
#[derive(Debug)]
pub struct Applied {
    /// The op.
    pub op: SurfaceOp,
    /// The new node's price.
    pub tokens: u64,
    /// Position the node landed at.
    pub position: usize,
    /// Nodes removed (empty for append).
    pub shadowed: Vec<Node>,
}

/// The folded surface.
#[derive(Debug, Default, Clone)]
pub struct Surface {
    /// Current nodes in model-visible order.
    pub nodes: Vec<Node>,
    /// Accepted replaces so far.
    pub replace_generation: u64,
    /// Every replace in log order.
    pub replacements: Vec<Replacement>,
    /// Sum of node prices.
    pub tokens: u64,
    /// Where [`NodeBody::Span`] bodies can be read again, for the rare rule
    /// that needs an old node's event (R16).
    pub reread: Option<Arc<dyn NodeLines>>,
    /// Where each node's seq sat when it was last placed by [`Self::apply`]
    /// (a hint, checked before use): a replace finds its range without a
    /// scan of the surface.
    pub(crate) at: std::collections::HashMap<u64, usize>,
    /// R16 fingerprints a caller took from events it read itself.
    pub(crate) known: KnownOriginals,
}

/// R16 fingerprints of events a caller read itself (a pruner reads every
/// result it rewrites), so that a replacement of one is checked without
/// reading its line again (see `Surface::remember`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KnownOriginals(std::collections::HashMap<u64, u64>);

impl KnownOriginals {
    /// Record `data`: the `data` of the event at `seq`, as the log holds it.
    #[cfg(test)]
    fn insert(&mut self, seq: u64, data: &Value<'_>) {
        self.0.insert(seq, rewrite_key(data));
    }

    /// Record a fingerprint taken with [`rewrite_key`].
    pub(crate) fn insert_key(&mut self, seq: u64, key: u64) {
        self.0.insert(seq, key);
    }
}

/// Reads a log line again by its place in the file.
///
/// The surface fold keeps most node bodies as `(offset, len)` spans into
/// the log and needs one back only for rule R16. It gets them through this
/// trait so that it does not depend on the loader's file handling (the
/// loader depends on the surface, not the other way round).
pub trait NodeLines: Send + Sync + std::fmt::Debug {
    /// The `len` bytes of the line that starts at byte `offset`.
    fn line_at(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>>;
}

fn err(rule: &'static str, message: impl Into<String>) -> SurfaceError {
    SurfaceError {
        rule,
        message: message.into(),
    }
}

/// Event-local rules R1–R4.
pub(crate) fn check_local(ev: &Event<'_>) -> Result<Option<SurfaceOp>, SurfaceError> {
    check_local_with(
        ev,
        ev.value.has("surfaceOp"),
        ev.value.has("sourceEventSeqs"),
    )
}

/// [`check_local`] when the envelope was already scanned.
pub(crate) fn check_local_with(
    ev: &Event<'_>,
    has_op: bool,
    has_src: bool,
) -> Result<Option<SurfaceOp>, SurfaceError> {
    if !ev.kind.is_surface() {
        if has_op {
            return Err(err(
                "R1",
                format!(
                    "{} is not a surface event type and cannot carry surfaceOp",
                    ev.type_name()
                ),
            ));
        }
        if has_src {
            return Err(err(
                "R2",
                format!(
                    "{} is not a surface event type and cannot carry sourceEventSeqs",
                    ev.type_name()
                ),
            ));
        }
        return Ok(None);
    }
    let Some(raw) = ev.value.get("surfaceOp") else {
        return Err(err("R3", format!("{} requires surfaceOp", ev.type_name())));
    };
    match crate::event::parse_surface_op(raw) {
        Some(op) => Ok(Some(op)),
        None => Err(err("R4", format!("invalid surfaceOp {}", raw.to_json()))),
    }
}

/// Source rules R5–R9 (R6's exception: `[]` on assistant messages),
/// collecting the seqs into `keep` when asked (a replacement needs them; an
/// append only needs them checked). `true` when the event has
/// `sourceEventSeqs`.
fn scan_sources(ev: &Event<'_>, mut keep: Option<&mut Vec<u64>>) -> Result<bool, SurfaceError> {
    let Some(raw) = ev.value.get("sourceEventSeqs") else {
        return Ok(false);
    };
    let Some(arr) = raw.as_arr() else {
        return Err(err("R5", "sourceEventSeqs must be an array"));
    };
    if arr.is_empty() && ev.kind != Kind::AssistantMessage {
        return Err(err("R6", "sourceEventSeqs must not be empty"));
    }
    let mut increasing = true;
    let mut prev: Option<u64> = None;
    let mut first_late = None;
    for v in arr {
        let Some(n) = v.as_count() else {
            return Err(err(
                "R7",
                format!("sourceEventSeqs member {} is not a count", v.to_json()),
            ));
        };
        increasing &= prev.is_none_or(|p| p < n);
        prev = Some(n);
        if n >= ev.seq && first_late.is_none() {
            first_late = Some(n);
        }
        if let Some(k) = keep.as_deref_mut() {
            k.push(n);
        }
    }
    // Duplicates: a strictly increasing list (the usual case) has none.
    if !increasing {
        let mut seen = std::collections::HashSet::new();
        for n in arr.iter().filter_map(|v| v.as_count()) {
            if !seen.insert(n) {
                return Err(err("R8", format!("sourceEventSeqs repeats seq {n}")));
            }
        }
    }
    if let Some(n) = first_late {
        return Err(err(
            "R9",
            format!(
                "sourceEventSeqs member {n} is not earlier than seq {}",
                ev.seq
            ),
        ));
    }
    Ok(true)
}

/// Fingerprint a tool result's `data` with the nested result content blanked,
/// key order ignored (R16): two datas get one key exactly when their sorted
/// canonical JSON texts are equal (numbers as JavaScript prints them, strings
/// by UTF-16 units). Hashed as it is walked: no copy, no text.
pub(crate) fn rewrite_key(data: &Value<'_>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    hash_canonical(data, Blank::Data, &mut h);
    h.finish()
}

/// Where the walk is on the way to `data.message.content[0].content`, the
/// member R16 lets a replacement change.
#[derive(Clone, Copy, PartialEq)]
enum Blank {
    Data,
    Message,
    FirstBlock,
    Nowhere,
}

fn hash_canonical(v: &Value<'_>, at: Blank, h: &mut impl Hasher) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + *b as u8),
        // JavaScript prints -0 as 0; every other double prints distinctly.
        Value::Num(n) => {
            h.write_u8(3);
            h.write_u64((n + 0.0).to_bits());
        }
        Value::Str(s) => hash_str(s, h),
        Value::Arr(items) => {
            h.write_u8(5);
            h.write_usize(items.len());
            for item in items {
                hash_canonical(item, Blank::Nowhere, h);
            }
        }
        Value::Obj(members) => {
            h.write_u8(6);
            h.write_usize(members.len());
            let mut sorted: Vec<&(crate::json::JStr<'_>, Value<'_>)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp_units(&b.0));
            for (k, val) in sorted {
                hash_str(k, h);
                match (at, k.eq_str("message"), k.eq_str("content")) {
                    (Blank::Data, true, _) => hash_canonical(val, Blank::Message, h),
                    (Blank::Message, _, true) => match val {
                        Value::Arr(blocks)
                            if blocks
                                .first()
                                .is_some_and(|b| b.is_obj() && b.has("content")) =>
                        {
                            h.write_u8(5);
                            h.write_usize(blocks.len());
                            hash_canonical(&blocks[0], Blank::FirstBlock, h);
                            for b in &blocks[1..] {
                                hash_canonical(b, Blank::Nowhere, h);
                            }
                        }
                        other => hash_canonical(other, Blank::Nowhere, h),
                    },
                    // The blanked member: every content is the same here.
                    (Blank::FirstBlock, _, true) => h.write_u8(7),
                    _ => hash_canonical(val, Blank::Nowhere, h),
                }
            }
        }
    }
}

fn hash_str(s: &crate::json::JStr<'_>, h: &mut impl Hasher) {
    match s.as_str() {
        // UTF-8 text stands for its UTF-16 units one to one.
        Some(text) => {
            h.write_u8(4);
            h.write_usize(text.len());
            h.write(text.as_bytes());
        }
        // Lone surrogates: the units themselves.
        None => {
            let units = s.units();
            h.write_u8(8);
            h.write_usize(units.len());
            for u in units {
                h.write_u16(u);
            }
        }
    }
}

/// Facts about a surface event's message, computed once when it joins.
pub(crate) struct NodeFacts {
    /// Price.
    pub tokens: u64,
    /// Derives a message.
    pub derives: bool,
    /// Message id.
    pub msg_id: Option<Box<str>>,
    /// Tool result call id.
    pub call_id: Option<Box<str>>,
    /// Requested tool-call ids.
    pub tool_calls: Vec<Box<str>>,
    /// The pruner's bound on a tool result's text ([`Node::text_units`]).
    pub(crate) text_units: Option<u64>,
}

/// Compute [`NodeFacts`] for a surface event.
pub(crate) fn node_facts(ev: &Event<'_>) -> NodeFacts {
    let msg = ev.message();
    let projected = project(ev);
    let derives = projected.is_some();
    let tokens = match (ev.kind, projected) {
        (_, None) => 0,
        (Kind::SystemMessage, Some(m)) => crate::heuristic::price_system_message(m),
        (_, Some(m)) => crate::heuristic::price_message(m),
    };
    let msg_id = msg
        .and_then(|m| m.get("id"))
        .and_then(|i| i.as_jstr())
        .map(|s| s.to_lossy().into());
    let call_id = if ev.kind == Kind::ToolResult {
        msg.and_then(|m| m.get("source"))
            .and_then(|s| s.get("callId"))
            .and_then(|c| c.as_jstr())
            .map(|s| s.to_lossy().into())
    } else {
        None
    };
    let mut tool_calls = Vec::new();
    if ev.kind == Kind::AssistantMessage
        && let Some(blocks) = msg.and_then(|m| m.get("content")).and_then(|c| c.as_arr())
    {
        for b in blocks {
            if b.get("type").is_some_and(|t| t.is_str("tool-call"))
                && let Some(id) = b.get("id").and_then(|i| i.as_jstr())
            {
                tool_calls.push(id.to_lossy().into());
            }
        }
    }
    NodeFacts {
        tokens,
        derives,
        msg_id,
        call_id,
        tool_calls,
        text_units: text_units_bound(ev),
    }
}

/// The UTF-16 length of a tool result's text, when its content has the
/// shape the pruner counts without failing (`message.content[0].content`
/// a list of blocks, none of them `null`, every text block's text a
/// string): an upper bound on the code points the pruner would count (a
/// code point is one or two units), taken from lengths the parser counted
/// on its way. A result bounded within the prune threshold is left alone
/// without being read again. `None` for any other shape or event (the
/// pruner then reads the result and reports what it finds).
pub(crate) fn text_units_bound(ev: &Event<'_>) -> Option<u64> {
    if ev.kind != Kind::ToolResult {
        return None;
    }
    // The same path the pruner's `rewrite` takes, step by step.
    let blocks = ev
        .data()
        .get("message")?
        .get("content")?
        .as_arr()?
        .first()?
        .get("content")?
        .as_arr()?;
    let mut units = 0u64;
    for b in blocks {
        if matches!(b, Value::Null) {
            return None;
        }
        if b.get("type").is_some_and(|t| t.is_str("text")) {
            match b.get("text") {
                Some(Value::Str(s)) => units += s.len16() as u64,
                _ => return None,
            }
        }
    }
    Some(units)
}

/// The message an event projects to (session-log §8.1).
pub fn project<'e, 'a>(ev: &'e Event<'a>) -> Option<&'e Value<'a>> {
    match ev.kind {
        Kind::UserMessage => Some(ev.data()),
        Kind::AssistantMessage | Kind::SystemMessage => {
            let m = ev.data().get("message")?;
            match m.get("content").and_then(|c| c.as_arr()) {
                Some(a) if !a.is_empty() => Some(m),
                _ => None,
            }
        }
        Kind::ToolResult => ev.data().get("message"),
        _ => None,
    }
}

/// [`project`] by value: the message taken out of the event, not copied.
pub(crate) fn into_projected(ev: Event<'_>) -> Option<Value<'_>> {
    project(&ev)?;
    let kind = ev.kind;
    let mut value = ev.value;
    // As `Event::data` reads it: null when missing.
    let mut data = value.remove("data").unwrap_or(Value::Null);
    match kind {
        Kind::UserMessage => Some(data),
        _ => data.remove("message"),
    }
}

impl Surface {
    /// Take R16 fingerprints a caller recorded from events it read, so
    /// that replacing one of those nodes does not read its line again.
    pub(crate) fn remember(&mut self, known: &KnownOriginals) {
        self.known
            .0
            .extend(known.0.iter().map(|(&seq, &key)| (seq, key)));
    }

    /// The R16 fingerprint of a node's event, read again if it is not in
    /// memory: computed only when a replacement needs it, not for every
    /// tool result that joins.
    fn rewrite_key_of(&self, node: &Node) -> Result<u64, SurfaceError> {
        let (offset, len) = match &node.body {
            NodeBody::Owned(ev) => return Ok(rewrite_key(ev.data())),
            NodeBody::Span { offset, len } => (*offset, *len as usize),
        };
        if let Some(&key) = self.known.0.get(&node.seq) {
            return Ok(key);
        }
        let cannot = |why: String| {
            err(
                "R16",
                format!("cannot read seq {} again to compare it: {why}", node.seq),
            )
        };
        let lines = self
            .reread
            .as_ref()
            .ok_or_else(|| cannot("no file".into()))?;
        let line = lines
            .line_at(offset, len)
            .map_err(|e| cannot(e.to_string()))?;
        // Decoded as the loader decodes lines: invalid UTF-8 becomes U+FFFD
        // (checked the fast way first, as nearly every line is valid).
        let text = match simdutf8::basic::from_utf8(&line) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(&line),
        };
        let v = Value::parse(&text).map_err(|_| cannot("the log changed".into()))?;
        Ok(rewrite_key(v.get("data").unwrap_or(&Value::Null)))
    }

    /// Position of a node by seq (membership lookup).
    pub(crate) fn position(&self, seq: u64) -> Option<usize> {
        if let Some(&i) = self.at.get(&seq)
            && self.nodes.get(i).is_some_and(|n| n.seq == seq)
        {
            return Some(i);
        }
        self.nodes.iter().rposition(|n| n.seq == seq)
    }

    /// The current node seqs.
    pub fn seqs(&self) -> Vec<u64> {
        self.nodes.iter().map(|n| n.seq).collect()
    }

    /// Apply one surface event (rules R5–R16), or refuse it leaving the
    /// surface untouched.
    pub(crate) fn apply(
        &mut self,
        ev: &Event<'_>,
        op: SurfaceOp,
        facts: NodeFacts,
        body: NodeBody,
    ) -> Result<Applied, SurfaceError> {
        let mut cited = Vec::new();
        let keep = matches!(op, SurfaceOp::Replace(_)).then_some(&mut cited);
        scan_sources(ev, keep)?;
        let node = Node {
            seq: ev.seq,
            kind: ev.kind,
            tokens: facts.tokens,
            derives: facts.derives,
            msg_id: facts.msg_id,
            call_id: facts.call_id,
            tool_calls: facts.tool_calls,
            body,
            message_text: None,
            text_units: facts.text_units,
        };
        match op {
            SurfaceOp::Append => {
                self.tokens += node.tokens;
                self.at.insert(node.seq, self.nodes.len());
                self.nodes.push(node);
                Ok(Applied {
                    op,
                    tokens: facts.tokens,
                    position: self.nodes.len() - 1,
                    shadowed: Vec::new(),
                })
            }
            SurfaceOp::Replace(ReplaceOp { start, end }) => {
                let Some(si) = self.position(start) else {
                    return Err(err(
                        "R10",
                        format!("surface replace: start seq {start} not found in surface"),
                    ));
                };
                let Some(ei) = self.position(end) else {
                    return Err(err(
                        "R11",
                        format!("surface replace: end seq {end} not found in surface"),
                    ));
                };
                if si > ei {
                    return Err(err(
                        "R12",
                        format!(
                            "surface replace: start seq {start} is after end seq {end} in surface"
                        ),
                    ));
                }
                // Sorted for lookups (duplicates were refused above).
                cited.sort_unstable();
                for n in &self.nodes[si..=ei] {
                    if cited.binary_search(&n.seq).is_err() {
                        return Err(err(
                            "R13",
                            format!(
                                "surface replace must cite shadowed seq {} in sourceEventSeqs",
                                n.seq
                            ),
                        ));
                    }
                }
                if ev.kind == Kind::ToolResult {
                    if si != ei {
                        return Err(err(
                            "R14",
                            "tool/result surface replacement must shadow exactly one node",
                        ));
                    }
                    let target = &self.nodes[si];
                    if target.kind != Kind::ToolResult {
                        return Err(err(
                            "R15",
                            "tool/result surface replacement must shadow a tool/result",
                        ));
                    }
                    if self.rewrite_key_of(target)? != rewrite_key(ev.data()) {
                        return Err(err(
                            "R16",
                            "tool/result surface replacement may change only content",
                        ));
                    }
                }
                let tokens = node.tokens;
                let seq = node.seq;
                let shadowed: Vec<Node> = self.nodes.splice(si..=ei, [node]).collect();
                for n in &shadowed {
                    self.at.remove(&n.seq);
                }
                if si != ei {
                    // The nodes after the range moved: placed again.
                    for (i, n) in self.nodes.iter().enumerate().skip(si + 1) {
                        self.at.insert(n.seq, i);
                    }
                }
                self.at.insert(seq, si);
                let removed: u64 = shadowed.iter().map(|n| n.tokens).sum();
                self.tokens = self.tokens + tokens - removed;
                self.replace_generation += 1;
                self.replacements.push(Replacement {
                    seq: ev.seq,
                    start,
                    end,
                    shadowed: shadowed.iter().map(|n| n.seq).collect(),
                });
                Ok(Applied {
                    op,
                    tokens,
                    position: si,
                    shadowed,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Value;

    fn event(seq: u64, kind: &str, extra: &str) -> Event<'static> {
        let text = match kind {
            "user" => format!(
                r#"{{"type":"user/message","seq":{seq},"time":1,"data":{{"id":"u{seq}","role":"user","source":{{"kind":"user"}},"content":[{{"type":"text","text":"hi"}}]}}{extra}}}"#
            ),
            _ => format!(
                r#"{{"type":"assistant/message","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"message":{{"id":"a{seq}","role":"assistant","source":{{"kind":"model","provider":"p","model":"m"}},"content":[]}}}}{extra}}}"#
            ),
        };
        let value = Value::parse(&text).unwrap().into_owned();
        let kind = if kind == "user" {
            Kind::UserMessage
        } else {
            Kind::AssistantMessage
        };
        Event {
            kind,
            seq,
            line: 0,
            value,
        }
    }

    fn fold(events: &[Event<'static>]) -> Result<Surface, SurfaceError> {
        let mut s = Surface::default();
        for ev in events {
            let op = check_local(ev)?.unwrap();
            let body = NodeBody::Owned(Arc::new(ev.to_owned_event()));
            s.apply(ev, op, node_facts(ev), body)?;
        }
        Ok(s)
    }

    #[test]
    fn r16_takes_a_remembered_original_instead_of_reading_it_again() {
        let result = |seq: u64, call: &str, text: &str, op: &str| {
            let line = format!(
                r#"{{"type":"tool/result","seq":{seq},"time":1,"data":{{"turn":1,"step":1,"message":{{"source":{{"kind":"tool","callId":"{call}"}},"content":[{{"type":"tool-result","toolCallId":"{call}","content":[{{"type":"text","text":"{text}"}}]}}]}}}}{op}}}"#
            );
            let value = Value::parse(&line).unwrap().into_owned();
            Event {
                kind: Kind::ToolResult,
                seq,
                line: 0,
                value,
            }
        };
        let original = result(0, "c1", "a long original text", r#","surfaceOp":"append""#);
        let replace = r#","sourceEventSeqs":[0],"surfaceOp":{"op":"replace","start":0,"end":0}"#;
        let same_call = result(1, "c1", "short", replace);
        let other_call = result(1, "c2", "short", replace);
        // The original kept as a span of a file that cannot be read again.
        let mut s = Surface::default();
        let op = check_local(&original).unwrap().unwrap();
        let span = NodeBody::Span { offset: 0, len: 10 };
        s.apply(&original, op, node_facts(&original), span).unwrap();
        let try_replace = |s: &Surface, ev: &Event<'_>| {
            let mut s = s.clone();
            let op = check_local(ev).unwrap().unwrap();
            s.apply(
                ev,
                op,
                node_facts(ev),
                NodeBody::Owned(Arc::new(ev.to_owned_event())),
            )
            .map(|_| ())
            .map_err(|e| (e.rule, e.message))
        };
        let unread = try_replace(&s, &same_call).unwrap_err();
        assert_eq!(unread.0, "R16");
        assert!(unread.1.contains("cannot read seq 0 again"), "{}", unread.1);
        // Remembered as read: content may change, nothing else.
        let mut known = KnownOriginals::default();
        known.insert(0, original.data());
        s.remember(&known);
        assert_eq!(try_replace(&s, &same_call), Ok(()));
        assert_eq!(
            try_replace(&s, &other_call).unwrap_err().1,
            "tool/result surface replacement may change only content"
        );
    }

    #[test]
    fn source_rules_r5_to_r9_and_r13() {
        let append = r#","surfaceOp":"append""#;
        let rule = |evs: &[Event<'static>]| fold(evs).err().map(|e| (e.rule, e.message));
        let with = |seq, kind, src: &str| {
            event(seq, kind, &format!(r#","sourceEventSeqs":{src}{append}"#))
        };
        let base = || {
            vec![
                event(0, "user", append),
                event(1, "user", append),
                event(2, "user", append),
            ]
        };
        let mut l = base();
        l.push(with(3, "assistant", "[0,1,2]"));
        l.push(with(4, "assistant", "[]"));
        l.push(with(5, "assistant", "[2,0]"));
        assert!(rule(&l).is_none());
        for (src, kind, want) in [
            ("{}", "assistant", "R5"),
            ("[]", "user", "R6"),
            ("[1.5]", "assistant", "R7"),
            ("[-1]", "assistant", "R7"),
            ("[2,1,2]", "assistant", "R8"),
            ("[1,3]", "assistant", "R9"),
            ("[0,9,3]", "assistant", "R9"),
        ] {
            let mut l = base();
            l.push(with(3, kind, src));
            let got = rule(&l).unwrap();
            assert_eq!(got.0, want, "{src}: {}", got.1);
        }
        let mut l = base();
        l.push(with(3, "assistant", "[2,1,2]"));
        assert!(rule(&l).unwrap().1.contains("repeats seq 2"));
        let mut l = base();
        l.push(with(3, "assistant", "[0,9,3]"));
        assert!(rule(&l).unwrap().1.contains("member 9 is not"));
        // A replace cites what it shadows, in any order (R13).
        let replace = |src: &str| {
            event(
                3,
                "user",
                &format!(
                    r#","sourceEventSeqs":{src},"surfaceOp":{{"op":"replace","start":0,"end":2}}"#
                ),
            )
        };
        let mut l = base();
        l.push(replace("[2,0,1]"));
        let s = fold(&l).unwrap();
        assert_eq!(s.seqs(), vec![3]);
        assert_eq!(s.replacements[0].shadowed, vec![0, 1, 2]);
        let mut l = base();
        l.push(replace("[2,0]"));
        let (r, m) = rule(&l).unwrap();
        assert_eq!(r, "R13");
        assert!(m.contains("shadowed seq 1"), "{m}");
    }

    fn key(s: &str) -> u64 {
        rewrite_key(&Value::parse(s).unwrap())
    }

    const BASE: &str = r#"{"turn":2,"step":1,"message":{"source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"long output"}],"isError":true}],"role":"user","id":"m1"},"error":{"name":"E","code":"X"}}"#;

    #[test]
    fn r16_fingerprint_ignores_the_result_content_and_key_order() {
        let pruned = BASE.replace(
            r#"[{"type":"text","text":"long output"}]"#,
            r#"[{"type":"text","text":"[pruned]"},{"type":"text","text":"tail"}]"#,
        );
        assert_eq!(key(BASE), key(&pruned));
        let reordered = r#"{"step":1,"turn":2,"error":{"code":"X","name":"E"},"message":{"id":"m1","role":"user","content":[{"isError":true,"toolCallId":"c1","type":"tool-result","content":"x"}],"source":{"callId":"c1","kind":"tool"}}}"#;
        assert_eq!(key(BASE), key(reordered));
        // Spelling JavaScript prints the same way: -0, escapes, 1.0.
        assert_eq!(
            key(&BASE.replace(r#""turn":2"#, r#""turn":2.0"#)),
            key(BASE)
        );
        assert_eq!(
            key(&BASE.replace(r#""name":"E""#, r#""name":"\u0045""#)),
            key(BASE)
        );
        assert_eq!(
            key(&BASE.replace(r#""step":1"#, r#""step":0"#)),
            key(&BASE.replace(r#""step":1"#, r#""step":-0"#))
        );
    }

    #[test]
    fn r16_fingerprint_sees_every_other_change() {
        for (from, to) in [
            (r#""isError":true"#, r#""isError":false"#),
            (r#""toolCallId":"c1""#, r#""toolCallId":"c2""#),
            (r#""id":"m1""#, r#""id":"m2""#),
            (r#""turn":2"#, r#""turn":"2""#),
            (r#""name":"E""#, r#""name":"\ud800""#),
            (r#""code":"X""#, r#""code":"X","extra":null"#),
            (r#""type":"text","text""#, r#""type":"image","text""#),
        ] {
            let changed = BASE.replacen(from, to, 1);
            assert_ne!(changed, BASE);
            // The first block's own content is blanked, nothing else is.
            if from.contains("\"type\":\"text\"") {
                assert_eq!(key(&changed), key(BASE), "{to}");
            } else {
                assert_ne!(key(&changed), key(BASE), "{to}");
            }
        }
        // A lone surrogate is not U+FFFD.
        assert_ne!(
            key(&BASE.replace(r#""name":"E""#, r#""name":"\ud800""#)),
            key(&BASE.replace(r#""name":"E""#, "\"name\":\"\u{fffd}\""))
        );
        // Only the first block's content is blanked.
        let two = BASE.replace(
            r#""isError":true}]"#,
            r#""isError":true},{"type":"tool-result","content":[1]}]"#,
        );
        assert_ne!(
            key(&two),
            key(&two.replace(r#""content":[1]"#, r#""content":[2]"#))
        );
    }
}
