//! Reading a session log: bytes → lines → records → validated events, folded
//! into a [`Surface`] as they stream past (session-log §16).
//!
//! The loader holds a few small batches of lines at a time: a reading thread
//! cuts them, both threads parse them (the `parse` module), and this thread
//! validates and folds them in file order.
//! Every event is validated in the reference's order, then handed to the
//! caller's observer with what the surface fold did with it, so measuring,
//! auditing and listing need no second pass and no copy of the log. What
//! outlives the pass is small: the surface nodes (each pointing back at its
//! line), the request-header snapshots, the closers of an open tail, and
//! counters.
//!
//! Rules are applied per event in the reference's order (retired shapes,
//! legacy upgrades, message shapes, vocabulary, envelope, request header,
//! surface); the reference runs the first four over the whole log before the
//! rest, so on a log with several defects the first refusal reported can
//! differ from the reference's, never whether the log is refused.

mod error;
pub(crate) mod fastlane;
pub mod header;
pub(crate) mod later;
pub(crate) mod legacy;
pub mod lookup;
pub(crate) mod packed;
pub(crate) mod parse;
pub(crate) mod prefix;
pub(crate) mod reader;
pub(crate) mod repair;
pub(crate) mod reread;
pub(crate) mod run;
pub mod source;
pub mod tail;
pub(crate) mod tee;
pub(crate) mod validate;

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

pub use error::{Hint, LoadError, LoadErrorKind, LoadRule, Location};
pub use fastlane::{BlockKind, ChunkFact, ChunkFacts, UsageFacts};
pub use header::SessionHeader;
pub use packed::RowFacts;
pub use reader::{Container, CutFrame, Limits, TornTail};
pub use reread::Reread;
pub use run::{ChunkRun, RunFacts};
pub use source::LogSource;
pub use tee::Tee;

use crate::event::{Event, Kind, OwnedEvent};
use crate::json::{OwnedValue, Value};
use crate::request_header::HeaderFold;
use crate::surface::{Applied, NodeBody, Surface, node_facts};

/// How to read.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Accept the documented tolerances (missing header `delegationDepth`),
    /// reporting each as a warning.
    pub lenient: bool,
    /// Stop after the event with this seq (the log as it stood then); no
    /// closers are added to such a prefix.
    pub upto: Option<u64>,
    /// Keep every surface node's event in memory instead of re-reading its
    /// line on demand.
    pub keep_nodes: bool,
    /// Validate and count `assistant/chunk` events (packed rows and plain
    /// chunk lines) but do not build them: the observer sees them as
    /// counted runs (`RunFacts::Counted`), by seqs and times only. For
    /// commands that need only the surface, the headers and the counts
    /// (chunks never change those). In generations 2 and later, where the
    /// chunks are embedded, the `stream` of an assistant message or attempt
    /// is validated but left empty in the events.
    pub skip_chunk_events: bool,
    /// Bounds on one line's length and on what a Zstandard artifact may
    /// decompress to; a log past either is refused
    /// ([`LoadErrorKind::Limit`]).
    pub limits: Limits,
    /// Of an artifact, keep in memory the tool-result nodes whose text may
    /// be longer than this many UTF-16 units ([`crate::surface::Node`]'s
    /// pruner bound): reading one of their lines again means decompressing
    /// the artifact again, and the pruner reads exactly those. A plain
    /// file's lines are read again cheaply, so it keeps none.
    pub keep_results_over: Option<u64>,
}

/// What the fold did with one event, for observers.
pub struct Folded<'s> {
    /// For surface events: the op, the node's price and the shadowed nodes.
    pub applied: Option<&'s Applied>,
    /// The surface after the event.
    pub surface: &'s Surface,
    /// The event is a synthetic crash-repair closer, not in the file.
    pub synthetic: bool,
    /// The event's line as the file holds it, when that is exactly what
    /// `JSON.stringify` writes for the event (so it can be copied instead of
    /// written again); `None` otherwise.
    pub canonical_line: Option<&'s str>,
    /// Where that line starts in the log's plaintext (the offsets
    /// [`LoadedLog::span_window`] reads): its bytes there are exactly
    /// `canonical_line`. `None` with it.
    pub canonical_offset: Option<u64>,
}

/// Sees every validated event, in order, after it was folded.
///
/// The log-only chunks of a G0 or G1 log come in one shape only, as
/// `ChunkRun`s (a packed row's chunks, or one chunk line as a run of
/// one), whatever the log's spelling or container; every other event comes
/// to [`Self::event`]. A reader that wants chunks only by their seqs, times
/// or `RunFacts` takes the run as it is; one that wants the chunk events
/// themselves asks the run for them (`ChunkRun::each_event`), which is
/// what the default does.
pub trait Observer {
    /// One event that is not a log-only chunk (`assistant/chunk`).
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>);

    /// A run of log-only chunks, `folded` the fold after them (chunks never
    /// change the surface). The default shows each chunk to
    /// [`Self::event`]; under [`LoadOptions::skip_chunk_events`] most runs
    /// are only counted (`RunFacts::Counted`) and have no events.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        run.each_event(folded, |ev, f| self.event(ev, f));
    }
}

/// Nobody: sees everything, keeps nothing (no chunk run's events are built
/// for it).
impl Observer for () {
    fn event(&mut self, _: &Event<'_>, _: &Folded<'_>) {}

    fn chunks(&mut self, _: &ChunkRun<'_>, _: &Folded<'_>) {}
}

impl<F: FnMut(&Event<'_>, &Folded<'_>)> Observer for F {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self(ev, folded)
    }
}

/// The system prompt ([`LoadedLog::system_prompt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    /// Its text (the text blocks of a G3 head, joined).
    pub text: String,
    /// DSH's price of it (the same in every generation).
    pub tokens: u64,
    /// The seq of the G3 `system/message` head holding it (`None`: the
    /// request header holds it).
    pub seq: Option<u64>,
}

/// Lines dropped after a damaged line that no committed `turn/end` follows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct DroppedRegion {
    /// First dropped line.
    pub line: u64,
    /// How many complete lines were dropped.
    pub lines: u64,
    /// Why the region ends the committed prefix.
    pub reason: String,
}

