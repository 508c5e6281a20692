//! Putting a validated batch into the file: plain JSONL units that become
//! visible all at once, or one Zstandard frame; rolled back on any error.
//!
//! Bytes go through an `O_APPEND` descriptor, so they can only ever land at
//! the end of the file: a program that appends without the writer lock (a
//! running harness) between dsh's length check and its write is never
//! overwritten. After every write dsh checks where its bytes landed (the
//! file must end exactly where they end, and read back as written); on any
//! surprise it removes only its own bytes, and only when nothing follows
//! them, otherwise it leaves them in place; either way the write fails with
//! [`AppendError::Interleaved`] (exit 4). The one positional write is the
//! first byte of a plain unit, into the placeholder dsh itself appended.

use std::borrow::Borrow;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::event::{Kind, OwnedEvent};
use crate::json::Value;
use crate::log::Container;

use super::AppendError;

/// The physical file being appended to: one descriptor opened for append
/// (every new byte), one for reading back, the placeholder byte and the
/// roll-back.
pub(super) struct Sink {
    pub(super) file: File,
    pub(super) append: File,
    pub(super) path: PathBuf,
}

/// Low-level write operations, so tests can make them fail.
pub(super) trait WriteOps {
    /// Append `buf` at the end of the file (wherever that is now).
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Overwrite bytes at `offset` (only ever dsh's own placeholder).
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Read `buf.len()` bytes at `offset` (short at the end of the file).
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The file's length now.
    fn len(&mut self) -> io::Result<u64>;
    fn sync(&mut self) -> io::Result<()>;
    fn truncate(&mut self, len: u64) -> io::Result<()>;
}

impl WriteOps for Sink {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        // One write call where possible: with O_APPEND the kernel places it
        // at the end as a whole.
        io::Write::write_all(&mut self.append, buf)
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(&self.file, buf, offset)
    }
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match FileExt::read_at(&self.file, &mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }
    fn len(&mut self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
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

/// How a write went wrong.
#[derive(Debug)]
pub(super) enum Fail {
    /// An I/O step failed.
    Io(&'static str, io::Error),
    /// Another program changed the file meanwhile (what dsh saw).
    Foreign(String),
}

/// Where dsh's own bytes are: `[start, end)` holds only bytes dsh appended
/// and read back, and `last` is the piece being written after them.
struct Mine<'b> {
    start: u64,
    end: u64,
    last: &'b [u8],
}

fn io(op: &'static str) -> impl FnOnce(io::Error) -> Fail {
    move |e| Fail::Io(op, e)
}

/// Whether the file holds exactly `want` at `offset`.
fn holds(ops: &mut dyn WriteOps, offset: u64, want: &[u8]) -> io::Result<bool> {
    let mut got = vec![0u8; want.len()];
    let n = ops.read_at(&mut got, offset)?;
    Ok(n == want.len() && got == want)
}

/// Append one piece right after dsh's bytes so far, and check that it
/// landed there and nothing else did.
fn append_piece<'b>(
    ops: &mut dyn WriteOps,
    mine: &mut Mine<'b>,
    buf: &'b [u8],
) -> Result<(), Fail> {
    mine.last = &[];
    let now = ops.len().map_err(io("inspect the log"))?;
    if now != mine.end {
        return Err(Fail::Foreign(format!(
            "the file was {now} bytes where dsh expected {}",
            mine.end
        )));
    }
    mine.last = buf;
    ops.append(buf).map_err(io("append to the log"))?;
    let now = ops.len().map_err(io("inspect the log"))?;
    let want = mine.end + buf.len() as u64;
    if now != want || !holds(ops, mine.end, buf).map_err(io("read the log back"))? {
        return Err(Fail::Foreign(format!(
            "after dsh appended {} bytes at byte {}, the file was {now} bytes, not {want}, or did not hold them there",
            buf.len(),
            mine.end
        )));
    }
    mine.end = want;
    mine.last = &[];
    Ok(())
}

/// Append `buf`; with a debug pause, in four pieces.
fn append_paced<'b>(
    ops: &mut dyn WriteOps,
    mine: &mut Mine<'b>,
    buf: &'b [u8],
    p: Option<Duration>,
) -> Result<(), Fail> {
    if p.is_none() || buf.len() < 4 {
        return append_piece(ops, mine, buf);
    }
    for piece in buf.chunks(buf.len().div_ceil(4)) {
        append_piece(ops, mine, piece)?;
        pause(p);
    }
    Ok(())
}

