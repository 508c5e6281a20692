//! DSH's fixed token heuristic (compaction §1.1–§1.3, session-log §20.3).
//!
//! Four UTF-16 code units per token, rounded up per field; +4 per block, +4 per
//! tool-result wrapper, +4 per message. Images and unknown blocks are priced by
//! the length of their `JSON.stringify` text.

use crate::json::Value;

/// `ceil(n / 4)`.
pub(crate) fn q(n: usize) -> u64 {
    (n as u64).div_ceil(4)
}

fn len16(v: Option<&Value<'_>>) -> usize {
    match v {
        Some(Value::Str(s)) => s.len16(),
        _ => 0,
    }
}

/// Price of one content block.
pub(crate) fn price_block(b: &Value<'_>) -> u64 {
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
pub(crate) fn price_blocks(content: Option<&Value<'_>>) -> u64 {
    match content.and_then(|c| c.as_arr()) {
        Some(a) => a.iter().map(price_block).sum(),
        None => 0,
    }
}

/// Price of a message: its content plus the role overhead.
pub fn price_message(msg: &Value<'_>) -> u64 {
    price_blocks(msg.get("content")) + 4
}

/// Price of a G3 `system/message` head (compaction §12.2): the system
/// prompt's own price, `q(total text length) + 4` with no per-block
/// overhead, so that a prompt costs the same as a node as it did in the
/// request header of earlier generations; 0 for no text.
pub(crate) fn price_system_message(msg: &Value<'_>) -> u64 {
    let units: usize = match msg.get("content").and_then(|c| c.as_arr()) {
        Some(blocks) => blocks.iter().map(|b| len16(b.get("text"))).sum(),
        None => 0,
    };
    if units == 0 { 0 } else { q(units) + 4 }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value<'_> {
        Value::parse(s).unwrap()
    }

    #[test]
    fn density_rounds_up_per_field() {
        assert_eq!((q(0), q(1), q(4), q(5)), (0, 1, 1, 2));
        // name 4 → 1, arguments 5 → 2: per field, not q(9) = 3.
        assert_eq!(
            price_block(&v(
                r#"{"type":"tool-call","id":"long id not priced","name":"bash","arguments":"12345"}"#
            )),
            1 + 2 + 4
        );
    }

    #[test]
    fn utf16_units_not_code_points() {
        // Two U+1F642 emoji: 4 UTF-16 units, 2 code points → q(4) = 1, not... q(5) with one more char.
        let b = v(r#"{"type":"text","text":"a🙂🙂"}"#);
        assert_eq!(price_block(&b), q(5) + 4);
        assert_eq!(
            price_message(&v(r#"{"content":[{"type":"text","text":"a🙂🙂"}]}"#)),
            2 + 4 + 4
        );
    }

    #[test]
    fn tool_results_nest_and_empty_messages_cost_the_role() {
        let m = v(
            r#"{"content":[{"type":"tool-result","toolCallId":"x","isError":true,"content":[{"type":"text","text":"12345678"}]}]}"#,
        );
        assert_eq!(price_message(&m), (2 + 4) + 4 + 4);
        assert_eq!(price_message(&v(r#"{"content":[]}"#)), 4);
    }

    #[test]
    fn other_blocks_price_their_exact_json_text() {
        // Key order as logged; the JSON is 99 units here.
        let img = v(
            r#"{"type":"image","attachment":{"attachmentId":"att-1","mediaType":"image/png","bytes":2048,"width":64,"height":32}}"#,
        );
        let json = img.to_json();
        assert_eq!(
            json,
            r#"{"type":"image","attachment":{"attachmentId":"att-1","mediaType":"image/png","bytes":2048,"width":64,"height":32}}"#
        );
        assert_eq!(price_block(&img), 4 + q(json.encode_utf16().count()));
        // -0 prints as 0, 1e21 as 1e+21, a control char as \u0001 (6 units),
        // an escaped lone surrogate stays \ud800 (6 units), an emoji is 2 units.
        let odd = v(r#"{"type":"x","a":-0,"b":1e21,"c":"\u0001","d":"\ud800","e":"🙂"}"#);
        assert_eq!(
            odd.to_json(),
            "{\"type\":\"x\",\"a\":0,\"b\":1e+21,\"c\":\"\\u0001\",\"d\":\"\\ud800\",\"e\":\"🙂\"}"
        );
        assert_eq!(odd.json_len16(), 63); // node: JSON.stringify(...).length
        assert_eq!(price_block(&odd), 4 + 16);
    }

    #[test]
    fn envelope_prices() {
        let sys = v(r#""You are a careful coding agent. Answer briefly.""#);
        assert_eq!(system_tokens(Some(&sys)), 16);
        assert_eq!(system_tokens(Some(&v(r#""""#))), 0);
        assert_eq!(tools_tokens(Some(&v("[]"))), 0);
        let tools = v(
            r#"[{"name":"bash","description":"Run one shell command and return its output.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]"#,
        );
        assert_eq!(tools.json_len16(), 175);
        assert_eq!(tools_tokens(Some(&tools)), 48);
    }
}