/// A loaded log: everything but the events themselves.
#[derive(Debug)]
pub struct LoadedLog {
    /// Where it came from.
    pub source: LogSource,
    /// Plain or Zstandard.
    pub container: Container,
    /// The header line.
    pub header: SessionHeader,
    /// The folded surface (closers included).
    pub surface: Surface,
    /// Events read from the file (after upgrades, torn tail dropped).
    pub stored_events: u64,
    /// Synthetic closers for an open final turn (in memory only).
    pub closers: Vec<OwnedEvent>,
    /// The request-header fold.
    pub headers: HeaderFold,
    /// Event-type histogram (stored + closers).
    pub event_types: BTreeMap<String, u64>,
    /// Fragment after the last complete line.
    pub torn: Option<TornTail>,
    /// A Zstandard artifact whose last frame was cut short.
    pub cut_frame: Option<CutFrame>,
    /// Complete lines dropped as a torn tail (plain mode).
    pub dropped: Option<DroppedRegion>,
    /// Events whose stored shape was upgraded in memory (§12).
    pub upgraded: u64,
    /// Tolerances used and other notes.
    pub warnings: Vec<String>,
    /// The last `session/end-seed` seq.
    pub last_end_seed: Option<u64>,
    /// Whether the last event (closers included) is a `session/end-seed`.
    pub ends_with_end_seed: bool,
    /// Time of the last event (closers included).
    pub last_time: f64,
    /// Logical byte length of the committed prefix.
    pub committed_len: u64,
    /// Whether `upto` cut the log short.
    pub truncated_at: Option<u64>,
    /// Generation 3 only: replaces plus image offloads applied.
    pub content_generation: Option<u64>,
    /// Generation 2 and later: the seq of the last
    /// `session/end-seed {inherited:true}`, where a fork's inherited prefix
    /// ends (see `Self::seed_cut`).
    pub inherited_cut: Option<u64>,
    /// Where a Zstandard artifact's frames start, for reading node spans
    /// again (`None` for a plain log, or when no node is a span).
    pub(crate) frames: Option<reread::FrameTable>,
}

impl LoadedLog {
    /// The format generation.
    pub(crate) fn generation(&self) -> crate::Generation {
        self.header.generation
    }

    /// The G3 `system/message` surface head, if the surface has one.
    fn system_head(&self) -> Option<&crate::surface::Node> {
        self.surface
            .nodes
            .first()
            .filter(|n| n.kind == Kind::SystemMessage)
    }

