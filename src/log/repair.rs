//! Crash repair: the synthetic closers the reference computes for a log whose
//! last turn never ended (session-log §11). They live in memory only.

use crate::event::{Event, Kind, OwnedEvent, owned_event};
use crate::json::{OwnedValue, Value};

/// Repair text for a call that was recorded as started (T1).
const OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.";
/// Repair text for a call that never started (T2).
const NOT_STARTED_TEXT: &str = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

#[derive(Debug, Clone)]
struct Pending {
    call_id: OwnedValue,
    step: OwnedValue,
    call_seq: Option<u64>,
}

/// Follows the log and computes the closers at the end.
#[derive(Debug, Default, Clone)]
pub(crate) struct RepairTracker {
    open_turn: Option<OwnedValue>,
    open_step: Option<OwnedValue>,
    pending: Vec<Pending>,
    last: Option<(u64, f64)>,
}

fn key_eq(a: &Value<'_>, b: &Value<'_>) -> bool {
    a.deep_eq(b)
}

impl RepairTracker {
    /// Note the last event without observing it (a log-only event that
    /// cannot change the repair state, e.g. a chunk).
    pub(crate) fn note_last(&mut self, seq: u64, time: f64) {
        self.last = Some((seq, time));
    }

    /// Observe the next event, whose time is already known.
    pub(crate) fn observe_at(&mut self, ev: &Event<'_>, time: f64) {
        self.last = Some((ev.seq, time));
        if !matches!(
            ev.kind,
            Kind::TurnStart
                | Kind::TurnEnd
                | Kind::StepStart
                | Kind::StepEnd
                | Kind::AssistantMessage
                | Kind::ToolCall
                | Kind::ToolResult
        ) {
            return;
        }
        let d = ev.data();
        match ev.kind {
            Kind::TurnStart => {
                self.open_turn = Some(
                    d.get("turn")
                        .map(|t| t.to_owned_value())
                        .unwrap_or(Value::Null),
                );
                self.open_step = None;
                self.pending.clear();
            }
            Kind::TurnEnd => {
                self.open_turn = None;
                self.open_step = None;
                self.pending.clear();
            }
            Kind::StepStart => {
                self.open_step = Some(
                    d.get("step")
                        .map(|t| t.to_owned_value())
                        .unwrap_or(Value::Null),
                );
            }
            Kind::StepEnd => {
                self.open_step = None;
                self.pending.clear();
            }
            Kind::AssistantMessage => {
                let step = d
                    .get("step")
                    .map(|s| s.to_owned_value())
                    .unwrap_or(Value::Null);
                if let Some(blocks) = d
                    .get("message")
                    .and_then(|m| m.get("content"))
                    .and_then(|c| c.as_arr())
                {
                    for b in blocks {
                        if b.get("type").is_some_and(|t| t.is_str("tool-call")) {
                            let id = b
                                .get("id")
                                .map(|i| i.to_owned_value())
                                .unwrap_or(Value::Null);
                            if let Some(p) =
                                self.pending.iter_mut().find(|p| key_eq(&p.call_id, &id))
                            {
                                p.step = step.clone();
                                p.call_seq = None;
                            } else {
                                self.pending.push(Pending {
                                    call_id: id,
                                    step: step.clone(),
                                    call_seq: None,
                                });
                            }
                        }
                    }
                }
            }
            Kind::ToolCall => {
                if let Some(id) = d.get("callId")
                    && let Some(p) = self.pending.iter_mut().find(|p| key_eq(&p.call_id, id))
                {
                    p.call_seq = Some(ev.seq);
                }
            }
            Kind::ToolResult => {
                if let Some(id) = d
                    .get("message")
                    .and_then(|m| m.get("source"))
                    .and_then(|s| s.get("callId"))
                {
                    self.pending.retain(|p| !key_eq(&p.call_id, id));
                }
            }
            _ => {}
        }
    }

    /// The closers, in order, starting after the last observed event.
    pub(crate) fn closers(&self) -> Vec<OwnedEvent> {
        let Some((last_seq, time)) = self.last else {
            return Vec::new();
        };
        let Some(turn) = self.open_turn.clone().filter(|t| !matches!(t, Value::Null)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seq = last_seq + 1;
        for p in &self.pending {
            let call_str = match &p.call_id {
                Value::Str(s) => s.to_lossy().into_owned(),
                other => other.to_json(),
            };
            let (text, name, code) = if p.call_seq.is_some() {
                (
                    OUTCOME_UNKNOWN_TEXT,
                    "ToolOutcomeUnknownError",
                    "TOOL_OUTCOME_UNKNOWN",
                )
            } else {
                (NOT_STARTED_TEXT, "ToolNotStartedError", "TOOL_NOT_STARTED")
            };
            let message = Value::obj()
                .with(
                    "id",
                    format!("interrupted-tool-result-{call_str}-{seq}").into(),
                )
                .with("role", "user".into())
                .with(
                    "source",
                    Value::obj()
                        .with("kind", "tool".into())
                        .with("callId", p.call_id.clone()),
                )
                .with(
                    "content",
                    Value::Arr(vec![
                        Value::obj()
                            .with("type", "tool-result".into())
                            .with("toolCallId", p.call_id.clone())
                            .with("isError", true.into())
                            .with(
                                "content",
                                Value::Arr(vec![
                                    Value::obj()
                                        .with("type", "text".into())
                                        .with("text", text.into()),
                                ]),
                            ),
                    ]),
                );
            let data = Value::obj()
                .with("turn", turn.clone())
                .with("step", p.step.clone())
                .with("message", message)
                .with(
                    "error",
                    Value::obj()
                        .with("name", name.into())
                        .with("code", code.into()),
                );
            let mut v = Value::obj()
                .with("type", "tool/result".into())
                .with("seq", seq.into())
                .with("time", time.into())
                .with("data", data)
                .with("surfaceOp", "append".into());
            if let Some(cs) = p.call_seq {
                v = v.with("sourceEventSeqs", Value::Arr(vec![cs.into()]));
            }
            out.push(owned_event(Kind::ToolResult, seq, v));
            seq += 1;
        }
        if let Some(step) = &self.open_step {
            let v = Value::obj()
                .with("type", "step/end".into())
                .with("seq", seq.into())
                .with("time", time.into())
                .with(
                    "data",
                    Value::obj()
                        .with("turn", turn.clone())
                        .with("step", step.clone()),
                );
            out.push(owned_event(Kind::StepEnd, seq, v));
            seq += 1;
        }
        let v = Value::obj()
            .with("type", "turn/end".into())
            .with("seq", seq.into())
            .with("time", time.into())
            .with(
                "data",
                Value::obj()
                    .with("turn", turn)
                    .with("reason", Value::obj().with("kind", "interrupted".into())),
            );
        out.push(owned_event(Kind::TurnEnd, seq, v));
        out
    }
}
