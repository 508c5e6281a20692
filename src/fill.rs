//! Where the tokens go: the surface broken down by what fills it.
//!
//! The surface's price (`surfaceTokens`, the sum of its nodes' heuristic
//! prices) is split by what each priced part of a node is, with DSH's own
//! per-block prices (compaction §1.2): a node's price is the sum of its
//! blocks' prices plus 4 for its role, so every token lands in exactly one
//! row and the rows add up to the surface's tokens exactly.
//!
//! * **conversation**: the user's own messages (`user`), other injected
//!   user-role messages such as goal rounds or hook context (`context`), and
//!   the assistant's text (`assistant`); each message's role overhead goes
//!   with it;
//! * **summaries**: compaction checkpoints (the `compact` plugin's
//!   replacement messages);
//! * **reasoning**: the assistant's reasoning blocks;
//! * **tool calls** and **tool results**, by tool name (the `tool/call`
//!   that started the call, else the assistant's `tool-call` block with
//!   that id), with the largest results and their seqs; a result's whole
//!   node counts for its tool, images included;
//! * **system**: a generation-3 `system/message` node;
//! * **other**: blocks of no kind above (images and plugin blocks inside
//!   user or assistant messages).
//!
//! A node whose recorded price differs from the sum of its blocks (a later
//! generation's image pricing) keeps the difference in [`Fill::adjustment`]
//! and is counted in [`Fill::adjusted_nodes`]; on generation-0 logs there
//! is none.
//!
//! ```
//! let src = dsh::LogSource::File("samples/coding-session.jsonl".into());
//! let (log, fill) = dsh::fill::measure(&src, &dsh::LoadOptions::default())?;
//! assert_eq!(fill.total(), log.surface.tokens);
//! for t in &fill.tools {
//!     println!("{}: {} result tokens", t.name, t.result_tokens);
//! }
//! # Ok::<(), dsh::LoadError>(())
//! ```

use std::collections::HashMap;

use crate::event::{Event, Kind};
use crate::heuristic::{price_block, price_blocks};
use crate::json::Value;
use crate::log::{ChunkRun, Folded, LoadError, LoadOptions, LoadedLog, LogSource, Observer};

/// How many of a tool's largest results are kept.
const LARGEST: usize = 3;

/// One tool's share.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFill {
    /// The tool's name (`(unknown)` when no call names it).
    pub name: String,
    /// Tokens of its results on the surface (whole nodes).
    pub result_tokens: u64,
    /// Result nodes on the surface.
    pub results: u64,
    /// Tokens of the assistant's `tool-call` blocks calling it.
    pub call_tokens: u64,
    /// Calls on the surface.
    pub calls: u64,
    /// Its largest results, largest first (at most 3).
    #[schemars(length(max = 3))]
    pub largest: Vec<ResultTokens>,
}

/// A tool result on the surface and its price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ResultTokens {
    /// Its seq.
    pub seq: u64,
    /// Its price (the whole node).
    pub tokens: u64,
}

/// The surface by what fills it. Every field is in DSH heuristic tokens.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fill {
    /// User-authored messages.
    pub user: u64,
    /// Other user-role messages (injected context, goal rounds, hooks).
    pub context: u64,
    /// The assistant's text (and its messages' role overhead).
    pub assistant: u64,
    /// Compaction checkpoints.
    pub summaries: u64,
    /// Reasoning blocks.
    pub reasoning: u64,
    /// Generation-3 system prompt nodes.
    pub system: u64,
    /// Images and other blocks outside tool results.
    pub other: u64,
    /// Per tool, largest share (results + calls) first.
    pub tools: Vec<ToolFill>,
    /// Surface nodes seen.
    pub nodes: u64,
    /// Nodes whose recorded price was not the sum of their blocks.
    pub adjusted_nodes: u64,
    /// Their recorded prices less the sums of their blocks.
    pub adjustment: i64,
}

impl Fill {
    /// Conversation: user, context and assistant text.
    pub(crate) fn conversation(&self) -> u64 {
        self.user + self.context + self.assistant
    }

    /// Tool results of every tool.
    pub(crate) fn tool_results(&self) -> u64 {
        self.tools.iter().map(|t| t.result_tokens).sum()
    }

