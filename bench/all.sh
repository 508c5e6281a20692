#!/usr/bin/env bash
# Every row of the performance targets in one run, printed as one table.
#
#   bench/all.sh       (RUNS=3 by default; BENCH_DIR keeps the logs;
#                       BENCH_MB=100 the main log's size; LINEAR="10 100 400")
#
# Needs ../shared (genlog and the reference oracle) beside the checkout.
#
# Sections:
#   1. the multi-frame Zstandard artifact of the 100 MB log (made by
#      `dsh pack --lines 200`, the harness's one frame per append batch
#      stood in for by 200 lines): surface, messages, measure, verify
#      against the reference on the same artifact; RSS against the
#      decompressed size; and the decoding alone (`dsh unpack -o -`), the
#      floor under those rows;
#   2. the plain 100 MB log: prune --dry-run and verify against the
#      reference; events, locks and compact --dry-run against dsh's own
#      surface --json (they have no reference counterpart);
#   3. the tokenizers: MB/s of text counted (text bytes over the time
#      --tokenizer adds to measure);
#   4. whole homes (bench/make-home.sh, when present): sessions per second
#      for measure, verify and locks over 2,000 sessions;
#   5. linearity: seconds per 100 MB at 10, 100 and 400 MB.
#
# dsh and the reference take turns (bench/lib.sh), so that drift in a shared
# machine's speed hits both; figures are medians. Not a test: nothing here
# asserts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
[ -x "$shared/tools/genlog" ] || { echo "needs $shared/tools/genlog" >&2; exit 2; }
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
export RUNS="${RUNS:-3}"
(cd "$root" && cargo build --release --quiet)
sync; sleep 1
dsh="$root/target/release/dsh"
oracle="$shared/tools/oracle/oracle"
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"

# A home of its own, so that no user configuration changes what is timed.
export DSH_HOME="$work/no-home" XDG_CONFIG_HOME="$work/no-config"
unset DSH_CONFIG
export DEEPSEEK_API_KEY=bench-not-a-key   # compact --dry-run checks that one is set

gen() { # MB → path of the plain log
    local log="$work/gen-${1}mb.jsonl"
    [ -f "$log" ] || "$shared/tools/genlog" --mb "$1" --seed 7 -o "$log"
    echo "$log"
}

# solo OUT command... → "seconds kilobytes" (median of $RUNS; any exit status)
solo() {
    local out="$1"; shift
    /usr/bin/time -f "%M" -o "$work/.time" "$@" > "$out" 2> /dev/null || true
    local kb; kb=$(cat "$work/.time" | tail -1)
    local ts=()
    for _ in $(seq "$RUNS"); do
        ts+=("$EPOCHREALTIME"); "$@" > /dev/null 2>&1 || true; ts+=("$EPOCHREALTIME")
    done
    echo "$(median "${ts[@]}") $kb"
}

row() { printf "%-34s %9s %9s %8s %9s %8s\n" "$@"; }

mb_main="${BENCH_MB:-100}"
log100=$(gen "$mb_main")
plain_bytes=$(stat -c %s "$log100")
art="$work/gen-${mb_main}mb.jsonl.zstd"
[ -f "$art" ] || "$dsh" pack --lines 200 "$log100" -o "$art" > /dev/null

echo "## 1. Zstandard artifact of the $mb_main MB log ($(stat -c %s "$art") bytes; RSS/log is against the decompressed size)"
row work "dsh s" "ref s" speedup "dsh MB" RSS/log
for pair in "surface --json:surface" "messages --json:derive" "measure --json:measure" "verify --json --exit-zero:verify"; do
    cmd="${pair%%:*}"; ocmd="${pair##*:}"
    # shellcheck disable=SC2086
    read -r ds dk os _ < <(pair "$work/.out" "$work/.oracle.out" -- "$dsh" $cmd "$art" -- "$oracle" "$ocmd" "$art")
    row "$cmd (zstd)" "$ds" "$os" "$(awk -v a="$ds" -v b="$os" 'BEGIN{printf "%.1fx", b/a}')" \
        "$(awk -v k="$dk" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$dk" -v b="$plain_bytes" 'BEGIN{printf "%.2f", k*1024/b}')"
