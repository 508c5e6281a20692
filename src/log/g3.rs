//! The generation-3 decoder (session-log §13.2–§13.6), kept apart from the
//! generation-0 reader as §14.2 recommends: no G0 rule runs on a G3 log and
//! no G3 rule on a G0 log.
//!
//! What differs from G0: the header has an exact key set with `isSeeded`; one
//! event per line with range-encoded `sourceEventSeqs`; the system prompt is a
//! `system/message` surface node protected at position 0; replace ops are
//! spelled `{op, startSeq, endSeq}`; `image/offload` marks change the content
//! of existing nodes without changing the surface (`contentGeneration`);
//! unknown events marked `ignorable` are kept and skipped.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::event::{Event, Kind, ReplaceOp, SurfaceOp};
use crate::json::{OwnedValue, Value};
use crate::log::header::SessionHeader;
use crate::log::reader::LineReader;
use crate::log::{
    Folded, LoadError, LoadOptions, LoadedLog, LogSource, Observer, repair, validate,
};
use crate::request_header::HeaderFold;
use crate::surface::{NodeBody, Surface, node_facts};

const HEADER_KEYS: [&str; 10] = [
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "isSeeded",
    "origin",
    "delegationDepth",
    "agentPreset",
];

fn invalid(id: &str, seq: u64, msg: impl std::fmt::Display) -> LoadError {
    LoadError::invalid(format!(
        "stored session \"{id}\" failed validation: invalid event at seq {seq}: {msg}"
    ))
    .seq(seq)
}

fn is_neg_zero(v: &Value<'_>) -> bool {
    matches!(v, Value::Num(n) if *n == 0.0 && n.is_sign_negative())
}

/// Check a G3 header (exact key set, `isSeeded`).
pub fn check_header(h: &SessionHeader) -> Result<bool, LoadError> {
    let obj = h.value.as_obj().unwrap();
    for (k, _) in obj {
        if !HEADER_KEYS.iter().any(|a| k.eq_str(a)) {
            return Err(LoadError::corrupt(format!(
                "corrupt session log: generation-3 header has unknown key \"{}\"",
                k.to_lossy()
            ))
            .line(1));
        }
    }
    match h.value.get("isSeeded") {
        Some(Value::Bool(b)) => Ok(*b),
        _ => Err(LoadError::corrupt(
            "corrupt session log: generation-3 header needs a boolean isSeeded",
        )
        .line(1)),
    }
}