    /// The system prompt the model is sent now: the latest request header's
    /// `system` (G0–G2), or the text of the `system/message` head (G3).
    pub fn system_prompt(&self) -> Result<Option<SystemPrompt>, LoadError> {
        if let Some(head) = self.system_head() {
            let ev = self.read_body(&head.body, head.seq, &mut None)?;
            let text = ev
                .data()
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(|c| c.as_arr())
                .map(|blocks| {
                    blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(|t| t.as_jstr()))
                        .map(|t| t.to_lossy().into_owned())
                        .collect::<String>()
                })
                .unwrap_or_default();
            return Ok(Some(SystemPrompt {
                text,
                tokens: head.tokens,
                seq: Some(head.seq),
            }));
        }
        let system = self
            .headers
            .header
            .as_ref()
            .and_then(|h| h.get("system"))
            .filter(|s| s.as_jstr().is_some());
        Ok(system.map(|s| SystemPrompt {
            text: s
                .as_jstr()
                .map(|t| t.to_lossy().into_owned())
                .unwrap_or_default(),
            tokens: crate::heuristic::system_tokens(Some(s)),
            seq: None,
        }))
    }

    /// Total events: stored plus closers.
    pub fn event_count(&self) -> u64 {
        self.stored_events + self.closers.len() as u64
    }

    /// Whether the reference's seeded Session appends a `session/end-seed`
    /// marker to this log in memory (it does unless the log, closers
    /// included, already ends with one). An offline reader never writes it;
    /// a writer starting a new lifecycle does (first in its batch).
    pub fn end_seed_appended(&self) -> bool {
        !self.ends_with_end_seed
    }

    /// The reference session's length: events, closers and the in-memory
    /// end-seed marker (`measure.logRevision`, `prune.baseSeq`).
    pub fn session_length(&self) -> u64 {
        self.event_count() + self.end_seed_appended() as u64
    }

    /// The `session/end-seed` event the reference appends in memory (time
    /// pinned to the last event's time), if it appends one.
    pub fn end_seed_event(&self) -> Option<OwnedEvent> {
        if !self.end_seed_appended() {
            return None;
        }
        let seq = self.event_count();
        let v = Value::obj()
            .with("type", "session/end-seed".into())
            .with("seq", seq.into())
            .with("time", self.last_time.into())
            .with("data", Value::obj());
        Some(crate::event::owned_event(Kind::SessionEndSeed, seq, v))
    }

    /// Show [`Self::end_seed_event`], if the reference appends one, to `f`
    /// as a synthetic event on the final surface.
    pub fn with_end_seed(&self, f: impl FnOnce(&Event<'_>, &Folded<'_>)) {
        if let Some(es) = self.end_seed_event() {
            let folded = Folded {
                applied: None,
                surface: &self.surface,
                synthetic: true,
                canonical_line: None,
                canonical_offset: None,
            };
            f(&es, &folded);
        }
    }

    /// Read the events of the given surface nodes again (by seq, any order),
    /// returning them in the order asked.
    pub fn node_events(&self, seqs: &[u64]) -> Result<Vec<OwnedEvent>, LoadError> {
        let mut file = None;
        let mut out = Vec::with_capacity(seqs.len());
        let index: std::collections::HashMap<u64, usize> = self
            .surface
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.seq, i))
            .collect();
        for &seq in seqs {
            let node = index
                .get(&seq)
                .map(|&i| &self.surface.nodes[i])
                .ok_or_else(|| LoadError::invalid(format!("seq {seq} is not a surface node")))?;
            out.push(self.read_body(&node.body, seq, &mut file)?);
        }
        Ok(out)
    }

    /// The raw bytes of a node's line, when it is a span of the log; `file`
    /// keeps the open file (and an artifact's decoder) between calls.
    pub(crate) fn read_span(
        &self,
        body: &NodeBody,
        file: &mut Option<Reread>,
        buf: &mut Vec<u8>,
    ) -> Result<bool, LoadError> {
        let NodeBody::Span { offset, len } = body else {
            return Ok(false);
        };
        if file.is_none() {
            let Some(r) = self.reread()? else {
                return Ok(false);
            };
            *file = Some(r);
        }
        let Some(Reread(src)) = file.as_mut() else {
            return Ok(false);
        };
        let again = |e| LoadError::io("cannot re-read the log", e);
        match src {
            reread::Source::Plain(f) => {
                buf.resize(*len as usize, 0);
                read_exact_at(f, *offset, buf).map_err(again)?;
            }
            reread::Source::Zstd(c) => c.read(*offset, buf, *len as usize).map_err(again)?,
        }
        Ok(true)
    }

    /// A handle for reading node spans again, if the log can be read again.
    fn reread(&self) -> Result<Option<Reread>, LoadError> {
        let Some(path) = self.source.reread_path() else {
            return Ok(None);
        };
        let reopen = |e| LoadError::io("cannot reopen the log", e);
        Ok(Some(Reread(match (&self.container, &self.frames) {
            (Container::Plain, _) => {
                reread::Source::Plain(std::fs::File::open(path).map_err(reopen)?)
            }
            (Container::Zstd, Some(frames)) => reread::Source::Zstd(Box::new(
                reread::ZstdCursor::open(path, frames.clone()).map_err(reopen)?,
            )),
            (Container::Zstd, None) => return Ok(None),
        })))
    }

    /// A view of byte ranges of the log's plaintext, for walking many node
    /// lines in log order: a moving memory map of a plain file, a moving
    /// window of decompressed plaintext of an artifact; `None` when the log
    /// cannot be read again (stdin).
    pub fn span_window(&self) -> Option<SpanWindow> {
        let path = self.source.reread_path()?.to_path_buf();
        let backing = match (&self.container, &self.frames) {
            (Container::Plain, _) => Backing::Map {
                path,
                file: None,
                map: None,
                at: 0,
            },
            (Container::Zstd, Some(frames)) => Backing::Zstd(Box::new(
                reread::ZstdCursor::open(&path, frames.clone()).ok()?,
            )),
            (Container::Zstd, None) => return None,
        };
        Some(SpanWindow(backing))
    }

    /// The plaintext bytes `start .. end` of a plain log file, mapped (no
    /// copy, no read per line); `None` for an artifact or standard input,
    /// whose lines are read with [`Self::read_span`] instead. Sound as
    /// [`SpanWindow`]'s maps are: an append-only log never shrinks under
    /// them, and nothing past the file's length is mapped.
    pub(crate) fn map_plain(&self, start: u64, end: u64) -> Result<Option<MappedSpans>, LoadError> {
        let (Container::Plain, Some(path)) = (&self.container, self.source.reread_path()) else {
            return Ok(None);
        };
        let file = std::fs::File::open(path).map_err(|e| reread_io("reopen", e))?;
        let len = end.saturating_sub(start) as usize;
        let map = map_log_range(&file, start, len, len)?;
        Ok(Some(MappedSpans { map, at: start }))
    }

    /// Re-read one node body.
    pub fn read_body(
        &self,
        body: &NodeBody,
        seq: u64,
        file: &mut Option<Reread>,
    ) -> Result<OwnedEvent, LoadError> {
        match body {
            NodeBody::Owned(ev) => Ok((**ev).clone()),
            NodeBody::Span { .. } => self.with_body(body, seq, file, &mut Vec::new(), |ev| Event {
                kind: ev.kind,
                seq,
                line: 0,
                value: ev.value.to_owned_value(),
            }),
        }
    }

    /// [`Self::read_body`] without the copy: the event, borrowed from
    /// `buf` (a buffer the caller keeps between calls), handed to `f`.
    pub(crate) fn with_body<R>(
        &self,
        body: &NodeBody,
        seq: u64,
        file: &mut Option<Reread>,
        buf: &mut Vec<u8>,
        f: impl FnOnce(&Event<'_>) -> R,
    ) -> Result<R, LoadError> {
        match body {
            NodeBody::Owned(ev) => Ok(f(ev)),
            NodeBody::Span { .. } => {
                buf.clear();
                if !self.read_span(body, file, buf)? {
                    return Err(LoadError::new(
                        LoadErrorKind::Io,
                        "node span without a file",
                    ));
                }
                Ok(f(&parse_node_line(buf, seq)?))
            }
        }
    }
}

fn reread_io(what: &str, e: std::io::Error) -> LoadError {
    LoadError::io(&format!("cannot {what} the log"), e)
}

/// Map `len` bytes of a plain log file from `offset`, and on up to `most`
/// bytes where the file goes on that far; `None` for nothing to map. A
/// file shorter than `offset + len` has changed since it was read.
///
/// Sound because a DSH log is append-only: writers, dsh's included, only
/// ever add lines past the length a reader validated, and nothing past the
/// file's length is mapped.
fn map_log_range(
    file: &std::fs::File,
    offset: u64,
    len: usize,
    most: usize,
) -> Result<Option<memmap2::Mmap>, LoadError> {
    let file_len = file.metadata().map_err(|e| reread_io("stat", e))?.len();
    if offset + len as u64 > file_len {
        return Err(LoadError::corrupt(
            "the log changed while it was being read",
        ));
    }
    let want = (len.max(most) as u64).min(file_len - offset) as usize;
    if want == 0 {
        return Ok(None);
    }
    // SAFETY: see above.
    let map = unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(want)
            .map(file)
            .map_err(|e| reread_io("map", e))?
    };
    Ok(Some(map))
}

