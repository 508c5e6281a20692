//! The per-event rules of generations 2 and 3 (session-log §13.2–§13.6 and
//! DSH's published codecs), applied by the one loader in place of G0's (no
//! G0 rule runs on a G2+ event, as §14.2 recommends).
//!
//! What differs from G0: one event per line with an exact envelope and
//! range-encoded `sourceEventSeqs`; assistant output embedded in
//! `assistant/message.stream` (never cited by `sourceEventSeqs`), failed
//! attempts as `assistant/attempt`; unknown events marked `ignorable` kept
//! and skipped by the fold. G3 adds the system prompt as a `system/message`
//! surface node protected at position 0, replace ops spelled
//! `{op, startSeq, endSeq}`, a request header without `system` or empty
//! optional fields, and `image/offload` marks that change the content of
//! existing nodes without changing the surface (`contentGeneration`).

use std::sync::Arc;

use crate::event::{Event, Kind, ReplaceOp, SurfaceOp};
use crate::generation::Generation;
use crate::json::{OwnedValue, Value};
use crate::log::header::is_neg_zero;
use crate::log::validate::{self, EventRule};
use crate::surface::{NodeBody, Surface, SurfaceError};

/// Why `sourceEventSeqs` cannot be decoded (the message says what is wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SourcesError(pub String);

/// Decode range-encoded `sourceEventSeqs` (§13.2).
pub(crate) fn decode_sources(v: &Value<'_>, seq: u64) -> Result<Vec<u64>, SourcesError> {
    decode(v, seq).map_err(SourcesError)
}

fn decode(v: &Value<'_>, seq: u64) -> Result<Vec<u64>, String> {
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

/// Range-encode a `sourceEventSeqs` list as DSH's G1+ codecs write it: a
/// strictly increasing list has each run of ≥ 3 consecutive seqs as
/// `[start, end]` (a run of 2 stays two members); any other list verbatim.
pub(crate) fn encode_sources(list: &[u64]) -> Vec<Value<'static>> {
    let num = |n: u64| Value::Num(n as f64);
    if list.windows(2).any(|w| w[1] <= w[0]) {
        return list.iter().map(|&n| num(n)).collect();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let start = list[i];
        let mut end = start;
        while i + 1 < list.len() && list[i + 1] == end + 1 {
            i += 1;
            end += 1;
        }
        match end - start {
            0 => out.push(num(start)),
            1 => out.extend([num(start), num(end)]),
            _ => out.push(Value::Arr(vec![num(start), num(end)])),
        }
        i += 1;
    }
    out
}

/// An event as a writer of `generation` stores it: dsh's writers build
/// events in G0's spelling (plain `sourceEventSeqs`, `{op, start, end}`);
/// G1+ store the sources range-encoded, G3 spells the replace op
/// `{op, startSeq, endSeq}`. Everything else is as built.
pub(crate) fn physical(ev: &Event<'_>, generation: Generation) -> crate::event::OwnedEvent {
    let mut value = ev.value.to_owned_value();
    if generation.range_sources()
        && let Some(list) = ev
            .value
            .get("sourceEventSeqs")
            .and_then(|s| s.as_arr())
            .and_then(|a| a.iter().map(|m| m.as_count()).collect::<Option<Vec<u64>>>())
    {
        value.set("sourceEventSeqs", Value::Arr(encode_sources(&list)));
    }
    if generation.system_head()
        && let Some(SurfaceOp::Replace(r)) = ev
            .value
            .get("surfaceOp")
            .and_then(crate::event::parse_surface_op)
    {
        value.set(
            "surfaceOp",
            Value::obj()
                .with("op", "replace".into())
                .with("startSeq", r.start.into())
                .with("endSeq", r.end.into()),
        );
    }
    crate::event::Event {
        kind: ev.kind,
        seq: ev.seq,
        line: 0,
        value,
    }
}

/// G3's replace op, `{op: "replace", startSeq, endSeq}`, both ends earlier.
fn parse_op_g3(v: &Value<'_>, seq: u64) -> Option<SurfaceOp> {
    match v {
        Value::Str(s) if s.eq_str("append") => Some(SurfaceOp::Append),
        Value::Obj(o) if o.len() == 3 && v.get("op").is_some_and(|x| x.is_str("replace")) => {
            let start = v.get("startSeq")?.as_count()?;
            let end = v.get("endSeq")?.as_count()?;
            (start < seq && end < seq).then_some(SurfaceOp::Replace(ReplaceOp { start, end }))
        }
        _ => None,
    }
}

