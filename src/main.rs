//! The `dsh` binary: a thin command-line layer over the `dsh` library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
