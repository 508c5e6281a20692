#!/usr/bin/env bash
# Does one dsh binary print exactly what another prints?
#
#   bench/same.sh OLD_DSH NEW_DSH
#
# Runs a list of command forms (every command, text and --json, with their
# main flags; writers on a copy of the log or with --out, the written files'
# hashes added to what is compared) over every log of samples/ (its
# generations/ too), every log of ../shared/corpus/{real,edge,synthetic} and
# one genlog log (20,000 events, 2 compactions, 2 prune passes), with each
# binary in turn, an empty HOME and DSH_HOME, NO_COLOR=1 and TZ=UTC, and
# compares their stdout, stderr and exit status byte for byte. Prints
# `N comparisons, M differ`, and for each difference the form, the log and
# the first lines of `diff`; exits 1 when something differs.
#
# Environment: SAME_FORMS=REGEX runs only the forms it matches; SAME_LOGS=N
# only the first N logs; JOBS (default 4) logs at once; SAME_DIR keeps
# the scratch directory (and the genlog log, reused) there. Not a test: it
# needs two builds and ../shared; the tests compare against the reference.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
old="$(realpath "$1")"
new="$(realpath "$2")"
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="$root/../shared"
corpus="$shared/corpus"
[ -d "$corpus" ] || { echo "needs $corpus" >&2; exit 2; }
if [ -n "${SAME_DIR:-}" ]; then
    work="$SAME_DIR"
    mkdir -p "$work"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
fi

# The logs.
gen="$work/genlog-20000.jsonl"
[ -s "$gen" ] || "$shared/tools/genlog" --events 20000 --compactions 2 --prune-passes 2 -o "$gen"
logs=()
while IFS= read -r f; do logs+=("$f"); done < <(
    cd "$root" &&
        find samples -maxdepth 1 -type f \( -name '*.jsonl' -o -name '*.zstd' \) | sort
    cd "$root" && find samples/generations -type f | sort
    find "$corpus/real" "$corpus/edge" "$corpus/synthetic" -maxdepth 1 -type f \
        \( -name '*.jsonl' -o -name '*.zstd' \) | sort
    echo "$gen"
)
if [ -n "${SAME_LOGS:-}" ]; then logs=("${logs[@]:0:$SAME_LOGS}"); fi

