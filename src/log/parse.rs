//! A parsing stage on its own thread: lines are cut and parsed as JSON while
//! the folding thread validates and folds the previous batch.
//!
//! A batch owns a copy of its lines' bytes; the parsed values borrow from that
//! copy. The borrow is tied to the batch by construction: values are only
//! reachable through [`Batch::lines`], and the buffers they point into are
//! heap allocations owned by the same batch that never move or change.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use crate::json::{EventSpans, Value};

use super::error::LoadError;
use super::fastlane::{self, Lane};
use super::reader::{LineReader, LineSpan};

/// Which chunk records skip the parser (see [`fastlane`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lanes {
    /// Packed rows.
    pub rows: bool,
    /// Plain `assistant/chunk` lines (only with `rows`).
    pub chunk_lines: bool,
}

/// One complete line, parsed.
pub struct ParsedLine {
    /// 1-based line number.
    pub no: u64,
    /// Logical byte offset.
    pub offset: u64,
    /// Length without the newline.
    pub len: u32,
    /// Inside a complete Zstandard frame.
    pub strict: bool,
    /// The JSON value, or `None` when the line is not JSON or took the
    /// fast lane.
    pub value: Option<Value<'static>>,
    /// A chunk record checked by the fast lane, not parsed.
    pub lane: Option<Lane>,
    /// The line's text (as parsed: lossy-decoded if it was not UTF-8).
    pub text: &'static [u8],
    /// The line is exactly what `JSON.stringify` writes for its value.
    pub canonical: bool,
    /// Where its `data` and `data.message` sit in the line.
    pub spans: EventSpans,
}

/// A run of parsed lines and the bytes their values borrow.
pub struct Batch {
    // Declared first so the values are dropped before the buffers.
    lines: Vec<ParsedLine>,
    _text: Vec<u8>,
    _lossy: Vec<Box<str>>,
    /// Parsed by the reading thread, so freed there.
    recycle: bool,
}

impl Batch {
    /// The lines, in file order.
    pub fn lines(&mut self) -> &mut Vec<ParsedLine> {
        &mut self.lines
    }
}

/// Lines cut from the log but not parsed yet.
pub struct RawBatch {
    text: Vec<u8>,
    spans: Vec<LineSpan>,
}

impl RawBatch {
    /// Parse every line (on whichever thread calls this); the chunk records
    /// `lanes` names go through the fast lane instead.
    pub fn parse(self, recycle: bool, lanes: Lanes) -> Batch {
        let RawBatch { text, spans } = self;
        let mut lossy: Vec<Box<str>> = Vec::new();
        let mut lines = Vec::with_capacity(spans.len());
        // SAFETY: `text` is moved into the batch below without being touched
        // again; moving a Vec does not move its heap buffer, so the slice
        // stays valid for as long as the batch (which owns both) lives.
        let base: &'static [u8] = unsafe { std::slice::from_raw_parts(text.as_ptr(), text.len()) };
        for LineSpan {
            no,
            offset,
            start,
            len,
            strict,
        } in spans
        {
            let bytes = &base[start..start + len];
            // Node reads text as UTF-8 with replacement characters; valid
            // lines (nearly all) are used as they are.
            let src: &'static [u8] = match simdutf8::basic::from_utf8(bytes) {
                Ok(_) => bytes,
                Err(_) => {
                    let s: Box<str> = String::from_utf8_lossy(bytes).into_owned().into_boxed_str();
                    // SAFETY: as above, the boxed str's heap buffer is owned by
                    // the batch and never moves.
                    let r: &'static [u8] =
                        unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) };
                    lossy.push(s);
                    r
                }
            };
            if lanes.rows
                && let Some(lane) = fastlane::classify(src, lanes.chunk_lines)
            {
                lines.push(ParsedLine {
                    no,
                    offset,
                    len: len as u32,
                    strict,
                    value: None,
                    lane: Some(lane),
                    text: src,
                    canonical: false,
                    spans: EventSpans::default(),
                });
                continue;
            }
            let (value, canonical, member_spans) = match Value::parse_event_line(src) {
                Ok((v, c, s)) => (Some(v), c && src.len() == bytes.len(), s),
                Err(_) => (None, false, EventSpans::default()),
            };
            lines.push(ParsedLine {
                no,
                offset,
                len: len as u32,
                strict,
                value,
                lane: None,
                text: src,
                canonical,
                spans: member_spans,
            });
        }
        Batch {
            lines,
            _text: text,
            _lossy: lossy,
            recycle,
        }
    }
}

