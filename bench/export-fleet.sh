#!/usr/bin/env bash
# Benchmark the fleet export (`dsh export --incremental`) of a home of about
# 2,000 sessions: the first run, a run with nothing changed, and a run after
# appending to GROW logs (default 20) and adding NEW sessions (default 10).
#
#   bench/export-fleet.sh [COPIES]      (default 11: 11 × 181 corpus logs = 1,991 sessions)
#
# The home is laid out by bench/make-home.sh (every corpus log COPIES times,
# half of them as .jsonl.zstd) under $BENCH_DIR (default: a temporary
# directory); logs are grown by appending a `session/end-seed` record to
# plain logs whose last line is a whole event. Needs ../shared (the corpus)
# and a release build ($DSH, default target/release/dsh). Prints each run's
# wall time (median of $RUNS, default 3, each on a fresh copy of the export
# for the runs that write) and what it read. Not a test: nothing asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dsh="${DSH:-$root/target/release/dsh}"
copies="${1:-11}"
grow="${GROW:-20}"; new="${NEW:-10}"; runs="${RUNS:-3}"
work="${BENCH_DIR:-$(mktemp -d)}"
home="$work/home-$copies"
[ -x "$dsh" ] || { echo "needs $dsh (cargo build --release)" >&2; exit 2; }
[ -d "$home/sessions" ] || DSH="$dsh" "$root/bench/make-home.sh" "$home" "$copies" >/dev/null
sessions=$(find "$home/sessions" -name 'session.jsonl*' | wc -l)
bytes=$(du -sb "$home" | cut -f1)

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# run OUT → seconds; the run's --json in $work/last.json
run() {
    local a=$EPOCHREALTIME
    "$dsh" export --incremental --json -q --lenient --out "$1" --home-label bench="$home" > "$work/last.json" 2>/dev/null || true
    secs "$a" "$EPOCHREALTIME"
}
read_of() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["incremental"]; print(d["read"], d["new"], d["grown"], len(d["rewritten"]), d["unchanged"], d["files"])' "$work/last.json"; }

# First run: a fresh directory each time.
t=()
for i in $(seq "$runs"); do rm -rf "$work/out"; t+=("$(run "$work/out")"); done
first=$(median "${t[@]}"); first_read=$(read_of)
# Nothing changed.
t=()
for i in $(seq "$runs"); do t+=("$(run "$work/out")"); done
same=$(median "${t[@]}"); same_read=$(read_of)
# Appends and new sessions (the grown logs stay grown; the new sessions
# are removed at the end).
cp -a "$work/out" "$work/out.base"
python3 - "$home" "$grow" <<'PY'
import json, os, sys
home, n = sys.argv[1], int(sys.argv[2])
done = 0
for d, _, files in sorted(os.walk(os.path.join(home, "sessions"))):
    if done >= n or "session.jsonl" not in files:
        continue
    p = os.path.join(d, "session.jsonl")
    lines = open(p, "rb").read().split(b"\n")
    last = lines[-2] if lines and lines[-1] == b"" and len(lines) > 2 else None
    try:
        ev = json.loads(last)
    except Exception:
        continue
    if not isinstance(ev, dict) or not isinstance(ev.get("seq"), int) or "type" not in ev or ev["type"].endswith("-chunks"):
        continue
    rec = {"type": "session/end-seed", "seq": ev["seq"] + 1, "time": ev.get("time", 0), "data": {}}
    open(p, "ab").write((json.dumps(rec, separators=(",", ":")) + "\n").encode())
    done += 1
print(done, "logs grown", file=sys.stderr)
PY
src=$(find "$home/sessions" -name session.jsonl | sort | head -n "$new" || true)
i=0
for f in $src; do
    d="$home/sessions/--bench-new--/new-$i"; mkdir -p "$d"; cp "$f" "$d/session.jsonl"; i=$((i + 1))
done
t=()
for i in $(seq "$runs"); do rm -rf "$work/out"; cp -a "$work/out.base" "$work/out"; t+=("$(run "$work/out")"); done
incr=$(median "${t[@]}"); incr_read=$(read_of)
# The one-shot export of the same home, for scale.
a=$EPOCHREALTIME
"$dsh" export -q --lenient --force --out "$work/flat" "$home" >/dev/null 2>&1 || true
flat=$(secs "$a" "$EPOCHREALTIME")
rm -rf "$home/sessions/--bench-new--"

echo "home: $sessions sessions, $((bytes / 1000000)) MB ($home)"
echo "columns: read new grown rewritten unchanged files"
echo "first run        ${first}s   $first_read"
echo "nothing changed  ${same}s   $same_read"
echo "grown + new      ${incr}s   $incr_read"
echo "one-shot export  ${flat}s   (dsh export --out, no manifest)"