done
# The floor under the rows above: Zstandard's own decoding of the artifact
# (every frame, checksums verified), with no parsing at all.
read -r us uk < <(solo "$work/.out" "$dsh" unpack "$art" -o -)
row "unpack -o - (decoding alone)" "$us" "—" "floor" \
    "$(awk -v k="$uk" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$uk" -v b="$plain_bytes" 'BEGIN{printf "%.2f", k*1024/b}')"

echo
echo "## 2. Every command on the plain $mb_main MB log"
row work "dsh s" "ref s" speedup "dsh MB" RSS/log
for pair in "prune --dry-run --resume --json:prune" "verify --json --exit-zero:verify"; do
    cmd="${pair%%:*}"; ocmd="${pair##*:}"
    # shellcheck disable=SC2086
    read -r ds dk os _ < <(pair "$work/.out" "$work/.oracle.out" -- "$dsh" $cmd "$log100" -- "$oracle" "$ocmd" "$log100")
    row "$cmd" "$ds" "$os" "$(awk -v a="$ds" -v b="$os" 'BEGIN{printf "%.1fx", b/a}')" \
        "$(awk -v k="$dk" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$dk" -v b="$plain_bytes" 'BEGIN{printf "%.2f", k*1024/b}')"
done
read -r ss sk < <(solo "$work/.out" "$dsh" surface --json "$log100")
row "surface --json (the yardstick)" "$ss" "—" "1.0x" "$(awk -v k="$sk" 'BEGIN{printf "%.1f", k/1024}')" ""
for cmd in "events" "events --json" "locks --json" \
    "compact --dry-run --json --route deepseek-official/deepseek-v4-flash"; do
    # shellcheck disable=SC2086
    read -r ds dk < <(solo "$work/.out" "$dsh" $cmd "$log100")
    row "${cmd%% --route*}" "$ds" "—" "$(awk -v a="$ds" -v b="$ss" 'BEGIN{printf "%.1f× surface", a/b}')" \
        "$(awk -v k="$dk" 'BEGIN{printf "%.1f", k/1024}')" ""
done

echo
echo "## 3. Tokenizers (text counted per second, on the $mb_main MB log)"
read -r base _ < <(solo "$work/.out" "$dsh" measure --json "$log100")
for enc in o200k cl100k; do
    read -r t _ < <(solo "$work/.tok" "$dsh" measure --json --tokenizer "$enc" "$log100")
    text=$(grep -o '"textBytes":[0-9]*' "$work/.tok" | head -1 | cut -d: -f2)
    row "measure --tokenizer $enc" "$t" "" "$(awk -v t="$t" -v b="$base" -v n="$text" 'BEGIN{printf "%.0f MB/s", n/1e6/(t-b)}')" "" ""
done

echo
echo "## 4. Whole homes"
if [ -x "$root/bench/make-home.sh" ]; then
    home="$work/home"
    [ -d "$home" ] || "$root/bench/make-home.sh" "$home" > /dev/null
    n=$(find "$home" -name 'session.jsonl*' | wc -l)
    for cmd in "measure --json" "verify --json --exit-zero" "locks --json"; do
        # shellcheck disable=SC2086
        read -r ds dk < <(DSH_HOME="$home" solo "$work/.out" "$dsh" $cmd)
        row "$cmd ($n sessions)" "$ds" "" "$(awk -v t="$ds" -v n="$n" 'BEGIN{printf "%.0f/s", n/t}')" \
            "$(awk -v k="$dk" 'BEGIN{printf "%.1f", k/1024}')" ""
    done
else
    echo "(bench/make-home.sh is not there: skipped)"
fi

echo
echo "## 5. Linearity (seconds per 100 MB)"
read -r -a sizes <<< "${LINEAR:-10 100 400}"
printf "%-34s" work; printf " %9s" "${sizes[@]/%/ MB}"; echo
for cmd in "surface --json" "measure --json" "verify --json --exit-zero" "prune --dry-run --resume --json" "events"; do
    line=()
    for mb in "${sizes[@]}"; do
        l=$(gen "$mb"); b=$(stat -c %s "$l")
        # shellcheck disable=SC2086
        read -r t _ < <(solo "$work/.out" "$dsh" $cmd "$l")
        line+=("$(awk -v t="$t" -v b="$b" 'BEGIN{printf "%.3f", t*1e8/b}')")
    done
    printf "%-34s" "$cmd"; printf " %9s" "${line[@]}"; echo
done
