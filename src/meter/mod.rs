//! The token meter: DSH's own pressure figure (compaction §1).
//!
//! [`Meter`] is an [`Observer`] for [`crate::log::load`]: it folds the log in
//! the loader's single streaming pass, exactly as `TokenMeter` of
//! `@deepseek-ai/dsh-token-meter` 0.1.0-rc.8 does, and [`Meter::finish`] turns
//! the fold into a [`Measurement`] equal to the reference's `measure()`:
//!
//! * node prices come from the loader's positional surface fold (§1.4), which
//!   prices with [`estimate`] (§1.1–§1.3);
//! * the provider-usage anchor (§1.5) is re-computed at every
//!   `assistant/message`, re-assembling the cited `assistant/chunk` events
//!   with `meter::assemble` (internal) and keeping rc.8's double count of input appended after
//!   `step/start`;
//! * the replay errors of §1.5/§1.7 are a [`MeterError`] naming the seq;
//! * the three O(1) projections of §1.8 ride along (`meter::projection`, internal).
//!
//! Memory follows the surface, not the log: the meter keeps the chunks of the
//! open step only (a few words each, no text), one bit per event to tell
//! chunks from other events, and one small record per finished attempt to
//! tell which step a chunk belonged to. In the one case that record cannot
//! answer (a message citing chunks of an *earlier* step that carried the same
//! turn/step labels, which the reference accepts), [`measure`] measures again
//! keeping every chunk.
//!
//! ```no_run
//! use dsh::log::{LoadOptions, LogSource};
//! let src = LogSource::File("session.jsonl".into());
//! let (log, m) = dsh::meter::measure(&src, &LoadOptions::default(), None)?;
//! println!("{} tokens ({} on the surface), {} events", m.total_tokens, m.surface_tokens, log.session_length());
//! # Ok::<(), dsh::meter::MeasureError>(())
//! ```

pub(crate) mod assemble;
/// DSH's fixed heuristic; it lives below the surface (which prices nodes
/// with it) and is re-exported here, where readers look for it.
pub use crate::heuristic as estimate;
pub(crate) mod projection;
pub mod tokenizer;

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::Serialize;
use std::sync::Arc;

use crate::event::{Event, Kind};
use crate::json::{OwnedValue, Value};
use crate::log::run::{ChunkFact, ChunkFacts, RowFacts};
use crate::log::{
    ChunkRun, Folded, LoadError, LoadOptions, LoadedLog, LogSource, Observer, RunFacts, Tee,
};
use crate::request_header::{canonical, headers_equal};
use crate::surface::Surface;

use assemble::{Assembler, ChunkOp, Scalar};
use projection::ProjectionFold;
pub use projection::{ContextBreakdown, ContextPressure, Projections, TokenUsage};

/// A replay error (§1.5, §1.7): the reference's `measure()` throws it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeterError {
    /// The reference's message, for the event at `seq`.
    #[error("{message}")]
    Replay {
        /// The event that could not be folded.
        seq: u64,
        /// The reference's message.
        message: String,
    },
    /// The meter dropped chunks that a later message cites under the same
    /// turn/step (only possible when step labels repeat); measure again with
    /// [`Meter::retaining_all_chunks`]. [`measure`] does this by itself.
    #[error(
        "assistant/message at seq {seq} cites chunk {chunk} of an earlier step with the same turn/step; measure again keeping every chunk"
    )]
    NeedsAllChunks {
        /// The message.
        seq: u64,
        /// The dropped chunk it cites.
        chunk: u64,
    },
}

impl MeterError {
    /// The seq of the event the error is about.
    pub fn seq(&self) -> u64 {
        match self {
            MeterError::Replay { seq, .. } | MeterError::NeedsAllChunks { seq, .. } => *seq,
        }
    }
}

/// Loading or measuring failed.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The log was refused while loading.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The meter could not replay it.
    #[error(transparent)]
    Meter(#[from] MeterError),
}

/// `baseline.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BaselineKind {
    /// No header and an empty surface.
    None,
    /// Heuristic: header price plus surface price.
    Estimated,
    /// Provider-reported usage of the anchoring `assistant/message`.
    Usage,
}

impl BaselineKind {
    /// `"none"`, `"estimated"` or `"usage"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineKind::None => "none",
            BaselineKind::Estimated => "estimated",
            BaselineKind::Usage => "usage",
        }
    }
}

/// `baseline`: what the total is anchored on.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Baseline {
    /// Its kind.
    pub kind: BaselineKind,
    /// Tokens (a JavaScript number: usage is summed as logged).
    pub tokens: f64,
    /// The logged `usage` object (kind `usage` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub usage: Option<OwnedValue>,
}

