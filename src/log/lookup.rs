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

impl From<LoadError> for LookupError {
    fn from(e: LoadError) -> Self {
        LookupError::NotFound(e)
    }
}

/// `logs` oldest first by the time of each log's last event
/// ([`super::tail::last_event_time`], read from its end), then by the
/// file's modification time (a log with no plausible time sorts first).
fn by_last_event(logs: Vec<PathBuf>) -> Vec<PathBuf> {
    if logs.len() < 2 {
        return logs;
    }
    let mut timed: Vec<(Option<i64>, std::time::SystemTime, PathBuf)> = logs
        .into_iter()
        .map(|f| {
            let m = std::fs::metadata(&f)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (super::tail::last_event_time(&f), m, f)
        })
        .collect();
    timed.sort();
    timed.into_iter().map(|(_, _, f)| f).collect()
}

/// The sessions of the project whose working directory is `cwd` (a path
/// as the harness records it), newest last by their last event.
fn project_sessions(home: &Path, cwd: &str) -> Vec<PathBuf> {
    by_last_event(source::project_sessions(&home.join("sessions"), cwd))
}

/// The session logs recorded for working directory `dir` under `home`,
/// newest last (by the time of each log's last event, not the file's
/// modification time). Empty when there are none.
fn sessions_of_cwd(dir: &Path, home: &Path) -> Vec<PathBuf> {
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
        let found = project_sessions(home, s);
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// The sessions of the project an argument names as its working directory:
/// an existing directory that is not itself a session directory, or an
/// absolute path that no longer exists; newest last. Empty when it names
/// none.
fn project_of(arg: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let p = Path::new(arg);
    let Some(h) = home else { return Vec::new() };
    if arg == "-" || p.is_file() {
        return Vec::new();
    }
    if p.is_dir() {
        if source::session_file_in(p).is_some() {
            return Vec::new();
        }
        return sessions_of_cwd(p, h);
    }
    if arg.starts_with('/') && !p.exists() {
        let cwd = arg.trim_end_matches('/');
        return project_sessions(h, if cwd.is_empty() { "/" } else { cwd });
    }
    Vec::new()
}

/// Which session a working directory named, when one log was wanted: the
/// newest of the project's sessions by its log's last event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    /// What was typed.
    pub arg: String,
    /// How many sessions the project has.
    pub of: usize,
    /// The picked log's last event time (`super::tail::last_event_time`).
    pub last_time: Option<i64>,
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

/// Whether `arg` names many logs rather than one: a directory that is not
/// a session directory (a tree of logs, a home, or a working directory
/// whose sessions live under `home`), or an absolute path that no longer
/// exists but names a project under `home`. Commands that take many logs
/// take all of them ([`resolve_many`]); commands that take one take the
/// project's newest ([`resolve_picked`]).
pub fn is_tree(arg: &str, home: Option<&Path>) -> bool {
    let p = Path::new(arg);
    (arg != "-" && p.is_dir() && source::session_file_in(p).is_none())
        || !project_of(arg, home).is_empty()
}

/// Resolve one argument naming one log.
pub fn resolve(arg: &str, home: Option<&Path>) -> Result<LogSource, LookupError> {
    resolve_picked(arg, home).map(|(s, _)| s)
}

/// [`resolve`], saying which session a working directory named (its
/// project's newest by the last event's time), so that the caller can tell.
pub fn resolve_picked(
    arg: &str,
    home: Option<&Path>,
) -> Result<(LogSource, Option<Picked>), LookupError> {
    let mut project = project_of(arg, home);
    if let Some(newest) = project.pop() {
        let picked = Picked {
            arg: arg.to_string(),
            of: project.len() + 1,
            last_time: super::tail::last_event_time(&newest),
        };
        return Ok((LogSource::File(newest), Some(picked)));
    }
    resolve_named(arg, home).map(|s| (s, None))
}

/// [`resolve`] of an argument that names no working directory's sessions.
fn resolve_named(arg: &str, home: Option<&Path>) -> Result<LogSource, LookupError> {
    let p = Path::new(arg);
    if arg == "-" || p.is_file() || source::is_stream(p) {
        return Ok(source::resolve(arg, home)?);
    }
    if p.is_dir() {
        return source::resolve(arg, home).map_err(|e| {
            match home {
                Some(h) if source::discover(p).is_empty() => LoadError::new(
                    LoadErrorKind::NotFound,
                    format!(
                        "directory {} holds no session log, and no session under {} was recorded with it as its working directory",
                        p.display(),
                        h.join("sessions").display()
                    ),
                ),
                _ => e,
            }
            .into()
        });
    }
    match source::resolve(arg, home) {
        Ok(s) => Ok(s),
        Err(e) => {
            let e = with_suggestion(e, arg);
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

/// A log file beside a mistyped path whose name is close to it, if any:
/// `sampels/x.jsonl` finds nothing, `samples/coding-sesion.jsonl` finds
/// `samples/coding-session.jsonl`.
fn near_miss(arg: &str) -> Option<PathBuf> {
    let p = Path::new(arg);
    let name = p.file_name()?.to_str()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let limit = (name.chars().count() / 5).clamp(1, 3);
    let mut best: Option<(usize, PathBuf)> = None;
    for e in std::fs::read_dir(&dir).ok()?.flatten() {
        let cand = e.file_name();
        let Some(cand) = cand.to_str() else { continue };
        let is_log = cand.ends_with(".jsonl") || cand.ends_with(".jsonl.zstd");
        if !is_log || !e.path().is_file() {
            continue;
        }
        let d = edit_distance(name, cand);
        if d <= limit && best.as_ref().is_none_or(|(b, _)| d < *b) {
            best = Some((d, p.with_file_name(cand)));
        }
    }
    best.map(|(_, p)| p)
}

/// Levenshtein distance in characters (also what `dsh` suggests for a
/// mistyped flag).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A not-found error for a path that looks mistyped, with the next step.
fn with_suggestion(mut e: LoadError, arg: &str) -> LoadError {
    if e.kind == LoadErrorKind::NotFound
        && let Some(near) = near_miss(arg)
    {
        e.message = format!("{}: did you mean {}?", e.message, near.display());
    }
    e
}

/// Resolve an argument that may name many logs: a directory tree, a home,
/// or anything [`resolve`] takes. A working directory means all of its
/// project's sessions, oldest first.
pub fn resolve_many(arg: &str, home: Option<&Path>) -> Result<Vec<LogSource>, LookupError> {
    let project = project_of(arg, home);
    if !project.is_empty() {
        return Ok(project.into_iter().map(LogSource::File).collect());
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
        assert!(is_tree(cwd_s, h), "a working directory names its sessions");
        assert_eq!(resolve_many(cwd_s, h).unwrap(), [LogSource::File(a)]);
        let other = tempfile::tempdir().unwrap();
        let msg = resolve(other.path().to_str().unwrap(), h)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("working directory"), "{msg}");
    }

    #[test]
    fn a_working_directory_names_its_newest_session_by_the_last_event() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(proj.path()).unwrap();
        let cwd_s = cwd.to_str().unwrap();
        let head = |id: &str| {
            format!(
                r#"{{"type":"session","version":0,"id":"{id}","createdAt":1780000000000,"delegationDepth":0}}"#
            )
        };
        let ev =
            |t: u64| format!(r#"{{"type":"turn/start","seq":0,"time":{t},"data":{{"turn":1}}}}"#);
        let late = session(home.path(), cwd_s, "late");
        std::fs::write(&late, format!("{}\n{}\n", head("late"), ev(1780000900000))).unwrap();
        // Written second, so newer by mtime, but its last event is older.
        let early = session(home.path(), cwd_s, "early");
        std::fs::write(
            &early,
            format!("{}\n{}\n", head("early"), ev(1780000100000)),
        )
        .unwrap();
        let h = Some(home.path());
        let (src, picked) = resolve_picked(cwd_s, h).unwrap();
        assert_eq!(src, LogSource::File(late.clone()));
        let picked = picked.unwrap();
        assert_eq!((picked.of, picked.last_time), (2, Some(1780000900000)));
        assert_eq!(
            resolve_many(cwd_s, h).unwrap(),
            [
                LogSource::File(early.clone()),
                LogSource::File(late.clone())
            ]
        );
        // A session file is named as itself, not picked.
        assert_eq!(resolve_picked(late.to_str().unwrap(), h).unwrap().1, None);
        // A working directory that is gone still names its project.
        drop(proj);
        assert!(!cwd.exists());
        assert_eq!(resolve(cwd_s, h).unwrap(), LogSource::File(late.clone()));
        assert!(is_tree(cwd_s, h));
        assert_eq!(resolve_many(cwd_s, h).unwrap().len(), 2);
    }

    #[test]
    fn a_mistyped_log_name_suggests_the_one_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("coding-session.jsonl"), "{}\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        let typo = dir.path().join("coding-sesion.jsonl");
        assert_eq!(
            near_miss(typo.to_str().unwrap()),
            Some(dir.path().join("coding-session.jsonl"))
        );
        let far = dir.path().join("other.jsonl");
        assert_eq!(near_miss(far.to_str().unwrap()), None);
        assert_eq!(
            near_miss(dir.path().join("notes.tx").to_str().unwrap()),
            None
        );
        match resolve(typo.to_str().unwrap(), None) {
            Err(LookupError::NotFound(e)) => {
                assert!(e.message.contains("did you mean"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
