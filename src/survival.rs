//! What of a compacted span survives in its summary.
//!
//! For each compaction checkpoint, the *replaced span* is the nodes the
//! checkpoint removed from the surface, as they stood then (what the
//! summariser was shown: a result pruned earlier is its pruned text, an
//! earlier checkpoint its checkpoint text). Its *text* is, per message, every
//! `text` and `reasoning` block, every tool call's name and the string and
//! number values of its `arguments` (parsed as JSON, argument names left
//! out; the raw text when it is not JSON), and the text blocks of every tool
//! result (nested ones included), one per line.
//! The *summary* is the `compaction/summary` event's `summary` text blocks
//! (the checkpoint's own text when no summary event is found).
//!
//! Five categories of terms are extracted from the span, each a list of
//! distinct terms in order of first appearance, case kept:
//!
//! * **URLs** (`urls`): `http://`, `https://`, `ftp://` or `file://`, not
//!   preceded by a letter or digit, up to the next whitespace or one of
//!   `<>"'` and backtick; then trailing `.,;:!?` and unbalanced closing
//!   `)`, `]`, `}` are left out. At least one character must follow `://`.
//! * **Paths** (`paths`, in the text with the URLs blanked): maximal runs of
//!   `A-Z a-z 0-9 _ . - ~ / + @`, trailing dots left out, holding a letter
//!   or digit, that either contain a `/` and (start with `/`, `~/`, `./` or
//!   `../`; or have at least three non-empty `/`-separated segments; or end
//!   in a file extension), or contain no `/` and end in one of the common
//!   extensions of `FILE_EXTENSIONS` (`main.rs`, `Cargo.toml`). A file
//!   extension is a non-empty stem, a dot and 1–10 letters or digits with at
//!   least one letter. A run that starts with `-` (a flag) or right after a
//!   `<` (markup such as `</compacted-summary>`) is not a path.
//! * **Commands** (`command_of`): from each tool call's `arguments`, parsed
//!   as a JSON object, the `command` or else `cmd` member: a string, or an
//!   array of strings joined by single spaces; whitespace collapsed. Empty
//!   commands are left out.
//! * **Identifiers** (`identifiers`, with URLs and paths blanked): names
//!   `[A-Za-z_][A-Za-z0-9_]*` not preceded by a letter, digit or `_`, joined
//!   into one term by `.` or `::` when a name follows directly (`os.path`,
//!   `serde_json::Value`), that look like code: a part holds `_` beside a
//!   letter or digit (snake_case, `MAX_LEN`, `__init__`), or a part mixes
//!   case with an uppercase letter after its first character (camelCase,
//!   `HashMap`, `JSONValue`), or there are two or more parts of which one
//!   has at least two characters (`e.g` is not one).
//! * **Numbers** (`numbers`, with URLs, paths and identifiers blanked): in
//!   each maximal run of `A-Z a-z 0-9 _ . ,` that starts with a digit, its
//!   leading digits, dots and commas, trailing dots and commas left out
//!   (`400`, `7,270`, `3.14`, `0.1.0`; `200` of `200ms`), when that holds at
//!   least two digits (single digits are list numbers and step counts, too
//!   common to mean anything).
//!
//! A term **survives** when the summary holds it verbatim (case-sensitive)
//! at a boundary ([`survives`]): for identifiers and numbers, the characters
//! just before and after are not a letter, digit or `_`, and for numbers the
//! one after is not a `.` or `,` followed by a digit; for paths and URLs, the
//! one before is not a letter, digit, `_`, `/`, `.`, `~` or `-`, and the one
//! after not a letter, digit, `_` or `/`, nor a `.` followed by a letter or
//! digit. A command survives when the whitespace-collapsed summary contains
//! it. Nothing is normalised beyond that: `7270` does not match `7,270`,
//! nor `src/a.rs` the `/repo/src/a.rs` of the span.
//!
//! ```
//! use dsh::survival::{Category, extract, survives};
//! let t = extract("Edit src/parser.rs: fn parse_line in 400 lines, see https://x.dev/a.");
//! assert_eq!(t.paths, ["src/parser.rs"]);
//! assert_eq!(t.identifiers, ["parse_line"]);
//! assert_eq!(t.numbers, ["400"]);
//! assert_eq!(t.urls, ["https://x.dev/a"]);
//! assert!(survives(Category::Numbers, "400", "all 400 of them"));
//! assert!(!survives(Category::Numbers, "400", "4000 of them"));
//! ```

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::Serialize;

use crate::json::Value;
use crate::log::{LoadError, LoadedLog, Reread};
use crate::view::{Replacement, ReplacementKind, View};

/// Extensions that make a name without `/` a file path.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "conf", "cpp", "cs", "css", "csv", "go", "gz", "h", "hpp", "html", "ini",
    "java", "js", "json", "jsonl", "jsx", "kt", "lock", "log", "md", "mjs", "php", "png", "py",
    "rb", "rs", "scss", "sh", "sql", "svg", "swift", "tar", "toml", "ts", "tsx", "txt", "xml",
    "yaml", "yml", "zip", "zst", "zstd",
];

/// The five categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Category {
    /// File paths.
    Paths,
    /// Shell commands of tool calls.
    Commands,
    /// Code identifiers.
    Identifiers,
    /// Numbers.
    Numbers,
    /// URLs.
    Urls,
}

