//! What every command shares: output mode, streams, the DSH home, loading with
//! error reporting.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use dsh::LoadError;
use dsh::config::Config;
use dsh::doc::error::Refusal;
use dsh::json::Value;
use dsh::log::{LoadOptions, LoadedLog, LogSource, Observer};

use super::exit::Status;
use super::render::outln;

/// Shared command context.
pub struct Ctx {
    /// Print JSON instead of tables.
    pub json: bool,
    /// Accept documented tolerances.
    pub lenient: bool,
    /// Suppress warnings on stderr.
    pub quiet: bool,
    /// `$DSH_HOME` (default `~/.dsh`).
    pub home: Option<PathBuf>,
    /// Whether stderr is a terminal (progress bars only then).
    pub stderr_tty: bool,
    /// Standard output: every command prints through it.
    pub out: super::render::Out,
    /// The subcommand being run (`surface`, …), for hints.
    pub command: String,
    /// Whether long human output may go through a pager.
    pub paging: bool,
    /// Standard input copied to a temporary file, kept until the run ends.
    spooled: Vec<tempfile::NamedTempFile>,
    /// `--max-line-bytes` / `--max-decompressed`.
    pub limits: dsh::log::Limits,
}

impl Ctx {
    /// Build from global flags.
    pub fn new(json: bool, lenient: bool, quiet: bool, home: Option<PathBuf>) -> Ctx {
        let home = home.or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".dsh")));
        let out = super::render::Out::new();
        if json {
            out.set_bytes();
        }
        Ctx {
            json,
            lenient,
            quiet,
            home,
            stderr_tty: std::io::stderr().is_terminal(),
            out,
            limits: dsh::log::Limits::default(),
            command: "COMMAND".into(),
            paging: false,
            spooled: Vec::new(),
        }
    }

    /// A progress bar for `len` logs on stderr, drawn only on a terminal
    /// and not with --quiet (see [`super::render::progress`]).
    pub fn progress(&self, len: usize, what: &str) -> indicatif::ProgressBar {
        super::render::progress(self.stderr_tty && !self.quiet, len, what)
    }

    /// Send the rest of this command's output through the pager once it is
    /// longer than the terminal (when standard output is one and paging is
    /// on). Commands with long human output call it once they know they
    /// have something to show.
    pub fn page(&mut self) {
        if self.paging {
            self.out.page_when_long();
        }
    }

    /// Resolve one log argument: a file, `-`, a session directory, a
    /// working directory, a session id or a unique prefix of one. An
    /// ambiguous prefix is a usage error (it lists the candidates).
    ///
    /// A working directory names its project's newest session (by its
    /// log's last event): which one is said on stderr (unless quiet).
    pub fn resolve(&self, arg: &str) -> anyhow::Result<LogSource> {
        let (src, picked) =
            dsh::log::lookup::resolve_picked(arg, self.home.as_deref()).map_err(lookup_error)?;
        if let Some(p) = picked
            && !self.quiet
        {
            eprintln!("{} {}", super::render::note_tag(), picked_note(&p, &src));
        }
        crate::keep_freed_pages_for(&src);
        Ok(src)
    }

    /// [`Ctx::resolve`] for a command that may read the log twice:
    /// standard input is copied once into a temporary file (see
    /// [`super::spool`]), which lives as long as the context.
    pub fn resolve_rereadable(&mut self, arg: &str) -> anyhow::Result<LogSource> {
        let src = self.resolve(arg)?;
        let (file, src) = match &src {
            LogSource::Stdin => {
                super::spool::stdin(self.max_line_bytes()).map_err(|e| LoadError::io("-", e))?
            }
            // A pipe or device can be read once only: copied like stdin.
            LogSource::File(p) if dsh::log::source::is_stream(p) => {
                super::spool::named(p, self.max_line_bytes())
                    .map_err(|e| LoadError::io(&p.display().to_string(), e))?
            }
            _ => return Ok(src),
        };
        self.spooled.push(file);
        Ok(src)
    }

    /// Resolve arguments that may each name many logs; the first that
    /// names nothing stops the run.
    pub fn resolve_many(&self, args: &[String]) -> anyhow::Result<Vec<LogSource>> {
        let mut out = Vec::new();
        for found in self.resolve_each(args)? {
            out.extend(found?);
        }
        Ok(out)
    }

    /// Resolve arguments that may each name many logs, one result per
    /// argument: one that names nothing is that argument's error (a bad row
    /// of a many-log report, the rest go on), but an ambiguous session-id
    /// prefix stops the run as a usage error listing the candidates (exit
    /// 2), as it does for a single LOG.
    pub fn resolve_each(
        &self,
        args: &[String],
    ) -> anyhow::Result<Vec<Result<Vec<LogSource>, LoadError>>> {
        let mut out = Vec::new();
        for a in args {
            match dsh::log::lookup::resolve_many(a, self.home.as_deref()) {
                Ok(found) => out.push(Ok(found)),
                Err(dsh::log::lookup::LookupError::NotFound(e)) => out.push(Err(e)),
                Err(ambiguous) => return Err(lookup_error(ambiguous)),
            }
        }
        Ok(out)
    }

    /// [`Ctx::resolve_each`] a log a row, in input order: an argument that
    /// names nothing keeps its place as its error, with the argument.
    pub fn resolve_rows(
        &self,
        args: &[String],
    ) -> anyhow::Result<Vec<Result<LogSource, (String, LoadError)>>> {
        let mut rows = Vec::new();
        for (arg, found) in args.iter().zip(self.resolve_each(args)?) {
            match found {
                Ok(found) => rows.extend(found.into_iter().map(Ok)),
                Err(e) => rows.push(Err((arg.clone(), e))),
            }
        }
        Ok(rows)
    }

    /// The LOG arguments a command that reads one log or many reads as
    /// many (with none, or with `all`, the home's sessions among them), or
    /// `None` when they name one log to read alone: one argument that is
    /// not a tree of sessions (a directory of them, a project).
    pub fn as_many(&self, logs: &[String], all: bool) -> anyhow::Result<Option<Vec<String>>> {
        let all = all || logs.is_empty();
        if let [one] = logs
            && !all
            && !dsh::log::lookup::is_tree(one, self.home.as_deref())
        {
            return Ok(None);
        }
        let mut inputs = logs.to_vec();
        if all {
            inputs.push(self.home_sessions()?.display().to_string());
        }
        Ok(Some(inputs))
    }

    /// What "no LOG" means for the commands that read many logs (measure,
    /// verify, locks, …): every session under the DSH home. A home that is
    /// not there is the same one-line usage error (exit 2) for all of them.
    pub fn home_sessions(&self) -> anyhow::Result<PathBuf> {
        let Some(home) = &self.home else {
            return Err(super::exit::UsageError(
                "no LOG given and no DSH home: name a LOG, or set $DSH_HOME (or --home DIR)".into(),
            )
            .into());
        };
        if !home.is_dir() {
            return Err(super::exit::UsageError(format!(
                "{}: no DSH home there: name a LOG, or point $DSH_HOME (or --home) at the harness's home",
                home.display()
            ))
            .into());
        }
        Ok(home.join("sessions"))
    }

    /// The longest line a log may hold.
    pub fn max_line_bytes(&self) -> u64 {
        self.limits.max_line_bytes
    }

    /// Load options from the global flags.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            lenient: self.lenient,
            limits: self.limits,
            ..LoadOptions::default()
        }
    }

    /// Resolve and load one log, with an observer.
    pub fn load_with(
        &self,
        arg: &str,
        opts: &LoadOptions,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<LoadedLog> {
        let src = self.resolve(arg)?;
        let log = dsh::log::load(&src, opts, observer)?;
        self.warn_all(&log);
        Ok(log)
    }

    /// Resolve and load one log.
    pub fn load(&self, arg: &str) -> anyhow::Result<LoadedLog> {
        // Nothing observes the events here, so packed chunks need not be built.
        let opts = LoadOptions {
            skip_chunk_events: true,
            ..self.load_options()
        };
        self.load_with(
            arg,
            &opts,
            &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {},
        )
    }

    /// Print a log's warnings on stderr (unless quiet).
    pub fn warn_all(&self, log: &LoadedLog) {
        if self.quiet {
            return;
        }
        for w in &log.warnings {
            eprintln!(
                "{} {}: {w}",
                crate::cli::render::warning_tag(),
                log.source.display()
            );
        }
    }

    /// Print a document on stdout (compact, one line), written as every
    /// document is ([`dsh::doc::write`]).
    pub fn print_doc<D: serde::Serialize + ?Sized>(&self, doc: &D) -> std::io::Result<()> {
        dsh::doc::write(self.out.stream(), doc).map_err(Into::into)
    }

    /// Report a refused log: `{"error": …}` on stdout with `--json`, one line
    /// on stderr always.
    pub fn report_load_error(&self, e: &LoadError) -> Status {
        self.say_load_error(e);
        if self.json {
            let doc = Refusal::load(e).hint(e.hint.as_ref().map(|h| self.render_hint(h, e)));
            let _ = self.print_doc(&doc);
        }
        Status::InvalidLog
    }

    /// Each refused log's error on stderr, then `N log(s) refused to
    /// load{and} (reasons on stderr)` on stdout when there were some.
    pub fn say_refused(
        &self,
        refused: &[dsh::sessions::Refused],
        and: &str,
    ) -> std::io::Result<()> {
        for r in refused {
            self.say_load_error(&r.error);
        }
        if !refused.is_empty() {
            outln!(
                self.out,
                "{} log(s) refused to load{and} (reasons on stderr)",
                refused.len()
            )?;
        }
        Ok(())
    }

    /// One line on stderr: the error tag and [`Self::describe_load_error`].
    pub fn say_load_error(&self, e: &LoadError) {
        eprintln!(
            "{} {}",
            crate::cli::render::error_tag(),
            self.describe_load_error(e)
        );
    }

    /// `path: line N: what is wrong: what to do`, the hint naming this
    /// command where it suggests a command line.
    pub fn describe_load_error(&self, e: &LoadError) -> String {
        let Some(h) = &e.hint else {
            return e.to_string();
        };
        let mut bare = e.clone();
        bare.hint = None;
        format!("{bare}: {}", self.render_hint(h, e))
    }

    fn render_hint(&self, h: &dsh::log::Hint, e: &LoadError) -> String {
        let file = e
            .file
            .as_ref()
            .map_or_else(|| "FILE".to_string(), |p| p.display().to_string());
        h.render(&file, &self.command)
    }
}