/// A mapped stretch of a plain log ([`LoadedLog::map_plain`]).
pub(crate) struct MappedSpans {
    map: Option<memmap2::Mmap>,
    /// File offset of the map's first byte.
    at: u64,
}

impl MappedSpans {
    /// The bytes `offset .. offset + len`, when the map holds them.
    pub(crate) fn get(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset.checked_sub(self.at)?).ok()?;
        match &self.map {
            Some(m) => m.get(start..start.checked_add(len)?),
            None => (len == 0 && start == 0).then_some(&[][..]),
        }
    }
}

/// Byte ranges of a log's plaintext, taken in log order: for a plain file a
/// moving memory map of a few megabytes (one map per window, and no copy at
/// all: a vectored write hands the kernel the mapped bytes); for an artifact
/// a moving window of decompressed plaintext.
///
/// Mapping a file is sound only while nobody shrinks it: a DSH log is
/// append-only (writers, dsh's included, only ever add lines past the
/// length a reader validated), and a window never reaches past the file's
/// length when it is mapped.
pub struct SpanWindow(Backing);

enum Backing {
    Map {
        path: std::path::PathBuf,
        file: Option<std::fs::File>,
        map: Option<memmap2::Mmap>,
        /// File offset of the map's first byte.
        at: u64,
    },
    Zstd(Box<reread::ZstdCursor>),
}

impl SpanWindow {
    const WINDOW: usize = 8 << 20;
    /// Decompressed plaintext is copied, so its window is smaller.
    const ZSTD_WINDOW: usize = 2 << 20;

    /// Whether `offset .. offset + len` is in the window now.
    pub fn holds(&self, offset: u64, len: usize) -> bool {
        match &self.0 {
            Backing::Map { map, at, .. } => map
                .as_ref()
                .is_some_and(|m| offset >= *at && offset + len as u64 <= *at + m.len() as u64),
            Backing::Zstd(c) => c.holds(offset, len),
        }
    }

    /// Move the window to start at `offset` and hold at least `len` bytes.
    pub fn fill(&mut self, offset: u64, len: usize) -> Result<(), LoadError> {
        let (path, file, map, at) = match &mut self.0 {
            Backing::Map {
                path,
                file,
                map,
                at,
            } => (path, file, map, at),
            Backing::Zstd(c) => {
                return c
                    .fill(offset, len, Self::ZSTD_WINDOW)
                    .map_err(|e| reread_io("re-read", e));
            }
        };
        *map = None;
        let file = match file {
            Some(f) => f,
            None => file.insert(std::fs::File::open(&*path).map_err(|e| reread_io("reopen", e))?),
        };
        *map = map_log_range(file, offset, len, Self::WINDOW)?;
        *at = offset;
        Ok(())
    }

    /// Bytes the window holds (see [`Self::holds`]).
    pub fn slice(&self, offset: u64, len: usize) -> &[u8] {
        match &self.0 {
            Backing::Map { map, at, .. } => {
                let start = (offset - at) as usize;
                map.as_ref().map_or(&[][..], |m| &m[start..start + len])
            }
            Backing::Zstd(c) => c.slice(offset, len),
        }
    }
}

/// `buf.len()` bytes of `file` from `offset`.
pub(crate) fn read_exact_at(
    file: &mut std::fs::File,
    offset: u64,
    buf: &mut [u8],
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// A node's line read again, as its event (borrowed from `bytes` where it
/// is UTF-8, as the loader decodes lines otherwise).
pub(crate) fn parse_node_line(bytes: &[u8], seq: u64) -> Result<Event<'_>, LoadError> {
    let changed = || LoadError::corrupt("the log changed while it was being read").seq(seq);
    let value = match simdutf8::basic::from_utf8(bytes) {
        Ok(t) => Value::parse(t).map_err(|_| changed())?,
        Err(_) => Value::parse(&String::from_utf8_lossy(bytes))
            .map_err(|_| changed())?
            .into_owned(),
    };
    let kind = Kind::of_node(
        &value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default(),
    );
    Ok(Event {
        kind,
        seq,
        line: 0,
        value,
    })
}

/// A line of the log read again, decoded as the loader decodes lines
/// (invalid UTF-8 becomes U+FFFD); `None` when it is no longer JSON.
pub(crate) fn parse_line_again(bytes: &[u8]) -> Option<OwnedValue> {
    let text = match simdutf8::basic::from_utf8(bytes) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    Value::parse(&text).ok().map(Value::into_owned)
}

fn failed_validation(id: &str, index: u64, msg: &str) -> LoadError {
    LoadError::invalid(format!(
        "stored session \"{id}\" failed validation: Error: invalid seed event at index {index}: {msg}"
    ))
    .seq(index)
}

/// Load a log, streaming every validated event to `observer`.
pub fn load(
    source: &LogSource,
    opts: &LoadOptions,
    observer: &mut dyn Observer,
) -> Result<LoadedLog, LoadError> {
    load_inner(source, opts, observer).map_err(|e| e.file(source.display()))
}

/// Where an event's line sits and what the parser learnt of its text.
#[derive(Clone, Copy)]
struct LineFacts<'t> {
    offset: u64,
    len: u32,
    canonical: bool,
    spans: crate::json::EventSpans,
    text: &'t str,
}

struct Pipeline<'o> {
    id: String,
    generation: crate::Generation,
    span_bodies: bool,
    /// [`LoadOptions::keep_results_over`], for an artifact only.
    keep_results_over: Option<u64>,
    surface: Surface,
    headers: HeaderFold,
    repair: repair::RepairTracker,
    event_types: BTreeMap<String, u64>,
    upgraded: u64,
    /// `--lenient`: decode range-encoded `sourceEventSeqs` (a later writer's
    /// spelling) instead of refusing them in a G0 log.
    lenient: bool,
    range_decoded: u64,
    /// G3: replaces plus image offloads applied.
    content_generation: u64,
    /// G2+: unknown events marked `ignorable`, kept and skipped.
    ignored: u64,
    last_end_seed: Option<u64>,
    /// G2+: the last `session/end-seed {inherited:true}`, the fork cut.
    inherited_cut: Option<u64>,
    last_kind: Option<Kind>,
    last_time: f64,
    observer: &'o mut dyn Observer,
}

