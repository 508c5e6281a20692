//! The stable list of checks `dsh verify` runs (compaction spec §7, plus the
//! load-level refusals and the command-pairing companion the reference also
//! runs).
//!
//! Every check has an id that never changes meaning, a severity and the spec
//! section it comes from. Ids are grouped by section:
//!
//! | id | sev | section | what |
//! |---|---|---|---|
//! | `V-LOG-1` | E | — | the file can be read (exists, readable, a session log) |
//! | `V-LOG-2` | E | session-log §3 | header line, JSON lines, packed rows, legacy shapes are well-formed |
//! | `V-LOG-3` | E | session-log §4.3 | format version and event types are ones rc.8 reads |
//! | `V-ENV-1` | E | §7.1 | envelope keys and `seq`/`time`/`data`/`ignorable` shapes |
//! | `V-ENV-2` | E | §7.1 | no retired `request/header-delta`, `mode/set`, header reason `fallback` |
//! | `V-ENV-3` | E | §7.1 | `request/header` config and `adapterDefaults` |
//! | `V-ENV-4` | E | §7.1 | message shape (id, role, source, content, tool-result block) |
//! | `V-SURF-1` | E | §7.2 | seqs contiguous from 0 |
//! | `V-SURF-2` | E | §7.2 | `surfaceOp`/`sourceEventSeqs` only on (and required on) surface types, exact shapes |
//! | `V-SURF-3` | E | §7.2 | `sourceEventSeqs`: counts, unique, non-empty, cite only earlier seqs |
//! | `V-SURF-4` | E | §7.2 | a replace names current nodes in order and cites every shadowed node |
//! | `V-SURF-5` | E | §7.2 | a `tool/result` replace rewrites one `tool/result`, content only |
//! | `V-SESS-1` | E | §7.3 | seqs strictly increase |
//! | `V-SESS-2` | E | §7.3 | turns: one open at a time, numbered 1, 2, …; `turn/end` closes the open turn with no open step |
//! | `V-SESS-3` | E | §7.3 | steps: inside the open turn, one at a time, numbered from 1; step events name the open step |
//! | `V-SESS-4` | E | §7.3 | an appended `tool/result` names the open step and answers a prior `tool/call` of that step |
//! | `V-SESS-5` | E | §7.3 | a replacement `tool/result` (prune) is inside an open turn |
//! | `V-SESS-6` | E | §7.3 | `request/header`, `request/context`, `todo/write` are inside an open turn |
//! | `V-CMP-1` | E | §7.4 | `compactionId` / `sourceCommandId` are non-empty strings |
//! | `V-CMP-2` | E | §7.4 | no `compaction/start` while a bracket is open |
//! | `V-CMP-3` | E | §7.4 | bracket owner: numbered turn = the open turn, `null` = between turns |
//! | `V-CMP-4` | E | §7.4 | `compaction/summary`: matches the open start, once, `shadowedSeqs`/`shadowedRange`/`shadowedTokenCount` well-formed |
//! | `V-CMP-5` | E | §7.4 | `compaction/end`: matches the open start and owner; success needs a summary |
//! | `V-CMP-6` | E | §7.4 | a checkpoint sits inside the open bracket with the same ids |
//! | `V-CMP-7` | E | §7.4 | no turn boundary inside a live (non-stale) bracket |
//! | `V-CMD-1` | E | — | `command/run` ids are unique |
//! | `V-CMD-2` | E | — | `command/done` pairs a prior `command/run` |
//! | `V-CMD-3` | E | — | `command/done.sourceEventSeq` is a success naming an earlier non-command event |
//! | `V-MTR-1` | E | §7.5 | token meter: step/start, step/end and assistant/message pair up (`measure()` throws otherwise) |
//! | `V-MTR-2` | E | §7.5 | token meter: an assistant/message's cited chunks are earlier, unique `assistant/chunk`s of its step that assemble, and its usage reads |
//! | `V-MTR-3` | E | §7.5 | token meter: every replace names a range on the priced surface (the loader's: reported beside the V-SURF-4 refusal) |
//! | `V-MTR-4` | E | §7.5 | projections: a replace right after a summary/prune covers its `shadowedRange` ("no adjacent shadow price"); the folds read every event |
//! | `V-MTR-5` | W | §7.5 | projections agree with `measure()`: no replace drifts `contextBreakdown.messageTokens` (unmetered, or `shadowedTokenCount` ≠ the shadowed price) |
//! | `V-PRV-1` | W | §7.6 | checkpoint `sourceEventSeqs == [start, summary, …shadowedSeqs]` |
//! | `V-PRV-2` | W | §7.6 | bracket order: summary → checkpoint (next seq) → end; nothing model-visible in between |
//! | `V-PRV-3` | W | §7.6 | `summary.shadowedRange` equals the replace's `{start, end}` |
//! | `V-PRV-4` | W | §7.6 | `summary.shadowedTokenCount` equals the price of the shadowed nodes |
//! | `V-PRV-5` | W | §7.6 | the checkpoint prices less than what it replaced |
//! | `V-PRV-6` | W | §7.6 | checkpoint content is PREAMBLE + tags around the summary |
//! | `V-PRV-7` | W | §7.6 | summary holds only text blocks, some of it not blank |
//! | `V-PRV-8` | W | §7.6 | `llmStreamCall` summaries carry `rawOutput` whose text blocks equal the summary |
//! | `V-PRV-9` | W | §7.6 | `compaction/prune` is immediately followed by its `[S, S]` replace citing `[S]` |
//! | `V-PRV-10` | W | §7.6 | prune `shadowedTokenCount` equals the original node's price; the replacement content is what the pruner makes of the original, and is stable |
//! | `V-PRV-11` | W | §7.6 | every `tool/result` replace is preceded by a `compaction/prune` |
//! | `V-PRV-12` | W | §7.6 | the surface derives a valid transcript: each tool result follows its call; closed steps answer every call |
//! | `V-PRV-13` | W | §7.6 | an `llmStreamCall` summary's request can be rebuilt (a request header precedes the bracket) |
//!
//! **Verdict.** A log is *refused* when the loader refuses it (one `V-LOG`,
//! `V-ENV` or `V-SURF` finding, exit 3); it has *violations* when any finding
//! has severity [`Severity::Error`] (with `--deny-warnings`: any finding at
//! all); otherwise it is *clean*. Error severity is given exactly to the
//! checks the reference enforces: its loader, the `dsh-session`,
//! `dsh-compaction` and `dsh-commands` invariant companions its verification
//! runs (their first violation each is the reference's `violations` list),
//! and the token meter's replay (`measure()` and the projections throw:
//! V-MTR-1…4). So a log has error findings exactly when the reference's
//! verification reports a violation or its meter cannot replay the log.
//! Warnings are the properties the reference relies on without enforcing
//! them.

