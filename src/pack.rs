//! Container conversion: a plain JSONL log to the harness's multi-frame
//! Zstandard artifact and back.
//!
//! The harness stores a session as `session.jsonl.zstd`: a first frame that
//! holds exactly the header line, then one complete, checksummed frame per
//! append batch (session-log §2). [`pack`] writes that layout from any log
//! (a plain log has no record of its append batches, so a turn — the lines
//! up to and including its `turn/end` — stands in for one, or a fixed
//! number of lines); [`unpack`] writes the lines back as plain JSONL.
//! Both stream: one frame's plaintext is the most either holds.
//!
//! Neither looks inside events beyond finding `turn/end` lines: a log that
//! the loader would refuse for what its events say is converted as it is,
//! byte for byte (`unpack(pack(log)) == log`). What they refuse is what
//! cannot be converted faithfully: no header line, a torn last line (it
//! would be dropped), or a line over the reader's limits.

use std::io::{self, Write};

use crate::json::Value;
use crate::log::reader::{Container, Limits, LineReader};
use crate::log::{LoadError, LogSource};

/// How [`pack`] groups lines into frames after the header frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// One frame per turn: a frame ends after each `turn/end` line (and at
    /// the end of the log).
    Turns,
    /// One frame per this many lines (at least 1).
    Lines(usize),
}

/// What a conversion read and wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Converted {
    /// Lines, the header included.
    pub lines: u64,
    /// Zstandard frames read ([`unpack`]) or written ([`pack`]); 0 for a
    /// plain input to [`unpack`].
    pub frames: u64,
    /// Plaintext bytes (the JSONL size).
    pub plain_bytes: u64,
    /// Bytes written.
    pub written_bytes: u64,
    /// The input's container.
    pub input: Option<Container>,
}

/// Why a conversion stopped.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The input could not be read as a log (or broke a reader limit).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The input ends in a torn line, which a conversion would drop.
    #[error(
        "the log ends in a torn line ({len} byte(s) at byte {offset} of its plaintext); \
         converting would drop it: see `dsh load` for what a reader makes of it, \
         and `dsh repair` to cut it off"
    )]
    TornTail {
        /// Plaintext offset of the torn line.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// The input's last Zstandard frame was cut short (a crash or a writer
    /// mid-write).
    #[error(
        "the last Zstandard frame is cut short ({} byte(s) at file byte {whole_end}); converting would keep only part of it: `dsh repair` cuts the file back to its last whole frame (file byte {whole_end}) first",
        file_len - whole_end
    )]
    CutFrame {
        /// File offset where the last whole frame ends.
        whole_end: u64,
        /// The file's length.
        file_len: u64,
    },
    /// Compressing or writing failed.
    #[error("cannot write the output: {0}")]
    Write(#[source] io::Error),
}

/// The Zstandard level the harness's writer uses (Node's default).
const LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// Write `source` to `out` as a multi-frame artifact: the header line alone
/// in the first frame, then one frame per batch of lines.
pub fn pack(
    source: &LogSource,
    limits: Limits,
    batching: Batching,
    out: &mut dyn Write,
) -> Result<Converted, PackError> {
    let (mut reader, header) = LineReader::open(source, limits)?;
    let mut c = compressor().map_err(PackError::Write)?;
    let mut done = Converted {
        lines: 1,
        input: Some(reader.container()),
        ..Converted::default()
    };
    let mut plain = Vec::with_capacity(header.len() + 1);
    plain.extend_from_slice(&header);
    plain.push(b'\n');
    let mut emit = |plain: &mut Vec<u8>, done: &mut Converted| -> Result<(), PackError> {
        let frame = c.compress(plain).map_err(PackError::Write)?;
        out.write_all(&frame).map_err(PackError::Write)?;
        done.frames += 1;
        done.plain_bytes += plain.len() as u64;
        done.written_bytes += frame.len() as u64;
        plain.clear();
        Ok(())
    };
    emit(&mut plain, &mut done)?;
    let mut in_frame = 0usize;
    while let Some(line) = reader.next_line()? {
        plain.extend_from_slice(line.bytes);
        plain.push(b'\n');
        done.lines += 1;
        in_frame += 1;
        let end = match batching {
            Batching::Lines(n) => in_frame >= n.max(1),
            Batching::Turns => ends_turn(line.bytes),
        };
        if end {
            emit(&mut plain, &mut done)?;
            in_frame = 0;
        }
    }
    if let Some(c) = reader.cut_frame() {
        return Err(PackError::CutFrame {
            whole_end: c.whole_end,
            file_len: c.file_len,
        });
    }
    if let Some(t) = reader.torn_tail() {
        return Err(PackError::TornTail {
            offset: t.offset,
            len: t.len,
        });
    }
    if !plain.is_empty() {
        emit(&mut plain, &mut done)?;
    }
    out.flush().map_err(PackError::Write)?;
    Ok(done)
}