/// One surface node's price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NodeTokens {
    /// The node's seq.
    pub seq: u64,
    /// Its heuristic price.
    pub tokens: u64,
}

/// Where the total comes from: envelope, surface by role, and the provider's
/// correction (compaction §1.3, §1.8).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Composition {
    /// System prompt price: of the measured header (G0–G2), or of the
    /// `system/message` nodes (G3).
    pub system_tokens: u64,
    /// Tool schema price of the measured header.
    pub tools_tokens: u64,
    /// Surface price of the messages (= `surfaceTokens`, less the
    /// `system/message` nodes of G3).
    pub message_tokens: u64,
    /// Surface price of `user/message` nodes.
    pub user_tokens: u64,
    /// Surface price of `assistant/message` nodes.
    pub assistant_tokens: u64,
    /// Surface price of `tool/result` nodes.
    pub tool_result_tokens: u64,
    /// Number of `user/message` nodes.
    pub user_nodes: u64,
    /// Number of `assistant/message` nodes.
    pub assistant_nodes: u64,
    /// Number of `tool/result` nodes.
    pub tool_result_nodes: u64,
    /// `totalTokens − (system + tools + messages)`: what the provider-usage
    /// anchor adds to (or takes from) the pure heuristic.
    #[serde(rename = "anchorAdjustmentTokens")]
    pub anchor_adjustment: f64,
}

/// A `request/context` that carried a context window.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedContext {
    /// `provider`.
    pub provider: String,
    /// `model`.
    pub model: String,
    /// `contextWindow` as logged.
    pub context_window: f64,
    /// The event's seq.
    pub seq: u64,
}

/// The result of measuring a log: the reference's `measure()` plus dsh's own
/// figures.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Events folded (events, closers and the in-memory end-seed marker).
    pub log_revision: u64,
    /// The baseline.
    pub baseline: Baseline,
    /// Surface movement since the anchor (may be negative).
    pub surface_delta_tokens: i64,
    /// `max(0, baseline.tokens + surfaceDeltaTokens)`.
    pub total_tokens: f64,
    /// Sum of the node prices.
    pub surface_tokens: u64,
    /// The current surface, in surface order.
    pub nodes: Vec<NodeTokens>,
    /// Envelope / surface composition.
    pub composition: Composition,
    /// The §1.8 projections, or the error one of them threw (seq, message).
    pub projections: Result<Projections, (u64, String)>,
    /// The `assistant/message` whose anchor the baseline reuses.
    pub anchor_seq: Option<u64>,
    /// The seq of the latest `request/header`.
    pub header_seq: Option<u64>,
    /// Whether an override header was measured instead of the logged one.
    pub header_override: bool,
    /// The latest `request/context` carrying a window, per provider/model.
    pub contexts: Vec<LoggedContext>,
}

impl Measurement {
    /// The latest logged context window for a provider/model, with its seq.
    pub(crate) fn logged_context_window(&self, provider: &str, model: &str) -> Option<(f64, u64)> {
        self.contexts
            .iter()
            .find(|c| c.provider == provider && c.model == model)
            .map(|c| (c.context_window, c.seq))
    }
}

/// A canonical request header with its price.
#[derive(Debug)]
struct HeaderRec {
    value: OwnedValue,
    tokens: u64,
}

impl HeaderRec {
    fn new(h: &Value<'_>) -> HeaderRec {
        let value = canonical(h);
        let tokens = estimate::system_tokens(value.get("system"))
            + estimate::tools_tokens(value.get("tools"));
        HeaderRec { value, tokens }
    }
}

/// `optionalHeaderEquals`; the same header object is equal to itself.
fn optional_header_equals(a: Option<&Arc<HeaderRec>>, b: Option<&Arc<HeaderRec>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || headers_equal(Some(&x.value), Some(&y.value)),
        _ => false,
    }
}

#[derive(Debug, Clone)]
struct StepOpen {
    turn: Scalar,
    step: Scalar,
    surface_tokens: u64,
    /// The G3 system head's price then (0 without one).
    head_tokens: u64,
}

#[derive(Debug, Clone)]
struct Anchor {
    header: Option<Arc<HeaderRec>>,
    /// The G3 system head the anchor was taken under: a new head, like a
    /// new G0 request header, means the anchor no longer applies.
    head: Option<u64>,
    surface_tokens: u64,
    baseline: Baseline,
    seq: u64,
}

/// A G3 surface's `system/message` head (the system prompt, which G0–G2
/// keep in the request header): its seq and price.
///
/// The meter prices every generation with rc.8's rules, so that a session
/// migrated to G3 measures as its G0 original did: the head is priced as
/// the header's prompt was, belongs to the anchor's header part (taken at
/// the message, not at `step/start`), and a new head ends the anchor as a
/// changed header does.
fn head_of(surface: &Surface) -> Option<(u64, u64)> {
    surface
        .nodes
        .first()
        .filter(|n| n.kind == Kind::SystemMessage)
        .map(|n| (n.seq, n.tokens))
}

