//! A reading thread and the folding thread share the parsing: the reader
//! cuts lines into batches and queues them raw; either thread parses a raw
//! batch (the reader the newest, the folder the one it needs next), and the
//! folder validates and folds the batches in file order (see [`Incoming`]).
//!
//! A batch owns its lines' bytes (a copy, or its stretch of the mapped file);
//! the parsed values borrow from them. The borrow is tied to the batch by
//! its types, not by a rule callers keep: the lines are private to the batch
//! and reachable only inside [`Batch::each_line`], whose closure must accept
//! a line of *any* lifetime (`for<'b>`). A line's text and value therefore
//! cannot leave that call (nothing outside it can hold a `'b` value) and
//! nothing that lives shorter than the batch can be put into a line (the
//! closure cannot name a lifetime the batch's bytes outlive but the data
//! does not). The bytes themselves are owned by the same batch and never
//! move or change (a heap buffer, or a map kept alive by the batch's share
//! of it), so the one `unsafe` step, in [`RawBatch::parse`], is local.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::json::{EventSpans, Value};

use super::error::LoadError;
use super::fastlane::{self, Lane};
use super::reader::{BatchText, LineReader, LineSpan};

/// Which chunk records skip the parser (see [`fastlane`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Lanes {
    /// Packed rows.
    pub rows: bool,
    /// What becomes of plain `assistant/chunk` lines (only with `rows`).
    pub chunk_lines: fastlane::ChunkLines,
    /// G2+: embedded `data.stream`s are checked from their bytes and left
    /// out of the values ([`fastlane::skip_stream`]).
    pub skip_streams: bool,
}

/// One complete line, parsed; `'b` is the batch it belongs to (see
/// [`Batch::each_line`]).
pub(crate) struct ParsedLine<'b> {
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
    pub value: Option<Value<'b>>,
    /// A chunk record checked by the fast lane, not parsed.
    pub lane: Option<Lane>,
    /// The line's text (as parsed: lossy-decoded if it was not UTF-8).
    pub text: &'b str,
    /// The line is exactly what `JSON.stringify` writes for its value, and
    /// its text is the file's bytes (it was not lossy-decoded).
    pub canonical: bool,
    /// Where its `data` and `data.message` sit in the line.
    pub spans: EventSpans,
    /// The line is JSON nested deeper than the reference can load
    /// ([`crate::json::TOO_DEEP`]): refused, never a torn tail.
    pub too_deep: bool,
}

/// A run of parsed lines and the bytes their values borrow.
pub(crate) struct Batch {
    // Declared first so the values are dropped before the buffers. `'static`
    // stands for "as long as this batch": private, and handed out only under
    // a lifetime the caller cannot choose (`each_line`).
    lines: Vec<ParsedLine<'static>>,
    _text: BatchText,
    _lossy: Vec<Box<str>>,
    /// Parsed by the reading thread, so freed there.
    recycle: bool,
}

impl Batch {
    /// Call `f` on each line in file order, until it fails. `f` works for a
    /// line of any lifetime `'b`, so it can keep nothing of a line past its
    /// call, and put into a line only what it made from that line (or owns
    /// outright): the lines' borrows of the batch's bytes cannot escape it.
    pub(crate) fn each_line<E>(
        &mut self,
        f: impl for<'b> FnMut(&mut ParsedLine<'b>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.lines.iter_mut().try_for_each(f)
    }
}

/// Lines cut from the log but not parsed yet.
struct RawBatch {
    text: BatchText,
    spans: Vec<LineSpan>,
}

