//! The end of a log, read without the rest: the time of its last events
//! (which of a project's sessions is the newest), and what was appended
//! since a full read (following a log while the harness writes it).
//!
//! A plain log is read backwards from its end; a Zstandard artifact is
//! walked frame by frame without decoding (headers and block headers only)
//! and only its last frames are decoded. Nothing here validates a log: a
//! full read ([`super::load`]) does that. What is appended is judged by the
//! loader's own fast lane (the chunk fast lane): lines it takes as valid
//! `assistant/chunk` records with the next seqs change nothing but counts
//! and the clock, so the figures of the full read still hold; anything else
//! asks for a full read again.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use crate::civil;
use crate::json::Value;

use super::LoadedLog;
use super::fastlane::{ChunkLines, Lane, classify};
use super::reader::complete_frame_len;
use super::source::ZSTD_MAGIC;

/// The most of a log's end read to find its last event's time.
const LAST_TIME_WINDOW: u64 = 16 << 20;

/// The most appended bytes [`follow`] checks; past it a full read is as
/// cheap.
const FOLLOW_MAX: u64 = 64 << 20;

/// The latest plausible event time ([`civil::recorded`]) among the last
/// complete lines of a log (the header's `createdAt` when it holds no
/// event), read from its end; `None` when none is plausible or the file
/// cannot be read. For a log written in time order this is its last
/// event's time.
pub(crate) fn last_event_time(path: &Path) -> Option<i64> {
    let mut f = File::open(path).ok()?;
    let mut magic = [0u8; 4];
    let zstd = f.read_exact(&mut magic).is_ok() && magic == ZSTD_MAGIC;
    let text = if zstd {
        last_frames(&f)?
    } else {
        let size = f.metadata().ok()?.len();
        let mut window = 64 << 10;
        loop {
            let start = size.saturating_sub(window);
            let bytes = read_range(&mut f, start, size).ok()?;
            // The first piece may be cut; it counts only from the file's start.
            let whole_from = if start == 0 {
                0
            } else {
                memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1)
            };
            let lines = &bytes[whole_from..];
            if let Some(t) = latest_time(lines) {
                return Some(t);
            }
            if start == 0 || window >= LAST_TIME_WINDOW || lines.contains(&b'\n') {
                return None;
            }
            window *= 4;
        }
    };
    latest_time(&text)
}

/// The plaintext of an artifact's last complete frame and of what can be
/// decoded of a torn frame after it.
fn last_frames(f: &File) -> Option<Vec<u8>> {
    // SAFETY: read-only; a harness only appends to the file, and a
    // truncation while mapped ends the read with an error at worst (the
    // mapping is read through copies, never handed out).
    let map = unsafe { memmap2::Mmap::map(f) }.ok()?;
    // Found from the end when it can be (only the tail is touched), else
    // by walking every frame from the start.
    let (last, end) = last_frame_from_end(&map).or_else(|| {
        let (mut pos, mut last) = (0usize, None);
        while let Some(n) = complete_frame_len(&map[pos..]) {
            last = Some(pos);
            pos += n;
        }
        Some((last, pos))
    })?;
    let mut out = Vec::new();
    if let Some(start) = last {
        out = zstd::stream::decode_all(&map[start..end]).ok()?;
    }
    out.extend(decode_torn(&map[end..]));
    Some(out)
}

/// The last complete frame of an artifact, found from its end: the latest
/// place in its last megabyte where the magic number starts a chain of
/// complete frames that ends at the end of the file (or where a frame
/// still being written starts). `(start of the last complete frame, its end)`; `None`
/// when no such place is found (then the frames are walked from the start;
/// a false start inside compressed data would also fail to decode there).
fn last_frame_from_end(map: &[u8]) -> Option<(Option<usize>, usize)> {
    let from = map.len().saturating_sub(1 << 20).max(1);
    let mut at = map.len();
    while let Some(i) = memchr::memmem::rfind(&map[from..at], &ZSTD_MAGIC) {
        let start = from + i;
        at = start;
        let (mut pos, mut last) = (start, None);
        while let Some(n) = complete_frame_len(&map[pos..]) {
            last = Some(pos);
            pos += n;
        }
        let rest = &map[pos..];
        if last.is_some() && (rest.is_empty() || rest.starts_with(&ZSTD_MAGIC)) {
            return Some((last, pos));
        }
    }
    None
}

/// What a streaming decoder recovers of a torn frame (nothing when the
/// bytes are not one).
fn decode_torn(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if bytes.len() >= 4
        && bytes[..4] == ZSTD_MAGIC
        && let Ok(mut d) = zstd::stream::read::Decoder::with_buffer(bytes)
    {
        // Stops at the torn end with an error; what came before is kept.
        let _ = d.read_to_end(&mut out);
    }
    out
}

