//! Legacy shapes inside generation 0: refused outright, or upgraded in memory
//! before validation (session-log §12.1–§12.2). The file is never touched.

use crate::event::{Event, Kind};
use crate::json::{JStr, Value};

use super::error::{LoadError, LoadRule};

fn k(s: &'static str) -> JStr<'static> {
    JStr::from_text(s)
}

/// Refuse retired shapes (§12.1).
pub(crate) fn check_retired(ev: &Event<'_>, session_id: &str) -> Result<(), LoadError> {
    if ev.kind != Kind::Unknown && ev.kind != Kind::RequestHeader {
        return Ok(());
    }
    let name = ev.type_name();
    let wrap = |m: String| {
        LoadError::invalid(format!(
            "stored session \"{session_id}\" failed validation: Error: session \"{session_id}\" {m}"
        ))
        .seq(ev.seq)
        .line(ev.line)
        .rule(LoadRule::Retired)
    };
    if name == "request/header-delta" || name == "mode/set" {
        return Err(wrap(format!(
            "contains unsupported legacy {name} event at seq {}",
            ev.seq
        )));
    }
    if ev.kind == Kind::RequestHeader
        && ev
            .data()
            .get("reason")
            .is_some_and(|r| r.is_str("fallback"))
    {
        return Err(wrap(format!(
            "contains unsupported legacy request/header reason \"fallback\" at seq {}",
            ev.seq
        )));
    }
    Ok(())
}

fn corrupt(ev: &Event<'_>, what: &str) -> LoadError {
    LoadError::corrupt(format!(
        "corrupt session log: malformed legacy {what} at seq {}",
        ev.seq
    ))
    .seq(ev.seq)
    .line(ev.line)
    .rule(LoadRule::Legacy)
}

fn keys_exactly(v: &Value<'_>, keys: &[&str]) -> bool {
    v.as_obj()
        .is_some_and(|o| o.len() == keys.len() && keys.iter().all(|k| v.has(k)))
}

fn is_turn_number(v: Option<&Value<'_>>) -> bool {
    v.and_then(|t| t.as_safe_int()).is_some_and(|t| t >= 1)
}

/// Upgrade one event in place. `message_id_of(seq)` gives the (upgraded)
/// message id of an earlier surface event, for legacy replacements that
/// inherit their target's identity. Returns whether anything changed.
pub(crate) fn upgrade(
    ev: &mut Event<'_>,
    session_id: &str,
    message_id_of: &dyn Fn(u64) -> Option<String>,
) -> Result<bool, LoadError> {
    let id = |seq: u64| -> Value<'static> {
        Value::Str(JStr::from_text(format!(
            "legacy-message:{session_id}:{seq}"
        )))
    };
    let mut changed = false;
    // Only these kinds have legacy shapes; skip the rest without a lookup.
    if !matches!(
        ev.kind,
        Kind::TurnStart
            | Kind::TurnEnd
            | Kind::Unknown
            | Kind::UserMessage
            | Kind::AssistantMessage
            | Kind::ToolResult
    ) {
        return Ok(false);
    }
    let name = ev.type_name().into_owned();
    // Each rule in its own function, in the reference's order; a rule
    // sees what the earlier ones made of the event.
    if name == "turn/start" && ev.data().has("trigger") {
        changed |= turn_start_trigger(ev)?;
    }
    if name == "turn/end" {
        changed |= turn_end_reason(ev)?;
    }
    if name == "steering/message" {
        changed |= steering_message(ev, &id)?;
    }
    changed |= message_identity(ev, &id, message_id_of)?;
    Ok(changed)
}

/// 1. `turn/start` with a `trigger`: the trigger goes.
fn turn_start_trigger(ev: &mut Event<'_>) -> Result<bool, LoadError> {
    let d = ev.data();
    let ok = keys_exactly(d, &["turn", "trigger"])
        && is_turn_number(d.get("turn"))
        && d.get("trigger")
            .is_some_and(|t| t.is_obj() && t.get("kind").is_some_and(|k| k.is_nonempty_str()));
    if !ok {
        return Err(corrupt(ev, "turn/start"));
    }
    let turn = d.get("turn").unwrap().clone();
    ev.value.set("data", Value::Obj(vec![(k("turn"), turn)]));
    Ok(true)
}

