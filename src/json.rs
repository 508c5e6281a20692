//! JSON values exactly as the reference (JavaScript) sees them.
//!
//! The reference parses every line with `JSON.parse` and writes with
//! `JSON.stringify`, so a byte-exact reader needs three things `serde_json`
//! does not give: object key order kept with duplicate keys resolved "last
//! value wins at the first position", strings that may hold unpaired UTF-16
//! surrogates (`"\ud800"` is legal JSON and legal JavaScript), and numbers
//! printed with ECMAScript `Number::toString` (`1.0` → `1`, `-0` → `0`,
//! `1e21` → `1e+21`).
//!
//! [`Value`] borrows from the line it was parsed from: a string without escapes
//! is a slice of the input, so most of a 100 MB log is never copied. Call
//! [`Value::into_owned`] to keep a value past its line.

use std::borrow::Cow;
use std::fmt::Write as _;

pub(crate) mod ser;

/// A JSON string. Either decoded UTF-8 text, or the escaped source text of a
/// string that had backslash escapes (decoded on demand, because it may hold
/// lone surrogates that no Rust `str` can).
///
/// Invariant: `raw` is always valid UTF-8. Unescaped strings are slices of
/// a `&str` the parser was given (or text from `JStr::from_text`); escaped
/// ones are such slices too, or text with `\uXXXX` escapes written by
/// `JStr::from_units`. The `unsafe` reads of `raw` as `str` below rest on
/// this, and it is why [`Value::parse`] takes `&str`, not bytes.
#[derive(Clone, Debug)]
pub struct JStr<'a> {
    /// UTF-8 (see the invariant above); bytes only so that both kinds share
    /// one field.
    raw: Cow<'a, [u8]>,
    /// `raw` is JSON-escaped source text (between the quotes) rather than text.
    escaped: bool,
    /// The UTF-16 length, when the parser counted it on the way (it reads
    /// every byte anyway); [`LEN16_UNKNOWN`] otherwise.
    len16: u32,
}

/// [`JStr::len16`] not counted yet.
const LEN16_UNKNOWN: u32 = u32::MAX;

/// A parsed JSON value; objects keep their key order.
#[derive(Debug)]
pub enum Value<'a> {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// Every JSON number is an IEEE double, as in JavaScript.
    Num(f64),
    /// A string.
    Str(JStr<'a>),
    /// An array.
    Arr(Vec<Value<'a>>),
    /// An object, in source key order (duplicates already resolved).
    Obj(Vec<(JStr<'a>, Value<'a>)>),
}

/// An owned value, kept beyond the line it came from.
pub type OwnedValue = Value<'static>;

impl Clone for Value<'_> {
    fn clone(&self) -> Self {
        self.copy_strs(&JStr::clone)
    }
}

/// Why a text is not JSON. Positions are byte offsets within the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct ParseError {
    /// What was wrong.
    pub what: &'static str,
    /// Byte offset in the parsed text.
    pub at: usize,
}

/// Where an event line's `data` and `data.message` values sit (byte ranges
/// of the line), as recorded by [`Value::parse_event_line`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EventSpans {
    /// The top-level `data` member's value.
    pub data: Option<(u32, u32)>,
    /// `data.message`'s value.
    pub message: Option<(u32, u32)>,
    /// `data.stream` was checked by a [`StreamSkipper`] and left out of the
    /// value (an empty array stands for it).
    pub stream_skipped: bool,
}

/// Checks a `data.stream` value straight from the line's bytes, from its
/// start at a nesting depth, and gives the offset just past it, or `None`
/// to have it parsed the normal way. It must accept only values the normal
/// way accepts, in `JSON.stringify`'s spelling.
pub(crate) type StreamSkipper = fn(&[u8], usize, usize) -> Option<usize>;

/// Largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`).
pub(crate) const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// `n` as an integer when `Number.isSafeInteger(n)` (`-0` gives 0). A cast
/// round trip instead of `fract()`, which is a libm call on baseline x86_64.
#[inline]
fn safe_int(n: f64) -> Option<i64> {
    if n.abs() <= MAX_SAFE {
        let i = n as i64;
        if i as f64 == n {
            return Some(i);
        }
    }
    None
}

impl<'a> JStr<'a> {
    /// The empty string (a slot about to be written).
    const EMPTY: JStr<'a> = JStr {
        raw: Cow::Borrowed(&[]),
        escaped: false,
        len16: 0,
    };

    /// A string from text.
    pub(crate) fn from_text(s: impl Into<Cow<'a, str>>) -> Self {
        let raw = match s.into() {
            Cow::Borrowed(b) => Cow::Borrowed(b.as_bytes()),
            Cow::Owned(o) => Cow::Owned(o.into_bytes()),
        };
        JStr {
            raw,
            escaped: false,
            len16: LEN16_UNKNOWN,
        }
    }

    /// A string from UTF-16 code units (any, including lone surrogates).
    pub(crate) fn from_units(units: &[u16]) -> JStr<'static> {
        match String::from_utf16(units) {
            Ok(s) => JStr::from_text(s),
            Err(_) => {
                let mut raw = String::with_capacity(units.len() + 8);
                write_escaped_units(&mut raw, units);
                JStr {
                    raw: Cow::Owned(raw.into_bytes()),
                    escaped: true,
                    len16: LEN16_UNKNOWN,
                }
            }
        }
    }

    /// The text, when it has no lone surrogate.
    pub(crate) fn as_str(&self) -> Option<Cow<'_, str>> {
        if !self.escaped {
            // SAFETY: unescaped strings are built only from valid UTF-8.
            return Some(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(&self.raw)
            }));
        }
        String::from_utf16(&self.units()).ok().map(Cow::Owned)
    }

    /// The text, with any lone surrogate replaced by U+FFFD (for display).
    pub fn to_lossy(&self) -> Cow<'_, str> {
        if !self.escaped {
            return self.as_str().unwrap();
        }
        Cow::Owned(unescape_lossy(&self.raw))
    }

    /// The characters of [`Self::to_lossy`], in order, to `f` until it
    /// returns `false` (a lone surrogate is U+FFFD), without building them.
    pub(crate) fn each_char_lossy(&self, mut f: impl FnMut(char) -> bool) {
        if !self.escaped {
            // SAFETY: `raw` is UTF-8 (the invariant on `JStr`).
            let s = unsafe { std::str::from_utf8_unchecked(&self.raw) };
            for c in s.chars() {
                if !f(c) {
                    return;
                }
            }
            return;
        }
        for c in char::decode_utf16(self.escaped_units()) {
            if !f(c.unwrap_or(char::REPLACEMENT_CHARACTER)) {
                return;
            }
        }
    }

    /// Whether the string equals `s`.
    #[inline]
    pub fn eq_str(&self, s: &str) -> bool {
        if !self.escaped {
            let a: &[u8] = &self.raw;
            let b = s.as_bytes();
            // Keys are short: a byte loop beats a memcmp call.
            return a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y);
        }
        self.escaped_units().eq(s.encode_utf16())
    }

    fn escaped_units(&self) -> EscapedUnits<'_> {
        EscapedUnits {
            raw: &self.raw,
            i: 0,
            pending: None,
        }
    }

    /// The UTF-16 code units (JavaScript's view of the string).
    pub(crate) fn units(&self) -> Vec<u16> {
        if !self.escaped {
            // SAFETY: `raw` is UTF-8 (the invariant on `JStr`).
            let s = unsafe { std::str::from_utf8_unchecked(&self.raw) };
            return s.encode_utf16().collect();
        }
        let mut out = Vec::with_capacity(self.raw.len());
        walk_escaped(&self.raw, |p| match p {
            Piece::Plain(seg) => out.extend(seg.encode_utf16()),
            Piece::Escape(u) => out.push(u),
        });
        out
    }

    /// Length in UTF-16 code units (JavaScript `String.length`).
    pub fn len16(&self) -> usize {
        if self.len16 != LEN16_UNKNOWN {
            return self.len16 as usize;
        }
        if !self.escaped {
            return utf16_len_of_utf8(&self.raw);
        }
        escaped_len16(&self.raw)
    }

    /// The code points (`Array.from(s)`): a lone surrogate is one code point.
    pub fn code_points(&self) -> Vec<u32> {
        if !self.escaped {
            // SAFETY: `raw` is UTF-8 (the invariant on `JStr`).
            let s = unsafe { std::str::from_utf8_unchecked(&self.raw) };
            return s.chars().map(|c| c as u32).collect();
        }
        // Only two escaped surrogates can pair: a raw character is never one.
        let mut out: Vec<u32> = Vec::with_capacity(self.raw.len());
        let mut high = false;
        walk_escaped(&self.raw, |p| match p {
            Piece::Plain(seg) => {
                out.extend(seg.chars().map(|c| c as u32));
                high = false;
            }
            Piece::Escape(u) => match out.last_mut() {
                Some(hi) if high && (0xDC00..0xE000).contains(&u) => {
                    *hi = 0x10000 + ((*hi - 0xD800) << 10) + (u as u32 - 0xDC00);
                    high = false;
                }
                _ => {
                    out.push(u as u32);
                    high = (0xD800..0xDC00).contains(&u);
                }
            },
        });
        out
    }

    /// Number of code points.
    #[cfg(test)]
    pub(crate) fn count_code_points(&self) -> usize {
        scan_code_points(&self.raw, self.escaped, ScanPoint::START, &[], &mut [])
    }

    /// [`Self::count_code_points`] for cutting with
    /// [`Self::cut_around_counted`], without walking the text: a string's
    /// code points are its UTF-16 units (known from the parse) less one for
    /// each character written as four UTF-8 bytes and for each escaped
    /// surrogate pair, both found at memory speed.
    pub(crate) fn count_code_points_marked(&self) -> CodePointCount {
        let raw = &self.raw[..];
        let mut n = self.len16() - count_four_byte_leads(raw);
        if self.escaped {
            for s in memchr::memmem::find_iter(raw, b"\\u") {
                let unit = |at: usize| raw.get(at + 2..at + 6).map(hex4);
                if is_escaper(raw, s)
                    && unit(s).is_some_and(|u| (0xD800..0xDC00).contains(&u))
                    && raw.get(s + 6..s + 8) == Some(b"\\u")
                    && unit(s + 6).is_some_and(|u| (0xDC00..0xE000).contains(&u))
                {
                    n -= 1;
                }
            }
        }
        CodePointCount { n }
    }

    /// The byte offsets in the raw text where code points `a` and `b`
    /// (`a <= b`) start; the raw length for one at or past the end.
    fn code_point_offsets(&self, a: usize, b: usize) -> (usize, usize) {
        let mut found = [self.raw.len(); 2];
        scan_code_points(
            &self.raw,
            self.escaped,
            ScanPoint::START,
            &[a, b],
            &mut found,
        );
        (found[0], found[1])
    }

    /// The byte offset in the raw text where code point `k` starts (the raw
    /// length at or past the end), scanning from `from`, a place at or
    /// before it.
    fn code_point_offset_from(&self, from: ScanPoint, k: usize) -> usize {
        let mut found = [self.raw.len()];
        scan_code_points(&self.raw, self.escaped, from, &[k], &mut found);
        found[0]
    }

    /// The UTF-16 units of code points `..a` and of `b..` (`a <= b`), as
    /// `Array.from(s).slice(0, a)` and `.slice(b)` joined give them, without
    /// decoding what lies between.
    pub(crate) fn units_around(&self, a: usize, b: usize) -> (Vec<u16>, Vec<u16>) {
        let (oa, ob) = self.code_point_offsets(a, b);
        (
            self.part(0..oa).units(),
            self.part(ob..self.raw.len()).units(),
        )
    }

    /// Code points `..a`, then `between`, then code points `b..` (`a <= b`):
    /// what joining `Array.from(s).slice(0, a)`, `between` and
    /// `.slice(b)` gives in JavaScript, built from the raw text without
    /// decoding any of it (the pruner's head, marker and tail).
    pub(crate) fn cut_around(&self, a: usize, b: usize, between: &str) -> JStr<'static> {
        let (oa, ob) = self.code_point_offsets(a, b);
        self.cut_at(oa, ob, between)
    }

    /// [`Self::cut_around`] of a string counted with
    /// [`Self::count_code_points_marked`] (`count`): the head is found from
    /// the start, the tail from a place near the end, so a long string is
    /// never scanned through.
    pub(crate) fn cut_around_counted(
        &self,
        count: &CodePointCount,
        a: usize,
        b: usize,
        between: &str,
    ) -> JStr<'static> {
        let oa = self.code_point_offset_from(ScanPoint::START, a);
        let ob = self.code_point_offset_from_end(count.n, b);
        self.cut_at(oa, ob, between)
    }

    /// [`Self::code_point_offset_from`] for code point `k` of the `n`, found
    /// from a place before it near the end of the text: one far enough back
    /// to hold the `n - k` code points from `k` on (counted from there;
    /// further back while it holds fewer).
    fn code_point_offset_from_end(&self, n: usize, k: usize) -> usize {
        let raw = &self.raw[..];
        let want = n.saturating_sub(k);
        if want == 0 {
            return raw.len();
        }
        let mut back = 2 * want + 64;
        while back < raw.len() {
            let from = self.scan_point_near(raw.len() - back);
            let m = scan_code_points(raw, self.escaped, from, &[], &mut []);
            if m >= want {
                let from = ScanPoint { n: n - m, ..from };
                return self.code_point_offset_from(from, k);
            }
            back *= 4;
        }
        self.code_point_offset_from(ScanPoint::START, k)
    }

    /// The first place at or after byte `at` a scan can start from: not
    /// inside a character or an escape. Its count is 0 (to be set by the
    /// caller); it is pending after an escaped high surrogate.
    fn scan_point_near(&self, mut at: usize) -> ScanPoint {
        let raw = &self.raw[..];
        while at < raw.len() && raw[at] & 0xC0 == 0x80 {
            at += 1;
        }
        if !self.escaped {
            return ScanPoint {
                at,
                n: 0,
                pending: false,
            };
        }
        // The nearest escape starting before `at` is the only one that can
        // cover it: past its end when it does.
        for s in (at.saturating_sub(5)..at).rev() {
            if raw[s] == b'\\' && is_escaper(raw, s) {
                let end = s + if raw.get(s + 1) == Some(&b'u') { 6 } else { 2 };
                at = at.max(end);
                break;
            }
        }
        let pending = at >= 6
            && raw[at - 6] == b'\\'
            && raw[at - 5] == b'u'
            && is_escaper(raw, at - 6)
            && (0xD800..0xDC00).contains(&hex4(&raw[at - 4..at]));
        ScanPoint { at, n: 0, pending }
    }

    /// The raw text before byte `oa`, `between`, and the raw text from
    /// byte `ob` (both where code points start).
    fn cut_at(&self, oa: usize, ob: usize, between: &str) -> JStr<'static> {
        let (head, tail) = (&self.raw[..oa], &self.raw[ob..]);
        let mut raw = Vec::with_capacity(head.len() + between.len() * 2 + tail.len());
        raw.extend_from_slice(head);
        if self.escaped {
            // Escaped source text joins as text does: a lone high surrogate
            // at the end of one part pairs with a lone low one after it
            // when decoded, as the joined UTF-16 units would.
            let mut e = String::with_capacity(between.len() * 2);
            write_escaped_str(&mut e, between);
            raw.extend_from_slice(e.as_bytes());
        } else {
            raw.extend_from_slice(between.as_bytes());
        }
        raw.extend_from_slice(tail);
        // Counted once here: the pruner prices the result, and the writer
        // prices it again when it validates the batch.
        let len16 = self.part(0..oa).len16()
            + between.encode_utf16().count()
            + self.part(ob..self.raw.len()).len16();
        JStr {
            raw: Cow::Owned(raw),
            escaped: self.escaped,
            len16: u32::try_from(len16).unwrap_or(LEN16_UNKNOWN),
        }
    }

    /// The strings joined, as JavaScript's `+` joins them (a lone high
    /// surrogate at the end of one pairs with a lone low one at the start of
    /// the next), without going through UTF-16: escaped source text joins
    /// as it stands.
    pub(crate) fn concat(parts: &[&JStr<'_>]) -> JStr<'static> {
        let len: usize = parts.iter().map(|p| p.raw.len()).sum();
        let escaped = parts.iter().any(|p| p.escaped);
        let mut raw: Vec<u8> = Vec::with_capacity(len + len / 16);
        for p in parts {
            if p.escaped || !escaped {
                raw.extend_from_slice(&p.raw);
            } else {
                let mut e = String::with_capacity(p.raw.len() + 8);
                // SAFETY: `raw` is UTF-8 (the invariant on `JStr`).
                write_escaped_str(&mut e, unsafe { std::str::from_utf8_unchecked(&p.raw) });
                raw.extend_from_slice(e.as_bytes());
            }
        }
        JStr {
            raw: Cow::Owned(raw),
            escaped,
            len16: LEN16_UNKNOWN,
        }
    }

    /// A part of the raw text (cut at a code point boundary) as a string.
    fn part(&self, r: std::ops::Range<usize>) -> JStr<'_> {
        JStr {
            raw: Cow::Borrowed(&self.raw[r]),
            escaped: self.escaped,
            len16: LEN16_UNKNOWN,
        }
    }

    /// Whether the string is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Copy into an owned string.
    fn into_owned(self) -> JStr<'static> {
        JStr {
            raw: Cow::Owned(self.raw.into_owned()),
            escaped: self.escaped,
            len16: self.len16,
        }
    }

    /// Compare by UTF-16 code units (JavaScript `<` on strings / `Array#sort`).
    pub(crate) fn cmp_units(&self, other: &JStr<'_>) -> std::cmp::Ordering {
        if !self.escaped && !other.escaped && self.raw.is_ascii() && other.raw.is_ascii() {
            return self.raw.cmp(&other.raw);
        }
        self.units().cmp(&other.units())
    }

    fn same(&self, other: &JStr<'_>) -> bool {
        match (self.escaped, other.escaped) {
            (false, false) => self.raw == other.raw,
            (true, true) => self.escaped_units().eq(other.escaped_units()),
            (true, false) => {
                // SAFETY: `other.raw` is UTF-8 (the invariant on `JStr`).
                let s = unsafe { std::str::from_utf8_unchecked(&other.raw) };
                self.escaped_units().eq(s.encode_utf16())
            }
            (false, true) => other.same(self),
        }
    }

    /// Append the JSON form (with quotes, JavaScript escaping) to `out`.
    fn write_json(&self, out: &mut String) {
        out.push('"');
        if !self.escaped {
            // SAFETY: `raw` is UTF-8 (the invariant on `JStr`).
            let s = unsafe { std::str::from_utf8_unchecked(&self.raw) };
            write_escaped_str(out, s);
        } else {
            write_reescaped(out, &self.raw);
        }
        out.push('"');
    }
}