/// Read the dsh config (compaction §10): `--config FILE` (`flag`), else
/// `$DSH_CONFIG`, else `$XDG_CONFIG_HOME/dsh/config.toml`, else
/// `~/.config/dsh/config.toml`. A missing explicit file is an error; a
/// missing default file means the built-in defaults. Errors are usage errors
/// (exit 2). The file names API-key variables; it never holds a key.
pub fn load_config(flag: Option<&Path>) -> anyhow::Result<Config> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let home = env("HOME");
    let Some((path, explicit)) = dsh::config::default_path(
        flag,
        env("DSH_CONFIG").as_deref(),
        env("XDG_CONFIG_HOME").as_deref(),
        home.as_deref(),
    ) else {
        return Ok(Config::default());
    };
    if !explicit && !path.exists() {
        return Ok(Config::default());
    }
    Config::load(&path).map_err(|e| super::exit::UsageError(format!("config: {e}")).into())
}

/// Which session a working directory named: `.: the newest of its 2
/// sessions (last event 2026-07-09 12:37): PATH; `dsh sessions --project .`
/// lists them`.
pub fn picked_note(p: &dsh::log::lookup::Picked, src: &LogSource) -> String {
    let when = p.last_time.map_or_else(
        || "no dated event".to_string(),
        |t| format!("last event {}", super::zone::local().date_time(t)),
    );
    if p.of == 1 {
        format!("{}: its only session ({when}): {}", p.arg, src.display())
    } else {
        format!(
            "{}: the newest of its {} sessions ({when}): {}; `dsh sessions --project {}` lists them",
            p.arg,
            p.of,
            src.display(),
            p.arg
        )
    }
}