impl RawBatch {
    /// Parse every line (on whichever thread calls this); the chunk records
    /// `lanes` names go through the fast lane instead.
    fn parse(self, recycle: bool, lanes: Lanes) -> Batch {
        let RawBatch { text, spans } = self;
        let mut lossy: Vec<Box<str>> = Vec::new();
        let mut lines: Vec<ParsedLine<'static>> = Vec::with_capacity(spans.len());
        // SAFETY: `text` is moved into the batch below without being touched
        // again; its bytes never move (`BatchText::bytes`), so the slice
        // stays valid for as long as the batch (which owns both) lives. The
        // `'static` never reaches a caller: the lines go into the batch's
        // private field, read only through `Batch::each_line`.
        let base: &'static [u8] = unsafe {
            let b = text.bytes();
            std::slice::from_raw_parts(b.as_ptr(), b.len())
        };
        // One UTF-8 check of the whole batch (nearly always valid) instead
        // of one per line: a line of a valid batch is valid when it starts
        // and ends on character boundaries, which `str::get` checks.
        let whole: Option<&'static str> = simdutf8::basic::from_utf8(base).ok();
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
            let checked = match whole.and_then(|w| w.get(start..start + len)) {
                Some(s) => Ok(s),
                None => simdutf8::basic::from_utf8(bytes),
            };
            let decoded_lossily = checked.is_err();
            let src: &'static str = match checked {
                Ok(s) => s,
                Err(_) => {
                    let s: Box<str> = String::from_utf8_lossy(bytes).into_owned().into_boxed_str();
                    // SAFETY: as above, the boxed str's heap buffer is owned by
                    // the batch and never moves; it came from a `str`, so it is
                    // UTF-8.
                    let r: &'static str = unsafe {
                        std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                            s.as_ptr(),
                            s.len(),
                        ))
                    };
                    lossy.push(s);
                    r
                }
            };
            if lanes.rows
                && let Some(lane) = fastlane::classify(src.as_bytes(), lanes.chunk_lines)
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
                    too_deep: false,
                });
                continue;
            }
            let mut too_deep = false;
            let parsed = if lanes.skip_streams {
                Value::parse_event_line_skipping_stream(src, fastlane::skip_stream)
            } else {
                Value::parse_event_line(src)
            };
            let (value, canonical, member_spans) = match parsed {
                // A lossy-decoded line is never the file's bytes, even where
                // the replacements kept its length.
                Ok((v, c, s)) => (Some(v), c && !decoded_lossily, s),
                Err(e) => {
                    too_deep = e.what == crate::json::TOO_DEEP;
                    (None, false, EventSpans::default())
                }
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
                too_deep,
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

/// The batches between the reading thread and the folder, in file order.
///
/// Both threads parse: the reading thread reads ahead and parses the newest
/// raw batch whenever enough are waiting; the folder takes the oldest batch,
/// parsing it itself if nobody has yet. So neither waits while the other has
/// work it could share: the folder waits only for a batch not read yet or
/// being parsed by the reading thread, and the reading thread only when the
/// queue is full of parsed batches.
struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

struct QueueState {
    /// Slots from the folder's next batch on.
    slots: VecDeque<Slot>,
    /// Sequence number of `slots[0]`.
    base: u64,
    /// The reading thread added its last slot.
    done: bool,
    /// Reading failed after the last slot.
    error: Option<LoadError>,
    /// The folder stopped early (a refusal): stop reading.
    stop: bool,
    /// Threads waiting for a change (see [`Queue::publish`]).
    sleepers: usize,
}

impl Queue {
    /// Wait for a change; the lock is released meanwhile.
    fn wait<'q>(&'q self, mut st: MutexGuard<'q, QueueState>) -> MutexGuard<'q, QueueState> {
        st.sleepers += 1;
        let mut st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        st.sleepers -= 1;
        st
    }

    /// Release the lock after a change, waking whoever waits for one. A
    /// wake-up is a system call, so it is made only when a thread sleeps
    /// (one changes the queue a few times a batch: thousands of calls a
    /// log). No wake-up is lost: a thread counts itself a sleeper under the
    /// lock, and looks at the queue under it before it sleeps.
    fn publish(&self, st: MutexGuard<'_, QueueState>) {
        let wake = st.sleepers > 0;
        drop(st);
        if wake {
            self.changed.notify_all();
        }
    }
}

enum Slot {
    Raw(RawBatch),
    /// Being parsed by the reading thread.
    Parsing,
    Parsed(Batch),
}

/// How far the reading thread reads ahead before it parses any: `slots`
/// batches of at least `bytes` each.
#[derive(Clone, Copy)]
struct Ahead {
    slots: usize,
    bytes: usize,
}

impl Ahead {
    /// A plain log's batches are slices of the file: a short queue keeps
    /// what the threads hand over in cache.
    const PLAIN: Ahead = Ahead {
        slots: 4,
        bytes: 32 << 10,
    };
    /// An artifact's reader decodes whole frames between batches: a longer
    /// queue lets the folder go on meanwhile instead of waiting for the
    /// batch it needs next (`surface` of a 100 MB artifact 148 → 135 ms
    /// median in alternating runs; `verify` of the plain log was no faster
    /// with it, 119 → 124 ms).
    const ZSTD: Ahead = Ahead {
        slots: 8,
        bytes: 64 << 10,
    };

    fn of(reader: &LineReader) -> Ahead {
        match reader.container() {
            super::reader::Container::Zstd => Ahead::ZSTD,
            _ => Ahead::PLAIN,
        }
    }
}

/// Slots at most in the queue: the reading thread then only parses, or waits.
const MAX_SLOTS: usize = 24;

/// The folder's end of the queue.
pub(crate) struct Incoming {
    queue: Arc<Queue>,
    lanes: Lanes,
    /// The reader, when the folding thread reads the rest of the log itself
    /// as it goes ([`Reading::Pulled`]).
    pull: Option<Box<LineReader>>,
    /// Counts this load among those past the inline size while it runs.
    _running: Option<LoadsRunning>,
}

impl Incoming {
    /// The next batch in file order, parsed (here, if nobody had), or the
    /// reading error; `None` at the end.
    pub(crate) fn next_batch(&mut self) -> Option<Result<Batch, LoadError>> {
        let mut st = lock(&self.queue.state);
        loop {
            match st.slots.front() {
                Some(Slot::Parsed(_)) | Some(Slot::Raw(_)) => {
                    let slot = st.slots.pop_front();
                    st.base += 1;
                    self.queue.publish(st);
                    return match slot {
                        Some(Slot::Parsed(b)) => Some(Ok(b)),
                        Some(Slot::Raw(r)) => Some(Ok(r.parse(false, self.lanes))),
                        _ => None,
                    };
                }
                Some(Slot::Parsing) => {}
                None if st.done => return st.error.take().map(Err),
                None => {
                    if let Some(reader) = self.pull.as_deref_mut() {
                        // Nobody else reads: read the next batch here.
                        read_batch(reader, &mut st);
                        continue;
                    }
                }
            }
            st = self.queue.wait(st);
        }
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        let mut st = lock(&self.queue.state);
        st.stop = true;
        self.queue.publish(st);
    }
}

fn lock(m: &Mutex<QueueState>) -> std::sync::MutexGuard<'_, QueueState> {
    // A panic elsewhere is reported by the panic hook; the state itself
    // stays consistent (every change is a single step under the lock).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hands finished batches back to the parsing thread, which frees them: the
/// memory goes back to the allocator arena it came from without contention.
pub(crate) struct Recycler(Sender<Batch>);

impl Recycler {
    /// Give a batch back (dropped here if the parsing thread is gone, or if
    /// this thread parsed it).
    pub(crate) fn send(&self, batch: Batch) {
        if batch.recycle {
            let _ = self.0.send(batch);
        }
    }
}

/// A log whose lines (and their spans) fit in this many bytes is read
/// before the fold starts,
/// on the folding thread, and parsed there: starting a thread (and mapping
/// its stack) costs more than such a log's parsing, which matters when a
/// home of thousands of small sessions is read.
const INLINE_BYTES: usize = 256 << 10;

/// The reader's end: a thread still reading, the reader that read
/// everything before the fold started, or the folding thread reading as it
/// goes.
pub(crate) enum Reading {
    /// The reading thread.
    Thread(JoinHandle<LineReader>),
    /// Everything was read on the folding thread.
    Inline(Box<LineReader>),
    /// The folding thread reads as it goes (the reader is in [`Incoming`]).
    Pulled,
}

impl Reading {
    /// The reader, once it has read everything (for its torn-tail report);
    /// `Err` when the reading thread panicked.
    pub(crate) fn join(self, incoming: Incoming) -> Result<LineReader, ()> {
        match self {
            Reading::Thread(h) => h.join().map_err(|_| ()),
            Reading::Inline(r) => Ok(*r),
            Reading::Pulled => {
                let mut incoming = incoming;
                incoming.pull.take().map(|r| *r).ok_or(())
            }
        }
    }
}

/// Start reading `reader`: the first lines here, and the rest, if the log is
/// larger than [`INLINE_BYTES`], on a new thread, or, while other loads keep
/// every core busy, here too, batch by batch as the fold asks for them.
pub(crate) fn spawn(
    mut reader: LineReader,
    lanes: Lanes,
) -> Result<(Incoming, Recycler, Reading), LoadError> {
    let (rtx, rrx) = channel::<Batch>();
    let queue = Arc::new(Queue {
        state: Mutex::new(QueueState {
            slots: VecDeque::new(),
            base: 0,
            done: false,
            error: None,
            stop: false,
            sleepers: 0,
        }),
        changed: Condvar::new(),
    });
    let mut read = 0usize;
    while read < INLINE_BYTES {
        let mut st = lock(&queue.state);
        read += read_batch(&mut reader, &mut st);
        if st.done {
            drop(st);
            let incoming = Incoming {
                queue,
                lanes,
                pull: None,
                _running: None,
            };
            return Ok((incoming, Recycler(rtx), Reading::Inline(Box::new(reader))));
        }
    }
    let running = LoadsRunning::enter();
    if LoadsRunning::cores_busy() {
        // Other loads keep every core busy (a home read side by side): a
        // thread of its own would only contend with them, and starting one
        // (its stack, its allocator pages) costs more than it saves.
        let incoming = Incoming {
            queue,
            lanes,
            pull: Some(Box::new(reader)),
            _running: Some(running),
        };
        return Ok((incoming, Recycler(rtx), Reading::Pulled));
    }
    let q = queue.clone();
    let handle = std::thread::Builder::new()
        .name("dsh-parse".into())
        .stack_size(crate::json::THREAD_STACK)
        .spawn(move || {
            run(&mut reader, &q, &rrx, lanes);
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
            queue,
            lanes,
            pull: None,
            _running: Some(running),
        },
        Recycler(rtx),
        Reading::Thread(handle),
    ))
}