impl PartialEq for JStr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
    }
}

impl From<&'static str> for JStr<'static> {
    fn from(s: &'static str) -> Self {
        JStr::from_text(s)
    }
}

impl From<String> for JStr<'static> {
    fn from(s: String) -> Self {
        JStr::from_text(s)
    }
}

/// The code point of a high and a low surrogate, when they form a pair.
#[inline]
pub(crate) fn surrogate_pair(hi: u16, lo: u16) -> Option<u32> {
    ((0xD800..0xDC00).contains(&hi) && (0xDC00..0xE000).contains(&lo))
        .then(|| 0x10000 + (((hi as u32) - 0xD800) << 10) + ((lo as u32) - 0xDC00))
}

/// Append one code point (a lone surrogate included) as UTF-16 units.
#[inline]
pub(crate) fn push_code_point_utf16(cp: u32, out: &mut Vec<u16>) {
    if cp >= 0x10000 {
        let v = cp - 0x10000;
        out.push(0xD800 + (v >> 10) as u16);
        out.push(0xDC00 + (v & 0x3FF) as u16);
    } else {
        out.push(cp as u16);
    }
}

/// Convert UTF-16 units to code points the way `Array.from` iterates.
#[cfg(test)]
pub(crate) fn units_to_code_points(units: &[u16]) -> Vec<u32> {
    let mut out = Vec::with_capacity(units.len());
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        match units.get(i + 1).and_then(|&lo| surrogate_pair(u, lo)) {
            Some(c) => {
                out.push(c);
                i += 2;
            }
            None => {
                out.push(u as u32);
                i += 1;
            }
        }
    }
    out
}

fn utf16_len_of_utf8(b: &[u8]) -> usize {
    // Every byte that starts a character counts 1; 4-byte sequences count 2.
    let mut n = 0usize;
    let mut i = 0usize;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SSE2 (x86_64 baseline), sixteen bytes at a time; ASCII blocks
        // (most text) count one per byte.
        // SAFETY: every load reads 16 bytes inside `b` (`i + 16 <= len`).
        unsafe {
            let top2 = _mm_set1_epi8(0xC0u8 as i8);
            let cont = _mm_set1_epi8(0x80u8 as i8);
            let f0 = _mm_set1_epi8(0xF0u8 as i8);
            while i + 16 <= b.len() {
                let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
                let high = _mm_movemask_epi8(v) as u32;
                if high == 0 {
                    n += 16;
                } else {
                    let c = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, top2), cont)) as u32;
                    let four = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, f0), v)) as u32;
                    n += 16 - c.count_ones() as usize + four.count_ones() as usize;
                }
                i += 16;
            }
        }
    }
    for &x in &b[i..] {
        n += ((x & 0xC0) != 0x80) as usize + (x >= 0xF0) as usize;
    }
    n
}

fn hex4(b: &[u8]) -> u16 {
    let mut v = 0u16;
    for &c in &b[..4] {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => c - b'A' + 10,
        };
        v = v * 16 + d as u16;
    }
    v
}

/// Lazily decodes validated escaped source text into UTF-16 units.
struct EscapedUnits<'r> {
    raw: &'r [u8],
    i: usize,
    pending: Option<u16>,
}

impl Iterator for EscapedUnits<'_> {
    type Item = u16;
    #[inline]
    fn next(&mut self) -> Option<u16> {
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        let raw = self.raw;
        let c = *raw.get(self.i)?;
        if c < 0x80 && c != b'\\' {
            self.i += 1;
            return Some(c as u16);
        }
        if c == b'\\' {
            let e = raw[self.i + 1];
            self.i += 2;
            return Some(match e {
                b'"' => 0x22,
                b'\\' => 0x5C,
                b'/' => 0x2F,
                b'b' => 0x08,
                b'f' => 0x0C,
                b'n' => 0x0A,
                b'r' => 0x0D,
                b't' => 0x09,
                _ => {
                    let v = hex4(&raw[self.i..]);
                    self.i += 4;
                    v
                }
            });
        }
        let len = utf8_len(c);
        // SAFETY: `raw` is UTF-8 (the parser's input, or a `JStr`'s `raw`), and
        // `c` is the lead byte of a character `utf8_len(c)` bytes long.
        let s = unsafe { std::str::from_utf8_unchecked(&raw[self.i..self.i + len]) };
        self.i += len;
        let ch = s.chars().next().unwrap();
        let mut buf = [0u16; 2];
        let enc = ch.encode_utf16(&mut buf);
        if enc.len() == 2 {
            self.pending = Some(enc[1]);
        }
        Some(enc[0])
    }
}

/// Count UTF-16 units of validated escaped source text.
fn escaped_len16(raw: &[u8]) -> usize {
    let mut n = 0usize;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\\', &raw[i..]) {
        n += utf16_len_of_utf8(&raw[i..i + off]);
        i += off;
        // One escape is one UTF-16 unit, whatever its spelling.
        i += if raw[i + 1] == b'u' { 6 } else { 2 };
        n += 1;
    }
    n + utf16_len_of_utf8(&raw[i..])
}

/// An escaped string's text with lone surrogates as U+FFFD, decoded
/// straight to UTF-8 (what `String::from_utf16_lossy(&units)` gives, without
/// the round trip through UTF-16): runs without a backslash are copied.
fn unescape_lossy(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let run = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |n| i + n);
        // SAFETY: `raw` is UTF-8 and a backslash is never inside a character.
        out.push_str(unsafe { std::str::from_utf8_unchecked(&raw[i..run]) });
        i = run;
        if i >= raw.len() {
            break;
        }
        let e = raw[i + 1];
        i += 2;
        let c = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            _ => {
                let u = hex4(&raw[i..]);
                i += 4;
                match u {
                    0xD800..=0xDBFF => {
                        let lo = (raw.get(i..i + 2) == Some(b"\\u"))
                            .then(|| hex4(&raw[i + 2..]))
                            .filter(|lo| (0xDC00..=0xDFFF).contains(lo));
                        match lo {
                            Some(lo) => {
                                i += 6;
                                let c =
                                    0x10000 + (((u as u32) - 0xD800) << 10) + (lo as u32 - 0xDC00);
                                char::from_u32(c).unwrap_or('\u{fffd}')
                            }
                            None => '\u{fffd}',
                        }
                    }
                    _ => char::from_u32(u as u32).unwrap_or('\u{fffd}'),
                }
            }
        };
        out.push(c);
    }
    out
}

/// A piece of an escaped string's raw text.
enum Piece<'a> {
    /// A run of characters written as themselves.
    Plain(&'a str),
    /// The UTF-16 unit of one escape.
    Escape(u16),
}

/// An escaped string's raw text as its pieces, in order.
#[inline]
fn walk_escaped(raw: &[u8], mut f: impl FnMut(Piece<'_>)) {
    let mut i = 0usize;
    while i < raw.len() {
        let next = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |k| i + k);
        if next > i {
            // SAFETY: `raw` is UTF-8 and a backslash is never inside a character.
            f(Piece::Plain(unsafe {
                std::str::from_utf8_unchecked(&raw[i..next])
            }));
        }
        if next >= raw.len() {
            break;
        }
        let e = raw[next + 1];
        i = next + 2;
        let u = match e {
            b'"' => 0x22,
            b'\\' => 0x5C,
            b'/' => 0x2F,
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => 0x0A,
            b'r' => 0x0D,
            b't' => 0x09,
            _ => {
                let v = hex4(&raw[i..]);
                i += 4;
                v
            }
        };
        f(Piece::Escape(u));
    }
}

