//! Per-event validation at load: the envelope (§4.1), message shapes (§6.6)
//! and request headers (§9.1).

use crate::event::{Event, Kind};
use crate::json::Value;

/// Envelope keys G0 allows.
const ENVELOPE_KEYS: [&str; 7] = [
    "type",
    "seq",
    "time",
    "data",
    "surfaceOp",
    "sourceEventSeqs",
    "ignorable",
];

/// Check the envelope; the message says what is wrong.
pub fn check_envelope(ev: &Event<'_>) -> Result<(), String> {
    let Some(obj) = ev.value.as_obj() else {
        return Err("event is not an object".into());
    };
    for (k, _) in obj {
        if !ENVELOPE_KEYS.iter().any(|a| k.eq_str(a)) {
            return Err(format!(
                "event has unknown envelope key \"{}\"",
                k.to_lossy()
            ));
        }
    }
    if !matches!(ev.value.get("type"), Some(Value::Str(_))) {
        return Err("event type must be a string".into());
    }
    if ev.value.get("seq").and_then(|s| s.as_count()).is_none() {
        return Err("event seq must be a non-negative safe integer".into());
    }
    if !ev.value.get("time").is_some_and(|t| t.is_safe_int()) {
        return Err("event time must be a safe integer".into());
    }
    if !ev.value.has("data") {
        return Err("event data is missing".into());
    }
    if let Some(i) = ev.value.get("ignorable")
        && !i.is_true()
    {
        return Err("event ignorable must be exactly true".into());
    }
    Ok(())
}

fn nonempty_str(v: Option<&Value<'_>>) -> bool {
    v.is_some_and(|s| s.is_nonempty_str())
}

/// Message-shape checks for user, assistant and tool-result events (§6.6).
pub fn check_message_shape(ev: &Event<'_>) -> Result<(), String> {
    let (msg, role) = match ev.kind {
        Kind::UserMessage => (Some(ev.data()), "user"),
        Kind::AssistantMessage => (ev.data().get("message"), "assistant"),
        Kind::ToolResult => (ev.data().get("message"), "user"),
        _ => return Ok(()),
    };
    let what = ev.type_name();
    let Some(m) = msg.filter(|m| m.is_obj()) else {
        return Err(format!("{what} message must be an object"));
    };
    if !nonempty_str(m.get("id")) {
        return Err(format!("{what} message id must be a non-empty string"));
    }
    if !m.get("role").is_some_and(|r| r.is_str(role)) {
        return Err(format!("{what} message role must be \"{role}\""));
    }
    let source = m.get("source").filter(|s| s.is_obj());
    let Some(source) = source else {
        return Err(format!("{what} message source must be an object"));
    };
    if !nonempty_str(source.get("kind")) {
        return Err(format!(
            "{what} message source.kind must be a non-empty string"
        ));
    }
    let Some(content) = m.get("content").and_then(|c| c.as_arr()) else {
        return Err(format!("{what} message content must be an array"));
    };
    match ev.kind {
        Kind::AssistantMessage
            if !source.get("kind").is_some_and(|k| k.is_str("model"))
                || !nonempty_str(source.get("provider"))
                || !nonempty_str(source.get("model")) =>
        {
            return Err(
                "assistant/message source must be {kind:\"model\", provider, model}".into(),
            );
        }
        Kind::ToolResult => {
            if !source.get("kind").is_some_and(|k| k.is_str("tool"))
                || !nonempty_str(source.get("callId"))
            {
                return Err("tool/result source must be {kind:\"tool\", callId}".into());
            }
            if content.len() != 1 {
                return Err("tool/result message must hold exactly one tool-result block".into());
            }
            let b = &content[0];
            let ok = b.is_obj()
                && b.get("type").is_some_and(|t| t.is_str("tool-result"))
                && b.get("content").is_some_and(|c| c.is_arr())
                && match (b.get("toolCallId"), source.get("callId")) {
                    (Some(a), Some(c)) => a.deep_eq(c),
                    _ => false,
                };
            if !ok {
                return Err("tool/result block must be a tool-result with array content and toolCallId equal to source.callId".into());
            }
        }
        _ => {}
    }
    Ok(())
}

/// `request/header` load checks (§9.1); `reason: "fallback"` is handled with
/// the retired shapes.
pub fn check_request_header(ev: &Event<'_>) -> Result<(), String> {
    if ev.kind != Kind::RequestHeader {
        return Ok(());
    }
    let Some(h) = ev.data().get("header").filter(|h| h.is_obj()) else {
        return Err("has no header object".into());
    };
    let Some(config) = h.get("config").filter(|c| c.is_obj()) else {
        return Err("has no config".into());
    };
    if !nonempty_str(config.get("provider")) || !nonempty_str(config.get("model")) {
        return Err("config needs non-empty provider and model".into());
    }
    if let Some(r) = config.get("reasoningEffort")
        && !r.is_nonempty_str()
    {
        return Err("has invalid config.reasoningEffort".into());
    }
    if let Some(ad) = h.get("adapterDefaults") {
        let Some(o) = ad.as_obj() else {
            return Err("has invalid adapterDefaults".into());
        };
        for (k, v) in o {
            let known = k.eq_str("reasoningEffort") || k.eq_str("maxTokens");
            if !known || !v.is_true() || !config.has(&k.to_lossy()) {
                return Err("has invalid adapterDefaults".into());
            }
        }
    }
    Ok(())
}
