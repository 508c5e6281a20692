//! Rendering helpers: the output door, tables, colors, the pager and progress.

pub mod cache;
pub mod color;
pub mod compact;
pub mod escape;
pub mod events;
pub mod export;
pub mod fill;
pub mod fleet;
pub mod hidden;
pub mod locks;
pub mod measure;
pub mod out;
pub mod pager;
pub mod prune;
pub mod report;
pub mod sessions;
pub mod simulate;
pub mod table;
pub mod tree;
pub mod usage;
pub mod verify;
pub mod view;

pub(crate) use out::{Out, outln, outp};

pub use color::{Tone, paint};
pub use table::{table, width};

/// The event type name of a surface kind.
pub fn kind_name(k: dsh::Kind) -> &'static str {
    match k {
        dsh::Kind::UserMessage => "user/message",
        dsh::Kind::AssistantMessage => "assistant/message",
        dsh::Kind::ToolResult => "tool/result",
        dsh::Kind::SystemMessage => "system/message",
        _ => "other",
    }
}

/// How a report names a log: a session under the DSH home as its project
/// and short id (`5b1d6c2e home-dev-dsh-demo`) instead of the long path the
/// harness lays out (`HOME/sessions/--home-dev-dsh-demo--/ID/session.jsonl`);
/// any other path as it is. JSON always carries the path itself.
pub fn log_label(file: &str, home: Option<&std::path::Path>) -> String {
    let Some(rest) = home.and_then(|h| {
        std::path::Path::new(file)
            .strip_prefix(h.join("sessions"))
            .ok()
    }) else {
        return file.to_string();
    };
    let parts: Vec<String> = rest
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let [project, id, _log] = parts.as_slice() else {
        return file.to_string();
    };
    let project = project.trim_start_matches("--").trim_end_matches("--");
    let n = project.chars().count();
    let tail: String = if n > 20 {
        let kept: String = project.chars().skip(n - 19).collect();
        format!("…{kept}")
    } else {
        project.to_string()
    };
    // The id first: it tells sessions of one project apart when a narrow
    // table cuts the label; a no-break space, so that a table cell is cut
    // at its width rather than at the space.
    let short: String = id.chars().take(8).collect();
    format!("{short}\u{a0}{tail}")
}

/// `dsh: error:` for standard error, red when it gets color.
pub fn error_tag() -> String {
    color::paint_err("dsh: error:", Tone::Bad)
}

/// `dsh: warning:` for standard error, yellow when it gets color.
pub fn warning_tag() -> String {
    color::paint_err("dsh: warning:", Tone::Warn)
}

/// `dsh: note:` for standard error (what dsh chose for the user).
pub fn note_tag() -> &'static str {
    "dsh: note:"
}

/// The length in bytes of the escape sequence at the start of `s`, or 0
/// when `s` does not start with one: CSI (`ESC [` … a final byte, as in
/// colors), OSC (`ESC ]` … BEL or `ESC \\`, as in hyperlinks) or a
/// two-byte `ESC X`.
fn escape_len(s: &str) -> usize {
    let b = s.as_bytes();
    if b.first() != Some(&0x1b) {
        return 0;
    }
    match b.get(1) {
        Some(b'[') => b[2..]
            .iter()
            .position(|c| (0x40..=0x7e).contains(c))
            .map_or(b.len(), |i| i + 3),
        Some(b']') => {
            let mut i = 2;
            while i < b.len() {
                if b[i] == 0x07 {
                    return i + 1;
                }
                if b[i] == 0x1b && b.get(i + 1) == Some(&b'\\') {
                    return i + 2;
                }
                i += 1;
            }
            b.len()
        }
        Some(c) if c.is_ascii() => 2,
        _ => 1,
    }
}

/// Cut a line to `width` terminal columns (wide characters count two,
/// escape sequences none), ending in `…` when something was cut. Escape
/// sequences are kept whole, never cut inside; when the line had any, a
/// reset (`ESC [0m`) follows the cut so no color runs on past it.
pub fn cut(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    if display_width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    let mut escaped = false;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let esc = escape_len(rest);
        if esc > 0 {
            out.push_str(&rest[..esc]);
            escaped = true;
            rest = &rest[esc..];
            continue;
        }
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        w += cw;
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if width > 0 {
        out.push('…');
    }
    if escaped {
        out.push_str("\x1b[0m");
    }
    out
}

/// Display width of a string in terminal columns.
/// Escape sequences (color) take no room.
pub fn display_width(s: &str) -> usize {
    use unicode_width::UnicodeWidthChar;
    let mut w = 0;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let esc = escape_len(rest);
        if esc > 0 {
            rest = &rest[esc..];
            continue;
        }
        w += c.width().unwrap_or(0);
        rest = &rest[c.len_utf8()..];
    }
    w
}

/// Word-wrap one line of prose to `width` columns. Continuation lines are
/// indented under the text after a leading label (`tokens    14,555 …`),
/// or by two spaces.
pub fn wrap(line: &str, width: usize) -> String {
    if display_width(line) <= width || width < 20 {
        return line.to_string();
    }
    // A line's own indentation stays, and its continuation lines go under
    // its text.
    let lead = line.len() - line.trim_start_matches(' ').len();
    let text = &line[lead..];
    let indent = lead
        + text
            .find("  ")
            .map(|i| i + text[i..].len() - text[i..].trim_start().len())
            .filter(|&i| i <= 12 && !text[..i].trim().is_empty())
            .unwrap_or(2);
    let pad = " ".repeat(indent.min(width / 2));
    let mut out = String::new();
    let mut cur = " ".repeat(lead);
    let mut words = 0;
    for word in text.split(' ') {
        let fits = display_width(&cur) + 1 + display_width(word) <= width;
        if words > 0 && !cur.trim().is_empty() && !fits {
            out.push_str(cur.trim_end());
            out.push('\n');
            cur = pad.clone();
            words = 0;
        } else if words > 0 {
            cur.push(' ');
        }
        cur.push_str(word);
        words += 1;
    }
    out.push_str(&cut(cur.trim_end(), width));
    out
}

