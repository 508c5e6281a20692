//! The tool-result pruner, exactly as the reference's
//! `@deepseek-ai/dsh-compaction-tool-result-pruner` (compaction §3).
//!
//! Every current surface node that is a `tool/result` whose text is longer
//! than `thresholdChars` **code points** keeps its first `headChars` and last
//! `tailChars` code points with a fixed marker between them. Non-text blocks
//! keep their place; a text block emptied by the cut is dropped; the marker
//! goes into the first text block that overlaps the removed span. Each
//! rewrite is appended as two events: a `compaction/prune` shadow-price event
//! pricing the original node, then a content-only `tool/result` replacement
//! of exactly that node.
//!
//! [`plan`] computes the events (never writes) on the session as the
//! reference resumes it; `plan_on` on a writer's view (see
//! [`crate::lifecycle`]). Give them to [`crate::append::Appender`] after the
//! lifecycle prefix, if any.
//!
//! ```
//! let src = dsh::LogSource::File("samples/prune-open-turn.jsonl".into());
//! let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! let plan = dsh::prune::plan(&log, &dsh::prune::PruneConfig::default(), 0.0)?;
//! // One oversized tool result, cut to head + marker + tail.
//! assert!(!plan.pruned.is_empty());
//! assert!(plan.surface_tokens_after < plan.surface_tokens_before);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::event::{Event, Kind, OwnedEvent, owned_event};
use crate::json::{CodePointCount, JStr, OwnedValue, Value, js_number, js_string};
use crate::log::{LoadError, LoadedLog};
use crate::meter::estimate::price_message;
use crate::surface::{KnownOriginals, Surface};

/// The marker substituted for every removed middle span **\[CONST\]**.
pub const PRUNE_MARKER: &str = "\n\n[... tool result middle pruned ...]\n\n";

/// Code points in [`PRUNE_MARKER`].
const MARKER_CHARS: u64 = 39;

/// The pruner's budgets (defined with the configuration that holds them).
pub use crate::config::PruneConfig;

/// A configuration the reference would refuse (its message, verbatim).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PruneConfigError(pub String);

impl PruneConfig {
    /// Resolve a configuration from optional values, as `resolveConfig`
    /// does (missing values take the defaults; the same checks and messages).
    pub fn resolve(
        threshold_chars: Option<&Value<'_>>,
        head_chars: Option<&Value<'_>>,
        tail_chars: Option<&Value<'_>>,
    ) -> Result<PruneConfig, PruneConfigError> {
        let d = PruneConfig::default();
        let pick = |v: Option<&Value<'_>>, dflt: u64| -> OwnedValue {
            match v {
                None | Some(Value::Null) => Value::from(dflt),
                Some(v) => v.to_owned_value(),
            }
        };
        let t = pick(threshold_chars, d.threshold_chars);
        let h = pick(head_chars, d.head_chars);
        let l = pick(tail_chars, d.tail_chars);
        let int =
            |name: &str, v: &Value<'_>, min: f64, what: &str| -> Result<u64, PruneConfigError> {
                match v {
                    Value::Num(n) if n.fract() == 0.0 && n.is_finite() && *n >= min => {
                        Ok(*n as u64)
                    }
                    _ => Err(PruneConfigError(format!(
                        "ToolResultPruneConfig: {name} ({}) must be a {what} integer",
                        js_string(Some(v))
                    ))),
                }
            };
        let threshold = int("thresholdChars", &t, 1.0, "positive")?;
        let head = int("headChars", &h, 0.0, "non-negative")?;
        let tail = int("tailChars", &l, 0.0, "non-negative")?;
        let emitted = head as f64 + MARKER_CHARS as f64 + tail as f64;
        if emitted > threshold as f64 {
            let mut e = String::new();
            js_number(emitted, &mut e);
            return Err(PruneConfigError(format!(
                "ToolResultPruneConfig: headChars + marker + tailChars ({e}) must be at most thresholdChars ({threshold})"
            )));
        }
        Ok(PruneConfig {
            threshold_chars: threshold,
            head_chars: head,
            tail_chars: tail,
        })
    }
}

/// Why a pass stopped (the reference throws at that node; earlier pairs of
/// the pass were already appended there).
#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    /// The content cannot be pruned (the reference throws a `TypeError` or
    /// its own error).
    #[error("tool-result prune at seq {seq}: {message}")]
    Content {
        /// The tool result.
        seq: u64,
        /// What went wrong.
        message: String,
    },
    /// A node could not be read again.
    #[error(transparent)]
    Read(#[from] LoadError),
}

