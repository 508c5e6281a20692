//! §7.5: the token-meter replay checks. The verifier runs
//! [`crate::meter::Meter`] (the reference's `measure()` fold) and the §1.8
//! claim fold ([`ProjectionFold`]) over the same single pass as the other
//! checks, on the loader's priced surface.
//!
//! * V-MTR-1 / V-MTR-2: the replay errors `measure()` throws, verbatim: the
//!   step/start, step/end and assistant/message pairing (V-MTR-1), and the
//!   anchor's re-assembly of an `assistant/message` from its cited chunks
//!   (V-MTR-2: sources earlier, unique, `assistant/chunk`, same step; the
//!   chunks assemble; the usage can be read).
//! * V-MTR-3: the priced surface *is* the loader's fold, so a replace naming
//!   a range that is not on it is refused at load (V-SURF-4, the same rule);
//!   [`super::Report::refused`] reports it under this id as well.
//! * V-MTR-4: the projections' claim fold throws: a replace right after a
//!   `compaction/summary` / `compaction/prune` whose `shadowedRange` is another
//!   range ("no adjacent shadow price"), or an event the folds cannot read.
//! * V-MTR-5 (warning): drift between the projections and `measure()`: each
//!   replace whose projection delta differs from `measure()`'s (no adjacent
//!   shadow price, or a `shadowedTokenCount` that is not the heuristic price
//!   of the shadowed nodes), and, at the end, the drift `measure().surfaceTokens −
//!   contextBreakdown.messageTokens` when it is not zero (the sum of the
//!   per-replace drifts, each `measure()`'s delta minus the projections').
//!   The messages name the drift in that direction.
//!
//! Like the reference's `measure()` and its projections, each fold stops at
//! its first error: later findings would describe a state the reference
//! never reaches.

use super::{At, CheckId, Sink};
use crate::event::{Event, Kind, SurfaceOp};
use crate::json::{Value, js_number};
use crate::log::{ChunkRun, Folded, LoadedLog, Observer, RunFacts};
use crate::meter::projection::ProjectionFold;
use crate::meter::{Meter, MeterError};

/// The shadow price armed by the previous event.
#[derive(Debug)]
struct Claim {
    seq: u64,
    tokens: Option<f64>,
}

/// The meter checks' state.
#[derive(Debug, Default)]
pub(crate) struct MeterTrace {
    meter: Meter,
    /// `measure()` threw (or cannot go on); it is not fed any more.
    replay_stopped: bool,
    projections: ProjectionFold,
    projections_failed: bool,
    claim: Option<Claim>,
    /// Why the meter checks stopped without a finding.
    note: Option<String>,
}

fn js(n: f64) -> String {
    let mut s = String::new();
    js_number(n, &mut s);
    s
}

/// The check a `measure()` replay error belongs to.
fn replay_check(message: &str) -> CheckId {
    if message.contains("has no matching step/start event") || message.contains("arrived before") {
        CheckId::Mtr1
    } else {
        CheckId::Mtr2
    }
}

