//! The side-by-side view: each log event (the human transcript) paired with
//! what the model sees of it at one point of the log.
//!
//! [`align`] loads a log (optionally only up to a seq, [`LoadOptions::upto`])
//! and returns a [`View`]: one [`Row`] per transcript event, in log order,
//! whose [`ModelSide`] says how the event stands on the surface at that
//! point:
//!
//! * [`ModelSide::Shown`]: the event is itself a current surface node;
//! * [`ModelSide::Replaced`]: a replacement (a compaction checkpoint, a
//!   pruned tool result) removed it; `by` is the current node that stands for
//!   it, `via` the replacements in between (a result pruned, then compacted);
//! * [`ModelSide::Marker`]: a `compaction/*` event, linked to the replacement
//!   it belongs to;
//! * [`ModelSide::Hidden`]: never model-visible (headers, turn and step
//!   lifecycle, chunks).
//!
//! [`View::surface`] is the model's side in surface order (what
//! `dsh messages` shows), each entry with the original events it stands for,
//! and [`View::replacements`] every replacement applied, with its markers.
//! Everything is plain data (`serde::Serialize`); the terminal and HTML
//! layers decide how to draw it.
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let view = dsh::view::align(&src, &dsh::LoadOptions::default(), &dsh::view::ViewOptions::default())?;
//! // Event 4 (the first user message) was compacted away: seq 43 stands for it.
//! let row = view.rows.iter().find(|r| r.seq == 4).unwrap();
//! assert!(matches!(row.model, dsh::view::ModelSide::Replaced { by: 43, .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::event::{Event, Kind, SurfaceOp};
use crate::json::{JStr, Value};
use crate::log::{ChunkRun, Folded, LoadError, LoadOptions, LoadedLog, LogSource};
use crate::surface::NodeBody;

/// What to put in the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewOptions {
    /// Every event, chunks and steps included (`dsh events --all`); by
    /// default the transcript `dsh events` shows: surface events,
    /// `compaction/*`, `turn/start` and `turn/end`.
    pub all_events: bool,
    /// Longest preview, in characters (whitespace collapsed; a cut one ends
    /// with `…`). Also bounds the head and tail of a pruned result.
    pub preview_chars: usize,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            all_events: false,
            preview_chars: 400,
        }
    }
}

/// The aligned view of a log at one point.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// The seq the view stands at (`LoadOptions::upto`), if one was asked.
    pub at: Option<u64>,
    /// The last stored event read.
    pub last_seq: Option<u64>,
    /// Every replacement applied, in log order.
    pub replacements: Vec<Replacement>,
    /// The transcript, in log order.
    pub rows: Vec<Row>,
    /// Bodies of the nodes each replacement removed, by seq, so that
    /// [`crate::survival`] can read the replaced span again.
    #[serde(skip)]
    pub(crate) shadowed_bodies: HashMap<u64, NodeBody>,
    /// The text of each `compaction/summary` event's summary, by seq.
    #[serde(skip)]
    pub(crate) summary_texts: HashMap<u64, String>,
    /// The model's side, in surface order.
    pub surface: Vec<SurfaceEntry>,
}

/// One transcript event.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// Its line in the file (`None` for a synthetic closer or a packed chunk).
    pub line: Option<u64>,
    /// How the model sees it at this point.
    pub model: ModelSide,
    /// `append`, `replace` (a surface op) or `log` (not a surface event).
    pub origin: Origin,
    /// What `dsh events` shows of it (message preview, turn-end reason,
    /// compaction id, shadowed seqs…).
    pub preview: String,
    /// The event's seq.
    pub seq: u64,
    /// A synthetic crash-repair closer, not in the file.
    pub synthetic: bool,
    /// The turn it belongs to.
    pub turn: Option<u64>,
    /// The event type.
    #[serde(rename = "type")]
    pub event_type: String,
}

/// How an event entered the log.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    /// A surface event appended as a new node.
    Append,
    /// A surface event that replaced a span.
    Replace,
    /// Not a surface event.
    Log,
}

/// What a replacement is.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ReplacementKind {
    /// A compaction checkpoint (a `user/message` from the compact plugin).
    Checkpoint,
    /// A pruned tool result (a `tool/result` replacement, the pruner's).
    Pruned,
    /// A new system prompt (a G3 `system/message` replacing the head).
    SystemPrompt,
    /// Any other replacement.
    Other,
}

