#!/usr/bin/env bash
# The same session read in format v0 and in v3 (docs/generations.md): a
# genlog log (100 MB by default) carried to v3 by DSH's own published
# migrations (../shared/tools/migrate), both plain and packed as Zstandard
# artifacts; dsh reads each with the same commands, in turns (bench/lib.sh).
#
#   bench/generations.sh      (RUNS=5; BENCH_MB=100; BENCH_DIR keeps the logs)
#
# Prints one row per command and container: v0 seconds, v3 seconds and the
# ratio v3/v0 (target: within 1.10). Not a test: nothing here asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] && [ -x "$shared/tools/migrate/migrate" ] ||
    { echo "needs $shared/tools/genlog and $shared/tools/migrate" >&2; exit 2; }
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
export RUNS="${RUNS:-5}"
mb="${BENCH_MB:-100}"
(cd "$root" && cargo build --release --quiet)
dsh="$root/target/release/dsh"
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

v0="$work/gen-$mb.jsonl"
v3="$work/gen-$mb/session.v3.jsonl"
[ -f "$v0" ] || "$shared/tools/genlog" --mb "$mb" --seed 7 --compactions 3 --prune-passes 3 -o "$v0"
[ -f "$v3" ] || "$shared/tools/migrate/migrate" "$work" "$v0" > "$work/migrate.json"
[ -f "$v0.zstd" ] || "$dsh" pack -q "$v0" -o "$v0.zstd"
[ -f "$v3.zstd" ] || "$dsh" pack -q "$v3" -o "$v3.zstd"

printf '%-22s %-6s %9s %9s %7s\n' command form v0 v3 v3/v0
for form in plain zstd; do
    a="$v0"; b="$v3"
    [ "$form" = zstd ] && { a="$v0.zstd"; b="$v3.zstd"; }
    for cmd in "surface --json" "messages --json" "measure --json" "verify" "cache --json" "prune --dry-run --json"; do
        # shellcheck disable=SC2086
        read -r ta _ tb _ < <(pair "$work/a.out" "$work/b.out" -- "$dsh" $cmd "$a" -- "$dsh" $cmd "$b")
        printf '%-22s %-6s %8.3fs %8.3fs %6.2fx\n' "$cmd" "$form" "$ta" "$tb" "$(echo "$tb / $ta" | bc -l)"
    done
done
