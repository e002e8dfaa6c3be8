#!/bin/sh
# run.sh — runs every benchmark of a release build and prints one table.
# Each benchmark prints rows "BENCH<TAB>row<TAB>keel<TAB>baseline<TAB>unit";
# keel and its baseline are measured in the same process run, so only the
# ratio between them means much on a noisy machine.
set -eu
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for b in bench_core bench_yaml bench_files; do
    if [ -x "$BUILD/$b" ]; then
        (cd "$BUILD" && "./$b") >>"$out" || echo "BENCH	$b failed	-	-	-" >>"$out"
    fi
done
if [ -x "$BUILD/keel" ]; then
    "$BUILD/keel" "$SRC/tools/bench/bench_lua.lua" >>"$out" || echo "BENCH	bench_lua failed	-	-	-" >>"$out"
fi
printf '%-16s %14s %14s %8s  %s\n' "row" "keel" "baseline" "ratio" "unit"
printf '%-16s %14s %14s %8s  %s\n' "----------------" "--------------" "--------------" "--------" "----"
grep '^BENCH' "$out" | while IFS='	' read -r _ row k b unit; do
    ratio=$(awk -v k="$k" -v b="$b" 'BEGIN { if (b == "-" || b + 0 == 0) print "-"; else printf "%.2f", k / b }')
    printf '%-16s %14s %14s %8s  %s\n' "$row" "$k" "$b" "$ratio" "$unit"
done
