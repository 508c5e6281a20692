//! DeepSeek chat completions, as the rc.8 `deepseek-official` adapter speaks
//! it (compaction §6.3–§6.5).
//!
//! Request: `POST {baseURL}/chat/completions` with a streaming body whose key
//! order and omissions are the reference's. Reply: SSE chunks translated into
//! assembler chunks (one reasoning block, one text block, one block per tool
//! call index, in first-seen order), usage mapped to disjoint counts, the
//! finish reason mapped, `[DONE]` required.

use super::ErrorCode;
use super::assemble::{Assembler, Chunk, Finish, units_of};
use super::classify::{self, ErrorBody};
use super::http::StreamDecoder;
use super::sse::SseEvent;
use super::{CompletionRequest, Endpoint, ProviderError, Usage, WireRequest, concat_text};
use crate::json::{OwnedValue, Value};

/// `(no output)` **\[CONST\]**: the content of a tool message with no text.
pub(crate) const NO_OUTPUT: &str = "(no output)";

fn unsupported(what: &str) -> ProviderError {
    ProviderError::new(
        ErrorCode::UnsupportedContent,
        format!("DeepSeek chat completions (text-only path) cannot send {what}"),
    )
}

/// The text-only message mapping: DSH messages → chat-completions messages.
fn map_messages(
    system: Option<&Value<'_>>,
    messages: &[Value<'_>],
) -> Result<Vec<OwnedValue>, ProviderError> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(s) = system {
        out.push(
            Value::obj()
                .with("role", "system".into())
                .with("content", s.to_owned_value()),
        );
    }
    static EMPTY: Vec<Value<'static>> = Vec::new();
    for m in messages {
        let blocks = m.get("content").and_then(|c| c.as_arr()).unwrap_or(&EMPTY);
        let role = m.get("role").and_then(|r| r.as_str()).unwrap_or_default();
        if super::has_image(blocks) {
            return Err(unsupported("image content"));
        }
        match &*role {
            "assistant" => {
                let mut v = Value::obj()
                    .with("role", "assistant".into())
                    .with("content", Value::Str(concat_text(blocks, "text")));
                let reasoning = concat_text(blocks, "reasoning");
                if !reasoning.is_empty() {
                    v = v.with("reasoning_content", Value::Str(reasoning));
                }
                let calls: Vec<OwnedValue> = blocks
                    .iter()
                    .filter(|b| b.get("type").is_some_and(|t| t.is_str("tool-call")))
                    .map(|b| {
                        let f = |k: &str| {
                            b.get(k)
                                .map(|x| x.to_owned_value())
                                .unwrap_or(Value::str(""))
                        };
                        Value::obj()
                            .with("id", f("id"))
                            .with("type", "function".into())
                            .with(
                                "function",
                                Value::obj()
                                    .with("name", f("name"))
                                    .with("arguments", f("arguments")),
                            )
                    })
                    .collect();
                if !calls.is_empty() {
                    v = v.with("tool_calls", Value::Arr(calls));
                }
                out.push(v);
            }
            "system" => out.push(
                Value::obj()
                    .with("role", "system".into())
                    .with("content", Value::Str(concat_text(blocks, "text"))),
            ),
            _ => {
                let text = concat_text(blocks, "text");
                let results: Vec<&Value<'_>> = blocks
                    .iter()
                    .filter(|b| b.get("type").is_some_and(|t| t.is_str("tool-result")))
                    .collect();
                if !text.is_empty() || results.is_empty() {
                    out.push(
                        Value::obj()
                            .with("role", "user".into())
                            .with("content", Value::Str(text)),
                    );
                }
                for r in results {
                    let inner = r.get("content").and_then(|c| c.as_arr()).unwrap_or(&EMPTY);
                    let t = concat_text(inner, "text");
                    let content = if t.is_empty() {
                        Value::str(NO_OUTPUT)
                    } else {
                        Value::Str(t)
                    };
                    out.push(
                        Value::obj()
                            .with("role", "tool".into())
                            .with(
                                "tool_call_id",
                                r.get("toolCallId")
                                    .map(|x| x.to_owned_value())
                                    .unwrap_or(Value::str("")),
                            )
                            .with("content", content),
                    );
                }
            }
        }
    }
    Ok(out)
}

/// `[{type:"function", function:{name, description, parameters}}]`.
fn map_tools(tools: &Value<'_>) -> Option<OwnedValue> {
    let arr = tools.as_arr()?;
    if arr.is_empty() {
        return None;
    }
    let mapped = arr
        .iter()
        .map(|t| {
            let mut f = Value::obj();
            for k in ["name", "description", "parameters"] {
                if let Some(v) = t.get(k) {
                    f = f.with(k, v.to_owned_value());
                }
            }
            Value::obj()
                .with("type", "function".into())
                .with("function", f)
        })
        .collect();
    Some(Value::Arr(mapped))
}

