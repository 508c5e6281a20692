//! OpenAI's encodings (`o200k_base`, `cl100k_base`): tiktoken's split
//! pattern, then tiktoken's rank merging ([`super::bpe::Ranks`]). The counts
//! are those of `tiktoken`'s `encode_ordinary(text).len()` (the tests hold
//! them to `tiktoken-rs`).

use super::bpe::Ranks;

/// One of OpenAI's encodings: its split pattern (with its look-ahead
/// `\s+(?!\S)` expressed by a pattern that takes one character more and
/// gives it back) and its ranks.
pub(crate) struct Engine {
    pub(crate) ranks: Ranks,
    pub(crate) split: regex_automata::meta::Regex,
    /// Per pattern: whether its last character is look-ahead.
    lookahead: [bool; 3],
    /// o200k's pattern (else cl100k's), for the ASCII lane.
    o200k: bool,
}

impl Engine {
    /// Nothing: forcing the lazy table is the point ([`super::Encoding::load`]).
    pub(crate) fn touch(&self) {}

    fn new(table: &[u8], first: &str, o200k: bool) -> Engine {
        let split = regex_automata::meta::Regex::new_many(&[first, "\\s+\\s", "\\s+"])
            .expect("the split patterns are valid");
        Engine {
            ranks: Ranks::load(table),
            split,
            lookahead: [false, true, false],
            o200k,
        }
    }

    /// Cut `text` into the pattern's pieces, handing each to `f`.
    pub(crate) fn split(
        &self,
        cache: &mut regex_automata::meta::Cache,
        text: &str,
        mut f: impl FnMut(&[u8]),
    ) {
        let bytes = text.as_bytes();
        let mut last = 0;
        while last < text.len() {
            // Most text is ASCII: its pieces are found by hand, the same
            // ones the pattern finds; anything else asks the pattern.
            let end = match ascii_piece(self.o200k, bytes, last) {
                Some(end) => end,
                None => match self.pattern_piece(cache, text, last) {
                    Some(end) => end,
                    None => break, // cannot happen with these patterns
                },
            };
            f(&bytes[last..end]);
            last = end;
        }
    }

    /// The piece the split pattern finds at `i` (the look-ahead given back).
    pub(crate) fn pattern_piece(
        &self,
        cache: &mut regex_automata::meta::Cache,
        text: &str,
        i: usize,
    ) -> Option<usize> {
        use regex_automata::{Anchored, Input};
        let input = Input::new(&text[i..]).anchored(Anchored::Yes);
        let m = self.split.search_with(cache, &input)?;
        let mut end = i + m.end();
        if self.lookahead[m.pattern().as_usize()]
            && let Some(c) = text[i..end].chars().next_back()
        {
            end -= c.len_utf8();
        }
        (end > i).then_some(end)
    }
}

pub(crate) static O200K: std::sync::LazyLock<Engine> = std::sync::LazyLock::new(|| {
    let first = [
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "\\p{N}{1,3}",
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
        "\\s*[\\r\\n]+",
        "\\s+$",
    ]
    .join("|");
    Engine::new(
        include_bytes!("../../../data/tokenizers/o200k_base.bin.zst"),
        &first,
        true,
    )
});

pub(crate) static CL100K: std::sync::LazyLock<Engine> = std::sync::LazyLock::new(|| {
    Engine::new(
        include_bytes!("../../../data/tokenizers/cl100k_base.bin.zst"),
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
        false,
    )
});

/// The split pattern's next piece at `i`, found by hand where the text
/// around it is ASCII: the same piece the pattern (leftmost-first, with its
/// look-ahead given back) finds there. `None` (ask the pattern) when the
/// piece starts with a byte that is not ASCII, or when one of the three
/// bytes after where it ends is not: a letter, digit, space or contraction
/// from outside ASCII could have changed where it ends.
pub(crate) fn ascii_piece(o200k: bool, t: &[u8], i: usize) -> Option<usize> {
    let end = split_ascii(o200k, t, i)?;
    if t[end..t.len().min(end + 3)].iter().any(|&b| b >= 0x80) {
        return None;
    }
    Some(end)
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
}

/// `\s` on ASCII (Unicode White_Space: tab to carriage return, space).
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// `[^\r\n\p{L}\p{N}]` on ASCII.
fn is_prefix(b: u8) -> bool {
    b < 0x80 && b != b'\r' && b != b'\n' && !b.is_ascii_alphanumeric()
}

/// `[^\s\p{L}\p{N}]` on ASCII.
fn is_punct(b: u8) -> bool {
    b < 0x80 && !is_space(b) && !b.is_ascii_alphanumeric()
}

