//! DeepSeek's V4 chat encoding: the request as the model reads it, so that a
//! count is the provider's prompt size and not the sum of the texts.
//!
//! Two steps, each from a published source:
//!
//! 1. **DSH's wire request** (`@deepseek-ai/dsh-llm-deepseek`,
//!    `serialize.ts`): the header's `system` first; a user message sends its
//!    text blocks joined, then each tool result as a `tool` message whose
//!    content is its text blocks joined, or `(no output)`; an assistant
//!    message sends its text as `content`, its tool calls, and its reasoning
//!    as `reasoning_content` **only on tool-call turns**. Other blocks
//!    (images) are not sent.
//! 2. **DeepSeek's rendering** (`encoding_dsv4.py` of DeepSeek-V4, thinking
//!    mode): `<｜begin▁of▁sentence｜>`, the system prompt, then
//!    `\n\n## Tools …` with one JSON line per tool (Python's `json.dumps`);
//!    consecutive user and tool messages merge into one `<｜User｜>` message
//!    whose parts are joined by `\n\n`, a tool result as
//!    `<tool_result>…</tool_result>`; a user message before an assistant
//!    one, and the last one (the generation prompt), is followed by
//!    `<｜Assistant｜><think>`; an assistant message is its reasoning,
//!    `</think>`, its text, its tool calls as a DSML block
//!    (`\n\n<｜DSML｜tool_calls>` with one `invoke` per call and one
//!    `parameter` per argument, a string raw with `string="true"`, anything
//!    else as JSON with `string="false"`), and `<｜end▁of▁sentence｜>`. A
//!    request with tools keeps every reasoning it carries (`drop_thinking`
//!    is off when tools are present, and DSH's requests always carry them).
//!
//! Checked against DeepSeek's own usage reports in the recorded logs: the
//! growth between consecutive requests is exact wherever the log holds what
//! was sent (see `docs/tokenizers.md` for where it does not).
//!
//! Each surface node is counted as its part of the rendering (a user
//! message that continues a merged one counts its `\n\n` join; the first of
//! a run counts `<｜User｜>` and the `<｜Assistant｜><think>` that ends the
//! run), so nodes add up to the request; the pieces around a join are
//! counted as the whole text would be. Special tokens count one each; text
//! that looks like one is text.

use crate::json::Value;

/// One piece of a rendering.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// A special token (one token).
    Special,
    /// Text, tokenized on its own (special tokens stand on both sides).
    Text(String),
    /// `text` continuing a chunk that ended with the piece `context`:
    /// its tokens are those of `context + text` less those of `context`.
    Joined { context: String, text: String },
}

const BOS: &str = "<｜begin▁of▁sentence｜>";
const EOS: &str = "<｜end▁of▁sentence｜>";
const USER: &str = "<｜User｜>";
const ASSISTANT: &str = "<｜Assistant｜>";
const THINK: &str = "<think>";
const THINK_END: &str = "</think>";
const DSML: &str = "｜DSML｜";

/// The special tokens the encoding writes, as they stand in its templates.
const SPECIALS: [&str; 7] = [BOS, EOS, USER, ASSISTANT, THINK, THINK_END, DSML];

/// What the rendering ended with so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Prev {
    #[default]
    Nothing,
    System,
    /// A user or tool message: the next one merges into it.
    User,
    Assistant,
}

/// The rendering's state between messages.
#[derive(Debug, Default)]
pub(crate) struct Chat {
    prev: Prev,
    /// The text the last user message ended with (the last piece of which
    /// a merged one's join is tokenized after).
    tail: String,
}

/// Builds parts, merging adjacent text.
#[derive(Default)]
struct Parts(Vec<Part>);