/// One kept chunk, or the chunks of one packed row.
#[derive(Debug)]
struct ChunkRec {
    /// The chunk's seq; a row's first member's.
    seq: u64,
    turn: Scalar,
    step: Scalar,
    /// The chunk's op; for a row, its members' op, whose length each
    /// member takes from `lens`.
    op: ChunkOp,
    /// A row's members' lengths, one seq each from `seq` on; empty for a
    /// chunk line. A row is one record, not one per member: rows hold
    /// most of a log's chunks.
    lens: Box<[u32]>,
}

impl ChunkRec {
    /// The last seq it covers.
    fn last(&self) -> u64 {
        self.seq + self.lens.len().max(1) as u64 - 1
    }

    /// The length of the row member at `seq` (which it covers).
    fn len_at(&self, seq: u64) -> usize {
        self.lens[(seq - self.seq) as usize] as usize
    }
}

/// Chunks dropped together: a run of consecutive seqs with one label.
#[derive(Debug)]
struct DroppedRun {
    first: u64,
    last: u64,
    turn: Scalar,
    step: Scalar,
}

/// The chunk memory of the anchor (see the module doc).
#[derive(Debug, Default)]
struct ChunkStore {
    /// One bit per seq: is it an `assistant/chunk`.
    is_chunk: Vec<u64>,
    /// Chunks that a later message may cite, by ascending seq.
    kept: Vec<ChunkRec>,
    /// An empty Vec with room, swapped with `kept` when a step opens so
    /// that neither grows again from nothing at every step.
    spare: Vec<ChunkRec>,
    /// Labels of dropped chunks, by ascending seq.
    dropped: Vec<DroppedRun>,
    retain_all: bool,
    object_ids: u64,
}

enum Found<'s> {
    /// Kept, with the record that covers it.
    Kept(&'s ChunkRec),
    Dropped(&'s DroppedRun),
    Unknown,
}

impl ChunkStore {
    fn mark(&mut self, seq: u64, chunk: bool) {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        if self.is_chunk.len() <= w {
            self.is_chunk.resize(w + 1, 0);
        }
        if chunk {
            self.is_chunk[w] |= 1 << b;
        }
    }

    fn is_chunk(&self, seq: u64) -> bool {
        let (w, b) = ((seq / 64) as usize, seq % 64);
        self.is_chunk.get(w).is_some_and(|x| x & (1 << b) != 0)
    }

    fn push(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        let op = ChunkOp::of(d.get("chunk"), &mut self.object_ids);
        self.kept.push(ChunkRec {
            seq: ev.seq,
            turn: Scalar::of(d.get("turn")),
            step: Scalar::of(d.get("step")),
            op,
            lens: Box::default(),
        });
    }

    /// [`Self::mark`] each chunk of a packed row, and keep the row as one
    /// record, from the row's facts.
    fn push_row(&mut self, seq0: u64, facts: &RowFacts) {
        if facts.lens.is_empty() {
            return;
        }
        for i in 0..facts.lens.len() {
            self.mark(seq0 + i as u64, true);
        }
        self.kept.push(ChunkRec {
            seq: seq0,
            turn: Scalar::Num(facts.turn),
            step: Scalar::Num(facts.step),
            op: ChunkOp::of_packed(facts, 0),
            lens: facts.lens.as_slice().into(),
        });
    }

    /// [`Self::mark`] and keep the chunk of a plain chunk line, from its facts.
    fn push_line(&mut self, seq: u64, facts: &ChunkFacts) {
        self.mark(seq, true);
        self.kept.push(ChunkRec {
            seq,
            turn: Scalar::Num(facts.turn),
            step: Scalar::Num(facts.step),
            op: ChunkOp::of_line(&facts.chunk),
            lens: Box::default(),
        });
    }

    /// A step opened: only chunks carrying its labels can still be cited.
    fn step_opened(&mut self, turn: &Scalar, step: &Scalar) {
        if self.retain_all || self.kept.is_empty() {
            return;
        }
        let mut kept = std::mem::replace(&mut self.kept, std::mem::take(&mut self.spare));
        for rec in kept.drain(..) {
            if rec.turn.strict_eq(turn) && rec.step.strict_eq(step) {
                self.kept.push(rec);
                continue;
            }
            // Chunks are dropped in seq order, so the new run almost always
            // goes last: check that before searching.
            let pos = match self.dropped.last() {
                Some(r) if r.first >= rec.seq => {
                    self.dropped.partition_point(|r| r.first < rec.seq)
                }
                _ => self.dropped.len(),
            };
            let last = rec.last();
            if pos > 0 {
                let prev = &mut self.dropped[pos - 1];
                if prev.last + 1 == rec.seq && prev.turn == rec.turn && prev.step == rec.step {
                    prev.last = last;
                    continue;
                }
            }
            self.dropped.insert(
                pos,
                DroppedRun {
                    first: rec.seq,
                    last,
                    turn: rec.turn,
                    step: rec.step,
                },
            );
        }
        self.spare = kept;
    }

    /// Look a chunk up; `hint` is where the previous lookup ended (messages
    /// cite their chunks in order, so the next one is usually right there).
    fn find(&self, seq: u64, hint: &mut usize) -> Found<'_> {
        // The record the previous lookup ended in, or the next one.
        for i in [*hint, *hint + 1] {
            if let Some(r) = self.kept.get(i)
                && r.seq <= seq
                && seq <= r.last()
            {
                *hint = i;
                return Found::Kept(r);
            }
        }
        let i = self.kept.partition_point(|r| r.seq <= seq);
        if i > 0 && self.kept[i - 1].last() >= seq {
            *hint = i - 1;
            return Found::Kept(&self.kept[i - 1]);
        }
        let pos = self.dropped.partition_point(|r| r.first <= seq);
        if pos > 0 && self.dropped[pos - 1].last >= seq {
            return Found::Dropped(&self.dropped[pos - 1]);
        }
        Found::Unknown
    }
}

