//! `dsh verify`: mutation tests (break one rule of a clean log at a time and
//! assert the exact check fires), corpus agreement with the reference, and
//! the command line (formats, exit codes, many files).

use std::io::Write;
use std::path::PathBuf;

use dsh::log::{LoadOptions, LogSource};
use dsh::prune::PruneConfig;
use dsh::verify::{CheckId, Report, Severity, Verdict, VerifyOptions, verify, verify_with};
use serde_json::{Value as J, json};

use crate::support::root;

fn sample_path() -> PathBuf {
    root().join("samples/verify-clean.jsonl")
}

/// A log as a header line and editable events.
#[derive(Clone)]
struct Log {
    header: String,
    events: Vec<J>,
}

/// Shift every seq reference `>= from` by `delta`.
fn renumber(ev: &mut J, from: u64, delta: i64) {
    let bump = |v: &mut J| {
        if let Some(n) = v.as_u64()
            && n >= from
        {
            *v = json!((n as i64 + delta) as u64);
        }
    };
    if let Some(s) = ev.get_mut("seq") {
        bump(s);
    }
    if let Some(J::Array(a)) = ev.get_mut("sourceEventSeqs") {
        a.iter_mut().for_each(bump);
    }
    if let Some(op @ J::Object(_)) = ev.get_mut("surfaceOp") {
        for k in ["start", "end"] {
            if let Some(v) = op.get_mut(k) {
                bump(v);
            }
        }
    }
    if let Some(d) = ev.get_mut("data") {
        if let Some(r) = d.get_mut("shadowedRange") {
            for k in ["start", "end"] {
                if let Some(v) = r.get_mut(k) {
                    bump(v);
                }
            }
        }
        if let Some(J::Array(a)) = d.get_mut("shadowedSeqs") {
            a.iter_mut().for_each(bump);
        }
        if let Some(v) = d.get_mut("sourceEventSeq") {
            bump(v);
        }
    }
}

impl Log {
    fn sample() -> Log {
        let text = std::fs::read_to_string(sample_path()).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().to_string();
        let events = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
        Log { header, events }
    }

    fn ev(&mut self, seq: usize) -> &mut J {
        &mut self.events[seq]
    }

    fn data(&mut self, seq: usize) -> &mut J {
        &mut self.events[seq]["data"]
    }

    /// Put `ev` at `seq`, shifting later events and every reference to them.
    fn insert(&mut self, seq: usize, mut ev: J) {
        for e in &mut self.events {
            renumber(e, seq as u64, 1);
        }
        ev["seq"] = json!(seq);
        self.events.insert(seq, ev);
    }

    /// Drop the event at `seq`, closing the gap.
    fn remove(&mut self, seq: usize) {
        self.events.remove(seq);
        for e in &mut self.events {
            renumber(e, seq as u64 + 1, -1);
        }
    }

    fn write(&self) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new()
            .suffix(".jsonl")
            .tempfile()
            .unwrap();
        writeln!(f, "{}", self.header).unwrap();
        for e in &self.events {
            writeln!(f, "{e}").unwrap();
        }
        f.flush().unwrap();
        f
    }

    fn verify(&self) -> Report {
        let f = self.write();
        verify(
            &LogSource::File(f.path().to_path_buf()),
            &LoadOptions::default(),
        )
    }
}

fn ids(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.check.as_str()).collect()
}

/// The check fired at `seq` with exactly this message.
#[track_caller]
fn assert_finding(r: &Report, check: CheckId, seq: u64, message: &str) {
    assert!(
        r.findings
            .iter()
            .any(|f| f.check == check && f.seq == Some(seq) && f.message == message),
        "expected {check} at seq {seq}: {message:?}\nfindings: {:#?}",
        r.findings
    );
}

/// The check fired at `seq` with a message containing `part`.
#[track_caller]
fn assert_fires(r: &Report, check: CheckId, seq: u64, part: &str) {
    assert!(
        r.findings
            .iter()
            .any(|f| f.check == check && f.seq == Some(seq) && f.message.contains(part)),
        "expected {check} at seq {seq} containing {part:?}\nfindings: {:#?}",
        r.findings
    );
}

#[track_caller]
fn assert_refused(r: &Report, check: CheckId, seq: Option<u64>) {
    assert_eq!(r.verdict(false), Verdict::Refused, "{:#?}", r.findings);
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].check, check, "{:#?}", r.findings);
    assert_eq!(r.findings[0].seq, seq);
}

// ---------------------------------------------------------------------------
// The clean sample.

#[test]
fn clean_sample_has_no_findings() {
    let r = Log::sample().verify();
    assert_eq!(r.findings, vec![], "{:#?}", r.findings);
    assert_eq!(r.verdict(true), Verdict::Clean);
    assert_eq!(r.events, 46);
    assert_eq!(r.closers, 0);
    assert!(r.end_seed_appended);
    assert!(r.reference_violations().is_empty());
}

// ---------------------------------------------------------------------------
// Load boundary (§7.1, §7.2): refusals mapped to their check.

#[test]
fn unknown_envelope_key_is_v_env_1() {
    let mut log = Log::sample();
    log.ev(13)["extra"] = json!(1);
    let r = log.verify();
    assert_refused(&r, CheckId::Env1, Some(13));
    assert_eq!(r.findings[0].line, Some(15));
}

#[test]
fn retired_header_delta_is_v_env_2() {
    let mut log = Log::sample();
    log.insert(
        5,
        json!({"type": "request/header-delta", "time": 1780000000041u64, "data": {}}),
    );
    assert_refused(&log.verify(), CheckId::Env2, Some(5));
}

#[test]
fn empty_provider_is_v_env_3() {
    let mut log = Log::sample();
    log.data(3)["header"]["config"]["provider"] = json!("");
    assert_refused(&log.verify(), CheckId::Env3, Some(3));
}

