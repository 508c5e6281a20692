//! The one escaping rule for text dsh did not write (log text, paths,
//! provider messages) on its way to a terminal or a pipe.
//!
//! A character that can drive a terminal is shown as a visible escape,
//! `\u{1b}` (lowercase hex, Rust's own form), never passed on:
//!
//! * the C0 controls U+0000–U+001F (ESC, BEL, CR, backspace, …), except
//!   newline and tab in multi-line text ([`text`]; one-line text, [`line`],
//!   escapes them too);
//! * DEL (U+007F) and the C1 controls U+0080–U+009F (8-bit CSI, OSC, …);
//! * the invisible bidirectional and line-breaking format characters
//!   (U+061C, U+200E, U+200F, U+2028, U+2029, U+202A–U+202E,
//!   U+2066–U+2069), which reorder or break what a reader sees.
//!
//! Escaping is idempotent (its output holds none of these), so a preview
//! escaped once may pass a table cell and the door of standard output
//! again. Colors are dsh's own: the doors ([`Filter`], [`stderr`]) let
//! the few SGR sequences of dsh's palette (reset, bold, dim, red, green,
//! yellow) through only when that stream gets color; every other sequence
//! is escaped there too, whoever wrote it.
//! `--raw` turns the rule off for standard output (the text as stored);
//! JSON output is JSON-escaped instead.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

static RAW: AtomicBool = AtomicBool::new(false);

/// `--raw`: standard output gets log text as it is.
pub fn set_raw(on: bool) {
    RAW.store(on, Ordering::Relaxed);
}

/// Whether `--raw` was given.
pub fn raw() -> bool {
    RAW.load(Ordering::Relaxed)
}

/// Whether `c` is escaped (newline and tab as `keep_layout` says).
pub fn escapes(c: char, keep_layout: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_layout,
        '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn escape(s: &str, keep_layout: bool) -> Cow<'_, str> {
    if raw() || !s.chars().any(|c| escapes(c, keep_layout)) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        push(&mut o, c, keep_layout);
    }
    Cow::Owned(o)
}

fn push(o: &mut String, c: char, keep_layout: bool) {
    if escapes(c, keep_layout) {
        use std::fmt::Write;
        let _ = write!(o, "\\u{{{:x}}}", c as u32);
    } else {
        o.push(c);
    }
}

/// One-line text (a table cell, a preview, a name, a path): every
/// character of the rule escaped, newline and tab included.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Multi-line text (a transcript, a system prompt): newline and tab kept,
/// the rest of the rule escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// The SGR parameters of dsh's own palette ([`super::color`] and the
/// tones of table cells): reset, bold, dim, red, green, yellow, default
/// foreground, and the 256-color forms of the last three that tables use.
const PALETTE: &[&[u8]] = &[
    b"", b"0", b"1", b"2", b"22", b"31", b"32", b"33", b"39", b"1;31", b"38;5;9", b"38;5;10",
    b"38;5;11",
];

/// The length of one of dsh's own color sequences (`ESC [` a [`PALETTE`]
/// entry `m`) at the start of `b`; `None` when `b` does not start with
/// one; `Some(0)` when `b` may be the start of one that was cut.
fn sgr_len(b: &[u8]) -> Option<usize> {
    if b.first() != Some(&0x1b) {
        return None;
    }
    match b.get(1) {
        None => return Some(0),
        Some(b'[') => {}
        Some(_) => return None,
    }
    for (i, &c) in b.iter().enumerate().skip(2).take(10) {
        match c {
            b'0'..=b'9' | b';' => {}
            b'm' if PALETTE.contains(&&b[2..i]) => return Some(i + 1),
            _ => return None,
        }
    }
    (b.len() < 12).then_some(0)
}

/// Standard output's door: text through it keeps newline and tab, dsh's
/// colors when `colors` is set, and escapes every other character of the
/// rule. Writes may cut a character or a color sequence in two: the cut
/// end is held until the next write or [`Filter::finish`].
#[derive(Default)]
pub struct Filter {
    held: Vec<u8>,
}

