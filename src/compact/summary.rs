//! The summariser input (compaction §6.1), the reply rules (§6.2) and the
//! checkpoint framing with its shrink check (§5.3).

use crate::json::{JStr, OwnedValue, Value};
use crate::meter::estimate::price_message;
use crate::provider::ErrorCode;
use crate::provider::{Completion, CompletionRequest, Finish, Usage, has_image};

/// `COMPACTION_INSTRUCTION` **\[CONST\]**: 1802 UTF-16 units, no trailing newline.
pub(crate) const COMPACTION_INSTRUCTION: &str = include_str!("instruction.txt");

/// The checkpoint preamble **\[CONST\]** (300 UTF-16 units).
pub(crate) const PREAMBLE: &str = "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up context. Treat the captured context as established background and build on it without restating it. Continue the task directly from the messages that follow, without acknowledging this checkpoint.";

/// Opening tag **\[CONST\]**.
const OPEN_TAG: &str = "<compacted-summary>";
/// Closing tag **\[CONST\]**.
const CLOSE_TAG: &str = "</compacted-summary>";

/// The final user message of every summariser request.
pub(crate) fn instruction_message() -> OwnedValue {
    Value::obj()
        .with("role", "user".into())
        .with(
            "content",
            Value::Arr(vec![
                Value::obj()
                    .with("type", "text".into())
                    .with("text", COMPACTION_INSTRUCTION.into()),
            ]),
        )
        .with(
            "source",
            Value::obj()
                .with("kind", "plugin".into())
                .with("plugin", "dsh-compaction-basic".into()),
        )
}

/// Build the request: system and tools from the latest canonical header,
/// the shadowed messages (already derived, in surface order), then the
/// instruction.
pub(crate) fn build_request<'a>(
    header: Option<&Value<'_>>,
    shadowed_messages: Vec<Value<'a>>,
    model: &str,
    max_tokens: u64,
    session_id: &str,
) -> CompletionRequest<'a> {
    let mut messages = shadowed_messages;
    messages.push(instruction_message());
    CompletionRequest {
        model: model.to_string(),
        system: header
            .and_then(|h| h.get("system"))
            .filter(|s| s.is_nonempty_str())
            .map(|s| s.to_owned_value()),
        tools: header
            .and_then(|h| h.get("tools"))
            .filter(|t| t.as_arr().is_some_and(|a| !a.is_empty()))
            .map(|t| t.to_owned_value()),
        messages,
        max_tokens,
        session_id: session_id.to_string(),
        compaction: true,
    }
}

/// The shadowed messages as the request sends them: images already marked
/// `offloaded` become the harness's placeholder text (its request
/// projection), and with [`super::Images::Placeholder`] every other image
/// block too, nested ones included. Returns the messages and the number of
/// images replaced.
pub(crate) fn request_messages(
    messages: Vec<Value<'_>>,
    images: super::Images,
) -> (Vec<Value<'_>>, u64) {
    let mut replaced = 0u64;
    let out = messages
        .into_iter()
        .map(|m| {
            let m = if has_image(m.get("content").and_then(|c| c.as_arr()).map_or(&[], |c| c)) {
                crate::derive::request_projection(&m)
            } else {
                return m;
            };
            if images == super::Images::Refuse {
                return m;
            }
            let mut m = m;
            if let Some(c) = m.get("content").and_then(|c| c.as_arr()) {
                let c = placeholder_blocks(c, &mut replaced);
                m.set("content", Value::Arr(c));
            }
            m
        })
        .collect();
    (out, replaced)
}

/// Every image block (at any tool-result depth) as its placeholder text.
fn placeholder_blocks(blocks: &[Value<'_>], replaced: &mut u64) -> Vec<OwnedValue> {
    blocks
        .iter()
        .map(|b| {
            let ty = b.get("type");
            if ty.is_some_and(|t| t.is_str("image")) {
                *replaced += 1;
                Value::obj()
                    .with("type", "text".into())
                    .with("text", crate::derive::offloaded_image_text(b).into())
            } else if let Some(inner) = b.get("content").and_then(|c| c.as_arr()) {
                let mut nb = b.to_owned_value();
                nb.set("content", Value::Arr(placeholder_blocks(inner, replaced)));
                nb
            } else {
                b.to_owned_value()
            }
        })
        .collect()
}

/// The DSH heuristic price of a request's input: system, tools, every
/// message.
pub(crate) fn request_tokens(req: &CompletionRequest) -> u64 {
    crate::heuristic::system_tokens(req.system.as_ref())
        + crate::heuristic::tools_tokens(req.tools.as_ref())
        // A range is often most of a log: priced on every core.
        + crate::par::map_in_order(&req.messages, |m, _: &mut ()| price_message(m))
            .into_iter()
            .sum::<u64>()
}

/// A reply rejected by §6.2, with the text `compaction/end.error` records.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct SummaryError {
    /// DSH code (`MAX_TOKENS`, `UNSUPPORTED_CONTENT`, the finish failure's
    /// code, or `EMPTY_SUMMARY`).
    pub code: ErrorCode,
    /// The message.
    pub message: String,
}