#[test]
fn empty_message_id_is_v_env_4() {
    let mut log = Log::sample();
    log.data(31)["id"] = json!("");
    assert_refused(&log.verify(), CheckId::Env4, Some(31));
}

#[test]
fn seq_gap_before_a_turn_end_is_v_surf_1() {
    let mut log = Log::sample();
    for e in &mut log.events[30..] {
        let s = e["seq"].as_u64().unwrap();
        e["seq"] = json!(s + 1);
    }
    let r = log.verify();
    assert_eq!(r.verdict(false), Verdict::Refused);
    assert_eq!(r.findings[0].check, CheckId::Surf1);
    assert!(
        r.findings[0]
            .message
            .contains("seq gap in committed region at line 31 (expected 30, got 31)"),
        "{:?}",
        r.findings[0]
    );
    assert_eq!(r.findings[0].line, Some(32));
}

#[test]
fn compaction_event_on_the_surface_is_v_surf_2() {
    let mut log = Log::sample();
    log.ev(26)["surfaceOp"] = json!("append");
    assert_refused(&log.verify(), CheckId::Surf2, Some(26));
}

#[test]
fn citing_a_later_seq_is_v_surf_3() {
    let mut log = Log::sample();
    log.ev(12)["sourceEventSeqs"] = json!([40]);
    assert_refused(&log.verify(), CheckId::Surf3, Some(12));
}

#[test]
fn dropping_a_cited_shadowed_seq_is_v_surf_4() {
    let mut log = Log::sample();
    log.ev(28)["sourceEventSeqs"] = json!([26, 27, 2, 25]);
    assert_refused(&log.verify(), CheckId::Surf4, Some(28));
}

#[test]
fn duplicating_a_replacement_is_v_surf_4() {
    let mut log = Log::sample();
    let copy = log.events[28].clone();
    log.insert(29, copy);
    // The copy names nodes the first replacement already shadowed: the
    // loader refuses it (V-SURF-4), and it is a range the token meter
    // cannot price either (V-MTR-3, reported beside the refusal).
    let r = log.verify();
    assert_eq!(r.verdict(false), Verdict::Refused);
    assert_eq!(ids(&r), vec!["V-SURF-4", "V-MTR-3"]);
    assert_eq!(r.findings[0].seq, Some(29));
    assert_finding(
        &r,
        CheckId::Mtr3,
        29,
        "token surface: replace at seq 29 has invalid current range (start seq 2 not found in surface)",
    );
    assert_eq!(r.findings[1].line, Some(31));
}

#[test]
fn prune_changing_is_error_is_v_surf_5() {
    let mut log = Log::sample();
    log.data(25)["message"]["content"][0]["isError"] = json!(true);
    assert_refused(&log.verify(), CheckId::Surf5, Some(25));
}

// ---------------------------------------------------------------------------
// Session invariant (§7.3).

#[test]
fn step_numbering_is_v_sess_3() {
    let mut log = Log::sample();
    log.data(14)["step"] = json!(3);
    let r = log.verify();
    assert_eq!(r.verdict(false), Verdict::Violations);
    assert_finding(
        &r,
        CheckId::Sess3,
        14,
        "step/start expected step 2 in turn 1, got 3",
    );
    // Every later event of the step names step 2 while step 3 is open.
    assert_finding(
        &r,
        CheckId::Sess3,
        15,
        "assistant/chunk names turn 1/step 2 but open is turn 1/step 3",
    );
    assert_eq!(
        r.reference_violations()[0].message,
        "invariant violated by \"@deepseek-ai/dsh-session\": step/start expected step 2 in turn 1, got 3"
    );
}

#[test]
fn turn_numbering_is_v_sess_2() {
    let mut log = Log::sample();
    for s in [23, 39] {
        log.data(s)["turn"] = json!(3);
    }
    let r = log.verify();
    assert_finding(&r, CheckId::Sess2, 23, "turn/start expected turn 2, got 3");
    // The rest of the turn is consistent with the turn as logged.
    assert!(
        !r.findings
            .iter()
            .any(|f| f.check == CheckId::Sess2 && f.seq == Some(39))
    );
}

#[test]
fn unpairing_a_tool_call_is_v_sess_4() {
    let mut log = Log::sample();
    log.data(11)["callId"] = json!("call_other");
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Sess4,
        12,
        "tool/result for call_1 with no prior tool/call in this step",
    );
}

#[test]
fn a_result_for_an_unknown_call_breaks_the_transcript_v_prv_12() {
    let mut log = Log::sample();
    for s in [12, 25] {
        let m = &mut log.data(s)["message"];
        m["source"]["callId"] = json!("call_zzz");
        m["content"][0]["toolCallId"] = json!("call_zzz");
    }
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Sess4,
        12,
        "tool/result for call_zzz with no prior tool/call in this step",
    );
    assert_fires(
        &r,
        CheckId::Prv12,
        12,
        "tool result for call_zzz has no earlier assistant tool-call",
    );
    assert_fires(
        &r,
        CheckId::Prv12,
        13,
        "step 1/1 ends with tool call call_1",
    );
}

#[test]
fn prune_outside_a_turn_is_v_sess_5() {
    let mut log = Log::sample();
    log.remove(23); // turn/start 2
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Sess5,
        24,
        "tool/result surface replacement appended outside any open turn",
    );
    assert_finding(
        &r,
        CheckId::Cmp3,
        25,
        "compaction/start for turn 2 appended outside any open turn",
    );
}

