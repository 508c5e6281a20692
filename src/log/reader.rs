//! Physical layer: bytes to lines, for plain JSONL and multi-frame Zstandard
//! artifacts (session-log §3.2–§3.3).
//!
//! Plain files are streamed through a growing buffer, or from [`MAP_FROM`]
//! bytes on read through a map of the file; a Zstandard artifact is
//! walked frame by frame, each complete frame decompressed (checksum
//! verified) only when its lines are needed. The container is chosen by the
//! magic bytes, never by the file name.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use super::error::{LoadError, LoadErrorKind};
use super::source::{LogSource, ZSTD_MAGIC};

/// Which container the log uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    /// One JSON text per `\n`-terminated line.
    #[serde(rename = "jsonl")]
    Plain,
    /// Concatenated Zstandard frames; frame 1 holds the header line.
    Zstd,
}

/// One complete (`\n`-terminated) line.
#[derive(Debug)]
pub(crate) struct RawLine<'b> {
    /// 1-based line number; the header is line 1.
    pub no: u64,
    /// Byte offset of the line in the logical (decompressed) text.
    pub offset: u64,
    /// The line without its `\n`.
    pub bytes: &'b [u8],
    /// The line sits inside a complete Zstandard frame, where any defect is
    /// fatal rather than a torn tail.
    pub strict: bool,
}

/// Where one line of a batch sits (see [`LineReader::next_lines`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineSpan {
    /// 1-based line number; the header is line 1.
    pub no: u64,
    /// Byte offset of the line in the logical (decompressed) text.
    pub offset: u64,
    /// Where the line starts in the batch text.
    pub start: usize,
    /// Its length, without the newline.
    pub len: usize,
    /// Inside a complete Zstandard frame.
    pub strict: bool,
}

/// A Zstandard artifact whose last frame was cut short (a crash or a
/// writer mid-write): the file ends inside a frame. Readers keep the
/// complete lines of its decodable blocks; the remedy is to cut the file
/// back to the end of its last whole frame (`dsh repair`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutFrame {
    /// File offset where the last whole frame ends (the cut frame starts).
    pub whole_end: u64,
    /// The file's length (the cut frame is `whole_end..file_len`).
    pub file_len: u64,
}

/// Bytes after the last complete line, ignored as a torn write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct TornTail {
    /// Logical offset where the fragment starts.
    pub offset: u64,
    /// Its length in bytes.
    #[serde(rename = "bytes")]
    pub len: u64,
}

/// Reads lines from a log, one at a time.
pub(crate) struct LineReader {
    container: Container,
    inner: Inner,
    next_no: u64,
    /// Logical offset of the next line.
    offset: u64,
    torn: Option<TornTail>,
    limits: Limits,
}

enum Inner {
    Plain {
        src: Box<dyn Read + Send>,
        buf: Vec<u8>,
        start: usize,
        end: usize,
        eof: bool,
    },
    Zstd(Box<ZstdState>),
    /// A large plain file after its header, read through a map of it
    /// ([`MAP_FROM`]): batches are stretches of the map, not copies.
    Mapped {
        map: Arc<memmap2::Mmap>,
        pos: usize,
    },
}

/// Plain files of at least this size are read through a map after their
/// header line: a batch is then a stretch of the map (no `read` copy; that
/// copy was a tenth of a plain `verify`'s CPU). Smaller ones (most of a
/// home) are read: a map costs more to set up and tear down than they take
/// to copy.
const MAP_FROM: u64 = 1 << 20;

/// Behind the reads, a map's pages are let go (`MADV_DONTNEED`) a block of
/// this many bytes at a time, so that resident memory follows the batches
/// in flight rather than the file's size.
const RELEASE_BLOCK: usize = 1 << 20;

/// The bytes a batch's lines sit in: read into a buffer of the batch's own,
/// or a stretch of the mapped file.
pub(crate) enum BatchText {
    /// Read (or decompressed) into this buffer.
    Read(Vec<u8>),
    /// A stretch of the mapped file.
    Mapped(MappedStretch),
    /// A stretch of a Zstandard frame's plaintext, decoded whole and shared
    /// by the batches cut from it (no copy).
    Frame {
        /// The frame's plaintext.
        plain: Arc<Vec<u8>>,
        /// Where the batch starts in it.
        start: usize,
        /// Where it ends.
        end: usize,
    },
}

impl BatchText {
    /// The bytes. They never move while the value lives: a `Vec`'s heap
    /// buffer stays put when the `Vec` is moved, and so does a map.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            BatchText::Read(v) => v,
            BatchText::Mapped(m) => &m.map[m.start..m.end],
            BatchText::Frame { plain, start, end } => &plain[*start..*end],
        }
    }
}

/// `start..end` of a mapped plain log.
///
/// Sound for the same reason as the rereads' maps (`map_log_range`): a DSH
/// log is append-only, and only the file's length at open is mapped.
pub(crate) struct MappedStretch {
    map: Arc<memmap2::Mmap>,
    start: usize,
    end: usize,
}

impl Drop for MappedStretch {
    /// Let go of the whole release blocks this stretch ends past. Stretches
    /// are dropped in file order (the fold recycles its batches in order),
    /// so nothing reads those blocks any more; and if something did, a
    /// dropped page of a file map is simply read in again.
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            let from = self.start / RELEASE_BLOCK * RELEASE_BLOCK;
            let to = self.end / RELEASE_BLOCK * RELEASE_BLOCK;
            if to > from {
                // SAFETY: `MADV_DONTNEED` on a read-only file map only drops
                // pages from this process; their contents come back from the
                // file on the next access, so no reference into the map
                // changes.
                let _ = unsafe {
                    self.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        from,
                        to - from,
                    )
                };
            }
        }
    }
}