/// The token meter as a load observer (see the module doc).
#[derive(Debug, Default)]
pub struct Meter {
    header_override: Option<Arc<HeaderRec>>,
    has_override: bool,
    header: Option<Arc<HeaderRec>>,
    header_seq: Option<u64>,
    step: Option<StepOpen>,
    anchor: Option<Anchor>,
    consumed: u64,
    surface_tokens: u64,
    chunks: ChunkStore,
    projections: ProjectionFold,
    contexts: Vec<LoggedContext>,
    error: Option<MeterError>,
}

impl Meter {
    /// A meter; `header_override` is a request header (`{config, system?,
    /// tools?, adapterDefaults?}`) to measure instead of the latest logged
    /// one (it changes only the baseline decision, §1.6).
    pub fn new(header_override: Option<OwnedValue>) -> Meter {
        Meter {
            has_override: header_override.is_some(),
            header_override: header_override.map(|h| Arc::new(HeaderRec::new(&h))),
            ..Meter::default()
        }
    }

    /// A meter that keeps every chunk (memory grows with the log's chunks);
    /// needed only after [`MeterError::NeedsAllChunks`].
    pub fn retaining_all_chunks(mut self) -> Meter {
        self.chunks.retain_all = true;
        self
    }

    /// The first replay error so far.
    pub(crate) fn error(&self) -> Option<&MeterError> {
        self.error.as_ref()
    }

    fn fail(&mut self, seq: u64, message: String) {
        self.error = Some(MeterError::Replay { seq, message });
    }

