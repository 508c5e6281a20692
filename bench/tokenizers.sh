#!/usr/bin/env bash
# Tokenizer costs: the first use of each table (expanding it) and the warm
# counting speed on a large generated log.
#
#   bench/tokenizers.sh [MB]          (default: 100)
#
# Needs ../shared/tools/genlog beside the checkout; the log is kept in
# $BENCH_DIR (default: a temporary directory). First use: the median wall time
# of `dsh measure --tokenizer E` on a small sample less that of `dsh measure`
# alone (the table is expanded once per process). Warm speed: the text bytes
# counted over the seconds counting took, as `measure` reports them (tables
# loaded before the clock starts; every core counts), and, steadier on a
# shared machine, the text bytes over the CPU seconds the flag adds (user +
# system time with the flag less without it, the table's expansion included).
# Not a test: nothing here asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] || { echo "needs $shared/tools/genlog" >&2; exit 2; }
work="${BENCH_DIR:-$(mktemp -d)}"
mb="${1:-100}"
(cd "$root" && cargo build --release --quiet)
dsh="$root/target/release/dsh"
log="$work/tokenizers-${mb}mb.jsonl"
[ -f "$log" ] || "$shared/tools/genlog" --mb "$mb" --seed 7 --compactions 3 --prune-passes 3 -o "$log" >/dev/null
sample="$root/samples/coding-session.jsonl"
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
wall() { # command… → seconds of the median of 7 runs
    for _ in 1 2 3 4 5 6 7; do
        s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
        echo "$e - $s" | bc -l
    done | median
}
base=$(wall "$dsh" measure "$sample")
cat "$log" >/dev/null
cpu() { # command… → the least CPU seconds (user + system) of 3 runs
    for _ in 1 2 3; do
        /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{ print $1 + $2 }'
    done | sort -n | head -1
}
cpu0=$(cpu "$dsh" measure "$log")
printf "%-12s %14s %14s %14s\n" encoding "first use ms" "warm MB/s" "MB/CPU-s"
for enc in o200k cl100k deepseek-v4; do
    first=$(wall "$dsh" measure --tokenizer "$enc" "$sample")
    speed=$(for _ in 1 2 3; do
        "$dsh" measure --tokenizer "$enc" "$log" | sed -n 's/.* \([0-9,]*\) bytes in \([0-9.]*\)s.*/\1 \2/p' \
            | tr -d , | awk '{ printf "%.1f\n", $1 / 1e6 / $2 }'
    done | median)
    bytes=$("$dsh" measure --json --tokenizer "$enc" "$log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokenizer"]["textBytes"])')
    per_cpu=$(echo "$bytes / 1000000 / ($(cpu "$dsh" measure --tokenizer "$enc" "$log") - $cpu0)" | bc -l)
    printf "%-12s %14.0f %14s %14.1f\n" "$enc" "$(echo "($first - $base) * 1000" | bc -l)" "$speed" "$per_cpu"
done