#[test]
fn request_context_between_turns_is_v_sess_6() {
    let mut log = Log::sample();
    log.insert(
        23,
        json!({"type": "request/context", "time": 1780000000225u64,
               "data": {"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 128000}}),
    );
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Sess6,
        23,
        "request/context appended outside any open turn (core execution events must be turn-enclosed)",
    );
    assert_eq!(ids(&r), vec!["V-SESS-6"]);
}

// ---------------------------------------------------------------------------
// Compaction invariant (§7.4).

#[test]
fn empty_compaction_id_is_v_cmp_1() {
    let mut log = Log::sample();
    log.data(26)["compactionId"] = json!("");
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp1,
        26,
        "compaction/start compactionId must be a non-empty string",
    );
    assert_finding(
        &r,
        CheckId::Cmp4,
        27,
        "compaction/summary id cmp-1 does not match compaction/start id ",
    );
}

#[test]
fn a_missing_end_makes_a_nested_start_and_a_crossing_v_cmp_2_and_7() {
    let mut log = Log::sample();
    log.remove(29); // compaction/end of cmp-1
    let r = log.verify();
    // turn/end 2 (now seq 38) crosses the live bracket: the next bracket
    // marker is a start, not an end-seed.
    assert_finding(
        &r,
        CheckId::Cmp7,
        38,
        "turn/end cannot cross an open compaction for turn 2",
    );
    assert_finding(
        &r,
        CheckId::Cmp2,
        40,
        "compaction/start while turn 2 is still compacting",
    );
    let rv = r.reference_violations();
    assert_eq!(rv.len(), 1);
    assert_eq!(
        rv[0].message,
        "invariant violated by \"@deepseek-ai/dsh-compaction\": turn/end cannot cross an open compaction for turn 2"
    );
}

#[test]
fn a_crossed_bracket_that_an_end_seed_supersedes_is_stale() {
    // Crash inside a bracket: start, then the turn ends (as repair would),
    // then the log ends. The end-seed marker the reference appends makes the
    // start stale, so the crossing is no violation.
    let mut log = Log::sample();
    log.events.truncate(27);
    log.events.push(
        json!({"type": "turn/end", "seq": 27, "time": 1780000000270u64,
                           "data": {"turn": 2, "reason": {"kind": "interrupted"}}}),
    );
    let r = log.verify();
    assert!(
        !r.findings.iter().any(|f| f.severity == Severity::Error),
        "{:#?}",
        r.findings
    );
    // The same crossing proven live by a later compaction/end is a violation.
    log.events.push(
        json!({"type": "compaction/end", "seq": 28, "time": 1780000000280u64,
                           "data": {"compactionId": "cmp-1", "turn": 2, "error": "crashed"}}),
    );
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp7,
        27,
        "turn/end cannot cross an open compaction for turn 2",
    );
    assert_finding(
        &r,
        CheckId::Cmp3,
        28,
        "compaction/end for turn 2 appended outside any open turn",
    );
}

#[test]
fn wrong_owner_is_v_cmp_3() {
    let mut log = Log::sample();
    log.data(26)["turn"] = json!(1);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp3,
        26,
        "compaction/start names turn 1 but open turn is 2",
    );
    assert_finding(
        &r,
        CheckId::Cmp5,
        29,
        "compaction/end owner 2 does not match compaction/start owner 1",
    );
}

#[test]
fn reordered_bracket_is_v_cmp_4_and_v_cmp_5() {
    let mut log = Log::sample();
    // Summary before start (seqs kept in place).
    let start = log.events[26].clone();
    let summary = log.events[27].clone();
    log.events[26] = summary;
    log.events[27] = start;
    log.ev(26)["seq"] = json!(26);
    log.ev(27)["seq"] = json!(27);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp4,
        26,
        "compaction/summary has no matching compaction/start",
    );
    assert_finding(
        &r,
        CheckId::Cmp5,
        29,
        "successful compaction/end requires one compaction/summary",
    );
    assert_fires(
        &r,
        CheckId::Prv2,
        28,
        "checkpoint has no compaction/summary before it",
    );
}

#[test]
fn duplicated_summary_is_v_cmp_4() {
    let mut log = Log::sample();
    let copy = log.events[27].clone();
    log.insert(28, copy);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp4,
        28,
        "compaction/summary repeated within one compaction",
    );
}

#[test]
fn summary_fields_are_v_cmp_4() {
    let mut log = Log::sample();
    log.data(27)["shadowedRange"]["start"] = json!(10);
    log.data(42)["shadowedTokenCount"] = json!(-1);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp4,
        27,
        "compaction/summary shadowedRange must match the first and last shadowedSeqs",
    );
    assert_fires(
        &r,
        CheckId::Prv3,
        28,
        "summary shadowedRange 10..25 differs from the replace range 2..25",
    );
    assert_finding(
        &r,
        CheckId::Cmp4,
        42,
        "compaction/summary shadowedTokenCount must be a non-negative safe integer",
    );
}

#[test]
fn end_after_checkpoint_moved_before_it_is_v_cmp_6() {
    let mut log = Log::sample();
    let cp = log.events[28].clone();
    let end = log.events[29].clone();
    log.events[28] = end;
    log.events[29] = cp;
    log.ev(28)["seq"] = json!(28);
    log.ev(29)["seq"] = json!(29);
    // The second compaction names the checkpoint by its new seq.
    log.ev(43)["surfaceOp"]["start"] = json!(29);
    log.ev(43)["sourceEventSeqs"] = json!([41, 42, 29, 20, 31]);
    log.data(42)["shadowedRange"]["start"] = json!(29);
    log.data(42)["shadowedSeqs"] = json!([29, 20, 31]);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp6,
        29,
        "compaction checkpoint has no matching compaction/start",
    );
    assert_fires(
        &r,
        CheckId::Prv2,
        28,
        "successful compaction/end without a checkpoint",
    );
}

#[test]
fn checkpoint_of_another_bracket_is_v_cmp_6() {
    let mut log = Log::sample();
    log.data(28)["source"]["compactionId"] = json!("cmp-9");
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmp6,
        28,
        "compaction checkpoint id cmp-9 does not match compaction/start id cmp-1",
    );
}

// ---------------------------------------------------------------------------
// Command pairing.