/// The right-hand side of a row. In JSON an object tagged by `status`,
/// its keys sorted (as every object of the view's document): written by
/// hand below, described for the schema by the derive.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum ModelSide {
    /// The event is a current surface node.
    #[serde(rename_all = "camelCase")]
    Shown {
        /// Its position on the surface (an index of [`View::surface`]).
        position: usize,
        /// Whether it derives a message (an empty assistant message does not).
        derives: bool,
    },
    /// A replacement removed it; `by` stands for it now.
    #[serde(rename_all = "camelCase")]
    Replaced {
        /// The current node that stands for it.
        by: u64,
        /// `by`'s position on the surface (`None` only if no current node
        /// stands for it, which a well-formed log never gives).
        position: Option<usize>,
        /// What `by` is.
        replacement: ReplacementKind,
        /// Replacements between the event and `by`, oldest first (`[40]`
        /// for a result pruned as 40 and then compacted into `by`).
        via: Vec<u64>,
        /// The replacement that removed the event itself (`via[0]`, or `by`).
        removed_by: u64,
        /// This row is the earliest event `by` stands for: where the
        /// stand-in is drawn beside the transcript.
        first: bool,
    },
    /// A `compaction/*` event: where a compaction or a prune happened.
    #[serde(rename_all = "camelCase")]
    Marker {
        /// The replacement it belongs to (`None`: a compaction that wrote no
        /// checkpoint, e.g. a failed one, or one still open at this point).
        replacement: Option<u64>,
    },
    /// Never model-visible (headers, lifecycle, chunks, steps…).
    Hidden,
}

impl Serialize for ModelSide {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match self {
            ModelSide::Shown { position, derives } => {
                m.serialize_entry("derives", derives)?;
                m.serialize_entry("position", position)?;
                m.serialize_entry("status", "shown")?;
            }
            ModelSide::Replaced {
                by,
                position,
                replacement,
                via,
                removed_by,
                first,
            } => {
                m.serialize_entry("by", by)?;
                m.serialize_entry("first", first)?;
                m.serialize_entry("position", position)?;
                m.serialize_entry("removedBy", removed_by)?;
                m.serialize_entry("replacement", replacement)?;
                m.serialize_entry("status", "replaced")?;
                m.serialize_entry("via", via)?;
            }
            ModelSide::Marker { replacement } => {
                m.serialize_entry("replacement", replacement)?;
                m.serialize_entry("status", "marker")?;
            }
            ModelSide::Hidden => m.serialize_entry("status", "hidden")?,
        }
        m.end()
    }
}

/// One node of the model's side.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SurfaceEntry {
    /// Whether it derives a message.
    pub derives: bool,
    /// Position on the surface.
    pub position: usize,
    /// What `dsh events` shows of its message.
    pub preview: String,
    /// For a pruned tool result: the kept head, the marker and the kept tail.
    pub pruned: Option<Pruned>,
    /// `None` for an appended node; otherwise what kind of replacement it is.
    pub replacement: Option<ReplacementKind>,
    /// The nodes it removed directly, in surface order.
    pub replaces: Vec<u64>,
    /// The message role (`user`, `assistant`, `system`…), if any.
    pub role: Option<String>,
    /// The node's seq.
    pub seq: u64,
    /// Its `sourceEventSeqs`, as written.
    pub source_event_seqs: Vec<u64>,
    /// Every appended (original) event it stands for, transitively, in log
    /// order; `[seq]` for an appended node.
    pub stands_for: Vec<u64>,
    /// DSH's heuristic price.
    pub tokens: u64,
    /// Its event type.
    #[serde(rename = "type")]
    pub event_type: String,
}

/// A pruned tool result's text around the pruner's marker.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    /// The last characters of the kept head (at most `preview_chars`,
    /// whitespace collapsed, a cut one starting with `…`).
    pub head: String,
    /// Characters (code points) of the head before the marker.
    pub head_chars: usize,
    /// The marker, trimmed (`[... tool result middle pruned ...]`).
    pub marker: String,
    /// The first characters of the kept tail (at most `preview_chars`).
    pub tail: String,
    /// Characters (code points) of the tail after it.
    pub tail_chars: usize,
}