/// A Zstandard artifact read as a stream: compressed bytes are read only up
/// to the end of the frame being decoded, and a frame's plaintext is held
/// whole only up to [`FRAME_HOLD`] (so that a damaged ordinary frame is
/// refused before any of its lines is used); beyond that it is decoded in
/// chunks, so memory stays bounded whatever a frame expands to.
struct ZstdState {
    src: Box<dyn Read + Send>,
    /// Compressed bytes read; `cbuf[cstart..]` is not yet walked.
    cbuf: Vec<u8>,
    cstart: usize,
    /// Physical offset of `cbuf[0]`.
    cbase: u64,
    eof: bool,
    /// Given back to this thread's spare when the state is dropped.
    dec: std::mem::ManuallyDrop<zstd::stream::raw::Decoder<'static>>,
    /// The frame being decoded, if any.
    frame: Option<FrameDec>,
    /// Decoded plaintext; `plain[start..]` is not yet handed out. Shared
    /// with the batches cut from a frame decoded whole (see
    /// [`LineReader::frame_stretch`]); the next frame then decodes into a
    /// buffer of its own.
    plain: Arc<Vec<u8>>,
    start: usize,
    done: bool,
    /// Plaintext decoded so far (for the total limit).
    total: u64,
    /// Frames started so far (the header frame included).
    frames: u64,
    /// The last frame, when it was cut short (see [`CutFrame`]).
    cut: Option<CutFrame>,
    /// Where each frame starts, for reading lines again after the load.
    table: super::reread::FrameTable,
    /// All plaintext decoded so far, while it is small (see
    /// [`super::reread::Frames::whole`]); `None` once it grew past that.
    keep: Option<Vec<u8>>,
}

struct FrameDec {
    /// Where the frame's unread compressed bytes are in `cbuf`.
    pos: usize,
    end: usize,
    /// Physical offset of the frame (for messages).
    at: u64,
    /// The first line number of the frame (for messages).
    first_line: u64,
    /// Structurally complete (its lines are strict), or the torn last one.
    complete: bool,
    finished: bool,
    /// Lines handed out from this frame.
    lines: u64,
}

/// Plaintext of one frame held whole before its lines are used.
const FRAME_HOLD: usize = 8 << 20;
/// Plaintext decoded per step once a frame is larger than that.
const DECODE_STEP: usize = 1 << 20;

/// Default for [`Limits::max_line_bytes`]: far above any real event line,
/// low enough that a line that never ends cannot exhaust memory.
const DEFAULT_MAX_LINE_BYTES: u64 = 64 << 20;
/// Default for [`Limits::max_decompressed`]: far above any real session.
const DEFAULT_MAX_DECOMPRESSED: u64 = 64 << 30;

/// Bounds on what one log may make the reader hold or produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest line accepted, in bytes without the newline.
    pub max_line_bytes: u64,
    /// Most plaintext a Zstandard artifact may decompress to.
    pub max_decompressed: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_decompressed: DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

fn line_limit(no: u64, limit: u64) -> LoadError {
    LoadError::new(
        LoadErrorKind::Limit,
        format!(
            "line {no} exceeds the limit of {limit} bytes for one line: not a session log dsh can read safely"
        ),
    )
    .line(no)
}

fn total_limit(limit: u64) -> LoadError {
    LoadError::new(
        LoadErrorKind::Limit,
        format!(
            "the decompressed log exceeds the limit of {limit} bytes: not a session log dsh can read safely"
        ),
    )
}

/// The `len` bytes after a mapped file's last newline, at `offset` after
/// line `no - 1`: a torn tail, or refused past the line limit, as a read
/// refuses it before it sees the end of the file.
fn mapped_tail(len: usize, offset: u64, no: u64, limits: &Limits) -> Result<TornTail, LoadError> {
    if len as u64 > limits.max_line_bytes {
        return Err(line_limit(no, limits.max_line_bytes));
    }
    Ok(TornTail {
        offset,
        len: len as u64,
    })
}

fn io_err(e: io::Error, what: &str) -> LoadError {
    LoadError::io(what, e)
}

impl LineReader {
    /// Open a source and read its header line (returned as bytes), holding
    /// the reader to `limits`.
    pub(crate) fn open(
        source: &LogSource,
        limits: Limits,
    ) -> Result<(LineReader, Vec<u8>), LoadError> {
        Self::open_mapping_from(source, limits, MAP_FROM)
    }