impl Pipeline<'_> {
    /// Account for a run of valid log-only chunks without folding them
    /// one by one (they change nothing but counts and the clock), then show
    /// it to the observer.
    fn run(&mut self, run: &ChunkRun<'_>) {
        let time = run.last_time;
        self.repair.note_last(run.last_seq(), time);
        match self.event_types.get_mut("assistant/chunk") {
            Some(n) => *n += run.count,
            None => {
                self.event_types
                    .insert("assistant/chunk".to_string(), run.count);
            }
        }
        self.last_kind = Some(Kind::AssistantChunk);
        self.last_time = time;
        let folded = Folded {
            applied: None,
            surface: &self.surface,
            synthetic: false,
            canonical_line: None,
            canonical_offset: None,
        };
        self.observer.chunks(run, &folded);
    }

    /// The G0/G1 per-event rules before the fold (§16 steps 4–10): range
    /// decoding (G1; G0 under `--lenient`), retired and legacy shapes (G0),
    /// then [`validate::check_event`]. Gives the envelope, the op and
    /// whether the event was changed from its line.
    fn check_g0(
        &mut self,
        ev: &mut Event<'_>,
        synthetic: bool,
    ) -> Result<(validate::Envelope, Option<crate::event::SurfaceOp>, bool), LoadError> {
        let at = |e: LoadError, ev: &Event<'_>| {
            let e = e.seq(ev.seq);
            if ev.line > 0 { e.line(ev.line) } else { e }
        };
        let mut upgraded = false;
        if (self.lenient || self.generation.range_sources())
            && let Some(Value::Arr(src)) = ev.value.get("sourceEventSeqs")
            && src.iter().any(|m| m.is_arr())
        {
            // Range-encoded sources (`[a, b]` for a..=b): G1's spelling,
            // tolerated in G0 on request.
            let decoded = later::decode_sources(ev.value.get("sourceEventSeqs").unwrap(), ev.seq)
                .map_err(|m| {
                failed_validation(&self.id, ev.seq, &format!("sourceEventSeqs: {m}"))
                    .line(ev.line)
                    .rule(LoadRule::Surface("R7"))
            })?;
            ev.value.set(
                "sourceEventSeqs",
                Value::Arr(decoded.into_iter().map(|n| Value::Num(n as f64)).collect()),
            );
            if !self.generation.range_sources() {
                self.range_decoded += 1;
            }
            upgraded = true;
        }
        if !synthetic && self.generation == crate::Generation::V0 {
            legacy::check_retired(ev, &self.id)?;
            let surface = &self.surface;
            let lookup = |seq: u64| -> Option<String> {
                surface
                    .nodes
                    .iter()
                    .find(|n| n.seq == seq)
                    .and_then(|n| n.msg_id.as_deref().map(str::to_string))
            };
            if legacy::upgrade(ev, &self.id, &lookup)? {
                self.upgraded += 1;
                upgraded = true;
            }
        }
        match validate::check_event(ev) {
            Ok((env, op)) => Ok((env, op, upgraded)),
            Err(validate::EventRule::UnknownType(_)) => {
                let e = LoadError::unsupported(format!(
                    "session \"{}\" contains event type \"{}\" (seq {}) unknown to this harness and not marked ignorable; refusing to interpret the log — it was likely written by a newer harness",
                    self.id,
                    crate::json::js_string(ev.value.get("type")),
                    ev.seq
                ));
                Err(at(e.rule(LoadRule::UnknownType), ev))
            }
            Err(validate::EventRule::RequestHeader(m)) => {
                let e = LoadError::invalid(format!(
                    "stored session \"{}\" failed validation: Error: seed request/header at index {} {m}",
                    self.id, ev.seq
                ));
                Err(at(e.rule(LoadRule::RequestHeader), ev))
            }
            Err(other) => {
                let rule = match &other {
                    validate::EventRule::Shape(_) => LoadRule::MessageShape,
                    validate::EventRule::Surface(s) => LoadRule::Surface(s.rule),
                    _ => LoadRule::Envelope,
                };
                Err(at(
                    failed_validation(&self.id, ev.seq, &other.to_string()).rule(rule),
                    ev,
                ))
            }
        }
    }

    /// A G2+ event's refusal, in dsh's words (no reference wrote these
    /// generations' messages), with the rule it broke.
    fn later_refusal(&self, r: validate::EventRule, ev: &Event<'_>) -> LoadError {
        let g = self.generation;
        let seq = ev.seq;
        let e = match &r {
            validate::EventRule::UnknownType(t) => {
                return LoadError::unsupported(format!(
                    "session \"{}\" holds event type \"{t}\" (seq {seq}), unknown to format {g} and not marked ignorable: a newer DSH wrote it",
                    self.id
                ))
                .rule(LoadRule::UnknownType);
            }
            validate::EventRule::Shape(_) => LoadRule::MessageShape,
            validate::EventRule::RequestHeader(_) => LoadRule::RequestHeader,
            validate::EventRule::Surface(s) => LoadRule::Surface(s.rule),
            validate::EventRule::Envelope(_) => LoadRule::Envelope,
        };
        let what = match &r {
            validate::EventRule::RequestHeader(m) => format!("request/header {m}"),
            other => other.to_string(),
        };
        LoadError::invalid(format!(
            "session \"{}\" (format {g}) is invalid at seq {seq}: {what}",
            self.id
        ))
        .rule(e)
    }

    /// Steps 4–10 of §16 for one event; gives the event back.
    // One piece on purpose: the per-event fold in the reference's order (envelope, upgrade, shapes, surface, headers, repair, observer); the order is the contract, so it stays visible in one place.
    fn process<'a>(
        &mut self,
        mut ev: Event<'a>,
        span: Option<LineFacts<'_>>,
        synthetic: bool,
    ) -> Result<Event<'a>, LoadError> {
        let at = |e: LoadError, ev: &Event<'_>| {
            let e = e.seq(ev.seq);
            if ev.line > 0 { e.line(ev.line) } else { e }
        };
        let (time, op, upgraded) = if self.generation.embedded_streams() {
            let checked = later::check_event(&mut ev, self.generation)
                .map_err(|r| at(self.later_refusal(r, &ev), &ev))?;
            (checked.time, checked.op, checked.sources_decoded)
        } else {
            let (env, op, upgraded) = self.check_g0(&mut ev, synthetic)?;
            (env.time, op, upgraded)
        };
        if let Some(op) = op
            && self.generation.system_head()
        {
            later::check_head(&ev, op, &self.surface).map_err(|m| {
                at(
                    self.later_refusal(validate::EventRule::Envelope(m), &ev),
                    &ev,
                )
            })?;
        }
        let applied = match op {
            None => None,
            Some(op) => {
                let facts = node_facts(&ev);
                let upgraded_or_synthetic = synthetic || upgraded || span.is_none();
                // A result the pruner will read again, of an artifact.
                let kept = self
                    .keep_results_over
                    .is_some_and(|t| facts.text_units.is_some_and(|u| u > t));
                let mut message_text = None;
                let body = match span {
                    Some(line) if self.span_bodies && !upgraded_or_synthetic && !kept => {
                        if line.canonical {
                            message_text = if ev.kind == Kind::UserMessage {
                                line.spans.data
                            } else {
                                line.spans.message
                            };
                        }
                        NodeBody::Span {
                            offset: line.offset,
                            len: line.len,
                        }
                    }
                    _ => NodeBody::Owned(Arc::new(ev.to_owned_event())),
                };
                let applied = self.surface.apply(&ev, op, facts, body).map_err(|e| {
                    let refusal = if self.generation.embedded_streams() {
                        self.later_refusal(validate::EventRule::Surface(e), &ev)
                    } else {
                        failed_validation(&self.id, ev.seq, &e.message)
                            .rule(LoadRule::Surface(e.rule))
                    };
                    at(refusal, &ev)
                })?;
                if matches!(op, crate::event::SurfaceOp::Replace(_)) {
                    self.content_generation += 1;
                }
                if message_text.is_some() {
                    self.surface.nodes[applied.position].message_text = message_text;
                }
                Some(applied)
            }
        };
        if ev.kind == Kind::ImageOffload {
            later::apply_offload(&ev, &mut self.surface)
                .map_err(|m| at(self.later_refusal(validate::EventRule::Shape(m), &ev), &ev))?;
            self.content_generation += 1;
        }
        if ev.kind == Kind::Unknown && self.generation.embedded_streams() {
            self.ignored += 1;
        }
        if !synthetic {
            self.repair.observe_at(&ev, time);
        }
        if matches!(ev.kind, Kind::RequestHeader | Kind::RequestContext) {
            self.headers.observe(&ev);
        }
        if ev.kind == Kind::SessionEndSeed {
            self.last_end_seed = Some(ev.seq);
            if self.generation.embedded_streams()
                && ev.data().get("inherited").is_some_and(|i| i.is_true())
            {
                self.inherited_cut = Some(ev.seq);
            }
        }
        let name = ev.type_name();
        match self.event_types.get_mut(&*name) {
            Some(n) => *n += 1,
            None => {
                self.event_types.insert(name.into_owned(), 1);
            }
        }
        self.last_kind = Some(ev.kind);
        self.last_time = time;
        // A line whose stream was left out is not the event's line.
        let canonical = span.filter(|l| l.canonical && !upgraded && !l.spans.stream_skipped);
        let folded = Folded {
            applied: applied.as_ref(),
            surface: &self.surface,
            synthetic,
            canonical_line: canonical.as_ref().map(|l| l.text),
            canonical_offset: canonical.as_ref().map(|l| l.offset),
        };
        if ev.kind == Kind::AssistantChunk {
            self.observer.chunks(&ChunkRun::event(&ev), &folded);
        } else {
            self.observer.event(&ev, &folded);
        }
        Ok(ev)
    }
}