/// One replacement applied to the surface.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Replacement {
    /// The compaction id (checkpoints).
    pub compaction_id: Option<String>,
    /// Where it stands now: its own surface position, or the current node
    /// that replaced it in turn.
    pub current: u64,
    /// The op's end node.
    pub end: u64,
    /// What it is.
    pub kind: ReplacementKind,
    /// The `compaction/*` events that belong to it, in log order
    /// (`compaction/start`, `compaction/summary`, `compaction/end`, or the
    /// `compaction/prune` before a pruned result).
    pub markers: Vec<u64>,
    /// The replacing event.
    pub seq: u64,
    /// The nodes it removed, in surface order.
    pub shadowed: Vec<u64>,
    /// Its `sourceEventSeqs`, as written.
    pub source_event_seqs: Vec<u64>,
    /// Every appended event it stands for, transitively, in log order.
    pub stands_for: Vec<u64>,
    /// The op's start node.
    pub start: u64,
    /// The `compaction/summary` event, if any.
    pub summary_seq: Option<u64>,
}

/// Load `src` (up to `opts.upto` when set) and align its transcript with
/// the surface at that point.
pub fn align(src: &LogSource, opts: &LoadOptions, view: &ViewOptions) -> Result<View, LoadError> {
    align_log(src, opts, view).map(|(_, v)| v)
}

/// [`align`], also giving the loaded log (its warnings, headers, surface),
/// which [`crate::survival::of_view`] needs to read replaced spans again.
pub fn align_log(
    src: &LogSource,
    opts: &LoadOptions,
    view: &ViewOptions,
) -> Result<(LoadedLog, View), LoadError> {
    let opts = LoadOptions {
        skip_chunk_events: !view.all_events,
        ..opts.clone()
    };
    let mut b = Builder {
        opts: *view,
        ..Builder::default()
    };
    let log = crate::log::load(src, &opts, &mut |ev: &Event<'_>, f: &Folded<'_>| {
        b.event(ev, f)
    })?;
    let v = b.finish(&log, opts.upto);
    Ok((log, v))
}

/// The alignment as an observer of a log's loading, for a caller that reads
/// the whole log once for several purposes ([`crate::log::Tee`]). Unless
/// [`ViewOptions::all_events`], chunk events are passed over (packed rows
/// taken whole), as [`align_log`] has the loader skip them; the view is
/// [`align_log`]'s for the same log, `last_seq` counting no chunk.
pub(crate) struct Aligner(Builder);

impl Aligner {
    /// Ready to see a log's events.
    pub(crate) fn new(view: &ViewOptions) -> Aligner {
        Aligner(Builder {
            opts: *view,
            ..Builder::default()
        })
    }

    /// The view, once the (whole) log it saw is loaded.
    pub(crate) fn finish(self, log: &LoadedLog) -> View {
        self.0.finish(log, None)
    }
}

impl crate::log::Observer for Aligner {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self.0.event(ev, folded);
    }

    /// Chunks are shown only with `all_events`.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        if self.0.opts.all_events {
            run.each_event(folded, |ev, f| self.0.event(ev, f));
        }
    }
}

/// What one surface event was, kept while the log is read.
#[derive(Debug, Default)]
struct NodeInfo {
    event_type: String,
    role: Option<String>,
    preview: String,
    replacement: Option<ReplacementKind>,
    replaces: Vec<u64>,
    source_event_seqs: Vec<u64>,
    pruned: Option<Pruned>,
}

#[derive(Default)]
struct Builder {
    opts: ViewOptions,
    rows: Vec<Row>,
    turn: Option<u64>,
    /// Every surface event seen, by seq.
    nodes: HashMap<u64, NodeInfo>,
    /// Removed node → the replacement that removed it.
    removed_by: HashMap<u64, u64>,
    replacements: Vec<Replacement>,
    shadowed_bodies: HashMap<u64, NodeBody>,
    /// `compaction/*` rows waiting for their replacement: (row index,
    /// compaction id, is a prune).
    markers: Vec<(usize, Option<String>, bool)>,
    /// Summary events by compaction id.
    summaries: HashMap<String, u64>,
    summary_texts: HashMap<u64, String>,
    last_seq: Option<u64>,
}