    /// [`Self::open`], mapping plain files of at least `map_from` bytes.
    fn open_mapping_from(
        source: &LogSource,
        limits: Limits,
        map_from: u64,
    ) -> Result<(LineReader, Vec<u8>), LoadError> {
        // The file's size, where known, bounds the buffers set up first (a
        // home is mostly small logs, each of which would zero 64 KiB).
        let mut size: Option<u64> = None;
        let mut map: Option<memmap2::Mmap> = None;
        let mut src: Box<dyn Read + Send> = match source {
            LogSource::File(p) | LogSource::Spooled(p) => {
                let f = File::open(p).map_err(|e| io_err(e, "cannot open the log"))?;
                let md = f.metadata().map_err(|e| io_err(e, "cannot stat the log"))?;
                if md.is_dir() {
                    return Err(LoadError::new(
                        LoadErrorKind::Io,
                        "is a directory, not a session log",
                    ));
                }
                size = md.is_file().then_some(md.len());
                if md.is_file() && md.len() >= map_from {
                    // SAFETY: see `MappedStretch`. A file that cannot be
                    // mapped is read instead.
                    map = unsafe { memmap2::Mmap::map(&f) }.ok();
                    #[cfg(unix)]
                    if let Some(m) = &map {
                        let _ = m.advise(memmap2::Advice::Sequential);
                    }
                }
                Box::new(f)
            }
            LogSource::Stdin => Box::new(io::stdin()),
        };
        // Peek at the magic number.
        let mut head = Vec::with_capacity(64 << 10);
        let mut tmp = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            let n = src
                .read(&mut tmp[got..])
                .map_err(|e| io_err(e, "cannot read the log"))?;
            if n == 0 {
                break;
            }
            got += n;
        }
        head.extend_from_slice(&tmp[..got]);
        if got == 4 && tmp == ZSTD_MAGIC {
            let dec = spare_decoder().map_err(|e| io_err(e, "cannot start a Zstandard decoder"))?;
            let mut r = LineReader {
                container: Container::Zstd,
                inner: Inner::Zstd(Box::new(ZstdState {
                    src,
                    cbuf: head,
                    cstart: 0,
                    cbase: 0,
                    eof: false,
                    dec: std::mem::ManuallyDrop::new(dec),
                    frame: None,
                    plain: Arc::default(),
                    start: 0,
                    done: false,
                    total: 0,
                    frames: 0,
                    cut: None,
                    table: Default::default(),
                    // Room for the plaintext at a generous ratio, so that
                    // keeping it copies each byte once (room is not memory
                    // until it is written).
                    keep: Some(Vec::with_capacity(size.map_or(0, |n| {
                        (n.saturating_mul(8)).min(super::reread::KEEP_WHOLE as u64) as usize
                    }))),
                })),
                next_no: 1,
                offset: 0,
                torn: None,
                limits,
            };
            let header = r.zstd_header()?;
            return Ok((r, header));
        }
        let mut buf = head;
        // A read of the whole of a small file (and one byte more, to see its
        // end); 64 KiB at most, growing if a line is longer.
        let first = size.map_or(64 << 10, |n| (n as usize + 1).clamp(4 << 10, 64 << 10));
        buf.resize(first, 0);
        let mut r = LineReader {
            container: Container::Plain,
            inner: Inner::Plain {
                src,
                buf,
                start: 0,
                end: got,
                eof: false,
            },
            next_no: 1,
            offset: 0,
            torn: None,
            limits,
        };
        let header = match r.next_line()? {
            Some(l) => l.bytes.to_vec(),
            None => {
                return Err(LoadError::corrupt(
                    "corrupt session log: empty or header-less (no complete first line)",
                )
                .line(1));
            }
        };
        r.torn = None;
        if let Some(map) = map {
            // The rest from the map: the header's line was read (with a
            // little more after it, which the map has too).
            r.inner = Inner::Mapped {
                pos: r.offset as usize,
                map: Arc::new(map),
            };
        }
        Ok((r, header))
    }

    /// The container kind.
    pub(crate) fn container(&self) -> Container {
        self.container
    }

    /// The torn tail found after the last complete line, once reading ended.
    pub(crate) fn torn_tail(&self) -> Option<TornTail> {
        self.torn
    }

    /// Where the frames of a Zstandard artifact start (filled as they are
    /// read); `None` for a plain log.
    pub(crate) fn frame_table(&self) -> Option<super::reread::FrameTable> {
        match &self.inner {
            Inner::Zstd(z) => Some(z.table.clone()),
            Inner::Plain { .. } | Inner::Mapped { .. } => None,
        }
    }

    /// The last frame of a Zstandard artifact, when it was cut short (known
    /// once reading ended).
    pub(crate) fn cut_frame(&self) -> Option<CutFrame> {
        match &self.inner {
            Inner::Zstd(z) => z.cut,
            Inner::Plain { .. } | Inner::Mapped { .. } => None,
        }
    }

    /// Zstandard frames started so far (0 for a plain log).
    pub(crate) fn frames_read(&self) -> u64 {
        match &self.inner {
            Inner::Zstd(z) => z.frames,
            Inner::Plain { .. } | Inner::Mapped { .. } => 0,
        }
    }

    /// Logical bytes consumed so far.
    pub(crate) fn logical_offset(&self) -> u64 {
        self.offset
    }

    fn zstd_header(&mut self) -> Result<Vec<u8>, LoadError> {
        let limits = self.limits;
        let Inner::Zstd(z) = &mut self.inner else {
            unreachable!()
        };
        match z.next_frame(1)? {
            Some(true) => {
                if let (Some(f), Ok(mut t)) = (&z.frame, z.table.lock()) {
                    t.starts.push(super::reread::FrameAt {
                        physical: f.at,
                        plain: 0,
                    });
                }
            }
            Some(false) => {
                return Err(LoadError::corrupt(
                    "corrupt session log: header-less Zstandard artifact (no complete first frame)",
                ));
            }
            None => {
                return Err(LoadError::corrupt(
                    "corrupt session log: header-less Zstandard artifact (no complete first frame)",
                ));
            }
        }
        while !z.frame.as_ref().is_some_and(|f| f.finished) {
            if z.plain.len() as u64 > limits.max_line_bytes.saturating_add(1) {
                return Err(line_limit(1, limits.max_line_bytes));
            }
            z.decode(DECODE_STEP, &limits).map_err(|e| match e {
                Decode::Limit(e) => e,
                Decode::Failed(e) => LoadError::corrupt(format!(
                    "corrupt session log: first Zstandard frame does not decompress: {e}"
                )),
            })?;
        }
        let plain = std::mem::take(&mut z.plain);
        z.start = 0;
        if plain.last() != Some(&b'\n')
            || memchr::memchr(b'\n', &plain[..plain.len() - 1]).is_some()
        {
            let mut e = LoadError::corrupt(
                "corrupt session log: first Zstandard frame must hold exactly the header line",
            )
            .line(1);
            if plain.len() > 1 && memchr::memchr(b'\n', &plain[..plain.len() - 1]).is_some() {
                e = e.hint(super::error::Hint::SingleFrameZstd);
            }
            return Err(e);
        }
        if plain.len() as u64 > limits.max_line_bytes.saturating_add(1) {
            return Err(line_limit(1, limits.max_line_bytes));
        }
        z.frame = None;
        self.next_no = 2;
        self.offset = plain.len() as u64;
        Ok(plain[..plain.len() - 1].to_vec())
    }

    /// The next batch: whole lines until it holds at least `min` bytes or
    /// the log ends, each line's span (from the batch's start) recorded in
    /// `spans`; and `false` once the log has no more lines. A mapped file's
    /// batch is a stretch of the map; others are read into a buffer of the
    /// batch's own.
    pub(crate) fn next_lines(
        &mut self,
        spans: &mut Vec<LineSpan>,
        min: usize,
    ) -> Result<(BatchText, bool), LoadError> {
        if let Inner::Mapped { map, pos } = &self.inner {
            let (map, start) = (map.clone(), *pos);
            let rest = &map[start..];
            // The batch ends at the first newline from its `min`th byte on;
            // without one, the file's last lines end it, and what follows
            // them (no newline) is a torn tail.
            let (end, more) = match memchr::memchr(b'\n', rest.get(min..).unwrap_or_default()) {
                Some(i) => (min + i + 1, start + min + i + 1 < map.len()),
                None => {
                    let head = &rest[..min.min(rest.len())];
                    (memchr::memrchr(b'\n', head).map_or(0, |i| i + 1), false)
                }
            };
            self.cut_lines(&rest[..end], 0, spans)?;
            let mut next = start + end;
            if !more && end < rest.len() {
                let len = rest.len() - end;
                self.torn = Some(mapped_tail(len, self.offset, self.next_no, &self.limits)?);
                next = map.len();
            }
            if let Inner::Mapped { pos, .. } = &mut self.inner {
                *pos = next;
            }
            let text = BatchText::Mapped(MappedStretch {
                map,
                start,
                end: start + end,
            });
            return Ok((text, more));
        }
        if matches!(self.inner, Inner::Zstd(_))
            && let Some(batch) = self.frame_stretch(spans, min)?
        {
            return Ok(batch);
        }
        let mut text = Vec::with_capacity(min + 4096);
        let more = self.read_lines(&mut text, spans, min)?;
        Ok((BatchText::Read(text), more))
    }

    /// [`Self::next_lines`] of an artifact whose frame in hand is decoded
    /// whole (nearly every frame: up to [`FRAME_HOLD`]): its lines from
    /// `plain[start..]` until the batch holds `min` bytes or the frame has
    /// no whole line left, as a stretch of the frame's plaintext, which the
    /// batches cut from it share instead of copying. `None` for a frame
    /// decoded in steps: its lines are copied one by one.
    fn frame_stretch(
        &mut self,
        spans: &mut Vec<LineSpan>,
        min: usize,
    ) -> Result<Option<(BatchText, bool)>, LoadError> {
        let Some(mut newline) = self.zstd_fill()? else {
            return Ok(Some((BatchText::Read(Vec::new()), false)));
        };
        let max_line = self.limits.max_line_bytes;
        let Inner::Zstd(z) = &mut self.inner else {
            unreachable!("frame_stretch is called for an artifact")
        };
        let Some(f) = z.frame.as_mut().filter(|f| f.finished) else {
            return Ok(None);
        };
        let from = z.start;
        let mut at = from;
        loop {
            if newline as u64 > max_line {
                return Err(line_limit(self.next_no, max_line));
            }
            spans.push(LineSpan {
                no: self.next_no,
                offset: self.offset,
                start: at - from,
                len: newline,
                strict: f.complete,
            });
            self.next_no += 1;
            self.offset += (newline + 1) as u64;
            f.lines += 1;
            at += newline + 1;
            if at - from >= min {
                break;
            }
            match memchr::memchr(b'\n', &z.plain[at..]) {
                Some(i) => newline = i,
                None => break,
            }
        }
        z.start = at;
        let text = BatchText::Frame {
            plain: Arc::clone(&z.plain),
            start: from,
            end: at,
        };
        Ok(Some((text, true)))
    }

    /// [`Self::next_lines`] into `text`, for a log that is read. Plain files
    /// are read straight into `text` (one copy, the kernel's); the fragment
    /// after the last newline waits for the next call, and at the end of
    /// the file it is the torn tail.
    fn read_lines(
        &mut self,
        text: &mut Vec<u8>,
        spans: &mut Vec<LineSpan>,
        min: usize,
    ) -> Result<bool, LoadError> {
        let max_line = self.limits.max_line_bytes;
        let Inner::Plain {
            src,
            buf,
            start,
            end,
            eof,
        } = &mut self.inner
        else {
            // Zstandard: lines come out of decompressed frames one by one.
            // Newlines count towards the batch, so that a run of empty
            // lines cannot grow one batch's spans without bound.
            let mut budget = 0usize;
            while budget < min {
                let Some(l) = self.next_line()? else {
                    return Ok(false);
                };
                let (no, offset, strict, len) = (l.no, l.offset, l.strict, l.bytes.len());
                let at = text.len();
                text.extend_from_slice(l.bytes);
                budget += len + 1;
                spans.push(LineSpan {
                    no,
                    offset,
                    start: at,
                    len,
                    strict,
                });
            }
            return Ok(true);
        };
        let base = text.len();
        // What an earlier read left over starts this batch.
        text.extend_from_slice(&buf[*start..*end]);
        *start = 0;
        *end = 0;
        let mut want = min;
        let last = loop {
            if !*eof && text.len() - base < want {
                let need = want - (text.len() - base);
                let n = (&mut *src)
                    .take(need as u64)
                    .read_to_end(text)
                    .map_err(|e| io_err(e, "cannot read the log"))?;
                if n < need {
                    *eof = true;
                }
            }
            match memchr::memrchr(b'\n', &text[base..]) {
                Some(i) => break base + i,
                None if *eof => {
                    if text.len() > base {
                        self.torn = Some(TornTail {
                            offset: self.offset,
                            len: (text.len() - base) as u64,
                        });
                    }
                    text.truncate(base);
                    return Ok(false);
                }
                None if (text.len() - base) as u64 > max_line => {
                    return Err(line_limit(self.next_no, max_line));
                }
                // One line longer than the batch: read on (never much past
                // the limit, so that a line that never ends stays bounded).
                None => want = ((text.len() - base) * 2).min(max_line.saturating_add(1) as usize),
            }
        };
        // Keep the fragment after the last newline for the next call.
        let tail = &text[last + 1..];
        if buf.len() < tail.len() {
            buf.resize(tail.len(), 0);
        }
        buf[..tail.len()].copy_from_slice(tail);
        *end = tail.len();
        text.truncate(last + 1);
        let more = !(*eof && *end == 0);
        self.cut_lines(text, base, spans)?;
        Ok(more)
    }

    /// Record the span of every line of `text[from..]` (which ends with a
    /// newline, or is empty), numbering them on from the reader's count;
    /// a line past the limit is refused.
    fn cut_lines(
        &mut self,
        text: &[u8],
        from: usize,
        spans: &mut Vec<LineSpan>,
    ) -> Result<(), LoadError> {
        let max_line = self.limits.max_line_bytes;
        let mut at = from;
        for i in memchr::memchr_iter(b'\n', &text[from..]) {
            let stop = from + i;
            if (stop - at) as u64 > max_line {
                return Err(line_limit(self.next_no, max_line));
            }
            spans.push(LineSpan {
                no: self.next_no,
                offset: self.offset,
                start: at,
                len: stop - at,
                strict: false,
            });
            self.next_no += 1;
            self.offset += (stop + 1 - at) as u64;
            at = stop + 1;
        }
        Ok(())
    }

    /// The next complete line, or `None` at the end (a torn tail is recorded).
    pub(crate) fn next_line(&mut self) -> Result<Option<RawLine<'_>>, LoadError> {
        if matches!(self.inner, Inner::Zstd(_)) {
            return self.zstd_next_line();
        }
        let limits = self.limits;
        match &mut self.inner {
            Inner::Mapped { map, pos } => {
                let rest = &map[*pos..];
                let Some(i) = memchr::memchr(b'\n', rest) else {
                    if !rest.is_empty() {
                        let len = rest.len();
                        self.torn = Some(mapped_tail(len, self.offset, self.next_no, &limits)?);
                        *pos = map.len();
                    }
                    return Ok(None);
                };
                if i as u64 > limits.max_line_bytes {
                    return Err(line_limit(self.next_no, limits.max_line_bytes));
                }
                let s = *pos;
                *pos += i + 1;
                let no = self.next_no;
                self.next_no += 1;
                let offset = self.offset;
                self.offset += (i + 1) as u64;
                Ok(Some(RawLine {
                    no,
                    offset,
                    bytes: &map[s..s + i],
                    strict: false,
                }))
            }
            Inner::Plain {
                src,
                buf,
                start,
                end,
                eof,
            } => loop {
                if let Some(i) = memchr::memchr(b'\n', &buf[*start..*end]) {
                    if i as u64 > limits.max_line_bytes {
                        return Err(line_limit(self.next_no, limits.max_line_bytes));
                    }
                    let s = *start;
                    *start += i + 1;
                    let no = self.next_no;
                    self.next_no += 1;
                    let offset = self.offset;
                    self.offset += (i + 1) as u64;
                    return Ok(Some(RawLine {
                        no,
                        offset,
                        bytes: &buf[s..s + i],
                        strict: false,
                    }));
                }
                if *eof {
                    if *end > *start {
                        self.torn = Some(TornTail {
                            offset: self.offset,
                            len: (*end - *start) as u64,
                        });
                    }
                    return Ok(None);
                }
                if (*end - *start) as u64 > limits.max_line_bytes {
                    return Err(line_limit(self.next_no, limits.max_line_bytes));
                }
                // Move the partial line to the front and read more.
                if *start > 0 {
                    buf.copy_within(*start..*end, 0);
                    *end -= *start;
                    *start = 0;
                }
                if *end == buf.len() {
                    let cap = limits.max_line_bytes.saturating_add(1) as usize;
                    let n = (buf.len() * 2).min(cap.max(buf.len() + 1));
                    // Exactly: an amortised doubling would reserve twice the
                    // line limit.
                    buf.reserve_exact(n - buf.len());
                    buf.resize(n, 0);
                }
                let n = loop {
                    match src.read(&mut buf[*end..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(io_err(e, "cannot read the log")),
                    }
                };
                if n == 0 {
                    *eof = true;
                } else {
                    *end += n;
                }
            },
            Inner::Zstd(_) => unreachable!("taken above"),
        }
    }

    /// [`Self::next_line`] of an artifact.
    fn zstd_next_line(&mut self) -> Result<Option<RawLine<'_>>, LoadError> {
        let limits = self.limits;
        let Some(i) = self.zstd_fill()? else {
            return Ok(None);
        };
        let Inner::Zstd(z) = &mut self.inner else {
            unreachable!("zstd_fill is called for an artifact")
        };
        if i as u64 > limits.max_line_bytes {
            return Err(line_limit(self.next_no, limits.max_line_bytes));
        }
        let s = z.start;
        z.start += i + 1;
        let no = self.next_no;
        self.next_no += 1;
        let offset = self.offset;
        self.offset += (i + 1) as u64;
        let f = z.frame.as_mut().expect("plaintext comes from a frame");
        f.lines += 1;
        Ok(Some(RawLine {
            no,
            offset,
            bytes: &z.plain[s..s + i],
            strict: f.complete,
        }))
    }

    /// Decode on until `plain[start..]` of the artifact holds a whole line:
    /// where its newline is in `plain[start..]`, or `None` once the artifact
    /// ends (a torn tail is recorded).
    fn zstd_fill(&mut self) -> Result<Option<usize>, LoadError> {
        let limits = self.limits;
        let Inner::Zstd(z) = &mut self.inner else {
            unreachable!("zstd_fill is called for an artifact")
        };
        loop {
            let rest = &z.plain[z.start..];
            if let Some(i) = memchr::memchr(b'\n', rest) {
                return Ok(Some(i));
            }
            let frag = rest.len();
            if frag as u64 > limits.max_line_bytes {
                return Err(line_limit(self.next_no, limits.max_line_bytes));
            }
            if z.done {
                return Ok(None);
            }
            let frame_no = self.next_no; // for messages only
            match &z.frame {
                Some(f) if !f.finished => {
                    let (complete, at, first) = (f.complete, f.at, f.first_line);
                    // The whole of an ordinary frame is decoded (and its
                    // checksum verified) before its first line is used.
                    let step = if f.lines == 0 && z.plain.is_empty() {
                        FRAME_HOLD
                    } else {
                        DECODE_STEP
                    };
                    match z.decode(step, &limits) {
                        Ok(()) => {}
                        Err(Decode::Limit(e)) => return Err(e),
                        Err(Decode::Failed(e)) if complete => {
                            return Err(LoadError::corrupt(format!(
                                "corrupt session log: Zstandard frame at byte {at} fails to decompress (checksum or data error): {e}"
                            ))
                            .line(first));
                        }
                        // What a torn frame decodes to ends at the damage.
                        Err(Decode::Failed(_)) => {
                            if let Some(f) = z.frame.as_mut() {
                                f.finished = true;
                            }
                        }
                    }
                }
                Some(f) => {
                    if f.complete {
                        if frag > 0 {
                            return Err(LoadError::corrupt(format!(
                                "corrupt session log: Zstandard frame at byte {} does not end on a line boundary",
                                f.at
                            ))
                            .line(f.first_line));
                        }
                        z.frame = None;
                    } else {
                        // Only complete lines of a torn final frame are
                        // kept; a frame was torn even if no plaintext was
                        // lost.
                        if frag > 0 || f.lines == 0 {
                            self.torn = Some(TornTail {
                                offset: self.offset,
                                len: (frag as u64).max(1),
                            });
                        }
                        z.publish_whole();
                        return Ok(None);
                    }
                }
                None => match z.next_frame(frame_no)? {
                    Some(_) => {
                        if let (Some(f), Ok(mut t)) = (&z.frame, z.table.lock()) {
                            t.starts.push(super::reread::FrameAt {
                                physical: f.at,
                                plain: self.offset,
                            });
                        }
                    }
                    None => {
                        z.publish_whole();
                        return Ok(None);
                    }
                },
            }
        }
    }
}

