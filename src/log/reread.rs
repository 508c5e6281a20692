//! Reading node lines again after the load, from a plain file or from a
//! Zstandard artifact.
//!
//! The loader keeps most surface nodes as `(offset, len)` spans of the log's
//! plaintext instead of holding their events. A plain file is read again
//! where the span says. An artifact's frames are independent, so a span is
//! read again by decompressing from the start of the frame that holds it:
//! the reader records where each frame starts (compressed and plaintext
//! offsets, a few bytes per frame) while it loads, and a [`ZstdCursor`]
//! keeps one decoder and a bounded window of plaintext, so spans taken in
//! log order decompress each frame once and memory stays a window, whatever
//! the artifact's size.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where one Zstandard frame starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameAt {
    /// Byte offset of the frame in the file.
    pub physical: u64,
    /// Plaintext offset of its first byte.
    pub plain: u64,
}

/// What the reader leaves for reading an artifact again: where its frames
/// start and, for a small artifact read to its end, its whole plaintext.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    /// The frame starts, in order.
    pub starts: Vec<FrameAt>,
    /// The plaintext from offset 0, once the reader has decoded all of it
    /// and it is at most [`KEEP_WHOLE`] bytes: spans are then sliced from
    /// memory instead of decompressed a second time (a home of small
    /// artifacts would otherwise decode most of them twice).
    pub whole: Option<Arc<Vec<u8>>>,
}

/// Plaintext kept whole at most: a few frames' worth, so that memory stays
/// a window however many artifacts are open.
pub(crate) const KEEP_WHOLE: usize = 4 << 20;

/// The frames of an artifact, filled by the reader as it walks them
/// (shared, because a rule may read a node again mid-load).
pub(crate) type FrameTable = Arc<Mutex<Frames>>;

/// Compressed bytes read from the file at a time.
const INPUT: usize = 128 << 10;
/// Plaintext decoded per decoder call.
const STEP: usize = 256 << 10;
/// A jump ahead further than this looks for a nearer frame start.
const FAR: u64 = 4 << 20;

/// Decompresses an artifact forwards from any frame start, holding the
/// plaintext between `at` and `at + out.len()`.
///
/// After a few reads in log order the cursor decompresses ahead on a thread
/// of its own (a bounded queue of chunks), so that a walk over the whole
/// surface overlaps decompression with whatever the caller does with it.
pub(crate) struct ZstdCursor {
    path: PathBuf,
    frames: FrameTable,
    /// The whole plaintext, when the reader kept it (see [`Frames::whole`]).
    whole: Option<Arc<Vec<u8>>>,
    stream: Stream,
    /// Plaintext offset of `out[0]`.
    at: u64,
    out: Vec<u8>,
    /// Whether the stream continues from `at + out.len()`.
    live: bool,
    /// Fills in a row that went on forwards (no restart).
    forwards: u32,
}

/// Where more plaintext comes from.
enum Stream {
    /// Decoded here, on demand.
    Here(Box<Decoding>),
    /// Decoded ahead on threads; the queues end with the artifact.
    Ahead(AheadFrames),
}

/// Frames decoded ahead, frame `i` (counting from where the walk started)
/// by thread `i % queues.len()`: the reader takes the queues in turn, a
/// frame's last piece marked, so the plaintext comes back in order while
/// the frames decompress side by side.
struct AheadFrames {
    queues: Vec<std::sync::mpsc::Receiver<io::Result<Piece>>>,
    /// The queue the next piece comes from.
    next: usize,
    /// Buffers the reader is done with, for the threads to decode into
    /// again (fresh ones would cost a page fault per page).
    spare: Spare,
}

/// Buffers going back from the reader to the decoding threads.
type Spare = Arc<Mutex<Vec<Vec<u8>>>>;

/// A spare buffer with room for `size` bytes, or a new one.
fn take_spare(spare: &Spare, size: usize) -> Vec<u8> {
    let mut b = spare
        .lock()
        .ok()
        .and_then(|mut s| s.pop())
        .unwrap_or_default();
    b.clear();
    b.reserve_exact(size);
    b
}

/// Give a buffer back, unless enough are waiting already.
fn give_spare(spare: &Spare, b: Vec<u8>) {
    if let Ok(mut s) = spare.lock()
        && s.len() < AHEAD_FRAMES + 2
    {
        s.push(b);
    }
}