impl Builder {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self.last_seq = Some(ev.seq);
        if ev.kind == Kind::TurnStart {
            self.turn = ev.turn().map(|t| t as u64);
        }
        let turn = self.turn.or_else(|| ev.turn().map(|t| t as u64));
        let event_type = ev.type_name().into_owned();
        let width = self.opts.preview_chars;
        let origin = match folded.applied.map(|a| a.op) {
            Some(SurfaceOp::Append) => Origin::Append,
            Some(SurfaceOp::Replace(_)) => Origin::Replace,
            None => Origin::Log,
        };
        if let Some(applied) = folded.applied {
            let msg = ev.message();
            let mut info = NodeInfo {
                event_type: event_type.clone(),
                role: msg
                    .and_then(|m| m.get("role"))
                    .and_then(|r| r.as_str())
                    .map(|r| r.into_owned()),
                preview: preview(msg, width),
                source_event_seqs: ev.sources().unwrap_or_default(),
                ..NodeInfo::default()
            };
            if let SurfaceOp::Replace(op) = applied.op {
                self.replacement(ev, applied, op, &mut info, width);
            }
            self.nodes.insert(ev.seq, info);
        }
        if matches!(
            ev.kind,
            Kind::CompactionStart
                | Kind::CompactionSummary
                | Kind::CompactionEnd
                | Kind::CompactionPrune
        ) {
            let model = self.marker(ev);
            self.push_row(ev, folded, turn, event_type, origin, model);
        } else if self.shown(ev) {
            self.push_row(ev, folded, turn, event_type, origin, ModelSide::Hidden);
        }
        if ev.kind == Kind::TurnEnd {
            self.turn = None;
        }
    }

    /// A replacement on the surface: what it shadows, the compaction or
    /// prune it closes, and the markers written before it that join it.
    fn replacement(
        &mut self,
        ev: &Event<'_>,
        applied: &crate::surface::Applied,
        op: crate::event::ReplaceOp,
        info: &mut NodeInfo,
        width: usize,
    ) {
        let msg = ev.message();
        let kind = replacement_kind(ev);
        info.replacement = Some(kind);
        info.replaces = applied.shadowed.iter().map(|n| n.seq).collect();
        if kind == ReplacementKind::Pruned {
            info.pruned = msg.and_then(|m| pruned_parts(m, width));
        }
        for n in &applied.shadowed {
            self.removed_by.insert(n.seq, ev.seq);
            self.shadowed_bodies.insert(n.seq, n.body.clone());
        }
        let compaction_id = msg
            .and_then(|m| m.get("source"))
            .and_then(|s| s.get("compactionId"))
            .and_then(|c| c.as_str())
            .map(|c| c.into_owned());
        let mut r = Replacement {
            seq: ev.seq,
            kind,
            start: op.start,
            end: op.end,
            shadowed: info.replaces.clone(),
            stands_for: Vec::new(),
            source_event_seqs: info.source_event_seqs.clone(),
            compaction_id: compaction_id.clone(),
            markers: Vec::new(),
            summary_seq: compaction_id
                .as_ref()
                .and_then(|c| self.summaries.get(c).copied()),
            current: ev.seq,
        };
        // Markers written before it: the compaction's start and
        // summary (same id), or the prune event just before.
        self.markers.retain(|(row, id, prune)| {
            let mine = match (&compaction_id, prune) {
                (Some(c), false) => id.as_deref() == Some(c.as_str()),
                (None, true) => kind == ReplacementKind::Pruned,
                _ => false,
            };
            if mine {
                r.markers.push(self.rows[*row].seq);
                self.rows[*row].model = ModelSide::Marker {
                    replacement: Some(ev.seq),
                };
            }
            !mine
        });
        self.replacements.push(r);
    }

    /// A compaction or prune marker's row: joined to its replacement when
    /// that came first (an end after its checkpoint), else waiting for it.
    fn marker(&mut self, ev: &Event<'_>) -> ModelSide {
        let id = ev
            .data()
            .get("compactionId")
            .and_then(|c| c.as_str())
            .map(|c| c.into_owned());
        if ev.kind == Kind::CompactionSummary
            && let Some(c) = &id
        {
            self.summaries.insert(c.clone(), ev.seq);
            let mut text = String::new();
            for b in ev
                .data()
                .get("summary")
                .and_then(|s| s.as_arr())
                .into_iter()
                .flatten()
            {
                if let Some(t) = b.get("text").and_then(|t| t.as_jstr()) {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t.to_lossy());
                }
            }
            self.summary_texts.insert(ev.seq, text);
        }
        // An end after its checkpoint joins it at once.
        let done = match (&id, ev.kind) {
            (Some(c), Kind::CompactionEnd) => self
                .replacements
                .iter_mut()
                .rev()
                .find(|r| r.compaction_id.as_deref() == Some(c.as_str())),
            _ => None,
        };
        match done {
            Some(r) => {
                r.markers.push(ev.seq);
                ModelSide::Marker {
                    replacement: Some(r.seq),
                }
            }
            None => {
                self.markers.push((
                    self.rows.len(),
                    id.clone(),
                    ev.kind == Kind::CompactionPrune,
                ));
                ModelSide::Marker { replacement: None }
            }
        }
    }

    fn shown(&self, ev: &Event<'_>) -> bool {
        self.opts.all_events
            || ev.kind.is_surface()
            || matches!(ev.kind, Kind::TurnStart | Kind::TurnEnd)
    }

    fn push_row(
        &mut self,
        ev: &Event<'_>,
        folded: &Folded<'_>,
        turn: Option<u64>,
        event_type: String,
        origin: Origin,
        model: ModelSide,
    ) {
        let preview = match self.nodes.get(&ev.seq) {
            Some(n) if n.replaces.is_empty() => n.preview.clone(),
            Some(n) => {
                let seqs: Vec<String> = n.replaces.iter().map(|s| s.to_string()).collect();
                format!("replaces [{}]: {}", seqs.join(", "), n.preview)
            }
            None => describe(ev, self.opts.preview_chars, &|v| v.to_json()),
        };
        self.rows.push(Row {
            seq: ev.seq,
            line: (ev.line > 0).then_some(ev.line),
            event_type,
            turn,
            origin,
            synthetic: folded.synthetic,
            preview,
            model,
        });
    }

    /// What each node stands for, transitively (replacements come after
    /// what they replace, so one pass in seq order builds them).
    fn stands_for(&self) -> HashMap<u64, Vec<u64>> {
        let mut seqs: Vec<u64> = self.nodes.keys().copied().collect();
        seqs.sort_unstable();
        let mut stands: HashMap<u64, Vec<u64>> = HashMap::new();
        for s in &seqs {
            let n = &self.nodes[s];
            let mut v = Vec::new();
            if n.replacement.is_none() {
                v.push(*s);
            }
            for r in &n.replaces {
                v.extend(stands.get(r).into_iter().flatten().copied());
            }
            v.sort_unstable();
            v.dedup();
            stands.insert(*s, v);
        }
        stands
    }

    fn finish(mut self, log: &LoadedLog, at: Option<u64>) -> View {
        let position: HashMap<u64, usize> = log
            .surface
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.seq, i))
            .collect();
        // The chain from a removed node to the current one.
        let chain = |seq: u64| {
            let mut via = Vec::new();
            let mut at = seq;
            while let Some(&r) = self.removed_by.get(&at) {
                via.push(r);
                at = r;
                if via.len() > self.removed_by.len() {
                    break; // a cycle cannot happen; never loop on one
                }
            }
            via
        };
        let mut stands = self.stands_for();
        let kind_of = |s: u64| {
            self.nodes
                .get(&s)
                .and_then(|n| n.replacement)
                .unwrap_or(ReplacementKind::Other)
        };
        // The earliest transcript row each current node stands for.
        let mut first_row: HashMap<u64, u64> = HashMap::new();
        for row in &mut self.rows {
            let Some(node) = self.nodes.get(&row.seq) else {
                continue;
            };
            row.model = match position.get(&row.seq) {
                Some(&p) => ModelSide::Shown {
                    position: p,
                    derives: log.surface.nodes[p].derives,
                },
                None => {
                    let via = chain(row.seq);
                    let Some(&by) = via.last() else {
                        // A surface event no longer on the surface and not
                        // removed by a replacement: not expected; show it
                        // as not model-visible.
                        row.model = ModelSide::Hidden;
                        continue;
                    };
                    let first = node.replacement.is_none() && !first_row.contains_key(&by);
                    if first {
                        first_row.insert(by, row.seq);
                    }
                    ModelSide::Replaced {
                        by,
                        position: position.get(&by).copied(),
                        replacement: kind_of(by),
                        removed_by: via[0],
                        via: via[..via.len() - 1].to_vec(),
                        first,
                    }
                }
            };
        }
        for r in &mut self.replacements {
            r.stands_for = stands.get(&r.seq).cloned().unwrap_or_default();
            r.current = chain(r.seq).last().copied().unwrap_or(r.seq);
            if r.summary_seq.is_none() {
                r.summary_seq = r
                    .compaction_id
                    .as_ref()
                    .and_then(|c| self.summaries.get(c).copied());
            }
        }
        let surface = log
            .surface
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let info = self.nodes.remove(&n.seq).unwrap_or_default();
                SurfaceEntry {
                    position: i,
                    seq: n.seq,
                    event_type: if info.event_type.is_empty() {
                        format!("{:?}", n.kind)
                    } else {
                        info.event_type
                    },
                    role: info.role,
                    tokens: n.tokens,
                    derives: n.derives,
                    preview: info.preview,
                    replacement: info.replacement,
                    replaces: info.replaces,
                    stands_for: stands.remove(&n.seq).unwrap_or_else(|| vec![n.seq]),
                    source_event_seqs: info.source_event_seqs,
                    pruned: info.pruned,
                }
            })
            .collect();
        View {
            at,
            last_seq: self.last_seq,
            surface,
            replacements: self.replacements,
            rows: self.rows,
            shadowed_bodies: self.shadowed_bodies,
            summary_texts: self.summary_texts,
        }
    }
}

