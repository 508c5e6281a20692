//! Where a log comes from: a file, standard input, a session directory, or a
//! session id / working directory looked up under a DSH home (session-log §3.1).
//!
//! The home directory is passed in by the caller; the library never reads the
//! environment.

use std::path::{Path, PathBuf};

use super::error::{LoadError, LoadErrorKind};
use crate::generation::{LogFileName, parse_log_file_name};

/// The Zstandard frame magic number, as it appears on disk: what tells an
/// artifact from a plain log (here, and in the reader that opens it).
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// A resolved log to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    /// A file on disk (plain JSONL or a Zstandard artifact, told apart by its
    /// magic bytes).
    File(PathBuf),
    /// Standard input.
    Stdin,
    /// Standard input already copied into this file, so that it can be read
    /// more than once. It is shown as `-` and, like standard input, is never
    /// written to.
    Spooled(PathBuf),
}

impl LogSource {
    /// A display name: the path, or `-`.
    pub fn display(&self) -> String {
        match self {
            LogSource::File(p) => p.display().to_string(),
            LogSource::Stdin | LogSource::Spooled(_) => "-".to_string(),
        }
    }

    /// The file to read the log from again: the path of a file or of the
    /// copy of standard input.
    pub fn reread_path(&self) -> Option<&Path> {
        match self {
            LogSource::File(p) | LogSource::Spooled(p) => Some(p),
            LogSource::Stdin => None,
        }
    }

    /// Whether this is a regular file holding a plain log (not a Zstandard
    /// artifact, nor a file too short to tell): its first four bytes are
    /// read, nothing else (a stream is never opened).
    pub fn is_plain_file(&self) -> bool {
        use std::io::Read;
        let Some(p) = self.reread_path().filter(|p| is_regular(p)) else {
            return false;
        };
        let mut magic = [0u8; 4];
        std::fs::File::open(p)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok_and(|()| magic != ZSTD_MAGIC)
    }

    /// The path, for files (not for standard input, spooled or not).
    pub fn path(&self) -> Option<&Path> {
        match self {
            LogSource::File(p) => Some(p),
            LogSource::Stdin | LogSource::Spooled(_) => None,
        }
    }
}

/// Whether `p` (followed through symbolic links) is something to read as a
/// stream, once, like standard input: a FIFO (a named pipe, or `<(cmd)`'s
/// `/dev/fd/N`) or a character device.
pub fn is_stream(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(p).is_ok_and(|m| {
        let t = m.file_type();
        t.is_fifo() || t.is_char_device()
    })
}

/// Whether `p` is a regular file (followed through symbolic links).
pub(crate) fn is_regular(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// What `p` is when it exists but is neither a file, a directory nor a
/// stream: "a socket", "a block device".
fn unreadable_kind(p: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(p).ok()?.file_type();
    if t.is_socket() {
        Some("a socket")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// The session logs a session directory holds under DSH's canonical names
/// (`session.jsonl`, `session.vN.jsonl`, each maybe `.zstd`: see
/// [`crate::generation`]), newest generation first and, within one, the
/// compressed file first (the backend's default). Other names (temporaries,
/// `.v0`, `.V3`, `.v03`) are ignored, as DSH ignores them.
fn session_files_in(dir: &Path) -> Vec<(LogFileName, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(LogFileName, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = parse_log_file_name(e.file_name().to_str()?)?;
            let path = e.path();
            path.is_file().then_some((name, path))
        })
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found
}

/// The older generation files beside a session log (DSH keeps every
/// generation it migrated from): empty unless the log is a canonical file
/// of a session directory that also holds lower generations.
pub(crate) fn older_generations(log: &Path) -> Vec<PathBuf> {
    let Some(this) = log
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_log_file_name)
    else {
        return Vec::new();
    };
    let Some(dir) = log.parent() else {
        return Vec::new();
    };
    session_files_in(dir)
        .into_iter()
        .filter(|(n, _)| n.version < this.version)
        .map(|(_, p)| p)
        .collect()
}

/// Escape a session id into its directory name: every UTF-16 code unit outside
/// `[A-Za-z0-9._-]`, and `~` itself, becomes `~XXXX`; `.` and `..` are escaped
/// whole.
pub fn session_dir_name(id: &str) -> String {
    if id == "." {
        return "~002E".into();
    }
    if id == ".." {
        return "~002E~002E".into();
    }
    let mut out = String::new();
    for u in id.encode_utf16() {
        let c = char::from_u32(u as u32);
        match c {
            Some(c) if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' => out.push(c),
            _ => out.push_str(&format!("~{u:04X}")),
        }
    }
    out
}

/// The project directory name for a cwd (`--<readable-cwd>--`), or `_no-cwd`.
pub fn project_dir_name(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else {
        return "_no-cwd".into();
    };
    let mut s = String::new();
    let mut last_sep = false;
    for ch in cwd.chars() {
        if ch == '/' || ch == '\\' || ch == ':' {
            if !last_sep {
                s.push('-');
            }
            last_sep = true;
        } else {
            last_sep = false;
            s.push(ch);
        }
    }
    let s = s.trim_start_matches('-');
    let mut out = String::new();
    if s.is_empty() {
        out.push_str("root");
    }
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() || ch == '.' || ch == '_' || ch == '-' {
            out.push(ch);
        } else {
            let mut buf = [0u16; 2];
            for u in ch.encode_utf16(&mut buf) {
                out.push_str(&format!("~{:04X}", u));
            }
        }
    }
    let truncated: String = out.chars().take(251).collect();
    format!("--{truncated}--")
}

