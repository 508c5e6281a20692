//! The committed-prefix rule (session-log §3.6, and §3.2 for Zstandard): which
//! lines of a log count, which are a harmless torn tail, and when damage is
//! fatal. Both decoders (generation 0 and 3) apply it through this one type.

use crate::json::Value;

use super::DroppedRegion;
use super::error::{LoadError, LoadRule};

/// Follows the lines of a log in order and decides, line by line, whether
/// its records join the log.
#[derive(Debug, Default)]
pub(crate) struct CommittedPrefix {
    /// The seq the next record must have.
    pub expected: u64,
    /// The first defect: its line, the reference's description and the rule.
    issue: Option<(u64, String, LoadRule)>,
    /// Complete lines dropped from the first defect on.
    dropped: u64,
}

fn corrupt(why: &str, line: u64, rule: LoadRule) -> LoadError {
    LoadError::corrupt(format!("corrupt session log: {why}"))
        .line(line)
        .rule(rule)
}

impl CommittedPrefix {
    /// Nothing has been dropped so far.
    pub(crate) fn is_clean(&self) -> bool {
        self.issue.is_none()
    }

    /// A line (physical line `no`) that is not JSON, or a malformed packed
    /// row. Fatal inside a complete Zstandard frame (`strict`); otherwise the
    /// start (or part) of a torn tail.
    pub(crate) fn undecodable(&mut self, no: u64, strict: bool) -> Result<(), LoadError> {
        // The reference counts event lines from 1, after the header.
        let why = format!("unparsable committed event at line {}", no - 1);
        if strict {
            return Err(corrupt(&why, no, LoadRule::Unparsable));
        }
        if self.issue.is_none() {
            self.issue = Some((no, why, LoadRule::Unparsable));
        }
        self.dropped += 1;
        Ok(())
    }

    /// A decoded line with its records (several for a packed row). `Ok(true)`:
    /// the records join the log, with seqs from [`Self::expected`] on (the
    /// caller advances it). `Ok(false)`: the line is dropped as torn tail.
    /// A damaged region followed by a committed `turn/end` is corruption.
    pub(crate) fn decoded(
        &mut self,
        no: u64,
        strict: bool,
        records: &[Value<'_>],
    ) -> Result<bool, LoadError> {
        let has_turn_end = || {
            records
                .iter()
                .any(|r| r.get("type").is_some_and(|t| t.is_str("turn/end")))
        };
        if let Some((bad, why, rule)) = &self.issue {
            if has_turn_end() {
                return Err(corrupt(why, *bad, *rule));
            }
            self.dropped += 1;
            return Ok(false);
        }
        // The whole line is dropped at its first seq mismatch.
        for (k, r) in records.iter().enumerate() {
            let want = self.expected + k as u64;
            if r.get("seq").and_then(|s| s.as_f64()) != Some(want as f64) {
                let got = r
                    .get("seq")
                    .map(|s| s.to_json())
                    .unwrap_or_else(|| "undefined".into());
                let why = format!(
                    "seq gap in committed region at line {} (expected {want}, got {got})",
                    no - 1
                );
                if strict || has_turn_end() {
                    return Err(corrupt(&why, no, LoadRule::SeqGap));
                }
                self.issue = Some((no, why, LoadRule::SeqGap));
                self.dropped += 1;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The dropped region, if any, and a warning describing it.
    pub(crate) fn finish(self) -> Option<(DroppedRegion, String)> {
        let (line, reason, _) = self.issue?;
        let warning = format!(
            "dropped {} line(s) from line {line} on as a torn tail: {reason}",
            self.dropped
        );
        Some((
            DroppedRegion {
                line,
                reason,
                lines: self.dropped,
            },
            warning,
        ))
    }
}
