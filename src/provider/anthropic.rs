//! The Anthropic-compatible Messages protocol (compaction §6.7, as the
//! post-rc.8 DeepSeek adapter's `protocol: "messages"` speaks it).
//!
//! `POST {baseURL}/v1/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`. Consecutive same-role messages merge,
//! tool results become `tool_result` blocks placed first in their user turn,
//! reasoning is replayed as `thinking` only when it carries a `signature`.
//! The stream is `message_start`, `content_block_*`, `message_delta`,
//! `message_stop`; usage accumulates field by field and is already disjoint.

use super::ErrorCode;
use super::assemble::{Assembler, Chunk, Finish, units_of};
use super::classify::{self, ErrorBody};
use super::deepseek::{NO_OUTPUT, join_url, malformed};
use super::http::StreamDecoder;
use super::sse::SseEvent;
use super::{CompletionRequest, Endpoint, ProviderError, Usage, WireRequest, concat_text};
use crate::json::{OwnedValue, Value};

/// `anthropic-version` **\[CONST\]**.
const ANTHROPIC_VERSION: &str = "2023-06-01";

fn text_block(t: OwnedValue) -> OwnedValue {
    Value::obj().with("type", "text".into()).with("text", t)
}

fn user_blocks(blocks: &[Value<'_>]) -> (Vec<OwnedValue>, Vec<OwnedValue>) {
    let mut results = Vec::new();
    let mut rest = Vec::new();
    for b in blocks {
        let ty = b.get("type").and_then(|t| t.as_str()).unwrap_or_default();
        match &*ty {
            "text" if b.get("text").is_some_and(|t| t.is_nonempty_str()) => {
                rest.push(text_block(b.get("text").unwrap().to_owned_value()));
            }
            "tool-result" => {
                let inner = b.get("content").and_then(|c| c.as_arr());
                let t = concat_text(inner.map_or(&[][..], |i| &i[..]), "text");
                let content = if t.is_empty() {
                    Value::str(NO_OUTPUT)
                } else {
                    Value::Str(t)
                };
                let mut r = Value::obj()
                    .with("type", "tool_result".into())
                    .with(
                        "tool_use_id",
                        b.get("toolCallId")
                            .map(|x| x.to_owned_value())
                            .unwrap_or(Value::str("")),
                    )
                    .with("content", content);
                if b.get("isError").is_some_and(|e| e.is_true()) {
                    r = r.with("is_error", true.into());
                }
                results.push(r);
            }
            _ => {}
        }
    }
    (results, rest)
}

fn assistant_blocks(blocks: &[Value<'_>]) -> Vec<OwnedValue> {
    let mut out = Vec::new();
    for b in blocks {
        let field = |k: &str| b.get(k).map_or(Value::str(""), |x| x.to_owned_value());
        let ty = b.get("type").and_then(|t| t.as_str()).unwrap_or_default();
        match &*ty {
            "reasoning" => {
                if let Some(sig) = b.get("signature").filter(|s| s.is_nonempty_str()) {
                    out.push(
                        Value::obj()
                            .with("type", "thinking".into())
                            .with("thinking", field("text"))
                            .with("signature", sig.to_owned_value()),
                    );
                }
            }
            "text" if b.get("text").is_some_and(|t| t.is_nonempty_str()) => {
                out.push(text_block(b.get("text").unwrap().to_owned_value()));
            }
            "tool-call" => {
                let args = b
                    .get("arguments")
                    .and_then(|a| a.as_str())
                    .unwrap_or_default();
                let input = Value::parse(&args)
                    .ok()
                    .filter(|v| v.is_obj())
                    .map(|v| v.into_owned())
                    .unwrap_or_else(Value::obj);
                out.push(
                    Value::obj()
                        .with("type", "tool_use".into())
                        .with("id", field("id"))
                        .with("name", field("name"))
                        .with("input", input),
                );
            }
            _ => {}
        }
    }
    out
}

/// DSH messages → Messages-protocol messages.
fn map_messages(messages: &[Value<'_>]) -> Result<Vec<OwnedValue>, ProviderError> {
    // (role, tool results, other blocks) per merged turn
    let mut turns: Vec<(String, Vec<OwnedValue>, Vec<OwnedValue>)> = Vec::new();
    static EMPTY: Vec<Value<'static>> = Vec::new();
    for m in messages {
        let blocks = m.get("content").and_then(|c| c.as_arr()).unwrap_or(&EMPTY);
        if super::has_image(blocks) {
            return Err(ProviderError::new(
                ErrorCode::UnsupportedContent,
                "Anthropic-compatible messages (text-only path) cannot send image content",
            ));
        }
        let role = match &*m.get("role").and_then(|r| r.as_str()).unwrap_or_default() {
            "assistant" => "assistant",
            _ => "user",
        };
        let (results, rest) = if role == "assistant" {
            (Vec::new(), assistant_blocks(blocks))
        } else {
            user_blocks(blocks)
        };
        if results.is_empty() && rest.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((r, res, oth)) if r == role => {
                res.extend(results);
                oth.extend(rest);
            }
            _ => turns.push((role.to_string(), results, rest)),
        }
    }
    Ok(turns
        .into_iter()
        .map(|(role, mut results, rest)| {
            results.extend(rest);
            Value::obj()
                .with("role", role.into())
                .with("content", Value::Arr(results))
        })
        .collect())
}

/// The request body: `{model, stream, messages, max_tokens, thinking,
/// output_config?, system?, tools?}`.
fn body(endpoint: &Endpoint, req: &CompletionRequest) -> Result<OwnedValue, ProviderError> {
    let mut b = Value::obj()
        .with("model", req.model.clone().into())
        .with("stream", true.into())
        .with("messages", Value::Arr(map_messages(&req.messages)?))
        .with("max_tokens", req.max_tokens.into());
    match endpoint.effort() {
        "off" | "none" | "disabled" => {
            b = b.with("thinking", Value::obj().with("type", "disabled".into()));
        }
        effort => {
            b = b
                .with("thinking", Value::obj().with("type", "enabled".into()))
                .with("output_config", Value::obj().with("effort", effort.into()));
        }
    }
    if let Some(s) = &req.system {
        b = b.with("system", s.clone());
    }
    if let Some(tools) = req
        .tools
        .as_ref()
        .and_then(|t| t.as_arr())
        .filter(|t| !t.is_empty())
    {
        let mapped = tools
            .iter()
            .map(|t| {
                let mut o = Value::obj();
                for (k, to) in [
                    ("name", "name"),
                    ("description", "description"),
                    ("parameters", "input_schema"),
                ] {
                    if let Some(v) = t.get(k) {
                        o = o.with(to, v.to_owned_value());
                    }
                }
                o
            })
            .collect();
        b = b.with("tools", Value::Arr(mapped));
    }
    Ok(b)
}

/// The complete HTTP request.
pub(crate) fn wire_request(
    endpoint: &Endpoint,
    req: &CompletionRequest,
) -> Result<WireRequest, ProviderError> {
    let mut headers = Vec::new();
    if !endpoint.api_key.is_empty() {
        headers.push((
            "x-api-key".to_string(),
            endpoint.api_key.expose().to_string(),
        ));
    }
    headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
    super::push_common_headers(&mut headers, endpoint, req);
    Ok(WireRequest {
        method: "POST",
        url: join_url(&endpoint.base_url, "/v1/messages"),
        headers,
        body: body(endpoint, req)?,
    })
}

/// Map a `stop_reason`.
fn map_stop(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("end_turn") | Some("stop_sequence") => Finish::Stop,
        Some("tool_use") => Finish::ToolCalls,
        Some("max_tokens") => Finish::MaxTokens,
        Some(other) => Finish::unknown(other),
    }
}

/// Translates the Messages SSE stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    asm: Assembler,
    opened: Vec<u64>,
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    stop: Option<String>,
}

