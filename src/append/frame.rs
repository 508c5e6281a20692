//! One batch as one Zstandard frame whose every crash cut is safe.
//!
//! A reader recovers the decodable plaintext of a torn final frame and keeps
//! its complete lines (session-log §3.2), and a Zstandard decoder produces a
//! compressed block only once the whole block is read (an uncompressed
//! "raw" block streams out byte by byte). So what a crash part-way through
//! the frame can make visible is the batch up to the end of some block. The
//! frame is therefore laid out so that every block ends at a *safe point*:
//!
//! * the batch is cut into *atomic units* — a `compaction/prune` with the
//!   replacement that follows it, a compaction bracket's
//!   `compaction/summary` → checkpoint → `compaction/end`, every other event
//!   alone — and a safe point is the end of a unit;
//! * units are packed into blocks of at most 128 KiB of plaintext (one
//!   Zstandard block), a block ending (a flush) after its last whole unit;
//!   so a batch up to 128 KiB is still all-or-nothing, and a larger one
//!   becomes visible unit by unit, never half a unit;
//! * a unit larger than one block is laid out so that its last block holds
//!   all of its newlines (its first line is long, the rest fits in one block:
//!   a large summary, a single huge event); when the lines after its first
//!   are themselves larger than one block, no layout can keep it whole and
//!   the batch is refused before anything is written
//!   ([`Unsafe`]).
//!
//! The layout is then checked, not trusted: the frame is decoded block by
//! block as a torn frame would be, and every plaintext length a cut can
//! expose (any point inside a raw block) must end at a safe point. A frame
//! that fails (the compressor split a block on its own, or stored one raw)
//! is laid out again with a block per unit; if that fails too, the batch is
//! refused.

use std::io;

use zstd::zstd_safe::{self, CCtx, CParameter, InBuffer, OutBuffer};

use crate::event::{Kind, OwnedEvent};

/// Plaintext of one Zstandard block (`ZSTD_BLOCKSIZE_MAX`).
pub(super) const BLOCK: usize = 128 << 10;

/// Why a batch cannot be written so that every crash cut is safe.
#[derive(Debug)]
pub(super) struct Unsafe {
    /// First seq of the unit that cannot be kept whole.
    pub(super) seq: u64,
    /// What is wrong.
    pub(super) why: String,
}

/// Byte ranges of the atomic units of `events`, whose lines are laid end to
/// end in that order with the given lengths (newline included).
pub(super) fn units<E: std::borrow::Borrow<OwnedEvent>>(
    events: &[E],
    lens: &[usize],
) -> Vec<(usize, usize, u64)> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut at = 0usize;
    let mut first_seq = None;
    let mut bracket = false;
    for (ev, len) in events.iter().zip(lens) {
        let ev = ev.borrow();
        first_seq.get_or_insert(ev.seq);
        at += len;
        match ev.kind {
            Kind::CompactionSummary => bracket = true,
            Kind::CompactionEnd => bracket = false,
            _ => {}
        }
        if ev.kind == Kind::CompactionPrune || bracket {
            continue;
        }
        out.push((start, at, first_seq.take().unwrap_or(ev.seq)));
        start = at;
    }
    if at > start {
        out.push((start, at, first_seq.unwrap_or_default()));
    }
    out
}

/// Where blocks end: after whole units, packed up to [`BLOCK`] (or one unit
/// per block with `one_per_block`); a unit larger than a block ends with a
/// block that holds all of its newlines.
fn block_ends(
    plain: &[u8],
    units: &[(usize, usize, u64)],
    one_per_block: bool,
) -> Result<Vec<usize>, Unsafe> {
    let mut ends = Vec::new();
    let mut group = 0usize; // start of the open block
    for &(s, e, seq) in units {
        let len = e - s;
        if len > BLOCK {
            if s > group {
                ends.push(s);
            }
            let first_nl = s + memchr::memchr(b'\n', &plain[s..e]).unwrap_or(len - 1);
            let tail = e - BLOCK;
            if tail > first_nl {
                return Err(Unsafe {
                    seq,
                    why: format!(
                        "its {} bytes after the first line exceed one Zstandard block ({BLOCK} bytes), so a crash part-way could show some of its events without the others",
                        e - first_nl - 1
                    ),
                });
            }
            if tail > s {
                ends.push(tail);
            }
            ends.push(e);
            group = e;
        } else if one_per_block || e - group > BLOCK {
            if s > group {
                ends.push(s);
            }
            group = s;
            if one_per_block {
                ends.push(e);
                group = e;
            }
        }
    }
    if ends.last() != Some(&plain.len()) {
        ends.push(plain.len());
    }
    Ok(ends)
}

