//! The command line: global flags, the command enum and the one dispatch.

pub mod commands;
pub mod csv;
pub mod ctx;
pub mod exit;
pub mod gauge;
pub mod help;
pub mod homes;
pub mod many;
pub mod render;
pub mod rows;
pub mod signals;
pub mod spool;
pub mod writes;
pub mod zone;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use ctx::Ctx;
use exit::Status;

/// The heading of the flags every command takes.
const GLOBAL: &str = "Global options";

/// Offline tool for DeepSeek Harness (DSH) session logs.
///
/// Reads the append-only JSONL event logs a DSH agent records, derives the
/// surface the model sees, prices it, prunes and compacts it, and audits it,
/// exactly as the reference implementation does, without the harness running.
///
/// A LOG argument is a file (plain `.jsonl` or `.jsonl.zstd`), `-` for
/// standard input, a session directory, a session id (or a unique prefix of
/// one) looked up under `$DSH_HOME/sessions`, or a working directory (`.`,
/// a path, even one that is gone): a command that reads one log takes that
/// project's newest session by its log's last event and says which on
/// stderr; a command that reads many takes all of the project's sessions.
///
/// Exit status: 0 ok, 1 findings, 2 usage, 3 invalid or unreadable log,
/// 4 log busy (compaction lock or writer lock), 5 provider failure, 70 internal,
/// 129/130/143 compact stopped by SIGHUP/SIGINT/SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Print machine-readable JSON (stable, documented shapes) instead of tables.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// Accept documented tolerances (e.g. a header without delegationDepth),
    /// reporting each as a warning. Off by default: without it dsh accepts and
    /// refuses exactly the logs the reference does.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub lenient: bool,
    /// Do not print warnings on stderr.
    #[arg(long, short, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// When to color the output: auto (a terminal, unless NO_COLOR is set;
    /// CLICOLOR_FORCE forces it), always, never.
    #[arg(long, global = true, help_heading = GLOBAL, value_enum, default_value_t = render::color::When::Auto, value_name = "WHEN")]
    pub color: render::color::When,
    /// Do not page long output (surface, messages, events, verify,
    /// compact --dry-run) through `$DSH_PAGER`, `$PAGER` or `less -FRX`.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_pager: bool,
    /// Print text from logs, paths and provider messages as it is, control
    /// characters included, instead of escaping them (`\u{1b}`); for
    /// programs that want the bytes. JSON output is always JSON-escaped;
    /// standard error is always escaped.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub raw: bool,
    /// DSH home directory for session ids and cwds (default `$DSH_HOME`
    /// when set and not empty, else `~/.dsh`).
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Refuse a log with a line longer than this (bytes; suffixes K, M, G, T
    /// in powers of 1024). Default 64M: far above any real event, low enough
    /// that a line that never ends cannot exhaust memory.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "N", value_parser = parse_size)]
    pub max_line_bytes: Option<u64>,
    /// Refuse a Zstandard log that decompresses to more than this (bytes;
    /// suffixes K, M, G, T). Default 64G.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "N", value_parser = parse_size)]
    pub max_decompressed: Option<u64>,
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    // Each command's help (what it does, its JSON shape) is the doc comment
    // of its Args struct, in src/cli/commands/<command>.rs.
    Surface(commands::surface::SurfaceArgs),
    #[command(alias = "derive")]
    Messages(commands::messages::MessagesArgs),
    Header(commands::header::HeaderArgs),
    Measure(commands::measure::MeasureArgs),
    Events(commands::events::EventsArgs),
    View(commands::view::ViewArgs),
    Load(commands::load::LoadArgs),
    // Its help (the open-turn rule, refusals, JSON shape) is PruneArgs' doc comment.
    Prune(commands::prune::PruneArgs),
    // Its help (semantics, lifecycle, config, JSON shape, exit codes) is CompactArgs' doc comment.
    Compact(commands::compact::CompactArgs),
    // Its help (with the check list and JSON shapes) is VerifyArgs' doc comment.
    Verify(commands::verify::VerifyArgs),
    // Its help (statuses, --release, JSON shape) is LocksArgs' doc comment.
    Locks(commands::locks::LocksArgs),
    // Its help (what it cuts, refusals, JSON shape) is RepairArgs' doc comment.
    Repair(commands::repair::RepairArgs),
    // Its help (columns, filters, sorts, JSON shape) is SessionsArgs' doc comment.
    Sessions(commands::sessions::SessionsArgs),
    // Its help (grouping, prices, JSON shape) is UsageArgs' doc comment.
    Usage(commands::usage::UsageArgs),
    // Its help (requests, causes, replacements, JSON shape) is CacheArgs' doc comment.
    Cache(commands::cache::CacheArgs),
    // Its help (policies, sweep, JSON shape) is SimulateArgs' doc comment.
    Simulate(commands::simulate::SimulateArgs),
    // Its help (what the page shows, OUT, JSON shape) is ReportArgs' doc comment.
    Report(commands::report::ReportArgs),
    // Its help (kinds, thresholds, JSON shape, exit codes) is HealthArgs' doc comment.
    Health(commands::health::HealthArgs),
    // Its help (tables, formats, JSON shape) is ExportArgs' doc comment.
    Export(commands::export::ExportArgs),
    // Their help (layout, refusals, JSON shape) is PackArgs' / UnpackArgs' doc comment.
    Pack(commands::pack::PackArgs),
    Unpack(commands::pack::UnpackArgs),
    // Its help (template, cache, JSON shape) is StatuslineArgs' doc comment.
    Statusline(commands::statusline::StatuslineArgs),
    // Its help (what it redraws, plain lines, JSON shape) is WatchArgs' doc comment.
    Watch(commands::watch::WatchArgs),
    /// Print shell completions.
    Completions(commands::completions::CompletionsArgs),
}