/// What a successful reply gives the bracket.
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    /// The text blocks, in order (`compaction/summary.summary`).
    pub summary: Vec<OwnedValue>,
    /// Every assembled block (`rawOutput`).
    pub raw_output: Vec<OwnedValue>,
    /// The provider usage.
    pub usage: Option<Usage>,
}

/// JavaScript `String.prototype.trim() !== ""` (WhiteSpace and
/// LineTerminator, U+FEFF included).
fn js_has_non_whitespace(s: &JStr<'_>) -> bool {
    s.units().iter().any(|&u| {
        !matches!(
            u,
            0x09 | 0x0A | 0x0B | 0x0C | 0x0D | 0x20 | 0xA0 | 0x1680 | 0x2000
                ..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000 | 0xFEFF
        )
    })
}

/// §6.2: map the finish, refuse images, split summary from raw output,
/// require some text.
pub(crate) fn process_reply(c: Completion) -> Result<Summary, SummaryError> {
    match &c.finish {
        Finish::Error { message, code } => {
            return Err(SummaryError {
                code: code.clone(),
                message: message.clone(),
            });
        }
        Finish::Aborted => {
            return Err(SummaryError {
                code: ErrorCode::Aborted,
                message: "summarization was aborted".into(),
            });
        }
        Finish::MaxTokens => {
            return Err(SummaryError {
                code: ErrorCode::MaxTokens,
                message: "summarization truncated at the token cap (incomplete checkpoint)".into(),
            });
        }
        Finish::Stop | Finish::ToolCalls => {}
    }
    if has_image(&c.blocks) {
        return Err(SummaryError {
            code: ErrorCode::UnsupportedContent,
            message: "compaction summary cannot contain image output".into(),
        });
    }
    let summary: Vec<OwnedValue> = c
        .blocks
        .iter()
        .filter(|b| b.get("type").is_some_and(|t| t.is_str("text")))
        .cloned()
        .collect();
    let has_text = summary.iter().any(|b| {
        b.get("text")
            .and_then(|t| t.as_jstr())
            .is_some_and(js_has_non_whitespace)
    });
    if !has_text {
        return Err(SummaryError {
            code: ErrorCode::EmptySummary,
            message: "summarization produced no text summary content".into(),
        });
    }
    Ok(Summary {
        summary,
        raw_output: c.blocks,
        usage: c.usage,
    })
}

/// The checkpoint `content`: preamble + open tag, the summary blocks, the
/// close tag.
pub(crate) fn checkpoint_content(summary: &[OwnedValue]) -> Vec<OwnedValue> {
    let mut out = Vec::with_capacity(summary.len() + 2);
    out.push(
        Value::obj()
            .with("type", "text".into())
            .with("text", format!("{PREAMBLE}\n\n{OPEN_TAG}").into()),
    );
    out.extend(summary.iter().cloned());
    out.push(
        Value::obj()
            .with("type", "text".into())
            .with("text", CLOSE_TAG.into()),
    );
    out
}

/// The heuristic price of the framed checkpoint message.
pub(crate) fn framed_price(content: &[OwnedValue]) -> u64 {
    price_message(&Value::obj().with("content", Value::Arr(content.to_vec())))
}