#[test]
fn command_pairing_is_v_cmd() {
    let mut log = Log::sample();
    log.data(45)["commandId"] = json!("cmd-2");
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmd2,
        45,
        "command/done \"cmd-2\" pairs no prior command/run in this log",
    );

    let mut log = Log::sample();
    log.data(45)["sourceEventSeq"] = json!(40); // the command/run itself
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmd3,
        45,
        "command/done \"cmd-1\" has invalid sourceEventSeq 40",
    );

    let mut log = Log::sample();
    let run = log.events[40].clone();
    log.insert(41, run);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Cmd1,
        41,
        "command/run repeats commandId \"cmd-1\"",
    );
}

// ---------------------------------------------------------------------------
// Provenance (§7.6): warnings.

#[test]
fn checkpoint_not_citing_its_start_is_v_prv_1_warning() {
    let mut log = Log::sample();
    log.ev(28)["sourceEventSeqs"] = json!([27, 2, 10, 25]);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-1"]);
    assert_finding(
        &r,
        CheckId::Prv1,
        28,
        "checkpoint sourceEventSeqs [27, 2, 10, 25] are not [start, summary, …shadowedSeqs] = [26, 27, 2, 10, 25]",
    );
    assert_eq!(r.findings[0].severity, Severity::Warning);
    assert_eq!(r.verdict(false), Verdict::Clean);
    assert_eq!(r.verdict(true), Verdict::Violations);
}

#[test]
fn model_visible_event_inside_an_automatic_bracket_is_v_prv_2() {
    let mut log = Log::sample();
    log.insert(
        29,
        json!({"type": "user/message", "time": 1780000000285u64, "surfaceOp": "append",
               "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"},
                        "role": "user", "id": "msg-x"}}),
    );
    // The manual compaction that follows shadows the new node (price 9) too.
    log.ev(44)["sourceEventSeqs"] = json!([42, 43, 28, 20, 29, 32]);
    log.data(43)["shadowedSeqs"] = json!([28, 20, 29, 32]);
    log.data(43)["shadowedTokenCount"] = json!(162 + 9);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-2"]);
    assert_fires(
        &r,
        CheckId::Prv2,
        29,
        "lands between the checkpoint at seq 28",
    );
}

#[test]
fn wrong_token_count_is_v_prv_4_and_v_prv_5() {
    let mut log = Log::sample();
    log.data(27)["shadowedTokenCount"] = json!(100);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Prv4,
        28,
        "summary shadowedTokenCount 100 differs from 1456, the price of the shadowed nodes [2, 10, 25]",
    );
    assert_finding(
        &r,
        CheckId::Prv5,
        28,
        "checkpoint prices 125 tokens, not less than the 100 it replaced",
    );
}

#[test]
fn altered_preamble_is_v_prv_6() {
    let mut log = Log::sample();
    let t = log.data(43)["content"][0]["text"]
        .as_str()
        .unwrap()
        .replace("automatically", "manually");
    log.data(43)["content"][0]["text"] = json!(t);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-6"]);
    assert_fires(&r, CheckId::Prv6, 43, "the preamble block differs");
}

#[test]
fn summary_shapes_are_v_prv_7_and_v_prv_8() {
    let mut log = Log::sample();
    log.data(27)["rawOutput"][1]["text"] = json!("something else");
    log.data(42)["summary"] = json!([{"type": "text", "text": " \n\u{feff}"}]);
    log.data(42)["rawOutput"] = json!([{"type": "text", "text": " \n\u{feff}"}]);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Prv8,
        27,
        "compaction/summary rawOutput text blocks differ from its summary",
    );
    assert_finding(
        &r,
        CheckId::Prv7,
        42,
        "compaction/summary summary has no non-blank text",
    );
}

#[test]
fn prune_pairs_are_v_prv_9_10_11() {
    // Something between the prune and its replacement.
    let mut log = Log::sample();
    log.insert(
        25,
        json!({"type": "request/context", "time": 1780000000245u64,
               "data": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}}),
    );
    let r = log.verify();
    assert_fires(
        &r,
        CheckId::Prv9,
        24,
        "not immediately followed by its tool/result replacement",
    );
    assert_fires(&r, CheckId::Prv11, 26, "not preceded by a compaction/prune");

    // A wrong recorded price.
    let mut log = Log::sample();
    log.data(24)["shadowedTokenCount"] = json!(12);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-10", "V-MTR-5", "V-MTR-5"]);
    assert_finding(
        &r,
        CheckId::Prv10,
        24,
        "compaction/prune shadowedTokenCount 12 differs from 2612, the price of the tool result at seq 12",
    );
    // The projections take the recorded price: they drift from measure().
    assert_finding(
        &r,
        CheckId::Mtr5,
        25,
        "replace at seq 25 over range 12-12: the projections price the shadowed nodes at 12 (shadowedTokenCount of seq 24), measure() at 2612 (drift -2600)",
    );

    // No prune at all: the replacement is not metered either.
    let mut log = Log::sample();
    log.remove(24);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-11", "V-MTR-5", "V-MTR-5"]);
}

// ---------------------------------------------------------------------------
// Token-meter replay (§7.5).

#[test]
fn a_step_opened_twice_is_v_mtr_1() {
    let mut log = Log::sample();
    log.remove(13); // turn 1 step 1 never ends
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Mtr1,
        13,
        "token meter: step/start at seq 13 arrived before turn 1/step 1 ended",
    );
    assert_eq!(r.verdict(false), Verdict::Violations);
    // measure() stops at its first replay error, and so does the check.
    let mtr: Vec<_> = r
        .findings
        .iter()
        .filter(|f| matches!(f.check, CheckId::Mtr1 | CheckId::Mtr2))
        .collect();
    assert_eq!(mtr.len(), 1, "{mtr:#?}");

    // A message naming a step that is not open.
    let mut log = Log::sample();
    log.data(20)["step"] = json!(1);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Mtr1,
        20,
        "token meter: assistant/message at seq 20 has no matching step/start event",
    );
}