/// G3's request header: no `system`, no empty optional fields, a reason
/// of the four a G3 writer gives.
fn check_header_g3(ev: &Event<'_>) -> Result<(), String> {
    let d = ev.data();
    let h = d.get("header").unwrap_or(&Value::Null);
    if h.has("system") {
        return Err(
            "header.system is forbidden in generation 3 (the prompt is a system/message)".into(),
        );
    }
    if h.get("tools")
        .and_then(|t| t.as_arr())
        .is_some_and(|a| a.is_empty())
    {
        return Err("header.tools must be omitted when empty".into());
    }
    if h.get("adapterDefaults")
        .and_then(|t| t.as_obj())
        .is_some_and(|a| a.is_empty())
    {
        return Err("header.adapterDefaults must be omitted when empty".into());
    }
    let reason_ok = d
        .get("reason")
        .and_then(|r| r.as_str())
        .is_some_and(|r| matches!(&*r, "initial" | "resume" | "change" | "series"));
    if !reason_ok {
        return Err("reason must be initial, resume, change or series".into());
    }
    if let Some(s) = d.get("startsSeries")
        && !s.is_true()
    {
        return Err("startsSeries must be absent or true".into());
    }
    Ok(())
}

/// A G3 `system/message`: a system-role message with a plugin source.
fn check_system_message(ev: &Event<'_>) -> Result<(), String> {
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
    positive_step(ev)
}

/// `turn` and `step` of a G2+ assistant or system event are positive counts.
fn positive_step(ev: &Event<'_>) -> Result<(), String> {
    for k in ["turn", "step"] {
        if ev
            .data()
            .get(k)
            .and_then(|v| v.as_count())
            .is_none_or(|n| n == 0)
        {
            return Err(format!("{} {k} must be a positive count", ev.type_name()));
        }
    }
    Ok(())
}

/// The embedded `stream` of an `assistant/message` or `assistant/attempt`
/// (§13.2): runs with G0's packed-row semantics, or single chunk records.
/// The meter assembles the output from it, so its shape is checked here.
fn check_stream(ev: &Event<'_>) -> Result<(), String> {
    positive_step(ev)?;
    let what = ev.type_name();
    let Some(records) = ev.data().get("stream").and_then(|s| s.as_arr()) else {
        return Err(format!("{what} stream must be an array"));
    };
    for (i, r) in records.iter().enumerate() {
        check_stream_record(r).map_err(|m| format!("{what} stream record {i}: {m}"))?;
    }
    Ok(())
}