# The forms: shell snippets run with $DSH (the binary), $L (the log, an
# absolute path), $OUT (an empty directory: files written there are hashed)
# and $COPY (a fresh copy of the log inside $OUT, for writers in place).
route=deepseek-official/deepseek-v4-flash
per_log=(
    '$DSH surface "$L"'
    '$DSH --json surface "$L"'
    '$DSH surface --tail 3 "$L"'
    '$DSH messages "$L"'
    '$DSH --json messages "$L"'
    '$DSH --json messages --request "$L"'
    '$DSH messages --system --width 80 --tail 4 "$L"'
    '$DSH header "$L"'
    '$DSH --json header "$L"'
    '$DSH events "$L"'
    '$DSH --json events "$L"'
    '$DSH events --all --width 100 "$L"'
    '$DSH --json events --all "$L"'
    '$DSH events --type compaction/ --type user/ "$L"'
    '$DSH events --turn 1 "$L"'
    '$DSH view "$L"'
    '$DSH --json view "$L"'
    '$DSH view --survival "$L"'
    '$DSH --json view --survival "$L"'
    '$DSH view --all --at 20 "$L"'
    '$DSH --json view --at 20 "$L"'
    '$DSH --json view --tokenizer deepseek-v4 "$L"'
    '$DSH load "$L"'
    '$DSH --json load "$L"'
    '$DSH --lenient --json load "$L"'
    '$DSH pack --dry-run "$L" -o "$OUT/p.jsonl.zstd"'
    '$DSH --json pack --dry-run --lines 7 "$L" -o "$OUT/p.jsonl.zstd"'
    '$DSH --json pack "$L" -o "$OUT/p.jsonl.zstd"'
    '$DSH unpack "$L" -o "$OUT/u.jsonl"'
    '$DSH --json unpack --dry-run "$L" -o "$OUT/u.jsonl"'
    '$DSH locks --now 1900000000000 "$L"'
    '$DSH --json locks "$L"'
    '$DSH --json locks --now 1900000000000 "$L"'
    '$DSH locks --release --dry-run --now 1900000000000 "$L"'
    '$DSH --json locks --release --dry-run "$L"'
    '$DSH --json locks --release --yes --time 1800000000000 "$COPY"'
    '$DSH repair --dry-run "$L"'
    '$DSH --json repair --dry-run "$L"'
    'touch -d 2020-01-01 "$COPY" && $DSH --json repair "$COPY"'
    '$DSH verify "$L"'
    '$DSH --json verify "$L"'
    '$DSH verify --all --format github "$L"'
    '$DSH --lenient verify --deny-warnings "$L"'
    '$DSH prune --dry-run "$L"'
    '$DSH --json prune --dry-run "$L"'
    '$DSH --json prune --dry-run --events "$L"'
    '$DSH prune --dry-run --allow-closed-turn --threshold-chars 2000 "$L"'
    '$DSH --json prune --time 1800000000000 "$COPY"'
    '$DSH prune --time 1800000000000 --out "$OUT/pruned.jsonl" "$L"'
    '$DSH measure "$L"'
    '$DSH --json measure "$L"'
    '$DSH --json measure --fill --at 20 "$L"'
    '$DSH measure --fill --nodes "$L"'
    '$DSH --json measure --fill --tokenizer deepseek-v4 "$L"'
    "\$DSH --json measure --tokenizer o200k --route $route --context-window 2000 --fail-over \"\$L\""
    "\$DSH --json compact --route $route \"\$COPY\""
    "\$DSH compact -n --route $route \"\$L\""
    "\$DSH --json compact -n --route $route \"\$L\""
    "\$DSH --json compact -n --route $route --mode full --retain-tokens 100 \"\$L\""
    '$DSH compact -n "$L"'
    '$DSH usage "$L"'
    '$DSH --json usage "$L"'
    '$DSH usage --daily --breakdown "$L"'
    '$DSH --json usage --session --breakdown "$L"'
    '$DSH usage --monthly --csv "$L"'
    '$DSH report "$L" -o "$OUT/r.html"'
    '$DSH --json report --no-view "$L" -o "$OUT/r.html"'
    '$DSH statusline --utc --no-cache "$L"'
    '$DSH --json statusline --utc "$L"'
    '$DSH statusline --utc --format "{session} {bar} {pressure} {tokens} {window} {threshold} {left} {next} {cost} {provider} {model}" "$L"'
    'timeout -s INT 0.4 $DSH watch --interval 100 "$L"'
    'timeout -s INT 0.4 $DSH --json watch --interval 100 "$L"'
    '$DSH --json export --format jsonl "$L" -o "$OUT/x"'
    '$DSH export --format csv --dry-run "$L" -o "$OUT/x"'
    '$DSH health "$L"'
    '$DSH --json health --all "$L"'
    '$DSH --json sessions "$L"'
    '$DSH cache "$L"'
    '$DSH --json cache "$L"'
    '$DSH cache --by cause --calibrate "$L"'
    '$DSH --json cache --anthropic-breakpoints tools:1h,system:1h,last --lifetime 5m --calibrate "$L"'
    '$DSH --json cache --tokenizer deepseek-v4 "$L"'
    '$DSH simulate "$L"'
    '$DSH --json simulate "$L"'
    '$DSH simulate --steps --no-prune --summary-ratio 0.1 "$L"'
    '$DSH --json simulate --steps --sweep threshold=0.5:0.9:0.2,retain=0.1:0.2:0.1 "$L"'
    '$DSH --json simulate --tokenizer deepseek-v4 --summary-tokens 2000 "$L"'
)
once=(
    '$DSH completions bash'
    '$DSH completions zsh'
    '$DSH completions fish'
    '$DSH verify --list-checks'
    '$DSH --json verify --list-checks'
    '$DSH usage --prices'
    '$DSH --json usage --prices'
    '$DSH --json usage --offline --prices'
    '$DSH verify "$S"/*.jsonl'
    '$DSH --json verify "$S"/*.jsonl'
    '$DSH locks "$S"/*.jsonl'
    '$DSH --json locks --all "$S"/*.jsonl'
    '$DSH usage "$S/home"'
    '$DSH --json usage --weekly --breakdown "$S/home"'
    '$DSH usage --project "$S/home"'
    '$DSH --json usage --cwd /home/dev/api "$S/home"'
    'DSH_HOME="$S/home" $DSH usage'
    'DSH_HOME="$S/home" $DSH --json verify --all'
    'DSH_HOME="$S/home" $DSH --json locks --all'
    '$DSH report "$S/home" -o "$OUT/site"'
    '$DSH --json report "$S/home" -o "$OUT/site"'
    '$DSH surface /nonexistent/log.jsonl'
    '$DSH --json surface /nonexistent/log.jsonl'
    '$DSH --json surface --tail 2 "$S/compacted.jsonl"'
    '$DSH prune "$S/compacted.jsonl"'
    '$DSH --json compact --route nowhere/none -n "$S/compacted.jsonl"'
    '$DSH measure "$S"/*.jsonl /nonexistent/log.jsonl'
    '$DSH --json measure --fill --fail-over "$S"/*.jsonl /nonexistent/log.jsonl'
    'DSH_HOME="$S/home" $DSH --json measure'
    'cp "$S/coding-session.jsonl" "$OUT/c.jsonl" && DEEPSEEK_API_KEY=sk-0123456789abcdef $DSH --json compact --base-url http://127.0.0.1:9 "$OUT/c.jsonl"'
    'cp "$S/locks-busy.jsonl" "$OUT/b.jsonl" && DEEPSEEK_API_KEY=sk-0123456789abcdef $DSH --json compact --base-url http://127.0.0.1:9 "$OUT/b.jsonl"'
    'cp "$S/locks-busy.jsonl" "$OUT/b.jsonl" && DEEPSEEK_API_KEY=sk-0123456789abcdef $DSH compact --base-url http://127.0.0.1:9 "$OUT/b.jsonl"'
    '$DSH statusline --format "{nope}" "$S/compacted.jsonl"'
    '$DSH completions nosh'
    '$DSH --json export --format jsonl "$S/home" -o "$OUT/x"'
    '$DSH --json export --incremental "$S/home" -o "$OUT/x" && $DSH --json export --incremental "$S/home" -o "$OUT/x"'
    '$DSH --json sessions "$S/home"'
    '$DSH --json sessions --tree "$S/home"'
    '$DSH sessions --tree "$S/home"'
    '$DSH --json health "$S/home"'
    '$DSH --json health --all "$S/home"'
    '$DSH cache "$S"/*.jsonl'
    '$DSH --json cache "$S"/*.jsonl'
    '$DSH --json cache --cross-session-lifetime 0 "$S/home" /nonexistent/log.jsonl'
    'DSH_HOME="$S/home" $DSH --json cache --by cause'
    '$DSH --json cache /nonexistent/log.jsonl'
    '$DSH simulate "$S/home"'
    '$DSH --json simulate "$S"/*.jsonl'
    '$DSH --json simulate --steps "$S/home"'
    '$DSH --json simulate --sweep threshold=2:1:1 "$S/compacted.jsonl"'
)
S="$root/samples"
export S