/// End of the run of bytes from `i` that `f` accepts.
pub(super) fn run(t: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < t.len() && f(t[i]) {
        i += 1;
    }
    i
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i`: where it ends, if it matches.
fn contraction(t: &[u8], i: usize) -> Option<usize> {
    if t.get(i) != Some(&b'\'') {
        return None;
    }
    let c = t.get(i + 1)?.to_ascii_lowercase();
    match c {
        b's' | b't' | b'm' | b'd' => Some(i + 2),
        b'r' | b'v' if t.get(i + 2).map(u8::to_ascii_lowercase) == Some(b'e') => Some(i + 3),
        b'l' if t.get(i + 2).map(u8::to_ascii_lowercase) == Some(b'l') => Some(i + 3),
        _ => None,
    }
}

/// The three whitespace alternatives every pattern ends with, from `i` (a
/// space): `\s*[\r\n]+` (to just after the run's last line break), `\s+$`,
/// `\s+(?!\S)` (the run but its last character, when that leaves one),
/// `\s+`.
pub(super) fn space_piece(t: &[u8], i: usize) -> Option<usize> {
    let w = run(t, i, is_space);
    if w < t.len() && t[w] >= 0x80 {
        return None;
    }
    if let Some(last) = t[i..w].iter().rposition(|&b| b == b'\r' || b == b'\n') {
        return Some(i + last + 1);
    }
    if w == t.len() {
        return Some(w);
    }
    Some(if w - i >= 2 { w - 1 } else { w })
}

/// The split pattern (o200k's, else cl100k's) on ASCII text at `i` (see [`O200K`] and
/// [`CL100K`]): the two differ only in the contraction (a piece of its own
/// first in cl100k, a suffix of a word in o200k), in how words split by case
/// (o200k only) and in whether `/` closes a punctuation run (o200k only).
fn split_ascii(o200k: bool, t: &[u8], i: usize) -> Option<usize> {
    let c = t[i];
    if c >= 0x80 {
        return None;
    }
    if !o200k && let Some(e) = contraction(t, i) {
        return Some(e);
    }
    // [^\r\n\p{L}\p{N}]? before the letters
    let p = if is_prefix(c) && t.get(i + 1).is_some_and(|&b| is_letter(b)) {
        i + 1
    } else {
        i
    };
    if is_letter(t[p]) {
        if !o200k {
            return Some(run(t, p, is_letter)); // \p{L}+
        }
        // [upper]*[lower]+('s…)? | [upper]+[lower]*('s…)?: either way the
        // letters run to `l` (the capitals, then any lower-case after them).
        let u = run(t, p, |b| b.is_ascii_uppercase());
        let l = run(t, u, |b| b.is_ascii_lowercase());
        return Some(contraction(t, l).unwrap_or(l));
    }
    if c.is_ascii_digit() {
        return Some(run(t, i, |b| b.is_ascii_digit()).min(i + 3));
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*` (o200k), `[\r\n]*` (cl100k)
    let q = if c == b' ' && t.get(i + 1).is_some_and(|&b| is_punct(b)) {
        i + 1
    } else {
        i
    };
    if is_punct(t[q]) {
        let e = run(t, q, is_punct);
        if e < t.len() && t[e] >= 0x80 {
            return None;
        }
        return Some(run(t, e, |b| {
            b == b'\r' || b == b'\n' || (o200k && b == b'/')
        }));
    }
    space_piece(t, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ascii_lane_cuts_where_the_pattern_does() {
        let mut asked = 0;
        for (engine, o200k) in [(&*O200K, true), (&*CL100K, false)] {
            let mut cache = engine.split.create_cache();
            let mut texts = super::super::tests::fuzzed(11 + o200k as u64, 4000);
            texts.extend(
                super::super::tests::fuzzed(5, 4000)
                    .iter()
                    .map(|s| s.replace(|c: char| !c.is_ascii(), " ")),
            );
            for text in &texts {
                let mut i = 0;
                while i < text.len() {
                    let want = engine.pattern_piece(&mut cache, text, i).unwrap();
                    if let Some(end) = ascii_piece(o200k, text.as_bytes(), i) {
                        asked += 1;
                        assert_eq!(end, want, "o200k {o200k} at {i} of {text:?}");
                    }
                    i = want;
                }
            }
        }
        assert!(asked > 10_000, "the lane took only {asked} pieces");
    }

    #[test]
    fn the_tables_expand() {
        assert_eq!(O200K.ranks.len(), 199_998);
        assert_eq!(CL100K.ranks.len(), 100_256);
    }
}