/// Write the lines of `source` (an artifact, or a plain log) to `out` as
/// plain JSONL.
pub fn unpack(
    source: &LogSource,
    limits: Limits,
    out: &mut dyn Write,
) -> Result<Converted, PackError> {
    let (mut reader, header) = LineReader::open(source, limits)?;
    let container = reader.container();
    let mut done = Converted {
        lines: 1,
        input: Some(container),
        ..Converted::default()
    };
    let mut w = io::BufWriter::with_capacity(256 << 10, out);
    let mut put = |bytes: &[u8], done: &mut Converted| -> Result<(), PackError> {
        w.write_all(bytes)
            .and_then(|_| w.write_all(b"\n"))
            .map_err(PackError::Write)?;
        done.plain_bytes += bytes.len() as u64 + 1;
        Ok(())
    };
    put(&header, &mut done)?;
    while let Some(line) = reader.next_line()? {
        put(line.bytes, &mut done)?;
        done.lines += 1;
    }
    if let Some(c) = reader.cut_frame() {
        return Err(PackError::CutFrame {
            whole_end: c.whole_end,
            file_len: c.file_len,
        });
    }
    if let Some(t) = reader.torn_tail() {
        return Err(PackError::TornTail {
            offset: t.offset,
            len: t.len,
        });
    }
    w.flush().map_err(PackError::Write)?;
    done.written_bytes = done.plain_bytes;
    if container == Container::Zstd {
        done.frames = reader.frames_read();
    }
    Ok(done)
}

fn compressor() -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut c = zstd::bulk::Compressor::new(LEVEL)?;
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    Ok(c)
}

/// Whether a line is a `turn/end` event. The substring test keeps the
/// common case to one scan; only a line that mentions it is parsed.
fn ends_turn(line: &[u8]) -> bool {
    if memchr::memmem::find(line, b"turn/end").is_none() {
        return false;
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return false;
    };
    Value::parse(text)
        .ok()
        .and_then(|v| {
            v.get("type")
                .and_then(|t| t.as_str())
                .map(|t| t == "turn/end")
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_bytes() -> Vec<u8> {
        let mut s =
            String::from("{\"version\":2,\"id\":\"s\",\"createdAt\":1,\"delegationDepth\":0}\n");
        for t in 1..=3 {
            s.push_str(&format!(
                "{{\"seq\":{},\"time\":1,\"type\":\"turn/start\",\"data\":{{\"turn\":{t}}}}}\n",
                t * 2 - 1
            ));
            s.push_str(&format!(
                "{{\"seq\":{},\"time\":1,\"type\":\"turn/end\",\"data\":{{\"turn\":{t}}}}}\n",
                t * 2
            ));
        }
        s.into_bytes()
    }

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn a_turn_is_a_frame_and_unpack_gives_the_bytes_back() {
        let plain = log_bytes();
        let f = file_with(&plain);
        let mut packed = Vec::new();
        let src = LogSource::File(f.path().into());
        let p = pack(&src, Limits::default(), Batching::Turns, &mut packed).unwrap();
        assert_eq!((p.lines, p.frames), (7, 4));
        assert_eq!(p.plain_bytes, plain.len() as u64);
        // Every frame decodes on its own; the first holds the header only.
        let (end, exact) = crate::log::reader::complete_frames_end(&packed);
        assert!(exact && end == packed.len() as u64);
        let first = zstd::zstd_safe::find_frame_compressed_size(&packed).unwrap();
        let head = zstd::stream::decode_all(&packed[..first]).unwrap();
        assert_eq!(
            head,
            plain[..plain.iter().position(|&b| b == b'\n').unwrap() + 1]
        );

        let z = file_with(&packed);
        let mut back = Vec::new();
        let u = unpack(
            &LogSource::File(z.path().into()),
            Limits::default(),
            &mut back,
        )
        .unwrap();
        assert_eq!(back, plain);
        assert_eq!((u.lines, u.frames), (7, 4));
    }

    #[test]
    fn fixed_batches_and_a_torn_tail() {
        let plain = log_bytes();
        let f = file_with(&plain);
        let mut packed = Vec::new();
        let src = LogSource::File(f.path().into());
        let p = pack(&src, Limits::default(), Batching::Lines(4), &mut packed).unwrap();
        assert_eq!(p.frames, 3); // header, 4 lines, 2 lines

        let mut torn = plain.clone();
        torn.extend_from_slice(b"{\"seq\":7,");
        let t = file_with(&torn);
        let e = pack(
            &LogSource::File(t.path().into()),
            Limits::default(),
            Batching::Turns,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(matches!(e, PackError::TornTail { len: 9, .. }), "{e}");
    }
}