/// 2. `turn/end` reasons in their legacy shapes.
fn turn_end_reason(ev: &mut Event<'_>) -> Result<bool, LoadError> {
    let mut changed = false;
    let d = ev.data();
    let ok = keys_exactly(d, &["turn", "reason"])
        && is_turn_number(d.get("turn"))
        && d.get("reason")
            .is_some_and(|r| r.is_obj() && matches!(r.get("kind"), Some(Value::Str(_))));
    if !ok {
        return Err(corrupt(ev, "turn/end"));
    }
    let reason = d.get("reason").unwrap();
    let kind = reason
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .into_owned();
    let only_kind = reason.as_obj().unwrap().len() == 1;
    let new_reason: Option<Value<'static>> = match kind.as_str() {
        "completed" | "blocked" | "max-tokens" | "interrupted" => {
            if !only_kind {
                return Err(corrupt(ev, "turn/end"));
            }
            None
        }
        "aborted" => {
            if reason.has("reason") {
                None
            } else if only_kind {
                Some(
                    Value::obj()
                        .with("kind", "aborted".into())
                        .with("reason", Value::obj().with("kind", "legacy".into())),
                )
            } else {
                return Err(corrupt(ev, "turn/end"));
            }
        }
        "disposed" => {
            if !only_kind {
                return Err(corrupt(ev, "turn/end"));
            }
            Some(
                Value::obj()
                    .with("kind", "aborted".into())
                    .with("reason", Value::obj().with("kind", "disposed".into())),
            )
        }
        "error" => {
            if reason.has("error") {
                None
            } else {
                if reason.get("step").and_then(|s| s.as_count()).is_none() {
                    return Err(corrupt(ev, "turn/end"));
                }
                if keys_exactly(reason, &["kind", "step", "failure"]) {
                    let f = reason.get("failure").unwrap();
                    let fo = f.as_obj().ok_or_else(|| corrupt(ev, "turn/end"))?;
                    let mut ok = matches!(f.get("message"), Some(Value::Str(_)))
                        && matches!(f.get("code"), Some(Value::Str(_)));
                    for (key, val) in fo {
                        let good = if key.eq_str("message") || key.eq_str("code") {
                            true
                        } else if key.eq_str("status") || key.eq_str("providerRetryAfterMs") {
                            matches!(val, Value::Num(_))
                        } else if key.eq_str("requestId") {
                            matches!(val, Value::Str(_))
                        } else {
                            false
                        };
                        ok &= good;
                    }
                    if !ok {
                        return Err(corrupt(ev, "turn/end"));
                    }
                    Some(
                        Value::obj()
                            .with("kind", "error".into())
                            .with("error", f.to_owned_value()),
                    )
                } else if keys_exactly(reason, &["kind", "step", "message"])
                    || keys_exactly(reason, &["kind", "step", "message", "code"])
                {
                    let msg = reason.get("message").unwrap();
                    if !matches!(msg, Value::Str(_)) {
                        return Err(corrupt(ev, "turn/end"));
                    }
                    let code = match reason.get("code") {
                        None => Value::from("UNKNOWN"),
                        Some(c @ Value::Str(_)) => c.to_owned_value(),
                        Some(_) => return Err(corrupt(ev, "turn/end")),
                    };
                    Some(
                        Value::obj().with("kind", "error".into()).with(
                            "error",
                            Value::obj()
                                .with("message", msg.to_owned_value())
                                .with("code", code),
                        ),
                    )
                } else {
                    return Err(corrupt(ev, "turn/end"));
                }
            }
        }
        _ => None,
    };
    if let Some(r) = new_reason {
        if let Some(d) = ev.value.get_mut("data") {
            d.set("reason", r);
        }
        changed = true;
    }
    Ok(changed)
}