/// Plaintext of a frame, and whether more of the same frame follows.
struct Piece {
    bytes: Vec<u8>,
    more: bool,
}

/// A frame decoded ahead in one call at most this large (larger ones, in
/// artifacts not written by the harness, are walked on one thread).
const AHEAD_FRAME_MAX: u64 = 16 << 20;

/// Forward reads in a row after which decoding moves to a thread.
const AHEAD_AFTER: u32 = 8;
/// Chunks a thread may decode ahead of the reader.
const AHEAD_CHUNKS: usize = 8;
/// Whole frames a thread may decode ahead of the reader (a frame is
/// usually a few hundred kilobytes: memory stays a small window).
const AHEAD_FRAMES: usize = 3;

/// A Zstandard decoder reading a file from a frame start on.
struct Decoding {
    file: File,
    dec: zstd::stream::raw::Decoder<'static>,
    input: Vec<u8>,
    in_pos: usize,
    /// Whether the decoder is inside a frame (else the next byte of input
    /// starts one).
    in_frame: bool,
    /// A frame failed to decode: what it gave is all there is.
    failed: bool,
}

impl Decoding {
    fn at(path: &Path, physical: u64) -> io::Result<Decoding> {
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(physical))?;
        Ok(Decoding {
            file,
            dec: zstd::stream::raw::Decoder::new()?,
            input: Vec::new(),
            in_pos: 0,
            in_frame: false,
            failed: false,
        })
    }

    /// Decode up to `room` more bytes onto `out`; `false` at the end of the
    /// artifact (or of what it holds that decodes).
    fn more(&mut self, out: &mut Vec<u8>, room: usize) -> io::Result<bool> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        if self.failed {
            return Ok(false);
        }
        loop {
            if self.in_pos == self.input.len() {
                self.input.resize(INPUT, 0);
                let n = loop {
                    match self.file.read(&mut self.input) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                };
                self.input.truncate(n);
                self.in_pos = 0;
                if n == 0 {
                    return Ok(false);
                }
            }
            if !self.in_frame {
                self.dec.reinit()?;
                self.in_frame = true;
            }
            let old = out.len();
            // Into the spare capacity, which is never zeroed first.
            out.reserve_exact(room);
            let mut input = InBuffer::around(&self.input[self.in_pos..]);
            let mut output = OutBuffer::around_pos(out, old);
            let r = self.dec.run(&mut input, &mut output);
            let (read, written) = (input.pos(), output.pos() - old);
            self.in_pos += read;
            match r {
                Err(_) => {
                    self.failed = true;
                    return Ok(written > 0);
                }
                Ok(0) => self.in_frame = false,
                Ok(_) => {}
            }
            if written > 0 {
                return Ok(true);
            }
        }
    }
}

fn changed() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the log changed while it was being read",
    )
}

impl ZstdCursor {
    pub(crate) fn open(path: &Path, frames: FrameTable) -> io::Result<ZstdCursor> {
        let whole = frames.lock().map_err(|_| changed())?.whole.clone();
        Ok(ZstdCursor {
            path: path.to_path_buf(),
            frames,
            whole,
            stream: Stream::Here(Box::new(Decoding::at(path, 0)?)),
            at: 0,
            out: Vec::new(),
            live: false,
            forwards: 0,
        })
    }

    /// `offset .. offset + len` of the kept plaintext, if it was kept.
    fn in_whole(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let w = self.whole.as_ref()?;
        let end = offset.checked_add(len as u64)?;
        (end <= w.len() as u64).then(|| &w[offset as usize..end as usize])
    }

    /// Whether `offset .. offset + len` is in the window.
    pub(crate) fn holds(&self, offset: u64, len: usize) -> bool {
        self.in_whole(offset, len).is_some()
            || (offset >= self.at && offset + len as u64 <= self.at + self.out.len() as u64)
    }

    /// The window's bytes `offset .. offset + len` (see [`Self::holds`]).
    pub(crate) fn slice(&self, offset: u64, len: usize) -> &[u8] {
        if let Some(b) = self.in_whole(offset, len) {
            return b;
        }
        let start = (offset - self.at) as usize;
        &self.out[start..start + len]
    }

