//! Format generations (session-log §2, §13) and the file names DSH gives
//! them.
//!
//! DSH keeps one immutable file per generation in a session directory and
//! never rewrites an older one when it migrates a session: `session.jsonl`
//! for generation 0, `session.vN.jsonl` for N ≥ 1 (lowercase `v`, no leading
//! zeros, no `.v0`), each optionally Zstandard-compressed as `….jsonl.zstd`.
//! Readers take the highest generation present. DSH 0.1.5 writes every new
//! session as `session.v3.jsonl.zstd`.
//!
//! What each generation changes in reading is asked of [`Generation`] by
//! the loader, so that one pipeline reads them all:
//!
//! | | G0 | G1 | G2 | G3 |
//! |---|---|---|---|---|
//! | header | rc.8 rules | G0 keys, exact | `isSeeded`, exact | as G2 |
//! | records | events, packed rows | as G0 | one event per line | as G2 |
//! | assistant output | `assistant/chunk` events | as G0 | `stream` embedded, `assistant/attempt` | as G2 |
//! | `sourceEventSeqs` | plain | range-encoded | range-encoded | range-encoded |
//! | replace op | `{op,start,end}` | as G0 | as G0 | `{op,startSeq,endSeq}` |
//! | system prompt | `request/header` | as G0 | as G0 | `system/message` head |
//! | fork cut | `seedLength` | as G0 | `session/end-seed {inherited:true}` | as G2 |

use std::fmt;

/// A session-log format generation this reader decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Generation {
    /// Generation 0: every upstream release to 0.1.1 (the reference, rc.8).
    V0,
    /// Generation 1: G0's layout with an exact header (DSH 0.1.1–0.1.3).
    V1,
    /// Generation 2: one event per line, embedded assistant streams.
    V2,
    /// Generation 3: the system prompt as the surface head (DSH ≥ 0.1.5).
    V3,
}

impl Generation {
    /// Every generation, oldest first.
    const ALL: [Generation; 4] = [
        Generation::V0,
        Generation::V1,
        Generation::V2,
        Generation::V3,
    ];

    /// The newest generation this reader decodes.
    pub(crate) const NEWEST: Generation = Generation::V3;

    /// The generation a header's `version` names, if this reader decodes it.
    pub(crate) fn of_version(version: u64) -> Option<Generation> {
        Generation::ALL.get(usize::try_from(version).ok()?).copied()
    }

    /// The header's `version` number.
    pub(crate) fn number(self) -> u64 {
        self as u64
    }

    /// Records may be packed chunk rows, and assistant output comes as
    /// top-level `assistant/chunk` events (G0, G1).
    pub(crate) fn chunk_events(self) -> bool {
        self <= Generation::V1
    }

    /// `sourceEventSeqs` may be range-encoded (`[a, b]` members).
    pub(crate) fn range_sources(self) -> bool {
        self >= Generation::V1
    }

    /// Exactly one event per line with an exact envelope, `assistant/attempt`
    /// events, `stream` embedded in assistant messages, and the fork cut
    /// marked by `session/end-seed {inherited:true}` (G2, G3).
    pub(crate) fn embedded_streams(self) -> bool {
        self >= Generation::V2
    }

    /// The system prompt is a `system/message` surface head, replace ops are
    /// spelled `{op, startSeq, endSeq}`, `image/offload` marks and ignorable
    /// unknown events exist (G3).
    pub(crate) fn system_head(self) -> bool {
        self >= Generation::V3
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.number())
    }
}

/// What a canonical session-log file name says: the generation number (any
/// N, also ones this reader does not decode) and whether it is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LogFileName {
    /// The `N` of `session.vN.jsonl` (0 for `session.jsonl`).
    pub version: u64,
    /// `….jsonl.zstd`.
    pub zstd: bool,
}

/// Parse a session directory entry's name as DSH does
/// (`@deepseek-ai/dsh-session-format`'s `parseSessionFormatLogFilename`,
/// plus the `.zstd` suffix of the compressed backend): `session.jsonl`,
/// `session.vN.jsonl` with N ≥ 1 in lowercase and without leading zeros.
/// Temporaries, `.v0`, `.V3`, `.v03` and any other name are not canonical
/// (`None`).
pub(crate) fn parse_log_file_name(name: &str) -> Option<LogFileName> {
    let (stem, zstd) = match name.strip_suffix(".zstd") {
        Some(s) => (s, true),
        None => (name, false),
    };
    let middle = stem.strip_prefix("session")?.strip_suffix(".jsonl")?;
    if middle.is_empty() {
        return Some(LogFileName { version: 0, zstd });
    }
    let digits = middle.strip_prefix(".v")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    if !canonical {
        return None;
    }
    // A number too large for u64 is no generation anyone wrote.
    let version = digits.parse().ok()?;
    Some(LogFileName { version, zstd })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_as_dsh_parses_them() {
        let v = |n, zstd| Some(LogFileName { version: n, zstd });
        assert_eq!(parse_log_file_name("session.jsonl"), v(0, false));
        assert_eq!(parse_log_file_name("session.jsonl.zstd"), v(0, true));
        assert_eq!(parse_log_file_name("session.v1.jsonl"), v(1, false));
        assert_eq!(parse_log_file_name("session.v3.jsonl.zstd"), v(3, true));
        assert_eq!(parse_log_file_name("session.v12.jsonl"), v(12, false));
        for not in [
            "session.v0.jsonl",
            "session.V3.jsonl",
            "session.v03.jsonl",
            "session.v.jsonl",
            "session.v3a.jsonl",
            "session.v-1.jsonl",
            "session.v3.jsonl.tmp",
            "session.v3.jsonl.zst",
            ".session.v3.jsonl",
            "session.v3.jsonl.zstd.zstd",
            "session.jsonl.1234.tmp",
            "Session.jsonl",
            "session.v99999999999999999999999.jsonl",
        ] {
            assert_eq!(parse_log_file_name(not), None, "{not}");
        }
    }
}
