# Shared by the bench scripts: time a command the same way for dsh and the
# oracle. Sourced; expects $work (a scratch directory).
#
#   timed OUT command...  → "seconds kilobytes"
#
# A first run under /usr/bin/time warms the page cache, gives the peak RSS
# and leaves its stdout in OUT. Then $RUNS runs (default 5), stdout to
# /dev/null, timed with bash's EPOCHREALTIME (not under /usr/bin/time, which
# adds ~15 ms of its own); the median is reported.
timed() {
    local out="$1"; shift
    local runs="${RUNS:-5}" stamps=() kb
    /usr/bin/time -f "%M" -o "$work/.time" "$@" > "$out" 2> "$work/.err" || {
        echo "failed: $*" >&2; cat "$work/.err" >&2; return 1; }
    kb=$(cat "$work/.time")
    # Nothing but the runs between the stamps; the arithmetic comes after.
    for _ in $(seq "$runs"); do
        stamps+=("$EPOCHREALTIME")
        "$@" > /dev/null 2> "$work/.err" || { echo "failed: $*" >&2; cat "$work/.err" >&2; return 1; }
        stamps+=("$EPOCHREALTIME")
    done
    printf '%s %s\n' "${stamps[@]}" | awk '{ printf "%.4f\n", $2 - $1 }' | sort -n |
        awk -v kb="$kb" '{ t[NR] = $1 } END { printf "%s %s\n", t[int((NR + 1) / 2)], kb }'
}