/// What a replacing event is: a checkpoint from the compact plugin, a pruned
/// tool result, or another replacement.
fn replacement_kind(ev: &Event<'_>) -> ReplacementKind {
    match ev.kind {
        Kind::ToolResult => ReplacementKind::Pruned,
        Kind::SystemMessage => ReplacementKind::SystemPrompt,
        Kind::UserMessage
            if ev
                .message()
                .and_then(|m| m.get("source"))
                .is_some_and(|s| s.has("compactionId")) =>
        {
            ReplacementKind::Checkpoint
        }
        _ => ReplacementKind::Other,
    }
}

/// The text of a tool result's content (text blocks, nested in its
/// `tool-result` blocks), joined by newlines.
fn result_text(msg: &Value<'_>) -> String {
    let mut out = String::new();
    fn walk(blocks: &[Value<'_>], out: &mut String) {
        for b in blocks {
            if let Some(t) = b.get("text").and_then(|t| t.as_jstr()) {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.to_lossy());
            }
            if let Some(inner) = b.get("content").and_then(|c| c.as_arr()) {
                walk(inner, out);
            }
        }
    }
    if let Some(c) = msg.get("content").and_then(|c| c.as_arr()) {
        walk(c, &mut out);
    }
    out
}

/// Split a pruned result around the pruner's marker.
fn pruned_parts(msg: &Value<'_>, width: usize) -> Option<Pruned> {
    let text = result_text(msg);
    let marker = crate::prune::PRUNE_MARKER.trim();
    let at = text.find(marker)?;
    let (head, rest) = text.split_at(at);
    let tail = &rest[marker.len()..];
    let head_c = collapse(head);
    let tail_c = collapse(tail);
    Some(Pruned {
        head: cut_front(&head_c, width),
        marker: marker.to_string(),
        tail: cut_back(&tail_c, width),
        head_chars: head.trim_end().chars().count(),
        tail_chars: tail.trim_start().chars().count(),
    })
}

