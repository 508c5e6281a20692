//! §7.4: the compaction invariant (`dsh-compaction`'s companion,
//! session-log §10.4): bracket pairing and ownership, checkpoint and summary
//! ids, shadowed fields, turn boundaries.
//!
//! A turn boundary inside an open bracket is a violation only if the bracket
//! is live: a start that a `session/end-seed` supersedes before any other
//! bracket marker is a stale orphan the reference ignores. That needs the
//! future, so such findings wait on the bracket and are recorded when the
//! next `compaction/start` or `compaction/end` proves it live, dropped when an
//! end-seed proves it stale.

use super::js::Js;
use super::{At, CheckId, Finding, Sink};
use crate::event::{Event, Kind};
use crate::json::Value;

/// An open bracket.
#[derive(Debug)]
struct Open {
    compaction_id: Js,
    source_command_id: Js,
    turn: Js,
    summarized: bool,
    /// Turn-boundary findings waiting for the bracket to prove live.
    crossings: Vec<Finding>,
}

/// The companion's trace.
#[derive(Debug)]
pub(crate) struct CompactionTrace {
    open_turn: Js,
    compaction: Option<Open>,
}

impl Default for CompactionTrace {
    fn default() -> Self {
        CompactionTrace {
            open_turn: Js::Null,
            compaction: None,
        }
    }
}

/// Whether an event is a compaction checkpoint: a replacing `user/message`
/// whose source is `{kind:"plugin", plugin:"compact"}`.
pub(crate) fn is_checkpoint(ev: &Event<'_>) -> bool {
    ev.kind == Kind::UserMessage
        && !ev
            .value
            .get("surfaceOp")
            .is_some_and(|o| o.is_str("append"))
        && ev.data().get("source").is_some_and(|s| {
            s.get("kind").is_some_and(|k| k.is_str("plugin"))
                && s.get("plugin").is_some_and(|p| p.is_str("compact"))
        })
}

impl CompactionTrace {
    /// Validate one event and apply its transition.
    pub(crate) fn observe(&mut self, ev: &Event<'_>, at: At, sink: &mut Sink) {
        if matches!(ev.kind, Kind::TurnStart | Kind::TurnEnd) {
            turn_boundary(self, ev, at, sink);
        }
        let d = ev.data();
        match ev.kind {
            Kind::SessionEndSeed => {
                // The open start (if any) is a stale orphan: its crossings
                // were harmless.
                self.compaction = None;
            }
            Kind::UserMessage if is_checkpoint(ev) => checkpoint(self, d, at, sink),
            Kind::CompactionStart => {
                start(self, ev, at, sink);
            }
            Kind::CompactionSummary => summary(self, d, at, sink),
            Kind::CompactionEnd => end(self, d, at, sink),
            _ => {}
        }
        match ev.kind {
            Kind::TurnStart => self.open_turn = Js::of(d.get("turn")),
            Kind::TurnEnd => self.open_turn = Js::Null,
            _ => {}
        }
    }

    /// End of log: a bracket still open was never followed by an end-seed
    /// (the reference's seeded session always appends one, so this only
    /// happens for a prefix); its crossings stay unproven and are dropped.
    pub(crate) fn finish(&mut self, _sink: &mut Sink) {
        self.compaction = None;
    }

    /// The open bracket is live: record its waiting findings.
    fn prove_live(&mut self, sink: &mut Sink) {
        if let Some(open) = &mut self.compaction {
            for f in open.crossings.drain(..) {
                sink.push(f);
            }
        }
    }
}

fn owner_name(turn: &Js) -> String {
    if turn.is_null() {
        "standalone compaction".into()
    } else {
        format!("compaction for turn {}", turn.template())
    }
}

/// V-CMP-7: no turn boundary inside a live bracket.
fn turn_boundary(t: &mut CompactionTrace, ev: &Event<'_>, at: At, sink: &mut Sink) {
    if let Some(open) = &mut t.compaction {
        let f = sink.make(
            CheckId::Cmp7,
            at,
            format!(
                "{} cannot cross an open {}",
                ev.type_name(),
                owner_name(&open.turn)
            ),
        );
        open.crossings.push(f);
    }
}