    /// Make the window start at `offset` and hold at least `min` bytes, and
    /// up to `want` when the plaintext goes on that far.
    pub(crate) fn fill(&mut self, offset: u64, min: usize, want: usize) -> io::Result<()> {
        if self.in_whole(offset, min).is_some() {
            return Ok(());
        }
        let want = want.max(min);
        let end = self.at + self.out.len() as u64;
        let forward = self.live && offset >= self.at;
        // Behind the window means starting again at the frame that holds
        // `offset`; far ahead of it too, unless that frame is the one being
        // decoded (then going on is shorter).
        let restart = !forward || (offset > end + FAR && self.frame_of(offset)?.plain > end);
        let ahead = matches!(self.stream, Stream::Ahead(_));
        if restart {
            self.forwards = 0;
        } else {
            self.forwards += 1;
        }
        if restart || (!ahead && self.forwards == AHEAD_AFTER) {
            // A walk in log order goes on decoding ahead; a jump decodes here.
            let frame = self.frame_of(offset)?;
            self.restart(frame, !restart)?;
        }
        // Drop what lies before `offset`, decoding past it if need be.
        loop {
            let end = self.at + self.out.len() as u64;
            if offset <= end {
                // Dropping moves what follows, so it waits until what lies
                // before `offset` is at least what lies after: a walk
                // through the window moves each byte once at most, not once
                // per line read (which was a quarter of a zstd compaction).
                let cut = (offset - self.at) as usize;
                if cut > 0 && cut >= self.out.len() - cut {
                    self.out.drain(..cut);
                    self.at = offset;
                }
                break;
            }
            self.out.clear();
            self.at = end;
            if !self.decode_more(STEP)? {
                return Err(changed());
            }
        }
        // The bytes from `offset` on.
        let held = |c: &Self| c.out.len() - (offset - c.at) as usize;
        while held(self) < want {
            let room = (want - held(self)).min(STEP);
            if !self.decode_more(room)? {
                if held(self) >= min {
                    break;
                }
                return Err(changed());
            }
        }
        Ok(())
    }

    /// Copy `len` bytes from `offset` into `buf`.
    pub(crate) fn read(&mut self, offset: u64, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
        self.fill(offset, len, len)?;
        buf.clear();
        buf.extend_from_slice(self.slice(offset, len));
        Ok(())
    }

    fn frame_of(&self, offset: u64) -> io::Result<FrameAt> {
        let frames = self.frames.lock().map_err(|_| changed())?;
        let i = frames.starts.partition_point(|f| f.plain <= offset);
        if i == 0 {
            return Err(changed());
        }
        Ok(frames.starts[i - 1])
    }

    fn restart(&mut self, frame: FrameAt, ahead: bool) -> io::Result<()> {
        self.stream = if ahead {
            Stream::Ahead(self.decode_ahead(frame)?)
        } else {
            Stream::Here(Box::new(Decoding::at(&self.path, frame.physical)?))
        };
        self.at = frame.plain;
        self.out.clear();
        self.live = true;
        Ok(())
    }