impl Parts {
    fn special(&mut self) {
        self.0.push(Part::Special);
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(Part::Text(t)) | Some(Part::Joined { text: t, .. }) => t.push_str(s),
            _ => self.0.push(Part::Text(s.to_string())),
        }
    }

    /// Template text in which the encoding's special tokens stand as such.
    fn template(&mut self, mut s: &str) {
        while !s.is_empty() {
            let next = SPECIALS
                .iter()
                .filter_map(|sp| s.find(sp).map(|i| (i, sp.len())))
                .min();
            match next {
                Some((i, len)) => {
                    self.text(&s[..i]);
                    self.special();
                    s = &s[i + len..];
                }
                None => {
                    self.text(s);
                    return;
                }
            }
        }
    }
}

/// The text blocks of `content`, joined (DSH's `flattenText`).
fn flatten(content: Option<&Value<'_>>) -> String {
    let mut s = String::new();
    for b in content.and_then(|c| c.as_arr()).into_iter().flatten() {
        if b.get("type").is_some_and(|t| t.is_str("text"))
            && let Some(Value::Str(t)) = b.get("text")
        {
            s.push_str(&t.to_lossy());
        }
    }
    s
}

fn str_of(v: Option<&Value<'_>>) -> String {
    match v {
        Some(Value::Str(s)) => s.to_lossy().into_owned(),
        _ => String::new(),
    }
}

impl Chat {
    /// The system prompt: the start of the request and the prompt.
    pub(crate) fn system(&mut self, system: &str) -> Vec<Part> {
        let mut p = Parts::default();
        p.special();
        p.text(system);
        self.prev = Prev::System;
        self.tail.clear();
        p.0
    }

    /// The tool definitions, after the system prompt (`tools` is the
    /// header's list of `{name, description, parameters}`).
    pub(crate) fn tools(
        &mut self,
        system: &str,
        tools: &Value<'_>,
        mut last: impl FnMut(&str) -> String,
    ) -> Vec<Part> {
        let Some(list) = tools.as_arr().filter(|a| !a.is_empty()) else {
            return Vec::new();
        };
        let schemas: Vec<String> = list
            .iter()
            .map(|t| {
                let mut f = String::from("{");
                let mut first = true;
                for key in ["name", "description", "parameters"] {
                    if let Some(v) = t.get(key) {
                        if !first {
                            f.push_str(", ");
                        }
                        first = false;
                        py_json_str(key, &mut f);
                        f.push_str(": ");
                        py_json(v, &mut f);
                    }
                }
                f.push('}');
                f
            })
            .collect();
        let mut p = Parts(vec![Part::Joined {
            context: last(system),
            text: String::new(),
        }]);
        p.text("\n\n");
        p.template(&TOOLS.replace("{tool_schemas}", &schemas.join("\n")));
        self.prev = Prev::System;
        p.0
    }

    /// One derived message's part of the request. `last` gives the last
    /// piece of a text (the tokenizer's pre-tokenizer).
    pub(crate) fn message(&mut self, m: &Value<'_>, last: impl FnMut(&str) -> String) -> Vec<Part> {
        let role = m.get("role").and_then(|r| r.as_str());
        match role.as_deref() {
            Some("assistant") => self.assistant(m),
            Some("system") => {
                let mut p = Parts::default();
                p.text(&flatten(m.get("content")));
                self.prev = Prev::System;
                p.0
            }
            _ => self.user(m, last),
        }
    }

    fn user(&mut self, m: &Value<'_>, mut last: impl FnMut(&str) -> String) -> Vec<Part> {
        let content = m.get("content");
        let blocks = content.and_then(|c| c.as_arr());
        let results: Vec<&Value<'_>> = blocks
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").is_some_and(|t| t.is_str("tool-result")))
            .collect();
        let text = flatten(content);
        let mut parts: Vec<String> = Vec::new();
        if !text.is_empty() || results.is_empty() {
            parts.push(text);
        }
        for r in results {
            let mut out = flatten(r.get("content"));
            if out.is_empty() {
                out = "(no output)".into();
            }
            parts.push(format!("<tool_result>{out}</tool_result>"));
        }
        let mut p = Parts::default();
        let joined = parts.join("\n\n");
        if self.prev == Prev::User {
            p.0.push(Part::Joined {
                context: last(&std::mem::take(&mut self.tail)),
                text: format!("\n\n{joined}"),
            });
        } else {
            p.special();
            p.text(&joined);
            // `<｜Assistant｜><think>` ends the run: before the assistant
            // message that answers it, or as the generation prompt.
            p.special();
            p.special();
        }
        // The text this message ends with: its last piece is the context of
        // a join, should the next message continue the run.
        self.tail = match p.0.iter().rev().find(|x| !matches!(x, Part::Special)) {
            Some(Part::Joined { context, text }) => format!("{context}{text}"),
            Some(Part::Text(t)) => t.clone(),
            _ => String::new(),
        };
        self.prev = Prev::User;
        p.0
    }

