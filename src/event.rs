//! The event envelope and the event vocabulary.
//!
//! An event is kept as the JSON object it was read from (so it can be written
//! back byte-exact, §17) plus the few facts every stage needs: its [`Kind`],
//! `seq` and where it came from in the file.

use crate::json::{OwnedValue, Value};

/// Event types a reader must interpret; every other known type is
/// [`Kind::Other`], unknown types are [`Kind::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Kind {
    UserMessage,
    AssistantMessage,
    ToolResult,
    AssistantChunk,
    ToolCall,
    TurnStart,
    TurnEnd,
    StepStart,
    StepEnd,
    RequestHeader,
    RequestContext,
    SessionEndSeed,
    CompactionStart,
    CompactionSummary,
    CompactionEnd,
    CompactionPrune,
    CommandRun,
    CommandDone,
    TodoWrite,
    /// Another type of the rc.8 vocabulary (plugin events).
    Other,
    /// Not in the rc.8 vocabulary.
    Unknown,
    /// Generation 3: the system prompt as a surface node.
    SystemMessage,
    /// Generation 3: durable image offload marks (a projection event).
    ImageOffload,
}

/// The 48 event types rc.8 knows (session-log §5.1).
const KNOWN_TYPES: [&str; 48] = [
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "assistant/chunk",
    "assistant/message",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "request/context",
    "request/header",
    "sandbox/mode",
    "schedule/change",
    "session/end-seed",
    "session/title",
    "session/title-llm-request",
    "step/end",
    "step/start",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "todo/write",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/call",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "tool/result",
    "turn/end",
    "turn/start",
    "user/message",
    "web/deepseek-search-llm-request",
];

impl Kind {
    /// Classify a type name.
    pub(crate) fn of(name: &str) -> Kind {
        match name {
            "user/message" => Kind::UserMessage,
            "assistant/message" => Kind::AssistantMessage,
            "tool/result" => Kind::ToolResult,
            "assistant/chunk" => Kind::AssistantChunk,
            "tool/call" => Kind::ToolCall,
            "turn/start" => Kind::TurnStart,
            "turn/end" => Kind::TurnEnd,
            "step/start" => Kind::StepStart,
            "step/end" => Kind::StepEnd,
            "request/header" => Kind::RequestHeader,
            "request/context" => Kind::RequestContext,
            "session/end-seed" => Kind::SessionEndSeed,
            "compaction/start" => Kind::CompactionStart,
            "compaction/summary" => Kind::CompactionSummary,
            "compaction/end" => Kind::CompactionEnd,
            "compaction/prune" => Kind::CompactionPrune,
            "command/run" => Kind::CommandRun,
            "command/done" => Kind::CommandDone,
            "todo/write" => Kind::TodoWrite,
            n if KNOWN_TYPES.binary_search(&n).is_ok() => Kind::Other,
            _ => Kind::Unknown,
        }
    }

    /// Whether events of this type are surface nodes (G0: user, assistant,
    /// tool result).
    pub fn is_surface(self) -> bool {
        matches!(
            self,
            Kind::UserMessage | Kind::AssistantMessage | Kind::ToolResult | Kind::SystemMessage
        )
    }

    /// Classify a type name in a format generation's vocabulary: rc.8's in
    /// G0; DSH's frozen released-v0 inventory in G1 (rc.8's and three more);
    /// G2 trades `assistant/chunk` for `assistant/attempt`; G3 as
    /// [`Kind::of_g3`].
    pub(crate) fn in_generation(name: &str, generation: crate::Generation) -> Kind {
        use crate::Generation as G;
        const V1_EXTRA: [&str; 3] = [
            "model/selection",
            "session-log-deepseek/delivery-accepted",
            "subagent/model-selection-policy",
        ];
        match (generation, name) {
            (G::V0, n) => Kind::of(n),
            (G::V1, n) if V1_EXTRA.contains(&n) => Kind::Other,
            (G::V1, n) => Kind::of(n),
            (G::V2, "assistant/chunk") => Kind::Unknown,
            (G::V2, "assistant/attempt") => Kind::Other,
            (G::V2, n) if V1_EXTRA.contains(&n) => Kind::Other,
            (G::V2, n) => Kind::of(n),
            (G::V3, n) => Kind::of_g3(n),
        }
    }

