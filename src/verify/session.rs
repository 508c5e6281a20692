//! §7.3: the session relational invariant (`dsh-session`'s companion,
//! session-log §15): turn and step enclosure and numbering, tool call/result
//! pairing within a step, turn-enclosed execution events.
//!
//! The transitions are the companion's; where it would stop at a violation
//! this records it and applies the transition anyway.

use std::collections::HashSet;

use super::js::Js;
use super::{At, CheckId, Sink};
use crate::event::{Event, Kind};

/// The companion's trace.
#[derive(Debug)]
pub(crate) struct SessionTrace {
    last_seq: Option<u64>,
    open_turn: Js,
    open_step: Js,
    next_turn: f64,
    next_step: f64,
    pending_calls: HashSet<String>,
}

impl Default for SessionTrace {
    fn default() -> Self {
        SessionTrace {
            last_seq: None,
            open_turn: Js::Null,
            open_step: Js::Null,
            next_turn: 1.0,
            next_step: 1.0,
            pending_calls: HashSet::new(),
        }
    }
}

impl SessionTrace {
    /// Validate one event and apply its transition.
    pub(crate) fn observe(&mut self, ev: &Event<'_>, at: At, sink: &mut Sink) {
        monotonic_seq(self, ev, at, sink);
        let d = ev.data();
        let turn = Js::of(d.get("turn"));
        let step = Js::of(d.get("step"));
        match ev.kind {
            Kind::TurnStart => {
                turn_start(self, &turn, at, sink);
                self.open_turn = turn;
                self.next_step = 1.0;
            }
            Kind::TurnEnd => {
                turn_end(self, &turn, at, sink);
                self.open_turn = Js::Null;
                self.next_turn += 1.0;
            }
            Kind::StepStart => {
                step_start(self, &turn, &step, at, sink);
                self.open_step = step;
            }
            Kind::StepEnd => {
                open_step_named(self, "step/end", &turn, &step, CheckId::Sess3, at, sink);
                self.pending_calls.clear();
                self.open_step = Js::Null;
                self.next_step += 1.0;
            }
            Kind::AssistantChunk => {
                open_step_named(
                    self,
                    "assistant/chunk",
                    &turn,
                    &step,
                    CheckId::Sess3,
                    at,
                    sink,
                );
            }
            Kind::SystemMessage => {
                open_step_named(
                    self,
                    "system/message",
                    &turn,
                    &step,
                    CheckId::Sess3,
                    at,
                    sink,
                );
            }
            Kind::Other if ev.type_name() == "assistant/attempt" => {
                open_step_named(
                    self,
                    "assistant/attempt",
                    &turn,
                    &step,
                    CheckId::Sess3,
                    at,
                    sink,
                );
            }
            Kind::AssistantMessage => {
                open_step_named(
                    self,
                    "assistant/message",
                    &turn,
                    &step,
                    CheckId::Sess3,
                    at,
                    sink,
                );
            }
            Kind::ToolCall => {
                open_step_named(self, "tool/call", &turn, &step, CheckId::Sess3, at, sink);
                if let Some(k) = Js::of(d.get("callId")).set_key() {
                    self.pending_calls.insert(k);
                }
            }
            Kind::ToolResult => tool_result(self, ev, &turn, &step, at, sink),
            Kind::TodoWrite | Kind::RequestHeader | Kind::RequestContext => {
                turn_enclosed(self, ev, at, sink);
            }
            _ => {}
        }
        self.last_seq = Some(ev.seq);
    }
}

impl SessionTrace {
    /// Whether chunks from `seq0` on labelled `turn`/`step` pass every
    /// check: their seqs follow and they name the open turn and step.
    pub(crate) fn takes_chunks(&self, seq0: u64, turn: f64, step: f64) -> bool {
        self.last_seq.is_none_or(|l| seq0 > l)
            && self.open_turn.strict_eq(&Js::num(turn))
            && self.open_step.strict_eq(&Js::num(step))
    }

    /// The transition of chunks up to `last_seq` (checked by
    /// [`Self::takes_chunks`]).
    pub(crate) fn chunks_taken(&mut self, last_seq: u64) {
        self.last_seq = Some(last_seq);
    }
}

/// V-SESS-1: seqs strictly increase.
fn monotonic_seq(t: &SessionTrace, ev: &Event<'_>, at: At, sink: &mut Sink) {
    if let Some(last) = t.last_seq
        && ev.seq <= last
    {
        sink.emit(
            CheckId::Sess1,
            at,
            format!("seq must strictly increase: saw {} after {last}", ev.seq),
        );
    }
}

/// V-SESS-2: `turn/start` with no open turn, numbered in sequence.
fn turn_start(t: &SessionTrace, turn: &Js, at: At, sink: &mut Sink) {
    if !t.open_turn.is_null() {
        sink.emit(
            CheckId::Sess2,
            at,
            format!(
                "turn/start {} while turn {} is still open",
                turn.template(),
                t.open_turn.template()
            ),
        );
    }
    if !turn.strict_eq(&Js::num(t.next_turn)) {
        sink.emit(
            CheckId::Sess2,
            at,
            format!(
                "turn/start expected turn {}, got {}",
                Js::num(t.next_turn).template(),
                turn.template()
            ),
        );
    }
}