/// Messages from the reading thread.
pub enum Msg {
    /// More lines, parsed by the reading thread.
    Lines(Batch),
    /// More lines for the receiver to parse: sent when it had nothing queued,
    /// so that both threads parse while the log is read.
    Raw(RawBatch),
    /// Reading failed (I/O, damaged Zstandard frame); nothing follows.
    Error(LoadError),
}

impl Incoming {
    /// The next batch, parsed (here, if it came raw), or the reading error.
    pub fn next_batch(&mut self) -> Option<Result<Batch, LoadError>> {
        Some(match self.next()? {
            Msg::Lines(b) => Ok(b),
            Msg::Raw(r) => {
                self.parsing.store(true, Ordering::SeqCst);
                let b = r.parse(false, self.lanes);
                self.parsing.store(false, Ordering::SeqCst);
                Ok(b)
            }
            Msg::Error(e) => Err(e),
        })
    }
}

const BATCH_BYTES: usize = 32 << 10;

/// Hands finished batches back to the parsing thread, which frees them: the
/// memory goes back to the allocator arena it came from without contention.
pub struct Recycler(Sender<Batch>);

impl Recycler {
    /// Give a batch back (dropped here if the parsing thread is gone, or if
    /// this thread parsed it).
    pub fn send(&self, batch: Batch) {
        if batch.recycle {
            let _ = self.0.send(batch);
        }
    }
}

/// The receiving end: counts what is queued so the reader knows when the
/// folder is idle.
pub struct Incoming {
    rx: Receiver<Msg>,
    queued: Arc<AtomicUsize>,
    /// The receiver is parsing a raw batch right now.
    parsing: Arc<AtomicBool>,
    /// Which chunk records take the fast lane.
    lanes: Lanes,
}

impl Iterator for Incoming {
    type Item = Msg;
    fn next(&mut self) -> Option<Msg> {
        let m = self.rx.recv().ok()?;
        self.queued.fetch_sub(1, Ordering::SeqCst);
        Some(m)
    }
}

/// Start reading `reader` on a new thread. The handle returns the reader at
/// the end (for its torn-tail report).
pub fn spawn(
    mut reader: LineReader,
    lanes: Lanes,
) -> Result<(Incoming, Recycler, JoinHandle<LineReader>), LoadError> {
    // Room for a few batches: the reader must not stall while the folder
    // parses a batch of its own.
    let (tx, rx) = sync_channel::<Msg>(8);
    let (rtx, rrx) = channel::<Batch>();
    let queued = Arc::new(AtomicUsize::new(0));
    let parsing = Arc::new(AtomicBool::new(false));
    let (q, p) = (queued.clone(), parsing.clone());
    let handle = std::thread::Builder::new()
        .name("dsh-parse".into())
        .spawn(move || {
            run(&mut reader, &tx, &rrx, &q, &p, lanes);
            reader
        })
        .map_err(|e| {
            LoadError::new(
                super::error::LoadErrorKind::Io,
                format!("cannot start the parsing thread: {e}"),
            )
        })?;
    Ok((
        Incoming {
            rx,
            queued,
            parsing,
            lanes,
        },
        Recycler(rtx),
        handle,
    ))
}

fn run(
    reader: &mut LineReader,
    tx: &SyncSender<Msg>,
    recycled: &Receiver<Batch>,
    queued: &AtomicUsize,
    parsing: &AtomicBool,
    lanes: Lanes,
) {
    loop {
        while let Ok(old) = recycled.try_recv() {
            drop(old);
        }
        let mut text: Vec<u8> = Vec::with_capacity(BATCH_BYTES + 4096);
        let mut spans: Vec<LineSpan> = Vec::with_capacity(64);
        let done = match reader.next_lines(&mut text, &mut spans, BATCH_BYTES) {
            Ok(more) => !more,
            Err(e) => {
                queued.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(Msg::Error(e.or_rule(super::error::LoadRule::Unparsable)));
                return;
            }
        };
        let raw = RawBatch { text, spans };
        // When the folder has at most two batches waiting and is not
        // parsing, it would soon wait for this one: let it parse this batch
        // itself while this thread reads the next. The busier the folder,
        // the more this thread parses.
        let keeping_up = queued.load(Ordering::SeqCst) <= 2 && !parsing.load(Ordering::SeqCst);
        let msg = if keeping_up && !done {
            Msg::Raw(raw)
        } else {
            Msg::Lines(raw.parse(true, lanes))
        };
        queued.fetch_add(1, Ordering::SeqCst);
        if tx.send(msg).is_err() {
            return; // the folder stopped early (a refusal)
        }
        if done {
            return;
        }
    }
}