impl MeterTrace {
    /// Fold one event into the meter and the projections.
    pub(crate) fn observe(&mut self, ev: &Event<'_>, folded: &Folded<'_>, at: At, sink: &mut Sink) {
        if !self.replay_stopped {
            self.meter.event(ev, folded);
            match self.meter.error() {
                None => {}
                Some(MeterError::Replay { message, .. }) => {
                    sink.emit(replay_check(message), at, message.clone());
                    self.replay_stopped = true;
                }
                Some(MeterError::NeedsAllChunks { seq, chunk }) => {
                    // Only possible when step labels repeat, which the
                    // session invariant reports; measure() would read the
                    // log again keeping every chunk, verify reads it once.
                    self.note = Some(format!(
                        "token meter: V-MTR-1/2 not checked past seq {seq}: its assistant/message cites chunk {chunk} of an earlier step with the same turn/step labels"
                    ));
                    self.replay_stopped = true;
                }
            }
        }
        if !self.projections_failed {
            let applied = folded.applied;
            if let Some(a) = applied
                && ev.kind == Kind::SystemMessage
                && a.position == 0
            {
                // A G3 system head is the request header's prompt of G0,
                // outside the messages both folds price.
                self.projections.apply_head(a.tokens);
                self.claim = None;
                return;
            }
            self.projections.apply(ev, applied.map(|a| a.tokens));
            if let Some((_, message)) = self.projections.error() {
                sink.emit(CheckId::Mtr4, at, message.clone());
                self.projections_failed = true;
            } else if let Some(a) = applied
                && let SurfaceOp::Replace(op) = a.op
            {
                let removed: u64 = a.shadowed.iter().map(|n| n.tokens).sum();
                let measured = a.tokens as i64 - removed as i64;
                let range = format!(
                    "replace at seq {} over range {}-{}",
                    ev.seq, op.start, op.end
                );
                match &self.claim {
                    None if measured != 0 => sink.emit(
                        CheckId::Mtr5,
                        at,
                        format!(
                            "{range} has no adjacent shadow price: the projections fold it with delta 0, measure() with {measured} (drift {measured})"
                        ),
                    ),
                    Some(c) if c.tokens != Some(removed as f64) => {
                        let claimed = c.tokens.map_or("NaN".into(), js);
                        let drift = c.tokens.map_or("NaN".into(), |t| js(t - removed as f64));
                        sink.emit(
                            CheckId::Mtr5,
                            at,
                            format!(
                                "{range}: the projections price the shadowed nodes at {claimed} (shadowedTokenCount of seq {}), measure() at {removed} (drift {drift})",
                                c.seq
                            ),
                        );
                    }
                    _ => {}
                }
            }
        }
        self.claim = match ev.kind {
            Kind::CompactionSummary | Kind::CompactionPrune => Some(Claim {
                seq: ev.seq,
                tokens: ev.data().get("shadowedTokenCount").and_then(|t| match t {
                    Value::Num(n) => Some(*n),
                    _ => None,
                }),
            }),
            _ => None,
        };
    }

    /// A run the loader described by its facts (a packed row's delta
    /// chunks, or a chunk line's chunk), as [`Self::observe`] folds its
    /// chunks one by one: the meter keeps them for assembly, the
    /// projections take a usage sample or disarm their claim. Neither can
    /// fail on chunks the loader describes (only a missing or null usage
    /// throws), so there is nothing to report.
    pub(crate) fn chunks_taken(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        if !self.replay_stopped {
            self.meter.chunks(run, folded);
        }
        if !self.projections_failed {
            match run.facts {
                RunFacts::Row(_) => self.projections.apply_delta_chunks(),
                RunFacts::Line(facts) => {
                    crate::meter::fold_chunk_line(&mut self.projections, run.seq0, facts)
                }
                RunFacts::Counted | RunFacts::Event => {}
            }
        }
        self.claim = None;
    }

    /// After the pass: compare `measure()` with the projections (V-MTR-5);
    /// returns a note when the replay could not be completed.
    pub(crate) fn finish(self, log: &LoadedLog, sink: &mut Sink) -> Option<String> {
        if self.replay_stopped || self.projections_failed {
            return self.note;
        }
        let Ok(m) = self.meter.finish(log) else {
            return self.note;
        };
        if let Ok(p) = &m.projections {
            let message_tokens = p.context_breakdown.message_tokens;
            // The messages' part of the surface (a G3 system head is not).
            let head = log
                .surface
                .nodes
                .first()
                .filter(|n| n.kind == Kind::SystemMessage)
                .map_or(0, |n| n.tokens);
            let surface = (m.surface_tokens - head) as f64;
            if message_tokens != surface {
                sink.emit_log(
                    CheckId::Mtr5,
                    format!(
                        "measure().surfaceTokens is {} but the projections' contextBreakdown.messageTokens is {} (drift {})",
                        m.surface_tokens,
                        js(message_tokens),
                        js(surface - message_tokens)
                    ),
                );
            }
        }
        self.note
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_errors_map_to_their_check() {
        for m in [
            "token meter: step/start at seq 9 arrived before turn 1/step 1 ended",
            "token meter: step/end at seq 9 has no matching step/start event",
            "token meter: assistant/message at seq 9 has no matching step/start event",
        ] {
            assert_eq!(replay_check(m), CheckId::Mtr1, "{m}");
        }
        for m in [
            "token meter: assistant/message at seq 9 source seq 4 is not earlier",
            "token meter: assistant/message at seq 9 repeats source seq 4",
            "token meter: assistant/message at seq 9 source seq 4 is not assistant/chunk",
            "token meter: assistant/message at seq 9 source seq 4 belongs to another step",
            "cannot assemble incomplete block of type \"text\"",
            "Cannot read properties of null (reading 'inputTokens')",
        ] {
            assert_eq!(replay_check(m), CheckId::Mtr2, "{m}");
        }
    }
}