use std::fmt;

/// How bad a finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The reference rejects the log, or its invariant companion reports it.
    Error,
    /// A property the reference design relies on but does not enforce.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! checks {
    ($($var:ident = $id:literal, $sev:ident, $sec:literal, $pkg:expr, $title:literal;)*) => {
        /// A check, by its stable id.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[allow(missing_docs)]
        pub enum CheckId { $($var,)* }

        impl CheckId {
            /// Every check, in documentation order.
            pub const ALL: &'static [CheckId] = &[$(CheckId::$var,)*];

            /// The id, like `V-SURF-3`.
            pub fn as_str(self) -> &'static str {
                match self { $(CheckId::$var => $id,)* }
            }

            /// Its severity.
            pub fn severity(self) -> Severity {
                match self { $(CheckId::$var => Severity::$sev,)* }
            }

            /// The spec section it comes from (empty when none).
            pub fn section(self) -> &'static str {
                match self { $(CheckId::$var => $sec,)* }
            }

            /// The reference package whose invariant companion enforces it,
            /// when one does.
            pub(crate) fn package(self) -> Option<&'static str> {
                match self { $(CheckId::$var => $pkg,)* }
            }

            /// What it requires, in one line.
            pub fn title(self) -> &'static str {
                match self { $(CheckId::$var => $title,)* }
            }
        }
    };
}