fn read_range(f: &mut File, start: u64, end: u64) -> io::Result<Vec<u8>> {
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((end - start) as usize);
    f.take(end - start).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The latest plausible time of the complete lines of `text` (its part
/// after the last `\n` is a torn tail and left out).
fn latest_time(text: &[u8]) -> Option<i64> {
    let end = memchr::memrchr(b'\n', text)?;
    text[..end]
        .split(|&b| b == b'\n')
        .filter_map(line_time)
        .max()
}

/// A line's time: an event's `time`, a packed row's last member's, a
/// header's `createdAt`; `None` when it is not a plausible date.
fn line_time(line: &[u8]) -> Option<i64> {
    let text = simdutf8::basic::from_utf8(line).ok()?;
    match classify(line, ChunkLines::Count) {
        Some(Lane::Row(span, _)) => return civil::recorded(span.last_time as f64),
        Some(Lane::Chunk { time, .. }) => return civil::recorded(time),
        _ => {}
    }
    let v = Value::parse(text).ok()?;
    let key = if v.get("type").is_some_and(|t| t.is_str("session")) {
        "createdAt"
    } else {
        "time"
    };
    civil::recorded(v.get(key)?.as_f64()?)
}

/// Where a full read of a log ended, for `follow`ing what is appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mark {
    /// A Zstandard artifact (else plain).
    pub zstd: bool,
    /// Where the unread bytes start in the file: a plain log's committed
    /// prefix's end, or the end of an artifact's complete frames.
    pub offset: u64,
    /// The seq the next stored event must have.
    pub next_seq: u64,
    /// The file's length when it was marked: a file of this length has
    /// nothing new.
    pub size: u64,
}

impl Mark {
    /// The mark of a full read of `path` that gave `log`, when one can be
    /// followed: a generation-0 log read to its end with nothing dropped,
    /// an artifact whose read ended at a frame boundary (frames that state
    /// their size, as the harness's and `dsh pack`'s do).
    pub(crate) fn after(path: &Path, log: &LoadedLog) -> Option<Mark> {
        if log.header.version != 0 || log.dropped.is_some() || log.truncated_at.is_some() {
            return None;
        }
        let next_seq = log.stored_events;
        match log.container {
            super::Container::Plain => Some(Mark {
                zstd: false,
                offset: log.committed_len,
                next_seq,
                size: log.committed_len + log.torn.map_or(0, |t| t.len),
            }),
            super::Container::Zstd => {
                let f = File::open(path).ok()?;
                // SAFETY: as in `last_frames`.
                let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
                let (mut pos, mut plain) = (0usize, 0u64);
                while plain < log.committed_len {
                    let n = complete_frame_len(&map[pos..])?;
                    plain += zstd::zstd_safe::get_frame_content_size(&map[pos..pos + n])
                        .ok()
                        .flatten()?;
                    pos += n;
                }
                (plain == log.committed_len).then_some(Mark {
                    zstd: true,
                    offset: pos as u64,
                    next_seq,
                    size: pos as u64,
                })
            }
        }
    }
}

/// What was appended to a log since a [`Mark`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Appended {
    /// The mark after it (complete lines, or complete frames, taken).
    pub mark: Mark,
    /// `assistant/chunk` events appended.
    pub chunks: u64,
    /// The latest plausible time among them.
    pub last_time: Option<i64>,
    /// Bytes of a line (or frame) still being written after them.
    pub torn: u64,
}

/// How a log changed since a [`Mark`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Growth {
    /// Not at all: the same length.
    Same,
    /// Only by valid `assistant/chunk` records with the next seqs, and
    /// perhaps the start of a line still being written: every figure of
    /// the full read still holds.
    Chunks(Appended),
    /// Otherwise (other events, a shorter or replaced file, anything the
    /// fast lane does not take): read it whole again.
    Other,
}

