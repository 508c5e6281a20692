#!/usr/bin/env bash
# How long `dsh statusline` takes on a 100 MB session, the way a prompt or a
# status bar calls it while the agent works.
#
#   bench/statusline.sh        (RUNS=5; BENCH_DIR keeps the logs; BENCH_MB=100;
#                               HOME_COPIES=0: other sessions in the home, as
#                               bench/make-home.sh lays them out, written two
#                               days ago unless HOME_TODAY=1)
#
# The log is `genlog --mb $BENCH_MB --seed 7`, cut just before a run of
# streamed chunks near its end (the model answering), laid out as the
# newest session of a project in a DSH home of its own, plain and as a
# multi-frame artifact (`dsh pack`). For each, the median of $RUNS runs of:
#
#   cold       the cache emptied first: the log read whole (and remembered)
#   cached     nothing changed since the last run
#   followed   two more streamed chunk lines (or one frame of them) appended
#              before each run: only they are read
#   no-cache   --no-cache: read whole, nothing remembered
#
# Needs ../shared (genlog) beside the checkout. Not a test: nothing asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] || { echo "needs $shared/tools/genlog" >&2; exit 2; }
command -v zstd > /dev/null || { echo "needs the zstd command (to append frames)" >&2; exit 2; }
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
runs="${RUNS:-5}"
mb="${BENCH_MB:-100}"
(cd "$root" && cargo build --release --quiet)
sync; sleep 1
dsh="$root/target/release/dsh"
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

log="$work/gen-${mb}mb.jsonl"
[ -f "$log" ] || "$shared/tools/genlog" --mb "$mb" --seed 7 -o "$log"

# The cut: before the last run of at least 2 * (RUNS + 2) chunk lines.
python3 - "$log" "$work/prefix.jsonl" "$work/chunks.jsonl" "$((2 * (runs + 2)))" <<'EOF'
import sys
src, prefix, chunks, need = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = open(src, encoding="utf-8").read().split("\n")[:-1]
is_chunk = lambda l: '"type":"assistant/chunk"' in l or '-chunks","seq0"' in l
cut = None
i = len(lines) - 1
while i > 0:
    if is_chunk(lines[i]):
        j = i
        while j > 0 and is_chunk(lines[j - 1]):
            j -= 1
        if i - j + 1 >= need:
            cut = (j, i + 1)
            break
        i = j
    i -= 1
if cut is None:
    sys.exit("no run of chunks long enough")
open(prefix, "w", encoding="utf-8").write("\n".join(lines[:cut[0]]) + "\n")
open(chunks, "w", encoding="utf-8").write("\n".join(lines[cut[0]:cut[1]]) + "\n")
EOF

proj="$work/proj"
mkdir -p "$proj"
home="$work/home"
cache="$work/cache"
export DSH_HOME="$home" XDG_CACHE_HOME="$cache" XDG_CONFIG_HOME="$work/no-config" TZ=UTC
unset DSH_CONFIG
session_dir="$home/sessions/$(python3 -c 'import re,sys; n=re.sub(r"[/\\:]+","-",sys.argv[1]).lstrip("-") or "root"; print("--"+"".join(c if re.match(r"[A-Za-z0-9._-]",c) else "~%04X"%ord(c) for c in n)[:251]+"--")' "$proj")/bench-0001"
if [ "${HOME_COPIES:-0}" -gt 0 ] && [ ! -d "$home/sessions" ]; then
    DSH="$dsh" "$root/bench/make-home.sh" "$home" "$HOME_COPIES" > /dev/null
    # Other sessions were written on other days (HOME_TODAY=1: today, the
    # worst case: every one of them is looked at for today's cost).
    [ "${HOME_TODAY:-0}" = 1 ] || find "$home/sessions" -type f -exec touch -d '2 days ago' {} +
fi
mkdir -p "$session_dir"

# time_runs SETUP -- command... → median seconds over $runs runs, SETUP run
# (untimed) before each.
time_runs() {
    local setup="$1"; shift 2
    local ts=()
    for _ in $(seq "$runs"); do
        eval "$setup"
        ts+=("$EPOCHREALTIME"); "$@" > /dev/null; ts+=("$EPOCHREALTIME")
    done
    median "${ts[@]}"
}

printf '%-8s %-10s %10s\n' form case seconds
for form in plain zstd; do
    rm -f "$session_dir"/session.jsonl*
    if [ "$form" = plain ]; then
        target="$session_dir/session.jsonl"
        cp "$work/prefix.jsonl" "$target"
    else
        target="$session_dir/session.jsonl.zstd"
        "$dsh" pack --lines 200 -o "$target" "$work/prefix.jsonl" > /dev/null
    fi
    rm -rf "$cache"
    echo 1 > "$work/.line"
    append() { # the next two chunk lines, as lines or as one frame
        local line part
        line=$(cat "$work/.line")   # a file: time_runs runs in a subshell
        part="$(sed -n "${line},$((line + 1))p" "$work/chunks.jsonl")"
        echo $((line + 2)) > "$work/.line"
        if [ "$form" = plain ]; then
            printf '%s\n' "$part" >> "$target"
        else
            printf '%s\n' "$part" | zstd -q -c >> "$target"
        fi
    }
    cd "$proj"
    printf '%-8s %-10s %10s\n' "$form" cold "$(time_runs 'rm -rf "$cache"' -- "$dsh" statusline)"
    "$dsh" statusline > /dev/null
    printf '%-8s %-10s %10s\n' "$form" cached "$(time_runs ':' -- "$dsh" statusline)"
    printf '%-8s %-10s %10s\n' "$form" followed "$(time_runs 'append' -- "$dsh" statusline)"
    append
    "$dsh" statusline --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print("         (after one more append the source is", d["source"] + ")")'
    printf '%-8s %-10s %10s\n' "$form" no-cache "$(time_runs ':' -- "$dsh" statusline --no-cache)"
    cd "$root"
done
