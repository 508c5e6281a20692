//! `dsh pack` / `dsh unpack`: the harness's artifact layout, byte-exact round
//! trips, refusals that leave files alone, and the reference reading what
//! `dsh pack` writes.

use crate::support::{dsh, sample, shared};

/// Run dsh and parse its stdout as JSON.
fn json_of(args: &[&str]) -> (serde_json::Value, i32) {
    let out = dsh().args(args).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (v, out.status.code().unwrap_or(-1))
}

/// The frames of an artifact, each decompressed on its own.
fn frames(artifact: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < artifact.len() {
        let n = zstd::zstd_safe::find_frame_compressed_size(&artifact[at..]).unwrap();
        out.push(zstd::stream::decode_all(&artifact[at..at + n]).unwrap());
        at += n;
    }
    out
}

#[test]
fn pack_writes_a_header_frame_then_one_frame_per_turn_and_unpack_restores_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(sample("coding-session.jsonl")).unwrap();
    let art = dir.path().join("s.jsonl.zstd");
    dsh()
        .args([
            "pack",
            sample("coding-session.jsonl").to_str().unwrap(),
            "-o",
        ])
        .arg(&art)
        .assert()
        .success()
        .stdout(predicates::str::contains("frame(s)"));
    let bytes = std::fs::read(&art).unwrap();
    let fs = frames(&bytes);
    let header_len = plain.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(
        fs[0],
        plain[..header_len],
        "frame 1 is exactly the header line"
    );
    assert_eq!(fs.concat(), plain);
    let turn_ends = plain
        .split(|&b| b == b'\n')
        .filter(|l| l.windows(17).any(|w| w == b"\"type\":\"turn/end\""))
        .count();
    for f in &fs[1..fs.len() - 1] {
        let last = f[..f.len() - 1].rsplit(|&b| b == b'\n').next().unwrap();
        assert!(
            last.windows(8).any(|w| w == b"turn/end"),
            "a frame ends with its turn's end"
        );
    }
    assert!(
        fs.len() > turn_ends,
        "at least one frame per turn after the header"
    );
    // The artifact reads as the plain log does.
    let (a, _) = json_of(&["surface", "--json", art.to_str().unwrap()]);
    let (p, _) = json_of(&[
        "surface",
        "--json",
        sample("coding-session.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(a.get("nodes"), p.get("nodes"));

    let back = dir.path().join("back.jsonl");
    dsh()
        .args(["unpack", art.to_str().unwrap(), "-o"])
        .arg(&back)
        .assert()
        .success();
    assert_eq!(std::fs::read(&back).unwrap(), plain);
    let out = dsh()
        .args(["unpack", art.to_str().unwrap(), "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.stdout, plain, "unpack -o - streams the plain log");
    // Files are created like any other, not private temporaries.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&back).unwrap().permissions().mode() & 0o777;
    assert_ne!(mode, 0o600);
}

#[test]
fn fixed_line_batches_and_the_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("s.zstd");
    let (v, code) = json_of(&[
        "pack",
        "--json",
        "--lines",
        "10",
        sample("coding-session.jsonl").to_str().unwrap(),
        "-o",
        art.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let lines = v.get("lines").and_then(|n| n.as_u64()).unwrap();
    let frames_n = v.get("frames").and_then(|n| n.as_u64()).unwrap();
    assert_eq!(frames_n, 1 + (lines - 1).div_ceil(10));
    assert_eq!(frames(&std::fs::read(&art).unwrap()).len() as u64, frames_n);
    assert_eq!(v.get("input").and_then(|s| s.as_str()), Some("jsonl"));
    assert_eq!(v.get("dryRun").and_then(|b| b.as_bool()), Some(false));
    let written = v.get("writtenBytes").and_then(|n| n.as_u64()).unwrap();
    assert_eq!(written, std::fs::metadata(&art).unwrap().len());

    // A dry run reports the same sizes and writes nothing.
    let none = dir.path().join("none.zstd");
    let (d, code) = json_of(&[
        "pack",
        "-n",
        "--json",
        "--lines",
        "10",
        sample("coding-session.jsonl").to_str().unwrap(),
        "-o",
        none.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        d.get("writtenBytes").and_then(|n| n.as_u64()),
        Some(written)
    );
    assert!(!none.exists());
}

#[test]
fn refusals_leave_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    std::fs::copy(sample("coding-session.jsonl"), &log).unwrap();
    let before = std::fs::read(&log).unwrap();
    let s = log.to_str().unwrap();
    // The output is the input.
    dsh()
        .args(["pack", "--force", s, "-o", s])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("the output is the input"));
    // An existing output without --force.
    let other = dir.path().join("other");
    std::fs::write(&other, b"keep").unwrap();
    dsh()
        .args(["pack", s, "-o", other.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--force"));
    assert_eq!(std::fs::read(&other).unwrap(), b"keep");
    // A missing directory.
    dsh()
        .args(["pack", s, "-o"])
        .arg(dir.path().join("nodir/x"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no such directory"));
    // A torn last line would be dropped: refused, nothing created.
    let out = dir.path().join("torn.zstd");
    dsh()
        .args(["pack", sample("torn.jsonl").to_str().unwrap(), "-o"])
        .arg(&out)
        .assert()
        .code(3)
        .stderr(predicates::str::contains("torn line"));
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary file is left behind"
    );
    // --force replaces.
    dsh()
        .args(["pack", "--force", s, "-o", other.to_str().unwrap()])
        .assert()
        .success();
    assert_eq!(
        &std::fs::read(&other).unwrap()[..4],
        &[0x28, 0xb5, 0x2f, 0xfd]
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "the input is only read"
    );
}

#[test]
fn a_torn_artifact_is_refused_by_unpack() {
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().join("s.zstd");
    dsh()
        .args([
            "pack",
            sample("coding-session.jsonl").to_str().unwrap(),
            "-o",
        ])
        .arg(&art)
        .assert()
        .success();
    let mut bytes = std::fs::read(&art).unwrap();
    bytes.truncate(bytes.len() - 7);
    std::fs::write(&art, &bytes).unwrap();
    let out = dir.path().join("back.jsonl");
    dsh()
        .args(["unpack", art.to_str().unwrap(), "-o"])
        .arg(&out)
        .assert()
        .code(3);
    assert!(!out.exists());
}

#[test]
fn the_reference_reads_what_pack_writes() {
    let Some(shared) = shared("the_reference_reads_what_pack_writes") else {
        return;
    };
    let oracle = shared.join("tools/oracle/oracle");
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED the_reference_reads_what_pack_writes: node is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["coding-session.jsonl", "compacted.jsonl"] {
        let art = dir.path().join(format!("{name}.zstd"));
        dsh()
            .args(["pack", sample(name).to_str().unwrap(), "-o"])
            .arg(&art)
            .assert()
            .success();
        let run = |file: &std::path::Path| {
            let stdout = crate::support::stdout_ok(
                std::process::Command::new(&oracle)
                    .args(["load", file.to_str().unwrap()])
                    .output()
                    .unwrap(),
            );
            serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
        };
        let (z, p) = (run(&art), run(&sample(name)));
        for key in ["header", "eventTypes", "storedEvents", "closers"] {
            assert_eq!(z.get(key), p.get(key), "{name}: {key}");
        }
    }
}

/// Corpus logs, packed: an artifact reads exactly as its plain log does
/// (the corpus holds no artifacts, so this is where the Zstandard path meets
/// the reference's answers): the same messages byte for byte, the same
/// surface and price, the same audit, the same `measure` document.
#[test]
fn every_corpus_log_reads_the_same_packed() {
    let Some(shared) = shared("every_corpus_log_reads_the_same_packed") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let opts = dsh::LoadOptions::default();
    let mut compared = 0;
    // Every other log: the library runs unoptimised under `cargo test`.
    for (name, plain) in crate::support::corpus_logs(&shared).into_iter().step_by(2) {
        let art = dir.path().join(format!("{name}.jsonl.zstd"));
        let src = dsh::LogSource::File(plain.clone());
        let mut bytes = Vec::new();
        // Small frames, so that spans are read again across many of them.
        if dsh::pack::pack(
            &src,
            Default::default(),
            dsh::pack::Batching::Lines(3),
            &mut bytes,
        )
        .is_err()
        {
            continue; // a torn tail: pack refuses it (tested above)
        }
        std::fs::write(&art, &bytes).unwrap();
        let zsrc = dsh::LogSource::File(art.clone());
        let load = |s: &dsh::LogSource| {
            dsh::log::load(
                s,
                &opts,
                &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
            )
        };
        let (p, z) = match (load(&src), load(&zsrc)) {
            (Ok(p), Ok(z)) => (p, z),
            (Err(a), Err(b)) => {
                assert_eq!((a.kind, a.rule), (b.kind, b.rule), "{name}: refused alike");
                continue;
            }
            // A damaged tail that a plain log drops as torn is refused in a
            // complete frame, whose lines are strict (session-log §2).
            (Ok(p), Err(_)) if p.dropped.is_some() => continue,
            (a, b) => panic!("{name}: plain {:?} vs packed {:?}", a.err(), b.err()),
        };
        let messages = |log: &dsh::LoadedLog| {
            let mut out = Vec::new();
            dsh::derive::write_messages_json(log, &mut out).unwrap();
            out
        };
        assert_eq!(messages(&p), messages(&z), "{name}: messages");
        let seqs =
            |log: &dsh::LoadedLog| log.surface.nodes.iter().map(|n| n.seq).collect::<Vec<_>>();
        assert_eq!(seqs(&p), seqs(&z), "{name}: surface");
        assert_eq!(p.surface.tokens, z.surface.tokens, "{name}: price");
        let (vp, vz) = (
            dsh::verify::verify(&src, &opts),
            dsh::verify::verify(&zsrc, &opts),
        );
        let findings = |r: &dsh::verify::Report| {
            r.findings
                .iter()
                .map(|f| (f.check, f.severity, f.seq, f.line, f.message.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(findings(&vp), findings(&vz), "{name}: verify");
        let measure = |f: &std::path::Path| {
            let mut v = json_of(&["measure", "--json", f.to_str().unwrap()]).0;
            v.as_object_mut().unwrap().remove("file");
            v
        };
        // The CLI's measure (a debug binary) is slow to start: a sample of logs.
        if compared % 10 == 0 {
            assert_eq!(measure(&plain), measure(&art), "{name}: measure");
        }
        compared += 1;
    }
    assert!(compared > 60, "only {compared} corpus logs compared");
}
