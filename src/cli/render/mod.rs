//! Rendering helpers: the output door, tables, colors, the pager and progress.

pub mod color;
pub mod out;
pub mod pager;
pub mod table;

pub(crate) use out::{Out, outln, outp};

pub use color::{Tone, paint};
pub use table::{table, width};

/// `dsh: error:` for standard error, red when it gets color.
pub fn error_tag() -> String {
    color::paint_err("dsh: error:", Tone::Bad)
}

/// `dsh: warning:` for standard error, yellow when it gets color.
pub fn warning_tag() -> String {
    color::paint_err("dsh: warning:", Tone::Warn)
}

/// Cut a line to `width` terminal columns (wide characters count two),
/// ending in `…` when something was cut.
pub fn cut(s: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let full: usize = s.chars().map(|c| c.width().unwrap_or(0)).sum();
    if full <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        w += cw;
        out.push(c);
    }
    out.push('…');
    out
}

/// Display width of a string in terminal columns.
/// Escape sequences (color) take no room.
pub fn display_width(s: &str) -> usize {
    use unicode_width::UnicodeWidthChar;
    let mut w = 0;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters… final letter.
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        w += c.width().unwrap_or(0);
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
    let indent = line
        .find("  ")
        .map(|i| i + line[i..].len() - line[i..].trim_start().len())
        .filter(|&i| i <= 12 && !line[..i].trim().is_empty())
        .unwrap_or(2);
    let pad = " ".repeat(indent);
    let mut out = String::new();
    let mut cur = String::new();
    for word in line.split(' ') {
        let fits = display_width(&cur) + 1 + display_width(word) <= width;
        if !cur.trim().is_empty() && !fits {
            out.push_str(cur.trim_end());
            out.push('\n');
            cur = pad.clone();
        } else if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
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

/// A progress bar on stderr when it is a terminal and the work is long
/// (a few logs finish before a bar could tell anything).
pub fn progress(enabled: bool, len: u64, what: &str) -> Option<indicatif::ProgressBar> {
    if !enabled || len < 16 {
        return None;
    }
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} ({eta})")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    Some(pb)
}