    /// Classify a surface node's type name read again: a node is a surface
    /// event of its log's generation, and only G3's `system/message` is
    /// missing from rc.8's vocabulary.
    pub(crate) fn of_node(name: &str) -> Kind {
        match name {
            "system/message" => Kind::SystemMessage,
            n => Kind::of(n),
        }
    }

    /// Classify a type name in generation 3 (session-log §13.5).
    fn of_g3(name: &str) -> Kind {
        match name {
            "assistant/chunk" | "tool/code-dispatch" | "tool/code-dispatch-start" => Kind::Unknown,
            "system/message" => Kind::SystemMessage,
            "image/offload" => Kind::ImageOffload,
            n if G3_EXTRA_TYPES.contains(&n) => Kind::Other,
            n => Kind::of(n),
        }
    }
}

/// Types generation 3 adds to the rc.8 vocabulary (session-log §13.5).
const G3_EXTRA_TYPES: [&str; 12] = [
    "assistant/attempt",
    "deliverables/presented",
    "feedback/message-delete",
    "feedback/message-put",
    "fork/session-source",
    "image/offload",
    "model/selection",
    "session-log-deepseek/delivery-accepted",
    "subagent/catalog",
    "subagent/model-selection-policy",
    "tool/ptc-dispatch",
    "tool/ptc-dispatch-start",
];

/// One decoded event: the envelope object and what was learnt reading it.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// The type, classified.
    pub kind: Kind,
    /// The event's seq (equal to its index in the log).
    pub seq: u64,
    /// 1-based physical line it was read from (0 for synthetic closers).
    pub line: u64,
    /// The whole envelope object.
    pub value: Value<'a>,
}

/// An event that outlives its line.
pub type OwnedEvent = Event<'static>;

/// One record of an embedded assistant stream ([`Event::stream`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum StreamRecord<'v, 'a> {
    /// A single chunk (`{type: "chunk", time, chunk}`): the chunk.
    Chunk(&'v Value<'a>),
    /// A run of text, reasoning or tool-call deltas: how many.
    Run {
        /// Deltas in the run.
        members: usize,
    },
}

impl StreamRecord<'_, '_> {}

/// A replace operation (position span named by endpoint seqs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplaceOp {
    /// Seq of the start node.
    pub start: u64,
    /// Seq of the end node.
    pub end: u64,
}

/// The parsed `surfaceOp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfaceOp {
    /// `"append"`
    Append,
    /// `{op:"replace",start,end}`
    Replace(ReplaceOp),
}