/// Why decoding more of a frame stopped.
enum Decode {
    Limit(LoadError),
    Failed(io::Error),
}

thread_local! {
    /// A decoder left by the last artifact read on this thread: a home of
    /// thousands of small artifacts would otherwise set one up (and its
    /// tables, a few hundred kilobytes) per file.
    static SPARE_DECODER: std::cell::RefCell<Option<zstd::stream::raw::Decoder<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// This thread's spare decoder, or a new one.
fn spare_decoder() -> io::Result<zstd::stream::raw::Decoder<'static>> {
    match SPARE_DECODER.with(|d| d.borrow_mut().take()) {
        Some(d) => Ok(d),
        None => zstd::stream::raw::Decoder::new(),
    }
}

impl Drop for ZstdState {
    fn drop(&mut self) {
        use zstd::stream::raw::Operation;
        // SAFETY: `dec` is taken once, here, and never used again.
        let mut dec = unsafe { std::mem::ManuallyDrop::take(&mut self.dec) };
        // Reset (a frame may have been left half decoded) and keep it.
        if dec.reinit().is_ok() {
            let _ = SPARE_DECODER.try_with(|d| *d.borrow_mut() = Some(dec));
        }
    }
}

impl ZstdState {
    /// The artifact is read to its end: leave its plaintext for reading
    /// spans again, if it was kept.
    fn publish_whole(&mut self) {
        self.done = true;
        if let (Some(k), Ok(mut t)) = (self.keep.take(), self.table.lock()) {
            t.whole = Some(std::sync::Arc::new(k));
        }
    }

