//! Why a log could not be read, and where.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a log a problem sits: 1-based physical line and, when known, the
/// event seq.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Location {
    /// 1-based line in the (decompressed) file; the header is line 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub line: Option<u64>,
    /// Event seq, when the problem belongs to one event.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub seq: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.seq) {
            (Some(l), Some(s)) => write!(f, "line {l}, seq {s}"),
            (Some(l), None) => write!(f, "line {l}"),
            (None, Some(s)) => write!(f, "seq {s}"),
            (None, None) => Ok(()),
        }
    }
}

/// The class of a refusal. Each class is a stable part of the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be read (missing, permission, not a file).
    Io,
    /// The bytes are damaged: bad header, unparsable committed line, seq gap
    /// before a committed `turn/end`, bad Zstandard frame.
    Corrupt,
    /// Written by a harness this reader does not implement (format version,
    /// unknown required event type).
    Unsupported,
    /// Well-formed lines that break a validation rule (envelope, message
    /// shape, request header, surface fold R1–R16, retired shapes).
    Invalid,
    /// A session directory or id that holds no session log.
    NotFound,
    /// The log exceeds a configured bound (line length, decompressed size).
    Limit,
}

/// The rule a refusal broke, so that tools (e.g. `verify`) can map a refusal
/// to a check without reading its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadRule {
    /// The committed region is not contiguous: a seq gap (§3.6).
    SeqGap,
    /// A committed line is not JSON, a packed row is malformed, or a
    /// Zstandard frame is damaged (§3.2, §3.5, §3.6).
    Unparsable,
    /// The header line (§3.4).
    Header,
    /// A retired legacy shape (§12.1).
    Retired,
    /// A malformed legacy shape that cannot be upgraded (§12.2).
    Legacy,
    /// The event envelope (§4.1).
    Envelope,
    /// A message shape (§6.6).
    MessageShape,
    /// A `request/header` rule (§9.1).
    RequestHeader,
    /// An unknown event type not marked `ignorable` (§4.3).
    UnknownType,
    /// A surface rule: `"R1"` … `"R16"` (§7.4).
    Surface(&'static str),
}

/// Why a log was refused. The reference refuses exactly the same logs.
#[derive(Debug, Clone)]
pub struct LoadError {
    /// What class of problem.
    pub kind: LoadErrorKind,
    /// One sentence, in the reference's words where it has any.
    pub message: String,
    /// Where.
    pub at: Location,
    /// The file, when one is involved.
    pub file: Option<Box<Path>>,
    /// The rule broken, when the refusal is about one.
    pub rule: Option<LoadRule>,
    /// The operating-system error behind an [`LoadErrorKind::Io`] failure
    /// (shared, so that the error stays `Clone`). Its text is already part
    /// of [`Self::message`]; it is kept so callers can tell, say, a
    /// permission problem from a missing file by [`std::io::ErrorKind`].
    pub io: Option<std::sync::Arc<std::io::Error>>,
    /// What the user can do about it, when dsh can tell.
    pub hint: Option<Box<Hint>>,
}

/// A next step for a refused log: what dsh recognised and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// The header misses only what `--lenient` tolerates (`detail` names it).
    Lenient(String),
    /// The header line is a session header with one problem, named here.
    Header(String),
    /// A Zstandard file of one frame, as the `zstd` tool writes it, not the
    /// harness's artifact (header frame first): decompress it first.
    SingleFrameZstd,
    /// Another agent's transcript (Claude Code, Codex, OpenCode, …).
    ForeignTranscript(&'static str),
}

impl Hint {
    /// The hint as one clause, with `command` (e.g. `surface`) where it
    /// suggests a command line.
    pub fn render(&self, file: &str, command: &str) -> String {
        match self {
            Hint::Lenient(detail) => format!(
                "{detail}; add --lenient to read it as the harness's recovery does (assumes 0, with a warning)"
            ),
            Hint::Header(detail) => detail.clone(),
            Hint::SingleFrameZstd => format!(
                "this is a single-frame zstd file, not a harness artifact (whose first frame is the header line alone); read it with `zstd -dc {file} | dsh {command} -`"
            ),
            Hint::ForeignTranscript(agent) => {
                format!("not a DSH session log (looks like a {agent} transcript)")
            }
        }
    }
}

/// A complete line whose JSON nests deeper than the reference can load: the
/// reference parses it, then overflows its stack walking it, and refuses the
/// log ("Maximum call stack size exceeded"). Never a torn tail.
pub(crate) fn too_deep(no: u64) -> LoadError {
    LoadError::new(
        LoadErrorKind::Invalid,
        "a JSON value nested deeper than the reference can load (about 1,600 object or 3,200 array levels; its loader fails with \"Maximum call stack size exceeded\"): the log is refused as the reference refuses it; the line is complete, not a torn write",
    )
    .line(no)
}

impl LoadError {
    /// A new error without a location.
    pub(crate) fn new(kind: LoadErrorKind, message: impl Into<String>) -> Self {
        LoadError {
            kind,
            message: message.into(),
            at: Location::default(),
            file: None,
            rule: None,
            io: None,
            hint: None,
        }
    }

    /// An I/O failure: `what` went wrong (`cannot open the log`), because of
    /// `cause`, which stays available as the error's source.
    pub fn io(what: &str, cause: std::io::Error) -> Self {
        let mut e = Self::new(LoadErrorKind::Io, format!("{what}: {cause}"));
        e.io = Some(std::sync::Arc::new(cause));
        e
    }

    /// The [`std::io::ErrorKind`] of the cause, for an I/O failure.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io.as_ref().map(|e| e.kind())
    }

    /// Attach a location.
    #[cfg(test)]
    pub(crate) fn at(mut self, at: Location) -> Self {
        self.at = at;
        self
    }

    /// Name the rule broken.
    pub(crate) fn rule(mut self, rule: LoadRule) -> Self {
        self.rule = Some(rule);
        self
    }

    /// Name the rule broken by a corruption refusal, unless one is named.
    pub(crate) fn or_rule(mut self, rule: LoadRule) -> Self {
        if self.rule.is_none() && self.kind == LoadErrorKind::Corrupt {
            self.rule = Some(rule);
        }
        self
    }

    /// Attach a next step.
    pub(crate) fn hint(mut self, hint: Hint) -> Self {
        self.hint = Some(Box::new(hint));
        self
    }

    /// Attach a line.
    pub(crate) fn line(mut self, line: u64) -> Self {
        self.at.line = Some(line);
        self
    }

    /// Attach a seq.
    pub fn seq(mut self, seq: u64) -> Self {
        self.at.seq = Some(seq);
        self
    }

    /// Attach the file.
    pub fn file(mut self, file: impl Into<PathBuf>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into().into_boxed_path());
        }
        self
    }

    /// Shorthand for [`LoadErrorKind::Corrupt`].
    pub(crate) fn corrupt(msg: impl Into<String>) -> Self {
        Self::new(LoadErrorKind::Corrupt, msg)
    }

    /// Shorthand for [`LoadErrorKind::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::new(LoadErrorKind::Invalid, msg)
    }

    /// Shorthand for [`LoadErrorKind::Unsupported`].
    pub(crate) fn unsupported(msg: impl Into<String>) -> Self {
        Self::new(LoadErrorKind::Unsupported, msg)
    }

    /// The bare message (what `--json` prints as `error`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        if self.at.line.is_some() || self.at.seq.is_some() {
            write!(f, "{}: ", self.at)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            let file = self
                .file
                .as_ref()
                .map_or_else(|| "FILE".to_string(), |p| p.display().to_string());
            write!(f, ": {}", h.render(&file, "COMMAND"))?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