    /// Start decoding ahead from `frame` on threads: every frame whose end
    /// the table knows in one call each, side by side; the last one the
    /// table knows (which may run to more frames, or be torn) streamed to
    /// the end of the file.
    fn decode_ahead(&self, frame: FrameAt) -> io::Result<AheadFrames> {
        let frames: Vec<FrameAt> = {
            let table = self.frames.lock().map_err(|_| changed())?;
            let i = table.starts.partition_point(|f| f.plain < frame.plain);
            table.starts[i..].to_vec()
        };
        let whole = frames
            .windows(2)
            .all(|w| w[1].plain - w[0].plain <= AHEAD_FRAME_MAX && w[1].physical > w[0].physical);
        let threads = if whole && frames.len() > 2 {
            crate::par::cores().clamp(1, 4)
        } else {
            1
        };
        let frames = Arc::new(frames);
        if !whole {
            let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD_CHUNKS);
            let path = self.path.clone();
            std::thread::Builder::new()
                .name("dsh-unzstd".into())
                .spawn(move || stream_to_end(&path, frame, &tx))?;
            return Ok(AheadFrames {
                queues: vec![rx],
                next: 0,
                spare: Spare::default(),
            });
        }
        let mut queues = Vec::with_capacity(threads);
        let spare = Spare::default();
        for t in 0..threads {
            let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD_FRAMES);
            let (frames, path, spare) = (frames.clone(), self.path.clone(), spare.clone());
            std::thread::Builder::new()
                .name("dsh-unzstd".into())
                .spawn(move || decode_frames(&path, &frames, t, threads, &spare, &tx))?;
            queues.push(rx);
        }
        Ok(AheadFrames {
            queues,
            next: 0,
            spare,
        })
    }

    /// Decode up to `room` more bytes onto the window (a whole chunk when
    /// decoding ahead); `false` at the end of the artifact (or of what it
    /// holds that decodes).
    fn decode_more(&mut self, room: usize) -> io::Result<bool> {
        match &mut self.stream {
            Stream::Here(d) => {
                let more = d.more(&mut self.out, room)?;
                if d.failed {
                    self.live = false;
                }
                Ok(more)
            }
            Stream::Ahead(a) => match a.queues[a.next].recv() {
                Ok(Ok(piece)) => {
                    if !piece.more {
                        a.next = (a.next + 1) % a.queues.len();
                    }
                    // Copied onto the window (which keeps its capacity);
                    // the frame's buffer goes back to be decoded into.
                    self.out.extend_from_slice(&piece.bytes);
                    give_spare(&a.spare, piece.bytes);
                    Ok(true)
                }
                Ok(Err(e)) => {
                    self.live = false;
                    Err(e)
                }
                // The thread is done: the artifact ended (or stopped
                // decoding, which the next fill starts again from).
                Err(_) => {
                    self.live = false;
                    Ok(false)
                }
            },
        }
    }
}

/// Thread `t` of `threads`: decode frames `t`, `t + threads`, … of
/// `frames` in turn onto `tx`, each in one call into a buffer of its known
/// size; the last frame (whose end the table does not know) is streamed to
/// the end of the file. Stops when the reader goes away.
fn decode_frames(
    path: &Path,
    frames: &[FrameAt],
    t: usize,
    threads: usize,
    spare: &Spare,
    tx: &std::sync::mpsc::SyncSender<io::Result<Piece>>,
) {
    let mut file = None;
    let mut input = Vec::new();
    let mut dec = None;
    let mut i = t;
    while i < frames.len() {
        if i + 1 == frames.len() {
            stream_to_end(path, frames[i], tx);
            return;
        }
        let (f, next) = (frames[i], frames[i + 1]);
        let whole = (|| -> io::Result<Vec<u8>> {
            let file = match &mut file {
                Some(f) => f,
                None => file.insert(File::open(path)?),
            };
            input.resize((next.physical - f.physical) as usize, 0);
            std::os::unix::fs::FileExt::read_exact_at(&*file, &mut input, f.physical)?;
            let dec = match &mut dec {
                Some(d) => d,
                None => dec.insert(zstd::bulk::Decompressor::new()?),
            };
            let size = (next.plain - f.plain) as usize;
            let mut out = take_spare(spare, size);
            let n = dec.decompress_to_buffer(&input, &mut out)?;
            if n != size {
                return Err(changed());
            }
            Ok(out)
        })();
        let piece = whole.map(|bytes| Piece { bytes, more: false });
        let failed = piece.is_err();
        if tx.send(piece).is_err() || failed {
            return;
        }
        i += threads;
    }
}

/// The rest of an artifact from `frame` on, in chunks (the last piece not
/// marked `more`).
fn stream_to_end(path: &Path, frame: FrameAt, tx: &std::sync::mpsc::SyncSender<io::Result<Piece>>) {
    let mut decoding = match Decoding::at(path, frame.physical) {
        Ok(d) => d,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let mut held: Option<Vec<u8>> = None;
    loop {
        let mut chunk = Vec::with_capacity(STEP);
        match decoding.more(&mut chunk, STEP) {
            Ok(true) => {
                if let Some(prev) = held.replace(chunk)
                    && tx
                        .send(Ok(Piece {
                            bytes: prev,
                            more: true,
                        }))
                        .is_err()
                {
                    return;
                }
            }
            Ok(false) => break,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
    let _ = tx.send(Ok(Piece {
        bytes: held.unwrap_or_default(),
        more: false,
    }));
}

/// Node lines read again for the surface fold's rule R16.
#[derive(Debug)]
pub(crate) struct PlainLines(pub PathBuf);

impl crate::surface::NodeLines for PlainLines {
    fn line_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut line = vec![0u8; len];
        let mut f = File::open(&self.0)?;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(&mut line)?;
        Ok(line)
    }
}

/// The same for an artifact: a fresh cursor per line (the rule is rare).
pub(crate) struct ZstdLines {
    pub path: PathBuf,
    pub frames: FrameTable,
}

impl std::fmt::Debug for ZstdLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZstdLines")
            .field("path", &self.path)
            .finish()
    }
}

