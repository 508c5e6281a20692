//! Finding a log from what a person types: a file, `-`, a session directory,
//! a working directory (absolute, relative or `.`) whose sessions live under
//! the DSH home, a session id, or a unique prefix of one.
//!
//! The home is passed in; nothing here reads the environment.

use std::path::{Path, PathBuf};

use super::error::{LoadError, LoadErrorKind};
use super::source::{self, LogSource};

/// Why an argument names no single log.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// Nothing, or something unreadable, by that name.
    #[error("{0}")]
    NotFound(LoadError),
    /// A session id prefix that more than one session starts with.
    #[error(
        "{prefix}: more than one session id starts with it: {}; give more of the id",
        candidates.join(", ")
    )]
    Ambiguous {
        /// What was typed.
        prefix: String,
        /// The matching session ids (directory names), sorted.
        candidates: Vec<String>,
    },
}

impl LookupError {
    /// As a load error (ambiguity reads as "not found" there).
    pub fn into_load_error(self) -> LoadError {
        match self {
            LookupError::NotFound(e) => e,
            e @ LookupError::Ambiguous { .. } => {
                LoadError::new(LoadErrorKind::NotFound, e.to_string())
            }
        }
    }
}

impl From<LoadError> for LookupError {
    fn from(e: LoadError) -> Self {
        LookupError::NotFound(e)
    }
}

/// The session logs recorded for working directory `dir` under `home`,
/// newest last (by modification time). Empty when there are none.
pub fn sessions_of_cwd(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut candidates = vec![abs.clone()];
    // The harness records the cwd it was started in, which is usually the
    // canonical path; try both spellings.
    if let Ok(c) = std::fs::canonicalize(dir)
        && c != abs
    {
        candidates.push(c);
    }
    for cwd in candidates {
        let Some(s) = cwd.to_str() else { continue };
        let s = s.trim_end_matches('/');
        let s = if s.is_empty() { "/" } else { s };
        let found = source::project_sessions(&home.join("sessions"), s);
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// Sessions under `home` whose id (directory name) starts with `prefix`.
fn sessions_with_prefix(prefix: &str, home: &Path) -> Vec<(String, PathBuf)> {
    let escaped = source::session_dir_name(prefix);
    let mut out = Vec::new();
    let Ok(projects) = std::fs::read_dir(home.join("sessions")) else {
        return out;
    };
    for project in projects.flatten() {
        let Ok(sessions) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for s in sessions.flatten() {
            let name = s.file_name().to_string_lossy().into_owned();
            if name.starts_with(&escaped)
                && let Some(f) = source::session_file_in(&s.path())
            {
                out.push((name, f));
            }
        }
    }
    out.sort();
    out
}

/// Whether `arg` names a tree of many logs rather than one log: a directory
/// that is neither a session directory nor a working directory with
/// sessions under `home`.
pub fn is_tree(arg: &str, home: Option<&Path>) -> bool {
    let p = Path::new(arg);
    arg != "-"
        && p.is_dir()
        && source::session_file_in(p).is_none()
        && home.is_none_or(|h| sessions_of_cwd(p, h).is_empty())
}

/// Resolve one argument naming one log.
pub fn resolve(arg: &str, home: Option<&Path>) -> Result<LogSource, LookupError> {
    let p = Path::new(arg);
    if arg == "-" || p.is_file() || source::is_stream(p) {
        return Ok(source::resolve(arg, home)?);
    }
    if p.is_dir() {
        if source::session_file_in(p).is_none()
            && let Some(h) = home
            && let Some(newest) = sessions_of_cwd(p, h).pop()
        {
            return Ok(LogSource::File(newest));
        }
        return source::resolve(arg, home).map_err(|e| {
            match home {
                Some(h) => LoadError::new(
                    LoadErrorKind::NotFound,
                    format!(
                        "directory {} holds no session log, and no session under {} was recorded with it as its working directory",
                        p.display(),
                        h.join("sessions").display()
                    ),
                ),
                None => e,
            }
            .into()
        });
    }
    match source::resolve(arg, home) {
        Ok(s) => Ok(s),
        Err(e) => {
            let Some(h) = home else { return Err(e.into()) };
            if arg.is_empty() || arg.contains('/') {
                return Err(e.into());
            }
            let mut found = sessions_with_prefix(arg, h);
            match found.len() {
                0 => Err(e.into()),
                1 => Ok(LogSource::File(found.pop().unwrap().1)),
                _ => Err(LookupError::Ambiguous {
                    prefix: arg.to_string(),
                    candidates: found.into_iter().map(|(n, _)| n).collect(),
                }),
            }
        }
    }
}

/// Resolve an argument that may name many logs: a directory tree, a home,
/// or anything [`resolve`] takes. A working directory means its sessions.
pub fn resolve_many(arg: &str, home: Option<&Path>) -> Result<Vec<LogSource>, LookupError> {
    let p = Path::new(arg);
    if arg != "-"
        && p.is_dir()
        && source::session_file_in(p).is_none()
        && let Some(h) = home
    {
        let found = sessions_of_cwd(p, h);
        if !found.is_empty() {
            return Ok(found.into_iter().map(LogSource::File).collect());
        }
    }
    if is_tree(arg, home) {
        return Ok(source::resolve_many(arg, home)?);
    }
    resolve(arg, home).map(|s| vec![s])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(home: &Path, cwd: &str, id: &str) -> PathBuf {
        let d = home
            .join("sessions")
            .join(source::project_dir_name(Some(cwd)))
            .join(source::session_dir_name(id));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("session.jsonl");
        std::fs::write(&f, "{}\n").unwrap();
        f
    }

    #[test]
    fn finds_by_cwd_id_and_unique_prefix() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(proj.path()).unwrap();
        let cwd_s = cwd.to_str().unwrap();
        let a = session(home.path(), cwd_s, "5b1d6c2e-aaaa");
        let b = session(home.path(), "/elsewhere", "5b1d7000-bbbb");
        let h = Some(home.path());
        assert_eq!(resolve(cwd_s, h).unwrap(), LogSource::File(a.clone()));
        assert_eq!(resolve("5b1d6", h).unwrap(), LogSource::File(a.clone()));
        assert_eq!(resolve("5b1d7000-bbbb", h).unwrap(), LogSource::File(b));
        match resolve("5b1d", h) {
            Err(LookupError::Ambiguous { candidates, .. }) => {
                assert_eq!(candidates, ["5b1d6c2e-aaaa", "5b1d7000-bbbb"])
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(resolve("zz", h), Err(LookupError::NotFound(_))));
        assert!(!is_tree(cwd_s, h));
        assert_eq!(resolve_many(cwd_s, h).unwrap(), [LogSource::File(a)]);
        let other = tempfile::tempdir().unwrap();
        let msg = resolve(other.path().to_str().unwrap(), h)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("working directory"), "{msg}");
    }
}