/// Count the code points (`Array.from(s).length`) of a string's raw text,
/// escaped JSON source text when `escaped`, and record in `found[i]` the
/// byte offset where code point `targets[i]` starts (`targets` ascending;
/// entries past the end are left as they are). With targets, it stops once
/// the last is found (the count is then partial). Sixteen bytes at a time:
/// runs of characters written as themselves are counted by their lead
/// bytes, escapes one by one (a `\u` high surrogate followed by a `\u` low
/// one is one code point, as are lone ones).
///
/// The scan starts at `from` ([`ScanPoint::START`], or a place not inside
/// a character or an escape whose count is known); targets before it are
/// not found.
fn scan_code_points(
    raw: &[u8],
    escaped: bool,
    from: ScanPoint,
    targets: &[usize],
    found: &mut [usize],
) -> usize {
    let mut sc = CodePointScan {
        raw,
        targets,
        found,
        n: from.n,
        t: targets.partition_point(|&t| t < from.n),
        pending: from.pending,
    };
    let mut i = from.at;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= raw.len() {
        use std::arch::x86_64::*;
        // SAFETY: the load reads 16 bytes inside `raw`.
        let (cont, bs, u) = unsafe {
            let v = _mm_loadu_si128(raw.as_ptr().add(i) as *const __m128i);
            let cont = _mm_movemask_epi8(_mm_cmpeq_epi8(
                _mm_and_si128(v, _mm_set1_epi8(0xC0u8 as i8)),
                _mm_set1_epi8(0x80u8 as i8),
            )) as u32;
            let (bs, u) = if escaped {
                (
                    _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8))) as u32,
                    _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'u' as i8))) as u32,
                )
            } else {
                (0, 0)
            };
            (cont, bs, u)
        };
        // Short escapes only (a text's `\n` and `\t`): each is two
        // characters written for one code point, so the block holds its
        // lead bytes less its backslashes. That needs every backslash to
        // start an escape (none follows another), its escape to end inside
        // the block (none is the last byte) and not to be `\u` (a
        // surrogate may pair), and no target to fall in the block.
        if bs != 0 && bs & 0x8000 == 0 && bs & (bs << 1) == 0 && u & (bs << 1) == 0 {
            let c = (!cont & 0xFFFF).count_ones() as usize - bs.count_ones() as usize;
            if sc.targets.get(sc.t).is_none_or(|&t| t >= sc.n + c) {
                sc.n += c;
                sc.pending = false;
                i += 16;
                continue;
            }
        }
        // Within the block: literal runs between escapes, from `p` on.
        let mut p = 0usize;
        loop {
            let ahead = bs & (u32::MAX << p);
            let q = if ahead == 0 {
                16
            } else {
                ahead.trailing_zeros() as usize
            };
            if q > p {
                sc.run(i, !cont & (((1u32 << q) - 1) & (u32::MAX << p)));
            }
            if q >= 16 {
                i += 16;
                break;
            }
            let j = sc.escape(i + q);
            if j >= i + 16 {
                i = j;
                break;
            }
            p = j - i;
        }
        if sc.done() {
            return sc.n;
        }
    }
    while i < raw.len() && !sc.done() {
        let c = raw[i];
        if escaped && c == b'\\' {
            i = sc.escape(i);
        } else {
            sc.run(i, u32::from((c as i8) >= -0x40));
            i += 1;
        }
    }
    sc.n
}

/// A place in a string's raw text where [`scan_code_points`] can start.
#[derive(Clone, Copy, Debug)]
struct ScanPoint {
    /// Byte offset: never inside an escape.
    at: usize,
    /// Code points that start before it.
    n: usize,
    /// An escaped high surrogate ends right before it (a low one right
    /// after it pairs with it).
    pending: bool,
}

impl ScanPoint {
    const START: ScanPoint = ScanPoint {
        at: 0,
        n: 0,
        pending: false,
    };
}

/// A string's code points counted ([`JStr::count_code_points_marked`]),
/// for cutting it.
#[derive(Debug, Clone)]
pub(crate) struct CodePointCount {
    n: usize,
}

/// How many bytes of `raw` lead a four-byte UTF-8 character (`0xF0` and
/// up). Sixteen bytes at a time, counted in byte lanes and summed every
/// 255 blocks: a plain iterator count is vectorised four bytes at a time.
fn count_four_byte_leads(raw: &[u8]) -> usize {
    let mut total = 0usize;
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: every load reads 16 bytes inside `raw` (`i + 16 <= len`);
    // SSE2 is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::*;
        let lead4 = _mm_set1_epi8(0xF0u8 as i8);
        while i + 16 <= raw.len() {
            let mut lanes = _mm_setzero_si128();
            let mut blocks = 0;
            while blocks < 255 && i + 16 <= raw.len() {
                let v = _mm_loadu_si128(raw.as_ptr().add(i) as *const __m128i);
                // -1 in each lane whose byte is at least 0xF0.
                let hit = _mm_cmpeq_epi8(_mm_max_epu8(v, lead4), v);
                lanes = _mm_sub_epi8(lanes, hit);
                i += 16;
                blocks += 1;
            }
            let sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
            total += _mm_cvtsi128_si64(sums) as usize
                + _mm_cvtsi128_si64(_mm_srli_si128(sums, 8)) as usize;
        }
    }
    total + raw[i..].iter().filter(|&&c| c >= 0xF0).count()
}

/// Whether the backslash at `s` starts an escape: an odd run of
/// backslashes ends there (the others pair up as `\\\\`).
fn is_escaper(raw: &[u8], s: usize) -> bool {
    let run = raw[..=s].iter().rev().take_while(|&&c| c == b'\\').count();
    run % 2 == 1
}

impl CodePointCount {
    /// The number of code points.
    pub(crate) fn len(&self) -> usize {
        self.n
    }
}

/// The state of [`scan_code_points`].
struct CodePointScan<'s> {
    raw: &'s [u8],
    targets: &'s [usize],
    found: &'s mut [usize],
    /// Code points so far.
    n: usize,
    /// The next target.
    t: usize,
    /// The previous code point was a high surrogate from an escape.
    pending: bool,
}

impl CodePointScan<'_> {
    fn done(&self) -> bool {
        !self.targets.is_empty() && self.t >= self.targets.len()
    }

    /// Literal bytes from `base`: bit k of `leads` marks a lead byte at
    /// `base + k`.
    #[inline]
    fn run(&mut self, base: usize, leads: u32) {
        if leads == 0 {
            return;
        }
        let c = leads.count_ones() as usize;
        while self.t < self.targets.len() && self.targets[self.t] < self.n + c {
            // The (target - n)-th lead byte of the run.
            let mut m = leads;
            for _ in 0..self.targets[self.t] - self.n {
                m &= m - 1;
            }
            self.found[self.t] = base + m.trailing_zeros() as usize;
            self.t += 1;
        }
        self.n += c;
        self.pending = false;
    }

    /// The escape at `at`; where the text after it starts.
    #[inline]
    fn escape(&mut self, at: usize) -> usize {
        if self.raw[at + 1] == b'u' {
            let u = hex4(&self.raw[at + 2..]);
            if self.pending && (0xDC00..0xE000).contains(&u) {
                self.pending = false;
                return at + 6;
            }
            self.start(at);
            self.pending = (0xD800..0xDC00).contains(&u);
            at + 6
        } else {
            self.start(at);
            self.pending = false;
            at + 2
        }
    }

    /// A code point that starts at `at`.
    #[inline]
    fn start(&mut self, at: usize) {
        while self.t < self.targets.len() && self.targets[self.t] == self.n {
            self.found[self.t] = at;
            self.t += 1;
        }
        self.n += 1;
    }
}

fn utf8_len(c: u8) -> usize {
    if c < 0x80 {
        1
    } else if c < 0xE0 {
        2
    } else if c < 0xF0 {
        3
    } else {
        4
    }
}

fn write_escaped_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        // The bytes to escape are the ones that end a plain run: found
        // sixteen at a time.
        let (i, _) = plain_run(bytes, start);
        out.push_str(&s[start..i]);
        let Some(&b) = bytes.get(i) else {
            return;
        };
        push_escape(out, b as u16);
        start = i + 1;
    }
}

fn push_escape(out: &mut String, u: u16) {
    match u {
        0x22 => out.push_str("\\\""),
        0x5C => out.push_str("\\\\"),
        0x08 => out.push_str("\\b"),
        0x0C => out.push_str("\\f"),
        0x0A => out.push_str("\\n"),
        0x0D => out.push_str("\\r"),
        0x09 => out.push_str("\\t"),
        _ => {
            let _ = write!(out, "\\u{:04x}", u);
        }
    }
}

/// Re-escape validated JSON-escaped source text the way `JSON.stringify`
/// writes the decoded string, without decoding it into a buffer first: most
/// escapes (`\n`, `\"` …) are already in JavaScript's form.
fn write_reescaped(out: &mut String, raw: &[u8]) {
    let mut i = 0;
    let mut run = 0;
    let flush = |out: &mut String, from: usize, to: usize| {
        // SAFETY: `raw` is UTF-8 and the range starts and ends at an escape
        // sequence (ASCII) or an end of `raw`: always character boundaries.
        out.push_str(unsafe { std::str::from_utf8_unchecked(&raw[from..to]) });
    };
    while i < raw.len() {
        // Text between escapes is copied as it stands.
        let Some(at) = memchr::memchr(b'\\', &raw[i..]) else {
            break;
        };
        i += at;
        let e = raw[i + 1];
        match e {
            b'/' => {
                flush(out, run, i);
                out.push('/');
                i += 2;
            }
            b'u' => {
                flush(out, run, i);
                let u = hex4(&raw[i + 2..]);
                i += 6;
                if raw.len() >= i + 6
                    && raw[i] == b'\\'
                    && raw[i + 1] == b'u'
                    && let Some(c) = surrogate_pair(u, hex4(&raw[i + 2..]))
                {
                    out.push(char::from_u32(c).unwrap());
                    i += 6;
                    run = i;
                    continue;
                }
                if (0xD800..0xE000).contains(&u) {
                    let _ = write!(out, "\\u{:04x}", u);
                } else if u < 0x20 || u == 0x22 || u == 0x5C {
                    push_escape(out, u);
                } else {
                    out.push(char::from_u32(u as u32).unwrap());
                }
            }
            _ => {
                // \" \\ \b \f \n \r \t: JavaScript writes them the same way,
                // so they stay in the run copied as it stands.
                i += 2;
                continue;
            }
        }
        run = i;
    }
    flush(out, run, raw.len());
}

fn write_escaped_units(out: &mut String, units: &[u16]) {
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        if let Some(c) = units.get(i + 1).and_then(|&lo| surrogate_pair(u, lo)) {
            out.push(char::from_u32(c).unwrap());
            i += 2;
            continue;
        }
        if (0xD800..0xE000).contains(&u) {
            let _ = write!(out, "\\u{:04x}", u);
        } else if u < 0x20 || u == 0x22 || u == 0x5C {
            push_escape(out, u);
        } else {
            out.push(char::from_u32(u as u32).unwrap());
        }
        i += 1;
    }
}

