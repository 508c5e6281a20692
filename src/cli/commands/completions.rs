//! `dsh completions`: shell completion scripts.

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;

/// Print a completion script for a shell (the committed ones live in
/// `completions/`).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh completions bash > ~/.local/share/bash-completion/completions/dsh\n  dsh completions zsh > ~/.zfunc/_dsh\n  dsh completions fish > ~/.config/fish/completions/dsh.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &CompletionsArgs) -> Result<Status> {
    let mut cmd = Cli::command();
    let mut out = ctx.out.stream();
    clap_complete::generate(args.shell, &mut cmd, "dsh", &mut out);
    std::io::Write::flush(&mut out)?;
    Ok(Status::Ok)
}