impl Category {
    /// All five, in report order.
    pub const ALL: [Category; 5] = [
        Category::Paths,
        Category::Commands,
        Category::Identifiers,
        Category::Numbers,
        Category::Urls,
    ];

    /// The JSON key and table label.
    pub fn name(self) -> &'static str {
        match self {
            Category::Paths => "paths",
            Category::Commands => "commands",
            Category::Identifiers => "identifiers",
            Category::Numbers => "numbers",
            Category::Urls => "urls",
        }
    }
}

/// Terms of a text, per category (commands come from tool calls, not text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Terms {
    /// File paths.
    pub paths: Vec<String>,
    /// Shell commands.
    pub commands: Vec<String>,
    /// Code identifiers.
    pub identifiers: Vec<String>,
    /// Numbers.
    pub numbers: Vec<String>,
    /// URLs.
    pub urls: Vec<String>,
}

impl Terms {
    /// The terms of one category.
    fn get(&self, c: Category) -> &[String] {
        match c {
            Category::Paths => &self.paths,
            Category::Commands => &self.commands,
            Category::Identifiers => &self.identifiers,
            Category::Numbers => &self.numbers,
            Category::Urls => &self.urls,
        }
    }
}

/// One category's figures for one compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Figures {
    /// How many of them the summary holds.
    pub kept: usize,
    /// The terms it does not.
    pub lost: Vec<String>,
    /// The terms the summary holds, in span order.
    pub survived: Vec<String>,
    /// Distinct terms in the replaced span.
    pub total: usize,
}

/// The five categories' figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Breakdown {
    /// Shell commands.
    pub commands: Figures,
    /// Code identifiers.
    pub identifiers: Figures,
    /// Numbers.
    pub numbers: Figures,
    /// File paths.
    pub paths: Figures,
    /// URLs.
    pub urls: Figures,
}

impl Breakdown {
    /// One category's figures.
    pub fn get(&self, c: Category) -> &Figures {
        match c {
            Category::Paths => &self.paths,
            Category::Commands => &self.commands,
            Category::Identifiers => &self.identifiers,
            Category::Numbers => &self.numbers,
            Category::Urls => &self.urls,
        }
    }

    fn get_mut(&mut self, c: Category) -> &mut Figures {
        match c {
            Category::Paths => &mut self.paths,
            Category::Commands => &mut self.commands,
            Category::Identifiers => &mut self.identifiers,
            Category::Numbers => &mut self.numbers,
            Category::Urls => &mut self.urls,
        }
    }
}

/// One compaction's survival.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSurvival {
    /// The figures.
    pub categories: Breakdown,
    /// The checkpoint's seq.
    pub checkpoint_seq: u64,
    /// The compaction id.
    pub compaction_id: Option<String>,
    /// The nodes it replaced (the span), in surface order.
    pub replaced: Vec<u64>,
    /// The `compaction/summary` event read (`None`: the checkpoint's text
    /// was used).
    pub summary_seq: Option<u64>,
}

/// Counts over the whole session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Count {
    /// Survivors.
    pub kept: usize,
    /// Terms (a term of two compactions counts twice).
    pub total: usize,
}

/// Session totals, per category and over all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Totals {
    /// All categories.
    pub all: Count,
    /// Shell commands.
    pub commands: Count,
    /// Compactions counted.
    pub compactions: usize,
    /// Code identifiers.
    pub identifiers: Count,
    /// Numbers.
    pub numbers: Count,
    /// File paths.
    pub paths: Count,
    /// URLs.
    pub urls: Count,
}

impl Totals {
    /// One category's count.
    pub fn get(&self, c: Category) -> Count {
        match c {
            Category::Paths => self.paths,
            Category::Commands => self.commands,
            Category::Identifiers => self.identifiers,
            Category::Numbers => self.numbers,
            Category::Urls => self.urls,
        }
    }

    fn get_mut(&mut self, c: Category) -> &mut Count {
        match c {
            Category::Paths => &mut self.paths,
            Category::Commands => &mut self.commands,
            Category::Identifiers => &mut self.identifiers,
            Category::Numbers => &mut self.numbers,
            Category::Urls => &mut self.urls,
        }
    }
}

/// Survival over a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Survival {
    /// One entry per compaction checkpoint, in log order.
    pub compactions: Vec<CompactionSurvival>,
    /// Session totals.
    pub totals: Totals,
}

/// The survival figures of every compaction checkpoint of an aligned view
/// (made by [`crate::view::align_log`] from the same `log`).
pub fn of_view(log: &LoadedLog, view: &View) -> Result<Survival, LoadError> {
    // Each compaction is independent: its span is read back (one file
    // handle per thread) and its terms extracted and compared on every
    // core, one compaction at a time, the answers kept in log order.
    let checkpoints: Vec<&Replacement> = view
        .replacements
        .iter()
        .filter(|r| r.kind == ReplacementKind::Checkpoint)
        .collect();
    let figures = crate::par::map_in_chunks(&checkpoints, 1, |r, file: &mut Option<Reread>| {
        let (span, summary_seq, summary) = span_of(log, view, r, file)?;
        Ok::<_, LoadError>((summary_seq, compare(&span.terms(), &summary)))
    });
    let mut out = Survival::default();
    for (r, figures) in checkpoints.into_iter().zip(figures) {
        let (summary_seq, categories) = figures?;
        out.totals.compactions += 1;
        for c in Category::ALL {
            let f = categories.get(c);
            let t = out.totals.get_mut(c);
            t.total += f.total;
            t.kept += f.kept;
            out.totals.all.total += f.total;
            out.totals.all.kept += f.kept;
        }
        out.compactions.push(CompactionSurvival {
            checkpoint_seq: r.seq,
            compaction_id: r.compaction_id.clone(),
            summary_seq,
            replaced: r.shadowed.clone(),
            categories,
        });
    }
    Ok(out)
}