/// The write protocol (module docs). Returns the new length.
fn write_payload_mine<'b>(
    ops: &mut dyn WriteOps,
    mine: &mut Mine<'b>,
    payload: &'b Payload,
    placeholders: &'b [Vec<u8>],
    p: Option<Duration>,
) -> Result<u64, Fail> {
    match payload {
        Payload::Units(units) => {
            for (unit, held) in units.iter().zip(placeholders) {
                let at = mine.end;
                // The unit with its first byte held back (a NUL): invisible.
                append_paced(ops, mine, held, p)?;
                ops.sync().map_err(io("fsync the log"))?;
                pause(p);
                // One byte, into dsh's own placeholder, makes the whole
                // unit visible at once.
                ops.write_at(&unit[..1], at)
                    .map_err(io("append to the log"))?;
                pause(p);
                ops.sync().map_err(io("fsync the log"))?;
                if ops.len().map_err(io("inspect the log"))? != mine.end {
                    return Err(Fail::Foreign(format!(
                        "bytes appeared after dsh's unit at byte {at}"
                    )));
                }
            }
            Ok(mine.end)
        }
        Payload::Frame(frame) => {
            append_paced(ops, mine, frame, p)?;
            pause(p);
            ops.sync().map_err(io("fsync the log"))?;
            if ops.len().map_err(io("inspect the log"))? != mine.end {
                return Err(Fail::Foreign(format!(
                    "bytes appeared after dsh's frame at byte {}",
                    mine.end - frame.len() as u64
                )));
            }
            Ok(mine.end)
        }
    }
}

/// Each plain unit with its first byte replaced by a NUL (a hole's value).
fn placeholders(payload: &Payload) -> Vec<Vec<u8>> {
    match payload {
        Payload::Units(units) => units
            .iter()
            .map(|u| {
                let mut h = u.clone();
                h[0] = 0;
                h
            })
            .collect(),
        Payload::Frame(_) => Vec::new(),
    }
}

/// The write protocol, for tests: `Ok(new length)` or the failure.
#[cfg(test)]
pub(super) fn write_payload(
    ops: &mut dyn WriteOps,
    offset: u64,
    payload: &Payload,
    p: Option<Duration>,
) -> Result<u64, Fail> {
    let held = placeholders(payload);
    let mut mine = Mine {
        start: offset,
        end: offset,
        last: &[],
    };
    write_payload_mine(ops, &mut mine, payload, &held, p)
}

/// What is left of dsh's bytes after a failure: `Ok(true)` when every byte
/// after `mine.start` is dsh's (so cutting the file back loses nothing of
/// anyone else's), `Ok(false)` when something else is there too.
fn only_mine(ops: &mut dyn WriteOps, mine: &Mine<'_>) -> io::Result<(bool, u64)> {
    let len = ops.len()?;
    if len < mine.end {
        return Ok((false, len));
    }
    let extra = len - mine.end;
    let ok =
        extra as usize <= mine.last.len() && holds(ops, mine.end, &mine.last[..extra as usize])?;
    Ok((ok, len))
}