/// The elements `Array.from(text)` yields: code points of a string, or the
/// `join` strings of an array (or array-like) value.
enum Points {
    Cps(Vec<u32>),
    Items(Vec<Vec<u16>>),
}

impl Points {
    fn len(&self) -> usize {
        match self {
            Points::Cps(c) => c.len(),
            Points::Items(i) => i.len(),
        }
    }

    /// `points.slice(a, b).join("")` as UTF-16 units appended to `out`.
    fn push_slice(&self, a: usize, b: usize, out: &mut Vec<u16>) {
        if a >= b {
            return;
        }
        match self {
            Points::Cps(c) => {
                for &cp in &c[a..b] {
                    crate::json::push_code_point_utf16(cp, out);
                }
            }
            Points::Items(items) => {
                for it in &items[a..b] {
                    out.extend_from_slice(it);
                }
            }
        }
    }
}

/// `Array.prototype.join` element conversion (`null`/`undefined` → "").
fn join_units(v: Option<&Value<'_>>) -> Vec<u16> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Str(s)) => s.units(),
        v => js_string(v).encode_utf16().collect(),
    }
}

/// `Array.from(value)`; `Err` where JavaScript throws.
fn array_from(v: Option<&Value<'_>>) -> Result<Points, String> {
    match v {
        None => Err("Cannot convert undefined to an array (text is missing)".into()),
        Some(Value::Null) => Err("Cannot convert null to an array (text is null)".into()),
        Some(Value::Str(s)) => Ok(Points::Cps(s.code_points())),
        Some(Value::Arr(a)) => Ok(Points::Items(
            a.iter().map(|x| join_units(Some(x))).collect(),
        )),
        Some(Value::Obj(_)) => {
            let obj = v.unwrap();
            let n = match obj.get("length") {
                Some(Value::Num(n)) if n.is_finite() && *n > 0.0 => n.floor(),
                _ => 0.0,
            };
            if n > 4_294_967_295.0 {
                return Err("Invalid array length".into());
            }
            if n > 16_000_000.0 {
                return Err("array-like text is too long".into());
            }
            Ok(Points::Items(
                (0..n as u64)
                    .map(|i| join_units(obj.get(&i.to_string())))
                    .collect(),
            ))
        }
        Some(_) => Ok(Points::Items(Vec::new())),
    }
}

fn is_text_block(b: &Value<'_>) -> Result<bool, String> {
    match b {
        Value::Null => Err("Cannot read properties of null (reading 'type')".into()),
        b => Ok(b.get("type").is_some_and(|t| t.is_str("text"))),
    }
}

/// Why `measureContent` or `pruneContent` throws: the reference's message
/// (a JavaScript `TypeError`'s, or its own).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ContentError(pub String);