/// A checkpoint's replaced span read back, the summary event it is compared
/// with (if any) and the summary's text.
fn span_of(
    log: &LoadedLog,
    view: &View,
    r: &Replacement,
    file: &mut Option<Reread>,
) -> Result<(SpanText, Option<u64>, String), LoadError> {
    let mut span = SpanText::default();
    for seq in &r.shadowed {
        if let Some(body) = view.shadowed_bodies.get(seq) {
            let ev = log.read_body(body, *seq, file)?;
            if let Some(m) = ev.message() {
                span.add_message(m);
            }
        }
    }
    if let Some((s, t)) = r
        .summary_seq
        .and_then(|s| view.summary_texts.get(&s).map(|t| (s, t.clone())))
    {
        return Ok((span, Some(s), t));
    }
    // The checkpoint's own text: current, or replaced since.
    let body = log
        .surface
        .nodes
        .iter()
        .find(|n| n.seq == r.seq)
        .map(|n| &n.body)
        .or_else(|| view.shadowed_bodies.get(&r.seq));
    let mut text = SpanText::default();
    if let Some(b) = body {
        let ev = log.read_body(b, r.seq, file)?;
        if let Some(m) = ev.message() {
            text.add_message(m);
        }
    }
    Ok((span, None, text.text))
}

/// The text of a replaced span and the commands of its tool calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SpanText {
    /// The span's text, one block a line.
    pub text: String,
    /// The commands of its tool calls, in order (duplicates kept).
    pub commands: Vec<String>,
}

impl SpanText {
    /// Add one message (`{role, content: [...]}`).
    fn add_message(&mut self, msg: &Value<'_>) {
        if let Some(blocks) = msg.get("content").and_then(|c| c.as_arr()) {
            self.add_blocks(blocks);
        }
    }

    fn line(&mut self, s: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(s);
    }