/// Read the next batch of lines into the queue, or mark the queue done
/// (with the reading error, if any); gives the bytes it holds (blank lines
/// cost a span each and no text: both count).
fn read_batch(reader: &mut LineReader, st: &mut QueueState) -> usize {
    let mut spans: Vec<LineSpan> = Vec::with_capacity(64);
    let step = reader.next_lines(&mut spans, Ahead::of(reader).bytes);
    let mut held = spans.len() * std::mem::size_of::<LineSpan>() + 1;
    match step {
        Ok((text, more)) => {
            held += text.bytes().len();
            if !spans.is_empty() {
                st.slots.push_back(Slot::Raw(RawBatch { text, spans }));
            }
            st.done = !more;
        }
        // As the reading thread does: lines read before an error are dropped.
        Err(e) => {
            st.done = true;
            st.error = Some(e.or_rule(super::error::LoadRule::Unparsable));
        }
    }
    held
}

/// Loads past the inline size running in this process, counted so that a
/// load can tell whether a core is left for a reading thread of its own.
struct LoadsRunning;

static LOADS_RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl LoadsRunning {
    fn enter() -> LoadsRunning {
        LOADS_RUNNING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        LoadsRunning
    }

    /// At least as many such loads as cores (this one included).
    fn cores_busy() -> bool {
        LOADS_RUNNING.load(std::sync::atomic::Ordering::SeqCst) >= crate::par::cores().max(2)
    }
}