/// V-CMP-1: a durable id is a non-empty string.
fn id(value: &Js, label: &str, at: At, sink: &mut Sink) {
    if !value.is_nonempty_str() {
        sink.emit(
            CheckId::Cmp1,
            at,
            format!("{label} must be a non-empty string"),
        );
    }
}

/// The optional `sourceCommandId` is a non-empty string and the start's.
fn source_command_id(
    event_type: &str,
    value: &Js,
    expected: &Js,
    check: CheckId,
    at: At,
    sink: &mut Sink,
) {
    if !value.is_undefined() {
        id(value, &format!("{event_type} sourceCommandId"), at, sink);
    }
    if !value.strict_eq(expected) {
        sink.emit(
            check,
            at,
            format!(
                "{event_type} sourceCommandId {} does not match compaction/start sourceCommandId {}",
                value.template(),
                expected.template()
            ),
        );
    }
}

/// V-CMP-3: a numbered owner is the open turn; a null owner is between turns.
fn owner(owner: &Js, open_turn: &Js, event_type: &str, at: At, sink: &mut Sink) {
    if owner.is_null() {
        if !open_turn.is_null() {
            sink.emit(
                CheckId::Cmp3,
                at,
                format!(
                    "{event_type} is standalone but turn {} is open",
                    open_turn.template()
                ),
            );
        }
        return;
    }
    if open_turn.is_null() {
        sink.emit(
            CheckId::Cmp3,
            at,
            format!(
                "{event_type} for turn {} appended outside any open turn",
                owner.template()
            ),
        );
    }
    if !owner.strict_eq(open_turn) {
        sink.emit(
            CheckId::Cmp3,
            at,
            format!(
                "{event_type} names turn {} but open turn is {}",
                owner.template(),
                open_turn.template()
            ),
        );
    }
}

/// V-CMP-6: a checkpoint sits inside the open bracket with the same ids.
fn checkpoint(t: &mut CompactionTrace, d: &Value<'_>, at: At, sink: &mut Sink) {
    let source = d.get("source");
    let cid = Js::of(source.and_then(|s| s.get("compactionId")));
    let scid = Js::of(source.and_then(|s| s.get("sourceCommandId")));
    id(&cid, "compaction checkpoint compactionId", at, sink);
    if !scid.is_undefined() {
        id(&scid, "compaction checkpoint sourceCommandId", at, sink);
    }
    let Some(open) = &t.compaction else {
        sink.emit(
            CheckId::Cmp6,
            at,
            "compaction checkpoint has no matching compaction/start",
        );
        return;
    };
    if !cid.strict_eq(&open.compaction_id) {
        sink.emit(
            CheckId::Cmp6,
            at,
            format!(
                "compaction checkpoint id {} does not match compaction/start id {}",
                cid.template(),
                open.compaction_id.template()
            ),
        );
    }
    source_command_id(
        "compaction checkpoint",
        &scid,
        &open.source_command_id,
        CheckId::Cmp6,
        at,
        sink,
    );
}

/// V-CMP-1/2/3: a `compaction/start` opens a bracket.
fn start(t: &mut CompactionTrace, ev: &Event<'_>, at: At, sink: &mut Sink) {
    let d = ev.data();
    let cid = Js::of(d.get("compactionId"));
    let scid = Js::of(d.get("sourceCommandId"));
    let turn = Js::of(d.get("turn"));
    id(&cid, "compaction/start compactionId", at, sink);
    if !scid.is_undefined() {
        id(&scid, "compaction/start sourceCommandId", at, sink);
    }
    // A new start means the open one was not stale.
    t.prove_live(sink);
    if let Some(open) = &t.compaction {
        let who = if open.turn.is_null() {
            "standalone compaction".to_string()
        } else {
            format!("turn {}", open.turn.template())
        };
        sink.emit(
            CheckId::Cmp2,
            at,
            format!("compaction/start while {who} is still compacting"),
        );
    }
    owner(&turn, &t.open_turn, "compaction/start", at, sink);
    t.compaction = Some(Open {
        compaction_id: cid,
        source_command_id: scid,
        turn,
        summarized: false,
        crossings: Vec::new(),
    });
}

