//! What the status line and the live view share: token counts in a few
//! characters, the pressure bar and its tone, and the status line's
//! `--format` templates.

use anyhow::Result;

use super::exit::UsageError;
use super::render::Tone;

/// The default `--format`.
pub const DEFAULT_FORMAT: &str = "{bar} {pressure} · {next} · {cost} session · {today} today";

/// The placeholders of `--format`.
pub const NAMES: &[&str] = &[
    "bar",
    "pressure",
    "tokens",
    "window",
    "threshold",
    "left",
    "next",
    "cost",
    "today",
    "session",
    "project",
    "provider",
    "model",
];

/// `67155` → `67.2k`; `1234567` → `1.23M`.
pub fn compact_tokens(t: f64) -> String {
    let a = t.abs();
    let s = if a >= 999_500.0 {
        format!("{:.2}M", a / 1e6)
    } else if a >= 9_950.0 {
        format!("{:.1}k", a / 1e3)
    } else if a >= 1_000.0 {
        format!("{:.2}k", a / 1e3)
    } else {
        format!("{a:.0}")
    };
    if t < 0.0 { format!("-{s}") } else { s }
}

/// A bar of `cells` cells filled to `pct` percent.
pub fn bar(pct: Option<f64>, cells: usize) -> String {
    let Some(p) = pct else {
        return "?".repeat(cells);
    };
    let full = ((p / 100.0 * cells as f64).round() as usize).min(cells);
    format!("{}{}", "█".repeat(full), "░".repeat(cells - full))
}

/// The tone of a pressure: over the threshold, or within a tenth of it.
pub fn tone(left: Option<f64>, threshold: Option<f64>) -> Option<Tone> {
    match (left, threshold) {
        (Some(l), _) if l <= 0.0 => Some(Tone::Bad),
        (Some(l), Some(t)) if l <= t * 0.1 => Some(Tone::Warn),
        _ => None,
    }
}

/// Check a template: every `{name}` is one of [`NAMES`].
pub fn check_template(t: &str) -> Result<()> {
    let mut rest = t.replace("{{", "").replace("}}", "");
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err(UsageError(format!("--format {t:?}: a `{{` without its `}}`")).into());
        };
        let name = &rest[open + 1..open + close];
        if !NAMES.contains(&name) {
            return Err(UsageError(format!(
                "--format: no placeholder {{{name}}}; there are {{{}}}",
                NAMES.join("} {")
            ))
            .into());
        }
        rest = rest[open + close + 1..].to_string();
    }
    Ok(())
}

/// Fill a checked template.
pub fn fill(t: &str, value: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let r = &rest[i..];
        if r.starts_with("{{") || r.starts_with("}}") {
            out.push_str(&r[..1]);
            rest = &r[2..];
        } else if let Some(close) = r.find('}').filter(|_| r.starts_with('{')) {
            out.push_str(&value(&r[1..close]));
            rest = &r[close + 1..];
        } else {
            out.push_str(&r[..1]);
            rest = &r[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_and_refuse_unknown_names() {
        assert!(check_template(DEFAULT_FORMAT).is_ok());
        assert!(check_template("{{literal}} {pressure}").is_ok());
        assert!(check_template("{nope}").is_err());
        assert!(check_template("{pressure").is_err());
        let v = |n: &str| format!("<{n}>");
        assert_eq!(fill("a {bar} {{b}} c", &v), "a <bar> {b} c");
        assert_eq!(compact_tokens(67_155.0), "67.2k");
        assert_eq!(compact_tokens(1_234.0), "1.23k");
        assert_eq!(compact_tokens(950.0), "950");
        assert_eq!(compact_tokens(2_388_573.0), "2.39M");
        assert_eq!(compact_tokens(-1_500.0), "-1.50k");
        assert_eq!(bar(Some(27.0), 10), "███░░░░░░░");
        assert_eq!(bar(Some(250.0), 4), "████");
        assert_eq!(bar(None, 3), "???");
    }
}
