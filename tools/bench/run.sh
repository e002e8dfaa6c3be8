#!/bin/sh
# run.sh — runs every benchmark of a release build and prints one table.
# Each benchmark prints rows "BENCH<TAB>row<TAB>keel<TAB>baseline<TAB>unit";
# keel and its baseline are measured in the same process run, so only the
# ratio between them means much on a noisy machine. The ratio column is always
# keel's cost over the baseline's (lower is better; 1.00 = as fast).
set -eu
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for b in bench_core bench_yaml bench_files bench_save_async bench_merge bench_net; do
    if [ -x "$BUILD/$b" ]; then
        (cd "$BUILD" && "./$b") >>"$out" || echo "BENCH	$b failed	-	-	-" >>"$out"
    fi
done
# where the memory rows' bytes go (bench_core)
grep "^MEM" "$out" | cut -f2- || true
if [ -x "$BUILD/keel" ]; then
    # one process per Lua row: a row's collector then never walks or frees what another row left
    for r in update access spawn system columns churn message timer stats; do
        KEEL_BENCH_ROWS=$r "$BUILD/keel" "$SRC/tools/bench/bench_lua.lua" >>"$out" ||
            echo "BENCH	bench_lua $r failed	-	-	-" >>"$out"
    done
    "$BUILD/keel" "$SRC/tools/bench/bench_channel.lua" >>"$out" || echo "BENCH	bench_channel failed	-	-	-" >>"$out"
    "$BUILD/keel" "$SRC/tools/bench/bench_watch.lua" >>"$out" || echo "BENCH	bench_watch failed	-	-	-" >>"$out"
    "$BUILD/keel" "$SRC/tools/bench/bench_replay.lua" >>"$out" || echo "BENCH	bench_replay failed	-	-	-" >>"$out"
fi
printf '%-16s %14s %14s %8s  %s\n' "row" "keel" "baseline" "ratio" "unit"
printf '%-16s %14s %14s %8s  %s\n' "----------------" "--------------" "--------------" "--------" "----"
grep '^BENCH' "$out" | while IFS='	' read -r _ row k b unit; do
    # ratio = keel's cost over the baseline's: for throughputs (unit "../s") invert.
    ratio=$(awk -v k="$k" -v b="$b" -v u="$unit" 'BEGIN {
        if (b == "-" || b + 0 == 0 || k + 0 == 0) print "-";
        else if (u ~ /\/s$/) printf "%.2f", b / k; else printf "%.2f", k / b }')
    printf '%-16s %14s %14s %8s  %s\n' "$row" "$k" "$b" "$ratio" "$unit"
done
# where the memory rows' bytes go (bench_core)
grep "^MEM" "$out" | cut -f2- || true