/// What was appended to `path` since `mark` (see [`Growth`]).
pub(crate) fn follow(path: &Path, mark: &Mark) -> io::Result<Growth> {
    let mut f = File::open(path)?;
    let size = f.metadata()?.len();
    if size == mark.size {
        return Ok(Growth::Same);
    }
    if size < mark.offset || size - mark.offset > FOLLOW_MAX {
        return Ok(Growth::Other);
    }
    let bytes = read_range(&mut f, mark.offset, size)?;
    let mut check = Check {
        expected: mark.next_seq,
        chunks: 0,
        last_time: None,
    };
    let next = if mark.zstd {
        let mut pos = 0usize;
        while let Some(n) = complete_frame_len(&bytes[pos..]) {
            let Ok(plain) = zstd::stream::decode_all(&bytes[pos..pos + n]) else {
                return Ok(Growth::Other);
            };
            // A complete frame holds whole lines only.
            if !plain.is_empty() && (plain.last() != Some(&b'\n') || !check.lines(&plain)) {
                return Ok(Growth::Other);
            }
            pos += n;
        }
        let done = (pos as u64, check.expected);
        // A frame still being written: its complete lines are checked
        // (a full read would take them) but followed again next time.
        let torn = decode_torn(&bytes[pos..]);
        let whole = memchr::memrchr(b'\n', &torn).map_or(0, |i| i + 1);
        if !check.lines(&torn[..whole]) {
            return Ok(Growth::Other);
        }
        done
    } else {
        let whole = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
        if !check.lines(&bytes[..whole]) {
            return Ok(Growth::Other);
        }
        (whole as u64, check.expected)
    };
    let (taken, next_seq) = next;
    Ok(Growth::Chunks(Appended {
        mark: Mark {
            zstd: mark.zstd,
            offset: mark.offset + taken,
            next_seq,
            size,
        },
        chunks: check.chunks,
        last_time: check.last_time,
        torn: bytes.len() as u64 - taken,
    }))
}

struct Check {
    expected: u64,
    chunks: u64,
    last_time: Option<i64>,
}