    fn add_blocks(&mut self, blocks: &[Value<'_>]) {
        for b in blocks {
            let s = |k: &str| {
                b.get(k)
                    .and_then(|t| t.as_jstr())
                    .map(|t| t.to_lossy().into_owned())
            };
            match b.get("type").and_then(|t| t.as_str()).as_deref() {
                Some("text") | Some("reasoning") => {
                    if let Some(t) = s("text") {
                        self.line(&t);
                    }
                }
                Some("tool-call") => {
                    let args = s("arguments").unwrap_or_default();
                    self.line(&s("name").unwrap_or_default());
                    match Value::parse(&args) {
                        // Values only: argument names (`old_string`) are the
                        // tool's vocabulary, not the span's.
                        Ok(v) => self.values(&v),
                        Err(_) => self.line(&args),
                    }
                    if let Some(c) = command_of(&args) {
                        self.commands.push(c);
                    }
                }
                Some("tool-result") => {
                    if let Some(inner) = b.get("content").and_then(|c| c.as_arr()) {
                        self.add_blocks(inner);
                    }
                }
                _ => {}
            }
        }
    }

    /// Every string and number of a JSON value, one a line; keys left out.
    fn values(&mut self, v: &Value<'_>) {
        match v {
            Value::Str(t) => self.line(&t.to_lossy()),
            Value::Num(_) => self.line(&v.to_json()),
            Value::Arr(a) => a.iter().for_each(|x| self.values(x)),
            Value::Obj(o) => o.iter().for_each(|(_, x)| self.values(x)),
            _ => {}
        }
    }

    /// The span's terms: [`extract`] of the text, with the commands.
    fn terms(&self) -> Terms {
        let mut t = extract(&self.text);
        t.commands = dedup(self.commands.iter().cloned());
        t
    }
}

/// Compare a span's terms with a summary.
fn compare(span: &Terms, summary: &str) -> Breakdown {
    let mut out = Breakdown::default();
    // Commands are compared whitespace-collapsed: collapse the summary once.
    let collapsed = collapse(summary);
    for c in Category::ALL {
        let f = out.get_mut(c);
        for term in span.get(c) {
            let kept = if c == Category::Commands {
                !term.is_empty() && collapsed.contains(&collapse(term))
            } else {
                survives(c, term, summary)
            };
            if kept {
                f.survived.push(term.clone());
            } else {
                f.lost.push(term.clone());
            }
        }
        f.total = f.survived.len() + f.lost.len();
        f.kept = f.survived.len();
    }
    out
}

/// Whether `summary` holds `term` of category `c` (the module's rule).
pub fn survives(c: Category, term: &str, summary: &str) -> bool {
    if term.is_empty() {
        return false;
    }
    if c == Category::Commands {
        return collapse(summary).contains(&collapse(term));
    }
    let word = |ch: char| ch.is_alphanumeric() || ch == '_';
    for (at, _) in summary.match_indices(term) {
        let before = summary[..at].chars().next_back();
        let rest = &summary[at + term.len()..];
        let mut after = rest.chars();
        let next = after.next();
        let next2 = after.next();
        let blocked = match c {
            Category::Identifiers => before.is_some_and(word) || next.is_some_and(word),
            Category::Numbers => {
                before.is_some_and(word)
                    || next.is_some_and(word)
                    || (matches!(next, Some('.' | ','))
                        && next2.is_some_and(|d| d.is_ascii_digit()))
            }
            _ => {
                before.is_some_and(|b| word(b) || matches!(b, '/' | '.' | '~' | '-'))
                    || next.is_some_and(|n| word(n) || n == '/')
                    || (next == Some('.') && next2.is_some_and(|d| d.is_alphanumeric()))
            }
        };
        if !blocked {
            return true;
        }
    }
    false
}

/// A tool call's command: its `arguments` parsed as a JSON object, the
/// `command` (else `cmd`) member as a string, or an array of strings joined
/// by spaces; whitespace collapsed; `None` when absent or empty.
fn command_of(arguments: &str) -> Option<String> {
    let v = Value::parse(arguments).ok()?;
    let c = v.get("command").or_else(|| v.get("cmd"))?;
    let s = match c {
        Value::Str(s) => s.to_lossy().into_owned(),
        Value::Arr(a) => {
            let parts: Option<Vec<String>> = a
                .iter()
                .map(|p| p.as_jstr().map(|s| s.to_lossy().into_owned()))
                .collect();
            parts?.join(" ")
        }
        _ => return None,
    };
    let s = collapse(&s);
    (!s.is_empty()).then_some(s)
}

/// Every category but commands, extracted from `text` (the module's rules).
pub fn extract(text: &str) -> Terms {
    // No rule takes whitespace into a term nor looks past it, so the text is
    // read a line at a time through one buffer; each category keeps its
    // terms in order of first appearance over the whole text. An ASCII line
    // (most of them) is read as its bytes, any other as its characters.
    let mut found = Found::default();
    let mut bytes: Vec<u8> = Vec::new();
    let mut chars: Vec<char> = Vec::new();
    for line in text.split('\n') {
        if line.is_ascii() {
            bytes.clear();
            bytes.extend_from_slice(line.as_bytes());
            found.line(line, &mut bytes);
        } else {
            chars.clear();
            chars.extend(line.chars());
            found.line(line, &mut chars);
        }
    }
    let [urls, paths, identifiers, numbers] = found.terms.map(|d| d.terms);
    Terms {
        paths,
        commands: Vec::new(),
        identifiers,
        numbers,
        urls,
    }
}

/// The URLs of `text`.
#[cfg(test)]
fn urls(text: &str) -> Vec<String> {
    extract(text).urls
}

/// The paths of `text` (URLs blanked first).
#[cfg(test)]
fn paths(text: &str) -> Vec<String> {
    extract(text).paths
}

/// The identifiers of `text` (URLs and paths blanked first).
#[cfg(test)]
fn identifiers(text: &str) -> Vec<String> {
    extract(text).identifiers
}

/// The numbers of `text` (URLs, paths and identifiers blanked first).
#[cfg(test)]
fn numbers(text: &str) -> Vec<String> {
    extract(text).numbers
}

type Spans = Vec<(usize, usize)>;

/// A character of a line: a `char`, or a byte of an ASCII line.
trait Ch: Copy + PartialEq {
    const BLANK: Self;
    fn ch(self) -> char;
    /// The classes ([`PATH`], [`WORD`], …) of an ASCII character; none for
    /// any other.
    fn class(self) -> u8;
}

impl Ch for char {
    const BLANK: char = ' ';
    fn ch(self) -> char {
        self
    }
    fn class(self) -> u8 {
        if self.is_ascii() {
            CLASSES[self as usize]
        } else {
            0
        }
    }
}

impl Ch for u8 {
    const BLANK: u8 = b' ';
    fn ch(self) -> char {
        self as char
    }
    fn class(self) -> u8 {
        CLASSES[self as usize]
    }
}

/// `A-Z a-z 0-9 _ . - ~ / + @`: a path character.
const PATH: u8 = 1;
/// `A-Z a-z 0-9 _`: a name character.
const WORD: u8 = 2;
/// `A-Z a-z _`: a name's first character.
const NAME_START: u8 = 4;
/// `0-9`.
const DIGIT: u8 = 8;
/// `A-Z`.
const UPPER: u8 = 16;
/// `a-z`.
const LOWER: u8 = 32;
/// `A-Z a-z 0-9 _ . ,`: a character of a number's run.
const NUMBER_RUN: u8 = 64;
/// `/` and `.`: a run of path characters without one is no path.
const PATH_MARK: u8 = 128;

/// The classes of the ASCII characters (none for the other bytes).
const CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        let mut k = 0;
        if c.is_ascii_uppercase() {
            k |= UPPER | WORD | NAME_START | PATH | NUMBER_RUN;
        }
        if c.is_ascii_lowercase() {
            k |= LOWER | WORD | NAME_START | PATH | NUMBER_RUN;
        }
        if c.is_ascii_digit() {
            k |= DIGIT | WORD | PATH | NUMBER_RUN;
        }
        match c {
            b'_' => k |= WORD | NAME_START | PATH | NUMBER_RUN,
            b'.' => k |= PATH | PATH_MARK | NUMBER_RUN,
            b'/' => k |= PATH | PATH_MARK,
            b'-' | b'~' | b'+' | b'@' => k |= PATH,
            b',' => k |= NUMBER_RUN,
            _ => {}
        }
        t[i] = k;
        i += 1;
    }
    t
};