/// Write, or cut the file back to `offset` (when only dsh's bytes follow
/// it) and say why not.
pub(super) fn commit(
    ops: &mut dyn WriteOps,
    path: &Path,
    offset: u64,
    payload: &Payload,
    p: Option<Duration>,
) -> Result<u64, AppendError> {
    let held = placeholders(payload);
    let mut mine = Mine {
        start: offset,
        end: offset,
        last: &[],
    };
    let fail = match write_payload_mine(ops, &mut mine, payload, &held, p) {
        Ok(len) => return Ok(len),
        Err(f) => f,
    };
    let path = path.to_path_buf();
    let (ours, len) = match only_mine(ops, &mine) {
        Ok(v) => v,
        Err(rollback) => {
            let (op, source) = match fail {
                Fail::Io(op, e) => (op, e),
                Fail::Foreign(what) => ("append to the log", io::Error::other(what)),
            };
            return Err(AppendError::RollbackFailed {
                path,
                op,
                len: offset,
                source,
                rollback,
            });
        }
    };
    if !ours {
        let what = match fail {
            Fail::Io(op, e) => format!("cannot {op}: {e}"),
            Fail::Foreign(what) => what,
        };
        if mine.end == mine.start && mine.last.is_empty() {
            // Nothing of dsh's was written.
            return Err(AppendError::Changed { path, what });
        }
        let n = mine.last.len() as u64;
        // The piece landed after the other program's bytes, at the very
        // end: removing it takes nothing of theirs.
        let tail_is_mine = n > 0
            && len >= mine.end + n
            && holds(ops, len - n, mine.last).unwrap_or(false)
            && ops.len().is_ok_and(|l| l == len);
        if tail_is_mine && ops.truncate(len - n).and_then(|_| ops.sync()).is_ok() {
            return Err(AppendError::Interleaved {
                path,
                what,
                left: if mine.end > mine.start {
                    format!(
                        "dsh removed the {n} bytes it had appended after the other program's; its earlier {} bytes at byte {} stay, before the other program's (dsh overwrote nothing)",
                        mine.end - mine.start,
                        mine.start
                    )
                } else {
                    format!(
                        "dsh removed its own {n} bytes; the other program's {} bytes follow the original {offset} (dsh overwrote nothing; nothing of dsh's batch is in the log)",
                        len - n - offset
                    )
                },
            });
        }
        // Someone else's bytes follow dsh's: cutting back would lose them.
        let in_place = mine.end - mine.start
            + if holds(ops, mine.end, mine.last).unwrap_or(false) {
                n
            } else {
                0
            };
        return Err(AppendError::Interleaved {
            path,
            what,
            left: format!(
                "dsh's {in_place} bytes at byte {} were left in place, because another program's bytes follow them and removing them could cut those (dsh overwrote nothing; the file is now {len} bytes)",
                mine.start
            ),
        });
    }
    let rolled = ops.truncate(mine.start).and_then(|_| ops.sync());
    match (fail, rolled) {
        (Fail::Io(op, source), Ok(())) => Err(AppendError::Io {
            path,
            op,
            len: offset,
            source,
        }),
        (Fail::Foreign(what), Ok(())) => Err(AppendError::Interleaved {
            path,
            what,
            left: format!(
                "dsh removed its own bytes; the log is {offset} bytes again (nothing of dsh's batch is in it)"
            ),
        }),
        (Fail::Io(op, source), Err(rollback)) => Err(AppendError::RollbackFailed {
            path,
            op,
            len: offset,
            source,
            rollback,
        }),
        (Fail::Foreign(what), Err(rollback)) => Err(AppendError::RollbackFailed {
            path,
            op: "append to the log",
            len: offset,
            source: io::Error::other(what),
            rollback,
        }),
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
pub(super) fn encode<E: Borrow<OwnedEvent>>(
    events: &[E],
    container: Container,
) -> Result<(Payload, u64), EncodeError> {
    let mut units: Vec<Vec<u8>> = Vec::new();
    let mut cur = String::new();
    let mut lens: Vec<usize> = Vec::with_capacity(events.len());
    let mut total = 0u64;
    for ev in events {
        let ev = ev.borrow();
        if ev.kind == Kind::TurnEnd && !cur.is_empty() {
            units.push(std::mem::take(&mut cur).into_bytes());
        }
        // Written in place: no line of its own to copy.
        let at = cur.len();
        ev.value.write_json(&mut cur);
        debug_assert!(!cur[at..].contains('\n'));
        cur.push('\n');
        lens.push(cur.len() - at);
        total += (cur.len() - at) as u64;
    }
    let cur = cur.into_bytes();
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

/// The bytes [`encode`] gives a plain log for `events`, counted without
/// keeping them (a dry run writes nothing).
pub(super) fn encoded_len<E: Borrow<OwnedEvent>>(events: &[E]) -> u64 {
    let mut line = String::new();
    events
        .iter()
        .map(|ev| {
            line.clear();
            ev.borrow().value.write_json(&mut line);
            line.len() as u64 + 1
        })
        .sum()
}

/// One complete, checksummed Zstandard frame (level 3, as Node's default).
#[cfg(test)]
pub(crate) fn zstd_frame(plain: &[u8]) -> io::Result<Vec<u8>> {
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