#[test]
fn a_message_citing_what_is_not_its_chunk_is_v_mtr_2() {
    // A tool result among the sources: the loader and the invariant
    // companions accept it, the meter's anchor does not.
    let mut log = Log::sample();
    log.ev(20)["sourceEventSeqs"] = json!([15, 16, 17, 18, 12]);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-MTR-2"]);
    assert_finding(
        &r,
        CheckId::Mtr2,
        20,
        "token meter: assistant/message at seq 20 source seq 12 is not assistant/chunk",
    );
    assert_eq!(r.findings[0].severity, Severity::Error);
    assert_eq!(r.findings[0].line, Some(22));
    assert_eq!(r.verdict(false), Verdict::Violations);
    assert!(r.reference_violations().is_empty());

    // A chunk of another step.
    let mut log = Log::sample();
    log.ev(20)["sourceEventSeqs"] = json!([5, 16, 17, 18, 19]);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-MTR-2"]);
    assert_finding(
        &r,
        CheckId::Mtr2,
        20,
        "token meter: assistant/message at seq 20 source seq 5 belongs to another step",
    );
}

#[test]
fn replay_findings_are_what_measure_throws() {
    // The meter samples: where `dsh measure` fails with a replay error,
    // verify reports that error (same seq, same words) as V-MTR-1/2; where
    // it measures, verify has no replay finding.
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("samples")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if !name.starts_with("meter-") || !name.ends_with(".jsonl") {
            continue;
        }
        let out = dsh()
            .args(["measure", "--json"])
            .arg(&path)
            .output()
            .unwrap();
        let m: J = serde_json::from_slice(&out.stdout).unwrap();
        let r = verify(&LogSource::File(path.clone()), &LoadOptions::default());
        let replay: Vec<_> = r
            .findings
            .iter()
            .filter(|f| matches!(f.check, CheckId::Mtr1 | CheckId::Mtr2))
            .collect();
        match m["error"].as_str() {
            Some(e) => {
                assert_eq!(out.status.code(), Some(3), "{name}");
                assert_eq!(replay.len(), 1, "{name}: {replay:#?}");
                assert_eq!(replay[0].message, e, "{name}");
                assert_eq!(replay[0].seq, m["seq"].as_u64(), "{name}");
                assert_eq!(r.verdict(false), Verdict::Violations, "{name}");
            }
            None => assert!(replay.is_empty(), "{name}: {replay:#?}"),
        }
        checked += 1;
    }
    assert!(checked >= 7, "{checked}");
}

#[test]
fn repeated_step_labels_stop_the_replay_with_a_note() {
    // measure() re-reads such a log keeping every chunk; verify reads it
    // once, so it says where the replay check stopped (the session invariant
    // reports the repeated labels).
    let r = verify(
        &LogSource::File(root().join("samples/meter-repeated-labels.jsonl")),
        &LoadOptions::default(),
    );
    assert_eq!(ids(&r), vec!["V-SESS-3"]);
    assert!(
        r.notes.iter().any(|n| n
            == "token meter: V-MTR-1/2 not checked past seq 17: its assistant/message cites chunk 5 of an earlier step with the same turn/step labels"),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_shadow_price_for_another_range_is_v_mtr_4() {
    let mut log = Log::sample();
    log.data(24)["shadowedRange"] = json!({"start": 10, "end": 12});
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-9", "V-MTR-4"]);
    assert_finding(
        &r,
        CheckId::Mtr4,
        25,
        "token surface: replace at seq 25 over range 12-12 has no adjacent shadow price (armed claim covers 10-12)",
    );
    assert_eq!(r.verdict(false), Verdict::Violations);
    assert!(r.reference_violations().is_empty());

    // The same for a compaction summary and its checkpoint; the projections
    // stop there, so no drift is reported after it.
    let mut log = Log::sample();
    log.data(27)["shadowedRange"] = json!({"start": 2, "end": 12});
    let r = log.verify();
    // (The compaction companion also sees the range disagree with
    // shadowedSeqs.)
    assert_eq!(ids(&r), vec!["V-CMP-4", "V-PRV-3", "V-MTR-4"]);
    assert_finding(
        &r,
        CheckId::Mtr4,
        28,
        "token surface: replace at seq 28 over range 2-25 has no adjacent shadow price (armed claim covers 2-12)",
    );
}

#[test]
fn projections_drifting_from_measure_is_v_mtr_5() {
    // Something between the prune and its replacement expires the claim:
    // the projections fold the replacement with delta 0.
    let mut log = Log::sample();
    log.insert(
        25,
        json!({"type": "request/context", "time": 1780000000245u64,
               "data": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}}),
    );
    let r = log.verify();
    let mtr: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.check == CheckId::Mtr5)
        .collect();
    assert_eq!(mtr.len(), 2, "{mtr:#?}");
    assert_eq!(mtr[0].seq, Some(26));
    assert_eq!(mtr[0].severity, Severity::Warning);
    // The replacement prices less than the 2612 of the original: measure()
    // moves by the difference, the projections by nothing; the summary and
    // the checkpoint then carry the difference along to the end.
    let delta = mtr[0]
        .message
        .strip_prefix("replace at seq 26 over range 12-12 has no adjacent shadow price: the projections fold it with delta 0, measure() with ")
        .and_then(|m| m.split_once(' '))
        .map(|(d, _)| d.parse::<i64>().unwrap())
        .unwrap_or_else(|| panic!("{}", mtr[0].message));
    assert!(delta < 0, "{delta}");
    assert_eq!(mtr[1].seq, None);
    assert_eq!(mtr[1].line, None);
    assert!(
        mtr[1].message.ends_with(&format!("(drift {delta})")),
        "{}",
        mtr[1].message
    );
    assert!(
        mtr[1].message.starts_with("measure().surfaceTokens is "),
        "{}",
        mtr[1].message
    );
    // Warnings only: the verdict stays clean unless warnings are denied.
    assert_eq!(r.verdict(false), Verdict::Clean);

    // A summary whose recorded price is not the shadowed nodes' price.
    let mut log = Log::sample();
    log.data(27)["shadowedTokenCount"] = json!(1400);
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Mtr5,
        28,
        "replace at seq 28 over range 2-25: the projections price the shadowed nodes at 1400 (shadowedTokenCount of seq 27), measure() at 1456 (drift -56)",
    );
    let end = r.findings.last().unwrap();
    assert_eq!(end.check, CheckId::Mtr5);
    assert!(end.message.ends_with("(drift -56)"), "{}", end.message);
}

