//! §7.6: dsh-specific provenance checks. They follow from how rc.8 *writes*
//! compaction and pruning; the reference does not enforce them, so they are
//! warnings. Any log rc.8 wrote satisfies them.

use std::collections::{HashMap, HashSet};

use super::compaction::is_checkpoint;
use super::js::Js;
use super::{At, CheckId, Sink};
use crate::event::{Event, Kind, ReplaceOp, SurfaceOp};
use crate::json::{OwnedValue, Value};
use crate::log::{Folded, LoadedLog};
use crate::prune::{PruneConfig, measure_content, prune_content};
use crate::surface::{Applied, Node, NodeBody};

/// The checkpoint preamble (compaction spec §5.3, 300 UTF-16 units).
const PREAMBLE: &str = "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. Treat the captured context as established background and build on it without restating it. Continue the task directly from the messages that follow, without acknowledging this checkpoint.";
const OPEN_TAG: &str = "\n\n<compacted-summary>";
const CLOSE_TAG: &str = "</compacted-summary>";

/// What a `compaction/summary` recorded.
#[derive(Debug)]
struct Summary {
    seq: u64,
    shadowed: Option<Vec<u64>>,
    range: Option<(u64, u64)>,
    token_count: Option<u64>,
    blocks: Option<OwnedValue>,
}

/// The bracket being written (start → summary → checkpoint → end).
#[derive(Debug)]
struct Bracket {
    start_seq: u64,
    manual: bool,
    /// A `request/header` was logged before the start.
    header_before: bool,
    summary: Option<Summary>,
    checkpoint: Option<u64>,
}

/// A prune pair whose replacement content V-PRV-10 compares, after the
/// pass, with what the pruner makes of the original: the two lines are
/// re-read then, so the pass keeps no content.
#[derive(Debug)]
struct PrunedPair {
    at: At,
    original_seq: u64,
    original: NodeBody,
    replacement: NodeBody,
}

/// A `compaction/prune` waiting for its replacement on the next event.
#[derive(Debug)]
struct Prune {
    at: At,
    range: Option<(u64, u64)>,
    shadowed: Option<Vec<u64>>,
    token_count: Option<u64>,
}

/// Tool pairing over the current surface (V-PRV-12).
#[derive(Debug, Default)]
struct Pairing {
    /// Unanswered tool calls on the surface: call id → requesting node.
    open: HashMap<Box<str>, u64>,
    /// Lines of the assistant nodes on the surface that request calls.
    lines: HashMap<u64, Option<u64>>,
    /// Results already reported, by seq.
    reported_results: HashSet<u64>,
    /// Calls already reported unanswered, by (call id, node seq).
    reported_calls: HashSet<(Box<str>, u64)>,
}

fn range_of(v: Option<&Value<'_>>) -> Option<(u64, u64)> {
    let r = v?;
    Some((r.get("start")?.as_count()?, r.get("end")?.as_count()?))
}

fn seqs_of(v: Option<&Value<'_>>) -> Option<Vec<u64>> {
    v?.as_arr()?.iter().map(|s| s.as_count()).collect()
}

fn list(seqs: &[u64]) -> String {
    let s: Vec<String> = seqs.iter().map(u64::to_string).collect();
    format!("[{}]", s.join(", "))
}

fn is_text_block(b: &Value<'_>) -> bool {
    b.get("type").is_some_and(|t| t.is_str("text"))
}

/// JavaScript `trim()` leaves something (its white space includes U+FEFF).
fn has_non_blank_text(b: &Value<'_>) -> bool {
    b.get("text").and_then(|t| t.as_jstr()).is_some_and(|t| {
        t.to_lossy()
            .chars()
            .any(|c| !c.is_whitespace() && c != '\u{feff}')
    })
}

/// The provenance state.
#[derive(Debug, Default)]
pub(crate) struct Provenance {
    bracket: Option<Bracket>,
    prune: Option<Prune>,
    seen_header: bool,
    pairing: Pairing,
    open_step: Option<String>,
    pruned: Vec<PrunedPair>,
}

