//! A placeholder log's hidden prefix (`dsh::hidden_prefix`), as `cache` and
//! `simulate` show it: a readable line.

/// The readable note on a hidden prefix.
pub fn hidden_line(h: &dsh::hidden_prefix::HiddenPrefix) -> String {
    format!(
        "hidden prefix: the log's {} {} placeholder{}, while the provider reported {} prompt tokens at seq {} against dsh's {}: {} tokens added to the head of every request (without them: {} prompt, {} predicted hit)",
        h.placeholders
            .iter()
            .map(|p| if *p == "system" { "system prompt" } else { *p })
            .collect::<Vec<_>>()
            .join(" and "),
        if h.placeholders.len() == 1 {
            "is a"
        } else {
            "are"
        },
        if h.placeholders.len() == 1 { "" } else { "s" },
        super::num(h.reported),
        h.seq,
        super::num(h.computed),
        super::num(h.tokens),
        super::num(h.without.prompt_tokens),
        super::num(h.without.predicted_hit),
    )
}
