//! `dsh completions`: shell completion scripts.

use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;
use anyhow::Result;

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
    if ctx.json {
        return Err(crate::cli::exit::UsageError(
            "completions prints a shell script; --json has nothing to describe here".into(),
        )
        .into());
    }
    let mut cmd = crate::cli::command();
    // The scripts should not offer the global options after `completions`,
    // where they do nothing: build the tree (which copies the globals into
    // every subcommand), then swap in a `completions` built on its own.
    cmd.build();
    if let Some(sub) = cmd.find_subcommand_mut("completions") {
        let mut own =
            <CompletionsArgs as clap::Args>::augment_args(clap::Command::new("completions"))
                .bin_name(sub.get_bin_name().unwrap_or("dsh completions").to_string())
                .display_name(
                    sub.get_display_name()
                        .unwrap_or("dsh-completions")
                        .to_string(),
                );
        if let Some(about) = sub.get_about() {
            own = own.about(about.clone());
        }
        if sub.get_version().is_some() {
            own = own.version(env!("CARGO_PKG_VERSION"));
        }
        own.build();
        *sub = own;
    }
    let mut out = ctx.out.stream();
    clap_complete::generate(args.shell, &mut cmd, "dsh", &mut out);
    std::io::Write::flush(&mut out)?;
    Ok(Status::Ok)
}
