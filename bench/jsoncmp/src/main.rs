//! How fast dsh's JSON parser reads a log's lines, against simd-json (the
//! Rust port of simdjson) and sonic-rs, line type by line type.
//!
//! Each parser builds its own tree of every line (dsh keeps strings as
//! slices of the line and counts their UTF-16 length on the way; the
//! others unescape them); the best of five rounds is reported. One thread.
//!
//! Usage: `jsoncmp LOG` (a plain log: its header line is skipped).

use std::collections::BTreeMap;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROUNDS: usize = 5;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: jsoncmp LOG");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("jsoncmp: {path}: {e}");
        std::process::exit(1);
    });
    // Lines by their `type` (every writer puts it first).
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let kind = line
            .strip_prefix("{\"type\":\"")
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("(other)");
        groups.entry(kind).or_default().push(line);
    }
    println!(
        "{:24} {:>8} {:>18} {:>18} {:>18}",
        "lines", "MB", "dsh", "simd-json", "sonic-rs"
    );
    let mut totals = [0f64; 3];
    let mut all_bytes = 0usize;
    for (kind, lines) in &groups {
        let bytes: usize = lines.iter().map(|l| l.len()).sum();
        all_bytes += bytes;
        let mut copies: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
        let mut best = [f64::MAX; 3];
        let mut seen = 0usize;
        for _ in 0..ROUNDS {
            let t = Instant::now();
            for l in lines {
                let (v, canonical) = dsh::json::Value::parse_canonical(l).expect("dsh parses");
                seen += v.is_obj() as usize + canonical as usize;
            }
            best[0] = best[0].min(t.elapsed().as_secs_f64());

            // simd-json parses in place: fresh copies, outside the timing.
            for (c, l) in copies.iter_mut().zip(lines) {
                c.clear();
                c.extend_from_slice(l.as_bytes());
            }
            let mut buffers = simd_json::Buffers::default();
            let t = Instant::now();
            for c in copies.iter_mut() {
                let v = simd_json::to_borrowed_value_with_buffers(c, &mut buffers)
                    .expect("simd-json parses");
                seen += matches!(v, simd_json::BorrowedValue::Object(_)) as usize;
            }
            best[1] = best[1].min(t.elapsed().as_secs_f64());

            let t = Instant::now();
            for l in lines {
                let v: sonic_rs::Value = sonic_rs::from_str(l).expect("sonic-rs parses");
                seen += sonic_rs::JsonValueTrait::is_object(&v) as usize;
            }
            best[2] = best[2].min(t.elapsed().as_secs_f64());
        }
        std::hint::black_box(seen);
        for (t, b) in totals.iter_mut().zip(best) {
            *t += b;
        }
        let cell = |s: f64| format!("{:6.1} ms {:5.0} MB/s", s * 1e3, bytes as f64 / 1e6 / s);
        println!(
            "{kind:24} {:>8.1} {:>18} {:>18} {:>18}",
            bytes as f64 / 1e6,
            cell(best[0]),
            cell(best[1]),
            cell(best[2])
        );
    }
    let cell = |s: f64| format!("{:6.1} ms {:5.0} MB/s", s * 1e3, all_bytes as f64 / 1e6 / s);
    println!(
        "{:24} {:>8.1} {:>18} {:>18} {:>18}",
        "all",
        all_bytes as f64 / 1e6,
        cell(totals[0]),
        cell(totals[1]),
        cell(totals[2])
    );
}
