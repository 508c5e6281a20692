//! Physical layer: bytes to lines, for plain JSONL and multi-frame Zstandard
//! artifacts (session-log §3.2–§3.3).
//!
//! Plain files are streamed through a growing buffer; a Zstandard artifact is
//! walked frame by frame, each complete frame decompressed (checksum
//! verified) only when its lines are needed. The container is chosen by the
//! magic bytes, never by the file name.

use std::fs::File;
use std::io::{self, Read};

use super::error::{LoadError, LoadErrorKind};
use super::source::LogSource;

/// The Zstandard frame magic number, as it appears on disk.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Which container the log uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// One JSON text per `\n`-terminated line.
    Plain,
    /// Concatenated Zstandard frames; frame 1 holds the header line.
    Zstd,
}

/// One complete (`\n`-terminated) line.
#[derive(Debug)]
pub struct RawLine<'b> {
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
pub struct LineSpan {
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

/// Bytes after the last complete line, ignored as a torn write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// Logical offset where the fragment starts.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// Reads lines from a log, one at a time.
pub struct LineReader {
    container: Container,
    inner: Inner,
    next_no: u64,
    /// Logical offset of the next line.
    offset: u64,
    torn: Option<TornTail>,
}

enum Inner {
    Plain {
        src: Box<dyn Read + Send>,
        buf: Vec<u8>,
        start: usize,
        end: usize,
        eof: bool,
    },
    Zstd {
        data: Vec<u8>,
        pos: usize,
        plain: Vec<u8>,
        start: usize,
        strict: bool,
        done: bool,
    },
}

fn io_err(e: io::Error, what: &str) -> LoadError {
    LoadError::io(what, e)
}

impl LineReader {
    /// Open a source and read its header line (returned as bytes).
    pub fn open(source: &LogSource) -> Result<(LineReader, Vec<u8>), LoadError> {
        let mut src: Box<dyn Read + Send> = match source {
            LogSource::File(p) => {
                let f = File::open(p).map_err(|e| io_err(e, "cannot open the log"))?;
                let md = f.metadata().map_err(|e| io_err(e, "cannot stat the log"))?;
                if md.is_dir() {
                    return Err(LoadError::new(
                        LoadErrorKind::Io,
                        "is a directory, not a session log",
                    ));
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
            let mut data = head;
            src.read_to_end(&mut data)
                .map_err(|e| io_err(e, "cannot read the log"))?;
            let mut r = LineReader {
                container: Container::Zstd,
                inner: Inner::Zstd {
                    data,
                    pos: 0,
                    plain: Vec::new(),
                    start: 0,
                    strict: true,
                    done: false,
                },
                next_no: 1,
                offset: 0,
                torn: None,
            };
            let header = r.zstd_header()?;
            return Ok((r, header));
        }
        let mut buf = head;
        buf.resize(64 << 10, 0);
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
        Ok((r, header))
    }

    /// The container kind.
    pub fn container(&self) -> Container {
        self.container
    }

    /// The torn tail found after the last complete line, once reading ended.
    pub fn torn_tail(&self) -> Option<TornTail> {
        self.torn
    }

    /// Logical bytes consumed so far.
    pub fn logical_offset(&self) -> u64 {
        self.offset
    }

    fn zstd_header(&mut self) -> Result<Vec<u8>, LoadError> {
        let Inner::Zstd { data, pos, .. } = &mut self.inner else {
            unreachable!()
        };
        match scan_frame(&data[*pos..]) {
            FrameScan::Complete(len) => {
                let plain = zstd::stream::decode_all(&data[*pos..*pos + len]).map_err(|e| {
                    LoadError::corrupt(format!(
                        "corrupt session log: first Zstandard frame does not decompress: {e}"
                    ))
                })?;
                *pos += len;
                if plain.last() != Some(&b'\n')
                    || memchr::memchr(b'\n', &plain[..plain.len() - 1]).is_some()
                {
                    return Err(LoadError::corrupt(
                        "corrupt session log: first Zstandard frame must hold exactly the header line",
                    )
                    .line(1));
                }
                self.next_no = 2;
                self.offset = plain.len() as u64;
                Ok(plain[..plain.len() - 1].to_vec())
            }
            FrameScan::Torn => Err(LoadError::corrupt(
                "corrupt session log: header-less Zstandard artifact (no complete first frame)",
            )),
            FrameScan::Bad(why) => Err(LoadError::corrupt(format!(
                "corrupt session log: Zstandard frame 1 is damaged: {why}"
            ))),
        }
    }

    /// Append whole lines to `text` until it holds at least `min` bytes or
    /// the log ends, recording each line's span; `false` once the log has
    /// no more lines. Plain files are read straight into `text` (one copy,
    /// the kernel's); the fragment after the last newline waits for the
    /// next call, and at the end of the file it is the torn tail.
    pub fn next_lines(
        &mut self,
        text: &mut Vec<u8>,
        spans: &mut Vec<LineSpan>,
        min: usize,
    ) -> Result<bool, LoadError> {
        let Inner::Plain {
            src,
            buf,
            start,
            end,
            eof,
        } = &mut self.inner
        else {
            // Zstandard: lines come out of decompressed frames one by one.
            while text.len() < min {
                let Some(l) = self.next_line()? else {
                    return Ok(false);
                };
                let (no, offset, strict, len) = (l.no, l.offset, l.strict, l.bytes.len());
                let at = text.len();
                text.extend_from_slice(l.bytes);
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
                // One line longer than the batch: read on.
                None => want = (text.len() - base) * 2,
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
        let mut at = base;
        for i in memchr::memchr_iter(b'\n', &text[base..]) {
            let stop = base + i;
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
        Ok(!(*eof && *end == 0))
    }

    /// The next complete line, or `None` at the end (a torn tail is recorded).
    pub fn next_line(&mut self) -> Result<Option<RawLine<'_>>, LoadError> {
        match &mut self.inner {
            Inner::Plain {
                src,
                buf,
                start,
                end,
                eof,
            } => loop {
                if let Some(i) = memchr::memchr(b'\n', &buf[*start..*end]) {
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
                // Move the partial line to the front and read more.
                if *start > 0 {
                    buf.copy_within(*start..*end, 0);
                    *end -= *start;
                    *start = 0;
                }
                if *end == buf.len() {
                    let n = buf.len() * 2;
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
            Inner::Zstd {
                data,
                pos,
                plain,
                start,
                strict,
                done,
            } => loop {
                if *start < plain.len() {
                    let rest = &plain[*start..];
                    match memchr::memchr(b'\n', rest) {
                        Some(i) => {
                            let s = *start;
                            *start += i + 1;
                            let no = self.next_no;
                            self.next_no += 1;
                            let offset = self.offset;
                            self.offset += (i + 1) as u64;
                            return Ok(Some(RawLine {
                                no,
                                offset,
                                bytes: &plain[s..s + i],
                                strict: *strict,
                            }));
                        }
                        None => {
                            // Only a torn final frame may end mid-line.
                            self.torn = Some(TornTail {
                                offset: self.offset,
                                len: rest.len() as u64,
                            });
                            *start = plain.len();
                            *done = true;
                        }
                    }
                }
                if *done || *pos >= data.len() {
                    *done = true;
                    return Ok(None);
                }
                let frame_no = self.next_no; // for messages only
                match scan_frame(&data[*pos..]) {
                    FrameScan::Complete(len) => {
                        let out = zstd::stream::decode_all(&data[*pos..*pos + len]).map_err(|e| {
                            LoadError::corrupt(format!(
                                "corrupt session log: Zstandard frame at byte {} fails to decompress (checksum or data error): {e}",
                                *pos
                            ))
                            .line(frame_no)
                        })?;
                        if !out.is_empty() && out.last() != Some(&b'\n') {
                            return Err(LoadError::corrupt(format!(
                                "corrupt session log: Zstandard frame at byte {} does not end on a line boundary",
                                *pos
                            ))
                            .line(frame_no));
                        }
                        *pos += len;
                        *plain = out;
                        *start = 0;
                        *strict = true;
                    }
                    FrameScan::Torn => {
                        // Recover what a streaming decoder can from the torn frame.
                        let mut out = Vec::new();
                        if let Ok(mut dec) = zstd::stream::read::Decoder::new(&data[*pos..]) {
                            let mut chunk = [0u8; 64 * 1024];
                            loop {
                                match dec.read(&mut chunk) {
                                    Ok(0) | Err(_) => break,
                                    Ok(n) => out.extend_from_slice(&chunk[..n]),
                                }
                            }
                        }
                        let cut = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                        let torn_len = (out.len() - cut) as u64;
                        out.truncate(cut);
                        *pos = data.len();
                        *plain = out;
                        *start = 0;
                        *strict = false;
                        *done = false;
                        if torn_len > 0 || cut == 0 {
                            // Remember that a frame was torn even if nothing was lost
                            // in plaintext terms.
                            self.torn = Some(TornTail {
                                offset: self.offset + cut as u64,
                                len: torn_len.max(1),
                            });
                        }
                        if plain.is_empty() {
                            *done = true;
                            return Ok(None);
                        }
                    }
                    FrameScan::Bad(why) => {
                        return Err(LoadError::corrupt(format!(
                            "corrupt session log: Zstandard frame at byte {} is damaged: {why}",
                            *pos
                        ))
                        .line(frame_no));
                    }
                }
            },
        }
    }
}

/// Walk the Zstandard frames of `data` structurally: the end of the last
/// complete frame, and whether the data ends exactly there.
pub fn complete_frames_end(data: &[u8]) -> (u64, bool) {
    let mut pos = 0usize;
    while pos < data.len() {
        match scan_frame(&data[pos..]) {
            FrameScan::Complete(n) => pos += n,
            _ => return (pos as u64, false),
        }
    }
    (pos as u64, true)
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