    /// Read compressed bytes until `cbuf[cstart..]` holds at least `more`
    /// more than now, or the input ends.
    fn read_more(&mut self, more: usize) -> Result<(), LoadError> {
        if self.cstart > 0 && self.frame.is_none() {
            self.cbuf.drain(..self.cstart);
            self.cbase += self.cstart as u64;
            self.cstart = 0;
        }
        let want = self.cbuf.len() + more;
        while self.cbuf.len() < want {
            let n = (&mut self.src)
                .take((want - self.cbuf.len()) as u64)
                .read_to_end(&mut self.cbuf)
                .map_err(|e| io_err(e, "cannot read the log"))?;
            if n == 0 {
                self.eof = true;
                break;
            }
        }
        Ok(())
    }

    /// Find the next frame and start decoding it: `Some(complete)`, or
    /// `None` when the input ends on a frame boundary.
    fn next_frame(&mut self, first_line: u64) -> Result<Option<bool>, LoadError> {
        match Arc::get_mut(&mut self.plain) {
            Some(plain) => plain.clear(),
            // Batches still hold the last frame's plaintext.
            None => self.plain = Arc::default(),
        }
        self.start = 0;
        loop {
            let d = &self.cbuf[self.cstart..];
            if d.is_empty() && self.eof {
                return Ok(None);
            }
            let scan = if d.is_empty() {
                FrameScan::Torn
            } else {
                scan_frame(d)
            };
            let (len, complete) = match scan {
                FrameScan::Complete(len) => (len, true),
                FrameScan::Torn if !self.eof => {
                    // Read at least as much again as is waiting, so that a
                    // large frame is walked a bounded number of times.
                    let more = (self.cbuf.len() - self.cstart).max(64 << 10);
                    self.read_more(more)?;
                    continue;
                }
                FrameScan::Torn => {
                    let at = self.cbase + self.cstart as u64;
                    self.cut = Some(CutFrame {
                        whole_end: at,
                        file_len: at + d.len() as u64,
                    });
                    (d.len(), false)
                }
                FrameScan::Bad(why) => {
                    let at = self.cbase + self.cstart as u64;
                    return Err(if at == 0 {
                        LoadError::corrupt(format!(
                            "corrupt session log: Zstandard frame 1 is damaged: {why}"
                        ))
                    } else {
                        LoadError::corrupt(format!(
                            "corrupt session log: Zstandard frame at byte {at} is damaged: {why}"
                        ))
                        .line(first_line)
                    });
                }
            };
            zstd::stream::raw::Operation::reinit(&mut *self.dec)
                .map_err(|e| io_err(e, "cannot reset the Zstandard decoder"))?;
            self.frame = Some(FrameDec {
                pos: self.cstart,
                end: self.cstart + len,
                at: self.cbase + self.cstart as u64,
                first_line,
                complete,
                finished: false,
                lines: 0,
            });
            self.cstart += len;
            self.frames += 1;
            return Ok(Some(complete));
        }
    }