/// `String(n)` (`Number.prototype.toString`): [`js_number`], except that
/// `NaN` and the infinities are spelled out (`JSON.stringify` writes them
/// `null`). A number parsed from a log is never `NaN`, but an out-of-range
/// literal such as `1e400` is `Infinity`, as in JavaScript.
pub(crate) fn js_number_string(n: f64, out: &mut String) {
    if n.is_nan() {
        out.push_str("NaN");
    } else if n.is_infinite() {
        out.push_str(if n > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        js_number(n, out);
    }
}

/// Format a number as ECMAScript `Number::toString` does.
pub(crate) fn js_number(n: f64, out: &mut String) {
    if !n.is_finite() {
        out.push_str("null");
        return;
    }
    if n == 0.0 {
        out.push('0');
        return;
    }
    if n.abs() < 1e15 && (n as i64) as f64 == n {
        let _ = write!(out, "{}", n as i64);
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format_finite(n));
}

impl<'a> Value<'a> {
    /// Parse one complete JSON text (surrounding whitespace allowed).
    ///
    /// The text is `&str` because the parser keeps unescaped strings as
    /// borrowed bytes and hands them out as `&str` later (`JStr::as_str`):
    /// the UTF-8 guarantee has to come from the caller's type.
    ///
    /// ```
    /// let v = dsh::Value::parse(r#"{"type":"user/message","seq":3}"#).unwrap();
    /// assert_eq!(v.get("seq").and_then(|s| s.as_count()), Some(3));
    /// ```
    ///
    /// Bytes that may not be UTF-8 do not compile; validate them first:
    ///
    /// ```compile_fail
    /// let _ = dsh::Value::parse(b"\"\xff\xfe\"");
    /// ```
    pub fn parse(text: &'a str) -> Result<Value<'a>, ParseError> {
        Self::parse_canonical(text).map(|(v, _)| v)
    }

    /// Parse, and tell whether the text is exactly what `JSON.stringify`
    /// writes for the value (no whitespace, JavaScript's escapes and number
    /// spelling, no duplicate keys). For such a text any member's bytes can
    /// be copied instead of re-serialised.
    fn parse_canonical(text: &'a str) -> Result<(Value<'a>, bool), ParseError> {
        Self::parse_with(text.as_bytes(), false, None).map(|(v, c, _)| (v, c))
    }

    /// [`Self::parse_canonical`] for an event line, also giving where its
    /// `data` and `data.message` values sit in the text.
    pub(crate) fn parse_event_line(
        text: &'a str,
    ) -> Result<(Value<'a>, bool, EventSpans), ParseError> {
        Self::parse_with(text.as_bytes(), true, None)
    }

    /// [`Self::parse_event_line`], leaving `data.stream` out (an empty
    /// array in its place, [`EventSpans::stream_skipped`]) when `skip`
    /// accepts it: for readers that never look into embedded streams.
    pub(crate) fn parse_event_line_skipping_stream(
        text: &'a str,
        skip: StreamSkipper,
    ) -> Result<(Value<'a>, bool, EventSpans), ParseError> {
        Self::parse_with(text.as_bytes(), true, Some(skip))
    }

    /// The parser proper. `text` must be valid UTF-8 (see [`JStr`]'s
    /// invariant); only the `&str` entry points above call it.
    fn parse_with(
        text: &'a [u8],
        track: bool,
        skip_stream: Option<StreamSkipper>,
    ) -> Result<(Value<'a>, bool, EventSpans), ParseError> {
        let mut p = Parser {
            track,
            skip_stream,
            ..Parser::at(text, 0, true)
        };
        p.ws();
        let v = p.value(0)?;
        p.ws();
        if p.i != p.b.len() {
            return Err(p.err("unexpected text after the JSON value"));
        }
        Ok((v, p.canonical, p.spans))
    }

    /// Deep copy into an owned value.
    pub fn into_owned(self) -> OwnedValue {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            Value::Num(n) => Value::Num(n),
            Value::Str(s) => Value::Str(s.into_owned()),
            // Plain loops: one frame per nesting level (a deep value is
            // copied on a small stack).
            Value::Arr(a) => {
                let mut out = Vec::with_capacity(a.len());
                for v in a {
                    out.push(v.into_owned());
                }
                Value::Arr(out)
            }
            Value::Obj(o) => {
                let mut out = Vec::with_capacity(o.len());
                for (k, v) in o {
                    out.push((k.into_owned(), v.into_owned()));
                }
                Value::Obj(out)
            }
        }
    }

    /// Deep copy of an object with member `key` set to `v` (in place when
    /// present, else last): `to_owned_value()` then [`Self::set`], without
    /// copying the member that is replaced.
    pub(crate) fn to_owned_with(&self, key: &str, v: OwnedValue) -> OwnedValue {
        let Value::Obj(o) = self else {
            return self.to_owned_value();
        };
        let mut out = Vec::with_capacity(o.len() + 1);
        let mut v = Some(v);
        for (k, x) in o {
            if k.eq_str(key) && v.is_some() {
                out.push((k.clone().into_owned(), v.take().unwrap()));
            } else {
                out.push((k.clone().into_owned(), x.to_owned_value()));
            }
        }
        if let Some(v) = v {
            out.push((JStr::from_text(key.to_string()), v));
        }
        Value::Obj(out)
    }

    /// Deep copy into an owned value without consuming: one walk, each
    /// container and string allocated once (not cloned, then copied again).
    pub fn to_owned_value(&self) -> OwnedValue {
        self.copy_strs(&|s: &JStr<'a>| s.clone().into_owned())
    }

    /// A copy of the value with every string and key given by `f`. Plain
    /// loops: one frame per nesting level (a deep value is copied on a
    /// small stack).
    fn copy_strs<'s, 'b>(&'s self, f: &impl Fn(&'s JStr<'a>) -> JStr<'b>) -> Value<'b> {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Num(n) => Value::Num(*n),
            Value::Str(s) => Value::Str(f(s)),
            Value::Arr(a) => {
                let mut out = Vec::with_capacity(a.len());
                for v in a {
                    out.push(v.copy_strs(f));
                }
                Value::Arr(out)
            }
            Value::Obj(o) => {
                let mut out = Vec::with_capacity(o.len());
                for (k, v) in o {
                    out.push((f(k), v.copy_strs(f)));
                }
                Value::Obj(out)
            }
        }
    }

    /// A string value from text.
    pub fn str(s: impl Into<Cow<'a, str>>) -> Value<'a> {
        Value::Str(JStr::from_text(s))
    }

    /// Object member by key (JavaScript `obj[key]` on an own key).
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Obj(o) => o.iter().find(|(k, _)| k.eq_str(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Mutable object member by key.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value<'a>> {
        match self {
            Value::Obj(o) => o.iter_mut().find(|(k, _)| k.eq_str(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether the object has `key`.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Set `key`: replace in place if present, else append (JavaScript assignment).
    pub fn set(&mut self, key: &str, v: Value<'a>) {
        if let Value::Obj(o) = self {
            if let Some(slot) = o.iter_mut().find(|(k, _)| k.eq_str(key)) {
                slot.1 = v;
            } else {
                o.push((JStr::from_text(key.to_string()), v));
            }
        }
    }

    /// Remove `key` from an object.
    pub fn remove(&mut self, key: &str) -> Option<Value<'a>> {
        if let Value::Obj(o) = self
            && let Some(i) = o.iter().position(|(k, _)| k.eq_str(key))
        {
            return Some(o.remove(i).1);
        }
        None
    }

    /// The object's members.
    pub fn as_obj(&self) -> Option<&Vec<(JStr<'a>, Value<'a>)>> {
        match self {
            Value::Obj(o) => Some(o),
            _ => None,
        }
    }

    /// The array's items.
    pub fn as_arr(&self) -> Option<&Vec<Value<'a>>> {
        match self {
            Value::Arr(a) => Some(a),
            _ => None,
        }
    }

    /// The string.
    pub fn as_jstr(&self) -> Option<&JStr<'a>> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The string as text (None for non-strings or lone surrogates).
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        self.as_jstr().and_then(|s| s.as_str())
    }

    /// Whether this is a string equal to `s`.
    pub fn is_str(&self, s: &str) -> bool {
        matches!(self, Value::Str(j) if j.eq_str(s))
    }

    /// Whether this is a non-empty string.
    pub(crate) fn is_nonempty_str(&self) -> bool {
        matches!(self, Value::Str(j) if !j.is_empty())
    }

    /// The number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }

    /// `Number.isSafeInteger`.
    pub(crate) fn is_safe_int(&self) -> bool {
        matches!(self, Value::Num(n) if safe_int(*n).is_some())
    }

    /// A count: a safe integer ≥ 0 (`-0` counts as 0).
    pub fn as_count(&self) -> Option<u64> {
        match self {
            Value::Num(n) => safe_int(*n).and_then(|i| u64::try_from(i).ok()),
            _ => None,
        }
    }

    /// A safe integer.
    pub(crate) fn as_safe_int(&self) -> Option<i64> {
        match self {
            Value::Num(n) => safe_int(*n),
            _ => None,
        }
    }

    /// Whether this is an object.
    pub fn is_obj(&self) -> bool {
        matches!(self, Value::Obj(_))
    }

    /// Whether this is an array.
    pub(crate) fn is_arr(&self) -> bool {
        matches!(self, Value::Arr(_))
    }

    /// JavaScript truthiness of `value === true`.
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Bool(true))
    }

    /// `JSON.stringify(value)`.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }

    /// Append `JSON.stringify(value)` to `out`.
    pub(crate) fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Num(n) => js_number(*n, out),
            Value::Str(s) => s.write_json(out),
            Value::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_json(out);
                }
                out.push(']');
            }
            Value::Obj(o) => {
                out.push('{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    k.write_json(out);
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }

    /// UTF-16 length of `JSON.stringify(value)`.
    pub(crate) fn json_len16(&self) -> usize {
        let s = self.to_json();
        utf16_len_of_utf8(s.as_bytes())
    }

    /// The oracle's canonical form: keys sorted by UTF-16 code units,
    /// two-space indentation, no trailing newline.
    pub(crate) fn to_canonical_pretty(&self) -> String {
        let mut s = String::new();
        self.write_pretty(&mut s, 0, true);
        s
    }

    /// Pretty JSON with 2-space indentation (`JSON.stringify(v, null, 2)`),
    /// keys sorted when `sort` is set.
    fn write_pretty(&self, out: &mut String, depth: usize, sort: bool) {
        match self {
            Value::Arr(a) if !a.is_empty() => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, depth + 1);
                    v.write_pretty(out, depth + 1, sort);
                }
                newline(out, depth);
                out.push(']');
            }
            Value::Obj(o) if !o.is_empty() => {
                let mut items: Vec<&(JStr, Value)> = o.iter().collect();
                if sort {
                    items.sort_by(|a, b| a.0.cmp_units(&b.0));
                }
                out.push('{');
                for (i, (k, v)) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, depth + 1);
                    k.write_json(out);
                    out.push_str(": ");
                    v.write_pretty(out, depth + 1, sort);
                }
                newline(out, depth);
                out.push('}');
            }
            other => other.write_json(out),
        }
    }

    /// Structural equality: objects compare by key set, ignoring order.
    pub fn deep_eq(&self, other: &Value<'_>) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Num(a), Value::Num(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a.same(b),
            (Value::Arr(a), Value::Arr(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.deep_eq(y))
            }
            (Value::Obj(a), Value::Obj(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        b.iter()
                            .find(|(k2, _)| k2.same(k))
                            .is_some_and(|(_, v2)| v.deep_eq(v2))
                    })
            }
            _ => false,
        }
    }

    /// An empty object.
    pub fn obj() -> Value<'a> {
        Value::Obj(Vec::new())
    }

    /// Builder: append a member (no duplicate check).
    pub fn with(mut self, key: &str, v: Value<'a>) -> Value<'a> {
        if let Value::Obj(o) = &mut self {
            o.push((JStr::from_text(key.to_string()), v));
        }
        self
    }
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

impl From<f64> for Value<'static> {
    fn from(n: f64) -> Self {
        Value::Num(n)
    }
}
impl From<u64> for Value<'static> {
    fn from(n: u64) -> Self {
        Value::Num(n as f64)
    }
}
impl From<i64> for Value<'static> {
    fn from(n: i64) -> Self {
        Value::Num(n as f64)
    }
}
impl From<usize> for Value<'static> {
    fn from(n: usize) -> Self {
        Value::Num(n as f64)
    }
}
impl From<bool> for Value<'static> {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<&str> for Value<'static> {
    fn from(s: &str) -> Self {
        Value::Str(JStr::from_text(s.to_string()))
    }
}
impl From<String> for Value<'static> {
    fn from(s: String) -> Self {
        Value::Str(JStr::from_text(s))
    }
}
impl<T: Into<Value<'static>>> From<Vec<T>> for Value<'static> {
    fn from(v: Vec<T>) -> Self {
        Value::Arr(v.into_iter().map(Into::into).collect())
    }
}
impl<T: Into<Value<'static>>> From<Option<T>> for Value<'static> {
    fn from(v: Option<T>) -> Self {
        v.map(Into::into).unwrap_or(Value::Null)
    }
}

/// How deep a value may nest, in *nesting units*: an object level costs
/// [`OBJECT_UNITS`], an array level one. The reference parses any depth
/// (`JSON.parse` does not recurse) but then walks each event recursively,
/// and that walk overflows Node's stack at about 3,250 array levels or
/// 1,580 object levels inside an event's `data` (measured with the
/// oracle): it refuses the log ("Maximum call stack size exceeded"). This
/// budget accepts what it accepts at those depths and refuses what it
/// refuses, within a few levels of its (stack-dependent) edge.
const MAX_NEST: usize = 3200;
/// Nesting units of one object level.
const OBJECT_UNITS: usize = 2;
/// Nesting (in units) beyond which the parser stops recursing and parses
/// the rest of the value with an explicit stack ([`Parser::deep_value`]),
/// so that a deep value needs no deep call stack.
const RECURSE_NEST: usize = 96;
/// Stack for threads that handle event values: the parser needs no deep
/// stack, but copying, comparing, writing and dropping a value recurse once
/// per level (up to [`MAX_NEST`] levels), which a debug build's frames make
/// too deep for the default 2 MiB. Reserved address space, not memory.
pub(crate) const THREAD_STACK: usize = 16 << 20;
/// The error of a value nested deeper than [`MAX_NEST`].
pub(crate) const TOO_DEEP: &str = "nesting too deep";

/// Bytes that end a run of plain string content: `"`, `\\` and control characters.
static NEEDS_LOOK: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The end of the run of plain string content from `i` (the offset of the
/// first `"`, `\\` or control character, or the end of `b`), and the run's
/// UTF-16 length.
#[inline]
fn plain_run(b: &[u8], mut i: usize) -> (usize, usize) {
    let mut units = 0usize;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SSE2 is part of the x86_64 baseline: sixteen bytes at a time.
        // SAFETY: every load reads 16 bytes inside `b` (`i + 16 <= len`).
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let ctl_max = _mm_set1_epi8(0x1f);
            let top2 = _mm_set1_epi8(0xC0u8 as i8);
            let cont = _mm_set1_epi8(0x80u8 as i8);
            let lead4 = _mm_set1_epi8(0xF0u8 as i8);
            while i + 16 <= b.len() {
                let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
                // c <= 0x1f (unsigned) exactly when max(c, 0x1f) == 0x1f.
                let ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, ctl_max), ctl_max);
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    ctl,
                );
                let mask = _mm_movemask_epi8(hit) as u32;
                // The bytes of this block that belong to the run.
                let n = if mask != 0 { mask.trailing_zeros() } else { 16 };
                let in_run = (1u32 << n) - 1;
                let high = _mm_movemask_epi8(v) as u32 & in_run;
                if high == 0 {
                    units += n as usize;
                } else {
                    // Characters start at every byte but continuation bytes;
                    // a 4-byte character is two units.
                    let c = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, top2), cont)) as u32;
                    let four = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, lead4), v)) as u32;
                    units +=
                        (n - (c & in_run).count_ones() + (four & in_run).count_ones()) as usize;
                }
                if mask != 0 {
                    return (i + n as usize, units);
                }
                i += 16;
            }
        }
    }
    while i < b.len() && !NEEDS_LOOK[b[i] as usize] {
        let x = b[i];
        units += ((x & 0xC0) != 0x80) as usize + (x >= 0xF0) as usize;
        i += 1;
    }
    (i, units)
}

/// The integer part of a number literal at `b[i..]`: `0`, or digits not
/// starting with `0`. Gives its end and value (exact up to 15 digits, which
/// is all its callers use; it wraps beyond).
#[inline]
fn int_part(b: &[u8], mut i: usize) -> Option<(usize, u64)> {
    let mut v: u64 = 0;
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while let Some(&c) = b.get(i) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                v = v.wrapping_mul(10).wrapping_add(d as u64);
                i += 1;
            }
        }
        _ => return None,
    }
    Some((i, v))
}