    fn assistant(&mut self, m: &Value<'_>) -> Vec<Part> {
        let blocks: Vec<&Value<'_>> = m
            .get("content")
            .and_then(|c| c.as_arr())
            .into_iter()
            .flatten()
            .collect();
        let is = |b: &&Value<'_>, t: &str| b.get("type").is_some_and(|x| x.is_str(t));
        let calls: Vec<&Value<'_>> = blocks
            .iter()
            .copied()
            .filter(|b| is(b, "tool-call"))
            .collect();
        let reasoning: String = blocks
            .iter()
            .filter(|b| is(b, "reasoning"))
            .map(|b| str_of(b.get("text")))
            .collect();
        let mut p = Parts::default();
        if !calls.is_empty() {
            p.text(&reasoning);
        }
        p.special(); // </think>
        p.text(&flatten(m.get("content")));
        if !calls.is_empty() {
            p.text("\n\n<");
            p.special();
            p.text("tool_calls>\n");
            for (i, c) in calls.iter().enumerate() {
                if i > 0 {
                    p.text("\n");
                }
                p.text("<");
                p.special();
                p.text(&format!("invoke name=\"{}\">\n", str_of(c.get("name"))));
                dsml_arguments(&str_of(c.get("arguments")), &mut p);
                p.text("\n</");
                p.special();
                p.text("invoke>");
            }
            p.text("\n</");
            p.special();
            p.text("tool_calls>");
        }
        p.special(); // <｜end▁of▁sentence｜>
        self.prev = Prev::Assistant;
        self.tail.clear();
        p.0
    }
}

/// Whether DeepSeek reads assistant message `m` back, in later requests,
/// as the model generated it. Not when it carries reasoning but no tool
/// call: that reasoning is not in the history (DSH sent it only on
/// tool-call turns until 2026-08-19, and DeepSeek's thinking-mode guide
/// ignores it elsewhere), while the provider persisted the output with it,
/// so the output-end prefix unit of the request that produced `m` can never
/// be matched (docs/tokenizers.md, "Against DeepSeek's own reports").
pub(crate) fn resent_as_generated(m: &Value<'_>) -> bool {
    let blocks = m.get("content").and_then(|c| c.as_arr());
    let is = |b: &Value<'_>, t: &str| b.get("type").is_some_and(|x| x.is_str(t));
    let (mut reasoning, mut calls) = (false, false);
    for b in blocks.into_iter().flatten() {
        calls |= is(b, "tool-call");
        reasoning |=
            is(b, "reasoning") && matches!(b.get("text"), Some(Value::Str(t)) if !t.is_empty());
    }
    calls || !reasoning
}

/// `encode_arguments_to_dsml`: one `parameter` per key of the arguments
/// object (a text that is no JSON object is one `arguments` string).
fn dsml_arguments(arguments: &str, p: &mut Parts) {
    let parsed = Value::parse(arguments).ok();
    let pairs: Vec<(String, Option<&Value<'_>>)> = match &parsed {
        Some(Value::Obj(o)) => o
            .iter()
            .map(|(k, v)| (k.to_lossy().into_owned(), Some(v)))
            .collect(),
        _ => vec![("arguments".to_string(), None)],
    };
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            p.text("\n");
        }
        let (is_str, value) = match v {
            None => ("true", arguments.to_string()),
            Some(Value::Str(s)) => ("true", s.to_lossy().into_owned()),
            Some(v) => {
                let mut s = String::new();
                py_json(v, &mut s);
                ("false", s)
            }
        };
        p.text("<");
        p.special();
        p.text(&format!(
            "parameter name=\"{k}\" string=\"{is_str}\">{value}</"
        ));
        p.special();
        p.text("parameter>");
    }
}