/// The request body, in the reference's key order.
fn body(endpoint: &Endpoint, req: &CompletionRequest) -> Result<OwnedValue, ProviderError> {
    let messages = map_messages(req.system.as_ref(), &req.messages)?;
    let mut b = Value::obj()
        .with("model", req.model.clone().into())
        .with("messages", Value::Arr(messages))
        .with("stream", true.into())
        .with(
            "stream_options",
            Value::obj().with("include_usage", true.into()),
        );
    match endpoint.effort() {
        "off" | "none" | "disabled" => {
            b = b.with("thinking", Value::obj().with("type", "disabled".into()));
        }
        effort => {
            b = b
                .with("thinking", Value::obj().with("type", "enabled".into()))
                .with("reasoning_effort", effort.into());
        }
    }
    if let Some(t) = req.tools.as_ref().and_then(map_tools) {
        b = b.with("tools", t);
    }
    Ok(b.with("max_tokens", req.max_tokens.into()))
}

/// Join a base URL and a path.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}{}", base.trim_end_matches('/'), path)
}

/// The complete HTTP request.
pub(crate) fn wire_request(
    endpoint: &Endpoint,
    req: &CompletionRequest,
) -> Result<WireRequest, ProviderError> {
    let mut headers = Vec::new();
    if !endpoint.api_key.is_empty() {
        headers.push((
            "authorization".to_string(),
            format!("Bearer {}", endpoint.api_key.expose()),
        ));
    }
    super::push_common_headers(&mut headers, endpoint, req);
    Ok(WireRequest {
        method: "POST",
        url: join_url(&endpoint.base_url, "/chat/completions"),
        headers,
        body: body(endpoint, req)?,
    })
}

/// `mapUsage`: DeepSeek usage → disjoint counts (§6.4).
fn map_usage(u: &Value<'_>) -> Usage {
    let num = |v: Option<&Value<'_>>| v.and_then(|x| x.as_f64());
    let cache_read = num(u
        .get("prompt_tokens_details")
        .and_then(|d| d.get("cached_tokens")))
    .or_else(|| num(u.get("prompt_cache_hit_tokens")));
    let prompt = num(u.get("prompt_tokens")).unwrap_or(0.0);
    Usage {
        input_tokens: prompt - cache_read.unwrap_or(0.0),
        output_tokens: num(u.get("completion_tokens")).unwrap_or(0.0),
        cache_read_tokens: cache_read,
        cache_write_tokens: None,
        reasoning_tokens: num(u
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens"))),
    }
}

/// Map a `finish_reason` (§6.4).
fn map_finish(reason: Option<&str>) -> Finish {
    match reason {
        None | Some("stop") => Finish::Stop,
        Some("tool_calls") => Finish::ToolCalls,
        Some("length") => Finish::MaxTokens,
        Some(other) => Finish::unknown(other),
    }
}

/// Translates the DeepSeek SSE stream.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    asm: Assembler,
    next: u64,
    reasoning: Option<u64>,
    text: Option<u64>,
    tools: Vec<(String, u64)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl Decoder {
    fn open(&mut self, slot: Option<u64>, block_type: &str) -> u64 {
        match slot {
            Some(i) => i,
            None => {
                let i = self.next;
                self.next += 1;
                self.asm.push(Chunk::BlockStart {
                    index: i,
                    block_type: block_type.to_string(),
                });
                i
            }
        }
    }

    fn chunk(&mut self, v: &Value<'_>) -> Result<(), ProviderError> {
        if let Some(e) = v.get("error").filter(|e| e.is_obj()) {
            return Err(classify::stream_error(&ErrorBody::from_value(e), false));
        }
        if let Some(choices) = v.get("choices").and_then(|c| c.as_arr()) {
            for c in choices {
                if let Some(d) = c.get("delta") {
                    if let Some(Value::Str(s)) = d.get("reasoning_content")
                        && !s.is_empty()
                    {
                        let i = self.open(self.reasoning, "reasoning");
                        self.reasoning = Some(i);
                        self.asm.push(Chunk::ReasoningDelta {
                            index: i,
                            text: s.units(),
                        });
                    }
                    if let Some(Value::Str(s)) = d.get("content")
                        && !s.is_empty()
                    {
                        let i = self.open(self.text, "text");
                        self.text = Some(i);
                        self.asm.push(Chunk::TextDelta {
                            index: i,
                            text: s.units(),
                        });
                    }
                    if let Some(calls) = d.get("tool_calls").and_then(|t| t.as_arr()) {
                        for tc in calls {
                            let key = tc.get("index").map(|x| x.to_json()).unwrap_or_default();
                            let known = self.tools.iter().find(|(k, _)| *k == key).map(|x| x.1);
                            let i = self.open(known, "tool-call");
                            if known.is_none() {
                                self.tools.push((key, i));
                            }
                            let f = tc.get("function");
                            let s = |v: Option<&Value<'_>>| {
                                v.and_then(|x| x.as_jstr())
                                    .map(|x| x.to_lossy().into_owned())
                            };
                            self.asm.push(Chunk::ToolCallDelta {
                                index: i,
                                id: s(tc.get("id")),
                                name: s(f.and_then(|f| f.get("name"))),
                                arguments: units_of(f.and_then(|f| f.get("arguments"))),
                            });
                        }
                    }
                }
                if let Some(Value::Str(r)) = c.get("finish_reason") {
                    self.finish_reason = Some(r.to_lossy().into_owned());
                }
            }
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_obj()) {
            self.usage = Some(map_usage(u));
        }
        Ok(())
    }
}