    /// `_estimateProviderAssistant`.
    fn provider_output(&self, ev: &Event<'_>, event_tokens: u64) -> Result<u64, MeterError> {
        let Some(raw) = ev.value.get("sourceEventSeqs").and_then(|s| s.as_arr()) else {
            // G2+ messages embed their stream instead of citing chunks (a G0
            // message carries no `stream`: rc.8 would price the event).
            return match ev.data().get("stream").and_then(|s| s.as_arr()) {
                Some(records) => crate::meter::assemble::price_stream(records).map_err(|message| {
                    MeterError::Replay {
                        seq: ev.seq,
                        message: format!(
                            "token meter: assistant/message at seq {}: {message}",
                            ev.seq
                        ),
                    }
                }),
                None => Ok(event_tokens),
            };
        };
        let replay = |message: String| MeterError::Replay {
            seq: ev.seq,
            message,
        };
        let turn = Scalar::of(ev.data().get("turn"));
        let step = Scalar::of(ev.data().get("step"));
        let mut asm = Assembler::new();
        // Repeats: impossible while the cited seqs ascend (the usual case);
        // a set is built only once they stop ascending.
        let mut last: Option<u64> = None;
        let mut seen: Option<HashSet<u64>> = None;
        let mut hint = 0usize;
        // Consecutive members of one packed row cited in a row: checked
        // against the step once and fed as one delta of their summed
        // lengths (a row's deltas go to one index, where lengths add up).
        let mut run: Option<(&ChunkRec, u64, usize)> = None;
        let flush = |asm: &mut Assembler, run: Option<(&ChunkRec, u64, usize)>| match run {
            Some((r, _, len)) => asm.push_delta(&r.op, len),
            None => Ok(()),
        };
        for (i, v) in raw.iter().enumerate() {
            // The loader already refused non-count members (R7).
            let Some(seq) = v.as_count() else { continue };
            let at = || format!("token meter: assistant/message at seq {}", ev.seq);
            if seq >= ev.seq {
                return Err(replay(format!("{} source seq {seq} is not earlier", at())));
            }
            let repeated = match (&mut seen, last) {
                (Some(set), _) => !set.insert(seq),
                (None, Some(l)) if seq <= l => {
                    let mut set: HashSet<u64> =
                        raw[..i].iter().filter_map(|v| v.as_count()).collect();
                    let r = !set.insert(seq);
                    seen = Some(set);
                    r
                }
                _ => false,
            };
            last = Some(seq);
            if repeated {
                return Err(replay(format!("{} repeats source seq {seq}", at())));
            }
            if !self.chunks.is_chunk(seq) {
                return Err(replay(format!(
                    "{} source seq {seq} is not assistant/chunk",
                    at()
                )));
            }
            let found = self.chunks.find(seq, &mut hint);
            if let (Some((r, next, len)), Found::Kept(k)) = (&mut run, &found)
                && std::ptr::eq(*r, *k)
                && *next == seq
            {
                *next += 1;
                *len += r.len_at(seq);
                continue;
            }
            let (ct, cs, rec) = match found {
                Found::Kept(r) => (&r.turn, &r.step, Some(r)),
                Found::Dropped(r) => (&r.turn, &r.step, None),
                Found::Unknown => {
                    return Err(MeterError::NeedsAllChunks {
                        seq: ev.seq,
                        chunk: seq,
                    });
                }
            };
            if !ct.strict_eq(&turn) || !cs.strict_eq(&step) {
                return Err(replay(format!(
                    "{} source seq {seq} belongs to another step",
                    at()
                )));
            }
            let Some(rec) = rec else {
                return Err(MeterError::NeedsAllChunks {
                    seq: ev.seq,
                    chunk: seq,
                });
            };
            flush(&mut asm, run.take()).map_err(|e| replay(e.0))?;
            if rec.lens.is_empty() {
                asm.push(&rec.op).map_err(|e| replay(e.0))?;
            } else {
                run = Some((rec, seq + 1, rec.len_at(seq)));
            }
        }
        flush(&mut asm, run).map_err(|e| replay(e.0))?;
        Ok(asm.price().map_err(|e| replay(e.0))?.map_or(0, |p| p + 4))
    }

