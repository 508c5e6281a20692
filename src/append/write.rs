//! Putting a validated batch into the file: plain JSONL units that become
//! visible all at once, or one Zstandard frame; rolled back on any error.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::event::{Kind, OwnedEvent};
use crate::json::Value;
use crate::log::Container;

use super::AppendError;

/// The physical file being appended to.
pub(super) struct Sink {
    pub(super) file: File,
    pub(super) path: PathBuf,
}

/// Low-level write operations, so tests can make them fail.
pub(super) trait WriteOps {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()>;
    fn sync(&mut self) -> io::Result<()>;
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl WriteOps for File {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.sync_all()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// One batch, encoded.
pub(super) enum Payload {
    /// Plain JSONL units (each made of complete lines).
    Units(Vec<Vec<u8>>),
    /// One Zstandard frame.
    Frame(Vec<u8>),
}

pub(super) fn pause(p: Option<Duration>) {
    if let Some(d) = p {
        std::thread::sleep(d);
    }
}

/// Write `buf` at `offset`; with a debug pause, in four pieces.
pub(super) fn write_paced(
    ops: &mut dyn WriteOps,
    buf: &[u8],
    offset: u64,
    p: Option<Duration>,
) -> io::Result<()> {
    if p.is_none() || buf.len() < 4 {
        return ops.write_at(buf, offset);
    }
    let step = buf.len().div_ceil(4);
    for (i, piece) in buf.chunks(step).enumerate() {
        ops.write_at(piece, offset + (i * step) as u64)?;
        pause(p);
    }
    Ok(())
}

/// The write protocol (module docs). Returns the new length, or the error
/// of the step that failed.
pub(super) fn write_payload(
    ops: &mut dyn WriteOps,
    offset: u64,
    payload: &Payload,
    p: Option<Duration>,
) -> Result<u64, (&'static str, io::Error)> {
    match payload {
        Payload::Units(units) => {
            let mut at = offset;
            for unit in units {
                // Body first, with the first byte left as a hole: invisible.
                write_paced(ops, &unit[1..], at + 1, p).map_err(|e| ("append to the log", e))?;
                ops.sync().map_err(|e| ("fsync the log", e))?;
                pause(p);
                // One byte makes the whole unit visible at once.
                ops.write_at(&unit[..1], at)
                    .map_err(|e| ("append to the log", e))?;
                pause(p);
                ops.sync().map_err(|e| ("fsync the log", e))?;
                at += unit.len() as u64;
            }
            Ok(at)
        }
        Payload::Frame(frame) => {
            write_paced(ops, frame, offset, p).map_err(|e| ("append to the log", e))?;
            pause(p);
            ops.sync().map_err(|e| ("fsync the log", e))?;
            Ok(offset + frame.len() as u64)
        }
    }
}

/// Write, or cut the file back to `offset` and say why not.
pub(super) fn commit(
    ops: &mut dyn WriteOps,
    path: &Path,
    offset: u64,
    payload: &Payload,
    p: Option<Duration>,
) -> Result<u64, AppendError> {
    match write_payload(ops, offset, payload, p) {
        Ok(len) => Ok(len),
        Err((op, source)) => match ops.truncate(offset).and_then(|_| ops.sync()) {
            Ok(()) => Err(AppendError::Io {
                path: path.to_path_buf(),
                op,
                len: offset,
                source,
            }),
            Err(rollback) => Err(AppendError::RollbackFailed {
                path: path.to_path_buf(),
                op,
                len: offset,
                source,
                rollback,
            }),
        },
    }
}

/// Why a batch could not be encoded.
#[derive(Debug)]
pub(super) enum EncodeError {
    /// The compressor failed.
    Io(io::Error),
    /// No Zstandard layout keeps every crash cut safe (see [`super::frame`]).
    Unsafe(super::frame::Unsafe),
}

/// Encode a batch: JSONL lines, split into units before every `turn/end`
/// that is not first in its unit (plain), or one frame whose every crash
/// cut ends at a safe point (Zstandard, [`super::frame`]).
pub(super) fn encode(
    events: &[OwnedEvent],
    container: Container,
) -> Result<(Payload, u64), EncodeError> {
    let mut units: Vec<Vec<u8>> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut lens: Vec<usize> = Vec::with_capacity(events.len());
    let mut total = 0u64;
    for ev in events {
        if ev.kind == Kind::TurnEnd && !cur.is_empty() {
            units.push(std::mem::take(&mut cur));
        }
        let line = ev.value.to_json();
        debug_assert!(!line.contains('\n'));
        cur.extend_from_slice(line.as_bytes());
        cur.push(b'\n');
        lens.push(line.len() + 1);
        total += line.len() as u64 + 1;
    }
    if !cur.is_empty() {
        units.push(cur);
    }
    match container {
        Container::Plain => Ok((Payload::Units(units), total)),
        Container::Zstd => {
            let plain: Vec<u8> = units.concat();
            let atomic = super::frame::units(events, &lens);
            let frame = super::frame::safe_frame(&plain, &atomic)
                .map_err(EncodeError::Unsafe)?
                .map_err(EncodeError::Io)?;
            Ok((Payload::Frame(frame), total))
        }
    }
}

/// One complete, checksummed Zstandard frame (level 3, as Node's default).
pub fn zstd_frame(plain: &[u8]) -> io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(zstd::DEFAULT_COMPRESSION_LEVEL)?;
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    c.compress(plain)
}

/// Seq of the last record in a block of complete JSONL lines (rows count
/// their last member), or `None` when the last line is the header.
pub(super) fn last_record_seq(plain: &[u8]) -> Option<u64> {
    let body = plain.strip_suffix(b"\n")?;
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let v = Value::parse(std::str::from_utf8(&body[start..]).ok()?).ok()?;
    if let Some(s) = v.get("seq").and_then(|s| s.as_count()) {
        return Some(s);
    }
    let row = crate::log::packed::check(&v).ok()?;
    Some(row.seq0 + row.count - 1)
}