/// 3. `steering/message` becomes `user/message`.
fn steering_message(
    ev: &mut Event<'_>,
    id: &dyn Fn(u64) -> Value<'static>,
) -> Result<bool, LoadError> {
    let d = ev.data();
    let new_data = if keys_exactly(d, &["turn", "message"])
        && d.get("turn").is_some_and(|t| t.is_safe_int())
        && d.get("message").is_some_and(|m| m.is_obj())
    {
        d.get("message").unwrap().clone()
    } else if keys_exactly(d, &["turn", "content", "source"]) {
        Value::Obj(vec![
            (k("content"), d.get("content").unwrap().clone()),
            (k("source"), d.get("source").unwrap().clone()),
            (k("id"), id(ev.seq)),
            (k("role"), Value::from("user")),
        ])
    } else {
        return Err(corrupt(ev, "steering/message"));
    };
    ev.value.set("data", new_data);
    ev.value.set("type", Value::from("user/message"));
    ev.kind = Kind::UserMessage;
    Ok(true)
}

/// 4. Messages from before message ids: each gets one.
fn message_identity(
    ev: &mut Event<'_>,
    id: &dyn Fn(u64) -> Value<'static>,
    message_id_of: &dyn Fn(u64) -> Option<String>,
) -> Result<bool, LoadError> {
    let mut changed = false;
    match ev.kind {
        Kind::UserMessage => {
            let d = ev.data();
            if d.has("content")
                && d.has("source")
                && !d.has("id")
                && !d.has("role")
                && !d.has("message")
            {
                let seq = ev.seq;
                if let Some(d) = ev.value.get_mut("data") {
                    d.set("id", id(seq));
                    d.set("role", Value::from("user"));
                }
                changed = true;
            }
        }
        Kind::AssistantMessage => {
            let d = ev.data();
            if d.has("content") && d.has("provenance") && !d.has("message") {
                let mut source = d.get("provenance").unwrap().clone();
                if source.is_obj() {
                    source.set("kind", Value::from("model"));
                } else {
                    source = Value::obj().with("kind", "model".into());
                }
                let content = d.get("content").unwrap().clone();
                let mut rest: Vec<(JStr, Value)> = d
                    .as_obj()
                    .unwrap()
                    .iter()
                    .filter(|(key, _)| !key.eq_str("content") && !key.eq_str("provenance"))
                    .cloned()
                    .collect();
                rest.push((
                    k("message"),
                    Value::Obj(vec![
                        (k("id"), id(ev.seq)),
                        (k("role"), Value::from("assistant")),
                        (k("content"), content),
                        (k("source"), source),
                    ]),
                ));
                ev.value.set("data", Value::Obj(rest));
                changed = true;
            }
        }
        Kind::ToolResult => {
            let d = ev.data();
            if d.has("callId") && d.has("content") && d.has("isError") && !d.has("message") {
                let m = match ev.surface_op() {
                    Some(crate::event::SurfaceOp::Replace(op)) => message_id_of(op.start)
                        .map(Value::from)
                        .unwrap_or_else(|| id(ev.seq)),
                    _ => id(ev.seq),
                };
                let call_id = d.get("callId").unwrap().clone();
                let content = d.get("content").unwrap().clone();
                let is_error = d.get("isError").unwrap().clone();
                let mut rest: Vec<(JStr, Value)> = d
                    .as_obj()
                    .unwrap()
                    .iter()
                    .filter(|(key, _)| {
                        !key.eq_str("callId") && !key.eq_str("content") && !key.eq_str("isError")
                    })
                    .cloned()
                    .collect();
                rest.push((
                    k("message"),
                    Value::Obj(vec![
                        (k("id"), m),
                        (k("role"), Value::from("user")),
                        (
                            k("content"),
                            Value::Arr(vec![Value::Obj(vec![
                                (k("type"), Value::from("tool-result")),
                                (k("toolCallId"), call_id.clone()),
                                (k("content"), content),
                                (k("isError"), is_error),
                            ])]),
                        ),
                        (
                            k("source"),
                            Value::Obj(vec![
                                (k("kind"), Value::from("tool")),
                                (k("callId"), call_id),
                            ]),
                        ),
                    ]),
                ));
                ev.value.set("data", Value::Obj(rest));
                changed = true;
            }
        }
        _ => {}
    }
    Ok(changed)
}