fn check_stream_record(r: &Value<'_>) -> Result<(), String> {
    let Some(obj) = r.as_obj() else {
        return Err("not an object".into());
    };
    // One pass over the members (a stream holds most of a log's records).
    let (mut ty, mut time, mut chunk, mut time0, mut index) = (None, None, None, None, None);
    let (mut dt, mut payload, mut id, mut name) = (None, None, None, None);
    let mut tool_keys = false;
    let mut text_keys = false;
    for (k, v) in obj {
        let key = k.as_str();
        match key.as_deref() {
            Some("type") => ty = Some(v),
            Some("time0") => time0 = Some(v),
            Some("index") => index = Some(v),
            Some("dt") => dt = Some(v),
            Some("texts") => {
                payload = Some(v);
                text_keys = true;
            }
            Some("args") => {
                payload = Some(v);
                tool_keys = true;
            }
            Some("id") => {
                id = Some(v);
                tool_keys = true;
            }
            Some("name") => {
                name = Some(v);
                tool_keys = true;
            }
            Some("time") => time = Some(v),
            Some("chunk") => chunk = Some(v),
            _ => return Err(format!("unexpected key \"{}\"", k.to_lossy())),
        }
    }
    let ty = ty
        .and_then(|t| t.as_jstr())
        .ok_or("a record needs a type")?;
    let tool = if ty.eq_str("chunk") {
        let exact = obj.len() == 3
            && time.is_some_and(|t| t.is_safe_int())
            && chunk.is_some_and(|c| c.is_obj());
        return if exact {
            Ok(())
        } else {
            Err("a chunk record is exactly {type, time, chunk}".into())
        };
    } else if ty.eq_str("tool-call-chunks") {
        true
    } else if ty.eq_str("text-chunks") || ty.eq_str("reasoning-chunks") {
        false
    } else {
        return Err(format!("unknown record type \"{}\"", ty.to_lossy()));
    };
    if time.is_some() || chunk.is_some() || (tool && text_keys) || (!tool && tool_keys) {
        return Err("a run holds only its own kind's keys".into());
    }
    let members = payload
        .and_then(|p| p.as_arr())
        .filter(|a| !a.is_empty() && a.iter().all(|m| matches!(m, Value::Str(_))))
        .ok_or("its payload must be a non-empty list of strings")?;
    if index.and_then(|i| i.as_count()).is_none() {
        return Err("its index must be a count".into());
    }
    if tool {
        if !id.is_some_and(|i| i.is_nonempty_str()) {
            return Err("its id must be a non-empty string".into());
        }
        if name.is_some_and(|n| !matches!(n, Value::Str(_))) {
            return Err("its name must be a string".into());
        }
    }
    let mut t = time0
        .filter(|t| t.is_safe_int())
        .and_then(|t| t.as_f64())
        .ok_or("its time0 must be a safe integer")?;
    let gaps = dt
        .and_then(|d| d.as_arr())
        .filter(|d| d.len() + 1 == members.len())
        .ok_or("dt must hold one gap fewer than its members")?;
    for g in gaps {
        t += g.as_safe_int().ok_or("dt members must be safe integers")? as f64;
        if !Value::Num(t).is_safe_int() {
            return Err("a member's time is not a safe integer".into());
        }
    }
    Ok(())
}

/// What a G2+ event's rules leave for the fold.
pub(crate) struct Checked {
    /// `time`.
    pub(crate) time: f64,
    /// The surface op to fold (`None` for log-only events, and for unknown
    /// ignorable ones, whose op the fold ignores).
    pub(crate) op: Option<SurfaceOp>,
    /// `sourceEventSeqs` were range-encoded and are now decoded in the
    /// event, so its line is no longer its text.
    pub(crate) sources_decoded: bool,
}

fn rule(r: &'static str, message: impl Into<String>) -> EventRule {
    EventRule::Surface(SurfaceError {
        rule: r,
        message: message.into(),
    })
}