    /// Tool calls of every tool.
    pub fn tool_calls(&self) -> u64 {
        self.tools.iter().map(|t| t.call_tokens).sum()
    }

    /// Everything: equals the surface's tokens.
    pub fn total(&self) -> u64 {
        (self.conversation()
            + self.summaries
            + self.reasoning
            + self.system
            + self.other
            + self.tool_results()
            + self.tool_calls())
        .saturating_add_signed(self.adjustment)
    }
}

/// Tool names by call id, from `tool/call` events and the assistant's
/// `tool-call` blocks (the first name seen for an id wins): what [`of`]
/// needs besides the loaded log, seen while it loads.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolNames(HashMap<String, String>);

impl Observer for ToolNames {
    fn event(&mut self, ev: &Event<'_>, _: &Folded<'_>) {
        self.observe(ev)
    }

    /// Chunks name no tools.
    fn chunks(&mut self, _: &ChunkRun<'_>, _: &Folded<'_>) {}
}

impl ToolNames {
    /// Learn from the next event (any kind; only calls teach).
    fn observe(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::ToolCall => {
                let d = ev.data();
                if let (Some(id), Some(name)) = (text(d.get("callId")), text(d.get("name"))) {
                    self.0.entry(id).or_insert(name);
                }
            }
            Kind::AssistantMessage => {
                let blocks = ev.message().and_then(|m| m.get("content"));
                for b in blocks.and_then(|c| c.as_arr()).into_iter().flatten() {
                    if is_type(b, "tool-call")
                        && let (Some(id), Some(name)) = (text(b.get("id")), text(b.get("name")))
                    {
                        self.0.entry(id).or_insert(name);
                    }
                }
            }
            _ => {}
        }
    }

    /// The name of the tool a call id belongs to.
    fn name(&self, call_id: &str) -> Option<&str> {
        self.0.get(call_id).map(String::as_str)
    }
}

fn text(v: Option<&Value<'_>>) -> Option<String> {
    v.and_then(|x| x.as_str()).map(|s| s.into_owned())
}

