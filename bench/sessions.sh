#!/usr/bin/env bash
# Benchmark `dsh sessions` and `dsh usage` over a generated DSH home.
#
#   bench/sessions.sh [SESSIONS] [EVENTS]     (default: 2000 sessions of ~400 events)
#
# Needs ../shared/tools/genlog beside the checkout. Writes $BENCH_DIR
# (default: a temporary directory)/home-N-E: genlog makes 20 distinct logs
# (seeds 1-20, some with compactions, prunes and restarts), and each session
# directory gets one of them with its own id, cwd (ten projects) and
# createdAt in the header. Prints the wall time (median of $RUNS runs, after a
# warm-up) of `dsh sessions --json`, `dsh sessions` (the table, to a pipe)
# and `dsh usage --json`, and sessions per second. Not a test: nothing here
# asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] || { echo "needs $shared/tools/genlog" >&2; exit 2; }
n="${1:-2000}"; events="${2:-400}"
work="${BENCH_DIR:-$(mktemp -d)}"
home="$work/home-$n-$events"
(cd "$root" && cargo build --release --quiet)
dsh="$root/target/release/dsh"
if [ ! -d "$home/sessions" ]; then
    seeds="$work/seeds-$events"; mkdir -p "$seeds"
    for s in $(seq 1 20); do
        opts=""
        [ $((s % 4)) -eq 0 ] && opts="--compactions 1 --prune-passes 1"
        [ $((s % 5)) -eq 0 ] && opts="$opts --restarts 1"
        # shellcheck disable=SC2086
        [ -f "$seeds/$s.jsonl" ] || "$shared/tools/genlog" --events "$events" --max-steps 2 --seed "$s" $opts -o "$seeds/$s.jsonl"
    done
    python3 - "$seeds" "$home" "$n" <<'PY'
import json, os, sys
seeds, home, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
logs = [open(os.path.join(seeds, f"{s}.jsonl")).read().split("\n", 1) for s in range(1, 21)]
for i in range(n):
    head, rest = logs[i % 20]
    h = json.loads(head)
    cwd = f"/home/dev/project-{i % 10}"
    h["id"] = f"bench-{i:05d}"
    h["cwd"] = cwd
    h["createdAt"] = h["createdAt"] + i * 60000
    d = os.path.join(home, "sessions", f"--work-project-{i % 10}--", h["id"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "session.jsonl"), "w") as f:
        f.write(json.dumps(h, separators=(",", ":")) + "\n" + rest)
PY
fi
bytes=$(du -sb "$home" | cut -f1)
runs="${RUNS:-5}"
time_it() { # command... → median seconds
    "$@" > /dev/null 2>&1 || true
    local t=()
    for _ in $(seq "$runs"); do
        local a=$EPOCHREALTIME
        "$@" > /dev/null 2>&1 || true
        t+=("$(awk -v a="$a" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')")
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf "%s sessions, %s MB on disk\n" "$n" "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')"
for cmd in "sessions --json" "sessions" "usage --json"; do
    # shellcheck disable=SC2086
    s=$(time_it env DSH_HOME="$home" "$dsh" $cmd)
    awk -v c="dsh $cmd" -v s="$s" -v n="$n" 'BEGIN { printf "%-20s %7.3f s  %8.0f sessions/s\n", c, s, n / s }'
done