/// A count with thousands separators: `1,234,567`. The one number format
/// of every human report.
pub fn num(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// [`num`] for a figure that may not be a whole number: non-integers as
/// JavaScript prints them.
pub fn num_f64(x: f64) -> String {
    if !(x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15) {
        return dsh::json::Value::Num(x).to_json();
    }
    let digits = num(x.abs() as u64);
    if x < 0.0 {
        format!("-{digits}")
    } else {
        digits
    }
}

/// A progress bar on stderr when it is enabled (a terminal, not `--quiet`:
/// see [`Ctx::progress`](crate::cli::ctx::Ctx::progress)) and the work is
/// long (a few logs finish before a bar could tell anything); else a hidden one.
pub fn progress(enabled: bool, len: usize, what: &str) -> indicatif::ProgressBar {
    if !enabled || len < 16 {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} ({eta})")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// A log's value as text: a string's own text, anything else its JSON
/// (an id or owner of the wrong type stays recognisable).
pub fn text_or_json(v: &dsh::json::Value<'_>) -> String {
    v.as_jstr()
        .map(|s| s.to_lossy().into_owned())
        .unwrap_or_else(|| v.to_json())
}

/// USD for a table, one rule everywhere: four decimals, thousands
/// separated; a cost that rounds to nothing but is not zero is `<0.0001`;
/// `—` when unknown. (`--json` carries every cost unrounded.)
pub fn usd(x: Option<f64>) -> String {
    match x {
        None => "—".into(),
        Some(v) if v != 0.0 && v.abs() < 0.00005 => {
            if v < 0.0 { ">-0.0001" } else { "<0.0001" }.into()
        }
        Some(v) => {
            let n = (v.abs() * 10_000.0).round() as u64;
            let s = format!("{}.{:04}", num(n / 10_000), n % 10_000);
            if v < 0.0 && n > 0 { format!("-{s}") } else { s }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{cut, display_width};

    const RED: &str = "\x1b[31m";
    const RESET: &str = "\x1b[0m";

    #[test]
    fn wrap_keeps_a_line_s_indentation() {
        use super::wrap;
        let line = format!("  V-MTR-5 (warning): {}", "word ".repeat(12).trim_end());
        let w = wrap(&line, 30);
        let lines: Vec<&str> = w.lines().collect();
        assert!(lines[0].starts_with("  V-MTR-5"), "{w}");
        assert!(lines[1..].iter().all(|l| l.starts_with("    ")), "{w}");
        assert!(lines.iter().all(|l| display_width(l) <= 30), "{w}");
        let label = format!("tokens    {}", "3,482 ".repeat(10).trim_end());
        let w = wrap(&label, 30);
        assert!(
            w.lines().skip(1).all(|l| l.starts_with("          3")),
            "{w}"
        );
        assert_eq!(wrap("short line", 30), "short line");
    }

    #[test]
    fn costs_have_one_precision() {
        use super::usd;
        assert_eq!(usd(Some(0.0265)), "0.0265");
        assert_eq!(usd(Some(0.000548)), "0.0005");
        assert_eq!(usd(Some(1234.5)), "1,234.5000");
        assert_eq!(usd(Some(0.00001)), "<0.0001");
        assert_eq!(usd(Some(-0.002)), "-0.0020");
        assert_eq!(usd(Some(0.0)), "0.0000");
        assert_eq!(usd(None), "—");
    }

    #[test]
    fn cut_counts_columns_not_bytes() {
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("日本語です", 5), "日本…");
        assert_eq!(display_width("日本"), 4);
    }

    #[test]
    fn cut_keeps_escapes_whole_and_counts_them_as_nothing() {
        // A colored cell that fits is left as it is, escapes and all.
        let cell = format!("{RED}busy{RESET}");
        assert_eq!(display_width(&cell), 4);
        assert_eq!(cut(&cell, 4), cell);
        // Cut inside the colored text: the escape stays whole, a reset
        // ends the color, and the visible text is width columns.
        let long = format!("{RED}stale lock{RESET} detail");
        let c = cut(&long, 6);
        assert_eq!(c, format!("{RED}stale…{RESET}"));
        assert_eq!(display_width(&c), 6);
        // Cutting where an escape begins never leaves half of one.
        for w in 1..display_width(&long) {
            let c = cut(&long, w);
            assert_eq!(display_width(&c), w, "{c:?}");
            let bare = c.replace(RED, "").replace(RESET, "");
            assert!(!bare.contains('\x1b'), "half an escape in {c:?}");
        }
        // A hyperlink (OSC 8) is an escape too.
        let link = "\x1b]8;;https://example.org\x1b\\site\x1b]8;;\x1b\\ more";
        assert_eq!(display_width(link), 9);
        assert_eq!(
            cut(link, 5),
            "\x1b]8;;https://example.org\x1b\\site\x1b]8;;\x1b\\…\x1b[0m"
        );
    }
}