impl crate::surface::NodeLines for ZstdLines {
    fn line_at(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut c = ZstdCursor::open(&self.path, self.frames.clone())?;
        let mut line = Vec::with_capacity(len);
        c.read(offset, &mut line, len)?;
        Ok(line)
    }
}

/// A caller's handle for reading node bodies again, kept across calls so
/// that the file is opened (and an artifact's decoder set up) once.
/// Start with `None`; [`super::LoadedLog::read_body`] fills it.
pub struct Reread(pub(crate) Source);

pub(crate) enum Source {
    Plain(File),
    Zstd(Box<ZstdCursor>),
}

impl std::fmt::Debug for Reread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Source::Plain(_) => "Reread(plain)",
            Source::Zstd(_) => "Reread(zstd)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// An artifact of `frames` frames, each of `lines` numbered lines.
    fn artifact(frames: usize, lines: usize) -> (tempfile::NamedTempFile, Vec<u8>, FrameTable) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut plain = Vec::new();
        let mut table = Vec::new();
        let mut physical = 0u64;
        for fi in 0..frames {
            let mut p = Vec::new();
            for li in 0..lines {
                writeln!(
                    p,
                    "{{\"frame\":{fi},\"line\":{li},\"pad\":\"{}\"}}",
                    "x".repeat(li * 37 % 500)
                )
                .unwrap();
            }
            let z = zstd::bulk::compress(&p, 3).unwrap();
            table.push(FrameAt {
                physical,
                plain: plain.len() as u64,
            });
            physical += z.len() as u64;
            f.write_all(&z).unwrap();
            plain.extend_from_slice(&p);
        }
        (
            f,
            plain,
            Arc::new(Mutex::new(Frames {
                starts: table,
                whole: None,
            })),
        )
    }

    #[test]
    fn spans_read_again_in_any_order_match_the_plaintext() {
        let (f, plain, table) = artifact(7, 300);
        let mut c = ZstdCursor::open(f.path(), table).unwrap();
        let mut buf = Vec::new();
        // Forwards, backwards, across frame boundaries, long jumps.
        let total = plain.len() as u64;
        let mut rng = crate::test_rng::Lcg(12345);
        for _ in 0..400 {
            let x = rng.step();
            let off = (x >> 20) % total;
            let len = ((x >> 8) % 5000).min(total - off) as usize;
            c.read(off, &mut buf, len).unwrap();
            assert_eq!(buf, &plain[off as usize..off as usize + len], "{off}+{len}");
        }
        // A window reaching past the end stops at the end.
        c.fill(total - 10, 10, 1 << 20).unwrap();
        assert!(c.holds(total - 10, 10) && !c.holds(total - 10, 11));
        // Past the end is an error, not a panic.
        assert!(c.read(total - 5, &mut buf, 10).is_err());
    }

    #[test]
    fn a_walk_in_log_order_keeps_the_window_bounded() {
        let (f, plain, table) = artifact(12, 400);
        let frame = plain.len() / 12;
        let mut c = ZstdCursor::open(f.path(), table).unwrap();
        let mut buf = Vec::new();
        let (mut off, mut prev, mut most) = (0usize, 0usize, 0usize);
        while off < plain.len() {
            let len = plain[off..].iter().position(|&b| b == b'\n').unwrap();
            c.read(off as u64, &mut buf, len).unwrap();
            assert_eq!(buf, &plain[off..off + len], "{off}");
            // A step back to the line before is read from the window too.
            c.read(prev as u64, &mut buf, off - prev).unwrap();
            assert_eq!(buf, &plain[prev..off], "back to {prev}");
            most = most.max(c.out.len());
            prev = off;
            off += len + 1;
        }
        // What lies behind the reads is dropped once it is half the window.
        assert!(
            most <= 2 * (frame + STEP),
            "{most} bytes held, frames of {frame}"
        );
    }

    /// Read the artifact at `path` to its end, as the loader does; gives
    /// its frame table.
    fn read_through(path: &Path) -> FrameTable {
        let src = super::super::LogSource::File(path.to_path_buf());
        let (mut r, _header) =
            super::super::reader::LineReader::open(&src, Default::default()).unwrap();
        while r.next_line().unwrap().is_some() {}
        r.frame_table().unwrap()
    }

    /// A header frame, then `frames` frames of numbered lines.
    fn headed_artifact(
        frames: usize,
        lines: usize,
        pad: usize,
    ) -> (tempfile::NamedTempFile, Vec<u8>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut plain = b"{\"header\":1}\n".to_vec();
        f.write_all(&zstd::bulk::compress(&plain, 3).unwrap())
            .unwrap();
        for fi in 0..frames {
            let mut p = Vec::new();
            for li in 0..lines {
                writeln!(
                    p,
                    "{{\"frame\":{fi},\"line\":{li},\"pad\":\"{}\"}}",
                    "y".repeat(pad)
                )
                .unwrap();
            }
            f.write_all(&zstd::bulk::compress(&p, 3).unwrap()).unwrap();
            plain.extend_from_slice(&p);
        }
        (f, plain)
    }

    #[test]
    fn a_small_artifact_read_to_its_end_is_read_again_from_memory() {
        let (f, plain) = headed_artifact(5, 40, 30);
        let table = read_through(f.path());
        assert_eq!(table.lock().unwrap().whole.as_deref(), Some(&plain));
        let mut c = ZstdCursor::open(f.path(), table).unwrap();
        // The file's bytes are no longer asked for: spans come from memory.
        std::fs::write(f.path(), b"").unwrap();
        let mut buf = Vec::new();
        for (off, len) in [(0u64, 14usize), (200, 900), (plain.len() as u64 - 50, 50)] {
            c.read(off, &mut buf, len).unwrap();
            assert_eq!(buf, &plain[off as usize..off as usize + len]);
            assert!(c.holds(off, len));
        }
        // Past the end is still an error, not a panic.
        assert!(c.read(plain.len() as u64 - 5, &mut buf, 10).is_err());
    }

    #[test]
    fn a_large_artifact_is_not_kept_whole() {
        let (f, plain) = headed_artifact(3, 2000, (KEEP_WHOLE / 5000).max(1));
        assert!(plain.len() > KEEP_WHOLE);
        let table = read_through(f.path());
        assert!(table.lock().unwrap().whole.is_none());
        let mut c = ZstdCursor::open(f.path(), table).unwrap();
        let mut buf = Vec::new();
        let off = plain.len() as u64 / 2;
        c.read(off, &mut buf, 1000).unwrap();
        assert_eq!(buf, &plain[off as usize..off as usize + 1000]);
    }

    #[test]
    fn a_window_walks_the_artifact_in_order() {
        let (f, plain, table) = artifact(3, 2000);
        let mut c = ZstdCursor::open(f.path(), table).unwrap();
        let mut at = 0u64;
        let mut seen = Vec::new();
        while at < plain.len() as u64 {
            c.fill(at, 1, 64 << 10).unwrap();
            let n = (c.at + c.out.len() as u64 - at) as usize;
            seen.extend_from_slice(c.slice(at, n));
            at += n as u64;
        }
        assert_eq!(seen, plain);
    }

    #[test]
    fn frames_decoded_side_by_side_come_back_in_order() {
        // Many small frames: the walk goes ahead on several threads, and
        // jumps back and forth restart it.
        let (f, plain, table) = artifact(41, 60);
        let mut c = ZstdCursor::open(f.path(), table).unwrap();
        for start in [0u64, plain.len() as u64 / 3, 17] {
            let mut at = start;
            let mut seen = Vec::new();
            let mut went_ahead = false;
            while at < plain.len() as u64 {
                c.fill(at, 1, 3000).unwrap();
                went_ahead |= matches!(&c.stream, Stream::Ahead(a) if a.queues.len() > 1);
                let n = ((c.at + c.out.len() as u64 - at) as usize).min(2500);
                seen.extend_from_slice(c.slice(at, n));
                at += n as u64;
            }
            assert!(went_ahead || crate::par::cores() == 1);
            assert_eq!(seen, &plain[start as usize..], "from {start}");
        }
    }
}