/// Whether `c[k]` exists and is of `class`.
fn is<C: Ch>(c: &[C], k: usize, class: u8) -> bool {
    c.get(k).is_some_and(|x| x.class() & class != 0)
}

/// The four text categories' terms so far, and the spans of a line.
struct Found {
    /// URLs, paths, identifiers, numbers.
    terms: [Distinct; 4],
    spans: Spans,
    /// `://`, which every URL holds.
    scheme: memchr::memmem::Finder<'static>,
}

impl Default for Found {
    fn default() -> Found {
        Found {
            terms: Default::default(),
            spans: Vec::new(),
            scheme: memchr::memmem::Finder::new(b"://"),
        }
    }
}

impl Found {
    /// Find each category's spans in turn, blanking them so that later
    /// categories do not see them again. `text` is the line as it was
    /// read: a category that cannot occur in it (a URL holds `://`, a path
    /// a `/` or a `.`) is not looked for.
    fn line<C: Ch>(&mut self, text: &str, c: &mut [C]) {
        let finders: [fn(&[C], &mut Spans); 4] =
            [url_spans, path_spans, identifier_spans, number_spans];
        let can = [
            self.scheme.find(text.as_bytes()).is_some(),
            memchr::memchr2(b'/', b'.', text.as_bytes()).is_some(),
            true,
            true,
        ];
        for ((find, terms), can) in finders.iter().zip(&mut self.terms).zip(can) {
            if !can {
                continue;
            }
            self.spans.clear();
            find(c, &mut self.spans);
            for &(a, b) in &self.spans {
                terms.add(&c[a..b]);
                c[a..b].fill(C::BLANK);
            }
        }
    }
}

/// The distinct terms of one category, in order of first appearance.
#[derive(Default)]
struct Distinct {
    terms: Vec<String>,
    seen: HashSet<String>,
    buf: String,
}

impl Distinct {
    fn add<C: Ch>(&mut self, term: &[C]) {
        self.buf.clear();
        self.buf.extend(term.iter().map(|x| x.ch()));
        if !self.seen.contains(self.buf.as_str()) {
            self.seen.insert(self.buf.clone());
            self.terms.push(self.buf.clone());
        }
    }
}

fn dedup(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    it.filter(|s| seen.insert(s.clone())).collect()
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn url_spans<C: Ch>(c: &[C], out: &mut Spans) {
    const SCHEMES: [&str; 4] = ["https://", "http://", "ftp://", "file://"];
    let mut i = 0;
    while i < c.len() {
        // Every scheme starts with `h` or `f`: test those positions only.
        if !matches!(c[i].ch(), 'h' | 'f') {
            i += 1;
            continue;
        }
        let scheme = SCHEMES.iter().find(|s| {
            let n = s.len();
            i + n <= c.len() && c[i..i + n].iter().map(|x| x.ch()).eq(s.chars())
        });
        let Some(s) = scheme.filter(|_| i == 0 || !c[i - 1].ch().is_alphanumeric()) else {
            i += 1;
            continue;
        };
        let mut j = i + s.len();
        while j < c.len()
            && !c[j].ch().is_whitespace()
            && !matches!(c[j].ch(), '<' | '>' | '"' | '\'' | '`')
        {
            j += 1;
        }
        // Trailing punctuation, and closers the URL did not open.
        while let Some(last) = c[..j].last().map(|x| x.ch()) {
            let unbalanced = |open: char, close: char| {
                last == close && {
                    let body = &c[i..j];
                    body.iter().filter(|x| x.ch() == close).count()
                        > body.iter().filter(|x| x.ch() == open).count()
                }
            };
            if matches!(last, '.' | ',' | ';' | ':' | '!' | '?')
                || unbalanced('(', ')')
                || unbalanced('[', ']')
                || unbalanced('{', '}')
            {
                j -= 1;
            } else {
                break;
            }
        }
        if j > i + s.len() {
            out.push((i, j));
        }
        i = j.max(i + 1);
    }
}

/// `name.ext` with a non-empty stem and 1–10 letters or digits, one a letter.
fn extension(segment: &str) -> Option<&str> {
    let (stem, ext) = segment.rsplit_once('.')?;
    let ok = !stem.is_empty()
        && (1..=10).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic());
    ok.then_some(ext)
}