/// The shrink check **\[CONST\]** message, or `None` when the checkpoint is
/// smaller than its source.
pub(crate) fn shrink_violation(framed: u64, shadowed_tokens: u64) -> Option<String> {
    (framed >= shadowed_tokens).then(|| {
        format!(
            "summary is not smaller than the shadowed content ({framed} estimated framed tokens >= {shadowed_tokens})"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_become_the_offload_placeholder_only_when_asked() {
        let m = Value::parse(
            r#"{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"shot"},{"type":"image","attachment":{"attachmentId":"sha256:ab","name":"a.png"}}]},{"type":"image","attachment":{"attachmentId":"sha256:cd"}}]}"#,
        )
        .unwrap()
        .into_owned();
        let plain = Value::parse(r#"{"role":"user","content":[{"type":"text","text":"x"}]}"#)
            .unwrap()
            .into_owned();
        let (kept, n) =
            request_messages(vec![m.clone(), plain.clone()], super::super::Images::Refuse);
        assert_eq!(n, 0);
        assert_eq!(kept[0].to_json(), m.to_json());
        let (sent, n) = request_messages(vec![m, plain.clone()], super::super::Images::Placeholder);
        assert_eq!(n, 2);
        let json = sent[0].to_json();
        assert!(!has_image(
            sent[0].get("content").unwrap().as_arr().unwrap()
        ));
        assert!(json.contains(r#"{"type":"text","text":"[image omitted to fit request image limits; \"a.png\" (sha256:ab). No local normalized image path"#), "{json}");
        assert!(
            json.contains("[image omitted to fit request image limits; sha256:cd. No local"),
            "{json}"
        );
        assert_eq!(sent[1].to_json(), plain.to_json());
        // Already offloaded images are sent as the placeholder in either mode.
        let off = Value::parse(r#"{"role":"user","content":[{"type":"image","offloaded":true,"attachment":{"attachmentId":"sha256:ef"}}]}"#)
            .unwrap()
            .into_owned();
        let (sent, _) = request_messages(vec![off], super::super::Images::Refuse);
        assert!(!has_image(
            sent[0].get("content").unwrap().as_arr().unwrap()
        ));
    }

    fn text(s: &str) -> OwnedValue {
        Value::obj()
            .with("type", "text".into())
            .with("text", s.to_string().into())
    }

    fn completion(blocks: Vec<OwnedValue>, finish: Finish) -> Completion {
        Completion {
            blocks,
            finish,
            usage: None,
            request_id: None,
            attempts: 1,
        }
    }

    #[test]
    fn constants() {
        assert_eq!(PREAMBLE.encode_utf16().count(), 300);
        assert_eq!(COMPACTION_INSTRUCTION.encode_utf16().count(), 1802);
        assert!(COMPACTION_INSTRUCTION.contains("for an empty section \u{2014} never drop"));
        let framing = checkpoint_content(&[]);
        assert_eq!(
            framing[0].get("text").unwrap().as_jstr().unwrap().len16(),
            321
        );
        // framing alone costs 98; one tiny block makes 103.
        assert_eq!(framed_price(&framing), 98);
        assert_eq!(framed_price(&checkpoint_content(&[text("ab")])), 103);
    }

    #[test]
    fn shrink_messages() {
        assert_eq!(
            shrink_violation(3102, 2379).unwrap(),
            "summary is not smaller than the shadowed content (3102 estimated framed tokens >= 2379)"
        );
        assert!(shrink_violation(202, 202).is_some());
        assert!(shrink_violation(207, 2379).is_none());
    }

    #[test]
    fn reply_rules() {
        let reasoning = Value::obj()
            .with("type", "reasoning".into())
            .with("text", "r".into());
        let call = Value::obj()
            .with("type", "tool-call".into())
            .with("id", "c".into())
            .with("name", "n".into())
            .with("arguments", "{}".into());
        let s = process_reply(completion(
            vec![reasoning.clone(), text("sum"), call.clone()],
            Finish::ToolCalls,
        ))
        .unwrap();
        assert_eq!(s.summary.len(), 1);
        assert_eq!(s.raw_output.len(), 3);
        let e = process_reply(completion(
            vec![reasoning.clone(), text(" \u{feff}\n")],
            Finish::Stop,
        ))
        .unwrap_err();
        assert_eq!(e.message, "summarization produced no text summary content");
        let e = process_reply(completion(vec![text("x")], Finish::MaxTokens)).unwrap_err();
        assert_eq!(
            (e.code.to_string().as_str(), e.message.as_str()),
            (
                "MAX_TOKENS",
                "summarization truncated at the token cap (incomplete checkpoint)"
            )
        );
        let img = Value::obj().with("type", "image".into());
        let e = process_reply(completion(vec![text("x"), img], Finish::Stop)).unwrap_err();
        assert_eq!(e.message, "compaction summary cannot contain image output");
        let e = process_reply(completion(
            vec![text("x")],
            Finish::Error {
                message: "model stopped: content_filter".into(),
                code: ErrorCode::ContentFilter,
            },
        ))
        .unwrap_err();
        assert_eq!(e.code, "CONTENT_FILTER");
    }
}