/// The reference names the raw log in its "unsupported" refusals.
fn raw_note(source: &LogSource, e: LoadError) -> LoadError {
    if e.kind == LoadErrorKind::Unsupported {
        let mut e = e;
        e.message = format!("{} (raw log: {})", e.message, source.display());
        e
    } else {
        e
    }
}

/// What the parsing thread does with each kind of line. Chunk records
/// exist only in G0 and G1; later generations parse every line the normal
/// way (one event per line, streams embedded).
fn lanes_for(generation: crate::Generation, opts: &LoadOptions) -> parse::Lanes {
    parse::Lanes {
        skip_streams: generation.embedded_streams() && opts.skip_chunk_events,
        rows: generation.chunk_events() && opts.upto.is_none(),
        chunk_lines: if opts.skip_chunk_events {
            fastlane::ChunkLines::Count
        } else {
            fastlane::ChunkLines::Facts
        },
    }
}

/// How the surface reads node bodies back (only with `span_bodies`): a
/// plain file by offset, an artifact through its frame table.
fn reread_for(
    source: &LogSource,
    frames: &Option<reread::FrameTable>,
    span_bodies: bool,
) -> Option<Arc<dyn crate::surface::NodeLines>> {
    match source {
        LogSource::File(path) | LogSource::Spooled(path) if span_bodies => Some(match frames {
            None => Arc::new(reread::PlainLines(path.clone())),
            Some(frames) => Arc::new(reread::ZstdLines {
                path: path.clone(),
                frames: frames.clone(),
            }),
        }),
        _ => None,
    }
}

/// The notes of what the load did in memory (closers, decoded ranges,
/// upgrades, skipped events).
fn load_notes(p: &Pipeline<'_>, closers: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if closers > 0 {
        notes.push(format!(
            "the last turn is open: {closers} synthetic closer(s) computed in memory"
        ));
    }
    if p.range_decoded > 0 {
        notes.push(format!(
            "{} range-encoded sourceEventSeqs decoded (--lenient)",
            p.range_decoded
        ));
    }
    if p.upgraded > 0 {
        notes.push(format!("{} legacy event(s) upgraded in memory", p.upgraded));
    }
    if p.ignored > 0 {
        notes.push(format!("{} unknown ignorable event(s) skipped", p.ignored));
    }
    notes
}