/// Decode range-encoded `sourceEventSeqs` (§13.2).
pub fn decode_sources(v: &Value<'_>, seq: u64) -> Result<Vec<u64>, String> {
    let arr = v.as_arr().ok_or("sourceEventSeqs must be an array")?;
    let mut out = Vec::new();
    let mut had_range = false;
    for m in arr {
        match m {
            Value::Arr(pair) => {
                if pair.len() != 2 {
                    return Err("a range must be [a, b]".into());
                }
                let a = pair[0].as_count().filter(|_| !is_neg_zero(&pair[0]));
                let b = pair[1].as_count().filter(|_| !is_neg_zero(&pair[1]));
                let (Some(a), Some(b)) = (a, b) else {
                    return Err("range ends must be counts".into());
                };
                if a > b || b >= seq || (out.len() as u64 + (b - a + 1)) > seq {
                    return Err(format!("invalid range [{a}, {b}]"));
                }
                had_range = true;
                out.extend(a..=b);
            }
            other => {
                let n = other
                    .as_count()
                    .filter(|_| !is_neg_zero(other))
                    .ok_or_else(|| format!("member {} is not a count", other.to_json()))?;
                out.push(n);
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for &n in &out {
        if n >= seq {
            return Err(format!("member {n} is not earlier than seq {seq}"));
        }
        if !seen.insert(n) {
            return Err(format!("repeats seq {n}"));
        }
    }
    if had_range && out.windows(2).any(|w| w[0] >= w[1]) {
        return Err("a range-encoded list must be strictly increasing".into());
    }
    Ok(out)
}

fn parse_op(v: &Value<'_>, seq: u64) -> Result<SurfaceOp, String> {
    match v {
        Value::Str(s) if s.eq_str("append") => Ok(SurfaceOp::Append),
        Value::Obj(o) if o.len() == 3 && v.get("op").is_some_and(|x| x.is_str("replace")) => {
            let s = v.get("startSeq").and_then(|x| x.as_count());
            let e = v.get("endSeq").and_then(|x| x.as_count());
            match (s, e) {
                (Some(start), Some(end)) if start < seq && end < seq => {
                    Ok(SurfaceOp::Replace(ReplaceOp { start, end }))
                }
                _ => Err(format!("invalid surfaceOp {}", v.to_json())),
            }
        }
        _ => Err(format!("invalid surfaceOp {}", v.to_json())),
    }
}

fn check_envelope(ev: &Event<'_>) -> Result<(), String> {
    validate::check_envelope(ev)?;
    if is_neg_zero(ev.value.get("seq").unwrap()) {
        return Err("event seq must not be -0".into());
    }
    Ok(())
}

fn check_header_event(ev: &Event<'_>) -> Result<(), String> {
    if ev.kind != Kind::RequestHeader {
        return Ok(());
    }
    validate::check_request_header(ev)?;
    let d = ev.data();
    let h = d.get("header").unwrap();
    if h.has("system") {
        return Err("request/header.header.system is forbidden in generation 3".into());
    }
    if h.get("tools")
        .and_then(|t| t.as_arr())
        .is_some_and(|a| a.is_empty())
    {
        return Err("request/header.header.tools must be omitted when empty".into());
    }
    if h.get("adapterDefaults")
        .and_then(|t| t.as_obj())
        .is_some_and(|a| a.is_empty())
    {
        return Err("request/header.header.adapterDefaults must be omitted when empty".into());
    }
    let reason_ok = d
        .get("reason")
        .and_then(|r| r.as_str())
        .is_some_and(|r| matches!(&*r, "initial" | "resume" | "change" | "series"));
    if !reason_ok {
        return Err("request/header reason must be initial, resume, change or series".into());
    }
    if let Some(s) = d.get("startsSeries")
        && !s.is_true()
    {
        return Err("request/header startsSeries must be absent or true".into());
    }
    Ok(())
}

fn check_shapes(ev: &Event<'_>) -> Result<(), String> {
    if ev.kind == Kind::SystemMessage {
        let m = ev
            .data()
            .get("message")
            .filter(|m| m.is_obj())
            .ok_or("system/message needs a message")?;
        let ok = m.get("id").is_some_and(|i| i.is_nonempty_str())
            && m.get("role").is_some_and(|r| r.is_str("system"))
            && m.get("content").is_some_and(|c| c.is_arr())
            && m.get("source").is_some_and(|s| {
                s.get("kind").is_some_and(|k| k.is_str("plugin"))
                    && s.get("plugin").is_some_and(|p| p.is_nonempty_str())
            });
        if !ok {
            return Err("system/message must hold a system message with a plugin source".into());
        }
        return Ok(());
    }
    validate::check_message_shape(ev)?;
    if ev.kind == Kind::ToolResult
        && ev.data().has("error")
        && !ev
            .data()
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(|c| c.as_arr())
            .and_then(|a| a.first())
            .and_then(|b| b.get("isError"))
            .is_some_and(|e| e.is_true())
    {
        return Err("tool/result error is allowed only when the result isError".into());
    }
    Ok(())
}

/// Image blocks of a message in depth-first order, as paths of indexes.
fn image_paths(content: &Value<'_>, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if let Some(blocks) = content.as_arr() {
        for (i, b) in blocks.iter().enumerate() {
            prefix.push(i);
            if b.get("type").is_some_and(|t| t.is_str("image")) {
                out.push(prefix.clone());
            } else if b.get("type").is_some_and(|t| t.is_str("tool-result"))
                && let Some(inner) = b.get("content")
            {
                image_paths(inner, prefix, out);
            }
            prefix.pop();
        }
    }
}

fn block_at<'v, 'a>(content: &'v mut Value<'a>, path: &[usize]) -> Option<&'v mut Value<'a>> {
    let Value::Arr(a) = content else { return None };
    let b = a.get_mut(path[0])?;
    if path.len() == 1 {
        return Some(b);
    }
    block_at(b.get_mut("content")?, &path[1..])
}

/// Load the rest of a generation-3 log (the header is already read).
// One piece on purpose: the generation-3 decoder's single pass; its fold closure and the read loop share the surface, header fold and repair state. The shared ending is `finish_load`.
pub(crate) fn load(
    source: &LogSource,
    mut reader: LineReader,
    header: SessionHeader,
    warnings: Vec<String>,
    opts: &LoadOptions,
    observer: &mut dyn Observer,
) -> Result<LoadedLog, LoadError> {
    check_header(&header)?;
    let id = header.id.clone();
    let mut surface = Surface::default();
    let mut headers = HeaderFold::default();
    let mut tracker = repair::RepairTracker::default();
    let mut event_types: BTreeMap<String, u64> = BTreeMap::new();
    let mut content_generation = 0u64;
    let mut prefix = crate::log::prefix::CommittedPrefix::default();
    let mut last_end_seed = None;
    let mut last_kind = None;
    let mut last_time = 0.0;
    let mut committed_len = reader.logical_offset();
    let mut truncated_at = None;
    let mut skipped = 0u64;

    let mut process = |mut ev: Event<'_>,
                       synthetic: bool,
                       surface: &mut Surface,
                       headers: &mut HeaderFold,
                       tracker: &mut repair::RepairTracker|
     -> Result<(), LoadError> {
        let seq = ev.seq;
        let at = |e: LoadError, line: u64| if line > 0 { e.line(line) } else { e };
        let line = ev.line;
        check_envelope(&ev).map_err(|m| at(invalid(&id, seq, m), line))?;
        let ignorable = ev.value.get("ignorable").is_some_and(|i| i.is_true());
        if ev.kind == Kind::Unknown {
            if !ignorable {
                return Err(at(
                    LoadError::unsupported(format!(
                        "session \"{id}\" contains event type \"{}\" (seq {seq}) unknown to this harness and not marked ignorable",
                        crate::json::js_string(ev.value.get("type"))
                    ))
                    .seq(seq),
                    line,
                ));
            }
            skipped += 1;
            *event_types.entry(ev.type_name().into_owned()).or_insert(0) += 1;
            return Ok(());
        }
        if ev.kind.is_surface() && ignorable {
            return Err(at(
                invalid(&id, seq, "surface events cannot be ignorable"),
                line,
            ));
        }
        check_shapes(&ev).map_err(|m| at(invalid(&id, seq, m), line))?;
        check_header_event(&ev).map_err(|m| at(invalid(&id, seq, m), line))?;
        // Sources: decode ranges in memory; assistant messages carry none.
        if let Some(raw) = ev.value.get("sourceEventSeqs") {
            if !ev.kind.is_surface() {
                return Err(at(
                    invalid(&id, seq, "log-only events cannot carry sourceEventSeqs"),
                    line,
                ));
            }
            if ev.kind == Kind::AssistantMessage {
                return Err(at(
                    invalid(&id, seq, "assistant/message cannot carry sourceEventSeqs"),
                    line,
                ));
            }
            let list = decode_sources(raw, seq)
                .map_err(|m| at(invalid(&id, seq, format!("sourceEventSeqs: {m}")), line))?;
            if list.is_empty() {
                return Err(at(
                    invalid(&id, seq, "sourceEventSeqs must not be empty"),
                    line,
                ));
            }
            ev.value.set(
                "sourceEventSeqs",
                Value::Arr(list.into_iter().map(|n| Value::Num(n as f64)).collect()),
            );
        }
        let op = match ev.value.get("surfaceOp") {
            None if ev.kind.is_surface() => {
                return Err(at(
                    invalid(&id, seq, format!("{} requires surfaceOp", ev.type_name())),
                    line,
                ));
            }
            None => None,
            Some(_) if !ev.kind.is_surface() => {
                return Err(at(
                    invalid(&id, seq, "log-only events cannot carry surfaceOp"),
                    line,
                ));
            }
            Some(v) => Some(parse_op(v, seq).map_err(|m| at(invalid(&id, seq, m), line))?),
        };
        let mut applied = None;
        if let Some(op) = op {
            if let SurfaceOp::Replace(r) = op
                && surface.position(r.start) == Some(0)
                && surface
                    .nodes
                    .first()
                    .is_some_and(|n| n.kind == Kind::SystemMessage)
            {
                let one = surface.position(r.end) == Some(0);
                if ev.kind != Kind::SystemMessage || !one {
                    return Err(at(
                        invalid(
                            &id,
                            seq,
                            "the system head can be replaced only by one system/message",
                        ),
                        line,
                    ));
                }
            }
            let facts = node_facts(&ev);
            let body = NodeBody::Owned(Arc::new(ev.to_owned_event()));
            let a = surface
                .apply(&ev, op, facts, body)
                .map_err(|e| at(invalid(&id, seq, e.message), line))?;
            if matches!(op, SurfaceOp::Replace(_)) {
                content_generation += 1;
            }
            applied = Some(a);
        }
        if ev.kind == Kind::ImageOffload {
            apply_offload(&ev, surface).map_err(|m| at(invalid(&id, seq, m), line))?;
            content_generation += 1;
        }
        if !synthetic {
            tracker.observe(&ev);
        }
        headers.observe(&ev);
        if ev.kind == Kind::SessionEndSeed {
            last_end_seed = Some(seq);
        }
        *event_types.entry(ev.type_name().into_owned()).or_insert(0) += 1;
        last_kind = Some(ev.kind);
        last_time = ev.time();
        observer.event(
            &ev,
            &Folded {
                applied: applied.as_ref(),
                surface,
                synthetic,
                canonical_line: None,
                canonical_offset: None,
            },
        );
        Ok(())
    };

    while let Some(line) = reader
        .next_line()
        .map_err(|e| e.or_rule(crate::log::LoadRule::Unparsable))?
    {
        let no = line.no;
        let text = String::from_utf8_lossy(line.bytes);
        let parsed = Value::parse(&text);
        if truncated_at.is_some() {
            continue;
        }
        let v = match parsed {
            Ok(v) => v,
            Err(e) if e.what == crate::json::TOO_DEEP => {
                return Err(crate::log::error::too_deep(no));
            }
            Err(_) => {
                prefix.undecodable(no, line.strict)?;
                continue;
            }
        };
        let records = [v];
        if !prefix.decoded(no, line.strict, &records)? {
            continue;
        }
        let [v] = records;
        let expected = prefix.expected;
        if let Some(limit) = opts.upto
            && expected > limit
        {
            truncated_at = Some(limit);
            continue;
        }
        let kind = Kind::of_g3(&v.get("type").and_then(|t| t.as_str()).unwrap_or_default());
        let ev = Event {
            kind,
            seq: expected,
            line: no,
            value: v,
        };
        process(ev, false, &mut surface, &mut headers, &mut tracker)?;
        prefix.expected += 1;
        committed_len = line.offset + line.bytes.len() as u64 + 1;
    }
    let closers = if truncated_at.is_none() {
        tracker.closers()
    } else {
        Vec::new()
    };
    for c in &closers {
        let mut t = tracker.clone();
        process(c.clone(), true, &mut surface, &mut headers, &mut t)?;
    }
    let _ = process;
    let stored_events = prefix.expected;
    let container = reader.container();
    let notes = if skipped > 0 {
        vec![format!("{skipped} unknown ignorable event(s) skipped")]
    } else {
        Vec::new()
    };
    Ok(crate::log::finish_load(
        crate::log::LoadStart {
            source,
            container,
            header,
            warnings,
        },
        prefix,
        reader.torn_tail(),
        crate::log::FoldResult {
            surface,
            headers,
            event_types,
            closers,
            stored_events,
            upgraded: 0,
            last_end_seed,
            last_kind,
            last_time,
            committed_len,
            truncated_at,
            content_generation: Some(content_generation),
        },
        &Generation3 { notes },
    ))
}

/// Generation 3's wording of the shared warnings.
struct Generation3 {
    notes: Vec<String>,
}

impl crate::log::Generation for Generation3 {
    fn torn_warning(&self, t: &crate::log::TornTail) -> String {
        format!(
            "ignored a torn final line ({} byte(s) without a newline)",
            t.len
        )
    }
    fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// Validate an `image/offload` event and mark the images on the surface (§13.4).
fn apply_offload(ev: &Event<'_>, surface: &mut Surface) -> Result<(), String> {
    let d = ev.data();
    let ok_shape = d.as_obj().is_some_and(|o| o.len() == 1) && d.has("targets");
    let targets = d
        .get("targets")
        .and_then(|t| t.as_arr())
        .filter(|t| ok_shape && !t.is_empty());
    let Some(targets) = targets else {
        return Err("image/offload data must be {targets: [..]} with at least one target".into());
    };
    let mut seen = std::collections::HashSet::new();
    let mut plans: Vec<(usize, Vec<u64>)> = Vec::new();
    for t in targets {
        let shape =
            t.as_obj().is_some_and(|o| o.len() == 2) && t.has("seq") && t.has("imageIndexes");
        let seq = t.get("seq").and_then(|s| s.as_count()).filter(|_| shape);
        let Some(seq) = seq else {
            return Err("each image/offload target must be exactly {seq, imageIndexes}".into());
        };
        if !seen.insert(seq) {
            return Err(format!("image/offload targets seq {seq} twice"));
        }
        let idx: Option<Vec<u64>> = t
            .get("imageIndexes")
            .and_then(|a| a.as_arr())
            .filter(|a| !a.is_empty())
            .and_then(|a| a.iter().map(|x| x.as_count()).collect());
        let Some(idx) = idx.filter(|v| v.windows(2).all(|w| w[0] < w[1])) else {
            return Err(
                "imageIndexes must be a non-empty, strictly increasing list of counts".into(),
            );
        };
        let pos = surface
            .position(seq)
            .ok_or_else(|| format!("image/offload target {seq} is not a current surface node"))?;
        let node = &surface.nodes[pos];
        if !matches!(node.kind, Kind::UserMessage | Kind::ToolResult) {
            return Err(format!(
                "image/offload target {seq} is not a user/message or tool/result"
            ));
        }
        plans.push((pos, idx));
    }
    for (pos, idx) in plans {
        let node = &mut surface.nodes[pos];
        let NodeBody::Owned(ev) = &node.body else {
            return Err("generation-3 nodes are kept in memory".into());
        };
        let mut new_ev = (**ev).clone();
        let msg_key = if new_ev.kind == Kind::UserMessage {
            None
        } else {
            Some("message")
        };
        let msg: &mut OwnedValue = match msg_key {
            None => new_ev.value.get_mut("data").ok_or("no data")?,
            Some(k) => new_ev
                .value
                .get_mut("data")
                .and_then(|d| d.get_mut(k))
                .ok_or("no message")?,
        };
        let content = msg.get_mut("content").ok_or("no content")?;
        let mut paths = Vec::new();
        image_paths(content, &mut Vec::new(), &mut paths);
        for i in idx {
            let path = paths
                .get(i as usize)
                .ok_or_else(|| format!("image index {i} does not exist in seq {}", node.seq))?;
            let block = block_at(content, path).ok_or("image path vanished")?;
            if block.get("offloaded").is_some_and(|o| o.is_true()) {
                return Err(format!(
                    "image index {i} of seq {} is already offloaded",
                    node.seq
                ));
            }
            block.set("offloaded", Value::Bool(true));
        }
        // The pruner's bound goes with the body it was taken from.
        node.text_units = crate::surface::text_units_bound(&new_ev);
        node.body = NodeBody::Owned(Arc::new(new_ev));
    }
    Ok(())
}
