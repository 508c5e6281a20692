//! DSH's fixed token heuristic (compaction §1.1–§1.3, session-log §20.3).
//!
//! Four UTF-16 code units per token, rounded up per field; +4 per block, +4 per
//! tool-result wrapper, +4 per message. Images and unknown blocks are priced by
//! the length of their `JSON.stringify` text.

use crate::json::Value;

/// `ceil(n / 4)`.
pub fn q(n: usize) -> u64 {
    (n as u64).div_ceil(4)
}

fn len16(v: Option<&Value<'_>>) -> usize {
    match v {
        Some(Value::Str(s)) => s.len16(),
        _ => 0,
    }
}

/// Price of one content block.
pub fn price_block(b: &Value<'_>) -> u64 {
    let ty = b.get("type");
    let is = |t: &str| ty.is_some_and(|x| x.is_str(t));
    if is("text") || is("reasoning") {
        q(len16(b.get("text"))) + 4
    } else if is("tool-call") {
        q(len16(b.get("name"))) + q(len16(b.get("arguments"))) + 4
    } else if is("tool-result") {
        price_blocks(b.get("content")) + 4
    } else {
        4 + q(b.json_len16())
    }
}

/// Price of a content-block list.
pub fn price_blocks(content: Option<&Value<'_>>) -> u64 {
    match content.and_then(|c| c.as_arr()) {
        Some(a) => a.iter().map(price_block).sum(),
        None => 0,
    }
}

/// Price of a message: its content plus the role overhead.
pub fn price_message(msg: &Value<'_>) -> u64 {
    price_blocks(msg.get("content")) + 4
}

/// Price of the system prompt part of the envelope.
pub fn system_tokens(system: Option<&Value<'_>>) -> u64 {
    match system {
        Some(Value::Str(s)) if !s.is_empty() => q(s.len16()) + 4,
        _ => 0,
    }
}

/// Price of the tool schemas part of the envelope.
pub fn tools_tokens(tools: Option<&Value<'_>>) -> u64 {
    match tools {
        Some(t @ Value::Arr(a)) if !a.is_empty() => q(t.json_len16()) + 4,
        _ => 0,
    }
}