#[test]
fn a_replacement_the_pruner_would_not_write_is_v_prv_10() {
    // Same length, other text: only the content half notices.
    let mut log = Log::sample();
    let blocks = &mut log.data(25)["message"]["content"][0]["content"];
    let text = blocks[0]["text"]
        .as_str()
        .unwrap()
        .replacen("0000", "9999", 1);
    blocks[0]["text"] = json!(text);
    let r = log.verify();
    assert_eq!(ids(&r), vec!["V-PRV-10"]);
    assert_finding(
        &r,
        CheckId::Prv10,
        25,
        "replacement content (5159 code points) is not what the pruner (thresholdChars 8192, headChars 4096, tailChars 1024) makes of the tool result at seq 12 (10400 → 5159 code points)",
    );

    // The original content kept as is: not what the pruner writes, and not
    // stable under another pruning pass.
    let mut log = Log::sample();
    let original = log.data(12)["message"]["content"][0]["content"].clone();
    log.data(25)["message"]["content"][0]["content"] = original;
    let r = log.verify();
    assert_finding(
        &r,
        CheckId::Prv10,
        25,
        "replacement content (10400 code points) is not what the pruner (thresholdChars 8192, headChars 4096, tailChars 1024) makes of the tool result at seq 12 (10400 → 5159 code points); pruning the replacement again would change it",
    );

    // The budgets can be configured: with a higher threshold the original
    // would not have been pruned at all.
    let r = verify_with(
        &LogSource::File(Log::sample().write().path().to_path_buf()),
        &LoadOptions::default(),
        &VerifyOptions {
            pruner: PruneConfig {
                threshold_chars: 20000,
                head_chars: 4096,
                tail_chars: 1024,
            },
        },
    );
    assert_eq!(ids(&r), vec!["V-PRV-10"]);
    assert_finding(
        &r,
        CheckId::Prv10,
        25,
        "the original tool result at seq 12 has 10400 code points, within thresholdChars 20000: the pruner leaves it unchanged (pruned with other budgets? set them in [pruner])",
    );
}

#[test]
fn summary_without_a_prior_header_is_v_prv_13() {
    let mut log = Log::sample();
    *log.ev(3) = json!({"type": "request/context", "seq": 3, "time": 1780000000030u64,
                        "data": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}});
    let r = log.verify();
    assert_fires(
        &r,
        CheckId::Prv13,
        27,
        "no request/header precedes this compaction",
    );
}

// ---------------------------------------------------------------------------
// Corpus agreement with the reference.

fn shared() -> Option<PathBuf> {
    let p = root().join("../shared");
    if p.join("corpus/expected").is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: ../shared (corpus) is absent");
        None
    }
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn verdicts_and_violations_agree_with_the_reference_on_the_corpus() {
    let Some(shared) = shared() else { return };
    let corpus = shared.join("corpus");
    let mut checked = 0;
    for sub in ["real", "synthetic", "edge"] {
        let Ok(rd) = std::fs::read_dir(corpus.join(sub)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            if file.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let name = file.file_stem().unwrap().to_str().unwrap();
            let exp_path = corpus.join("expected").join(name).join("verify.json");
            let Ok(text) = std::fs::read_to_string(&exp_path) else {
                continue;
            };
            let expected: J = serde_json::from_str(&text).unwrap();
            let r = verify(&LogSource::File(file.clone()), &LoadOptions::default());
            if crate::support::read_where_the_reference_refuses(name) {
                assert_ne!(
                    r.verdict(false),
                    Verdict::Refused,
                    "{name}: {:#?}",
                    r.findings
                );
            } else if expected.get("error").is_some() {
                assert_eq!(
                    r.verdict(false),
                    Verdict::Refused,
                    "{name}: {:#?}",
                    r.findings
                );
            } else {
                let want: Vec<(String, String)> = expected["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| {
                        (
                            v["package"].as_str().unwrap().to_string(),
                            v["message"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect();
                let got: Vec<(String, String)> = r
                    .reference_violations()
                    .into_iter()
                    .map(|v| (v.package.to_string(), v.message))
                    .collect();
                assert_eq!(got, want, "{name}");
                let verdict = if want.is_empty() {
                    Verdict::Clean
                } else {
                    Verdict::Violations
                };
                assert_eq!(r.verdict(false), verdict, "{name}: {:#?}", r.findings);
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} corpus logs found");
}

#[test]
#[cfg_attr(
    no_shared,
    ignore = "needs ../shared (corpus, reference answers, spec examples) beside the checkout"
)]
fn reference_written_compaction_and_prune_are_clean_without_warnings() {
    let Some(shared) = shared() else { return };
    let ex = shared.join("spec/examples");
    for (input, appended) in [
        (
            "compact-pressure.input.jsonl",
            "compact-pressure.appended.jsonl",
        ),
        ("prune.input.jsonl", "prune.appended.jsonl"),
    ] {
        let mut f = tempfile::Builder::new()
            .suffix(".jsonl")
            .tempfile()
            .unwrap();
        f.write_all(&std::fs::read(ex.join(input)).unwrap())
            .unwrap();
        f.write_all(&std::fs::read(ex.join(appended)).unwrap())
            .unwrap();
        f.flush().unwrap();
        let r = verify(
            &LogSource::File(f.path().to_path_buf()),
            &LoadOptions::default(),
        );
        assert_eq!(r.findings, vec![], "{input}: {:#?}", r.findings);
    }
    // This example was pruned with thresholdChars 400, headChars 120,
    // tailChars 40 (session-log §18.2): clean with those budgets; the
    // defaults would not have pruned the listing.
    let v0 = LogSource::File(ex.join("v0-prune-and-two-compactions.jsonl"));
    let budgets = VerifyOptions {
        pruner: PruneConfig {
            threshold_chars: 400,
            head_chars: 120,
            tail_chars: 40,
        },
    };
    let r = verify_with(&v0, &LoadOptions::default(), &budgets);
    assert_eq!(r.findings, vec![], "{:#?}", r.findings);
    let r = verify(&v0, &LoadOptions::default());
    assert_eq!(ids(&r), vec!["V-PRV-10"]);
    assert_finding(
        &r,
        CheckId::Prv10,
        17,
        "the original tool result at seq 7 has 799 code points, within thresholdChars 8192: the pruner leaves it unchanged (pruned with other budgets? set them in [pruner])",
    );
    // Through the command line, the budgets come from the dsh config.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[pruner]\nthresholdChars = 400\nheadChars = 120\ntailChars = 40\n",
    )
    .unwrap();
    let file = ex.join("v0-prune-and-two-compactions.jsonl");
    let out = dsh()
        .args(["verify", "--json", "--deny-warnings", "--config"])
        .arg(&cfg)
        .arg(&file)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["findings"], json!([]));
    // $DSH_CONFIG is honoured too; without a config the warning is back.
    dsh()
        .env("DSH_CONFIG", &cfg)
        .args(["verify", "--deny-warnings"])
        .arg(&file)
        .assert()
        .code(0);
    let out = dsh()
        .args(["verify", "--deny-warnings", "--json"])
        .arg(&file)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["findings"][0]["check"], "V-PRV-10");
    // A bad config is a usage error.
    std::fs::write(&cfg, "[pruner]\nheadChars = -1\n").unwrap();
    dsh()
        .args(["verify", "--config"])
        .arg(&cfg)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "headChars (-1) must be a non-negative integer",
        ));
}

