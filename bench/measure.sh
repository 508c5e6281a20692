#!/usr/bin/env bash
# Benchmark `dsh measure --json` against the reference oracle on the same
# generated log, in the same run, and the o200k tokenizer's throughput.
#
#   bench/measure.sh [MB ...]        (default: 10 100 400)
#
# Needs ../shared (genlog and the oracle) beside the checkout. Logs are kept in
# $BENCH_DIR (default: a temporary directory) so repeated runs reuse them;
# $GENLOG_OPTS (default: --compactions 3 --prune-passes 3) shapes them. The
# oracle runs on logs up to $ORACLE_MAX_MB (default 100; it needs ~9x the log
# size in memory). For every size it prints wall time (median of $RUNS rounds
# in which the two tools take turns, after a warm-up; see bench/lib.sh) and
# peak RSS of `dsh measure --json`, of the oracle, the speed-up, dsh's
# RSS / log size, time per MB (linearity), whether dsh's answer equals the
# oracle's, and the o200k tokenizer's throughput (MB of tokenized text per
# second, from the `tokenizer.textBytes` / `elapsedSeconds` dsh reports).
# Not a test: nothing here asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] || { echo "needs $shared/tools/genlog" >&2; exit 2; }
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10 100 400)
opts="${GENLOG_OPTS:---compactions 3 --prune-passes 3}"
oracle_max="${ORACLE_MAX_MB:-100}"
(cd "$root" && cargo build --release --quiet)
# Let the build's writes reach the disk before anything is timed.
sync; sleep 2
dsh="$root/target/release/dsh"
oracle="$shared/tools/oracle/oracle"

# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

same() { # dsh.json oracle.json → yes/no (the oracle's keys, equal values)
    python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); o = json.load(open(sys.argv[2]))
print("yes" if all(d.get(k) == v for k, v in o.items()) else "NO")
EOF
}

printf "%-7s %9s %8s %9s %9s %10s %8s %8s %6s %10s\n" \
    size "dsh s" "dsh MB" "s/100MB" "oracle s" "oracle MB" speedup "RSS/log" equal "o200k MB/s"
for mb in "${sizes[@]}"; do
    slug="$(echo "$opts" | tr -c 'a-z0-9' '-' | tr -s '-')"
    log="$work/measure-${mb}mb${slug}.jsonl"
    # shellcheck disable=SC2086
    [ -f "$log" ] || "$shared/tools/genlog" --mb "$mb" --seed 7 $opts -o "$log"
    bytes=$(stat -c %s "$log")
    if [ "$mb" -le "$oracle_max" ]; then
        read -r ds dk os ok < <(pair "$work/dsh.json" "$work/oracle.json" \
            -- "$dsh" measure --json -q "$log" -- "$oracle" measure --compact "$log")
        eq=$(same "$work/dsh.json" "$work/oracle.json")
    else
        read -r ds dk _ _ < <(pair "$work/dsh.json" "$work/.none" \
            -- "$dsh" measure --json -q "$log" -- true)
        os=0; ok=0; eq="-"
    fi
    "$dsh" measure --json -q --tokenizer o200k "$log" > "$work/tok.json"
    tput=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['tokenizer']; print('%.2f' % (t['textBytes']/1e6/max(t['elapsedSeconds'],1e-9)))" "$work/tok.json")
    awk -v mb="$mb" -v ds="$ds" -v dk="$dk" -v os="$os" -v ok="$ok" -v b="$bytes" -v eq="$eq" -v tp="$tput" 'BEGIN {
        sp = (os > 0) ? sprintf("%7.1fx", os/ds) : "      -";
        osf = (os > 0) ? sprintf("%9.2f", os) : "        -";
        okf = (ok > 0) ? sprintf("%10.1f", ok/1024) : "         -";
        printf "%-7s %9.3f %8.1f %9.3f %s %s %s %8.3f %6s %10s\n", mb "MB", ds, dk/1024, ds*1e8/b, osf, okf, sp, dk*1024/b, eq, tp }'
done