// Long because it is the loader's hot loop: fast-lane runs, counted rows and decoded lines share the committed prefix, the truncation point and the batch's values line by line; a helper per lane would pass all of that state to each.
fn load_inner(
    source: &LogSource,
    opts: &LoadOptions,
    observer: &mut dyn Observer,
) -> Result<LoadedLog, LoadError> {
    // Damage before the first event is the header's; after it, the framing's.
    let (reader, header_line) =
        reader::LineReader::open(source, opts.limits).map_err(|e| e.or_rule(LoadRule::Header))?;
    let (header, warnings) = header::parse_header(&header_line, opts.lenient)
        .map_err(|e| raw_note(source, e.rule(LoadRule::Header)))?;
    let generation = header.generation;
    let container = reader.container();
    let frames = reader.frame_table();
    let span_bodies = !opts.keep_nodes && source.reread_path().is_some_and(source::is_regular);
    let lanes = lanes_for(generation, opts);
    let mut p = Pipeline {
        id: header.id.clone(),
        generation,
        span_bodies,
        keep_results_over: opts
            .keep_results_over
            .filter(|_| container == Container::Zstd),
        surface: Surface {
            reread: reread_for(source, &frames, span_bodies),
            ..Surface::default()
        },
        headers: HeaderFold::default(),
        repair: repair::RepairTracker::default(),
        event_types: BTreeMap::new(),
        upgraded: 0,
        lenient: opts.lenient,
        range_decoded: 0,
        content_generation: 0,
        ignored: 0,
        last_end_seed: None,
        inherited_cut: None,
        last_kind: None,
        last_time: 0.0,
        observer,
    };
    let mut prefix = prefix::CommittedPrefix::default();
    let mut committed_len = reader.logical_offset();
    let mut truncated_at = None;
    let skip_chunks = opts.skip_chunk_events && opts.upto.is_none();
    let packs_rows = generation.chunk_events();
    let (rx, recycle, parser) = parse::spawn(reader, lanes)?;
    let mut batch_err = None;
    let mut rx = rx;
    while let Some(next) = rx.next_batch() {
        let mut batch = match next {
            Ok(b) => b,
            Err(e) => {
                batch_err = Some(e);
                break;
            }
        };
        batch.each_line(|line| -> Result<(), LoadError> {
            let no = line.no;
            let strict = line.strict;
            let offset = line.offset;
            let len = line.len as usize;
            // Decode the storage record into events (rows expand to chunks).
            // Values parsed by the parsing thread go back into the batch, so
            // that thread frees what it allocated.
            let mut plain_line = false;
            // A valid chunk record in sequence is a run; anything else is
            // decoded into events (out of sequence or after damage, the
            // normal way decides).
            let in_order = |seq: u64, prefix: &prefix::CommittedPrefix| {
                prefix.is_clean() && truncated_at.is_none() && seq == prefix.expected
            };
            let lane = line.lane.take();
            let mut run = match &lane {
                Some(fastlane::Lane::Chunk { seq, time }) if in_order(*seq, &prefix) => {
                    Some(ChunkRun::counted(*seq, 1, (*time, *time), true))
                }
                Some(fastlane::Lane::Row(span, facts)) if in_order(span.seq0, &prefix) => {
                    Some(if skip_chunks {
                        ChunkRun::counted_row(span)
                    } else {
                        ChunkRun::row_text(span, facts, line.text, no, offset)
                    })
                }
                Some(fastlane::Lane::ChunkFacts { seq, time, facts })
                    if in_order(*seq, &prefix) =>
                {
                    Some(ChunkRun::line_text(
                        *seq, *time, facts, line.text, no, offset,
                    ))
                }
                Some(_) => {
                    if let Ok((v, c, s)) = Value::parse_event_line(line.text) {
                        line.value = Some(v);
                        line.canonical = c;
                        line.spans = s;
                    }
                    None
                }
                None => None,
            };
            let row_facts;
            if run.is_none()
                && opts.upto.is_none()
                && packs_rows
                && let Some(v) = &line.value
                && packed::is_row(v)
                && let Ok(span) = packed::check(v)
                && in_order(span.seq0, &prefix)
            {
                row_facts = (!skip_chunks).then(|| packed::RowFacts::of(v)).flatten();
                run = match &row_facts {
                    Some(f) => Some(ChunkRun::row_value(&span, f, v, no)),
                    None if skip_chunks => Some(ChunkRun::counted_row(&span)),
                    None => None,
                };
            }
            if let Some(run) = &run {
                prefix.expected += run.count;
                p.run(run);
                committed_len = offset + len as u64 + 1;
                return Ok(());
            }
            let canonical = line.canonical;
            let records: Option<Vec<Value<'_>>> = match line.value.take() {
                None => None,
                Some(v) if packs_rows && packed::is_row(&v) => {
                    let r = packed::expand(&v).ok();
                    line.value = Some(v);
                    r
                }
                Some(v) => {
                    plain_line = true;
                    Some(vec![v])
                }
            };
            if truncated_at.is_some() {
                return Ok(());
            }
            let Some(records) = records else {
                if line.too_deep {
                    return Err(error::too_deep(no));
                }
                prefix.undecodable(no, strict)?;
                return Ok(());
            };
            if !prefix.decoded(no, strict, &records)? {
                return Ok(());
            }
            // Rows expand to chunks, never to surface events, so a single record is a line.
            let single = records.len() == 1;
            for r in records {
                if let Some(limit) = opts.upto
                    && prefix.expected > limit
                {
                    truncated_at = Some(limit);
                    break;
                }
                let kind = Kind::in_generation(
                    &r.get("type").and_then(|t| t.as_str()).unwrap_or_default(),
                    generation,
                );
                let ev = Event {
                    kind,
                    seq: prefix.expected,
                    line: no,
                    value: r,
                };
                let span = single.then_some(LineFacts {
                    offset,
                    len: len as u32,
                    canonical,
                    spans: line.spans,
                    text: line.text,
                });
                let back = p
                    .process(ev, span, false)
                    .map_err(|e| raw_note(source, e))?;
                if plain_line {
                    line.value = Some(back.value);
                }
                prefix.expected += 1;
            }
            if truncated_at.is_none() {
                committed_len = offset + len as u64 + 1;
            }
            Ok(())
        })?;
        recycle.send(batch);
    }
    if let Some(e) = batch_err {
        return Err(e);
    }
    let reader = parser
        .join(rx)
        .map_err(|_| LoadError::new(LoadErrorKind::Io, "the parsing thread failed"))?;
    let expected = prefix.expected;
    let stored_events = expected.min(opts.upto.map_or(u64::MAX, |u| u + 1));
    let closers = if truncated_at.is_none() && opts.upto.is_none_or(|u| u >= expected) {
        p.repair.closers()
    } else {
        Vec::new()
    };
    for c in &closers {
        p.process(c.clone(), None, true)?;
    }
    let notes = load_notes(&p, closers.len());
    let mut log = finish_load(
        LoadStart {
            source,
            container,
            header,
            warnings,
        },
        prefix,
        reader.torn_tail(),
        FoldResult {
            surface: p.surface,
            headers: p.headers,
            event_types: p.event_types,
            closers,
            stored_events,
            upgraded: p.upgraded,
            last_end_seed: p.last_end_seed,
            last_kind: p.last_kind,
            last_time: p.last_time,
            committed_len,
            truncated_at,
            content_generation: generation.system_head().then_some(p.content_generation),
            inherited_cut: p.inherited_cut,
        },
        &Torn { generation, notes },
    );
    // Spans of an artifact are read again through its frame table.
    log.frames = frames.filter(|_| span_bodies);
    note_cut_frame(&mut log, reader.cut_frame());
    Ok(log)
}

