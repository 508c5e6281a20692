#!/usr/bin/env bash
# Lay out a DSH home of many sessions for the whole-home benchmarks
# (`dsh measure|verify|locks HOME`): every corpus log, COPIES times, as
#
#   HOME/sessions/<project>/<session-dir>/session.jsonl       (even sessions)
#   HOME/sessions/<project>/<session-dir>/session.jsonl.zstd  (odd ones, `dsh pack`)
#
#   bench/make-home.sh HOME [COPIES]     (default COPIES: 14)
#
# One project per copy and corpus set (`--bench-c01-real--`, …), one session
# directory per log (its file name). A log `dsh pack` refuses (a torn tail)
# stays plain. Needs ../shared (the corpus) beside the checkout and a
# release build ($DSH, default target/release/dsh). HOME must not exist yet
# (or be empty). Prints the number of sessions, plain and zstd.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
corpus="${CORPUS:-$root/../shared/corpus}"
dsh="${DSH:-$root/target/release/dsh}"
home="${1:?usage: bench/make-home.sh HOME [COPIES]}"
copies="${2:-14}"
[ -d "$corpus" ] || { echo "needs the corpus at $corpus" >&2; exit 2; }
[ -x "$dsh" ] || { echo "needs $dsh (cargo build --release)" >&2; exit 2; }
if [ -e "$home" ] && [ -n "$(ls -A "$home")" ]; then
    echo "$home exists and is not empty" >&2; exit 2
fi
mkdir -p "$home/sessions"
n=0; zst=0
for c in $(seq -f '%02g' 1 "$copies"); do
    for set in real synthetic edge; do
        [ -d "$corpus/$set" ] || continue
        proj="$home/sessions/--bench-c$c-$set--"
        for log in "$corpus/$set"/*.jsonl; do
            name="$(basename "$log" .jsonl)"
            dir="$proj/$name"
            mkdir -p "$dir"
            if [ $((n % 2)) -eq 1 ] &&
                "$dsh" pack -o "$dir/session.jsonl.zstd" "$log" >/dev/null 2>&1; then
                zst=$((zst + 1))
            else
                rm -f "$dir/session.jsonl.zstd"
                cp "$log" "$dir/session.jsonl"
            fi
            n=$((n + 1))
        done
    done
done
echo "$n sessions ($((n - zst)) plain, $zst zstd) in $home"