    fn fold(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        let is_chunk = ev.kind == Kind::AssistantChunk;
        self.chunks.mark(ev.seq, is_chunk);
        let at = |what: &str| format!("token meter: {what} at seq {}", ev.seq);
        // Only these two events change the header or the open step; the
        // others reuse the current ones without touching them.
        let mut new_header: Option<Arc<HeaderRec>> = None;
        let mut step_change: Option<Option<StepOpen>> = None;
        match ev.kind {
            Kind::RequestHeader => {
                new_header = Some(Arc::new(HeaderRec::new(
                    ev.data().get("header").unwrap_or(&Value::Null),
                )));
            }
            Kind::StepStart => {
                if let Some(s) = &self.step {
                    let msg = format!(
                        "{} arrived before turn {}/step {} ended",
                        at("step/start"),
                        s.turn.display(),
                        s.step.display()
                    );
                    return self.fail(ev.seq, msg);
                }
                step_change = Some(Some(StepOpen {
                    turn: Scalar::of(ev.data().get("turn")),
                    step: Scalar::of(ev.data().get("step")),
                    surface_tokens: self.surface_tokens,
                    head_tokens: head_of(folded.surface).map_or(0, |h| h.1),
                }));
            }
            Kind::StepEnd => {
                let matches = self.step.as_ref().is_some_and(|s| {
                    s.turn.strict_eq(&Scalar::of(ev.data().get("turn")))
                        && s.step.strict_eq(&Scalar::of(ev.data().get("step")))
                });
                if !matches {
                    let msg = format!("{} has no matching step/start event", at("step/end"));
                    return self.fail(ev.seq, msg);
                }
                step_change = Some(None);
            }
            _ => {}
        }
        let next_header = new_header.as_ref().or(self.header.as_ref());
        let node_tokens = folded.applied.map(|a| a.tokens);
        let mut next_anchor = None;
        if ev.kind == Kind::AssistantMessage {
            match self.message_anchor(ev, folded, next_header, node_tokens) {
                Ok(a) => next_anchor = Some(a),
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
        // Commit.
        if let Some(h) = new_header {
            self.header_seq = Some(ev.seq);
            self.header = Some(h);
        }
        if let Some(s) = step_change {
            self.step = s;
        }
        self.surface_tokens = folded.surface.tokens;
        if next_anchor.is_some() {
            self.anchor = next_anchor;
        }
        match ev.kind {
            Kind::AssistantChunk => self.chunks.push(ev),
            Kind::StepStart => {
                let s = self.step.clone().expect("just opened");
                self.chunks.step_opened(&s.turn, &s.step);
            }
            Kind::RequestContext => self.observe_context(ev),
            _ => {}
        }
        match folded.applied {
            Some(a) if ev.kind == Kind::SystemMessage && a.position == 0 => {
                self.projections.apply_head(a.tokens)
            }
            _ => self.projections.apply(ev, node_tokens),
        }
    }

    /// The anchor an `assistant/message` sets: the step's surface and the
    /// baseline (the provider's usage, or the estimate); an error fails
    /// the meter.
    #[inline]
    fn message_anchor(
        &self,
        ev: &Event<'_>,
        folded: &Folded<'_>,
        next_header: Option<&Arc<HeaderRec>>,
        node_tokens: Option<u64>,
    ) -> Result<Anchor, MeterError> {
        let turn = Scalar::of(ev.data().get("turn"));
        let step = Scalar::of(ev.data().get("step"));
        let Some(open) = self
            .step
            .as_ref()
            .filter(|s| s.turn.strict_eq(&turn) && s.step.strict_eq(&step))
        else {
            return Err(MeterError::Replay {
                seq: ev.seq,
                message: format!(
                    "token meter: assistant/message at seq {} has no matching step/start event",
                    ev.seq
                ),
            });
        };
        // The step's surface with the system head priced as it is
        // now (a G0 header's prompt is read at the message).
        let head = head_of(folded.surface);
        let step_surface = open.surface_tokens - open.head_tokens + head.map_or(0, |h| h.1);
        let event_tokens = node_tokens.unwrap_or(0);
        let header_tokens = next_header.map_or(0, |h| h.tokens);
        let usage = ev.data().get("usage");
        let anchor = match (usage, next_header) {
            (Some(usage), Some(_)) => {
                let provider = self.provider_output(ev, event_tokens)?;
                if matches!(usage, Value::Null) {
                    return Err(MeterError::Replay {
                        seq: ev.seq,
                        message: "Cannot read properties of null (reading 'inputTokens')".into(),
                    });
                }
                let anchor_surface = step_surface + provider;
                let provider_tokens = usage_tokens(usage);
                let estimated = (header_tokens + anchor_surface) as f64;
                let baseline = if provider_tokens >= estimated {
                    Baseline {
                        kind: BaselineKind::Usage,
                        tokens: provider_tokens,
                        usage: Some(usage.to_owned_value()),
                    }
                } else {
                    Baseline {
                        kind: BaselineKind::Estimated,
                        tokens: estimated,
                        usage: None,
                    }
                };
                (anchor_surface, baseline)
            }
            _ => {
                let anchor_surface = step_surface + event_tokens;
                (
                    anchor_surface,
                    Baseline {
                        kind: BaselineKind::Estimated,
                        tokens: (header_tokens + anchor_surface) as f64,
                        usage: None,
                    },
                )
            }
        };
        Ok(Anchor {
            header: next_header.cloned(),
            head: head.map(|h| h.0),
            surface_tokens: anchor.0,
            baseline: anchor.1,
            seq: ev.seq,
        })
    }

    fn observe_context(&mut self, ev: &Event<'_>) {
        let d = ev.data();
        let (Some(p), Some(m), Some(cw)) = (
            d.get("provider").and_then(|p| p.as_str()),
            d.get("model").and_then(|m| m.as_str()),
            d.get("contextWindow").and_then(|c| c.as_f64()),
        ) else {
            return;
        };
        let rec = LoggedContext {
            provider: p.into_owned(),
            model: m.into_owned(),
            context_window: cw,
            seq: ev.seq,
        };
        match self
            .contexts
            .iter_mut()
            .find(|c| c.provider == rec.provider && c.model == rec.model)
        {
            Some(c) => *c = rec,
            None => self.contexts.push(rec),
        }
    }

    /// Finish: fold the in-memory `session/end-seed` marker the reference
    /// appends (when it does and the caller did not already feed
    /// `log.end_seed_event()`), then measure (§1.6).
    pub fn finish(mut self, log: &LoadedLog) -> Result<Measurement, MeterError> {
        if self.consumed < log.session_length() {
            log.with_end_seed(|es, folded| self.event(es, folded));
        }
        self.snapshot(&log.surface)
    }

    /// The header measured: the override, else the latest logged one.
    fn measured_header(&self) -> Option<Arc<HeaderRec>> {
        if self.has_override {
            self.header_override.clone()
        } else {
            self.header.clone()
        }
    }

    /// The baseline, the surface delta and the anchor's seq (§1.6).
    fn anchored(
        &self,
        header: Option<&Arc<HeaderRec>>,
        surface: &Surface,
    ) -> (Baseline, i64, Option<u64>) {
        self.anchored_on(header, surface.tokens, head_of(surface).map(|h| h.0))
    }

    /// [`Self::anchored`] on a surface of `surface_tokens` tokens whose
    /// system head (G3) is the node `head`.
    fn anchored_on(
        &self,
        header: Option<&Arc<HeaderRec>>,
        surface_tokens: u64,
        head: Option<u64>,
    ) -> (Baseline, i64, Option<u64>) {
        let header = header.cloned();
        match &self.anchor {
            Some(a)
                if optional_header_equals(a.header.as_ref(), header.as_ref()) && a.head == head =>
            {
                (
                    a.baseline.clone(),
                    surface_tokens as i64 - a.surface_tokens as i64,
                    Some(a.seq),
                )
            }
            _ if header.is_none() && surface_tokens == 0 => (
                Baseline {
                    kind: BaselineKind::None,
                    tokens: 0.0,
                    usage: None,
                },
                0,
                None,
            ),
            _ => (
                Baseline {
                    kind: BaselineKind::Estimated,
                    tokens: (header.as_ref().map_or(0, |h| h.tokens) + surface_tokens) as f64,
                    usage: None,
                },
                0,
                None,
            ),
        }
    }

    /// `measure().totalTokens` now, without the per-node table of
    /// [`Meter::snapshot`]: what a caller that measures at every request
    /// (a replay) needs.
    pub(crate) fn total_tokens(&self, surface: &Surface) -> Result<f64, MeterError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let (baseline, delta, _) = self.anchored(self.measured_header().as_ref(), surface);
        Ok(projection::js_max0(baseline.tokens + delta as f64))
    }

    /// [`Meter::total_tokens`] on `surface` as if it held `surface_tokens` tokens: the
    /// figure just before a node the surface already holds joined it (the
    /// sent point of a request whose `assistant/message` began its attempt,
    /// [`crate::attempt`]).
    pub(crate) fn total_tokens_of(
        &self,
        surface: &Surface,
        surface_tokens: u64,
    ) -> Result<f64, MeterError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let head = head_of(surface).map(|h| h.0);
        let (baseline, delta, _) =
            self.anchored_on(self.measured_header().as_ref(), surface_tokens, head);
        Ok(projection::js_max0(baseline.tokens + delta as f64))
    }