/// A short integer literal at `b[i..]`: an optional `-`, at most 15 digits
/// (so exact as a double), no fraction or exponent after. Gives whether it
/// is negative, its magnitude and its end; `None` for anything else, which
/// the general number reader takes.
#[inline]
pub(crate) fn short_int(b: &[u8], i: usize) -> Option<(bool, u64, usize)> {
    let neg = b.get(i) == Some(&b'-');
    let start = i + neg as usize;
    let (end, v) = int_part(b, start)?;
    if end - start > 15 || matches!(b.get(end), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some((neg, v, end))
}

/// Check that `text[start..]` begins with one JSON value, by exactly the
/// grammar [`Value::parse`] applies, without building it; gives the offset
/// just past the value. `depth` is the value's nesting depth in its line.
pub(crate) fn check_value(text: &[u8], start: usize, depth: usize) -> Result<usize, ParseError> {
    // Canonical spelling is not asked for here: skip its bookkeeping.
    let mut p = Parser::at(text, start, false);
    // The enclosing levels of an event line are objects.
    p.nest = depth * OBJECT_UNITS;
    p.check(depth)?;
    Ok(p.i)
}

/// [`check_value`], and whether the value is spelled as `JSON.stringify`
/// writes it.
pub(crate) fn check_value_canonical(
    text: &[u8],
    start: usize,
    depth: usize,
) -> Result<(usize, bool), ParseError> {
    let mut p = Parser::at(text, start, true);
    p.nest = depth * OBJECT_UNITS;
    p.check(depth)?;
    Ok((p.i, p.canonical))
}

/// [`check_string_len16`], and whether the string is spelled as
/// `JSON.stringify` writes it.
#[inline]
pub(crate) fn check_string_canonical(
    text: &[u8],
    start: usize,
) -> Result<(usize, usize, bool), ParseError> {
    let mut p = Parser::at(text, start, true);
    if text.get(start) != Some(&b'"') {
        return Err(p.err("expected a string"));
    }
    let len16 = p.check_string()?;
    Ok((p.i, len16, p.canonical))
}

/// Check that `text[start..]` begins with one JSON string (as
/// [`Value::parse`] reads strings); gives the offset just past it and its
/// UTF-16 length.
#[inline]
pub(crate) fn check_string_len16(text: &[u8], start: usize) -> Result<(usize, usize), ParseError> {
    let mut p = Parser::at(text, start, false);
    if text.get(start) != Some(&b'"') {
        return Err(p.err("expected a string"));
    }
    let len16 = p.check_string()?;
    Ok((p.i, len16))
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    /// Nothing seen so far that `JSON.stringify` would write differently.
    canonical: bool,
    /// Record [`EventSpans`] while parsing.
    track: bool,
    /// Leave `data.stream` out when this accepts it (with `track`).
    skip_stream: Option<StreamSkipper>,
    /// Inside the top-level `data` value.
    in_data: bool,
    spans: EventSpans,
    /// Nesting units of the containers open around `i` (see [`MAX_NEST`]).
    nest: usize,
}

impl<'a> Parser<'a> {
    /// A parser at `i` in `b`. `canonical`: track whether the text is what
    /// `JSON.stringify` writes (checks that need no answer skip the work).
    fn at(b: &'a [u8], i: usize, canonical: bool) -> Self {
        Parser {
            b,
            i,
            canonical,
            track: false,
            skip_stream: None,
            in_data: false,
            spans: EventSpans::default(),
            nest: 0,
        }
    }

    /// Open a container costing `units`, or refuse a value nested too deep.
    #[inline]
    fn enter(&mut self, units: usize) -> Result<(), ParseError> {
        self.nest += units;
        if self.nest > MAX_NEST {
            return Err(self.err(TOO_DEEP));
        }
        Ok(())
    }

    fn err(&self, what: &'static str) -> ParseError {
        ParseError { what, at: self.i }
    }

    #[inline]
    fn ws(&mut self) {
        while self.i < self.b.len() {
            match self.b[self.i] {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    self.i += 1;
                    self.canonical = false;
                }
                _ => break,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, ParseError> {
        let mut v = Value::Null;
        self.value_into(depth, &mut v)?;
        Ok(v)
    }

    /// Parse the value at `self.i` into `out` (which holds `null`).
    ///
    /// Containers parse their elements straight into their own slots. A
    /// value returned from a call goes through memory, and copying it into
    /// its container right after stalled on the stores just made: a tenth of
    /// the parse's cycles.
    fn value_into(&mut self, depth: usize, out: &mut Value<'a>) -> Result<(), ParseError> {
        let Some(&c) = self.b.get(self.i) else {
            return Err(self.err("unexpected end of JSON input"));
        };
        if self.nest >= RECURSE_NEST && (c == b'{' || c == b'[') {
            put(out, self.deep_value()?);
            return Ok(());
        }
        match c {
            b'{' => {
                self.enter(OBJECT_UNITS)?;
                let r = self.object_into(depth, out);
                self.nest -= OBJECT_UNITS;
                r
            }
            b'[' => {
                self.enter(1)?;
                let r = self.array_into(depth, out);
                self.nest -= 1;
                r
            }
            b'"' => {
                put(out, Value::Str(JStr::EMPTY));
                let Value::Str(s) = out else { unreachable!() };
                self.string_to(s)
            }
            b't' => self.lit_into(b"true", Value::Bool(true), out),
            b'f' => self.lit_into(b"false", Value::Bool(false), out),
            b'n' => self.lit_into(b"null", Value::Null, out),
            b'-' | b'0'..=b'9' => {
                // Small non-negative integers (nearly every number) here, in
                // place; anything else by the general reader.
                if let Some((false, v, end)) = short_int(self.b, self.i) {
                    self.i = end;
                    put(out, Value::Num(v as f64));
                    return Ok(());
                }
                self.number_to(out)
            }
            _ => Err(self.err("unexpected character")),
        }
    }

    /// Check the string at `self.i` (at its opening quote) and give its
    /// UTF-16 length: a string without escapes (nearly all) in one scan, any
    /// other the full way. Inlined always: where the length is dropped,
    /// its counting is compiled away.
    #[inline(always)]
    fn check_string(&mut self) -> Result<usize, ParseError> {
        let (end, units) = plain_run(self.b, self.i + 1);
        if self.b.get(end) == Some(&b'"') {
            self.i = end + 1;
            return Ok(units);
        }
        self.string().map(|s| s.len16())
    }

    /// Check one value exactly as [`Self::value`] parses it (same grammar,
    /// same depth limit, same errors) without building anything.
    fn check(&mut self, depth: usize) -> Result<(), ParseError> {
        let Some(&c) = self.b.get(self.i) else {
            return Err(self.err("unexpected end of JSON input"));
        };
        match c {
            b'{' | b'[' if self.nest >= RECURSE_NEST => self.deep_value().map(|_| ()),
            b'{' | b'[' => {
                let units = if c == b'{' { OBJECT_UNITS } else { 1 };
                self.enter(units)?;
                let r = self.check_container(c, depth);
                self.nest -= units;
                r
            }
            b'"' => self.check_string().map(|_| ()),
            b'-' | b'0'..=b'9' => self.number().map(|_| ()),
            _ => self.value(depth).map(|_| ()),
        }
    }

    /// [`Self::check`] of the object or array at `self.i`.
    fn check_container(&mut self, c: u8, depth: usize) -> Result<(), ParseError> {
        match c {
            b'{' => {
                self.i += 1;
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a property name in double quotes"));
                    }
                    self.check_string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err("expected ':' after property name"));
                    }
                    self.i += 1;
                    self.ws();
                    self.check(depth + 1)?;
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(self.err("expected ',' or '}' after property value")),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    self.check(depth + 1)?;
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(self.err("expected ',' or ']' after array element")),
                    }
                }
            }
            _ => unreachable!("check_container is called at '{{' or '['"),
        }
    }

    fn lit_into(
        &mut self,
        word: &[u8],
        v: Value<'a>,
        out: &mut Value<'a>,
    ) -> Result<(), ParseError> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            put(out, v);
            Ok(())
        } else {
            Err(self.err("unexpected token"))
        }
    }

    #[inline(never)]
    fn number_to(&mut self, out: &mut Value<'a>) -> Result<(), ParseError> {
        put(out, self.number()?);
        Ok(())
    }

    fn number(&mut self) -> Result<Value<'a>, ParseError> {
        let start = self.i;
        let b = self.b;
        let mut i = self.i;
        let neg = b[i] == b'-';
        if neg {
            i += 1;
        }
        let int_start = i;
        let Some((int_end, v)) = int_part(b, i) else {
            self.i = i;
            return Err(self.err("no number after minus sign"));
        };
        i = int_end;
        // Integers (nearly every number in a log): done.
        if !matches!(b.get(i), Some(b'.' | b'e' | b'E')) && int_end - int_start <= 15 {
            self.i = i;
            if neg && v == 0 {
                self.canonical = false; // -0 prints as 0
            }
            let f = v as f64;
            return Ok(Value::Num(if neg { -f } else { f }));
        }
        let mut simple = true;
        if b.get(i) == Some(&b'.') {
            simple = false;
            i += 1;
            let d = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == d {
                self.i = i;
                return Err(self.err("unterminated fractional number"));
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            simple = false;
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let d = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == d {
                self.i = i;
                return Err(self.err("exponent part is missing a number"));
            }
        }
        self.i = i;
        if simple && int_end - int_start <= 15 {
            let mut v: u64 = 0;
            for &d in &b[int_start..int_end] {
                v = v * 10 + (d - b'0') as u64;
            }
            if neg && v == 0 {
                self.canonical = false; // -0 prints as 0
            }
            let f = v as f64;
            return Ok(Value::Num(if neg { -f } else { f }));
        }
        // SAFETY: `b[start..i]` was scanned as a number literal: ASCII only.
        let s = unsafe { std::str::from_utf8_unchecked(&b[start..i]) };
        let f = s.parse::<f64>().unwrap_or(f64::NAN);
        if self.canonical {
            let mut js = String::new();
            js_number(f, &mut js);
            if js != s {
                self.canonical = false;
            }
        }
        Ok(Value::Num(f))
    }

    /// Parse the string at `self.i` (at its opening quote).
    fn string(&mut self) -> Result<JStr<'a>, ParseError> {
        let mut s = JStr::EMPTY;
        self.string_to(&mut s)?;
        Ok(s)
    }

    /// [`Self::string`] into `out`. Inlined: a string without escapes
    /// (nearly all) is written where it belongs, field by field (see
    /// [`Self::value_into`]).
    #[inline(always)]
    fn string_to(&mut self, out: &mut JStr<'a>) -> Result<(), ParseError> {
        let start = self.i + 1; // past the opening quote
        let (end, units) = plain_run(self.b, start);
        if self.b.get(end) == Some(&b'"') {
            self.i = end + 1;
            put(
                out,
                JStr {
                    raw: Cow::Borrowed(&self.b[start..end]),
                    escaped: false,
                    len16: u32::try_from(units).unwrap_or(LEN16_UNKNOWN),
                },
            );
            return Ok(());
        }
        self.i = end;
        self.string_rest_to(start, units, out)
    }

    /// [`Self::string_rest`] into `out`.
    #[inline(never)]
    fn string_rest_to(
        &mut self,
        start: usize,
        units: usize,
        out: &mut JStr<'a>,
    ) -> Result<(), ParseError> {
        put(out, self.string_rest(start, units)?);
        Ok(())
    }

    /// The rest of [`Self::string`] from its first escape (or error): the
    /// string started at `start`, and `units` UTF-16 units lie before
    /// `self.i`.
    #[inline]
    fn string_rest(&mut self, start: usize, mut units: usize) -> Result<JStr<'a>, ParseError> {
        let b = self.b;
        let mut escaped = false;
        loop {
            let (end, n) = plain_run(b, self.i);
            self.i = end;
            units += n;
            match b.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    let raw = &b[start..self.i];
                    self.i += 1;
                    return Ok(JStr {
                        raw: Cow::Borrowed(raw),
                        escaped,
                        len16: u32::try_from(units).unwrap_or(LEN16_UNKNOWN),
                    });
                }
                Some(b'\\') => {
                    escaped = true;
                    // Every escape is one UTF-16 unit (a pair is two escapes).
                    units += 1;
                    let e = b.get(self.i + 1).copied();
                    match e {
                        Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 2,
                        Some(b'/') => {
                            self.canonical = false;
                            self.i += 2
                        }
                        Some(b'u') => {
                            let h = b.get(self.i + 2..self.i + 6);
                            if h.is_none_or(|h| !h.iter().all(|c| c.is_ascii_hexdigit())) {
                                self.i += 2;
                                return Err(self.err("bad Unicode escape"));
                            }
                            if self.canonical && !self.canonical_u_escape() {
                                self.canonical = false;
                            }
                            self.i += 6;
                        }
                        _ => {
                            self.i += 1;
                            return Err(self.err("bad escaped character"));
                        }
                    }
                }
                Some(_) => return Err(self.err("bad control character in string literal")),
            }
        }
    }

    /// Whether the `\\uXXXX` escape at `self.i` is how `JSON.stringify`
    /// writes that unit: lower-case hex, and only for control characters
    /// without a short escape or for a lone surrogate.
    fn canonical_u_escape(&self) -> bool {
        let h = &self.b[self.i + 2..self.i + 6];
        if h.iter().any(|c| c.is_ascii_uppercase()) {
            return false;
        }
        let u = hex4(h);
        if u < 0x20 {
            return !matches!(u, 0x08 | 0x09 | 0x0A | 0x0C | 0x0D);
        }
        if (0xD800..0xDC00).contains(&u) {
            // A high surrogate followed by a low one is a pair: written literally.
            let next = self.b.get(self.i + 6..self.i + 12);
            return !next.is_some_and(|n| {
                n[0] == b'\\'
                    && n[1] == b'u'
                    && n[2..].iter().all(|c| c.is_ascii_hexdigit())
                    && (0xDC00..0xE000).contains(&hex4(&n[2..]))
            });
        }
        // A lone low surrogate stays escaped; anything else is written literally.
        (0xDC00..0xE000).contains(&u)
    }

    /// The value at `self.i` (an object or array), parsed with an explicit
    /// stack instead of recursion: the same grammar, errors, duplicate-key
    /// rule and canonical bookkeeping as [`Self::value`] (no spans: they
    /// are only recorded near the top of a line).
    // Long because it is one explicit-stack loop: every token is an arm over the shared stack, and a helper per arm would pass the stack and the open containers to each.
    fn deep_value(&mut self) -> Result<Value<'a>, ParseError> {
        enum Open<'a> {
            Arr(Vec<Value<'a>>),
            Obj(Vec<(JStr<'a>, Value<'a>)>, Option<JStr<'a>>),
        }
        let base = self.nest;
        let mut stack: Vec<Open<'a>> = Vec::new();
        let result = (|| loop {
            // A value starts at `self.i`.
            let Some(&c) = self.b.get(self.i) else {
                return Err(self.err("unexpected end of JSON input"));
            };
            let mut v = match c {
                b'{' => {
                    self.enter(OBJECT_UNITS)?;
                    self.i += 1;
                    self.ws();
                    if self.b.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        self.nest -= OBJECT_UNITS;
                        Value::Obj(Vec::new())
                    } else {
                        let k = self.member_key()?;
                        stack.push(Open::Obj(Vec::new(), Some(k)));
                        continue;
                    }
                }
                b'[' => {
                    self.enter(1)?;
                    self.i += 1;
                    self.ws();
                    if self.b.get(self.i) == Some(&b']') {
                        self.i += 1;
                        self.nest -= 1;
                        Value::Arr(Vec::new())
                    } else {
                        stack.push(Open::Arr(Vec::new()));
                        self.ws();
                        continue;
                    }
                }
                _ => self.value(0)?,
            };
            // A value is complete: give it to the container it is in, and
            // close every container that ends here.
            loop {
                match stack.last_mut() {
                    None => return Ok(v),
                    Some(Open::Arr(items)) => {
                        items.push(v);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => {
                                self.i += 1;
                                self.ws();
                                break;
                            }
                            Some(b']') => {
                                self.i += 1;
                                self.nest -= 1;
                                let Some(Open::Arr(items)) = stack.pop() else {
                                    unreachable!()
                                };
                                v = Value::Arr(items);
                            }
                            _ => return Err(self.err("expected ',' or ']' after array element")),
                        }
                    }
                    Some(Open::Obj(members, key)) => {
                        let k = key.take().expect("a member value follows its key");
                        let (klen, kfirst) = (k.raw.len(), k.raw.first().copied());
                        if let Some(slot) = members.iter_mut().find(|(k2, _)| {
                            (k.escaped
                                || k2.escaped
                                || (k2.raw.len() == klen && k2.raw.first().copied() == kfirst))
                                && k2.same(&k)
                        }) {
                            slot.1 = v;
                            self.canonical = false;
                        } else {
                            members.push((k, v));
                        }
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => {
                                self.i += 1;
                                let k = self.member_key()?;
                                if let Some(Open::Obj(_, key)) = stack.last_mut() {
                                    *key = Some(k);
                                }
                                break;
                            }
                            Some(b'}') => {
                                self.i += 1;
                                self.nest -= OBJECT_UNITS;
                                let Some(Open::Obj(members, _)) = stack.pop() else {
                                    unreachable!()
                                };
                                v = Value::Obj(members);
                            }
                            _ => {
                                return Err(self.err("expected ',' or '}' after property value"));
                            }
                        }
                    }
                }
            }
        })();
        if result.is_err() {
            self.nest = base;
            // Dropping a deep partial value recursively could overflow:
            // take it apart from the top.
            for open in stack.drain(..).rev() {
                match open {
                    Open::Arr(items) => drop_flat(Value::Arr(items)),
                    Open::Obj(members, _) => drop_flat(Value::Obj(members)),
                }
            }
        }
        result
    }

    /// A member's key and its `:` (at the key's opening quote, after
    /// whitespace), leaving `self.i` at the member's value.
    fn member_key(&mut self) -> Result<JStr<'a>, ParseError> {
        self.ws();
        if self.b.get(self.i) != Some(&b'"') {
            return Err(self.err("expected a property name in double quotes"));
        }
        let k = self.string()?;
        self.ws();
        if self.b.get(self.i) != Some(&b':') {
            return Err(self.err("expected ':' after property name"));
        }
        self.i += 1;
        self.ws();
        Ok(k)
    }

    fn array_into(&mut self, depth: usize, out: &mut Value<'a>) -> Result<(), ParseError> {
        self.i += 1;
        put(out, Value::Arr(Vec::new()));
        let Value::Arr(items) = out else {
            unreachable!()
        };
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(());
        }
        // Arrays of small counts written without spaces (source seqs, the
        // longest arrays of a log): a tight loop; anything else, from
        // wherever it shows up, the general way.
        {
            let b = self.b;
            let mut i = self.i;
            while let Some((false, v, end)) = short_int(b, i) {
                match b.get(end) {
                    Some(b',') => {
                        push_in_place(items, || Value::Num(v as f64));
                        i = end + 1;
                        self.i = i;
                    }
                    Some(b']') => {
                        push_in_place(items, || Value::Num(v as f64));
                        self.i = end + 1;
                        return Ok(());
                    }
                    _ => break,
                }
            }
        }
        loop {
            self.ws();
            let slot = push_in_place(items, || Value::Null);
            self.value_into(depth + 1, slot)?;
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected ',' or ']' after array element")),
            }
        }
    }

    /// A member value of the top-level object or of its `data`, recording
    /// the spans of `data` and `data.message` (the last of duplicates).
    fn tracked_member(
        &mut self,
        key: &JStr<'a>,
        depth: usize,
        out: &mut Value<'a>,
    ) -> Result<(), ParseError> {
        let start = self.i;
        let plain = |name: &[u8]| !key.escaped && &*key.raw == name;
        if depth == 0 && plain(b"data") {
            self.in_data = true;
            let r = self.value_into(depth + 1, out);
            self.in_data = false;
            self.spans.data = Some((start as u32, self.i as u32));
            return r;
        }
        if depth == 1
            && self.in_data
            && plain(b"stream")
            && let Some(skip) = self.skip_stream
            && let Some(end) = skip(self.b, self.i, depth + 1)
        {
            self.i = end;
            put(out, Value::Arr(Vec::new()));
            self.spans.stream_skipped = true;
            return Ok(());
        }
        self.value_into(depth + 1, out)?;
        if depth == 1 && self.in_data && plain(b"message") {
            self.spans.message = Some((start as u32, self.i as u32));
        }
        Ok(())
    }

    fn object_into(&mut self, depth: usize, out: &mut Value<'a>) -> Result<(), ParseError> {
        self.i += 1;
        // An event envelope has up to six members: room for them at once.
        put(
            out,
            Value::Obj(Vec::with_capacity(if depth == 0 { 8 } else { 0 })),
        );
        let Value::Obj(members) = out else {
            unreachable!()
        };
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err("expected a property name in double quotes"));
            }
            // The member is parsed into its slot, then moved to an earlier
            // member's of the same key (rare).
            push_in_place(members, || (JStr::EMPTY, Value::Null));
            let n = members.len() - 1;
            let (earlier, last) = members.split_at_mut(n);
            let (k, slot) = &mut last[0];
            self.string_to(k)?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err("expected ':' after property name"));
            }
            self.i += 1;
            self.ws();
            if self.track && depth <= 1 {
                self.tracked_member(k, depth, slot)?;
            } else {
                self.value_into(depth + 1, slot)?;
            }
            // Duplicate keys: the last value wins, at the first key's position.
            // Cheap tests first: plain keys of another length or first byte
            // differ (an escaped spelling is compared in full).
            let (klen, kfirst) = (k.raw.len(), k.raw.first().copied());
            if let Some(dup) = earlier.iter().position(|(k2, _)| {
                (k.escaped
                    || k2.escaped
                    || (k2.raw.len() == klen && k2.raw.first().copied() == kfirst))
                    && k2.same(k)
            }) {
                let (_, v) = members.pop().expect("just pushed");
                members[dup].1 = v;
                self.canonical = false;
            }
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected ',' or '}' after property value")),
            }
        }
    }
}