/// Words joined by one space.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `width` characters, `…` last when cut.
fn cut_back(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The last `width` characters, `…` first when cut.
fn cut_front(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(n - width.saturating_sub(1)));
    out
}

/// What `dsh events` and `dsh view` show of an event that is not a message:
/// a `turn/end`'s reason, a compaction's id (and error), the nodes a
/// `compaction/summary` or `compaction/prune` shadows and their tokens, or
/// else the event's `data` as JSON; cut to `width` characters with `…`.
/// `count` writes the `shadowedTokenCount` (a terminal table may group its
/// thousands; the view shows it as JSON).
///
/// ```
/// use dsh::json::Value;
/// let src = dsh::LogSource::File("samples/compacted.jsonl".into());
/// let mut seen = Vec::new();
/// dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |ev: &dsh::event::Event<'_>, _: &dsh::log::Folded<'_>| {
///     if ev.kind == dsh::event::Kind::CompactionPrune {
///         seen.push(dsh::view::describe(ev, 80, &|v: &Value<'_>| v.to_json()));
///     }
/// })?;
/// assert_eq!(seen, ["shadows [21] (7270 tokens)"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn describe(ev: &Event<'_>, width: usize, count: &dyn Fn(&Value<'_>) -> String) -> String {
    let d = ev.data();
    match ev.kind {
        Kind::TurnEnd => d
            .get("reason")
            .and_then(|r| r.get("kind"))
            .and_then(|k| k.as_str())
            .map(|k| k.into_owned())
            .unwrap_or_default(),
        Kind::CompactionStart | Kind::CompactionEnd => {
            let id = d
                .get("compactionId")
                .map(|i| i.to_json())
                .unwrap_or_default();
            let err = d
                .get("error")
                .map(|e| format!(" error: {}", e.to_json()))
                .unwrap_or_default();
            cut_back(&format!("{id}{err}"), width)
        }
        Kind::CompactionSummary | Kind::CompactionPrune => format!(
            "shadows {} ({} tokens)",
            d.get("shadowedSeqs")
                .map(|s| s.to_json())
                .unwrap_or_default(),
            d.get("shadowedTokenCount").map(count).unwrap_or_default()
        ),
        _ => cut_back(&d.to_json(), width),
    }
}