/// Compress `plain` as one checksummed frame (level 3, as Node's default,
/// with the content size) whose blocks end at `ends` (and wherever else the
/// compressor splits them).
fn compress_at(plain: &[u8], ends: &[usize]) -> io::Result<Vec<u8>> {
    let zerr = |c: usize| io::Error::other(zstd_safe::get_error_name(c));
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(
        zstd::DEFAULT_COMPRESSION_LEVEL,
    ))
    .map_err(zerr)?;
    cctx.set_parameter(CParameter::ChecksumFlag(true))
        .map_err(zerr)?;
    cctx.set_pledged_src_size(Some(plain.len() as u64))
        .map_err(zerr)?;
    let mut out: Vec<u8> = Vec::with_capacity(zstd_safe::compress_bound(plain.len()) + 64);
    let mut prev = 0usize;
    for (i, &end) in ends.iter().enumerate() {
        let last = i + 1 == ends.len();
        let directive = if last {
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end
        } else {
            zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_flush
        };
        let mut input = InBuffer::around(&plain[prev..end]);
        loop {
            if out.capacity() - out.len() < 1024 {
                out.reserve(64 << 10);
            }
            let pos = out.len();
            let mut o = OutBuffer::around_pos(&mut out, pos);
            let left = cctx
                .compress_stream2(&mut o, &mut input, directive)
                .map_err(zerr)?;
            if left == 0 && input.pos() == input.src.len() {
                break;
            }
        }
        prev = end;
    }
    Ok(out)
}

/// One block of a frame: where it ends in the frame, and whether it is raw.
struct BlockAt {
    end: usize,
    raw: bool,
}

