//! A placeholder log's hidden prefix (`dsh::hidden_prefix`), as `cache` and
//! `simulate` show it: a readable line and the `"hiddenPrefix"` JSON.

use dsh::json::{OwnedValue, Value};

/// `"hiddenPrefix"`: the estimate of what the log's placeholders hide.
pub fn hidden_json(h: &Option<dsh::hidden_prefix::HiddenPrefix>) -> OwnedValue {
    let Some(h) = h else { return Value::Null };
    let w = &h.without;
    Value::obj()
        .with(
            "placeholders",
            Value::Arr(h.placeholders.iter().map(|p| (*p).into()).collect()),
        )
        .with("tokens", h.tokens.into())
        .with("seq", h.seq.into())
        .with("reported", h.reported.into())
        .with("computed", h.computed.into())
        .with(
            "without",
            Value::obj()
                .with("promptTokens", w.prompt_tokens.into())
                .with("predictedHit", w.predicted_hit.into())
                .with(
                    "predictedMiss",
                    (w.prompt_tokens.saturating_sub(w.predicted_hit)).into(),
                ),
        )
}

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