/// A cut last frame is a named state: kept on the log and said in a
/// warning that gives the file offset of the last whole frame and the
/// remedy (after the torn line's warning, when its partial blocks left one).
pub(crate) fn note_cut_frame(log: &mut LoadedLog, cut: Option<CutFrame>) {
    let Some(c) = cut else {
        return;
    };
    log.cut_frame = Some(c);
    log.warnings.push(format!(
        "the last Zstandard frame is cut short ({} byte(s) at file byte {}, a crash or a writer mid-write): its whole lines are read, but no writer appends until the file ends at its last whole frame (file byte {}): `dsh repair` cuts it back",
        c.file_len - c.whole_end,
        c.whole_end,
        c.whole_end
    ));
}

/// What a load knows before its first event: the source, its container, the
/// header and the header's warnings.
pub(crate) struct LoadStart<'s> {
    pub(crate) source: &'s LogSource,
    pub(crate) container: Container,
    pub(crate) header: header::SessionHeader,
    pub(crate) warnings: Vec<String>,
}

/// What a generation's fold of the events leaves for the finishing step.
pub(crate) struct FoldResult {
    pub(crate) surface: Surface,
    pub(crate) headers: HeaderFold,
    pub(crate) event_types: BTreeMap<String, u64>,
    pub(crate) closers: Vec<OwnedEvent>,
    pub(crate) stored_events: u64,
    pub(crate) upgraded: u64,
    pub(crate) last_end_seed: Option<u64>,
    pub(crate) last_kind: Option<Kind>,
    pub(crate) last_time: f64,
    pub(crate) committed_len: u64,
    pub(crate) truncated_at: Option<u64>,
    pub(crate) content_generation: Option<u64>,
    pub(crate) inherited_cut: Option<u64>,
}

/// The per-generation parts of the finishing step: each generation's
/// decoder words its warnings as its reference package does.
pub(crate) trait Generation {
    /// The warning for a torn final line.
    fn torn_warning(&self, torn: &TornTail) -> String;
    /// The generation's own warnings, which follow the torn tail's.
    fn notes(&self) -> &[String];
}

/// The warnings a load ends with, worded per generation.
struct Torn {
    generation: crate::Generation,
    notes: Vec<String>,
}

impl Generation for Torn {
    fn torn_warning(&self, t: &TornTail) -> String {
        if self.generation.embedded_streams() {
            format!(
                "ignored a torn final line ({} byte(s) without a newline)",
                t.len
            )
        } else {
            format!(
                "ignored a torn final line ({} byte(s) without a newline at byte {})",
                t.len, t.offset
            )
        }
    }
    fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// The step every loader ends with: the committed prefix's verdict (a
/// dropped region) and the torn tail become warnings, in the reference's
/// order (dropped, torn, then the generation's notes), and everything
/// becomes the [`LoadedLog`].
pub(crate) fn finish_load(
    start: LoadStart<'_>,
    prefix: prefix::CommittedPrefix,
    torn: Option<TornTail>,
    fold: FoldResult,
    generation: &dyn Generation,
) -> LoadedLog {
    let mut warnings = start.warnings;
    let dropped = prefix.finish().map(|(region, warning)| {
        warnings.push(warning);
        region
    });
    if let Some(t) = &torn {
        warnings.push(generation.torn_warning(t));
    }
    warnings.extend(generation.notes().iter().cloned());
    LoadedLog {
        source: start.source.clone(),
        container: start.container,
        header: start.header,
        surface: fold.surface,
        stored_events: fold.stored_events,
        closers: fold.closers,
        headers: fold.headers,
        event_types: fold.event_types,
        torn,
        cut_frame: None,
        dropped,
        upgraded: fold.upgraded,
        warnings,
        last_end_seed: fold.last_end_seed,
        ends_with_end_seed: fold.last_kind == Some(Kind::SessionEndSeed),
        last_time: fold.last_time,
        committed_len: fold.committed_len,
        truncated_at: fold.truncated_at,
        content_generation: fold.content_generation,
        inherited_cut: fold.inherited_cut,
        frames: None,
    }
}