/// Write `v` over a slot of the parser's, which holds a placeholder
/// (`null`, or an empty borrowed string) with nothing to drop. Assigning
/// would read the placeholder back to see whether it needs dropping, right
/// after the stores that wrote it, and that read stalled.
#[inline(always)]
fn put<T>(slot: &mut T, v: T) {
    // SAFETY: `slot` is valid for writes; its old value is not dropped,
    // which at worst would leak it (it is a placeholder owning nothing).
    unsafe { std::ptr::write(slot, v) }
}

/// `v.push(make())`, and the new element. The element is made after any
/// growth of `v`, so it is written straight into `v`: a value made before
/// the growth call was kept over it in a temporary on the stack and copied
/// from there, which stalls right after the stores that made it.
#[inline(always)]
fn push_in_place<T>(v: &mut Vec<T>, make: impl FnOnce() -> T) -> &mut T {
    if v.len() == v.capacity() {
        v.reserve(1);
    }
    let n = v.len();
    // SAFETY: there is room for element `n` (reserved above); it is written
    // before the length covers it.
    unsafe {
        let slot = v.as_mut_ptr().add(n);
        slot.write(make());
        v.set_len(n + 1);
        &mut *slot
    }
}

/// What JavaScript's `String(v)` (and a template literal, and
/// `Array.prototype.join` for an element) makes of a value: `undefined` for
/// a missing one, `null`, `true`, numbers as JavaScript spells them
/// (`NaN` and `Infinity` included, as `String` spells them), strings as they are,
/// arrays joined by `,` (with `null` elements empty), objects
/// `[object Object]`. The reference writes values this way in its messages
/// (an event's `type`, a rejected configuration value), and joins tool
/// result content so. The one implementation in the crate: the meter's
/// UTF-16 length, the pruner, the config's and the verifier's messages all
/// come here.
pub(crate) fn js_string(v: Option<&Value<'_>>) -> String {
    fn put(v: &Value<'_>, out: &mut String) {
        match v {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Num(n) => js_number_string(*n, out),
            Value::Str(s) => out.push_str(&s.to_lossy()),
            Value::Obj(_) => out.push_str("[object Object]"),
            Value::Arr(items) => {
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !matches!(e, Value::Null) {
                        put(e, out);
                    }
                }
            }
        }
    }
    let Some(v) = v else {
        return "undefined".into();
    };
    let mut out = String::new();
    put(v, &mut out);
    out
}

