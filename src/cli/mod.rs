//! The command line: global flags, the command enum and the one dispatch.

pub mod commands;
pub mod ctx;
pub mod exit;
pub mod many;
pub mod render;
pub mod rows;
pub mod spool;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
/// standard input, a session directory, or a session id / working directory
/// looked up under `$DSH_HOME/sessions`.
///
/// Exit status: 0 ok, 1 findings, 2 usage, 3 invalid or unreadable log,
/// 4 log busy (compaction lock or writer lock), 5 provider failure, 70 internal.
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
    /// Do not page long output (surface, messages, events, verify) through
    /// `$DSH_PAGER`, `$PAGER` or `less -FRX`.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_pager: bool,
    /// DSH home directory for session ids and cwds (default `~/.dsh`).
    #[arg(long, global = true, help_heading = GLOBAL, env = "DSH_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
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
    Load(commands::load::LoadArgs),
    // Its help (the open-turn rule, refusals, JSON shape) is PruneArgs' doc comment.
    Prune(commands::prune::PruneArgs),
    // Its help (semantics, lifecycle, config, JSON shape, exit codes) is CompactArgs' doc comment.
    Compact(commands::compact::CompactArgs),
    // Its help (with the check list and JSON shapes) is VerifyArgs' doc comment.
    Verify(commands::verify::VerifyArgs),
    // Its help (statuses, --release, JSON shape) is LocksArgs' doc comment.
    Locks(commands::locks::LocksArgs),
    /// Print shell completions.
    Completions(commands::completions::CompletionsArgs),
}

impl Command {
    /// The subcommand's name as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Surface(_) => "surface",
            Command::Messages(_) => "messages",
            Command::Header(_) => "header",
            Command::Measure(_) => "measure",
            Command::Events(_) => "events",
            Command::Load(_) => "load",
            Command::Prune(_) => "prune",
            Command::Compact(_) => "compact",
            Command::Verify(_) => "verify",
            Command::Locks(_) => "locks",
            Command::Completions(_) => "completions",
        }
    }
}

/// Parse, run, and turn the outcome into an exit code.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
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
    let mut ctx = Ctx::new(cli.json, cli.lenient, cli.quiet, cli.home.clone());
    ctx.paging = !cli.no_pager && !cli.json;
    ctx.command = cli.command.name();
    let result = match &cli.command {
        Command::Surface(a) => commands::surface::run(&mut ctx, a),
        Command::Messages(a) => commands::messages::run(&mut ctx, a),
        Command::Header(a) => commands::header::run(&mut ctx, a),
        Command::Measure(a) => commands::measure::run(&mut ctx, a),
        Command::Events(a) => commands::events::run(&mut ctx, a),
        Command::Load(a) => commands::load::run(&mut ctx, a),
        Command::Verify(a) => commands::verify::run(&mut ctx, a),
        Command::Compact(a) => commands::compact::run(&mut ctx, a),
        Command::Prune(a) => commands::prune::run(&mut ctx, a),
        Command::Locks(a) => commands::locks::run(&mut ctx, a),
        Command::Completions(a) => commands::completions::run(&mut ctx, a),
    };
    if let Some(pager) = ctx.pager.take() {
        pager.finish();
    }
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
                let v = dsh::Value::obj()
                    .with("error", format!("{err:#}").into())
                    .with("schema_version", ctx::SCHEMA_VERSION.into());
                let _ = ctx.print_json(&v);
            }
            ExitCode::from(status.code())
        }
    }
}