impl Provenance {
    /// Check one event.
    pub(crate) fn observe(&mut self, ev: &Event<'_>, folded: &Folded<'_>, at: At, sink: &mut Sink) {
        let replace = match folded.applied.map(|a| a.op) {
            Some(SurfaceOp::Replace(op)) => Some(op),
            _ => None,
        };
        prune_adjacency(self, ev, folded, replace, at, sink);
        if let Some(applied) = folded.applied {
            pairing(&mut self.pairing, ev, applied, folded, replace, at, sink);
            match replace {
                Some(op) if is_checkpoint(ev) => checkpoint(self, ev, applied, op, at, sink),
                _ => after_checkpoint(self, ev, replace, at, sink),
            }
        }
        let d = ev.data();
        match ev.kind {
            Kind::RequestHeader => self.seen_header = true,
            Kind::CompactionStart => {
                self.bracket = Some(Bracket {
                    start_seq: ev.seq,
                    manual: matches!(d.get("turn"), Some(Value::Null)),
                    header_before: self.seen_header,
                    summary: None,
                    checkpoint: None,
                });
            }
            Kind::CompactionSummary => summary(self, ev, at, sink),
            Kind::CompactionEnd => end(self, ev, at, sink),
            Kind::CompactionPrune => {
                self.prune = Some(Prune {
                    at,
                    range: range_of(d.get("shadowedRange")),
                    shadowed: seqs_of(d.get("shadowedSeqs")),
                    token_count: d.get("shadowedTokenCount").and_then(|c| c.as_count()),
                });
            }
            Kind::SessionEndSeed => self.bracket = None,
            Kind::StepStart => {
                self.open_step = Some(format!(
                    "{}/{}",
                    Js::of(d.get("turn")).template(),
                    Js::of(d.get("step")).template()
                ));
            }
            Kind::StepEnd => {
                let step = self.open_step.take().unwrap_or_else(|| "?".into());
                step_answers_calls(&mut self.pairing, &step, at, sink);
            }
            _ => {}
        }
    }

    /// Whether chunks may pass unseen: no `compaction/prune` waits for its
    /// replacement (a chunk next would be a V-PRV-9 finding).
    pub(crate) fn takes_chunks(&self) -> bool {
        self.prune.is_none()
    }

    /// End-of-log checks.
    pub(crate) fn finish(&mut self, sink: &mut Sink) {
        if let Some(p) = self.prune.take() {
            sink.emit(
                CheckId::Prv9,
                p.at,
                "compaction/prune is the last event: its tool/result replacement never landed",
            );
        }
        let mut open: Vec<(Box<str>, u64)> = self
            .pairing
            .open
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        open.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        for (call, seq) in open {
            if self.pairing.reported_calls.insert((call.clone(), seq)) {
                let line = self.pairing.lines.get(&seq).copied().flatten();
                sink.emit(
                    CheckId::Prv12,
                    At {
                        seq,
                        line,
                        synthetic: false,
                    },
                    format!(
                        "tool call {call} of the assistant message at seq {seq} has no tool result on the final surface"
                    ),
                );
            }
        }
    }
}

/// V-PRV-9 / V-PRV-10 / V-PRV-11: prune pairs are adjacent and consistent.
fn prune_adjacency(
    p: &mut Provenance,
    ev: &Event<'_>,
    folded: &Folded<'_>,
    replace: Option<ReplaceOp>,
    at: At,
    sink: &mut Sink,
) {
    let pending = p.prune.take();
    let rewrite = match (ev.kind, replace, folded.applied) {
        (Kind::ToolResult, Some(op), Some(a)) => Some((op, a)),
        _ => None,
    };
    match (pending, rewrite) {
        (Some(pr), Some((op, a))) => {
            prune_pair(&pr, ev, a, op, at, sink);
            if let (Some(orig), Some(node)) =
                (a.shadowed.first(), folded.surface.nodes.get(a.position))
            {
                p.pruned.push(PrunedPair {
                    at,
                    original_seq: orig.seq,
                    original: orig.body.clone(),
                    replacement: node.body.clone(),
                });
            }
        }
        (Some(pr), None) => sink.emit(
            CheckId::Prv9,
            pr.at,
            format!(
                "compaction/prune is not immediately followed by its tool/result replacement (next is {} at seq {})",
                ev.type_name(),
                ev.seq
            ),
        ),
        (None, Some((op, _))) => sink.emit(
            CheckId::Prv11,
            at,
            format!(
                "tool/result replace of {}..{} is not preceded by a compaction/prune",
                op.start, op.end
            ),
        ),
        (None, None) => {}
    }
}