// ---------------------------------------------------------------------------
// The command line.

// No dsh config from the environment: the pruner defaults apply.
use crate::support::dsh;

fn mutated(f: impl FnOnce(&mut Log)) -> tempfile::NamedTempFile {
    let mut log = Log::sample();
    f(&mut log);
    log.write()
}

#[test]
fn cli_clean_log_exits_0_with_reference_shape() {
    let out = dsh()
        .args(["verify", "--json"])
        .arg(sample_path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["verdict"], "clean");
    assert_eq!(v["violations"], json!([]));
    assert_eq!(v["checked"].as_array().unwrap().len(), 8);
    assert_eq!(v["checked"][0], "@deepseek-ai/dsh-session");
    assert_eq!(v["findings"], json!([]));
    assert_eq!(v["events"], 46);
    assert_eq!(v["endSeedAppended"], true);
}

#[test]
fn cli_violations_exit_1_and_report_every_one() {
    let f = mutated(|l| {
        l.data(14)["step"] = json!(3);
        l.data(45)["commandId"] = json!("cmd-2");
    });
    let out = dsh()
        .args(["verify", "--json"])
        .arg(f.path())
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["verdict"], "violations");
    let violations = v["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 2);
    assert_eq!(violations[1]["package"], "@deepseek-ai/dsh-commands");
    let findings = v["findings"].as_array().unwrap();
    assert!(
        findings.len() > 2,
        "all violations, not the first per package"
    );
    let first = &findings[0];
    assert_eq!(first["check"], "V-SESS-3");
    assert_eq!(first["severity"], "error");
    assert_eq!(first["seq"], 14);
    assert_eq!(first["line"], 16);
    assert_eq!(first["package"], "@deepseek-ai/dsh-session");
    assert_eq!(v["counts"]["error"], findings.len());

    // --exit-zero reports without failing.
    dsh()
        .args(["verify", "--exit-zero"])
        .arg(f.path())
        .assert()
        .code(0);
}

#[test]
fn cli_human_report_groups_by_check() {
    let f = mutated(|l| {
        l.data(14)["step"] = json!(3);
        l.ev(28)["sourceEventSeqs"] = json!([27, 2, 10, 25]);
    });
    let out = dsh()
        .arg("verify")
        .arg(f.path())
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("V-SESS-3 (error, §7.3)"), "{text}");
    assert!(
        text.contains("    seq 14 (line 16): step/start expected step 2 in turn 1, got 3"),
        "{text}"
    );
    assert!(text.contains("V-PRV-1 (warning, §7.6)"), "{text}");
    assert_eq!(
        text.matches("V-SESS-3 (").count(),
        1,
        "one group per check: {text}"
    );
}

#[test]
fn cli_deny_warnings_and_github_annotations() {
    let f = mutated(|l| {
        l.ev(28)["sourceEventSeqs"] = json!([27, 2, 10, 25]);
    });
    dsh().arg("verify").arg(f.path()).assert().code(0);
    dsh()
        .args(["verify", "--deny-warnings"])
        .arg(f.path())
        .assert()
        .code(1);
    let out = dsh()
        .args(["verify", "--format", "github"])
        .arg(f.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let want = format!(
        "::warning file={},line=30,title=V-PRV-1::V-PRV-1 seq 28: checkpoint sourceEventSeqs",
        f.path()
            .display()
            .to_string()
            .replace(':', "%3A")
            .replace(',', "%2C")
    );
    assert!(text.starts_with(&want), "{text}");
    let out = dsh()
        .args(["verify", "--format", "github", "--deny-warnings"])
        .arg(f.path())
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(out).unwrap().starts_with("::error file="));
}

