//! A Zstandard log cut inside its last frame, at every byte offset of that
//! frame: readers name the state (and the file offset of the last whole
//! frame), `repair --dry-run` names that offset, `repair` cuts the file back
//! to it, and then every writer succeeds and `verify` is clean. Plain logs
//! with a torn last line get the same remedy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh::append::repair::{self, Damage, RepairOptions};
use serde_json::Value as J;

use crate::support::{TestEnv, sample};

/// `prune-open-turn.jsonl` as an artifact of three frames: the header, every
/// event but the last, then the last. Returns the bytes and where the last
/// frame starts.
fn frames() -> (Vec<u8>, usize) {
    let text = std::fs::read_to_string(sample("prune-open-turn.jsonl")).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let (head, last) = lines.split_at(lines.len() - 1);
    let mut out = zstd::encode_all(head[0].as_bytes(), 3).unwrap();
    out.extend(zstd::encode_all(head[1..].concat().as_bytes(), 3).unwrap());
    let start = out.len();
    out.extend(zstd::encode_all(last.concat().as_bytes(), 3).unwrap());
    (out, start)
}

fn opts() -> RepairOptions {
    RepairOptions {
        min_age: Duration::ZERO,
        ..RepairOptions::default()
    }
}

fn load(p: &Path) -> dsh::log::LoadedLog {
    dsh::log::load(
        &dsh::LogSource::File(p.to_path_buf()),
        &dsh::LoadOptions::default(),
        &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
    )
    .unwrap()
}

#[test]
fn a_cut_last_frame_is_named_at_every_offset_and_repair_makes_it_whole() {
    let (whole, start) = frames();
    let dir = tempfile::tempdir().unwrap();
    let env = TestEnv::new();
    for cut in start + 1..whole.len() {
        let p = dir.path().join(format!("cut-{cut}.jsonl.zstd"));
        std::fs::write(&p, &whole[..cut]).unwrap();
        // Readers: the state, with the file offset of the last whole frame.
        let log = load(&p);
        let c = log
            .cut_frame
            .unwrap_or_else(|| panic!("cut at {cut}: not seen"));
        assert_eq!((c.whole_end, c.file_len), (start as u64, cut as u64));
        assert!(
            log.warnings
                .iter()
                .any(|w| w.contains(&format!("file byte {start}")) && w.contains("dsh repair")),
            "cut at {cut}: {:?}",
            log.warnings
        );
        let report = dsh::verify::verify(
            &dsh::LogSource::File(p.clone()),
            &dsh::LoadOptions::default(),
        );
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.check.as_str() == "V-TAIL-1"),
            "cut at {cut}: verify names it"
        );
        // repair --dry-run names the offset; repair cuts there.
        let plan = repair::plan(&p, &opts()).unwrap().expect("a plan");
        assert_eq!(
            plan.damage,
            Damage::CutFrame {
                whole_end: start as u64
            }
        );
        assert_eq!((plan.keep_len, plan.file_len), (start as u64, cut as u64));
        let done = repair::repair(&p, &opts()).unwrap().expect("repaired");
        assert_eq!(std::fs::read(&p).unwrap(), &whole[..start]);
        assert_eq!(std::fs::read(&done.saved_to).unwrap(), &whole[start..cut]);
        let log = load(&p);
        assert!(
            log.cut_frame.is_none() && log.torn.is_none(),
            "cut at {cut}"
        );
        assert_eq!(repair::plan(&p, &opts()).unwrap(), None);
        // Through the command line, on a sample of the offsets (each run
        // is a process): what readers say before, and that every writer
        // succeeds after.
        if (cut - start) % 97 == 1 || cut == whole.len() - 1 {
            command_line(&env, dir.path(), &whole, start, cut);
        }
    }
}

fn run(env: &TestEnv, args: &[&str], p: &Path) -> (i32, String, String) {
    let out = env.dsh().args(args).arg(p).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn command_line(env: &TestEnv, dir: &Path, whole: &[u8], start: usize, cut: usize) {
    let p: PathBuf = dir.join(format!("cli-{cut}.jsonl.zstd"));
    std::fs::write(&p, &whole[..cut]).unwrap();
    let at = format!("file byte {start}");
    // Readers report a finding, not "clean" / "free".
    let (code, out, _) = run(env, &["locks", "--json"], &p);
    assert_eq!(code, 1, "locks: {out}");
    let v: J = serde_json::from_str(&out).unwrap();
    assert!(
        v["logs"][0]["damage"].as_str().unwrap().contains(&at),
        "{v}"
    );
    assert_eq!(v["summary"]["damaged"], 1);
    let (code, out, _) = run(env, &["verify"], &p);
    assert!(!out.contains("clean"), "verify: {out}");
    assert!(out.contains("V-TAIL-1"), "verify: {code} {out}");
    // Writers name the offset and the remedy.
    for args in [
        &["prune"][..],
        &["locks", "--release", "--yes"],
        &["unpack", "-n", "-o", "x.jsonl"],
    ] {
        let (code, _, err) = run(env, args, &p);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains(&at) && err.contains("dsh repair"),
            "{args:?}: {err}"
        );
    }
    // repair: the dry run names the offset; a fresh file is refused unless --force.
    let (code, out, _) = run(env, &["repair", "--dry-run", "--json", "--force"], &p);
    assert_eq!(code, 0, "{out}");
    let v: J = serde_json::from_str(&out).unwrap();
    assert_eq!(v["keepLen"], start as u64);
    assert_eq!(v["damage"]["kind"], "cut-frame");
    assert_eq!(
        std::fs::read(&p).unwrap(),
        &whole[..cut],
        "a dry run writes nothing"
    );
    let (code, _, err) = run(env, &["repair"], &p);
    assert_eq!(code, 4, "modified just now: {err}");
    assert!(err.contains("may still be writing"), "{err}");
    let (code, out, err) = run(env, &["repair", "--force"], &p);
    assert_eq!(code, 0, "{out}{err}");
    // Every writer succeeds, and verify is clean.
    let (code, out, err) = run(env, &["verify"], &p);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("clean"), "{out}");
    let (code, _, err) = run(env, &["locks", "--release", "--yes"], &p);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(env, &["prune"], &p);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(env, &["verify"], &p);
    assert_eq!(code, 0, "after prune: {out}{err}");
    let packed = dir.join(format!("cli-{cut}.packed"));
    let (code, _, err) = run(
        env,
        &["pack", "--force", "-o", packed.to_str().unwrap()],
        &p,
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_plain_log_with_a_torn_line_is_repaired_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("torn.jsonl");
    std::fs::copy(sample("torn.jsonl"), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let env = TestEnv::new();
    let (code, _, err) = run(&env, &["prune"], &p);
    assert_eq!(code, 4);
    assert!(err.contains("dsh repair"), "{err}");
    let (code, out, _) = run(&env, &["repair", "--json", "--force"], &p);
    assert_eq!(code, 0, "{out}");
    let v: J = serde_json::from_str(&out).unwrap();
    assert_eq!(v["damage"]["kind"], "torn-line");
    let keep = v["keepLen"].as_u64().unwrap() as usize;
    assert_eq!(std::fs::read(&p).unwrap(), &before[..keep]);
    let saved = v["savedTo"].as_str().unwrap();
    assert_eq!(std::fs::read(saved).unwrap(), &before[keep..]);
    let (code, out, _) = run(&env, &["repair", "--json"], &p);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<J>(&out).unwrap()["damage"], J::Null);
    let (code, out, err) = run(&env, &["verify"], &p);
    assert_eq!(code, 0, "{out}{err}");
}