impl StreamDecoder for Decoder {
    fn label(&self) -> &'static str {
        "DeepSeek"
    }

    fn end_marker(&self) -> &'static str {
        "[DONE]"
    }

    fn event(&mut self, ev: &SseEvent) -> Result<bool, ProviderError> {
        if ev.data == "[DONE]" {
            return Ok(true);
        }
        let v = Value::parse(&ev.data).map_err(|_| malformed(&ev.data))?;
        self.chunk(&v)?;
        Ok(false)
    }

    fn http_error(&self, status: u16, body: &ErrorBody) -> ProviderError {
        classify::deepseek_http(status, body)
    }

    fn finish(mut self: Box<Self>) -> (Vec<OwnedValue>, Finish, Option<Usage>) {
        for i in 0..self.next {
            self.asm.push(Chunk::BlockEnd {
                index: i,
                block: None,
            });
        }
        if let Some(u) = self.usage.take() {
            self.asm.push(Chunk::Usage(u));
        }
        let mut finish = map_finish(self.finish_reason.as_deref());
        if finish == Finish::Stop && !self.asm.has_blocks() {
            finish = empty_response();
        }
        self.asm.push(Chunk::Finish(finish));
        self.asm.finish()
    }
}

/// `EMPTY_RESPONSE`: a completed response with no content.
pub(crate) fn empty_response() -> Finish {
    Finish::Error {
        message: "model returned a completed response with no content".into(),
        code: ErrorCode::EmptyResponse,
    }
}