#[test]
fn cli_refused_log_exits_3_with_error() {
    let f = mutated(|l| {
        l.ev(12)["sourceEventSeqs"] = json!([40]);
    });
    let out = dsh()
        .args(["verify", "--json"])
        .arg(f.path())
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("invalid seed event at index 12")
    );
    assert_eq!(v["verdict"], "refused");
    assert_eq!(v["findings"][0]["check"], "V-SURF-3");
    assert_eq!(v["findings"][0]["line"], 14);
    assert_eq!(v["schema_version"], 1);
}

#[test]
fn cli_many_logs_keep_going_past_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(sample_path(), dir.path().join("a-clean.jsonl")).unwrap();
    let bad = mutated(|l| l.data(14)["step"] = json!(3));
    std::fs::copy(bad.path(), dir.path().join("b-violations.jsonl")).unwrap();
    std::fs::write(dir.path().join("c-refused.jsonl"), "not a log\n").unwrap();
    let out = dsh()
        .args(["verify", "--json", "-j", "2"])
        .arg(dir.path())
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["verdict"], "refused");
    assert_eq!(
        v["summary"],
        json!({"logs": 3, "clean": 1, "violations": 1, "refused": 1,
               "errors": v["logs"][1]["counts"]["error"].as_u64().unwrap() + 1, "warnings": 0})
    );
    let verdicts: Vec<&str> = v["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["clean", "violations", "refused"]);
    assert_eq!(v["logs"][2]["findings"][0]["check"], "V-LOG-2");

    // A missing file is reported among the others, not fatal.
    let out = dsh()
        .args(["verify", "--json"])
        .arg(sample_path())
        .arg(dir.path().join("missing.jsonl"))
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["logs"][0]["verdict"], "clean");
    assert_eq!(v["logs"][1]["findings"][0]["check"], "V-LOG-1");
}

#[test]
fn cli_all_audits_the_home_and_usage_errors_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let sdir = home
        .path()
        .join("sessions/--home-user-project--/verify-clean");
    std::fs::create_dir_all(&sdir).unwrap();
    std::fs::copy(sample_path(), sdir.join("session.jsonl")).unwrap();
    let out = dsh()
        .args(["verify", "--all", "--json", "--home"])
        .arg(home.path())
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["summary"]["logs"], 1);
    assert_eq!(v["logs"][0]["verdict"], "clean");

    // No LOG means the whole home, like measure and locks; this test
    // environment's home does not exist.
    dsh()
        .arg("verify")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no DSH home"));
    dsh()
        .args(["verify", "--json", "--format", "github"])
        .arg(sample_path())
        .assert()
        .code(2);
}

#[test]
fn cli_lists_every_check() {
    let out = dsh()
        .args(["verify", "--list-checks", "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: J = serde_json::from_slice(&out).unwrap();
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), CheckId::ALL.len());
    let sess3 = checks.iter().find(|c| c["check"] == "V-SESS-3").unwrap();
    assert_eq!(sess3["severity"], "error");
    assert_eq!(sess3["package"], "@deepseek-ai/dsh-session");
    let prv5 = checks.iter().find(|c| c["check"] == "V-PRV-5").unwrap();
    assert_eq!(prv5["severity"], "warning");
    assert_eq!(prv5["package"], J::Null);
    let out = dsh()
        .args(["verify", "--list-checks"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(out).unwrap().contains("V-CMP-7"));
}

// ---------------------------------------------------------------------------
// Packed rows taken whole report what chunks seen one by one report.

/// The verifier seeing every chunk as an event (it declines packed rows).
struct OneByOne(dsh::verify::Verifier);

impl dsh::log::Observer for OneByOne {
    fn event(&mut self, ev: &dsh::Event<'_>, folded: &dsh::log::Folded<'_>) {
        dsh::log::Observer::event(&mut self.0, ev, folded);
    }
}

fn one_by_one(path: &std::path::Path) -> Report {
    let src = LogSource::File(path.to_path_buf());
    let mut v = OneByOne(dsh::verify::Verifier::new(src.display()));
    match dsh::log::load(&src, &LoadOptions::default(), &mut v) {
        Ok(log) => v.0.finish(&log),
        Err(e) => Report::refused(src.display(), e),
    }
}

fn assert_same_reports(path: &std::path::Path) {
    let fast = verify(
        &LogSource::File(path.to_path_buf()),
        &LoadOptions::default(),
    );
    let slow = one_by_one(path);
    assert_eq!(fast.findings, slow.findings, "{}", path.display());
    assert_eq!(fast.notes, slow.notes, "{}", path.display());
    assert_eq!(fast.events, slow.events, "{}", path.display());
}

#[test]
fn packed_rows_taken_whole_find_what_chunks_one_by_one_find() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("samples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    if let Some(shared) = shared() {
        paths.extend(
            crate::support::corpus_logs(&shared)
                .into_iter()
                .map(|(_, p)| p),
        );
    }
    for p in &paths {
        assert_same_reports(p);
    }
    // Rows that break the session rules (another step, no open step, right
    // after a prune) are seen chunk by chunk, each chunk reported.
    let text = std::fs::read_to_string(root().join("samples/coding-session.jsonl")).unwrap();
    for (from, to) in [
        (
            r#""data":{"turn":1,"step":1,"index":1"#,
            r#""data":{"turn":1,"step":2,"index":1"#,
        ),
        (
            r#""data":{"turn":1,"step":1,"index":1"#,
            r#""data":{"turn":7,"step":1,"index":1"#,
        ),
    ] {
        assert!(text.contains(from));
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.replacen(from, to, 1).as_bytes()).unwrap();
        let slow = one_by_one(f.path());
        assert!(
            slow.findings.iter().any(|f| f.check == CheckId::Sess3),
            "{to}: {:?}",
            slow.findings
        );
        assert_same_reports(f.path());
    }
}