/// The whitespace-collapsed preview of a message, as `dsh events` shows it:
/// text as it is, `(thinking) …` for reasoning, `→ name(arguments)` for tool
/// calls, `← …` for tool results, `[image]`, `[type]` for other blocks; cut
/// to `width` characters with `…`.
pub fn preview(msg: Option<&Value<'_>>, width: usize) -> String {
    let Some(m) = msg else {
        return String::new();
    };
    let mut clip = Clip::new(width);
    if let Some(blocks) = m.get("content").and_then(|c| c.as_arr()) {
        for (i, b) in blocks.iter().enumerate() {
            if i > 0 {
                clip.push_str(" ");
            }
            block_preview(b, &mut clip);
        }
    }
    clip.finish()
}

/// Whitespace-collapsed text, stopping once past `width`.
struct Clip {
    out: String,
    chars: usize,
    width: usize,
    space: bool,
}

impl Clip {
    fn new(width: usize) -> Clip {
        Clip {
            out: String::new(),
            chars: 0,
            width,
            space: false,
        }
    }

    fn open(&self) -> bool {
        self.chars <= self.width
    }

    fn push(&mut self, c: char) -> bool {
        if c.is_whitespace() {
            self.space = self.chars > 0;
            return self.open();
        }
        if std::mem::take(&mut self.space) {
            self.out.push(' ');
            self.chars += 1;
            if !self.open() {
                return false;
            }
        }
        self.out.push(c);
        self.chars += 1;
        self.open()
    }

    fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            if !self.push(c) {
                break;
            }
        }
    }

    fn push_jstr(&mut self, s: Option<&JStr<'_>>) {
        if let Some(s) = s
            && self.open()
        {
            s.each_char_lossy(|c| self.push(c));
        }
    }

    fn finish(self) -> String {
        if self.chars <= self.width {
            return self.out;
        }
        cut_back(&self.out, self.width)
    }
}

fn block_preview(b: &Value<'_>, clip: &mut Clip) {
    let ty = b
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .into_owned();
    let text = |k: &str| b.get(k).and_then(|t| t.as_jstr());
    match ty.as_str() {
        "text" => clip.push_jstr(text("text")),
        "reasoning" => {
            clip.push_str("(thinking) ");
            clip.push_jstr(text("text"));
        }
        "tool-call" => {
            clip.push_str("→ ");
            clip.push_jstr(text("name"));
            clip.push_str("(");
            clip.push_jstr(text("arguments"));
            clip.push_str(")");
        }
        "tool-result" => {
            clip.push_str("← ");
            if let Some(a) = b.get("content").and_then(|c| c.as_arr()) {
                for (i, inner) in a.iter().enumerate() {
                    if i > 0 {
                        clip.push_str(" ");
                    }
                    block_preview(inner, clip);
                }
            }
        }
        "image" => clip.push_str("[image]"),
        other => {
            clip.push_str("[");
            clip.push_str(other);
            clip.push_str("]");
        }
    }
}