fn is_type(b: &Value<'_>, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

const UNKNOWN_TOOL: &str = "(unknown)";

/// Load a log and break its surface down.
pub fn measure(src: &LogSource, opts: &LoadOptions) -> Result<(LoadedLog, Fill), LoadError> {
    let mut names = ToolNames::default();
    let opts = LoadOptions {
        skip_chunk_events: true,
        ..opts.clone()
    };
    let log = crate::log::load(src, &opts, &mut names)?;
    let fill = of(&log, &names)?;
    Ok((log, fill))
}

/// Break a loaded log's surface down, with the tool names seen while it
/// was read. Reads every node's event again.
pub(crate) fn of(log: &LoadedLog, names: &ToolNames) -> Result<Fill, LoadError> {
    let mut acc = Acc::default();
    let mut file = None;
    let mut buf = Vec::new();
    for node in &log.surface.nodes {
        log.with_body(&node.body, node.seq, &mut file, &mut buf, |ev| {
            acc.node(ev, node.tokens, names)
        })?;
    }
    Ok(acc.finish())
}

#[derive(Default)]
struct Acc {
    fill: Fill,
    tools: HashMap<String, ToolFill>,
}

impl Acc {
    fn tool(&mut self, name: &str) -> &mut ToolFill {
        self.tools
            .entry(name.to_string())
            .or_insert_with(|| ToolFill {
                name: name.to_string(),
                ..ToolFill::default()
            })
    }

    /// One surface node of recorded price `tokens`.
    fn node(&mut self, ev: &Event<'_>, tokens: u64, names: &ToolNames) {
        self.fill.nodes += 1;
        let counted = match (ev.kind, crate::surface::project(ev)) {
            (_, None) => 0,
            (Kind::ToolResult, Some(m)) => {
                let call = m
                    .get("source")
                    .and_then(|s| s.get("callId"))
                    .and_then(|c| c.as_str());
                let name = call
                    .as_deref()
                    .and_then(|c| names.name(c))
                    .unwrap_or(UNKNOWN_TOOL)
                    .to_string();
                let t = self.tool(&name);
                t.result_tokens += tokens;
                t.results += 1;
                t.largest.push(ResultTokens {
                    seq: ev.seq,
                    tokens,
                });
                t.largest
                    .sort_by(|a, b| b.tokens.cmp(&a.tokens).then(a.seq.cmp(&b.seq)));
                t.largest.truncate(LARGEST);
                tokens
            }
            (Kind::SystemMessage, Some(m)) => {
                let p = price_blocks(m.get("content")) + 4;
                self.fill.system += p;
                p
            }
            (Kind::AssistantMessage, Some(m)) => self.assistant(m, names),
            (_, Some(m)) => {
                let p = price_blocks(m.get("content")) + 4;
                let other: u64 = blocks(m)
                    .filter(|b| !is_type(b, "text"))
                    .map(price_block)
                    .sum();
                self.fill.other += other;
                let slot = match user_kind(m) {
                    UserKind::User => &mut self.fill.user,
                    UserKind::Summary => &mut self.fill.summaries,
                    UserKind::Context => &mut self.fill.context,
                };
                *slot += p - other;
                p
            }
        };
        if counted != tokens {
            // A price the blocks do not explain (a later generation's
            // pricing): the difference, either way, is kept apart.
            self.fill.adjusted_nodes += 1;
            self.fill.adjustment += tokens as i64 - counted as i64;
        }
    }

    fn assistant(&mut self, m: &Value<'_>, names: &ToolNames) -> u64 {
        let mut total = 4;
        self.fill.assistant += 4;
        for b in blocks(m) {
            let p = price_block(b);
            total += p;
            if is_type(b, "text") {
                self.fill.assistant += p;
            } else if is_type(b, "reasoning") {
                self.fill.reasoning += p;
            } else if is_type(b, "tool-call") {
                let name = text(b.get("name"))
                    .or_else(|| {
                        text(b.get("id")).and_then(|id| names.name(&id).map(str::to_string))
                    })
                    .unwrap_or_else(|| UNKNOWN_TOOL.to_string());
                let t = self.tool(&name);
                t.call_tokens += p;
                t.calls += 1;
            } else {
                self.fill.other += p;
            }
        }
        total
    }

    fn finish(mut self) -> Fill {
        let mut tools: Vec<ToolFill> = self.tools.into_values().collect();
        tools.sort_by(|a, b| {
            (b.result_tokens + b.call_tokens)
                .cmp(&(a.result_tokens + a.call_tokens))
                .then_with(|| a.name.cmp(&b.name))
        });
        self.fill.tools = tools;
        self.fill
    }
}

fn blocks<'v, 'a>(m: &'v Value<'a>) -> impl Iterator<Item = &'v Value<'a>> {
    m.get("content")
        .and_then(|c| c.as_arr())
        .into_iter()
        .flatten()
}

enum UserKind {
    User,
    Summary,
    Context,
}

/// Whose words a user-role message holds: the user's (`source.kind`
/// `user`), a compaction's checkpoint (`plugin` `compact`), or other
/// injected context.
fn user_kind(m: &Value<'_>) -> UserKind {
    let src = m.get("source");
    let kind = src.and_then(|s| s.get("kind"));
    if kind.is_some_and(|k| k.is_str("user")) {
        UserKind::User
    } else if kind.is_some_and(|k| k.is_str("plugin"))
        && src
            .and_then(|s| s.get("plugin"))
            .is_some_and(|p| p.is_str("compact"))
    {
        UserKind::Summary
    } else {
        UserKind::Context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_add_up_to_the_surface() {
        for f in [
            "samples/coding-session.jsonl",
            "samples/compacted.jsonl",
            "samples/prune-open-turn.jsonl",
        ] {
            let src = LogSource::File(f.into());
            let (log, fill) = measure(&src, &LoadOptions::default()).unwrap();
            assert_eq!(fill.total(), log.surface.tokens, "{f}");
            assert_eq!(fill.adjusted_nodes, 0, "{f}");
            assert_eq!(fill.nodes, log.surface.nodes.len() as u64);
        }
        let src = LogSource::File("samples/compacted.jsonl".into());
        let (_, fill) = measure(&src, &LoadOptions::default()).unwrap();
        assert!(fill.summaries > 0, "the checkpoint is a summary");
    }
}
