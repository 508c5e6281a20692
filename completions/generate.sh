#!/bin/sh
# Regenerate the committed shell completions from the binary's clap definition.
set -e
cd "$(dirname "$0")/.."
cargo run --quiet -- completions bash > completions/dsh.bash
cargo run --quiet -- completions zsh > completions/_dsh
cargo run --quiet -- completions fish > completions/dsh.fish