/// The blocks of one complete frame, structurally; `None` if it is not one.
fn blocks(frame: &[u8]) -> Option<Vec<BlockAt>> {
    let fhd = *frame.get(4)?;
    let single = (fhd >> 5) & 1 == 1;
    let dict = [0usize, 1, 2, 4][(fhd & 3) as usize];
    let fcs = match fhd >> 6 {
        0 => single as usize,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut p = 5 + (!single) as usize + dict + fcs;
    let mut out = Vec::new();
    loop {
        let h = frame.get(p..p + 3)?;
        let h = h[0] as u32 | (h[1] as u32) << 8 | (h[2] as u32) << 16;
        let ty = (h >> 1) & 3;
        let size = (h >> 3) as usize;
        p += 3 + if ty == 1 { 1 } else { size };
        if p > frame.len() || ty == 3 {
            return None;
        }
        out.push(BlockAt {
            end: p,
            raw: ty == 0,
        });
        if h & 1 == 1 {
            return Some(out);
        }
    }
}

/// Whether every cut of `frame` exposes complete lines that end at a safe
/// point (`safe`: sorted plaintext offsets, 0 included).
fn cuts_are_safe(frame: &[u8], plain: &[u8], safe: &[usize]) -> bool {
    use zstd::stream::raw::{Decoder, Operation};
    let Some(blocks) = blocks(frame) else {
        return false;
    };
    let Ok(mut dec) = Decoder::new() else {
        return false;
    };
    // The visible end for `n` bytes of plaintext: after its last newline.
    let visible = |n: usize| memchr::memrchr(b'\n', &plain[..n]).map_or(0, |i| i + 1);
    let ok = |n: usize| safe.binary_search(&visible(n)).is_ok();
    let mut out = vec![0u8; plain.len() + 1];
    let (mut fed, mut produced) = (0usize, 0usize);
    for b in &blocks {
        let before = produced;
        let mut input = zstd_safe::InBuffer::around(&frame[fed..b.end]);
        loop {
            let mut o = zstd_safe::OutBuffer::around_pos(&mut out[..], produced);
            if dec.run(&mut input, &mut o).is_err() {
                return false;
            }
            let moved = o.pos() > produced;
            produced = o.pos();
            if input.pos() == input.src.len() && !moved {
                break;
            }
        }
        fed = b.end;
        if produced > plain.len() || plain[..produced] != out[..produced] {
            return false;
        }
        // A cut inside this block shows what came before it (a compressed
        // block) or any length up to its end (a raw block).
        if !ok(before) {
            return false;
        }
        if b.raw
            && memchr::memchr_iter(b'\n', &plain[before..produced])
                .any(|i| safe.binary_search(&(before + i + 1)).is_err())
        {
            return false;
        }
    }
    produced == plain.len() && ok(produced)
}

/// The batch `plain` (complete lines; `units` from [`units`]) as one
/// checksummed frame every crash cut of which is safe (module docs).
pub(super) fn safe_frame(
    plain: &[u8],
    units: &[(usize, usize, u64)],
) -> Result<io::Result<Vec<u8>>, Unsafe> {
    let mut safe: Vec<usize> = vec![0];
    safe.extend(units.iter().map(|u| u.1));
    for one_per_block in [false, true] {
        let ends = block_ends(plain, units, one_per_block)?;
        let frame = match compress_at(plain, &ends) {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        if cuts_are_safe(&frame, plain, &safe) {
            return Ok(Ok(frame));
        }
    }
    Err(Unsafe {
        seq: units.first().map_or(0, |u| u.2),
        why: "the Zstandard compressor did not keep its blocks at the unit boundaries, so a crash part-way could show half a unit".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::owned_event;
    use crate::json::Value;

    fn ev(kind: Kind, ty: &str, seq: u64, pad: usize) -> (OwnedEvent, String) {
        let line = format!(
            r#"{{"type":"{ty}","seq":{seq},"time":1,"data":{{"pad":"{}"}}}}"#,
            "x".repeat(pad)
        );
        let v = Value::parse(&line).unwrap().into_owned();
        (owned_event(kind, seq, v), line + "\n")
    }

    fn batch(spec: &[(Kind, &str, usize)]) -> (Vec<OwnedEvent>, Vec<usize>, Vec<u8>) {
        let (mut evs, mut lens, mut plain) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (k, ty, pad)) in spec.iter().enumerate() {
            let (e, l) = ev(*k, ty, i as u64, *pad);
            lens.push(l.len());
            plain.extend_from_slice(l.as_bytes());
            evs.push(e);
        }
        (evs, lens, plain)
    }

    #[test]
    fn units_keep_prune_pairs_and_brackets_whole() {
        let (evs, lens, _) = batch(&[
            (Kind::SessionEndSeed, "session/end-seed", 0),
            (Kind::CompactionPrune, "compaction/prune", 0),
            (Kind::ToolResult, "tool/result", 0),
            (Kind::CompactionSummary, "compaction/summary", 0),
            (Kind::UserMessage, "user/message", 0),
            (Kind::CompactionEnd, "compaction/end", 0),
        ]);
        let u = units(&evs, &lens);
        let seqs: Vec<u64> = u.iter().map(|u| u.2).collect();
        assert_eq!(seqs, [0, 1, 3]);
    }

    #[test]
    fn a_large_first_line_is_fine_a_large_rest_is_refused() {
        // A 300 KB summary, then a small checkpoint and end: the last block
        // holds every newline of the bracket.
        let (evs, lens, plain) = batch(&[
            (Kind::CompactionSummary, "compaction/summary", 300_000),
            (Kind::UserMessage, "user/message", 1000),
            (Kind::CompactionEnd, "compaction/end", 0),
        ]);
        let u = units(&evs, &lens);
        let frame = safe_frame(&plain, &u).unwrap().unwrap();
        assert_eq!(zstd::stream::decode_all(&frame[..]).unwrap(), plain);
        // A checkpoint as large as the summary cannot be kept whole.
        let (evs, lens, plain) = batch(&[
            (Kind::CompactionSummary, "compaction/summary", 300_000),
            (Kind::UserMessage, "user/message", 200_000),
            (Kind::CompactionEnd, "compaction/end", 0),
        ]);
        let u = units(&evs, &lens);
        let e = safe_frame(&plain, &u).unwrap_err();
        assert_eq!(e.seq, 0);
        assert!(e.why.contains("exceed one Zstandard block"), "{}", e.why);
        // One huge line alone is one unit, always safe.
        let (evs, lens, plain) = batch(&[(Kind::UserMessage, "user/message", 1_000_000)]);
        let u = units(&evs, &lens);
        let frame = safe_frame(&plain, &u).unwrap().unwrap();
        assert_eq!(zstd::stream::decode_all(&frame[..]).unwrap(), plain);
    }

    #[test]
    fn incompressible_text_is_checked_too() {
        // Pseudo-random printable bytes barely compress: whatever block types
        // the compressor picks, the frame passes the cut check or is refused.
        let mut x = 0x1234_5678u64;
        let mut spec_pads = Vec::new();
        for _ in 0..40 {
            spec_pads.push((Kind::CompactionPrune, "compaction/prune", 0));
            spec_pads.push((Kind::ToolResult, "tool/result", 0));
        }
        let (evs, lens, _) = batch(&spec_pads);
        let mut plain = Vec::new();
        for (e, l) in evs.iter().zip(&lens) {
            let _ = e;
            let mut line: Vec<u8> = (0..l + 7000)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    b' ' + ((x >> 33) % 94) as u8
                })
                .collect();
            *line.last_mut().unwrap() = b'\n';
            plain.extend_from_slice(&line);
        }
        let lens: Vec<usize> = lens.iter().map(|l| l + 7000).collect();
        let u = units(&evs, &lens);
        let mut safe = vec![0];
        safe.extend(u.iter().map(|u| u.1));
        if let Ok(frame) = safe_frame(&plain, &u) {
            let frame = frame.unwrap();
            assert!(cuts_are_safe(&frame, &plain, &safe));
        }
    }
}