/// Drop a value without recursing into nested containers (a deep value
/// dropped the ordinary way recurses once per level).
pub(crate) fn drop_flat(v: Value<'_>) {
    let mut work = vec![v];
    while let Some(v) = work.pop() {
        match v {
            Value::Arr(items) => work.extend(items),
            Value::Obj(members) => work.extend(members.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn escaped_code_points_count_like_array_from() {
        for t in [
            r#""plain""#,
            r#""a\nb""#,
            r#""\ud83d\ude00x""#,
            r#""\ud83d""#,
            r#""\ude00\ud83d""#,
            r#""\ud83d\ud83d\ude00""#,
            r#""\ud83d😀\ude00""#,
            r#""中文\t😀\u00e9\ud800""#,
            r#""\"\\\/\b\f\r""#,
        ] {
            let v = Value::parse(t).unwrap();
            let s = v.as_jstr().unwrap();
            let units: Vec<u16> = s.escaped_units().collect();
            assert_eq!(s.units(), units, "{t}");
            assert_eq!(s.code_points(), units_to_code_points(&units), "{t}");
            assert_eq!(
                s.count_code_points(),
                units_to_code_points(&units).len(),
                "{t}"
            );
        }
    }

    #[test]
    fn strings_are_written_as_json_stringify_writes_them() {
        // Characters to escape, escapes to rewrite and long plain runs, at
        // every position of the sixteen-byte blocks the writers skip over.
        let pieces = [
            "a",
            "\"",
            "\\",
            "\n",
            "\u{1}",
            "\u{1f}",
            "\t",
            "/",
            "é",
            "中",
            "😀",
            "0123456789abcdef",
            "\u{7f}",
            "\u{2028}",
        ];
        let mut rng = crate::test_rng::Lcg(11);
        for round in 0..300 {
            let mut text = String::new();
            for _ in 0..(round % 50) + 1 {
                text.push_str(pieces[rng.index(pieces.len())]);
            }
            // serde_json writes strings as JSON.stringify does (no lone
            // surrogates in a Rust string, no `\/`).
            let want = serde_json::to_string(&text).unwrap();
            // Written from text, and re-written from the escaped source
            // (with `\/` and `\u` spellings the source may use).
            assert_eq!(Value::Str(JStr::from_text(text.clone())).to_json(), want);
            let source = want.replace('/', "\\/").replace("\\u001f", "\\u001F");
            let parsed = Value::parse(&source).unwrap();
            assert_eq!(parsed.to_json(), want, "{source}");
        }
    }

    #[test]
    fn js_string_is_what_javascript_prints() {
        let p = |t: &str| js_string(Some(&Value::parse(t).unwrap()));
        assert_eq!(js_string(None), "undefined");
        assert_eq!(p("null"), "null");
        assert_eq!(p("7"), "7");
        assert_eq!(p("1e21"), "1e+21");
        assert_eq!(p("true"), "true");
        assert_eq!(p(r#""a/b""#), "a/b");
        assert_eq!(p(r#"{"a":1}"#), "[object Object]");
        assert_eq!(p(r#"[1,null,[2,"x"],{}]"#), "1,,2,x,[object Object]");
        // JSON.parse reads an out-of-range literal as Infinity, and String
        // spells it out where JSON.stringify writes null.
        assert_eq!(p("1e400"), "Infinity");
        assert_eq!(p("[-1e400]"), "-Infinity");
        assert_eq!(Value::parse("1e400").unwrap().to_json(), "null");
        let mut nan = String::new();
        js_number_string(f64::NAN, &mut nan);
        assert_eq!(nan, "NaN");
        assert_eq!(p("-0"), "0");
        assert_eq!(p(r#""\ud800x""#), "\u{fffd}x");
    }

    /// An event-like line with `objs` object levels, then `arrs` array
    /// levels, inside its `data`.
    fn deep_line(objs: usize, arrs: usize) -> String {
        format!(
            r#"{{"data":{{"deep":{}{}1{}{}}}}}"#,
            r#"{"a":"#.repeat(objs),
            "[".repeat(arrs),
            "]".repeat(arrs),
            "}".repeat(objs)
        )
    }

    /// The deepest values the budget accepts, with the envelope's two
    /// object levels around them (an object chain, an array chain), and
    /// each one level deeper.
    fn deepest() -> [(String, String); 2] {
        let objs = MAX_NEST / OBJECT_UNITS - 2;
        let arrs = MAX_NEST - 2 * OBJECT_UNITS;
        [
            (deep_line(objs, 0), deep_line(objs + 1, 0)),
            (deep_line(0, arrs), deep_line(0, arrs + 1)),
        ]
    }

    /// Everything dsh does with an event's value, at the deepest nesting the
    /// budget accepts, fits the stack dsh gives its threads.
    #[test]
    fn the_deepest_accepted_values_fit_a_small_stack() {
        for (line, deeper) in deepest() {
            let h = std::thread::Builder::new()
                .stack_size(THREAD_STACK)
                .spawn(move || {
                    let (v, _, _) = Value::parse_event_line(&line).unwrap();
                    check_value(line.as_bytes(), 0, 0).unwrap();
                    let c = v.clone();
                    let owned = c.into_owned();
                    assert!(owned.deep_eq(&v));
                    assert_eq!(owned.to_json(), line);
                    let mut pretty = String::new();
                    owned.write_pretty(&mut pretty, 0, true);
                    let e = Value::parse(&deeper).unwrap_err();
                    assert_eq!(e.what, TOO_DEEP);
                    assert_eq!(
                        check_value(deeper.as_bytes(), 0, 0).unwrap_err().what,
                        TOO_DEEP
                    );
                })
                .unwrap();
            h.join().unwrap();
        }
    }
    use super::*;

    #[test]
    fn lossy_text_of_escaped_strings_matches_the_utf16_round_trip() {
        let cases = [
            r#""plain""#,
            r#""a\nb\t\"q\"\\ \/ \b\f\r""#,
            r#""\u00e9\u4e2d""#,
            r#""\ud83d\ude00 pair""#,
            r#""lone high \ud83d end""#,
            r#""lone high then escape \ud83d\n""#,
            r#""high high \ud83d\ud83d\ude00""#,
            r#""lone low \ude00""#,
            r#""\ud83d""#,
            r#""mixed é 日本 \u0000 \u001f 😀""#,
            r#""\uDBFF\uDFFF\uD800\uDC00""#,
        ];
        let mut escaped = 0;
        for c in cases {
            let v = Value::parse(c).unwrap();
            let s = v.as_jstr().unwrap();
            escaped += s.escaped as usize;
            assert_eq!(s.to_lossy(), String::from_utf16_lossy(&s.units()), "{c}");
        }
        assert!(escaped >= 8, "the cases take the escaped path ({escaped})");
    }

    fn rt(s: &str) -> String {
        Value::parse(s).unwrap().to_json()
    }

    #[test]
    fn utf16_lengths_match_the_standard_library() {
        // Every width of character, across block boundaries and tails.
        let alphabet = ["a", "é", "€", "😀", "\u{7f}", "\u{10ffff}"];
        let mut rng = crate::test_rng::Lcg(7);
        for len in 0..200 {
            let mut s = String::new();
            for _ in 0..len {
                s.push_str(alphabet[rng.index(alphabet.len())]);
            }
            assert_eq!(
                utf16_len_of_utf8(s.as_bytes()),
                s.encode_utf16().count(),
                "{s}"
            );
        }
    }

    #[test]
    fn arrays_of_counts_read_like_any_array() {
        for (text, want) in [
            ("[1,2,3]", Some("[1,2,3]")),
            ("[0,10,200]", Some("[0,10,200]")),
            ("[1,2.5,3]", Some("[1,2.5,3]")),
            ("[1, 2,3 ]", Some("[1,2,3]")),
            ("[1,-2,3e2]", Some("[1,-2,300]")),
            ("[1,\"a\",[2,3]]", Some("[1,\"a\",[2,3]]")),
            (
                "[123456789012345,1234567890123456]",
                Some("[123456789012345,1234567890123456]"),
            ),
            ("[12345678901234567890]", Some("[12345678901234567000]")),
            ("[01]", None),
            ("[1,]", None),
            ("[1,2", None),
            ("[1 2]", None),
            ("[1,2]x", None),
        ] {
            let got = Value::parse(text).ok().map(|v| v.to_json());
            assert_eq!(got.as_deref(), want, "{text}");
        }
        // The depth limit holds for arrays of numbers too.
        let deep = format!("{}1{}", "[".repeat(MAX_NEST), "]".repeat(MAX_NEST));
        assert!(Value::parse(&deep).is_ok());
        let deeper = format!("{}1{}", "[".repeat(MAX_NEST + 1), "]".repeat(MAX_NEST + 1));
        assert_eq!(Value::parse(&deeper).unwrap_err().what, TOO_DEEP);
    }

    #[test]
    fn safe_integers_as_javascript_sees_them() {
        let n = |x: f64| Value::Num(x);
        for (x, safe) in [
            (0.0, Some(0)),
            (-0.0, Some(0)),
            (3.0, Some(3)),
            (-3.0, Some(-3)),
            (0.5, None),
            (-2.5, None),
            (MAX_SAFE, Some(9_007_199_254_740_991)),
            (-MAX_SAFE, Some(-9_007_199_254_740_991)),
            (MAX_SAFE + 1.0, None),
            (1e300, None),
            (f64::INFINITY, None),
            (f64::NAN, None),
        ] {
            assert_eq!(n(x).as_safe_int(), safe, "{x}");
            assert_eq!(n(x).is_safe_int(), safe.is_some(), "{x}");
            assert_eq!(
                n(x).as_count(),
                safe.filter(|&i| i >= 0).map(|i| i as u64),
                "{x}"
            );
        }
        let mut s = String::new();
        for (x, expect) in [
            (1e15 - 1.0, "999999999999999"),
            (1e15, "1000000000000000"),
            (-1e15 + 1.0, "-999999999999999"),
            (123456.5, "123456.5"),
            (-0.0, "0"),
        ] {
            s.clear();
            js_number(x, &mut s);
            assert_eq!(s, expect);
        }
    }

    #[test]
    fn parsed_strings_know_their_utf16_length() {
        let pieces = [
            "a",
            "é",
            "€",
            "😀",
            "\\n",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\ud800",
            "\\\"",
            "xxxxxxxxxxxxxxxx",
        ];
        let mut rng = crate::test_rng::Lcg(11);
        for len in 0..120 {
            let mut lit = String::from("\"");
            for _ in 0..len {
                lit.push_str(pieces[rng.index(pieces.len())]);
            }
            lit.push('"');
            let Value::Str(s) = Value::parse(&lit).unwrap() else {
                panic!()
            };
            assert_ne!(s.len16, LEN16_UNKNOWN);
            assert_eq!(s.len16(), s.units().len(), "{lit}");
        }
    }

    #[test]
    fn plain_runs_stop_at_quotes_backslashes_and_control_characters() {
        for len in 0..140 {
            for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                let mut b = vec![b'x'; len];
                b.push(stop);
                b.extend_from_slice(&[0x7f, 0x80, 0xff, 0x20]);
                assert_eq!(plain_run(&b, 0).0, len);
            }
            let b = vec![0xe9u8; len];
            assert_eq!(plain_run(&b, 0).0, len);
        }
    }

    #[test]
    fn plain_runs_count_utf16_units_in_every_lane() {
        // Mixed widths, so that characters straddle the 16-byte steps,
        // at every start offset, ending at each kind of stop or at the end.
        let chars = ["a", "é", "中", "😀", " ", "z", "ß", "𝄞"];
        for len in 0..120 {
            let text: String = (0..len)
                .map(|k| chars[(k * 7 + len) % chars.len()])
                .collect();
            for skip in 0..3usize.min(text.chars().count() + 1) {
                let start: usize = text.chars().take(skip).map(char::len_utf8).sum();
                let want: usize = text[start..].encode_utf16().count();
                for stop in [&b"\""[..], b"\\", b"\n", b""] {
                    let mut b = text.as_bytes().to_vec();
                    b.extend_from_slice(stop);
                    assert_eq!(
                        plain_run(&b, start),
                        (text.len(), want),
                        "{text:?} from {start}"
                    );
                }
            }
        }
    }

    #[test]
    fn integer_parts_read_like_the_digits_they_are() {
        let slow = |b: &[u8]| {
            let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
            let v = b[..n].iter().fold(0u64, |v, &d| {
                v.wrapping_mul(10).wrapping_add((d - b'0') as u64)
            });
            (n, v)
        };
        for text in [
            "7",
            "12345678",
            "123456789",
            "1780000011145",
            "98765432109876543210",
        ] {
            for tail in [
                "", ",", "]", ".5", "e3", "\u{80}", "\u{b9}", ":", "/", " 12",
            ] {
                let line = format!("{text}{tail}xxxxxxxx");
                let (n, v) = slow(line.as_bytes());
                assert_eq!(int_part(line.as_bytes(), 0), Some((n, v)), "{line:?}");
            }
        }
        // Every byte value right after a digit, in every lane.
        for lane in 1..9 {
            for byte in 0..=255u8 {
                let mut line = b"12345678".to_vec();
                line[lane - 1] = b'9';
                line.truncate(lane);
                line.push(byte);
                line.extend_from_slice(b"1234567");
                let want = slow(&line);
                assert_eq!(int_part(&line, 0), Some(want), "{line:?}");
            }
        }
        // Numbers ending the text (no byte after the last digit), at every
        // length up to twenty digits.
        let digits = b"98765432109876543210";
        for n in 1..=digits.len() {
            assert_eq!(int_part(&digits[..n], 0), Some(slow(&digits[..n])), "{n}");
        }
        assert_eq!(int_part(b"0123456789", 0), Some((1, 0)));
        assert_eq!(int_part(b"x12345678", 0), None);
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(
            rt("[1.0,-0,1e21,0.000001,1e-7,12345678901234567890,1.5]"),
            "[1,0,1e+21,0.000001,1e-7,12345678901234567000,1.5]"
        );
    }

    #[test]
    fn strings_keep_lone_surrogates_and_escape_like_javascript() {
        let v = Value::parse(r#""\ud83d\ude80 \u0000 \u007f \u2028 \ud800 \/""#).unwrap();
        assert_eq!(
            v.to_json(),
            "\"\u{1F680} \\u0000 \u{7f} \u{2028} \\ud800 /\""
        );
        let s = v.as_jstr().unwrap();
        assert_eq!(s.len16(), 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1);
        assert!(s.as_str().is_none());
    }

    #[test]
    fn duplicate_keys_last_wins_at_first_position() {
        assert_eq!(rt(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(rt(r#"{"a":1,"\u0061":3}"#), r#"{"a":3}"#);
        assert_eq!(rt(r#"{"ab":1,"a\u0062":2,"b":0}"#), r#"{"ab":2,"b":0}"#);
        assert_eq!(rt(r#"{"\u0061b":1,"ab":2}"#), r#"{"ab":2}"#);
        assert_eq!(rt(r#"{"ab":1,"ac":2,"ab":3}"#), r#"{"ab":3,"ac":2}"#);
        // Containers and escaped strings move from the later slot.
        assert_eq!(
            rt(r#"[{"a":{"x":[1,"s",-2.5]},"b":[],"a":{"y":"t\n\u00e9"},"c":1}]"#),
            r#"[{"a":{"y":"t\né"},"b":[],"c":1}]"#
        );
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for bad in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            "\"\t\"",
            "nul",
            "{}x",
            "\"\\x\"",
        ] {
            assert!(Value::parse(bad).is_err(), "{bad}");
        }
        assert!(Value::parse(" {} \r").is_ok());
    }

    #[test]
    fn reescaping_matches_decode_then_escape() {
        let src =
            r#""a\/b \u00e9 \u0001 \n \" \\ \ud83d\ude80 \ud800x \udc00 \u2028 \u005c \u0022 \t""#;
        let v = Value::parse(src).unwrap();
        let s = v.as_jstr().unwrap();
        let mut direct = String::new();
        s.write_json(&mut direct);
        let mut via_units = String::from("\"");
        write_escaped_units(&mut via_units, &s.units());
        via_units.push('"');
        assert_eq!(direct, via_units);
    }

    #[test]
    fn utf16_length_of_long_mixed_text() {
        let piece = "plain ascii text, ";
        let mixed = "é中🙂\n\"";
        let mut s = String::new();
        for i in 0..200 {
            s.push_str(if i % 7 == 0 { mixed } else { piece });
        }
        let json = Value::str(s.clone()).to_json();
        let v = Value::parse(&json).unwrap();
        assert_eq!(v.as_jstr().unwrap().len16(), s.encode_utf16().count());
        let plain = JStr::from_text(s.clone());
        assert_eq!(plain.len16(), s.encode_utf16().count());
    }

    #[test]
    fn canonical_texts_are_recognised() {
        for (s, want) in [
            (r#"{"a":[1,"x\n\u0001"],"b":1.5}"#, true),
            (r#"{"a": 1}"#, false),
            (r#"{"a":1.0}"#, false),
            (r#"{"a":-0}"#, false),
            (r#"{"a":"\/"}"#, false),
            (r#"{"a":"\u00e9"}"#, false),
            (r#"{"a":"\u001F"}"#, false),
            (r#"{"a":"\ud800"}"#, true),
            (r#"{"a":"\ud83d\ude80"}"#, false),
            (r#"{"a":1,"a":2}"#, false),
            (r#"{"a":1e21}"#, false),
            (r#"{"a":1e+21}"#, true),
        ] {
            let (v, c) = Value::parse_canonical(s).unwrap();
            assert_eq!(c, want, "{s}");
            if c {
                assert_eq!(v.to_json(), s);
            }
        }
    }

    /// Accept/reject agrees with a strict JSON parser (serde_json) on many
    /// generated and mutated texts, and accepted texts round-trip to the same
    /// value. Lone surrogates, which JavaScript accepts and serde_json does
    /// not, are left out of the generator.
    #[test]
    fn agrees_with_a_strict_parser_on_generated_texts() {
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let atoms = [
            "0",
            "-0",
            "1.5",
            "1e3",
            "-2E-2",
            "12345678901234567890",
            "true",
            "false",
            "null",
            "\"\"",
            "\"a\\nb\"",
            "\"\\u00e9\"",
            "\"\\ud83d\\ude80\"",
            "\"é🙂\"",
            "\"\\/\"",
        ];
        let junk = [
            "", " ", ",", ":", "]", "}", "[", "{", "\"", "\\", "01", "1.", "-", "\t", "\u{1}",
            "tru",
        ];
        fn generate(next: &mut dyn FnMut(u64) -> u64, atoms: &[&str], depth: u32) -> String {
            match if depth > 3 { 0 } else { next(3) } {
                0 => atoms[next(atoms.len() as u64) as usize].to_string(),
                1 => {
                    let n = next(4);
                    let items: Vec<String> =
                        (0..n).map(|_| generate(next, atoms, depth + 1)).collect();
                    format!("[{}]", items.join(","))
                }
                _ => {
                    let n = next(4);
                    let items: Vec<String> = (0..n)
                        .map(|i| {
                            format!("\"k{}\":{}", next(3) + i, generate(next, atoms, depth + 1))
                        })
                        .collect();
                    format!("{{{}}}", items.join(","))
                }
            }
        }
        for _ in 0..3000 {
            let mut s = generate(&mut next, &atoms, 0);
            if next(2) == 0 {
                let pos = next(s.len() as u64 + 1) as usize;
                let pos = (0..=pos).rev().find(|&p| s.is_char_boundary(p)).unwrap();
                s.insert_str(pos, junk[next(junk.len() as u64) as usize]);
            }
            let ours = Value::parse(&s);
            let strict: Result<serde_json::Value, _> = serde_json::from_str(&s);
            if strict.as_ref().is_err_and(|e| {
                let m = e.to_string();
                m.contains("surrogate") || m.contains("hex escape")
            }) {
                // Around a split surrogate pair the two grammars differ
                // (JavaScript accepts lone surrogates): no verdict to compare.
                continue;
            }
            assert_eq!(ours.is_ok(), strict.is_ok(), "{s:?}: ours {ours:?}");
            if let Ok(v) = ours {
                let text = v.to_json();
                let again = Value::parse(&text).unwrap();
                assert!(v.deep_eq(&again), "{s:?}");
            }
        }
    }

    #[test]
    fn utf16_lengths() {
        let v = Value::parse("\"a\u{1F642}é\"").unwrap();
        assert_eq!(v.as_jstr().unwrap().len16(), 4);
        assert_eq!(v.as_jstr().unwrap().count_code_points(), 3);
    }

    #[test]
    fn canonical_pretty_sorts_keys() {
        let v = Value::parse(r#"{"b":[1,{}],"a":[]}"#).unwrap();
        assert_eq!(
            v.to_canonical_pretty(),
            "{\n  \"a\": [],\n  \"b\": [\n    1,\n    {}\n  ]\n}"
        );
    }

    #[test]
    fn units_around_equal_slices_of_the_code_points() {
        for t in [
            r#""plain ascii text""#,
            r#""a\nb\tc""#,
            r#""\ud83d\ude00x\ud83d""#,
            r#""\ude00\ud83d\ud83d\ude00 end""#,
            r#""\ud83d😀\ude00中文""#,
            r#""中文\t😀\u00e9\ud800 tail""#,
            r#""\"\\\/\b\f\r""#,
            r#""no escapes 中文😀 at all""#,
            r#""""#,
        ] {
            let v = Value::parse(t).unwrap();
            let s = v.as_jstr().unwrap();
            let cps = s.code_points();
            let units = |c: &[u32]| {
                let mut u = Vec::new();
                for &cp in c {
                    push_code_point_utf16(cp, &mut u);
                }
                u
            };
            for a in 0..=cps.len() + 1 {
                for b in a..=cps.len() + 2 {
                    let (head, tail) = s.units_around(a, b);
                    assert_eq!(head, units(&cps[..a.min(cps.len())]), "{t} head {a}");
                    assert_eq!(tail, units(&cps[b.min(cps.len())..]), "{t} tail {b}");
                }
            }
        }
    }

    #[test]
    fn to_owned_with_replaces_in_place_or_appends() {
        let v = Value::parse(r#"{"a":1,"text":"long","b":[2]}"#).unwrap();
        assert_eq!(
            v.to_owned_with("text", Value::str("short")).to_json(),
            r#"{"a":1,"text":"short","b":[2]}"#
        );
        assert_eq!(
            v.to_owned_with("c", Value::Null).to_json(),
            r#"{"a":1,"text":"long","b":[2],"c":null}"#
        );
    }

    #[test]
    fn long_mixed_strings_cut_like_their_code_points() {
        // Pieces that put escapes, pairs, lone surrogates and multi-byte
        // characters at every position of the 16-byte blocks.
        let pieces = [
            "a",
            "bc",
            "中",
            "😀",
            r"\n",
            r"\ud83d",
            r"\ude00",
            r"\u00e9",
            r"\\",
            r#"\""#,
            "é",
            "0123456789abcdef",
        ];
        let mut rng = crate::test_rng::Lcg(7);
        for round in 0..200 {
            let mut text = String::from("\"");
            for _ in 0..(round % 60) + 1 {
                text.push_str(pieces[rng.index(pieces.len())]);
            }
            text.push('"');
            let v = Value::parse(&text).unwrap();
            let s = v.as_jstr().unwrap();
            let cps = s.code_points();
            assert_eq!(s.count_code_points(), cps.len(), "{text}");
            let units = |c: &[u32]| {
                let mut u = Vec::new();
                for &cp in c {
                    push_code_point_utf16(cp, &mut u);
                }
                u
            };
            for a in 0..=cps.len() {
                let b = (a + round % 7).min(cps.len());
                let (head, tail) = s.units_around(a, b);
                assert_eq!(head, units(&cps[..a]), "{text} head {a}");
                assert_eq!(tail, units(&cps[b..]), "{text} tail {b}");
                let mut joined = head.clone();
                joined.extend("\n[cut]\n".encode_utf16());
                joined.extend_from_slice(&tail);
                let cut = s.cut_around(a, b, "\n[cut]\n");
                assert_eq!(cut.units(), joined, "{text} cut {a}..{b}");
                // The length counted at the cut is the joined text's.
                assert_eq!(cut.len16(), joined.len(), "{text} len16 {a}..{b}");
                let mut json = String::new();
                cut.write_json(&mut json);
                let mut want = String::new();
                JStr::from_units(&joined).write_json(&mut want);
                assert_eq!(json, want, "{text} json {a}..{b}");
            }
        }
        // Unescaped text takes the same path without escapes.
        let plain = JStr::from_text("x😀中\\n".repeat(9));
        assert_eq!(plain.count_code_points(), 45);
        assert_eq!(plain.cut_around(2, 40, "|").units(), {
            let cps: Vec<char> = "x😀中\\n".repeat(9).chars().collect();
            let mut s: String = cps[..2].iter().collect();
            s.push('|');
            s.extend(&cps[40..]);
            s.encode_utf16().collect::<Vec<u16>>()
        });
    }

    #[test]
    fn text_with_short_escapes_counts_and_cuts_like_its_code_points() {
        // Mostly lines of text (`\n`, `\t`, multi-byte characters), as tool
        // results are, so that most sixteen-byte blocks hold short escapes
        // only; now and then a piece that needs the escape-by-escape way
        // (`\\`, `\u` escapes, a pair) lands in a block or across two.
        let common = ["abc", "d", "中", "é", r"\n", r"\t", r#"\""#, "    ", "😀"];
        let rare = [r"\\", r"\u00e9", r"\ud83d\ude00", r"\ud83d", r"\/"];
        let mut rng = crate::test_rng::Lcg(23);
        for round in 0..60 {
            let mut text = String::from("\"");
            for _ in 0..40 + round * 3 {
                if rng.below(12) == 0 {
                    text.push_str(rare[rng.index(rare.len())]);
                } else {
                    text.push_str(common[rng.index(common.len())]);
                }
            }
            text.push('"');
            let v = Value::parse(&text).unwrap();
            let s = v.as_jstr().unwrap();
            let cps = s.code_points();
            assert_eq!(s.count_code_points(), cps.len(), "{text}");
            let counted = s.count_code_points_marked();
            assert_eq!(counted.len(), cps.len(), "{text}");
            for a in 0..=cps.len() {
                let (oa, _) = s.code_point_offsets(a, a);
                // The offset of code point `a` is where the raw text of the
                // first `a` code points ends.
                let head = s.part(0..oa).code_points();
                assert_eq!(head, cps[..a], "{text} at {a}");
                assert_eq!(
                    s.cut_around_counted(&counted, a, cps.len(), "|").raw,
                    s.cut_around(a, cps.len(), "|").raw,
                    "{text} cut at {a}"
                );
            }
        }
    }

    #[test]
    fn four_byte_leads_are_counted_in_any_length_and_density() {
        let mut rng = crate::test_rng::Lcg(5);
        for len in [0, 1, 15, 16, 17, 255, 4079, 4080, 4081, 4096, 8161, 20_000] {
            for density in [0, 1, 2, 16] {
                let raw: Vec<u8> = (0..len)
                    .map(|_| match density {
                        0 => b'a',
                        16 => 0xF0 + rng.index(8) as u8,
                        d if rng.index(16) < d => 0xF4,
                        _ => 0xEF,
                    })
                    .collect();
                let want = raw.iter().filter(|&&c| c >= 0xF0).count();
                assert_eq!(count_four_byte_leads(&raw), want, "{len} {density}");
            }
        }
    }

    #[test]
    fn counted_strings_cut_their_tails_as_a_full_scan_does() {
        // Long strings whose ends hold escapes of every kind, pairs, lone
        // surrogates, escaped backslashes before a `u` and multi-byte
        // characters: wherever the place near the end falls, in a
        // character, an escape or between the halves of a pair.
        let pieces = [
            "a",
            "中",
            "😀",
            r"\n",
            r#"\""#,
            r"\ud83d",
            r"\ude00",
            r"\ud83d\ude00",
            r"\\",
            r"\\ud83d",
            r"\\\n",
            r"\u0041",
            "é",
            "0123456789abcdef",
        ];
        let mut rng = crate::test_rng::Lcg(11);
        let mut next = || rng.high() as usize;
        for round in 0..40 {
            let mut text = String::from("\"");
            let len = 2_000 + next() % 30_000;
            while text.len() < len {
                text.push_str(pieces[next() % pieces.len()]);
            }
            text.push('"');
            // A quarter of the rounds as text without escapes.
            let parsed;
            let s = if round % 4 != 3 {
                parsed = Value::parse(&text).unwrap();
                parsed.as_jstr().unwrap().clone()
            } else {
                JStr::from_text(text.replace('\\', "/"))
            };
            let count = s.count_code_points_marked();
            let n = s.count_code_points();
            assert_eq!(count.len(), n, "round {round}");
            let mut cuts = vec![(0, 0), (0, n), (n, n), (1, n - 1), (n / 2, n / 2)];
            for _ in 0..20 {
                let a = next() % (n + 1);
                let b = a + next() % (n + 2 - a);
                cuts.push((a, b));
            }
            // Every tail of up to 300 code points.
            for t in 0..300.min(n) {
                cuts.push((next() % (n - t + 1), n - t));
            }
            for (a, b) in cuts {
                assert_eq!(
                    s.cut_around_counted(&count, a, b, "|").raw,
                    s.cut_around(a, b, "|").raw,
                    "round {round} cut {a}..{b}"
                );
            }
        }
    }

    #[test]
    fn concat_joins_like_javascript() {
        let parse = |t: &str| {
            Value::parse(t)
                .unwrap()
                .as_jstr()
                .unwrap()
                .clone()
                .into_owned()
        };
        let cases = [
            vec![r#""abc""#, r#""d\ne""#],
            vec![r#""x\ud83d""#, r#""\ude00y""#],
            vec![r#""plain""#, r#""also plain 中""#],
            vec![r#""q\"uote\\""#, r#""tab\there""#, r#""""#],
            vec![r#""\ud83d""#, r#""not low""#],
        ];
        for case in cases {
            let parts: Vec<JStr<'static>> = case.iter().map(|t| parse(t)).collect();
            let refs: Vec<&JStr<'_>> = parts.iter().collect();
            let mut units = Vec::new();
            for p in &parts {
                units.extend(p.units());
            }
            let joined = JStr::concat(&refs);
            assert_eq!(joined.units(), units, "{case:?}");
            let (mut a, mut b) = (String::new(), String::new());
            joined.write_json(&mut a);
            JStr::from_units(&units).write_json(&mut b);
            assert_eq!(a, b, "{case:?}");
        }
    }
}