/// Every rule a G2+ event obeys on its own, in the codec's order: envelope,
/// vocabulary, shapes, request header, provenance (range-encoded
/// `sourceEventSeqs` decoded in place), surface op. The fold rules need the
/// surface and are the loader's.
pub(crate) fn check_event(
    ev: &mut Event<'_>,
    generation: Generation,
) -> Result<Checked, EventRule> {
    let env = validate::scan_envelope(ev)?;
    if is_neg_zero(ev.value.get("seq").unwrap_or(&Value::Null)) {
        return Err(EventRule::Envelope("event seq must not be -0".into()));
    }
    let ignorable = ev.value.get("ignorable").is_some_and(|i| i.is_true());
    if ev.kind == Kind::Unknown {
        if !ignorable {
            return Err(EventRule::UnknownType(ev.type_name().into_owned()));
        }
        // Kept and skipped; its surfaceOp and sources are opaque (§13.5).
        return Ok(Checked {
            time: env.time,
            op: None,
            sources_decoded: false,
        });
    }
    if generation.system_head() && ev.kind.is_surface() && ignorable {
        return Err(EventRule::Envelope(
            "surface events cannot be ignorable".into(),
        ));
    }
    match ev.kind {
        Kind::SystemMessage => check_system_message(ev).map_err(EventRule::Shape)?,
        Kind::AssistantMessage => {
            validate::check_message_shape(ev)?;
            check_stream(ev).map_err(EventRule::Shape)?;
        }
        Kind::Other if ev.type_name() == "assistant/attempt" => {
            check_stream(ev).map_err(EventRule::Shape)?
        }
        _ => validate::check_message_shape(ev)?,
    }
    if generation.system_head()
        && ev.kind == Kind::ToolResult
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
        return Err(EventRule::Shape(
            "tool/result error is allowed only when the result isError".into(),
        ));
    }
    if ev.kind == Kind::RequestHeader {
        validate::check_request_header(ev)?;
        if generation.system_head() {
            check_header_g3(ev).map_err(EventRule::RequestHeader)?;
        }
    }
    let mut sources_decoded = false;
    if let Some(raw) = ev.value.get("sourceEventSeqs") {
        if !ev.kind.is_surface() {
            return Err(rule(
                "R2",
                format!(
                    "{} is not a surface event type and cannot carry sourceEventSeqs",
                    ev.type_name()
                ),
            ));
        }
        if ev.kind == Kind::AssistantMessage {
            return Err(rule(
                "R5",
                "assistant/message embeds its stream and cannot carry sourceEventSeqs",
            ));
        }
        let ranged = raw.as_arr().is_some_and(|a| a.iter().any(|m| m.is_arr()));
        let list =
            decode_sources(raw, ev.seq).map_err(|m| rule("R7", format!("sourceEventSeqs: {m}")))?;
        if list.is_empty() {
            return Err(rule("R6", "sourceEventSeqs must not be empty"));
        }
        if ranged {
            ev.value.set(
                "sourceEventSeqs",
                Value::Arr(list.into_iter().map(|n| Value::Num(n as f64)).collect()),
            );
            sources_decoded = true;
        }
    }
    let op = match ev.value.get("surfaceOp") {
        None if ev.kind.is_surface() => {
            return Err(rule("R3", format!("{} requires surfaceOp", ev.type_name())));
        }
        None => None,
        Some(_) if !ev.kind.is_surface() => {
            return Err(rule(
                "R1",
                format!(
                    "{} is not a surface event type and cannot carry surfaceOp",
                    ev.type_name()
                ),
            ));
        }
        Some(v) => {
            let op = if generation.system_head() {
                parse_op_g3(v, ev.seq)
            } else {
                crate::event::parse_surface_op(v)
            };
            Some(op.ok_or_else(|| rule("R4", format!("invalid surfaceOp {}", v.to_json())))?)
        }
    };
    Ok(Checked {
        time: env.time,
        op,
        sources_decoded,
    })
}

/// G3's head protection (§13.3): a replacement starting at position 0 while
/// node 0 is a `system/message` must be one `system/message` shadowing
/// exactly that node.
pub(crate) fn check_head(ev: &Event<'_>, op: SurfaceOp, surface: &Surface) -> Result<(), String> {
    let SurfaceOp::Replace(r) = op else {
        return Ok(());
    };
    let head = surface
        .nodes
        .first()
        .is_some_and(|n| n.kind == Kind::SystemMessage);
    if head && surface.position(r.start) == Some(0) {
        let one = surface.position(r.end) == Some(0);
        if ev.kind != Kind::SystemMessage || !one {
            return Err("the system head can be replaced only by one system/message".into());
        }
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

/// The event of the node at `pos`, in memory or read again from its line.
fn node_event(surface: &Surface, pos: usize) -> Result<crate::event::OwnedEvent, String> {
    let node = &surface.nodes[pos];
    match &node.body {
        NodeBody::Owned(ev) => Ok((**ev).clone()),
        NodeBody::Span { offset, len } => {
            let lines = surface
                .reread
                .as_ref()
                .ok_or("the log cannot be read again")?;
            let bytes = lines
                .line_at(*offset, *len as usize)
                .map_err(|e| format!("cannot read seq {} again: {e}", node.seq))?;
            let text = String::from_utf8_lossy(&bytes);
            let value = Value::parse(&text)
                .map_err(|_| format!("the log changed while it was being read (seq {})", node.seq))?
                .into_owned();
            Ok(crate::event::Event {
                kind: node.kind,
                seq: node.seq,
                line: 0,
                value,
            })
        }
    }
}

/// Validate an `image/offload` event and mark the images on the surface (§13.4).
pub(crate) fn apply_offload(ev: &Event<'_>, surface: &mut Surface) -> Result<(), String> {
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
        let mut new_ev = node_event(surface, pos)?;
        let node = &mut surface.nodes[pos];
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
        // The message's text no longer sits in the line as it was.
        node.message_text = None;
    }
    Ok(())
}