    /// Measure now, without consuming the meter (§1.6): the fold so far
    /// against `surface`, the surface the folded events left (a loaded log's
    /// `surface`, or a writer's surface after its appends, e.g.
    /// [`crate::append::Appender::surface`]). Feed later events with
    /// [`Observer::event`] and call it again: this is how compaction
    /// re-measures after each write without re-reading the log.
    ///
    /// Unlike [`Meter::finish`], it folds no `session/end-seed` marker (a
    /// non-surface event: it changes no total) and `logRevision` counts the
    /// events fed so far.
    pub(crate) fn snapshot(&self, surface: &Surface) -> Result<Measurement, MeterError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let header = self.measured_header();
        let surface_tokens = surface.tokens;
        let (baseline, delta, anchor_seq) = self.anchored(header.as_ref(), surface);
        let total = projection::js_max0(baseline.tokens + delta as f64);
        let mut comp = Composition {
            system_tokens: header
                .as_ref()
                .map_or(0, |h| estimate::system_tokens(h.value.get("system"))),
            tools_tokens: header
                .as_ref()
                .map_or(0, |h| estimate::tools_tokens(h.value.get("tools"))),
            message_tokens: surface_tokens,
            ..Composition::default()
        };
        let nodes: Vec<NodeTokens> = surface
            .nodes
            .iter()
            .map(|n| {
                match n.kind {
                    Kind::UserMessage => {
                        comp.user_tokens += n.tokens;
                        comp.user_nodes += 1;
                    }
                    Kind::AssistantMessage => {
                        comp.assistant_tokens += n.tokens;
                        comp.assistant_nodes += 1;
                    }
                    // G3's system prompt is a node: it is the system part of
                    // the composition, as the header's prompt is in G0.
                    Kind::SystemMessage => {
                        comp.system_tokens += n.tokens;
                        comp.message_tokens -= n.tokens;
                    }
                    _ => {
                        comp.tool_result_tokens += n.tokens;
                        comp.tool_result_nodes += 1;
                    }
                }
                NodeTokens {
                    seq: n.seq,
                    tokens: n.tokens,
                }
            })
            .collect();
        comp.anchor_adjustment =
            total - (comp.system_tokens + comp.tools_tokens + comp.message_tokens) as f64;
        let projections = match self.projections.error() {
            Some(e) => Err(e.clone()),
            None => Ok(self.projections.view()),
        };
        Ok(Measurement {
            log_revision: self.consumed,
            baseline,
            surface_delta_tokens: delta,
            total_tokens: total,
            surface_tokens,
            nodes,
            composition: comp,
            projections,
            anchor_seq,
            header_seq: self.header_seq,
            header_override: self.has_override,
            contexts: self.contexts.clone(),
        })
    }
}