/// V-SESS-2: `turn/end` closes the open turn, with no open step.
fn turn_end(t: &SessionTrace, turn: &Js, at: At, sink: &mut Sink) {
    if !t.open_turn.strict_eq(turn) {
        sink.emit(
            CheckId::Sess2,
            at,
            format!(
                "turn/end {} does not match open turn {}",
                turn.template(),
                t.open_turn.template()
            ),
        );
    }
    if !t.open_step.is_null() {
        sink.emit(
            CheckId::Sess2,
            at,
            format!(
                "turn/end {} while step {} is still open",
                turn.template(),
                t.open_step.template()
            ),
        );
    }
}

/// V-SESS-3: `step/start` inside the open turn, one at a time, numbered from 1.
fn step_start(t: &SessionTrace, turn: &Js, step: &Js, at: At, sink: &mut Sink) {
    if !t.open_turn.strict_eq(turn) {
        sink.emit(
            CheckId::Sess3,
            at,
            format!(
                "step/start in turn {} but open turn is {}",
                turn.template(),
                t.open_turn.template()
            ),
        );
    }
    if !t.open_step.is_null() {
        sink.emit(
            CheckId::Sess3,
            at,
            format!(
                "step/start {} while step {} is still open",
                step.template(),
                t.open_step.template()
            ),
        );
    }
    if !step.strict_eq(&Js::num(t.next_step)) {
        sink.emit(
            CheckId::Sess3,
            at,
            format!(
                "step/start expected step {} in turn {}, got {}",
                Js::num(t.next_step).template(),
                turn.template(),
                step.template()
            ),
        );
    }
}

/// V-SESS-3 (V-SESS-4 for tool results): a step-scoped event names the open
/// turn and step.
fn open_step_named(
    t: &SessionTrace,
    kind: &str,
    turn: &Js,
    step: &Js,
    check: CheckId,
    at: At,
    sink: &mut Sink,
) {
    if !t.open_turn.strict_eq(turn) || !t.open_step.strict_eq(step) {
        sink.emit(
            check,
            at,
            format!(
                "{kind} names turn {}/step {} but open is turn {}/step {}",
                turn.template(),
                step.template(),
                t.open_turn.template(),
                t.open_step.template()
            ),
        );
    }
}

/// V-SESS-4 / V-SESS-5: an appended result answers a call of the open step;
/// a replacement needs only an open turn.
fn tool_result(
    t: &mut SessionTrace,
    ev: &Event<'_>,
    turn: &Js,
    step: &Js,
    at: At,
    sink: &mut Sink,
) {
    let appended = ev
        .value
        .get("surfaceOp")
        .is_some_and(|o| o.is_str("append"));
    if !appended {
        if t.open_turn.is_null() {
            sink.emit(
                CheckId::Sess5,
                at,
                "tool/result surface replacement appended outside any open turn",
            );
        }
        return;
    }
    open_step_named(t, "tool/result", turn, step, CheckId::Sess4, at, sink);
    let msg = ev.message();
    let call_id = Js::of(
        msg.and_then(|m| m.get("source"))
            .and_then(|s| s.get("callId")),
    );
    let is_error = msg
        .and_then(|m| m.get("content"))
        .and_then(|c| c.as_arr())
        .and_then(|c| c.first())
        .and_then(|b| b.get("isError"))
        .is_some_and(|e| e.is_true());
    let not_started = is_error
        && ev
            .data()
            .get("error")
            .and_then(|e| e.get("code"))
            .is_some_and(|c| c.is_str("TOOL_NOT_STARTED"));
    let key = call_id.set_key();
    let pending = key.as_ref().is_some_and(|k| t.pending_calls.contains(k));
    if !pending && !not_started {
        sink.emit(
            CheckId::Sess4,
            at,
            format!(
                "tool/result for {} with no prior tool/call in this step",
                call_id.template()
            ),
        );
    }
    if let Some(k) = key {
        t.pending_calls.remove(&k);
    }
}

/// V-SESS-6: core execution events are turn-enclosed.
fn turn_enclosed(t: &SessionTrace, ev: &Event<'_>, at: At, sink: &mut Sink) {
    if t.open_turn.is_null() {
        sink.emit(
            CheckId::Sess6,
            at,
            format!(
                "{} appended outside any open turn (core execution events must be turn-enclosed)",
                ev.type_name()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Value;

    fn event(seq: u64, text: &str) -> Event<'static> {
        let value = Value::parse(text).unwrap().into_owned();
        let kind = Kind::of(&value.get("type").unwrap().as_str().unwrap());
        Event {
            kind,
            seq,
            line: 0,
            value,
        }
    }

    #[test]
    fn seqs_must_strictly_increase() {
        // The loader guarantees contiguous seqs, so only a direct feed can
        // break V-SESS-1.
        let mut sink = Sink {
            file: "t".into(),
            findings: Vec::new(),
            next: 0,
        };
        let mut t = SessionTrace::default();
        let at = |seq| At {
            seq,
            line: None,
            synthetic: false,
        };
        let ev = event(
            5,
            r#"{"type":"session/end-seed","seq":5,"time":0,"data":{}}"#,
        );
        t.observe(&ev, at(5), &mut sink);
        t.observe(&ev, at(5), &mut sink);
        assert_eq!(sink.findings.len(), 1);
        assert_eq!(sink.findings[0].check, CheckId::Sess1);
        assert_eq!(
            sink.findings[0].message,
            "seq must strictly increase: saw 5 after 5"
        );
    }
}