    /// Decode up to `step` more plaintext of the current frame into `plain`
    /// (dropping what was handed out already).
    fn decode(&mut self, step: usize, limits: &Limits) -> Result<(), Decode> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        // Batches share a frame's plaintext only once it is decoded whole,
        // so this copies nothing (see `frame_stretch`).
        let plain = Arc::make_mut(&mut self.plain);
        if self.start > 0 {
            plain.drain(..self.start);
            self.start = 0;
        }
        let Some(f) = self.frame.as_mut() else {
            return Ok(());
        };
        let goal = plain.len() + step;
        while plain.len() < goal && !f.finished {
            let old = plain.len();
            let mut room = (goal - old).min(DECODE_STEP);
            if old == 0 {
                // A frame that names its size gets a buffer of that size
                // (each frame has a buffer of its own, and most are far
                // smaller than a step); Zstandard decodes it in one pass
                // when the room is at least that size.
                if let Ok(Some(n)) =
                    zstd::zstd_safe::get_frame_content_size(&self.cbuf[f.pos..f.end])
                {
                    room = room.min((n as usize).max(4 << 10));
                }
            }
            // Into the spare capacity, which is never zeroed first.
            plain.reserve_exact(room);
            let mut input = InBuffer::around(&self.cbuf[f.pos..f.end]);
            let mut output = OutBuffer::around_pos(plain, old);
            let r = self.dec.run(&mut input, &mut output);
            let (read, written) = (input.pos(), output.pos() - old);
            debug_assert_eq!(plain.len(), old + written);
            f.pos += read;
            self.total += written as u64;
            if self.total > super::reread::KEEP_WHOLE as u64 {
                self.keep = None;
            } else if let Some(k) = &mut self.keep {
                k.extend_from_slice(&plain[old..]);
            }
            if self.total > limits.max_decompressed {
                return Err(Decode::Limit(total_limit(limits.max_decompressed)));
            }
            match r {
                Err(e) => return Err(Decode::Failed(e)),
                Ok(0) => f.finished = true,
                Ok(_) if read == 0 && written == 0 => {
                    // No progress: the frame's bytes ran out before its end.
                    if f.complete {
                        return Err(Decode::Failed(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "incomplete frame",
                        )));
                    }
                    f.finished = true;
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }
}

/// Walk the Zstandard frames of `data` structurally: the end of the last
/// complete frame, and whether the data ends exactly there.
pub(crate) fn complete_frames_end(data: &[u8]) -> (u64, bool) {
    let mut pos = 0usize;
    while pos < data.len() {
        match scan_frame(&data[pos..]) {
            FrameScan::Complete(n) => pos += n,
            _ => return (pos as u64, false),
        }
    }
    (pos as u64, true)
}

/// The length of the Zstandard frame at the start of `d` when it is
/// complete there (walked structurally, not decoded); `None` when it is torn
/// or is not a frame.
pub(crate) fn complete_frame_len(d: &[u8]) -> Option<usize> {
    match scan_frame(d) {
        FrameScan::Complete(n) => Some(n),
        _ => None,
    }
}

enum FrameScan {
    Complete(usize),
    Torn,
    Bad(&'static str),
}

/// Walk one frame structurally (header, blocks, checksum) without decoding.
fn scan_frame(d: &[u8]) -> FrameScan {
    if d.len() < 4 {
        return if ZSTD_MAGIC.starts_with(d) {
            FrameScan::Torn
        } else {
            FrameScan::Bad("bad magic number")
        };
    }
    if d[..4] != ZSTD_MAGIC {
        return FrameScan::Bad("bad magic number");
    }
    let Some(&fhd) = d.get(4) else {
        return FrameScan::Torn;
    };
    if fhd & 0x18 != 0 {
        return FrameScan::Bad("reserved frame header descriptor bit set");
    }
    let fcs_flag = fhd >> 6;
    let single = (fhd >> 5) & 1 == 1;
    let checksum = (fhd >> 2) & 1 == 1;
    let dict = [0usize, 1, 2, 4][(fhd & 3) as usize];
    let fcs = match fcs_flag {
        0 => single as usize,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut p = 5 + (!single) as usize + dict + fcs;
    loop {
        if d.len() < p + 3 {
            return FrameScan::Torn;
        }
        let h = d[p] as u32 | (d[p + 1] as u32) << 8 | (d[p + 2] as u32) << 16;
        p += 3;
        let last = h & 1 == 1;
        let ty = (h >> 1) & 3;
        let size = (h >> 3) as usize;
        let body = match ty {
            0 | 2 => size,
            1 => 1,
            _ => return FrameScan::Bad("reserved block type"),
        };
        p += body;
        if d.len() < p {
            return FrameScan::Torn;
        }
        if last {
            break;
        }
    }
    if checksum {
        p += 4;
        if d.len() < p {
            return FrameScan::Torn;
        }
    }
    FrameScan::Complete(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every batch's lines (number, offset, bytes), and how the walk ended:
    /// the torn tail or the error, reading `path` in batches of `min` bytes.
    fn walk(
        path: &std::path::Path,
        max_line: u64,
        min: usize,
        map_from: u64,
    ) -> (Vec<String>, String) {
        let limits = Limits {
            max_line_bytes: max_line,
            ..Limits::default()
        };
        let src = LogSource::File(path.to_path_buf());
        let (mut r, header) = match LineReader::open_mapping_from(&src, limits, map_from) {
            Ok(x) => x,
            Err(e) => return (Vec::new(), format!("open: {e}")),
        };
        assert_eq!(matches!(r.inner, Inner::Mapped { .. }), map_from == 0);
        let mut lines = vec![format!("header {}", header.len())];
        loop {
            let mut spans = Vec::new();
            match r.next_lines(&mut spans, min) {
                Ok((text, more)) => {
                    for l in &spans {
                        let b = &text.bytes()[l.start..l.start + l.len];
                        lines.push(format!(
                            "{} {} {:?}",
                            l.no,
                            l.offset,
                            String::from_utf8_lossy(b)
                        ));
                    }
                    if !more {
                        break;
                    }
                }
                Err(e) => return (lines, format!("error: {e}")),
            }
        }
        let torn = format!("torn {:?}", r.torn_tail().map(|t| (t.offset, t.len)));
        (lines, torn)
    }

    #[test]
    fn a_mapped_file_reads_as_a_read_one_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = crate::test_rng::Lcg(5);
        let mut next = |n: u64| rng.below(n);
        for case in 0..24 {
            let mut text = String::from("{\"type\":\"session\"}\n");
            for i in 0..next(400) {
                // Empty lines, short ones and ones longer than a batch.
                // Lines past the limit below in even cases only.
                let long = if case % 2 == 0 { 5000 } else { 2400 };
                let len = match next(6) {
                    0 => 0,
                    1 => next(long) as usize,
                    _ => next(60) as usize,
                };
                text += &format!("{i}:{}\n", "x".repeat(len));
            }
            // A torn tail, short or past the line limit, or none.
            match case % 3 {
                0 => {}
                1 => text += "{\"torn",
                _ => text += &"y".repeat(3000),
            }
            let path = dir.path().join(format!("{case}.jsonl"));
            std::fs::write(&path, &text).unwrap();
            for max_line in [u64::MAX, 2500] {
                for min in [1, 77, 4096, 1 << 20] {
                    let at = format!("case {case}, max_line {max_line}, min {min}");
                    let (read, read_end) = walk(&path, max_line, min, u64::MAX);
                    let (mapped, mapped_end) = walk(&path, max_line, min, 0);
                    if case % 6 == 5 && max_line < 3000 {
                        // A torn tail past the limit, after lines within it:
                        // refused (a read refuses it or not depending on
                        // where its reads happen to end).
                        assert!(mapped_end.starts_with("error: line"), "{at}: {mapped_end}");
                    } else {
                        assert_eq!(read_end, mapped_end, "{at}");
                    }
                    if mapped_end.starts_with("error") {
                        // The batch that meets a line past the limit is
                        // dropped whole, and batches are cut differently:
                        // the lines before the error agree as far as both go.
                        let n = read.len().min(mapped.len());
                        assert!(read[..n] == mapped[..n], "{at}: lines differ");
                    } else {
                        assert!(read == mapped, "{at}: lines differ");
                    }
                }
            }
        }
    }

    #[test]
    fn an_artifact_reads_in_batches_as_its_plain_log_and_line_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = crate::test_rng::Lcg(11);
        let mut next = |n: u64| rng.below(n);
        for case in 0..16 {
            let header = "{\"type\":\"session\"}\n".to_string();
            let mut plain = header.clone();
            let mut art = zstd::bulk::compress(header.as_bytes(), 3).unwrap();
            for f in 0..next(12) {
                // Frames of one line, of a few and of more than a batch;
                // empty lines, short ones and ones longer than a batch.
                let mut frame = String::new();
                for i in 0..1 + next(if f % 3 == 0 { 2 } else { 90 }) {
                    let len = match next(6) {
                        0 => 0,
                        1 => next(9000) as usize,
                        _ => next(60) as usize,
                    };
                    frame += &format!("{f}.{i}:{}\n", "é".repeat(len / 2));
                }
                plain += &frame;
                // With and without the frame's size in its header.
                if next(2) == 0 {
                    art.extend(zstd::bulk::compress(frame.as_bytes(), 3).unwrap());
                } else {
                    art.extend(zstd::stream::encode_all(frame.as_bytes(), 3).unwrap());
                }
            }
            // A torn last frame in some cases (only for the line-by-line check).
            let torn = case % 4 == 3;
            if torn {
                let last = zstd::bulk::compress(b"x:1\ny:22\nz", 3).unwrap();
                art.extend_from_slice(&last[..last.len() - 3]);
            }
            let plain_path = dir.path().join(format!("{case}.jsonl"));
            let art_path = dir.path().join(format!("{case}.jsonl.zstd"));
            std::fs::write(&plain_path, &plain).unwrap();
            std::fs::write(&art_path, &art).unwrap();
            // Line by line.
            let src = LogSource::File(art_path.clone());
            let (mut r, _) =
                LineReader::open_mapping_from(&src, Limits::default(), u64::MAX).unwrap();
            let mut one_by_one = Vec::new();
            while let Some(l) = r.next_line().unwrap() {
                one_by_one.push(format!(
                    "{} {} {:?}",
                    l.no,
                    l.offset,
                    String::from_utf8_lossy(l.bytes)
                ));
            }
            let one_torn = format!("torn {:?}", r.torn_tail().map(|t| (t.offset, t.len)));
            for min in [1, 77, 4096, 1 << 20] {
                let at = format!("case {case}, min {min}");
                let (batched, end) = walk(&art_path, u64::MAX, min, u64::MAX);
                assert!(!batched.is_empty(), "{at}: {end}");
                assert_eq!(batched[1..], one_by_one[..], "{at}");
                assert_eq!(end, one_torn, "{at}");
                if !torn {
                    let (read, read_end) = walk(&plain_path, u64::MAX, min, u64::MAX);
                    assert!(batched == read, "{at}: lines differ from the plain log's");
                    assert_eq!(end, read_end, "{at}");
                }
                // A line past the limit is refused, as the plain log refuses it.
                if !torn {
                    let (_, art_end) = walk(&art_path, 4000, min, u64::MAX);
                    let (_, read_end) = walk(&plain_path, 4000, min, u64::MAX);
                    assert_eq!(art_end, read_end, "{at}, limit 4000");
                }
            }
        }
    }

    #[test]
    fn a_mapped_file_s_lines_one_by_one_read_as_a_read_one_s() {
        let dir = tempfile::tempdir().unwrap();
        for tail in ["", "{\"torn", "z"] {
            let path = dir.path().join("log.jsonl");
            std::fs::write(&path, format!("{{}}\na\n\nbc\n{tail}")).unwrap();
            let lines = |map_from| {
                let src = LogSource::File(path.clone());
                let (mut r, _) =
                    LineReader::open_mapping_from(&src, Limits::default(), map_from).unwrap();
                let mut got = Vec::new();
                while let Some(l) = r.next_line().unwrap() {
                    got.push((l.no, l.offset, l.bytes.to_vec()));
                }
                (got, r.torn_tail().map(|t| (t.offset, t.len)))
            };
            assert_eq!(lines(u64::MAX), lines(0), "tail {tail:?}");
        }
    }
}
