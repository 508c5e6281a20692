# Shared by the bench scripts: time dsh and the oracle the same way, in turns.
# Sourced; expects $work (a scratch directory).
#
#   pair OUT_A OUT_B -- command A... -- command B...
#       → "seconds_A kilobytes_A seconds_B kilobytes_B"
#
# A first run of each under /usr/bin/time warms the page cache, gives the
# peak RSS and leaves its stdout in OUT_A / OUT_B. Then $RUNS rounds (default
# 5) run A then B, stdout to /dev/null, timed with bash's EPOCHREALTIME (not
# under /usr/bin/time, which adds ~15 ms of its own); the medians are
# reported. Taking turns matters on a shared machine, whose speed drifts
# over minutes: both tools see the same conditions.
pair() {
    local out_a="$1" out_b="$2"; shift 2
    [ "$1" = "--" ] && shift
    local a=() b=()
    while [ "$1" != "--" ]; do a+=("$1"); shift; done; shift
    b=("$@")
    local runs="${RUNS:-5}" sa=() sb=() ka kb
    ka=$(rss "$out_a" "${a[@]}") || return 1
    kb=$(rss "$out_b" "${b[@]}") || return 1
    for _ in $(seq "$runs"); do
        sa+=("$EPOCHREALTIME")
        "${a[@]}" > /dev/null 2> "$work/.err" || { echo "failed: ${a[*]}" >&2; cat "$work/.err" >&2; return 1; }
        sa+=("$EPOCHREALTIME")
        sb+=("$EPOCHREALTIME")
        "${b[@]}" > /dev/null 2> "$work/.err" || { echo "failed: ${b[*]}" >&2; cat "$work/.err" >&2; return 1; }
        sb+=("$EPOCHREALTIME")
    done
    echo "$(median "${sa[@]}") $ka $(median "${sb[@]}") $kb"
}

# rss OUT command... → peak kilobytes; stdout of the run left in OUT.
rss() {
    local out="$1"; shift
    /usr/bin/time -f "%M" -o "$work/.time" "$@" > "$out" 2> "$work/.err" || {
        echo "failed: $*" >&2; cat "$work/.err" >&2; return 1; }
    cat "$work/.time"
}

# median t0 t1 t0 t1 ... → median of the differences
median() {
    printf '%s %s\n' "$@" | awk '{ printf "%.4f\n", $2 - $1 }' | sort -n |
        awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }'
}