impl Drop for LoadsRunning {
    fn drop(&mut self) {
        LOADS_RUNNING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What the reading thread did with its turn at the queue.
enum Turn {
    Parsed,
    Nothing,
    Stop,
}

/// Parse the newest raw slot when at least `min_raw` are waiting. The front
/// slot is left to the folder, which needs it first and parses it itself.
fn parse_newest(queue: &Queue, lanes: Lanes, min_raw: usize) -> Turn {
    let mut st = lock(&queue.state);
    if st.stop {
        return Turn::Stop;
    }
    let raws = st
        .slots
        .iter()
        .filter(|s| matches!(s, Slot::Raw(_)))
        .count();
    let newest = st.slots.iter().rposition(|s| matches!(s, Slot::Raw(_)));
    let Some(k) = newest.filter(|&k| k > 0 && raws >= min_raw) else {
        return Turn::Nothing;
    };
    let at = st.base + k as u64;
    let Slot::Raw(raw) = std::mem::replace(&mut st.slots[k], Slot::Parsing) else {
        return Turn::Nothing;
    };
    drop(st);
    let batch = raw.parse(true, lanes);
    let mut st = lock(&queue.state);
    // The folder never takes a slot being parsed: it is still there.
    let k = (at - st.base) as usize;
    st.slots[k] = Slot::Parsed(batch);
    queue.publish(st);
    Turn::Parsed
}

fn run(reader: &mut LineReader, queue: &Queue, recycled: &Receiver<Batch>, lanes: Lanes) {
    let ahead = Ahead::of(reader);
    let finish = |error: Option<LoadError>| {
        let mut st = lock(&queue.state);
        st.done = true;
        st.error = error;
        queue.publish(st);
    };
    loop {
        while let Ok(old) = recycled.try_recv() {
            drop(old);
        }
        // Parse while enough is read ahead; read when there is room;
        // otherwise wait for the folder.
        loop {
            let full = lock(&queue.state).slots.len() >= MAX_SLOTS;
            match parse_newest(queue, lanes, if full { 1 } else { ahead.slots }) {
                Turn::Stop => return,
                Turn::Parsed => continue,
                Turn::Nothing if !full => break,
                Turn::Nothing => {
                    let st = lock(&queue.state);
                    if st.slots.len() >= MAX_SLOTS && !st.stop {
                        let _st = queue.wait(st);
                    }
                }
            }
        }
        let mut spans: Vec<LineSpan> = Vec::with_capacity(64);
        let (text, more) = match reader.next_lines(&mut spans, ahead.bytes) {
            Ok(step) => step,
            Err(e) => return finish(Some(e.or_rule(super::error::LoadRule::Unparsable))),
        };
        if !spans.is_empty() {
            let mut st = lock(&queue.state);
            st.slots.push_back(Slot::Raw(RawBatch { text, spans }));
            queue.publish(st);
        }
        if !more {
            // Help with what is left while the folder works through it.
            loop {
                match parse_newest(queue, lanes, 1) {
                    Turn::Parsed => continue,
                    Turn::Stop => return,
                    Turn::Nothing => break,
                }
            }
            return finish(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Limits, LoadOptions, LogSource, load};

    /// A valid log of `turns` closed turns, each a user message of `text`.
    fn turns_log(dir: &std::path::Path, turns: usize, text: &str) -> std::path::PathBuf {
        let mut s = String::from(
            r#"{"type":"session","version":0,"id":"s-pull","createdAt":0,"cwd":"/tmp","delegationDepth":0}"#,
        );
        s.push('\n');
        let mut seq = 0;
        for t in 1..=turns {
            for data in [
                format!(r#""type":"turn/start","data":{{"turn":{t}}}"#),
                format!(r#""type":"step/start","data":{{"turn":{t},"step":1}}"#),
                format!(
                    r#""type":"user/message","data":{{"role":"user","content":[{{"type":"text","text":"{text} {t}"}}],"source":{{"kind":"user"}},"id":"u{t}"}},"surfaceOp":"append""#
                ),
                format!(r#""type":"step/end","data":{{"turn":{t},"step":1}}"#),
                format!(
                    r#""type":"turn/end","data":{{"turn":{t},"reason":{{"kind":"completed"}}}}"#
                ),
            ] {
                s.push_str(&format!(r#"{{{data},"seq":{seq},"time":{}}}"#, 1000 + seq));
                s.push('\n');
                seq += 1;
            }
        }
        let p = dir.join("s.jsonl");
        std::fs::write(&p, s).unwrap();
        p
    }

    #[test]
    fn each_line_of_a_batch_is_decoded_on_its_own() {
        // Lines side by side in a batch's text, with and without a newline
        // between them: the halves of a character split across two lines
        // make a valid batch of two invalid lines, each read with a
        // replacement character, as the lines of the log are.
        let split = "中".as_bytes();
        for gap in [&b""[..], b"\n"] {
            let mut text = b"\"a".to_vec();
            text.extend_from_slice(&split[..2]);
            text.extend_from_slice(gap);
            let second = text.len();
            text.extend_from_slice(&split[2..]);
            text.extend_from_slice(b"b\"");
            text.extend_from_slice(gap);
            let third = text.len();
            text.extend_from_slice("\"é\"".as_bytes());
            let span = |start: usize, len: usize, no: u64| LineSpan {
                no,
                offset: start as u64,
                start,
                len,
                strict: false,
            };
            let spans = vec![
                span(0, second - gap.len(), 1),
                span(second, third - second - gap.len(), 2),
                span(third, text.len() - third, 3),
            ];
            let raw = RawBatch {
                text: BatchText::Read(text),
                spans,
            };
            let mut batch = raw.parse(false, Lanes::default());
            let mut seen: Vec<(String, bool)> = Vec::new();
            batch
                .each_line(|l| {
                    seen.push((l.text.to_string(), l.value.is_some()));
                    Ok::<(), ()>(())
                })
                .unwrap();
            let texts: Vec<&str> = seen.iter().map(|l| l.0.as_str()).collect();
            assert_eq!(
                texts,
                ["\"a\u{FFFD}", "\u{FFFD}b\"", "\"é\""],
                "gap {gap:?}"
            );
            // The valid line beside them is read as it is.
            assert!(seen[2].1);
        }
    }

    #[test]
    fn a_log_read_through_its_map_loads_with_its_torn_tail() {
        // Past the size from which plain files are mapped, with a torn tail
        // (the reader's own tests compare maps and reads line by line).
        let dir = tempfile::tempdir().unwrap();
        let text = "word ".repeat(400);
        let log = turns_log(dir.path(), 500, &text);
        let len = std::fs::metadata(&log).unwrap().len();
        assert!(len >= 1 << 20, "{len}");
        let mut bytes = std::fs::read(&log).unwrap();
        bytes.extend_from_slice(br#"{"type":"turn/start","se"#);
        std::fs::write(&log, &bytes).unwrap();
        let src = LogSource::File(log.clone());
        let opts = LoadOptions::default();
        let nothing = &mut |_: &crate::event::Event<'_>, _: &crate::log::Folded<'_>| {};
        let mapped = load(&src, &opts, nothing).unwrap();
        assert_eq!(mapped.event_count(), 2500);
        let torn = mapped.torn.unwrap();
        assert_eq!((torn.offset, torn.len), (len, 24));
        assert_eq!(mapped.surface.nodes.len(), 500);
        assert!(
            mapped
                .warnings
                .iter()
                .any(|w| w.contains("torn final line"))
        );
    }

    #[test]
    fn a_load_with_every_core_busy_reads_as_it_folds_to_the_same_result() {
        let dir = tempfile::tempdir().unwrap();
        let log = turns_log(dir.path(), 300, &"word ".repeat(400));
        assert!(std::fs::metadata(&log).unwrap().len() > 2 * INLINE_BYTES as u64);
        let src = LogSource::File(log);
        let opts = LoadOptions::default();
        let read = |src: &LogSource| {
            let l = load(
                src,
                &opts,
                &mut |_: &crate::event::Event<'_>, _: &crate::log::Folded<'_>| {},
            )
            .unwrap();
            let n = l.event_count();
            let s = l.surface;
            ((s.seqs(), s.replace_generation, s.replacements), n)
        };
        let reading = |src: &LogSource| {
            let (reader, _) = LineReader::open(src, Limits::default()).unwrap();
            let (_, _, reading) = spawn(reader, Lanes::default()).unwrap();
            reading
        };
        // (Other tests' loads may be running: whether this one gets a
        // thread of its own is theirs to decide, the result is not.)
        let alone = read(&src);
        assert_eq!(alone.1, 1500);
        // Every core busy with other loads: this one reads as it folds, with
        // the same result.
        let others: Vec<LoadsRunning> = (0..crate::par::cores().max(2))
            .map(|_| LoadsRunning::enter())
            .collect();
        assert!(matches!(reading(&src), Reading::Pulled));
        assert_eq!(read(&src), alone);
        drop(others);
    }
}
