//! Per-event validation at load: the envelope (§4.1), message shapes (§6.6)
//! and request headers (§9.1).

use crate::event::{Event, Kind, SurfaceOp};
use crate::json::Value;
use crate::surface::{SurfaceError, check_local_with};

/// What one pass over an envelope learnt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Envelope {
    /// `time`.
    pub time: f64,
    /// Has `surfaceOp`.
    pub has_op: bool,
    /// Has `sourceEventSeqs`.
    pub has_sources: bool,
}

/// Check the envelope in one pass over its keys ([`EventRule::Envelope`]
/// says what is wrong).
pub(crate) fn scan_envelope(ev: &Event<'_>) -> Result<Envelope, EventRule> {
    envelope(ev).map_err(EventRule::Envelope)
}

fn envelope(ev: &Event<'_>) -> Result<Envelope, String> {
    let Some(obj) = ev.value.as_obj() else {
        return Err("event is not an object".into());
    };
    let (mut ty, mut seq, mut time, mut data) = (None, None, None, false);
    let (mut has_op, mut has_sources) = (false, false);
    for (k, v) in obj {
        let Some(key) = k.as_str() else {
            return Err(format!(
                "event has unknown envelope key \"{}\"",
                k.to_lossy()
            ));
        };
        match &*key {
            "type" => ty = Some(v),
            "seq" => seq = Some(v),
            "time" => time = Some(v),
            "data" => data = true,
            "surfaceOp" => has_op = true,
            "sourceEventSeqs" => has_sources = true,
            "ignorable" => {
                if !v.is_true() {
                    return Err("event ignorable must be exactly true".into());
                }
            }
            other => return Err(format!("event has unknown envelope key \"{other}\"")),
        }
    }
    if !matches!(ty, Some(Value::Str(_))) {
        return Err("event type must be a string".into());
    }
    if seq.and_then(|s| s.as_count()).is_none() {
        return Err("event seq must be a non-negative safe integer".into());
    }
    let Some(time) = time.filter(|t| t.is_safe_int()).and_then(|t| t.as_f64()) else {
        return Err("event time must be a safe integer".into());
    };
    if !data {
        return Err("event data is missing".into());
    }
    Ok(Envelope {
        time,
        has_op,
        has_sources,
    })
}

fn nonempty_str(v: Option<&Value<'_>>) -> bool {
    v.is_some_and(|s| s.is_nonempty_str())
}

/// Message-shape checks for user, assistant and tool-result events (§6.6).
pub(crate) fn check_message_shape(ev: &Event<'_>) -> Result<(), EventRule> {
    message_shape(ev).map_err(EventRule::Shape)
}

fn message_shape(ev: &Event<'_>) -> Result<(), String> {
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
pub(crate) fn check_request_header(ev: &Event<'_>) -> Result<(), EventRule> {
    request_header(ev).map_err(EventRule::RequestHeader)
}

fn request_header(ev: &Event<'_>) -> Result<(), String> {
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

/// Which per-event rule an event broke (see [`check_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventRule {
    /// A message-shape rule (§6.6).
    Shape(String),
    /// An unknown type not marked `ignorable` (§4.3): the log is unsupported.
    UnknownType(String),
    /// An envelope rule (§4.1).
    Envelope(String),
    /// A `request/header` rule (§9.1).
    RequestHeader(String),
    /// An event-local surface rule (R1–R4).
    Surface(SurfaceError),
}

impl std::fmt::Display for EventRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventRule::Shape(m) | EventRule::Envelope(m) => write!(f, "{m}"),
            EventRule::UnknownType(t) => {
                write!(f, "unknown event type \"{t}\" not marked ignorable")
            }
            EventRule::RequestHeader(m) => write!(f, "request/header {m}"),
            EventRule::Surface(e) => write!(f, "{}", e.message),
        }
    }
}

/// Every rule the loader applies to one event on its own, in the reference's
/// order (§16 steps 6, 7 and 10): message shape, vocabulary, envelope,
/// request header, and the event-local surface rules R1–R4. Gives the scanned
/// envelope and the surface op to fold; the fold rules (R5–R16) need the
/// surface and are [`crate::surface::Surface::apply`]'s. The loader and the
/// writer both check events through here, so they accept the same events.
pub(crate) fn check_event(ev: &Event<'_>) -> Result<(Envelope, Option<SurfaceOp>), EventRule> {
    check_message_shape(ev)?;
    if ev.kind == Kind::Unknown && !ev.value.get("ignorable").is_some_and(|i| i.is_true()) {
        return Err(EventRule::UnknownType(ev.type_name().into_owned()));
    }
    let env = scan_envelope(ev)?;
    check_request_header(ev)?;
    let op = check_local_with(ev, env.has_op, env.has_sources).map_err(EventRule::Surface)?;
    Ok((env, op))
}
