#!/usr/bin/env bash
# Benchmark `dsh surface --json` and `dsh messages --json` against the
# reference oracle on the same generated log, in the same run.
#
#   bench/surface.sh [MB ...]        (default: 100)
#
# Needs ../shared (genlog and the oracle) beside the checkout. Logs are kept in
# $BENCH_DIR (default: a temporary directory) so repeated runs reuse them.
# Prints wall time (median of $RUNS rounds in which the two tools take turns,
# after a warm-up; see bench/lib.sh) and peak RSS for each tool, and the
# speed-up and RSS/log-size ratios. Not a test: nothing here asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] || { echo "needs $shared/tools/genlog" >&2; exit 2; }
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(100)
(cd "$root" && cargo build --release --quiet)
# Let the build's writes reach the disk before anything is timed.
sync; sleep 2
dsh="$root/target/release/dsh"
oracle="$shared/tools/oracle/oracle"

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

printf "%-8s %-9s %10s %10s %10s %10s %8s %8s\n" size command "dsh s" "dsh MB" "oracle s" "oracle MB" speedup "RSS/log"
for mb in "${sizes[@]}"; do
    log="$work/gen-${mb}mb.jsonl"
    [ -f "$log" ] || "$shared/tools/genlog" --mb "$mb" --seed 7 -o "$log"
    bytes=$(stat -c %s "$log")
    for pair in surface:surface messages:derive; do
        cmd="${pair%%:*}"; ocmd="${pair##*:}"
        read -r ds dk os ok < <(pair "$work/.out" "$work/.oracle.out" \
            -- "$dsh" "$cmd" --json "$log" -- "$oracle" "$ocmd" "$log")
        awk -v mb="$mb" -v c="$cmd" -v ds="$ds" -v dk="$dk" -v os="$os" -v ok="$ok" -v b="$bytes" 'BEGIN {
            printf "%-8s %-9s %10.3f %10.1f %10.3f %10.1f %7.1fx %8.3f\n", mb "MB", c, ds, dk/1024, os, ok/1024, os/ds, dk*1024/b }'
    done
done