impl Filter {
    /// The bytes to write for `buf`.
    pub fn pass<'a>(&mut self, buf: &'a [u8], colors: bool) -> Cow<'a, [u8]> {
        if self.held.is_empty() && !buf.iter().any(|&b| suspect(b)) {
            return Cow::Borrowed(buf);
        }
        let mut all = std::mem::take(&mut self.held);
        all.extend_from_slice(buf);
        let mut o = Vec::with_capacity(all.len() + 16);
        let mut i = 0;
        while i < all.len() {
            let b = all[i];
            if !suspect(b) {
                o.push(b);
                i += 1;
                continue;
            }
            if b == 0x1b && colors {
                match sgr_len(&all[i..]) {
                    Some(0) => {
                        self.held = all[i..].to_vec();
                        return Cow::Owned(o);
                    }
                    Some(n) => {
                        o.extend_from_slice(&all[i..i + n]);
                        i += n;
                        continue;
                    }
                    None => {}
                }
            }
            let need = utf8_len(b);
            if i + need > all.len() {
                self.held = all[i..].to_vec();
                return Cow::Owned(o);
            }
            match std::str::from_utf8(&all[i..i + need]) {
                Ok(s) => {
                    let mut e = String::new();
                    for c in s.chars() {
                        push(&mut e, c, true);
                    }
                    o.extend_from_slice(e.as_bytes());
                }
                Err(_) => {
                    o.push(b);
                    i += 1;
                    continue;
                }
            }
            i += need;
        }
        Cow::Owned(o)
    }

    /// What is still held (a cut sequence at the very end), escaped.
    pub fn finish(&mut self) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        let s = String::from_utf8_lossy(&held);
        let mut e = String::new();
        for c in s.chars() {
            push(&mut e, c, true);
        }
        e.into_bytes()
    }
}

/// Whether byte `b` may start something the rule escapes: a C0 control
/// but newline and tab, DEL, or the lead byte of a C1 control (`C2`) or of
/// a format character (`D8`, `E2`).
fn suspect(b: u8) -> bool {
    (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2 || b == 0xd8 || b == 0xe2
}

fn utf8_len(b: u8) -> usize {
    match b {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// A message for standard error as it is printed: the rule applied, newline
/// and tab kept, SGR colors kept when standard error gets color.
pub fn stderr(s: &str) -> Cow<'_, str> {
    let mut f = Filter::default();
    let colors = super::color::stderr_on();
    match f.pass(s.as_bytes(), colors) {
        Cow::Borrowed(_) if f.held.is_empty() => Cow::Borrowed(s),
        out => {
            let mut out = out.into_owned();
            out.extend(f.finish());
            Cow::Owned(String::from_utf8_lossy(&out).into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character class of the rule, and text around it.
    fn hostile() -> String {
        let mut s = String::from("a");
        for c in (0u32..0x20).chain(0x7f..0xa0) {
            s.push(char::from_u32(c).unwrap());
        }
        s.push_str("\u{61c}\u{200e}\u{200f}\u{2028}\u{2029}\u{202a}\u{202e}\u{2066}\u{2069}z ─│…é");
        s
    }

    fn bad(s: &str, keep_layout: bool) -> bool {
        s.chars().any(|c| escapes(c, keep_layout))
    }

    #[test]
    fn the_rule_leaves_nothing_that_drives_a_terminal() {
        let h = hostile();
        let l = line(&h);
        assert!(!bad(&l, false), "{l:?}");
        assert!(l.starts_with("a\\u{0}\\u{1}"), "{l}");
        assert!(l.contains("\\u{1b}") && l.contains("\\u{9b}") && l.contains("\\u{202e}"));
        assert!(l.ends_with("z ─│…é"), "plain text stays: {l}");
        let t = text(&h);
        assert!(!bad(&t, true) && t.contains('\n') && t.contains('\t'));
        // Idempotent: escaping twice changes nothing.
        assert_eq!(line(&l), l);
        assert_eq!(text(&t), t);
        assert!(matches!(line("plain ─ text"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_door_keeps_colors_only_when_asked_and_joins_cut_writes() {
        let h = hostile();
        let red = "\x1b[1;31mred\x1b[0m";
        let input = format!("{red}\x1b[5;35m {h}\x1b]0;title\x07\x1b[2J");
        for colors in [false, true] {
            // Every way of cutting the input in two gives the same output.
            let whole = {
                let mut f = Filter::default();
                let mut o = f.pass(input.as_bytes(), colors).into_owned();
                o.extend(f.finish());
                o
            };
            for cut in 0..=input.len() {
                let mut f = Filter::default();
                let mut o = f.pass(&input.as_bytes()[..cut], colors).into_owned();
                o.extend_from_slice(&f.pass(&input.as_bytes()[cut..], colors));
                o.extend(f.finish());
                assert_eq!(o, whole, "cut at {cut}");
            }
            let s = String::from_utf8(whole).unwrap();
            assert_eq!(s.starts_with(red), colors, "{s}");
            let bare = s.replace("\x1b[1;31m", "").replace("\x1b[0m", "");
            assert!(!bad(&bare, true), "{s:?}");
            assert!(s.contains("\\u{1b}]0;title\\u{7}\\u{1b}[2J"), "{s}");
            assert!(s.contains("\\u{1b}[5;35m"), "not dsh's palette: {s}");
        }
    }
}
