//! The tool-result pruner as compaction runs it (compaction §3): one pass
//! over the current surface, each oversized `tool/result` replaced by its
//! head, the marker and its tail (counted and cut in code points), each
//! replacement preceded by its `compaction/prune` shadow price.

use super::{Pruner, Session};
use crate::event::{Kind, OwnedEvent, owned_event};
use crate::json::{OwnedValue, Value, string_from_code_points};

/// The marker **[CONST]** (39 code points).
pub const MARKER: &str = "\n\n[... tool result middle pruned ...]\n\n";

/// `@deepseek-ai/dsh-compaction-tool-result-pruner` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneConfig {
    /// Prune when the text exceeds this many code points.
    pub threshold_chars: usize,
    /// Leading code points kept.
    pub head_chars: usize,
    /// Trailing code points kept.
    pub tail_chars: usize,
}

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            threshold_chars: 8192,
            head_chars: 4096,
            tail_chars: 1024,
        }
    }
}

fn is_text(b: &Value<'_>) -> bool {
    b.get("type").is_some_and(|t| t.is_str("text"))
}

fn text_cps(b: &Value<'_>) -> Vec<u32> {
    b.get("text")
        .and_then(|t| t.as_jstr())
        .map(|t| t.code_points())
        .unwrap_or_default()
}

/// `pruneContent(blocks)`: the pruned list, or `None` when unchanged.
pub fn prune_content(blocks: &[Value<'_>], cfg: &PruneConfig) -> Option<Vec<OwnedValue>> {
    let total: usize = blocks
        .iter()
        .filter(|b| is_text(b))
        .map(|b| text_cps(b).len())
        .sum();
    if total <= cfg.threshold_chars {
        return None;
    }
    let r0 = cfg.head_chars as i64;
    let r1 = total as i64 - cfg.tail_chars as i64;
    let marker: Vec<u32> = MARKER.chars().map(|c| c as u32).collect();
    let mut consumed: i64 = 0;
    let mut inserted = false;
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        if !is_text(b) {
            out.push(b.to_owned_value());
            continue;
        }
        let cps = text_cps(b);
        let len = cps.len() as i64;
        let b_start = consumed;
        let b_end = b_start + len;
        let head_end = (r0 - b_start).clamp(0, len) as usize;
        let tail_start = (r1 - b_start).clamp(0, len) as usize;
        let mut text: Vec<u32> = cps[..head_end].to_vec();
        if !inserted && b_start < r1 && b_end > r0 {
            text.extend_from_slice(&marker);
            inserted = true;
        }
        text.extend_from_slice(&cps[tail_start..]);
        consumed = b_end;
        if text.is_empty() {
            continue;
        }
        let mut nb = b.to_owned_value();
        nb.set("text", Value::Str(string_from_code_points(&text)));
        out.push(nb);
    }
    Some(out)
}

/// The pruner over a [`Session`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolResultPruner {
    /// Settings.
    pub config: PruneConfig,
}

impl Pruner for ToolResultPruner {
    fn prune_pass(&self, session: &Session, time: f64) -> Result<Vec<OwnedEvent>, String> {
        let mut out = Vec::new();
        let mut seq = session.next_seq;
        for node in &session.surface.nodes {
            if node.kind != Kind::ToolResult {
                continue;
            }
            let ev = session.node_event(node.seq)?;
            let Some(blocks) = ev
                .data()
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(|c| c.as_arr())
                .and_then(|c| c.first())
                .and_then(|b| b.get("content"))
                .and_then(|c| c.as_arr())
            else {
                continue;
            };
            let Some(pruned) = prune_content(blocks, &self.config) else {
                continue;
            };
            let s = node.seq;
            let prune = Value::obj()
                .with("type", "compaction/prune".into())
                .with("seq", seq.into())
                .with("time", time.into())
                .with(
                    "data",
                    Value::obj()
                        .with(
                            "shadowedRange",
                            Value::obj().with("start", s.into()).with("end", s.into()),
                        )
                        .with("shadowedSeqs", vec![s].into())
                        .with("shadowedTokenCount", node.tokens.into()),
                );
            out.push(owned_event(Kind::CompactionPrune, seq, prune));
            seq += 1;
            let mut data = ev.data().to_owned_value();
            if let Some(Value::Arr(content)) =
                data.get_mut("message").and_then(|m| m.get_mut("content"))
                && let Some(first) = content.first_mut()
            {
                first.set("content", Value::Arr(pruned));
            }
            let rep = Value::obj()
                .with("type", "tool/result".into())
                .with("seq", seq.into())
                .with("time", time.into())
                .with("data", data)
                .with("sourceEventSeqs", vec![s].into())
                .with(
                    "surfaceOp",
                    Value::obj()
                        .with("op", "replace".into())
                        .with("start", s.into())
                        .with("end", s.into()),
                );
            out.push(owned_event(Kind::ToolResult, seq, rep));
            seq += 1;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> OwnedValue {
        Value::obj()
            .with("type", "text".into())
            .with("text", s.to_string().into())
    }

    #[test]
    fn worked_example_b_blocks() {
        // seq 7: 3000 emoji + 6000 letters, one block.
        let s: String = "\u{1F600}".repeat(3000) + &"a".repeat(6000);
        let out = prune_content(&[text(&s)], &PruneConfig::default()).unwrap();
        let t = out[0].get("text").unwrap().as_jstr().unwrap();
        assert_eq!(t.count_code_points(), 5159);
        assert_eq!(t.len16(), 8159);
        // seq 8: text(5000 A), image, text(4000 B)
        let img = Value::obj().with("type", "image".into());
        let blocks = vec![text(&"A".repeat(5000)), img, text(&"B".repeat(4000))];
        let out = prune_content(&blocks, &PruneConfig::default()).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].get("text").unwrap().as_jstr().unwrap().len16(), 4135);
        assert!(out[1].get("type").unwrap().is_str("image"));
        assert_eq!(out[2].get("text").unwrap().as_jstr().unwrap().len16(), 1024);
        // idempotent
        assert!(prune_content(&out, &PruneConfig::default()).is_none());
        assert!(prune_content(&[text("short")], &PruneConfig::default()).is_none());
    }
}