impl Decoder {
    fn merge_usage(&mut self, u: &Value<'_>) {
        let n = |k: &str| u.get(k).and_then(|v| v.as_f64());
        self.input = n("input_tokens").or(self.input);
        self.output = n("output_tokens").or(self.output);
        self.cache_read = n("cache_read_input_tokens").or(self.cache_read);
        self.cache_write = n("cache_creation_input_tokens").or(self.cache_write);
    }

    fn usage(&self) -> Option<Usage> {
        if self.input.is_none() && self.output.is_none() {
            return None;
        }
        Some(Usage {
            input_tokens: self.input.unwrap_or(0.0),
            output_tokens: self.output.unwrap_or(0.0),
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens: None,
        })
    }
}

impl StreamDecoder for Decoder {
    fn label(&self) -> &'static str {
        "Anthropic-compatible"
    }

    fn end_marker(&self) -> &'static str {
        "message_stop"
    }

    fn event(&mut self, ev: &SseEvent) -> Result<bool, ProviderError> {
        let v = Value::parse(&ev.data).map_err(|_| malformed(&ev.data))?;
        let ty = v
            .get("type")
            .and_then(|t| t.as_str())
            .map(|t| t.into_owned())
            .or_else(|| ev.event.clone())
            .unwrap_or_default();
        let index = v.get("index").and_then(|i| i.as_count()).unwrap_or(0);
        match ty.as_str() {
            "message_start" => {
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    self.merge_usage(u);
                }
            }
            "content_block_start" => {
                let cb = v.get("content_block").cloned().unwrap_or(Value::Null);
                let text = |k: &str| cb.get(k).and_then(|x| x.as_str()).map(|x| x.into_owned());
                let kind = cb.get("type").and_then(|t| t.as_str()).unwrap_or_default();
                let block_type = match &*kind {
                    "text" => "text",
                    "thinking" => "reasoning",
                    "tool_use" => "tool-call",
                    _ => return Ok(false),
                };
                self.opened.push(index);
                self.asm.push(Chunk::BlockStart {
                    index,
                    block_type: block_type.into(),
                });
                match block_type {
                    "text" => self.asm.push(Chunk::TextDelta {
                        index,
                        text: units_of(cb.get("text")),
                    }),
                    "reasoning" => self.asm.push(Chunk::ReasoningDelta {
                        index,
                        text: units_of(cb.get("thinking")),
                    }),
                    _ => self.asm.push(Chunk::ToolCallDelta {
                        index,
                        id: text("id"),
                        name: text("name"),
                        arguments: Vec::new(),
                    }),
                }
            }
            "content_block_delta" => {
                if !self.opened.contains(&index) {
                    return Ok(false);
                }
                let d = v.get("delta").cloned().unwrap_or(Value::Null);
                let kind = d.get("type").and_then(|t| t.as_str()).unwrap_or_default();
                match &*kind {
                    "text_delta" => self.asm.push(Chunk::TextDelta {
                        index,
                        text: units_of(d.get("text")),
                    }),
                    "thinking_delta" => self.asm.push(Chunk::ReasoningDelta {
                        index,
                        text: units_of(d.get("thinking")),
                    }),
                    "input_json_delta" => self.asm.push(Chunk::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: units_of(d.get("partial_json")),
                    }),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(Value::Str(r)) = v.get("delta").and_then(|d| d.get("stop_reason")) {
                    self.stop = Some(r.to_lossy().into_owned());
                }
                if let Some(u) = v.get("usage") {
                    self.merge_usage(u);
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let e = ErrorBody::from_value(v.get("error").unwrap_or(&Value::Null));
                return Err(classify::stream_error(&e, true));
            }
            _ => {}
        }
        Ok(false)
    }

    fn http_error(&self, status: u16, body: &ErrorBody) -> ProviderError {
        classify::anthropic_http(status, body)
    }

    fn finish(mut self: Box<Self>) -> (Vec<OwnedValue>, Finish, Option<Usage>) {
        if let Some(u) = self.usage() {
            self.asm.push(Chunk::Usage(u));
        }
        let mut finish = map_stop(self.stop.as_deref());
        if finish == Finish::Stop && !self.asm.has_blocks() {
            finish = super::deepseek::empty_response();
        }
        self.asm.push(Chunk::Finish(finish));
        self.asm.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ApiKey, Protocol};

    fn run(events: &[&str]) -> Result<(Vec<OwnedValue>, Finish, Option<Usage>), ProviderError> {
        let mut d: Box<dyn StreamDecoder> = Box::new(Decoder::default());
        for e in events {
            if d.event(&SseEvent {
                event: None,
                data: e.to_string(),
            })? {
                return Ok(d.finish());
            }
        }
        Err(ProviderError::new(ErrorCode::StreamClosed, "x"))
    }

    #[test]
    fn stream_translation_and_usage() {
        let (blocks, finish, usage) = run(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":172,"cache_read_input_tokens":3328,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Sum"}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"read","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"p\":1}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":140}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(finish, Finish::ToolCalls);
        assert_eq!(
            blocks.iter().map(|b| b.to_json()).collect::<Vec<_>>(),
            vec![
                r#"{"type":"reasoning","text":"plan"}"#,
                r#"{"type":"text","text":"Sum"}"#,
                r#"{"type":"tool-call","id":"t1","name":"read","arguments":"{\"p\":1}"}"#,
            ]
        );
        assert_eq!(
            usage.unwrap().to_value().to_json(),
            r#"{"inputTokens":172,"outputTokens":140,"cacheReadTokens":3328}"#
        );
        assert_eq!(
            run(&[
                r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}"#,
                r#"{"type":"message_stop"}"#
            ])
            .unwrap()
            .1,
            Finish::MaxTokens
        );
        let e = run(&[
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ])
        .unwrap_err();
        assert_eq!(
            (e.code.to_string().as_str(), e.message.as_str()),
            ("SERVER", "Overloaded")
        );
    }

    #[test]
    fn request_shape() {
        let msgs: Vec<OwnedValue> = [
            r#"{"role":"user","content":[{"type":"text","text":"go"}]}"#,
            r#"{"role":"assistant","content":[{"type":"reasoning","text":"r"},{"type":"tool-call","id":"c","name":"read","arguments":"{\"p\":1}"}]}"#,
            r#"{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"out"}]}]}"#,
            r#"{"role":"user","content":[{"type":"text","text":"instr"}]}"#,
        ]
        .iter()
        .map(|s| Value::parse(s).unwrap().into_owned())
        .collect();
        let ep = Endpoint::new(Protocol::Anthropic, "http://h/anthropic", ApiKey::new("k"));
        let req = CompletionRequest {
            model: "m".into(),
            system: Some(Value::str("sys")),
            tools: Some(
                Value::parse(
                    r#"[{"name":"read","description":"d","parameters":{"type":"object"}}]"#,
                )
                .unwrap()
                .into_owned(),
            ),
            messages: msgs,
            max_tokens: 8192,
            session_id: "s".into(),
            compaction: true,
        };
        let w = wire_request(&ep, &req).unwrap();
        assert_eq!(w.url, "http://h/anthropic/v1/messages");
        assert_eq!(w.headers[0], ("x-api-key".to_string(), "k".to_string()));
        assert_eq!(
            w.body.to_json(),
            concat!(
                r#"{"model":"m","stream":true,"messages":["#,
                r#"{"role":"user","content":[{"type":"text","text":"go"}]},"#,
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"read","input":{"p":1}}]},"#,
                r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"out"},{"type":"text","text":"instr"}]}],"#,
                r#""max_tokens":8192,"thinking":{"type":"enabled"},"output_config":{"effort":"high"},"system":"sys","#,
                r#""tools":[{"name":"read","description":"d","input_schema":{"type":"object"}}]}"#
            )
        );
    }
}