fn path_spans<C: Ch>(c: &[C], out: &mut Spans) {
    let mut i = 0;
    while i < c.len() {
        if !is(c, i, PATH) {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut marks = 0;
        while is(c, j, PATH) {
            marks |= c[j].class();
            j += 1;
        }
        // A path holds a `/` or ends in an extension: most runs (words)
        // hold neither and need no closer look.
        if marks & PATH_MARK == 0 {
            i = j;
            continue;
        }
        let mut end = j;
        while end > i && c[end - 1].ch() == '.' {
            end -= 1;
        }
        let run: String = c[i..end].iter().map(|x| x.ch()).collect();
        // `</tag>` is markup, not a rooted path.
        let tag = i > 0 && c[i - 1].ch() == '<';
        if !tag && is_path(&run) {
            out.push((i, end));
        }
        i = j;
    }
}

fn is_path(run: &str) -> bool {
    if run.starts_with('-') || !run.chars().any(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    let last = run.rsplit('/').next().unwrap_or_default();
    if !run.contains('/') {
        return extension(run).is_some_and(|e| FILE_EXTENSIONS.contains(&e));
    }
    let rooted = ["/", "~/", "./", "../"].iter().any(|p| run.starts_with(p));
    let segments = run.split('/').filter(|s| !s.is_empty()).count();
    rooted || segments >= 3 || extension(last).is_some()
}

fn identifier_spans<C: Ch>(c: &[C], out: &mut Spans) {
    let mut i = 0;
    // Runs of name characters are passed over whole, so a name character at
    // `i` starts its run.
    while i < c.len() {
        if !is(c, i, WORD) {
            i += 1;
            continue;
        }
        if !is(c, i, NAME_START) {
            // A run that starts with a digit is no name.
            while is(c, i, WORD) {
                i += 1;
            }
            continue;
        }
        // The parts are looked at as they are read: whether one looks like
        // code (a `_` beside a letter or digit; an uppercase letter after the
        // first character and a lowercase one), how many there are, whether
        // one has two characters or more.
        let mut code = false;
        let mut parts = 0;
        let mut long = false;
        let mut j = i;
        loop {
            let a = j;
            let (mut underscore, mut alnum, mut upper_after, mut lower) =
                (false, false, false, false);
            while let Some(x) = c.get(j).map(|x| x.class()).filter(|k| k & WORD != 0) {
                underscore |= x & (UPPER | LOWER | DIGIT) == 0;
                alnum |= x & (UPPER | LOWER | DIGIT) != 0;
                upper_after |= j > a && x & UPPER != 0;
                lower |= x & LOWER != 0;
                j += 1;
            }
            parts += 1;
            long |= j - a >= 2;
            code |= (underscore && alnum) || (upper_after && lower);
            let at = |k: usize, x: char| c[k].ch() == x;
            if j + 1 < c.len() && at(j, '.') && is(c, j + 1, NAME_START) {
                j += 1;
            } else if j + 2 < c.len() && at(j, ':') && at(j + 1, ':') && is(c, j + 2, NAME_START) {
                j += 2;
            } else {
                break;
            }
        }
        if code || (parts >= 2 && long) {
            out.push((i, j));
        }
        i = j;
    }
}

fn number_spans<C: Ch>(c: &[C], out: &mut Spans) {
    let mut i = 0;
    while i < c.len() {
        if !is(c, i, NUMBER_RUN) {
            i += 1;
            continue;
        }
        let mut j = i;
        while is(c, j, NUMBER_RUN) {
            j += 1;
        }
        if is(c, i, DIGIT) {
            // Leading digits, dots and commas; trailing dots and commas off.
            let mut end = i;
            let mut digits = 0;
            while end < j && (is(c, end, DIGIT) || matches!(c[end].ch(), '.' | ',')) {
                digits += is(c, end, DIGIT) as usize;
                end += 1;
            }
            while end > i && matches!(c[end - 1].ch(), '.' | ',') {
                end -= 1;
            }
            if digits >= 2 {
                out.push((i, end));
            }
        }
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_rule() {
        assert_eq!(
            urls("see https://example.com/a_(b), (http://x.io/p?q=1). not xhttp://y.z or https://"),
            ["https://example.com/a_(b)", "http://x.io/p?q=1"]
        );
        assert_eq!(
            urls("<file:///tmp/a.txt> and 'ftp://h/f'"),
            ["file:///tmp/a.txt", "ftp://h/f"]
        );
    }

    #[test]
    fn paths_rule() {
        assert_eq!(
            paths(
                "Read src/module_07.rs, /etc/hosts and ~/notes and ./run.sh; not and/or, \
                 nor 2024/01 nor --out=x; a/b/c yes; Cargo.toml and os.path no; https://h.io/x.rs; \
                 src/lib.rs:12 tests/ </compacted-summary>"
            ),
            [
                "src/module_07.rs",
                "/etc/hosts",
                "~/notes",
                "./run.sh",
                "a/b/c",
                "Cargo.toml",
                "src/lib.rs"
            ]
        );
    }

    #[test]
    fn identifiers_rule() {
        assert_eq!(
            identifiers(
                "Call parse_line then HashMap::new and os.path.join, JSONValue, camelCase; \
                 not Hello, JSON, e.g or i.e; MAX_LEN, __init__, src/a_b.rs, 3_000, serde_json::Value."
            ),
            [
                "parse_line",
                "HashMap::new",
                "os.path.join",
                "JSONValue",
                "camelCase",
                "MAX_LEN",
                "__init__",
                "serde_json::Value"
            ]
        );
    }

    #[test]
    fn numbers_rule() {
        assert_eq!(
            numbers(
                "400 modules, 7,270 tokens; 3.14 and 0.1.0; 200ms; step 1; module_07; v4 x2 400."
            ),
            ["400", "7,270", "3.14", "0.1.0", "200"]
        );
    }

    #[test]
    fn commands_rule() {
        assert_eq!(
            command_of(r#"{"command":"cargo  test\n --locked"}"#).as_deref(),
            Some("cargo test --locked")
        );
        assert_eq!(
            command_of(r#"{"cmd":["ls","-1","src"]}"#).as_deref(),
            Some("ls -1 src")
        );
        assert_eq!(command_of(r#"{"path":"a.rs"}"#), None);
        assert_eq!(command_of("not json"), None);
        assert_eq!(command_of(r#"{"command":"  "}"#), None);
    }

    #[test]
    fn survival_boundaries() {
        let s =
            "Open src/module_07.rs. Ran `ls -1 src`; 400 modules (7,270 tokens), parse_line kept.";
        assert!(survives(Category::Paths, "src/module_07.rs", s));
        assert!(!survives(Category::Paths, "module_07.rs", s));
        assert!(survives(Category::Identifiers, "module_07", s));
        assert!(survives(Category::Identifiers, "parse_line", s));
        assert!(!survives(Category::Identifiers, "parse", s));
        assert!(survives(Category::Numbers, "400", s));
        assert!(!survives(Category::Numbers, "40", s));
        assert!(!survives(Category::Numbers, "7", s));
        assert!(survives(Category::Numbers, "7,270", s));
        assert!(!survives(Category::Numbers, "7270", s));
        assert!(survives(Category::Commands, "ls -1 src", s));
        assert!(!survives(Category::Commands, "ls -la src", s));
        assert!(!survives(
            Category::Urls,
            "https://a.io/x",
            "https://a.io/x/y"
        ));
        assert!(survives(
            Category::Urls,
            "https://a.io/x",
            "at https://a.io/x."
        ));
    }

    #[test]
    fn tool_call_values_not_keys() {
        let mut span = SpanText::default();
        let msg = Value::parse(
            r#"{"role":"assistant","content":[{"type":"tool-call","id":"c","name":"edit","arguments":"{\"file_path\":\"src/b.rs\",\"old_string\":\"let max_len = 64;\",\"line\":120}"}]}"#,
        )
        .unwrap();
        span.add_message(&msg);
        let t = span.terms();
        assert_eq!(t.paths, ["src/b.rs"]);
        assert_eq!(t.identifiers, ["max_len"]);
        assert_eq!(t.numbers, ["64", "120"]);
        assert!(t.commands.is_empty());
    }

    /// The straightforward reading of the rules [`extract`] implements
    /// faster: every run a `String`, every name's parts a list.
    mod plain {
        use super::super::*;

        fn is_path_char(ch: char) -> bool {
            ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-' | '~' | '/' | '+' | '@')
        }

        fn is_word_char(ch: char) -> bool {
            ch.is_ascii_alphanumeric() || ch == '_'
        }

        pub(crate) fn extract(text: &str) -> Terms {
            let mut chars: Vec<char> = text.chars().collect();
            let mut take = |find: fn(&[char]) -> Spans| {
                let spans = find(&chars);
                let out = dedup(
                    spans
                        .iter()
                        .map(|&(a, b)| chars[a..b].iter().collect::<String>()),
                );
                for (a, b) in spans {
                    chars[a..b].fill(' ');
                }
                out
            };
            let urls = take(|c| {
                let mut out = Vec::new();
                url_spans(c, &mut out);
                out
            });
            let paths = take(path_spans);
            let identifiers = take(identifier_spans);
            let numbers = take(number_spans);
            Terms {
                paths,
                commands: Vec::new(),
                identifiers,
                numbers,
                urls,
            }
        }

        fn path_spans(c: &[char]) -> Spans {
            let mut out = Vec::new();
            let mut i = 0;
            while i < c.len() {
                if !is_path_char(c[i]) {
                    i += 1;
                    continue;
                }
                let mut j = i;
                while j < c.len() && is_path_char(c[j]) {
                    j += 1;
                }
                let mut end = j;
                while end > i && c[end - 1] == '.' {
                    end -= 1;
                }
                let run: String = c[i..end].iter().collect();
                let tag = i > 0 && c[i - 1] == '<';
                if !tag && is_path(&run) {
                    out.push((i, end));
                }
                i = j;
            }
            out
        }

        fn identifier_spans(c: &[char]) -> Spans {
            let mut out = Vec::new();
            let mut i = 0;
            let starts = |k: usize| k < c.len() && (c[k].is_ascii_alphabetic() || c[k] == '_');
            while i < c.len() {
                if !is_word_char(c[i]) || (i > 0 && is_word_char(c[i - 1])) {
                    i += 1;
                    continue;
                }
                if !starts(i) {
                    while i < c.len() && is_word_char(c[i]) {
                        i += 1;
                    }
                    continue;
                }
                let mut parts: Vec<(usize, usize)> = Vec::new();
                let mut j = i;
                loop {
                    let a = j;
                    while j < c.len() && is_word_char(c[j]) {
                        j += 1;
                    }
                    parts.push((a, j));
                    if j + 1 < c.len() && c[j] == '.' && starts(j + 1) {
                        j += 1;
                    } else if j + 2 < c.len() && c[j] == ':' && c[j + 1] == ':' && starts(j + 2) {
                        j += 2;
                    } else {
                        break;
                    }
                }
                let code_like = parts.iter().any(|&(a, b)| {
                    let p = &c[a..b];
                    let snake = p.contains(&'_') && p.iter().any(|x| x.is_ascii_alphanumeric());
                    let camel = p[1..].iter().any(|x| x.is_ascii_uppercase())
                        && p.iter().any(|x| x.is_ascii_lowercase());
                    snake || camel
                }) || (parts.len() >= 2 && parts.iter().any(|&(a, b)| b - a >= 2));
                if code_like {
                    out.push((i, j));
                }
                i = j;
            }
            out
        }

        fn number_spans(c: &[char]) -> Spans {
            let run_char = |ch: char| is_word_char(ch) || ch == '.' || ch == ',';
            let mut out = Vec::new();
            let mut i = 0;
            while i < c.len() {
                if !run_char(c[i]) {
                    i += 1;
                    continue;
                }
                let mut j = i;
                while j < c.len() && run_char(c[j]) {
                    j += 1;
                }
                if c[i].is_ascii_digit() {
                    let mut end = i;
                    while end < j && (c[end].is_ascii_digit() || c[end] == '.' || c[end] == ',') {
                        end += 1;
                    }
                    while end > i && matches!(c[end - 1], '.' | ',') {
                        end -= 1;
                    }
                    if c[i..end].iter().filter(|x| x.is_ascii_digit()).count() >= 2 {
                        out.push((i, end));
                    }
                }
                i = j;
            }
            out
        }

        pub(crate) fn survives_command(term: &str, summary: &str) -> bool {
            !term.is_empty() && collapse(summary).contains(&collapse(term))
        }
    }

    /// Random text over an alphabet dense in the characters the rules look
    /// at, a deterministic generator (xorshift).
    fn random_text(seed: u64, len: usize) -> String {
        const PIECES: &[&str] = &[
            "a",
            "B",
            "z",
            "Q",
            "_",
            "0",
            "7",
            "42",
            ".",
            "..",
            ",",
            "/",
            "//",
            "-",
            "~",
            "+",
            "@",
            ":",
            "::",
            "<",
            ">",
            "\"",
            "'",
            "`",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            " ",
            "\n",
            "\t",
            "é",
            "Ж",
            "漢",
            "\u{a0}",
            "https://",
            "http://",
            "ftp://",
            "file://",
            "src/",
            ".rs",
            ".toml",
            "~/",
            "./",
            "../",
            "MAX_LEN",
            "camelCase",
            "HashMap",
            "x.py",
            "os.path",
            "e.g",
            "7,270",
            "0.1.0",
            "</tag>",
            "?",
            "!",
            ";",
            "--out",
            "hf",
        ];
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = String::new();
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push_str(PIECES[(x % PIECES.len() as u64) as usize]);
        }
        out
    }

    #[test]
    fn extract_is_the_plain_reading() {
        let mut found = [0; 5];
        for seed in 1..=400u64 {
            let text = random_text(seed, 5 + (seed as usize % 7) * 40);
            let t = extract(&text);
            assert_eq!(t, plain::extract(&text), "seed {seed}: {text:?}");
            for (n, c) in found.iter_mut().zip(Category::ALL) {
                *n += t.get(c).len();
            }
        }
        // Every category but commands (not from text) was exercised.
        assert!(
            found
                .iter()
                .zip(Category::ALL)
                .all(|(n, c)| *n > 50 || c == Category::Commands),
            "{found:?}"
        );
    }

    #[test]
    fn compare_is_survives() {
        for seed in 1..=200u64 {
            let span = random_text(seed, 60);
            let summary = random_text(seed + 1000, 80);
            let mut terms = extract(&span);
            terms.commands = vec![
                random_text(seed + 7, 3),
                String::new(),
                collapse(&random_text(seed + 3000, 2)),
            ];
            let b = compare(&terms, &summary);
            for c in Category::ALL {
                for t in &b.get(c).survived {
                    assert!(survives(c, t, &summary), "seed {seed}");
                }
                for t in &b.get(c).lost {
                    assert!(!survives(c, t, &summary), "seed {seed}");
                }
            }
            for t in &terms.commands {
                assert_eq!(
                    b.commands.survived.contains(t),
                    plain::survives_command(t, &summary)
                );
            }
        }
    }

    #[test]
    fn compare_lists() {
        let mut span = SpanText::default();
        let msg = Value::parse(
            r#"{"role":"assistant","content":[{"type":"text","text":"Fix src/a.rs at 120 via fix_it"},{"type":"tool-call","id":"c","name":"bash","arguments":"{\"command\":\"cargo test\"}"}]}"#,
        )
        .unwrap();
        span.add_message(&msg);
        let b = compare(&span.terms(), "We fixed src/a.rs with fix_it.");
        assert_eq!(b.paths.survived, ["src/a.rs"]);
        assert_eq!(b.identifiers.survived, ["fix_it"]);
        assert_eq!(b.numbers.lost, ["120"]);
        assert_eq!(b.commands.lost, ["cargo test"]);
    }
}