/// Python's `json.dumps(v, ensure_ascii=False)`: `", "` and `": "` between
/// items, non-ASCII text as it is, whole numbers without a fraction.
fn py_json(v: &Value<'_>, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Num(n) => {
            if n.fract() == 0.0 && n.abs() < 1e16 {
                out.push_str(&format!("{}", *n as i64));
            } else {
                out.push_str(&Value::Num(*n).to_json());
            }
        }
        Value::Str(s) => py_json_str(&s.to_lossy(), out),
        Value::Arr(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_json(x, out);
            }
            out.push(']');
        }
        Value::Obj(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_json_str(&k.to_lossy(), out);
                out.push_str(": ");
                py_json(x, out);
            }
            out.push('}');
        }
    }
}

fn py_json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `TOOLS_TEMPLATE` of `encoding_dsv4.py`, its tokens filled in.
const TOOLS: &str = "## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:

<｜DSML｜tool_calls>
<｜DSML｜invoke name=\"$TOOL_NAME\">
<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>
...
</｜DSML｜invoke>
<｜DSML｜invoke name=\"$TOOL_NAME2\">
...
</｜DSML｜invoke>
</｜DSML｜tool_calls>

String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.

If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.

Otherwise, output directly after </think> with tool calls or final response.

### Available Tool Schemas

{tool_schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(parts: &[Part]) -> String {
        parts
            .iter()
            .map(|p| match p {
                Part::Special => "§".to_string(),
                Part::Text(t) => t.clone(),
                Part::Joined { context, text } => format!("[{context}]{text}"),
            })
            .collect()
    }

    #[test]
    fn a_tool_turn_renders_as_the_encoding_does() {
        let mut chat = Chat::default();
        let last = |s: &str| s.chars().last().map(String::from).unwrap_or_default();
        assert_eq!(texts(&chat.system("sys")), "§sys");
        let user =
            Value::parse(r#"{"role":"user","content":[{"type":"text","text":"hi"}]}"#).unwrap();
        assert_eq!(texts(&chat.message(&user, last)), "§hi§§");
        let a = Value::parse(
            r#"{"role":"assistant","content":[{"type":"reasoning","text":"R"},{"type":"tool-call","id":"c","name":"bash","arguments":"{\"command\":\"ls\",\"n\":[1,2.5]}"}]}"#,
        )
        .unwrap();
        assert_eq!(
            texts(&chat.message(&a, last)),
            "R§\n\n<§tool_calls>\n<§invoke name=\"bash\">\n<§parameter name=\"command\" string=\"true\">ls</§parameter>\n<§parameter name=\"n\" string=\"false\">[1, 2.5]</§parameter>\n</§invoke>\n</§tool_calls>§"
        );
        let r = Value::parse(
            r#"{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[]}]}"#,
        )
        .unwrap();
        assert_eq!(
            texts(&chat.message(&r, last)),
            "§<tool_result>(no output)</tool_result>§§"
        );
        let u2 =
            Value::parse(r#"{"role":"user","content":[{"type":"text","text":"more"}]}"#).unwrap();
        assert_eq!(texts(&chat.message(&u2, last)), "[>]\n\nmore");
        // Reasoning without a tool call is not sent.
        let a2 = Value::parse(
            r#"{"role":"assistant","content":[{"type":"reasoning","text":"R"},{"type":"text","text":"done"}]}"#,
        )
        .unwrap();
        assert_eq!(texts(&chat.message(&a2, last)), "§done§");
    }
}