# One unit of work: every form of one log (or the `once` forms) with one
# binary; each form's stdout (with its exit status and the hashes of the
# files it wrote) and stderr land in $work/SIDE/UNIT/FORM.{out,err}.
forms=()
for f in "${per_log[@]}"; do forms+=("L|$f"); done
for f in "${once[@]}"; do forms+=("1|$f"); done
printf '%s\n' "${forms[@]}" > "$work/forms"
: > "$work/units"
for side in old new; do
    echo "$side -" >> "$work/units"
    for l in "${logs[@]}"; do echo "$side $l" >> "$work/units"; done
done

unit() {
    local side="$1" log="$2" bin="$old" l="$2" id i=0 form kind
    [ "$side" = new ] && bin="$new"
    case "$l" in -) ;; /*) ;; *) l="$root/$l" ;; esac
    id="$(echo "$log" | md5sum | cut -c1-12)"
    local ud="$work/$side/$id" wd="$work/w/$side-$id"
    mkdir -p "$ud"
    while IFS= read -r form; do
        i=$((i + 1))
        kind="${form%%|*}"
        form="${form#?|}"
        if [ -n "${SAME_FORMS:-}" ] && ! [[ "$form" =~ $SAME_FORMS ]]; then continue; fi
        { [ "$kind" = 1 ] && [ "$log" = - ]; } || { [ "$kind" = L ] && [ "$log" != - ]; } || continue
        rm -rf "$wd"
        mkdir -p "$wd/home" "$wd/out"
        local copy=""
        if [[ "$form" == *COPY* ]]; then
            copy="$wd/out/$(basename "$l")"
            cp "$l" "$copy"
            chmod u+w "$copy"
        fi
        local rc=0
        (cd "$wd" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$wd/home" \
            DSH_HOME="$wd/home/.dsh" NO_COLOR=1 TZ=UTC S="$S" DSH="$bin" L="$l" \
            OUT="$wd/out" COPY="$copy" \
            timeout 300 bash -c "$form" > "$ud/$i.out" 2> "$ud/$i.err") || rc=$?
        echo "exit $rc" >> "$ud/$i.out"
        if [ -n "$(ls -A "$wd/out")" ]; then
            (cd "$wd/out" && find . -type f | sort | xargs -r sha256sum) >> "$ud/$i.out"
        fi
        # The binary's own path shows in clap's usage lines only; the
        # scratch directory (one per side) in paths under $OUT and $HOME.
        if grep -qF -e "$bin" -e "$wd" "$ud/$i.out" "$ud/$i.err"; then
            sed -i "s#$bin#DSH#g; s#$wd#WORK#g" "$ud/$i.out" "$ud/$i.err"
        fi
        # simulate's stderr says how long it took: a clock reading.
        sed -i 's#^replayed in [0-9.]*s$#replayed in Ts#' "$ud/$i.err"
    done < "$work/forms"
    rm -rf "$wd"
}
export -f unit
export work root old new S
rm -rf "$work/old" "$work/new" "$work/w"
xargs -P "${JOBS:-4}" -L 1 bash -c 'unit "$0" "$1"' < "$work/units"

# Compare.
n=0
m=0
: > "$work/differ"
while IFS= read -r f; do
    n=$((n + 1))
    if ! cmp -s "$work/old/$f.out" "$work/new/$f.out" || ! cmp -s "$work/old/$f.err" "$work/new/$f.err"; then
        m=$((m + 1))
        echo "$f" >> "$work/differ"
    fi
done < <(cd "$work/old" && find . -name '*.out' | sed 's#^\./##; s#\.out$##' | sort)
# Which log a unit is.
declare -A name
for l in - "${logs[@]}"; do name[$(echo "$l" | md5sum | cut -c1-12)]="$l"; done
head -n "${SAME_SHOW:-20}" "$work/differ" | while IFS= read -r f; do
    form="$(sed -n "${f#*/}p" "$work/forms")"
    echo "--- ${form#?|}   on ${name[${f%/*}]}"
    diff "$work/old/$f.out" "$work/new/$f.out" | head -n 6 || true
    diff "$work/old/$f.err" "$work/new/$f.err" | head -n 4 || true
done
echo "$n comparisons, $m differ"
[ "$m" -eq 0 ]