/// `MALFORMED_RESPONSE` with the first 120 characters of the payload.
pub(crate) fn malformed(data: &str) -> ProviderError {
    let units: Vec<u16> = data.encode_utf16().take(120).collect();
    ProviderError::new(
        ErrorCode::MalformedResponse,
        format!(
            "malformed SSE payload: {}",
            String::from_utf16_lossy(&units)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ApiKey, Protocol};

    fn decode(lines: &[&str]) -> Result<(Vec<OwnedValue>, Finish, Option<Usage>), ProviderError> {
        let mut d: Box<dyn StreamDecoder> = Box::new(Decoder::default());
        for l in lines {
            let ev = SseEvent {
                event: None,
                data: l.to_string(),
            };
            if d.event(&ev)? {
                return Ok(d.finish());
            }
        }
        Err(ProviderError::new(ErrorCode::StreamClosed, "no done"))
    }

    #[test]
    fn worked_example_reply() {
        let (blocks, finish, usage) = decode(&[
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Condense steps 1-2."},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"A\n- b"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"c"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":3500,"completion_tokens":140,"prompt_cache_hit_tokens":3328,"prompt_cache_miss_tokens":172,"completion_tokens_details":{"reasoning_tokens":6}}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(finish, Finish::Stop);
        assert_eq!(
            blocks.iter().map(|b| b.to_json()).collect::<Vec<_>>(),
            vec![
                r#"{"type":"reasoning","text":"Condense steps 1-2."}"#,
                r#"{"type":"text","text":"A\n- bc"}"#
            ]
        );
        assert_eq!(
            usage.unwrap().to_value().to_json(),
            r#"{"inputTokens":172,"outputTokens":140,"cacheReadTokens":3328,"reasoningTokens":6}"#
        );
    }

    #[test]
    fn usage_prefers_cached_tokens_and_last_wins() {
        let u = map_usage(
            &Value::parse(r#"{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":60},"prompt_cache_hit_tokens":10}"#).unwrap(),
        );
        assert_eq!(u.input_tokens, 40.0);
        assert_eq!(u.cache_read_tokens, Some(60.0));
        let u = map_usage(&Value::parse(r#"{"prompt_tokens":100,"completion_tokens":5}"#).unwrap());
        assert_eq!(
            u.to_value().to_json(),
            r#"{"inputTokens":100,"outputTokens":5}"#
        );
        let (_, _, usage) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(usage.unwrap().input_tokens, 9.0);
    }

    #[test]
    fn finishes_and_errors() {
        let (_, f, _) = decode(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(f, Finish::MaxTokens);
        let (_, f, _) = decode(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"content_filter"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(
            f,
            Finish::Error {
                message: "model stopped: content_filter".into(),
                code: ErrorCode::ContentFilter
            }
        );
        let (_, f, _) = decode(&[
            r#"{"choices":[{"delta":{"content":""},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(f, empty_response());
        let e = decode(&["{not json"]).unwrap_err();
        assert_eq!(e.code, "MALFORMED_RESPONSE");
        assert_eq!(e.message, "malformed SSE payload: {not json");
        let long = "x".repeat(300);
        assert_eq!(
            decode(&[&long]).unwrap_err().message.len(),
            "malformed SSE payload: ".len() + 120
        );
        let e = decode(&[
            r#"{"error":{"message":"This model's maximum context length is 10 tokens"}}"#,
        ])
        .unwrap_err();
        assert_eq!(e.code, "CONTEXT_WINDOW_EXCEEDED");
    }

    #[test]
    fn tool_calls_by_index() {
        let (blocks, f, _) = decode(&[
            r#"{"choices":[{"delta":{"content":"sum","tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}},{"index":1,"id":"c2","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(f, Finish::ToolCalls);
        assert_eq!(
            blocks.iter().map(|b| b.to_json()).collect::<Vec<_>>(),
            vec![
                r#"{"type":"text","text":"sum"}"#,
                r#"{"type":"tool-call","id":"c1","name":"read","arguments":"{\"a\":1}"}"#,
                r#"{"type":"tool-call","id":"c2","name":"ls","arguments":"{}"}"#,
            ]
        );
    }

    #[test]
    fn message_mapping() {
        let msgs: Vec<OwnedValue> = [
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
            r#"{"role":"assistant","content":[{"type":"reasoning","text":"r"},{"type":"tool-call","id":"c","name":"n","arguments":"{}"}]}"#,
            r#"{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[]}]}"#,
            r#"{"role":"user","content":[{"type":"tool-result","toolCallId":"d","content":[{"type":"text","text":"x"}]},{"type":"text","text":"t"}]}"#,
        ]
        .iter()
        .map(|s| Value::parse(s).unwrap().into_owned())
        .collect();
        let out = map_messages(Some(&Value::str("sys")), &msgs).unwrap();
        assert_eq!(
            Value::Arr(out).to_json(),
            concat!(
                r#"[{"role":"system","content":"sys"},{"role":"user","content":"ab"},"#,
                r#"{"role":"assistant","content":"","reasoning_content":"r","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]},"#,
                r#"{"role":"tool","tool_call_id":"c","content":"(no output)"},"#,
                r#"{"role":"user","content":"t"},{"role":"tool","tool_call_id":"d","content":"x"}]"#
            )
        );
        let img = Value::parse(r#"{"role":"user","content":[{"type":"image","attachment":{}}]}"#)
            .unwrap()
            .into_owned();
        assert_eq!(
            map_messages(None, &[img]).unwrap_err().code,
            "UNSUPPORTED_CONTENT"
        );
    }

    #[test]
    fn effort_off_disables_thinking() {
        let mut ep = Endpoint::new(Protocol::DeepSeek, "http://h/", ApiKey::new("k"));
        ep.reasoning_effort = Some("off".into());
        let req = CompletionRequest {
            model: "m".into(),
            system: None,
            tools: None,
            messages: vec![],
            max_tokens: 5,
            session_id: "s".into(),
            compaction: true,
        };
        let w = wire_request(&ep, &req).unwrap();
        assert_eq!(w.url, "http://h/chat/completions");
        assert_eq!(
            w.body.to_json(),
            r#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true},"thinking":{"type":"disabled"},"max_tokens":5}"#
        );
        assert!(
            w.headers
                .iter()
                .any(|(k, v)| k == "x-deepseek-harness-compact" && v == "1")
        );
    }
}