impl Provenance {
    /// V-PRV-10, content half: each pruned replacement's content is what the
    /// pruner (with `cfg`) makes of the original, and pruning it again
    /// leaves it unchanged. Re-reads the two nodes of every pair.
    pub(crate) fn check_prune_contents(
        &mut self,
        log: &LoadedLog,
        cfg: &PruneConfig,
        sink: &mut Sink,
    ) {
        let mut file = None;
        for pair in std::mem::take(&mut self.pruned) {
            let read = log
                .read_body(&pair.original, pair.original_seq, &mut file)
                .and_then(|o| {
                    log.read_body(&pair.replacement, pair.at.seq, &mut file)
                        .map(|r| (o, r))
                });
            let (original, replacement) = match read {
                Ok(x) => x,
                Err(e) => {
                    sink.emit(
                        CheckId::Prv10,
                        pair.at,
                        format!(
                            "cannot re-read the pruned tool result at seq {} to compare contents: {}",
                            pair.original_seq, e.message
                        ),
                    );
                    continue;
                }
            };
            if let Some(m) = pruned_content_finding(
                cfg,
                pair.original_seq,
                result_content(&original.value),
                result_content(&replacement.value),
            ) {
                sink.emit(CheckId::Prv10, pair.at, m);
            }
        }
    }
}

/// The nested `content` of a `tool/result`'s tool-result block.
fn result_content<'v>(ev: &'v Value<'_>) -> Option<&'v [Value<'v>]> {
    ev.get("data")?
        .get("message")?
        .get("content")?
        .as_arr()?
        .first()?
        .get("content")?
        .as_arr()
        .map(|v| v.as_slice())
}