impl Check {
    /// Whether every `\n`-terminated line of `text` is a valid chunk
    /// record with the next seqs.
    fn lines(&mut self, text: &[u8]) -> bool {
        let Some(body) = text.strip_suffix(b"\n") else {
            return text.is_empty();
        };
        for line in body.split(|&b| b == b'\n') {
            if simdutf8::basic::from_utf8(line).is_err() {
                return false;
            }
            let (seq0, count, time) = match classify(line, ChunkLines::Count) {
                Some(Lane::Row(span, _)) => (span.seq0, span.count, span.last_time as f64),
                Some(Lane::Chunk { seq, time }) => (seq, 1, time),
                _ => return false,
            };
            if seq0 != self.expected {
                return false;
            }
            self.expected += count;
            self.chunks += count;
            if let Some(t) = civil::recorded(time) {
                self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LoadOptions, LogSource, load};
    use std::io::Write;

    const HEAD: &str =
        r#"{"type":"session","version":0,"id":"t","createdAt":1780000000000,"delegationDepth":0}"#;

    fn chunk(seq: u64, time: u64) -> String {
        format!(
            r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"x"}}}}}}"#
        )
    }

    fn start(seq: u64, time: u64) -> String {
        format!(r#"{{"type":"turn/start","seq":{seq},"time":{time},"data":{{"turn":1}}}}"#)
    }

    fn step(seq: u64, time: u64) -> String {
        format!(r#"{{"type":"step/start","seq":{seq},"time":{time},"data":{{"turn":1,"step":1}}}}"#)
    }

    fn loaded(p: &Path) -> LoadedLog {
        load(
            &LogSource::File(p.to_path_buf()),
            &LoadOptions::default(),
            &mut |_: &crate::Event<'_>, _: &crate::log::Folded<'_>| {},
        )
        .unwrap()
    }

    #[test]
    fn the_last_time_comes_from_the_end_of_plain_and_zstd_logs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let text = format!(
            "{HEAD}\n{}\n{}\n{}\n{{\"torn",
            start(0, 1780000001000),
            step(1, 1780000002000),
            chunk(2, 1780000003000)
        );
        std::fs::write(&p, &text).unwrap();
        assert_eq!(last_event_time(&p), Some(1780000003000));
        std::fs::write(&p, format!("{HEAD}\n")).unwrap();
        assert_eq!(last_event_time(&p), Some(1780000000000), "the header's");
        std::fs::write(&p, format!("{HEAD}\n{}\n", start(0, 0))).unwrap();
        assert_eq!(last_event_time(&p), Some(1780000000000), "0 is no date");
        let z = dir.path().join("s.jsonl.zstd");
        let mut art = zstd::bulk::compress(format!("{HEAD}\n").as_bytes(), 3).unwrap();
        art.extend(
            zstd::bulk::compress(format!("{}\n", start(0, 1780000005000)).as_bytes(), 3).unwrap(),
        );
        std::fs::write(&z, &art).unwrap();
        assert_eq!(last_event_time(&z), Some(1780000005000));
        // A frame still being written: what it already holds counts.
        let next =
            zstd::bulk::compress(format!("{}\n", step(1, 1780000009000)).as_bytes(), 3).unwrap();
        art.extend(&next[..next.len() - 4]);
        std::fs::write(&z, &art).unwrap();
        assert!(last_event_time(&z).unwrap() >= 1780000005000);
        assert_eq!(last_event_time(&dir.path().join("missing")), None);
    }

    #[test]
    fn the_last_frame_is_found_from_the_end_as_a_walk_finds_it() {
        let mut art = zstd::bulk::compress(format!("{HEAD}\n").as_bytes(), 3).unwrap();
        let mut starts = vec![0];
        for i in 0..50u64 {
            starts.push(art.len());
            let line = format!("{}\n", start(i, 1780000000000 + i));
            art.extend(zstd::bulk::compress(line.as_bytes(), 3).unwrap());
        }
        let end = art.len();
        assert_eq!(last_frame_from_end(&art), Some((Some(starts[50]), end)));
        // A frame still being written after it.
        let next = zstd::bulk::compress(format!("{}\n", start(50, 1)).as_bytes(), 3).unwrap();
        art.extend(&next[..next.len() - 3]);
        assert_eq!(last_frame_from_end(&art), Some((Some(starts[50]), end)));
        // Only the header: walked from the start instead.
        let head = zstd::bulk::compress(format!("{HEAD}\n").as_bytes(), 3).unwrap();
        assert_eq!(last_frame_from_end(&head), None);
    }

    #[test]
    fn chunks_appended_keep_the_figures_and_anything_else_asks_for_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(
            &p,
            format!(
                "{HEAD}\n{}\n{}\n",
                start(0, 1780000001000),
                step(1, 1780000002000)
            ),
        )
        .unwrap();
        let mark = Mark::after(&p, &loaded(&p)).unwrap();
        assert_eq!((mark.next_seq, mark.zstd), (2, false));
        assert_eq!(follow(&p, &mark).unwrap(), Growth::Same);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        // A line in two halves: the first half is waited on.
        let line = chunk(2, 1780000004000);
        f.write_all(&line.as_bytes()[..20]).unwrap();
        let Growth::Chunks(a) = follow(&p, &mark).unwrap() else {
            panic!()
        };
        assert_eq!((a.chunks, a.torn, a.mark.offset), (0, 20, mark.offset));
        f.write_all(format!("{}\n", &line[20..]).as_bytes())
            .unwrap();
        let Growth::Chunks(b) = follow(&p, &a.mark).unwrap() else {
            panic!()
        };
        assert_eq!((b.chunks, b.torn, b.mark.next_seq), (1, 0, 3));
        assert_eq!(b.last_time, Some(1780000004000));
        // The mark agrees with a full read of the longer log.
        assert_eq!(Mark::after(&p, &loaded(&p)).unwrap(), b.mark);
        // A seq out of turn, or another event, is not followed.
        f.write_all(format!("{}\n", chunk(9, 1780000005000)).as_bytes())
            .unwrap();
        assert_eq!(follow(&p, &b.mark).unwrap(), Growth::Other);
        std::fs::write(
            &p,
            format!("{HEAD}\n{}\n{}\n{}\n", start(0, 1), step(1, 2), start(2, 3)),
        )
        .unwrap();
        assert_eq!(follow(&p, &b.mark).unwrap(), Growth::Other);
    }

    #[test]
    fn an_artifact_is_followed_by_its_frames() {
        let dir = tempfile::tempdir().unwrap();
        let z = dir.path().join("s.jsonl.zstd");
        let frame = |t: &str| zstd::bulk::compress(t.as_bytes(), 3).unwrap();
        let mut art = frame(&format!("{HEAD}\n"));
        art.extend(frame(&format!(
            "{}\n{}\n",
            start(0, 1780000001000),
            step(1, 1780000002000)
        )));
        std::fs::write(&z, &art).unwrap();
        let mark = Mark::after(&z, &loaded(&z)).unwrap();
        assert_eq!(
            (mark.zstd, mark.offset, mark.next_seq),
            (true, art.len() as u64, 2)
        );
        let next = frame(&format!(
            "{}\n{}\n",
            chunk(2, 1780000003000),
            chunk(3, 1780000003500)
        ));
        art.extend(&next[..next.len() / 2]);
        std::fs::write(&z, &art).unwrap();
        let Growth::Chunks(a) = follow(&z, &mark).unwrap() else {
            panic!()
        };
        assert_eq!(a.mark.offset, mark.offset, "a torn frame is followed again");
        art.extend(&next[next.len() / 2..]);
        std::fs::write(&z, &art).unwrap();
        let Growth::Chunks(b) = follow(&z, &a.mark).unwrap() else {
            panic!()
        };
        assert_eq!(
            (b.chunks, b.mark.offset, b.mark.next_seq),
            (2, art.len() as u64, 4)
        );
        assert_eq!(Mark::after(&z, &loaded(&z)).unwrap(), b.mark);
        art.extend(frame(&format!("{}\n", start(4, 1780000004000))));
        std::fs::write(&z, &art).unwrap();
        assert_eq!(follow(&z, &b.mark).unwrap(), Growth::Other);
    }
}