impl<'a> Event<'a> {
    /// The `type` string.
    pub fn type_name(&self) -> std::borrow::Cow<'_, str> {
        self.value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
    }

    /// The `data` member (`null` when absent).
    #[inline]
    pub fn data(&self) -> &Value<'a> {
        static NULL: Value<'static> = Value::Null;
        self.value.get("data").unwrap_or(&NULL)
    }

    /// The `time` member.
    pub(crate) fn time(&self) -> f64 {
        self.value
            .get("time")
            .and_then(|t| t.as_f64())
            .unwrap_or(0.0)
    }

    /// The parsed surface op, when valid (either generation's spelling).
    pub(crate) fn surface_op(&self) -> Option<SurfaceOp> {
        let raw = self.value.get("surfaceOp")?;
        // G3 spells a replace `{op, startSeq, endSeq}`; the loader checked
        // the spelling of the event's own generation.
        parse_surface_op(raw).or_else(|| {
            if raw.as_obj()?.len() != 3 || !raw.get("op")?.is_str("replace") {
                return None;
            }
            Some(SurfaceOp::Replace(ReplaceOp {
                start: raw.get("startSeq")?.as_count()?,
                end: raw.get("endSeq")?.as_count()?,
            }))
        })
    }

    /// `sourceEventSeqs` as counts (invalid members skipped).
    pub(crate) fn sources(&self) -> Option<Vec<u64>> {
        let a = self.value.get("sourceEventSeqs")?.as_arr()?;
        Some(a.iter().filter_map(|v| v.as_count()).collect())
    }

    /// The message this event carries, if it is a message event: `data` for
    /// `user/message`, `data.message` for assistant and tool results.
    pub fn message(&self) -> Option<&Value<'a>> {
        match self.kind {
            Kind::UserMessage => Some(self.data()),
            Kind::AssistantMessage | Kind::ToolResult | Kind::SystemMessage => {
                self.data().get("message")
            }
            _ => None,
        }
    }

    /// The times of the chunks a G2+ `stream` embeds, in stream order (a
    /// run's members from `time0` by its `dt` gaps): the times a G0 log
    /// gives its `assistant/chunk` events. Empty for every other event.
    pub(crate) fn stream_times(&self) -> impl Iterator<Item = f64> + '_ {
        let records = match self.kind {
            Kind::AssistantMessage | Kind::Other => {
                self.data().get("stream").and_then(|s| s.as_arr())
            }
            _ => None,
        };
        records.into_iter().flatten().flat_map(|r| {
            let first = r
                .get("time")
                .or_else(|| r.get("time0"))
                .and_then(|t| t.as_f64())
                .unwrap_or(f64::NAN);
            let gaps = r.get("dt").and_then(|d| d.as_arr()).map(|d| d.as_slice());
            std::iter::once(first).chain(gaps.into_iter().flatten().scan(first, |t, g| {
                *t += g.as_f64().unwrap_or(f64::NAN);
                Some(*t)
            }))
        })
    }

    /// The records of a G2+ `assistant/message` or `assistant/attempt`'s
    /// embedded `stream` (session-log §13.2), as the chunks they stand for
    /// (empty for any other event, and for every G0 event).
    pub(crate) fn stream(&self) -> impl Iterator<Item = StreamRecord<'_, 'a>> {
        let records = match self.kind {
            Kind::AssistantMessage | Kind::Other => {
                self.data().get("stream").and_then(|s| s.as_arr())
            }
            _ => None,
        };
        records.into_iter().flatten().map(|r| {
            if r.get("type").is_some_and(|t| t.is_str("chunk")) {
                StreamRecord::Chunk(r.get("chunk").unwrap_or(&Value::Null))
            } else {
                let payload = r.get("texts").or_else(|| r.get("args"));
                StreamRecord::Run {
                    members: payload.and_then(|p| p.as_arr()).map_or(0, |a| a.len()),
                }
            }
        })
    }

    /// `data.turn` as a number.
    pub fn turn(&self) -> Option<f64> {
        self.data().get("turn").and_then(|v| v.as_f64())
    }

    /// `data.step` as a number.
    pub(crate) fn step(&self) -> Option<f64> {
        self.data().get("step").and_then(|v| v.as_f64())
    }

    /// A deep copy that keeps `self`.
    pub(crate) fn to_owned_event(&self) -> OwnedEvent {
        Event {
            kind: self.kind,
            seq: self.seq,
            line: self.line,
            value: self.value.to_owned_value(),
        }
    }
}

/// Parse a G0 `surfaceOp` value; `None` when it is not one of the exact shapes.
pub(crate) fn parse_surface_op(v: &Value<'_>) -> Option<SurfaceOp> {
    match v {
        Value::Str(s) if s.eq_str("append") => Some(SurfaceOp::Append),
        Value::Obj(o) if o.len() == 3 => {
            if !v.get("op")?.is_str("replace") {
                return None;
            }
            let start = v.get("start")?.as_count()?;
            let end = v.get("end")?.as_count()?;
            Some(SurfaceOp::Replace(ReplaceOp { start, end }))
        }
        _ => None,
    }
}

/// Build an owned event from parts (used for synthetic events).
pub fn owned_event(kind: Kind, seq: u64, value: OwnedValue) -> OwnedEvent {
    Event {
        kind,
        seq,
        line: 0,
        value,
    }
}