impl Observer for Meter {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self.consumed += 1;
        if self.error.is_none() {
            self.fold(ev, folded);
        }
    }

    /// What the meter's fold does for the chunks offered: for each delta
    /// chunk of a row, mark it, keep its `ChunkOp` for assembly, disarm the
    /// projection's claim; for a chunk line's chunk, the same, and fold it
    /// into the projections (a usage sample, or a disarmed claim).
    /// Chunks the loader did not describe come as events.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        if matches!(run.facts, RunFacts::Counted | RunFacts::Event) {
            return run.each_event(folded, |ev, f| self.event(ev, f));
        }
        self.consumed += run.count;
        if self.error.is_some() {
            return;
        }
        self.surface_tokens = folded.surface.tokens;
        match run.facts {
            RunFacts::Row(facts) => {
                self.chunks.push_row(run.seq0, facts);
                self.projections.apply_delta_chunks();
            }
            RunFacts::Line(facts) => {
                self.chunks.push_line(run.seq0, facts);
                fold_chunk_line(&mut self.projections, run.seq0, facts);
            }
            RunFacts::Counted | RunFacts::Event => {}
        }
    }
}

/// [`ProjectionFold::apply`] of a chunk line's chunk, from its facts.
pub(crate) fn fold_chunk_line(projections: &mut ProjectionFold, seq: u64, facts: &ChunkFacts) {
    match &facts.chunk {
        ChunkFact::Usage(u) => {
            // The members the projections read, as the parsed usage holds them.
            let mut usage = Value::obj();
            for (key, n) in [
                ("inputTokens", u.input),
                ("outputTokens", u.output),
                ("cacheReadTokens", u.cache_read),
                ("cacheWriteTokens", u.cache_write),
            ] {
                if let Some(n) = n {
                    usage = usage.with(key, n.into());
                }
            }
            projections.apply_usage_chunk(seq, facts.turn, facts.step, &usage);
        }
        _ => projections.apply_delta_chunks(),
    }
}

/// `usageTokens`: input + cache read + cache write + output (reasoning is
/// inside output), as JavaScript adds them.
fn usage_tokens(usage: &Value<'_>) -> f64 {
    let num = |k: &str| match usage.get(k) {
        Some(Value::Num(n)) => *n,
        Some(Value::Bool(b)) => *b as u8 as f64,
        Some(Value::Null) => 0.0,
        _ => f64::NAN,
    };
    let opt = |k: &str| match usage.get(k) {
        None | Some(Value::Null) => 0.0,
        Some(_) => num(k),
    };
    num("inputTokens") + opt("cacheReadTokens") + opt("cacheWriteTokens") + num("outputTokens")
}

/// Load and measure a log in one streaming pass.
pub fn measure(
    source: &LogSource,
    opts: &LoadOptions,
    header_override: Option<OwnedValue>,
) -> Result<(LoadedLog, Measurement), MeasureError> {
    let (log, m, ()) = measure_with(source, opts, header_override, || ())?;
    Ok((log, m))
}

/// [`measure`], with the observer `fresh` makes fed from the same pass (a
/// fresh one when the pass is made again, after
/// [`MeterError::NeedsAllChunks`]), for a caller that wants more of the
/// log than the meter reads.
pub(crate) fn measure_with<O: Observer>(
    source: &LogSource,
    opts: &LoadOptions,
    header_override: Option<OwnedValue>,
    fresh: impl Fn() -> O,
) -> Result<(LoadedLog, Measurement, O), MeasureError> {
    // A second pass, when there is one, keeps every chunk.
    let mut retain = false;
    loop {
        let meter = Meter::new(header_override.clone());
        let mut meter = if retain {
            meter.retaining_all_chunks()
        } else {
            meter
        };
        let mut rider = fresh();
        let log = crate::log::load(source, opts, &mut Tee::new(vec![&mut meter, &mut rider]))?;
        match meter.finish(&log) {
            Err(MeterError::NeedsAllChunks { .. }) if !retain => retain = true,
            m => return Ok((log, m?, rider)),
        }
    }
}