/// The session log of a session directory, if it is one: the file of the
/// highest generation it holds ([`session_files_in`]).
pub(crate) fn session_file_in(dir: &Path) -> Option<PathBuf> {
    session_files_in(dir).into_iter().next().map(|(_, p)| p)
}

/// The session logs of the project whose working directory is `cwd`
/// under the `sessions` directory of a home, oldest first (by the file's
/// modification time).
pub(crate) fn project_sessions(sessions: &Path, cwd: &str) -> Vec<PathBuf> {
    let proj = sessions.join(project_dir_name(Some(cwd)));
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = discover(&proj)
        .into_iter()
        .map(|f| {
            let t = std::fs::metadata(&f)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (t, f)
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, f)| f).collect()
}

/// Every session log under `root`: a session directory, a project directory,
/// a `sessions` root or a DSH home. Sorted by path.
pub fn discover(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    walk(root, 0, &mut seen, &mut out);
    out.sort();
    out.dedup();
    out
}

/// Walk `dir`, entering each directory once: a symbolic link back up the
/// tree (or two links to one place) is not walked again, so a home full of
/// self-links cannot make the walk exponential.
fn walk(
    dir: &Path,
    depth: usize,
    seen: &mut std::collections::HashSet<(u64, u64)>,
    out: &mut Vec<PathBuf>,
) {
    if depth > 4 {
        return;
    }
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(md) = std::fs::metadata(dir) else {
            return;
        };
        if !seen.insert((md.dev(), md.ino())) {
            return;
        }
    }
    // One listing tells a session directory (it holds a canonical log:
    // the newest generation is the session) from one to walk into.
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut newest: Option<(LogFileName, PathBuf)> = None;
    let mut subdirs = Vec::new();
    let mut loose = Vec::new();
    for entry in rd.flatten() {
        let p = entry.path();
        if p.is_dir() {
            subdirs.push(p);
        } else if let Some(name) = entry.file_name().to_str().and_then(parse_log_file_name)
            && p.is_file()
        {
            if newest.as_ref().is_none_or(|(n, _)| name > *n) {
                newest = Some((name, p));
            }
        } else if depth == 0 && is_log_name(&p) {
            loose.push(p);
        }
    }
    if let Some((_, f)) = newest {
        out.push(f);
        return;
    }
    out.extend(loose);
    for d in subdirs {
        walk(&d, depth + 1, seen, out);
    }
}

fn is_log_name(p: &Path) -> bool {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    n.ends_with(".jsonl") || n.ends_with(".jsonl.zstd") || n.ends_with(".jsonl.zst")
}