/// A failed lookup as the error the command line reports: not found is a
/// load error (exit 3), an ambiguous id prefix a usage error (exit 2).
fn lookup_error(e: dsh::log::lookup::LookupError) -> anyhow::Error {
    match e {
        dsh::log::lookup::LookupError::NotFound(le) => le.into(),
        ambiguous => super::exit::UsageError(ambiguous.to_string()).into(),
    }
}

/// A message content block's `type`, and a reader of its string fields
/// (empty when absent).
pub fn block_fields<'a>(b: &'a Value<'_>) -> (String, impl Fn(&str) -> String + 'a) {
    let ty = b.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    let text = move |k: &str| {
        b.get(k)
            .and_then(|t| t.as_jstr())
            .map(|t| t.to_lossy().into_owned())
            .unwrap_or_default()
    };
    (ty.into_owned(), text)
}

/// Cut a string to `width` characters with an ellipsis.
pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Standard output without the line buffering of [`std::io::Stdout`], for
/// large documents: `Stdout` scans every write for newlines, which for a
/// vectored write of mapped log bytes means reading them all once more.
/// Anything already printed through `Stdout` is flushed first.
pub fn raw_stdout() -> Box<dyn Write> {
    let _ = std::io::stdout().flush();
    #[cfg(unix)]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: fd 1 is open for the life of the process; ManuallyDrop
        // keeps this handle from closing it.
        let file = unsafe { std::fs::File::from_raw_fd(1) };
        Box::new(RawStdout(std::mem::ManuallyDrop::new(file)))
    }
    #[cfg(not(unix))]
    {
        Box::new(std::io::stdout())
    }
}