/// What is wrong with a pruned replacement's content, if anything.
fn pruned_content_finding(
    cfg: &PruneConfig,
    original_seq: u64,
    original: Option<&[Value<'_>]>,
    replacement: Option<&[Value<'_>]>,
) -> Option<String> {
    let (Some(original), Some(replacement)) = (original, replacement) else {
        return Some(format!(
            "the tool result at seq {original_seq} or its replacement has no tool-result content list to compare"
        ));
    };
    let budgets = format!(
        "thresholdChars {}, headChars {}, tailChars {}",
        cfg.threshold_chars, cfg.head_chars, cfg.tail_chars
    );
    let chars = |c: &[Value<'_>]| measure_content(c).map_or("?".into(), |n| n.to_string());
    match prune_content(cfg, original) {
        Err(e) => Some(format!(
            "the pruner ({budgets}) cannot rewrite the original tool result at seq {original_seq}: {e}"
        )),
        Ok(None) => Some(format!(
            "the original tool result at seq {original_seq} has {} code points, within thresholdChars {}: the pruner leaves it unchanged (pruned with other budgets? set them in [pruner])",
            chars(original),
            cfg.threshold_chars
        )),
        Ok(Some(expected)) => {
            let same = expected.len() == replacement.len()
                && expected.iter().zip(replacement).all(|(a, b)| a.deep_eq(b));
            if same {
                // The pruner's output is within the threshold, so pruning
                // it again leaves it unchanged.
                return None;
            }
            let again = match prune_content(cfg, replacement) {
                Ok(None) => "",
                _ => "; pruning the replacement again would change it",
            };
            Some(format!(
                "replacement content ({} code points) is not what the pruner ({budgets}) makes of the tool result at seq {original_seq} ({} → {} code points){again}",
                chars(replacement),
                chars(original),
                chars(&expected)
            ))
        }
    }
}

/// The prune and its replacement agree (V-PRV-9) and the recorded price is
/// the original node's (V-PRV-10).
fn prune_pair(pr: &Prune, ev: &Event<'_>, a: &Applied, op: ReplaceOp, at: At, sink: &mut Sink) {
    let s = op.start;
    if op.end != s {
        sink.emit(
            CheckId::Prv9,
            at,
            format!(
                "pruned tool/result replaces {}..{}, not one node",
                op.start, op.end
            ),
        );
    }
    if pr.range != Some((s, s)) {
        sink.emit(
            CheckId::Prv9,
            pr.at,
            format!(
                "compaction/prune shadowedRange {} differs from the replaced node {s}..{s}",
                pr.range
                    .map_or("(malformed)".into(), |(a, b)| format!("{a}..{b}"))
            ),
        );
    }
    if pr.shadowed.as_deref() != Some(&[s][..]) {
        sink.emit(
            CheckId::Prv9,
            pr.at,
            format!(
                "compaction/prune shadowedSeqs {} are not [{s}]",
                pr.shadowed.as_deref().map_or("(malformed)".into(), list)
            ),
        );
    }
    let sources = ev.sources();
    if sources.as_deref() != Some(&[s][..]) {
        sink.emit(
            CheckId::Prv9,
            at,
            format!(
                "pruned tool/result sourceEventSeqs {} are not [{s}]",
                sources.as_deref().map_or("(absent)".into(), list)
            ),
        );
    }
    if let Some(orig) = a.shadowed.first()
        && pr.token_count != Some(orig.tokens)
    {
        sink.emit(
            CheckId::Prv10,
            pr.at,
            format!(
                "compaction/prune shadowedTokenCount {} differs from {}, the price of the tool result at seq {}",
                pr.token_count.map_or("(malformed)".into(), |c| c.to_string()),
                orig.tokens,
                orig.seq
            ),
        );
    }
}

fn call_of(n: &Node) -> Option<&str> {
    if n.kind == Kind::ToolResult {
        n.call_id.as_deref()
    } else {
        None
    }
}

/// V-PRV-12: keep the surface's unanswered calls; a result must answer an
/// earlier call on the surface.
fn pairing(
    pr: &mut Pairing,
    ev: &Event<'_>,
    applied: &Applied,
    folded: &Folded<'_>,
    replace: Option<ReplaceOp>,
    at: At,
    sink: &mut Sink,
) {
    let Some(node) = folded.surface.nodes.get(applied.position) else {
        return;
    };
    if replace.is_none() {
        for c in &node.tool_calls {
            pr.open.insert(c.clone(), node.seq);
            pr.lines.insert(node.seq, at.line);
        }
        if let Some(call) = call_of(node)
            && pr.open.remove(call).is_none()
            && pr.reported_results.insert(node.seq)
        {
            sink.emit(
                CheckId::Prv12,
                at,
                format!("tool result for {call} has no earlier assistant tool-call on the surface"),
            );
        }
        return;
    }
    // A replace can shadow a call or a result anywhere: recompute.
    pr.open.clear();
    let mut lines = HashMap::new();
    for n in &folded.surface.nodes {
        for c in &n.tool_calls {
            pr.open.insert(c.clone(), n.seq);
            let line = if n.seq == ev.seq {
                at.line
            } else {
                pr.lines.get(&n.seq).copied().flatten()
            };
            lines.insert(n.seq, line);
        }
        if let Some(call) = call_of(n)
            && pr.open.remove(call).is_none()
            && pr.reported_results.insert(n.seq)
        {
            sink.emit(
                CheckId::Prv12,
                at,
                format!(
                    "after this replace, the tool result at seq {} for {call} has no earlier assistant tool-call on the surface",
                    n.seq
                ),
            );
        }
    }
    pr.lines = lines;
}

/// V-PRV-12: a closed step leaves no call unanswered on the surface.
fn step_answers_calls(pr: &mut Pairing, step: &str, at: At, sink: &mut Sink) {
    let mut open: Vec<(Box<str>, u64)> = pr.open.iter().map(|(k, v)| (k.clone(), *v)).collect();
    open.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    for (call, seq) in open {
        if pr.reported_calls.insert((call.clone(), seq)) {
            sink.emit(
                CheckId::Prv12,
                at,
                format!(
                    "step {step} ends with tool call {call} (assistant message at seq {seq}) unanswered on the surface"
                ),
            );
        }
    }
}

/// V-PRV-7 / V-PRV-8 / V-PRV-13 on a `compaction/summary`, and remember it
/// for its checkpoint.
fn summary(p: &mut Provenance, ev: &Event<'_>, at: At, sink: &mut Sink) {
    let d = ev.data();
    let blocks = d.get("summary").and_then(|s| s.as_arr());
    match blocks {
        None => sink.emit(
            CheckId::Prv7,
            at,
            "compaction/summary summary is not a list of content blocks",
        ),
        Some(bs) => {
            if let Some((i, b)) = bs.iter().enumerate().find(|(_, b)| !is_text_block(b)) {
                sink.emit(
                    CheckId::Prv7,
                    at,
                    format!(
                        "compaction/summary summary block {i} is {}, not text",
                        b.get("type").map_or("untyped".into(), |t| t.to_json())
                    ),
                );
            } else if !bs.iter().any(has_non_blank_text) {
                sink.emit(
                    CheckId::Prv7,
                    at,
                    "compaction/summary summary has no non-blank text",
                );
            }
        }
    }
    let stream_call = d.get("llmStreamCall").is_some_and(|v| v.is_true());
    if stream_call {
        match d.get("rawOutput").and_then(|r| r.as_arr()) {
            None => sink.emit(
                CheckId::Prv8,
                at,
                "compaction/summary has llmStreamCall but no rawOutput",
            ),
            Some(raw) => {
                let texts: Vec<&Value<'_>> = raw.iter().filter(|b| is_text_block(b)).collect();
                let same = blocks.is_some_and(|bs| {
                    bs.len() == texts.len() && bs.iter().zip(&texts).all(|(a, b)| a.deep_eq(b))
                });
                if !same {
                    sink.emit(
                        CheckId::Prv8,
                        at,
                        "compaction/summary rawOutput text blocks differ from its summary",
                    );
                }
            }
        }
        let header_before = match &p.bracket {
            Some(b) => b.header_before,
            None => p.seen_header,
        };
        if !header_before {
            sink.emit(
                CheckId::Prv13,
                at,
                "no request/header precedes this compaction: its summariser request cannot be rebuilt",
            );
        }
        let named = |k: &str| d.get(k).is_some_and(|v| v.is_nonempty_str());
        if !named("provider") || !named("model") {
            sink.emit(
                CheckId::Prv13,
                at,
                "compaction/summary does not name the provider and model it was summarised with",
            );
        }
    }
    if let Some(b) = &mut p.bracket {
        b.summary = Some(Summary {
            seq: ev.seq,
            shadowed: seqs_of(d.get("shadowedSeqs")),
            range: range_of(d.get("shadowedRange")),
            token_count: d.get("shadowedTokenCount").and_then(|c| c.as_count()),
            blocks: d.get("summary").map(|s| s.to_owned_value()),
        });
    }
}

/// V-PRV-1…6 on a checkpoint.
fn checkpoint(
    p: &mut Provenance,
    ev: &Event<'_>,
    applied: &Applied,
    op: ReplaceOp,
    at: At,
    sink: &mut Sink,
) {
    let shadowed: Vec<u64> = applied.shadowed.iter().map(|n| n.seq).collect();
    let price: u64 = applied.shadowed.iter().map(|n| n.tokens).sum();
    let Some(b) = &mut p.bracket else {
        // V-CMP-6 reports the missing bracket; only the price can be judged.
        smaller(applied.tokens, price, at, sink);
        return;
    };
    if let Some(first) = b.checkpoint {
        sink.emit(
            CheckId::Prv2,
            at,
            format!(
                "second checkpoint in the compaction opened at seq {} (the first is seq {first})",
                b.start_seq
            ),
        );
    }
    b.checkpoint = Some(ev.seq);
    let Some(s) = &b.summary else {
        sink.emit(
            CheckId::Prv2,
            at,
            format!(
                "checkpoint has no compaction/summary before it in the compaction opened at seq {}",
                b.start_seq
            ),
        );
        smaller(applied.tokens, price, at, sink);
        return;
    };
    if ev.seq != s.seq + 1 {
        sink.emit(
            CheckId::Prv2,
            at,
            format!(
                "checkpoint does not immediately follow its compaction/summary at seq {}",
                s.seq
            ),
        );
    }
    let sources = ev.sources();
    if let Some(sh) = &s.shadowed {
        if *sh != shadowed {
            sink.emit(
                CheckId::Prv1,
                at,
                format!(
                    "summary shadowedSeqs {} are not the span the checkpoint replaced {}",
                    list(sh),
                    list(&shadowed)
                ),
            );
        }
        let mut expected = vec![b.start_seq, s.seq];
        expected.extend(sh);
        if sources.as_deref() != Some(&expected[..]) {
            sink.emit(
                CheckId::Prv1,
                at,
                format!(
                    "checkpoint sourceEventSeqs {} are not [start, summary, …shadowedSeqs] = {}",
                    sources.as_deref().map_or("(absent)".into(), list),
                    list(&expected)
                ),
            );
        }
    }
    if s.range != Some((op.start, op.end)) {
        sink.emit(
            CheckId::Prv3,
            at,
            format!(
                "summary shadowedRange {} differs from the replace range {}..{}",
                s.range
                    .map_or("(malformed)".into(), |(a, b)| format!("{a}..{b}")),
                op.start,
                op.end
            ),
        );
    }
    if let Some(c) = s.token_count
        && c != price
    {
        sink.emit(
            CheckId::Prv4,
            at,
            format!(
                "summary shadowedTokenCount {c} differs from {price}, the price of the shadowed nodes {}",
                list(&shadowed)
            ),
        );
    }
    smaller(applied.tokens, s.token_count.unwrap_or(price), at, sink);
    if let Some(blocks) = &s.blocks {
        framed(ev, blocks, at, sink);
    }
}

/// V-PRV-5: the checkpoint prices strictly less than what it replaced.
fn smaller(tokens: u64, budget: u64, at: At, sink: &mut Sink) {
    if tokens >= budget {
        sink.emit(
            CheckId::Prv5,
            at,
            format!("checkpoint prices {tokens} tokens, not less than the {budget} it replaced"),
        );
    }
}

/// V-PRV-6: the checkpoint content is the framed summary.
fn framed(ev: &Event<'_>, summary: &Value<'_>, at: At, sink: &mut Sink) {
    let text = |t: String| {
        Value::obj()
            .with("type", "text".into())
            .with("text", t.into())
    };
    let mut expected = vec![text(format!("{PREAMBLE}{OPEN_TAG}"))];
    if let Some(bs) = summary.as_arr() {
        expected.extend(bs.iter().map(|b| b.to_owned_value()));
    }
    expected.push(text(CLOSE_TAG.to_string()));
    let content = ev.data().get("content").and_then(|c| c.as_arr());
    let Some(content) = content else {
        return;
    };
    let first_diff =
        (0..content.len().max(expected.len())).find(|&i| match (content.get(i), expected.get(i)) {
            (Some(a), Some(b)) => !a.deep_eq(b),
            _ => true,
        });
    if let Some(i) = first_diff {
        let what = if i == 0 {
            "the preamble block".to_string()
        } else if i + 1 >= expected.len() && i + 1 >= content.len() {
            "the closing tag block".to_string()
        } else {
            format!("block {i}")
        };
        sink.emit(
            CheckId::Prv6,
            at,
            format!(
                "checkpoint content is not the preamble and tags around the summary ({what} differs; {} blocks, expected {})",
                content.len(),
                expected.len()
            ),
        );
    }
}

/// V-PRV-2: between the checkpoint and the end only log-only events (on the
/// manual path, appends outside the span too).
fn after_checkpoint(
    p: &Provenance,
    ev: &Event<'_>,
    replace: Option<ReplaceOp>,
    at: At,
    sink: &mut Sink,
) {
    let Some(b) = &p.bracket else {
        return;
    };
    let Some(c) = b.checkpoint else {
        return;
    };
    if b.manual && replace.is_none() {
        return;
    }
    sink.emit(
        CheckId::Prv2,
        at,
        format!(
            "model-visible {} lands between the checkpoint at seq {c} and its compaction/end",
            ev.type_name()
        ),
    );
}

/// V-PRV-2 at `compaction/end`: a success has its checkpoint; a failure has
/// none.
fn end(p: &mut Provenance, ev: &Event<'_>, at: At, sink: &mut Sink) {
    let Some(b) = p.bracket.take() else {
        return;
    };
    let failed = ev.data().get("error").is_some();
    match (failed, &b.summary, b.checkpoint) {
        (false, Some(s), None) => sink.emit(
            CheckId::Prv2,
            at,
            format!(
                "successful compaction/end without a checkpoint after its summary at seq {}",
                s.seq
            ),
        ),
        (true, _, Some(c)) => sink.emit(
            CheckId::Prv2,
            at,
            format!("compaction/end records an error although its checkpoint landed at seq {c}"),
        ),
        _ => {}
    }
}