/// Resolve one command-line argument naming one log.
///
/// `-` is standard input; an existing file is itself; a directory must be a
/// session directory (or hold exactly one session); anything else is looked
/// up under `home/sessions` as a session id, or as a working directory whose
/// newest session is taken.
pub(crate) fn resolve(arg: &str, home: Option<&Path>) -> Result<LogSource, LoadError> {
    if arg == "-" {
        return Ok(LogSource::Stdin);
    }
    let p = Path::new(arg);
    if p.is_file() || is_stream(p) {
        return Ok(LogSource::File(p.to_path_buf()));
    }
    if let Some(what) = unreadable_kind(p) {
        return Err(LoadError::new(
            LoadErrorKind::Io,
            format!(
                "{}: is {what}, not a regular file or a pipe: not a session log",
                p.display()
            ),
        ));
    }
    if p.is_dir() {
        if let Some(f) = session_file_in(p) {
            return Ok(LogSource::File(f));
        }
        let found = discover(p);
        return match found.len() {
            1 => Ok(LogSource::File(found.into_iter().next().unwrap())),
            0 => Err(LoadError::new(
                LoadErrorKind::NotFound,
                format!(
                    "directory {} holds no session log (expected session.jsonl, session.vN.jsonl or either with .zstd)",
                    p.display()
                ),
            )),
            n => Err(LoadError::new(
                LoadErrorKind::NotFound,
                format!(
                    "directory {} holds {n} session logs; name one of them (commands that take many logs accept the directory)",
                    p.display()
                ),
            )),
        };
    }
    if let Some(home) = home {
        let sessions = home.join("sessions");
        // As a session id: <sessions>/<project>/<escaped-id>/session[.vN].jsonl[.zstd].
        let dir_name = session_dir_name(arg);
        if let Ok(rd) = std::fs::read_dir(&sessions) {
            for project in rd.flatten() {
                let d = project.path().join(&dir_name);
                if let Some(f) = session_file_in(&d) {
                    return Ok(LogSource::File(f));
                }
            }
        }
        // As a working directory: the newest session of that project.
        if arg.starts_with('/')
            && let Some(f) = project_sessions(&sessions, arg).pop()
        {
            return Ok(LogSource::File(f));
        }
        return Err(LoadError::new(
            LoadErrorKind::NotFound,
            format!(
                "{arg}: no such file, and no session with that id or cwd under {}",
                sessions.display()
            ),
        ));
    }
    Err(LoadError::new(
        LoadErrorKind::NotFound,
        format!("{arg}: no such file or directory"),
    ))
}

/// Resolve an argument that may name many logs (a directory tree or a home).
pub(crate) fn resolve_many(arg: &str, home: Option<&Path>) -> Result<Vec<LogSource>, LoadError> {
    let p = Path::new(arg);
    if arg != "-" && p.is_dir() && session_file_in(p).is_none() {
        let found = discover(p);
        if found.is_empty() {
            return Err(LoadError::new(
                LoadErrorKind::NotFound,
                format!("directory {} holds no session log", p.display()),
            ));
        }
        return Ok(found.into_iter().map(LogSource::File).collect());
    }
    resolve(arg, home).map(|s| vec![s])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_backend() {
        assert_eq!(session_dir_name("abc-1.2_x"), "abc-1.2_x");
        assert_eq!(session_dir_name("a/b~"), "a~002Fb~007E");
        assert_eq!(session_dir_name(".."), "~002E~002E");
        assert_eq!(
            project_dir_name(Some("/home/u/my proj")),
            "--home-u-my~0020proj--"
        );
        assert_eq!(project_dir_name(Some("/")), "--root--");
        assert_eq!(project_dir_name(None), "_no-cwd");
    }

    #[test]
    fn plain_files_are_told_from_artifacts_streams_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("session.jsonl");
        std::fs::write(&plain, "{\"type\":\"session\"}\n").unwrap();
        let artifact = dir.path().join("session.jsonl.zstd");
        std::fs::write(&artifact, [0x28, 0xB5, 0x2F, 0xFD, 0, 0, 0]).unwrap();
        let short = dir.path().join("short");
        std::fs::write(&short, "{}").unwrap();
        assert!(LogSource::File(plain.clone()).is_plain_file());
        assert!(LogSource::Spooled(plain).is_plain_file());
        assert!(!LogSource::File(artifact).is_plain_file());
        assert!(!LogSource::File(short).is_plain_file());
        assert!(!LogSource::File(dir.path().to_path_buf()).is_plain_file());
        assert!(!LogSource::File(dir.path().join("missing")).is_plain_file());
        assert!(!LogSource::Stdin.is_plain_file());
        // A named pipe is never opened (opening it would wait for a writer).
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(!LogSource::File(fifo).is_plain_file());
    }
}