/// `measureContent`: code points over the text blocks of a tool-result
/// content list.
pub(crate) fn measure_content(blocks: &[Value<'_>]) -> Result<u64, ContentError> {
    let counts = measure_blocks(blocks).map_err(ContentError)?;
    Ok(counts.iter().map(|(n, _)| n).sum())
}

/// The code points of each block (0 for one that is not text), failing
/// where `measureContent` throws.
fn measure_blocks(blocks: &[Value<'_>]) -> Result<Vec<(u64, Option<CodePointCount>)>, String> {
    let mut chars = Vec::with_capacity(blocks.len());
    for b in blocks {
        chars.push(if is_text_block(b)? {
            // Strings are counted without building the code points, and
            // marked so that cutting one does not scan it all again.
            match b.get("text") {
                Some(Value::Str(s)) => {
                    let count = s.count_code_points_marked();
                    (count.len() as u64, Some(count))
                }
                v => (array_from(v)?.len() as u64, None),
            }
        } else {
            (0, None)
        });
    }
    Ok(chars)
}

/// `pruneContent`: the pruned list, or `None` when the text is within budget.
pub(crate) fn prune_content(
    cfg: &PruneConfig,
    blocks: &[Value<'_>],
) -> Result<Option<Vec<OwnedValue>>, ContentError> {
    let pruned = prune_content_counted(cfg, blocks).map_err(ContentError)?;
    Ok(pruned.map(|(out, _, _)| out))
}

/// [`prune_content`] with the code points of the content before and after.
fn prune_content_counted(
    cfg: &PruneConfig,
    blocks: &[Value<'_>],
) -> Result<Option<(Vec<OwnedValue>, u64, u64)>, String> {
    let counts = measure_blocks(blocks)?;
    let total: u64 = counts.iter().map(|(n, _)| n).sum();
    if total <= cfg.threshold_chars {
        return Ok(None);
    }
    let r0 = cfg.head_chars as i64;
    let r1 = total as i64 - cfg.tail_chars as i64;
    let marker: Vec<u16> = PRUNE_MARKER.encode_utf16().collect();
    let mut out = Vec::with_capacity(blocks.len());
    let mut consumed = 0i64;
    let mut inserted = false;
    for (b, (count, marked)) in blocks.iter().zip(&counts) {
        let count = *count;
        if !is_text_block(b)? {
            out.push(b.to_owned_value());
            continue;
        }
        let mut units: Vec<u16> = Vec::new();
        let start = consumed;
        let end;
        if let Some(Value::Str(s)) = b.get("text") {
            // A string: only the kept head and tail are decoded; the middle
            // is skipped over in bulk.
            let n = count as i64;
            end = start + n;
            let head_end = (r0 - start).clamp(0, n) as usize;
            let tail_start = (r1 - start).clamp(0, n) as usize;
            let here = start < r1 && end > r0 && !inserted;
            if head_end <= tail_start {
                let between = if here { PRUNE_MARKER } else { "" };
                let text = match marked {
                    Some(m) => s.cut_around_counted(m, head_end, tail_start, between),
                    None => s.cut_around(head_end, tail_start, between),
                };
                inserted |= here;
                if !text.is_empty() {
                    out.push(b.to_owned_with("text", Value::Str(text)));
                }
                consumed = end;
                continue;
            }
            // Head and tail overlap (budgets above the text): both are
            // copied whole, as the reference's two slices are.
            units = s.units_around(head_end, n as usize).0;
            if here {
                units.extend_from_slice(&marker);
                inserted = true;
            }
            units.extend_from_slice(&s.units_around(0, tail_start).1);
        } else {
            let points = array_from(b.get("text"))?;
            let n = points.len() as i64;
            end = start + n;
            let head_end = (r0 - start).clamp(0, n) as usize;
            let tail_start = (r1 - start).clamp(0, n) as usize;
            let here = start < r1 && end > r0 && !inserted;
            points.push_slice(0, head_end, &mut units);
            if here {
                units.extend_from_slice(&marker);
                inserted = true;
            }
            points.push_slice(tail_start, n as usize, &mut units);
        }
        if !units.is_empty() {
            let text = JStr::from_units(&units);
            out.push(b.to_owned_with("text", Value::Str(text)));
        }
        consumed = end;
    }
    if !inserted {
        return Err("tool-result prune: failed to locate the removed text span".into());
    }
    let after: u64 = measure_blocks(&out)?.iter().map(|(n, _)| n).sum();
    if after > cfg.threshold_chars || after >= total {
        return Err("tool-result prune: replacement must be smaller and within threshold".into());
    }
    Ok(Some((out, total, after)))
}

/// One rewritten tool result (the reference's `pruned[]` entry, plus prices).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrunedResult {
    /// The shadowed node.
    pub original_seq: u64,
    /// The replacing `tool/result`.
    pub replacement_seq: u64,
    /// `message.source.callId`, as logged.
    #[schemars(with = "String")]
    pub call_id: OwnedValue,
    /// Text code points before.
    pub chars_before: u64,
    /// Text code points after.
    pub chars_after: u64,
    /// Heuristic price of the original node (`shadowedTokenCount`).
    #[serde(skip)]
    pub tokens_before: u64,
    /// Heuristic price of the replacement.
    #[serde(skip)]
    pub tokens_after: u64,
}

/// What a pass would append, and what it saves.
#[derive(Debug, Clone)]
pub struct PrunePlan {
    /// The budgets used.
    pub config: PruneConfig,
    /// The session length before pruning (seq of the first event).
    pub base_seq: u64,
    /// The events, in order: pairs of `compaction/prune` + `tool/result`.
    pub events: Vec<OwnedEvent>,
    /// One entry per rewritten result, in surface order.
    pub pruned: Vec<PrunedResult>,
    /// Code points removed in total.
    pub chars_removed: u64,
    /// Surface price before (heuristic).
    pub surface_tokens_before: u64,
    /// Surface price after (heuristic).
    pub surface_tokens_after: u64,
    /// The rewritten results as read, for a writer's rule R16
    /// (`crate::surface::Surface::remember`).
    pub originals: KnownOriginals,
}

fn has_negative_zero(v: &Value<'_>) -> bool {
    match v {
        Value::Num(n) => *n == 0.0 && n.is_sign_negative(),
        Value::Arr(a) => a.iter().any(has_negative_zero),
        Value::Obj(o) => o.iter().any(|(_, x)| has_negative_zero(x)),
        _ => false,
    }
}

/// Rewrite one tool-result event; `None` when it is within budget.
/// Returns the replacement data, the call id, and the character counts.
fn rewrite(cfg: &PruneConfig, ev: &Event<'_>) -> Result<Option<Rewritten>, PruneError> {
    let err = |m: String| PruneError::Content {
        seq: ev.seq,
        message: m,
    };
    // A shape `crate::surface::text_units_bound` bounds must never fail
    // here (bounded results within budget are not read at all): keep the
    // two walks in step.
    let data = ev.data();
    let msg = data
        .get("message")
        .ok_or_else(|| err("tool/result has no message".into()))?;
    let result = msg
        .get("content")
        .and_then(|c| c.as_arr())
        .and_then(|c| c.first())
        .ok_or_else(|| err("tool/result message has no tool-result block".into()))?;
    let blocks = result
        .get("content")
        .and_then(|c| c.as_arr())
        .ok_or_else(|| err("tool-result content is not an array".into()))?;
    // measureContent is pure: the counts prune_content took are the ones
    // the reference takes again.
    let Some((content, before, after)) = prune_content_counted(cfg, blocks).map_err(err)? else {
        return Ok(None);
    };
    // {...event.data, message: {...message, content: [{...result, content}]}},
    // copying only what is kept (the long original text never is).
    let new_result = result.to_owned_with("content", Value::Arr(content));
    let new_msg = msg.to_owned_with("content", Value::Arr(vec![new_result]));
    let new_data = data.to_owned_with("message", new_msg);
    if has_negative_zero(&new_data) {
        return Err(err(
            "session event \"tool/result\" carries non-JSON-serializable data".into(),
        ));
    }
    let call_id = msg
        .get("source")
        .and_then(|s| s.get("callId"))
        .map(|c| c.to_owned_value())
        .unwrap_or(Value::Null);
    // The original's R16 fingerprint, while its data is at hand.
    let original = crate::surface::rewrite_key(data);
    Ok(Some((new_data, call_id, before, after, original)))
}

/// A rewritten tool result: its new data, call id, character counts and
/// the original's R16 fingerprint.
type Rewritten = (OwnedValue, OwnedValue, u64, u64, u64);

/// Plan a pass over candidate nodes: `(seq, event, node price)` of every
/// current `tool/result` node, in surface order. `base_seq` is the seq of
/// the first appended event, `time` their timestamp.
pub fn plan_nodes<I>(
    cfg: &PruneConfig,
    candidates: I,
    base_seq: u64,
    time: f64,
    surface_tokens: u64,
) -> Result<PrunePlan, PruneError>
where
    I: IntoIterator<Item = Result<(OwnedEvent, u64), PruneError>>,
{
    let rewritten = candidates.into_iter().map(|c| {
        let (ev, price) = c?;
        Ok((ev.seq, price, rewrite(cfg, &ev)?))
    });
    assemble(cfg, rewritten, base_seq, time, surface_tokens)
}

/// The plan from each candidate's rewrite (`(seq, price, rewrite)` in
/// surface order): the `compaction/prune` + `tool/result` pairs, numbered
/// from `base_seq`. The first error in surface order is the answer.
fn assemble<I>(
    cfg: &PruneConfig,
    rewritten: I,
    base_seq: u64,
    time: f64,
    surface_tokens: u64,
) -> Result<PrunePlan, PruneError>
where
    I: IntoIterator<Item = Result<(u64, u64, Option<Rewritten>), PruneError>>,
{
    let mut plan = PrunePlan {
        config: *cfg,
        base_seq,
        events: Vec::new(),
        pruned: Vec::new(),
        chars_removed: 0,
        surface_tokens_before: surface_tokens,
        surface_tokens_after: surface_tokens,
        originals: KnownOriginals::default(),
    };
    let mut seq = base_seq;
    for r in rewritten {
        let (s, price, rewrite) = r?;
        let Some((data, call_id, before, after, original)) = rewrite else {
            continue;
        };
        plan.originals.insert_key(s, original);
        let prune = Value::obj()
            .with("type", "compaction/prune".into())
            .with("seq", seq.into())
            .with("time", time.into())
            .with(
                "data",
                Value::obj()
                    .with(
                        "shadowedRange",
                        Value::obj().with("start", s.into()).with("end", s.into()),
                    )
                    .with("shadowedSeqs", vec![s].into())
                    .with("shadowedTokenCount", price.into()),
            );
        plan.events
            .push(owned_event(Kind::CompactionPrune, seq, prune));
        let tokens_after = data.get("message").map(price_message).unwrap_or(0);
        let replacement = Value::obj()
            .with("type", "tool/result".into())
            .with("seq", (seq + 1).into())
            .with("time", time.into())
            .with("data", data)
            .with("sourceEventSeqs", vec![s].into())
            .with(
                "surfaceOp",
                Value::obj()
                    .with("op", "replace".into())
                    .with("start", s.into())
                    .with("end", s.into()),
            );
        plan.events
            .push(owned_event(Kind::ToolResult, seq + 1, replacement));
        plan.pruned.push(PrunedResult {
            original_seq: s,
            replacement_seq: seq + 1,
            call_id,
            chars_before: before,
            chars_after: after,
            tokens_before: price,
            tokens_after,
        });
        plan.chars_removed += before - after;
        plan.surface_tokens_after = plan.surface_tokens_after + tokens_after - price;
        seq += 2;
    }
    Ok(plan)
}

/// Plan a pass over a loaded log, as the reference's `pruneSession` does on
/// the resumed session: the first event's seq is the session length
/// (stored events, closers and the `session/end-seed` marker), all stamped
/// `time`. Nodes are read back one at a time.
pub fn plan(log: &LoadedLog, cfg: &PruneConfig, time: f64) -> Result<PrunePlan, PruneError> {
    plan_on(log, &log.surface, log.session_length(), cfg, time)
}

/// Plan a pass over `surface`, a view of `log` (the writer's: under the
/// continue lifecycle the stored surface without closers, under resume the
/// loaded one), the first event getting `base_seq` (the seq after the
/// events the write puts first, if any).
pub(crate) fn plan_on(
    log: &LoadedLog,
    surface: &Surface,
    base_seq: u64,
    cfg: &PruneConfig,
    time: f64,
) -> Result<PrunePlan, PruneError> {
    // Results within budget whatever their exact count (most of them) are
    // not read again; the others are, each on its own, on every core.
    let nodes: Vec<&crate::surface::Node> = surface
        .nodes
        .iter()
        .filter(|n| n.kind == Kind::ToolResult)
        .filter(|n| n.text_units.is_none_or(|u| u > cfg.threshold_chars))
        .collect();
    // Numbering them is the only step in order.
    let rewritten = crate::par::map_in_order(&nodes, |n, (file, buf)| {
        let rewritten = log.with_body(&n.body, n.seq, file, buf, |ev| rewrite(cfg, ev))??;
        Ok((n.seq, n.tokens, rewritten))
    });
    assemble(cfg, rewritten, base_seq, time, surface.tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(json: &str) -> Vec<OwnedValue> {
        Value::parse(json)
            .unwrap()
            .into_owned()
            .as_arr()
            .unwrap()
            .clone()
    }

    fn text_of(b: &Value<'_>) -> Vec<u32> {
        b.get("text").unwrap().as_jstr().unwrap().code_points()
    }

    #[test]
    fn text_bounds_only_for_results_the_pruner_counts_without_failing() {
        let bound = |content: &str| {
            let line = format!(
                r#"{{"type":"tool/result","seq":5,"time":1,"data":{{"message":{{"content":[{{"type":"tool-result","content":{content}}}]}}}}}}"#
            );
            let v = Value::parse(&line).unwrap();
            crate::surface::text_units_bound(&crate::event::owned_event(
                Kind::ToolResult,
                5,
                v.into_owned(),
            ))
        };
        // Text blocks count their UTF-16 units; other blocks nothing.
        assert_eq!(bound(r#"[{"type":"text","text":"ab\n\u00e9😀"}]"#), Some(6));
        assert_eq!(
            bound(r#"[{"type":"image","data":"xxxx"},{"type":"text","text":"abc"}]"#),
            Some(3)
        );
        assert_eq!(bound("[]"), Some(0));
        // Where counting fails or takes another way: no bound.
        assert_eq!(bound(r#"[null]"#), None);
        assert_eq!(bound(r#"[{"type":"text","text":["a","b"]}]"#), None);
        assert_eq!(bound(r#"[{"type":"text"}]"#), None);
        assert_eq!(bound(r#""text""#), None);
        let no_message =
            Value::parse(r#"{"type":"tool/result","seq":5,"time":1,"data":{}}"#).unwrap();
        let ev = crate::event::owned_event(Kind::ToolResult, 5, no_message.into_owned());
        assert_eq!(crate::surface::text_units_bound(&ev), None);
    }

    #[test]
    fn config_defaults_and_reference_messages() {
        let c = PruneConfig::resolve(None, None, None).unwrap();
        assert_eq!(c, PruneConfig::default());
        assert_eq!(
            (c.threshold_chars, c.head_chars, c.tail_chars),
            (8192, 4096, 1024)
        );
        let v = |s: &str| Value::parse(s).unwrap().into_owned();
        assert_eq!(
            PruneConfig::resolve(Some(&v("100")), None, None)
                .unwrap_err()
                .0,
            "ToolResultPruneConfig: headChars + marker + tailChars (5159) must be at most thresholdChars (100)"
        );
        assert_eq!(
            PruneConfig::resolve(Some(&v("0")), None, None)
                .unwrap_err()
                .0,
            "ToolResultPruneConfig: thresholdChars (0) must be a positive integer"
        );
        assert_eq!(
            PruneConfig::resolve(None, Some(&v("1.5")), None)
                .unwrap_err()
                .0,
            "ToolResultPruneConfig: headChars (1.5) must be a non-negative integer"
        );
    }

    #[test]
    fn slices_code_points_and_keeps_rich_blocks() {
        // Worked example B, seq 8: text(5000 A), image, text(4000 B).
        let a = "A".repeat(5000);
        let b = "B".repeat(4000);
        let json = format!(
            r#"[{{"type":"text","text":"{a}"}},{{"type":"image","attachment":{{"x":1}}}},{{"type":"text","text":"{b}"}}]"#
        );
        let out = prune_content(&PruneConfig::default(), &blocks(&json))
            .unwrap()
            .unwrap();
        assert_eq!(out.len(), 3);
        let first = text_of(&out[0]);
        assert_eq!(first.len(), 4096 + 39);
        assert!(out[1].get("type").unwrap().is_str("image"));
        assert_eq!(text_of(&out[2]).len(), 1024);
        assert_eq!(measure_content(&out).unwrap(), 5159);
        // Within budget: unchanged.
        assert!(
            prune_content(
                &PruneConfig::default(),
                &blocks(r#"[{"type":"text","text":"x"}]"#)
            )
            .unwrap()
            .is_none()
        );
    }

    #[test]
    fn never_splits_a_surrogate_pair() {
        // 9000 emoji: the head keeps 4096 whole emoji (8192 UTF-16 units).
        let e = "😀".repeat(9000);
        let json = format!(r#"[{{"type":"text","text":"{e}"}}]"#);
        let out = prune_content(&PruneConfig::default(), &blocks(&json))
            .unwrap()
            .unwrap();
        let t = out[0].get("text").unwrap().as_jstr().unwrap();
        assert_eq!(t.count_code_points(), 4096 + 39 + 1024);
        assert_eq!(t.len16(), 4096 * 2 + 39 + 1024 * 2);
        assert!(t.as_str().is_some(), "no lone surrogate");
    }

    #[test]
    fn drops_emptied_blocks_and_puts_marker_first() {
        let cfg = PruneConfig::resolve(
            Some(&Value::from(100u64)),
            Some(&Value::from(10u64)),
            Some(&Value::from(10u64)),
        )
        .unwrap();
        let json = format!(
            r#"[{{"type":"text","text":"{}"}},{{"type":"text","text":"{}"}},{{"type":"text","text":"{}"}}]"#,
            "a".repeat(10),
            "b".repeat(100),
            "c".repeat(10)
        );
        let out = prune_content(&cfg, &blocks(&json)).unwrap().unwrap();
        // Block 1 keeps its 10 chars and, ending exactly at the cut, does not
        // overlap it; block 2 is cut entirely but carries the marker; block 3 stays.
        assert_eq!(out.len(), 3);
        assert_eq!(text_of(&out[0]).len(), 10);
        assert_eq!(out[1].get("text").unwrap().as_str().unwrap(), PRUNE_MARKER);
        assert_eq!(text_of(&out[2]).len(), 10);
        // A null block is a TypeError in the reference.
        assert!(prune_content(&cfg, &blocks("[null]")).is_err());
    }
}
