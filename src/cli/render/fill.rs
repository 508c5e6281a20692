//! `measure --fill`: where the surface's tokens go, as a table.

use dsh::fill::Fill;

use super::{Out, outln};

/// The table: one row per kind of content, tools by name, each with its
/// share of the surface and, for tool results, the largest ones' seqs.
pub fn print(o: &Out, f: &Fill) -> std::io::Result<()> {
    let total = f.total();
    let share = |x: u64| {
        if total > 0 {
            format!("{:.1}%", x as f64 / total as f64 * 100.0)
        } else {
            "-".into()
        }
    };
    let mut t = super::table(&[
        "what fills the surface",
        "items",
        "tokens",
        "share",
        "largest (seq: tokens)",
    ]);
    let mut row = |name: String, items: Option<u64>, tokens: u64, largest: String| {
        if tokens > 0 || items.is_some_and(|n| n > 0) {
            let items = items.map(super::num).unwrap_or_default();
            t.add_row(vec![
                name,
                items,
                super::num(tokens),
                share(tokens),
                largest,
            ]);
        }
    };
    row("conversation: user".into(), None, f.user, String::new());
    row(
        "conversation: injected context".into(),
        None,
        f.context,
        String::new(),
    );
    row(
        "conversation: assistant text".into(),
        None,
        f.assistant,
        String::new(),
    );
    row(
        "compaction summaries".into(),
        None,
        f.summaries,
        String::new(),
    );
    row("reasoning".into(), None, f.reasoning, String::new());
    for tool in &f.tools {
        if tool.results > 0 {
            let largest: Vec<String> = tool
                .largest
                .iter()
                .map(|l| format!("{}: {}", l.seq, super::num(l.tokens)))
                .collect();
            row(
                format!("tool results: {}", tool.name),
                Some(tool.results),
                tool.result_tokens,
                largest.join(", "),
            );
        }
    }
    let calls: u64 = f.tools.iter().map(|t| t.calls).sum();
    row(
        "tool calls (arguments)".into(),
        Some(calls),
        f.tool_calls(),
        String::new(),
    );
    row("system prompt node".into(), None, f.system, String::new());
    row(
        "images and other blocks".into(),
        None,
        f.other,
        String::new(),
    );
    if f.adjusted_nodes > 0 {
        t.add_row(vec![
            "priced apart from their blocks".into(),
            super::num(f.adjusted_nodes),
            f.adjustment.to_string(),
            String::new(),
            String::new(),
        ]);
    }
    t.add_row(vec![
        "surface".into(),
        super::num(f.nodes),
        super::num(total),
        share(total),
        String::new(),
    ]);
    outln!(o, "{t}")
}