#[cfg(unix)]
struct RawStdout(std::mem::ManuallyDrop<std::fs::File>);

#[cfg(unix)]
impl Write for RawStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*self.0).write(buf)
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        (&*self.0).write_vectored(bufs)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The preview as it was first written: everything built, then cut.
    fn reference(msg: &Value<'_>, width: usize) -> String {
        fn block(b: &Value<'_>) -> String {
            let (ty, text) = block_fields(b);
            match ty.as_str() {
                "text" => text("text"),
                "reasoning" => format!("(thinking) {}", text("text")),
                "tool-call" => format!("→ {}({})", text("name"), text("arguments")),
                "tool-result" => {
                    let inner: Vec<String> = b
                        .get("content")
                        .and_then(|c| c.as_arr())
                        .map(|a| a.iter().map(block).collect())
                        .unwrap_or_default();
                    format!("← {}", inner.join(" "))
                }
                "image" => "[image]".to_string(),
                other => format!("[{other}]"),
            }
        }
        let parts: Vec<String> = msg
            .get("content")
            .and_then(|c| c.as_arr())
            .map(|a| a.iter().map(block).collect())
            .unwrap_or_default();
        truncate(
            &parts
                .join(" ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            width,
        )
    }

    /// The library's [`dsh::view::preview`], which `events`, `surface`
    /// and `view` show.
    #[test]
    fn preview_reads_only_what_shows_and_shows_what_it_did() {
        let msgs = [
            r#"{"content":[]}"#,
            r#"{"content":[{"type":"text","text":""}]}"#,
            r#"{"content":[{"type":"text","text":"  a  b\n\tc  "}]}"#,
            r#"{"content":[{"type":"text","text":"\u00a0x\u2003y\ud800z\ud83d\ude00"}]}"#,
            r#"{"content":[{"type":"reasoning","text":"hmm"},{"type":"text","text":" ok "}]}"#,
            r#"{"content":[{"type":"tool-call","name":"run","arguments":"{\"a\": 1}"},{"type":"image"}]}"#,
            r#"{"content":[{"type":"tool-result","content":[{"type":"text","text":"0123456789 abcdefghij"},{"type":"x"}]}]}"#,
            r#"{"content":[{"type":"tool-result"},{"type":7},{"text":"no type"}]}"#,
            r#"{"content":[{"type":"text","text":"中文字符 と 日本語 ✓✓✓ 😀😀😀 end"}]}"#,
        ];
        for m in msgs {
            let v = Value::parse(m).unwrap();
            for width in 0..40 {
                assert_eq!(
                    dsh::view::preview(Some(&v), width),
                    reference(&v, width),
                    "{m} at {width}"
                );
            }
        }
        assert_eq!(dsh::view::preview(None, 10), "");
    }
}