const SESSION: Option<&str> = Some("@deepseek-ai/dsh-session");
const COMPACTION: Option<&str> = Some("@deepseek-ai/dsh-compaction");
const COMMANDS: Option<&str> = Some("@deepseek-ai/dsh-commands");

checks! {
    Log1 = "V-LOG-1", Error, "", None, "the log file can be read";
    Log2 = "V-LOG-2", Error, "session-log §3", None, "header line, JSON lines, packed rows and legacy shapes are well-formed";
    Log3 = "V-LOG-3", Error, "session-log §4.3", None, "the format version and every event type are ones the harness reads";
    Tail1 = "V-TAIL-1", Warning, "session-log §3", None, "the log ends whole: no torn last line, cut Zstandard frame or damaged region (left by a crash or a writer mid-write; `dsh repair` cuts it off)";
    Env1 = "V-ENV-1", Error, "§7.1", None, "envelope keys and seq/time/data/ignorable shapes are valid";
    Env2 = "V-ENV-2", Error, "§7.1", None, "no retired request/header-delta, mode/set or header reason \"fallback\"";
    Env3 = "V-ENV-3", Error, "§7.1", None, "request/header config and adapterDefaults are valid";
    Env4 = "V-ENV-4", Error, "§7.1", None, "message events have a valid message shape";
    Surf1 = "V-SURF-1", Error, "§7.2", None, "seqs are contiguous from 0";
    Surf2 = "V-SURF-2", Error, "§7.2", None, "surfaceOp/sourceEventSeqs appear only on surface events, which require an exact surfaceOp";
    Surf3 = "V-SURF-3", Error, "§7.2", None, "sourceEventSeqs are unique counts citing only earlier seqs";
    Surf4 = "V-SURF-4", Error, "§7.2", None, "a replace names current nodes in order and cites every shadowed node";
    Surf5 = "V-SURF-5", Error, "§7.2", None, "a tool/result replace rewrites one tool/result, content only";
    Sess1 = "V-SESS-1", Error, "§7.3", SESSION, "seqs strictly increase";
    Sess2 = "V-SESS-2", Error, "§7.3", SESSION, "turns open one at a time, numbered 1, 2, …, and close with no open step";
    Sess3 = "V-SESS-3", Error, "§7.3", SESSION, "steps open inside the open turn, one at a time, numbered from 1; step events name the open step";
    Sess4 = "V-SESS-4", Error, "§7.3", SESSION, "an appended tool/result names the open step and answers a tool/call of that step";
    Sess5 = "V-SESS-5", Error, "§7.3", SESSION, "a replacement tool/result is appended inside an open turn";
    Sess6 = "V-SESS-6", Error, "§7.3", SESSION, "request/header, request/context and todo/write are inside an open turn";
    Cmp1 = "V-CMP-1", Error, "§7.4", COMPACTION, "compactionId and sourceCommandId are non-empty strings";
    Cmp2 = "V-CMP-2", Error, "§7.4", COMPACTION, "no compaction/start while a bracket is open";
    Cmp3 = "V-CMP-3", Error, "§7.4", COMPACTION, "a numbered bracket owner is the open turn; a null owner is between turns";
    Cmp4 = "V-CMP-4", Error, "§7.4", COMPACTION, "compaction/summary matches its start, once, with consistent shadowed fields";
    Cmp5 = "V-CMP-5", Error, "§7.4", COMPACTION, "compaction/end matches its start and owner; success requires a summary";
    Cmp6 = "V-CMP-6", Error, "§7.4", COMPACTION, "a checkpoint sits inside the open bracket with the same ids";
    Cmp7 = "V-CMP-7", Error, "§7.4", COMPACTION, "no turn boundary crosses a live compaction bracket";
    Cmd1 = "V-CMD-1", Error, "", COMMANDS, "command/run ids are unique";
    Cmd2 = "V-CMD-2", Error, "", COMMANDS, "command/done pairs a prior command/run";
    Cmd3 = "V-CMD-3", Error, "", COMMANDS, "command/done sourceEventSeq names an earlier non-command event of a success";
    Mtr1 = "V-MTR-1", Error, "§7.5", None, "token meter: step/start, step/end and assistant/message pair up";
    Mtr2 = "V-MTR-2", Error, "§7.5", None, "token meter: an assistant/message's cited chunks are earlier, unique assistant/chunk events of its step that assemble";
    Mtr3 = "V-MTR-3", Error, "§7.5", None, "token meter: every replace names a range on the priced surface";
    Mtr4 = "V-MTR-4", Error, "§7.5", None, "projections: a replace right after a summary/prune covers its shadowedRange";
    Mtr5 = "V-MTR-5", Warning, "§7.5", None, "projections agree with measure(): no replace drifts contextBreakdown.messageTokens";
    Prv1 = "V-PRV-1", Warning, "§7.6", None, "checkpoint sourceEventSeqs are [start, summary, …shadowedSeqs]";
    Prv2 = "V-PRV-2", Warning, "§7.6", None, "summary, checkpoint (next seq) and end come in order with nothing model-visible in between";
    Prv3 = "V-PRV-3", Warning, "§7.6", None, "summary shadowedRange equals the replace range";
    Prv4 = "V-PRV-4", Warning, "§7.6", None, "summary shadowedTokenCount equals the price of the shadowed nodes";
    Prv5 = "V-PRV-5", Warning, "§7.6", None, "the checkpoint prices less than what it replaced";
    Prv6 = "V-PRV-6", Warning, "§7.6", None, "checkpoint content is the preamble and tags around the summary";
    Prv7 = "V-PRV-7", Warning, "§7.6", None, "a summary holds only text blocks, not all blank";
    Prv8 = "V-PRV-8", Warning, "§7.6", None, "an llmStreamCall summary carries rawOutput whose text blocks equal it";
    Prv9 = "V-PRV-9", Warning, "§7.6", None, "compaction/prune is immediately followed by its single-node tool/result replace";
    Prv10 = "V-PRV-10", Warning, "§7.6", None, "prune shadowedTokenCount equals the original node's price; the pruner makes the replacement content of the original";
    Prv11 = "V-PRV-11", Warning, "§7.6", None, "every tool/result replace is preceded by a compaction/prune";
    Prv12 = "V-PRV-12", Warning, "§7.6", None, "the surface derives a valid transcript: tool results follow their calls, closed steps answer every call";
    Prv13 = "V-PRV-13", Warning, "§7.6", None, "an llmStreamCall summary's request can be rebuilt from the log prefix";
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reference invariant companions, in the order the reference's
/// verification loads them (the `checked` list of `oracle verify`).
pub const REFERENCE_COMPANIONS: [&str; 8] = [
    "@deepseek-ai/dsh-session",
    "@deepseek-ai/dsh-compaction",
    "@deepseek-ai/dsh-commands",
    "@deepseek-ai/dsh-compaction-basic",
    "@deepseek-ai/dsh-compaction-tool-result-pruner",
    "@deepseek-ai/dsh-token-meter",
    "@deepseek-ai/dsh-session-persistence",
    "@deepseek-ai/dsh-session-persistence-jsonl",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &c in CheckId::ALL {
            assert!(seen.insert(c.as_str()), "duplicate id {c}");
            assert!(c.as_str().starts_with("V-"));
        }
    }

    #[test]
    fn error_checks_are_the_reference_ones() {
        for &c in CheckId::ALL {
            // The loader, the invariant companions, and the meter's replay
            // (measure() and the projections throw) are the reference's.
            let reference = c.package().is_some()
                || matches!(c.as_str().split('-').nth(1), Some("LOG" | "ENV" | "SURF"))
                || matches!(
                    c,
                    CheckId::Mtr1 | CheckId::Mtr2 | CheckId::Mtr3 | CheckId::Mtr4
                );
            assert_eq!(c.severity() == Severity::Error, reference, "{c}");
            if let Some(p) = c.package() {
                assert!(REFERENCE_COMPANIONS.contains(&p));
            }
        }
    }
}