/// V-CMP-4: a `compaction/summary` inside its bracket.
fn summary(t: &mut CompactionTrace, d: &Value<'_>, at: At, sink: &mut Sink) {
    let cid = Js::of(d.get("compactionId"));
    let scid = Js::of(d.get("sourceCommandId"));
    id(&cid, "compaction/summary compactionId", at, sink);
    if !scid.is_undefined() {
        id(&scid, "compaction/summary sourceCommandId", at, sink);
    }
    let open_turn = t.open_turn.clone();
    let Some(open) = &mut t.compaction else {
        sink.emit(
            CheckId::Cmp4,
            at,
            "compaction/summary has no matching compaction/start",
        );
        return;
    };
    if !cid.strict_eq(&open.compaction_id) {
        sink.emit(
            CheckId::Cmp4,
            at,
            format!(
                "compaction/summary id {} does not match compaction/start id {}",
                cid.template(),
                open.compaction_id.template()
            ),
        );
    }
    source_command_id(
        "compaction/summary",
        &scid,
        &open.source_command_id,
        CheckId::Cmp4,
        at,
        sink,
    );
    owner(&open.turn, &open_turn, "compaction/summary", at, sink);
    if open.summarized {
        sink.emit(
            CheckId::Cmp4,
            at,
            "compaction/summary repeated within one compaction",
        );
    }
    shadowed_fields(d, at, sink);
    open.summarized = true;
}

/// V-CMP-4: `shadowedSeqs` non-empty, matching `shadowedRange`;
/// `shadowedTokenCount` a count.
fn shadowed_fields(d: &Value<'_>, at: At, sink: &mut Sink) {
    match d.get("shadowedSeqs").and_then(|s| s.as_arr()) {
        None => sink.emit(
            CheckId::Cmp4,
            at,
            "compaction/summary shadowedSeqs must be an array",
        ),
        Some(seqs) => {
            if seqs.is_empty() {
                sink.emit(
                    CheckId::Cmp4,
                    at,
                    "compaction/summary shadowedSeqs must be non-empty",
                );
            }
            let range = d.get("shadowedRange");
            let start = Js::of(range.and_then(|r| r.get("start")));
            let end = Js::of(range.and_then(|r| r.get("end")));
            if !Js::of(seqs.first()).strict_eq(&start) || !Js::of(seqs.last()).strict_eq(&end) {
                sink.emit(
                    CheckId::Cmp4,
                    at,
                    "compaction/summary shadowedRange must match the first and last shadowedSeqs",
                );
            }
        }
    }
    if d.get("shadowedTokenCount")
        .and_then(|c| c.as_count())
        .is_none()
    {
        sink.emit(
            CheckId::Cmp4,
            at,
            "compaction/summary shadowedTokenCount must be a non-negative safe integer",
        );
    }
}

/// V-CMP-5: a `compaction/end` closes its bracket.
fn end(t: &mut CompactionTrace, d: &Value<'_>, at: At, sink: &mut Sink) {
    let cid = Js::of(d.get("compactionId"));
    let scid = Js::of(d.get("sourceCommandId"));
    let turn = Js::of(d.get("turn"));
    id(&cid, "compaction/end compactionId", at, sink);
    if !scid.is_undefined() {
        id(&scid, "compaction/end sourceCommandId", at, sink);
    }
    t.prove_live(sink);
    let Some(open) = t.compaction.take() else {
        sink.emit(
            CheckId::Cmp5,
            at,
            "compaction/end has no matching compaction/start",
        );
        return;
    };
    if !cid.strict_eq(&open.compaction_id) {
        sink.emit(
            CheckId::Cmp5,
            at,
            format!(
                "compaction/end id {} does not match compaction/start id {}",
                cid.template(),
                open.compaction_id.template()
            ),
        );
    }
    source_command_id(
        "compaction/end",
        &scid,
        &open.source_command_id,
        CheckId::Cmp5,
        at,
        sink,
    );
    if !turn.strict_eq(&open.turn) {
        sink.emit(
            CheckId::Cmp5,
            at,
            format!(
                "compaction/end owner {} does not match compaction/start owner {}",
                turn.template(),
                open.turn.template()
            ),
        );
    }
    owner(&open.turn, &t.open_turn, "compaction/end", at, sink);
    if d.get("error").is_none() && !open.summarized {
        sink.emit(
            CheckId::Cmp5,
            at,
            "successful compaction/end requires one compaction/summary",
        );
    }
}