/// The command line as clap sees it, for parsing, help and completions:
/// the global options, which do nothing for `completions`, are hidden from
/// its help and from the completion scripts' suggestions after it.
pub fn command() -> clap::Command {
    let cmd = Cli::command();
    // A subcommand that already has an argument of a global's id keeps its
    // own: give `completions` hidden copies.
    let hidden: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.clone().hide(true))
        .collect();
    cmd.mut_subcommand("completions", |sub| sub.args(hidden))
}

/// Parse, run, and turn the outcome into an exit code.
pub fn run() -> ExitCode {
    let parsed = help::fit_all_examples(command())
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            let argv: Vec<String> = std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let e = help::unknown_flag(&command(), &argv, &e).unwrap_or(e);
            let code = if e.use_stderr() {
                Status::Usage.code()
            } else {
                0
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    render::color::init(cli.color);
    render::escape::set_raw(cli.raw);
    // Read here rather than by clap, so that an empty $DSH_HOME means unset.
    let home = cli.home.clone().or_else(|| {
        std::env::var_os("DSH_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let mut ctx = Ctx::new(cli.json, cli.lenient, cli.quiet, home);
    if let Some(n) = cli.max_line_bytes {
        ctx.limits.max_line_bytes = n;
    }
    if let Some(n) = cli.max_decompressed {
        ctx.limits.max_decompressed = n;
    }
    ctx.paging = !cli.no_pager && !cli.json;
    ctx.command = matches.subcommand_name().unwrap_or_default().into();
    let result = match &cli.command {
        Command::Surface(a) => commands::surface::run(&mut ctx, a),
        Command::Messages(a) => commands::messages::run(&mut ctx, a),
        Command::Header(a) => commands::header::run(&mut ctx, a),
        Command::Measure(a) => commands::measure::run(&mut ctx, a),
        Command::Events(a) => commands::events::run(&mut ctx, a),
        Command::View(a) => commands::view::run(&mut ctx, a),
        Command::Load(a) => commands::load::run(&mut ctx, a),
        Command::Verify(a) => commands::verify::run(&mut ctx, a),
        Command::Compact(a) => commands::compact::run(&mut ctx, a),
        Command::Prune(a) => commands::prune::run(&mut ctx, a),
        Command::Locks(a) => commands::locks::run(&mut ctx, a),
        Command::Repair(a) => commands::repair::run(&mut ctx, a),
        Command::Sessions(a) => commands::sessions::run(&mut ctx, a),
        Command::Usage(a) => commands::usage::run(&mut ctx, a),
        Command::Export(a) => commands::export::run(&mut ctx, a),
        Command::Health(a) => commands::health::run(&mut ctx, a),
        Command::Pack(a) => commands::pack::run_pack(&mut ctx, a),
        Command::Cache(a) => commands::cache::run(&mut ctx, a),
        Command::Simulate(a) => commands::simulate::run(&mut ctx, a),
        Command::Unpack(a) => commands::pack::run_unpack(&mut ctx, a),
        Command::Report(a) => commands::report::run(&mut ctx, a),
        Command::Statusline(a) => commands::statusline::run(&mut ctx, a),
        Command::Watch(a) => commands::watch::run(&mut ctx, a),
        Command::Completions(a) => commands::completions::run(&mut ctx, a),
    };
    ctx.out.finish();
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(err) => {
            let status = exit::status_for(&err);
            if status == Status::Ok {
                return ExitCode::SUCCESS; // broken pipe: the reader went away
            }
            if let Some(le) = err.chain().find_map(|c| c.downcast_ref::<dsh::LoadError>()) {
                return ExitCode::from(ctx.report_load_error(le).code());
            }
            eprintln!("{} {err:#}", crate::cli::render::error_tag());
            if ctx.json {
                let _ = ctx.print_doc(&dsh::doc::error::Refusal::message(format!("{err:#}")));
            }
            ExitCode::from(status.code())
        }
    }
}

/// A byte count: digits with an optional K, M, G or T suffix (powers of
/// 1024; `KiB`, `MB` and the like are read the same), at least 1.
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = t.split_at(digits);
    let expected = || format!("expected a byte count such as 1048576, 64M or 1G, got {s:?}");
    let n: u64 = num.parse().map_err(|_| expected())?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(expected()),
    };
    let v = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    if v == 0 {
        return Err("must be at least 1 byte".into());
    }
    Ok(v)
}

/// A duration flag: `300`, `300s`, `5m`, `1h`, `250ms` → milliseconds.
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a duration such as 300s, 5m or 1h, got {s:?}"))?;
    let mul = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("unknown unit in {s:?} (ms, s, m, h, d)")),
    };
    n.checked_mul(mul)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_size};

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2KiB"), Ok(2048));
        assert!(parse_size("0").is_err());
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("300"), Ok(300_000));
        assert_eq!(parse_duration("5m"), Ok(300_000));
        assert_eq!(parse_duration("1h"), Ok(3_600_000));
        assert_eq!(parse_duration("250ms"), Ok(250));
        assert_eq!(parse_duration("2d"), Ok(172_800_000));
        assert!(parse_duration("5w").is_err());
    }
}
