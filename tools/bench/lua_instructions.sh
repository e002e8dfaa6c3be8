#!/bin/sh
# lua_instructions.sh — one side of a per-frame Lua bench row (update, access, system, columns)
# in instructions per entity-frame under callgrind, as HACKING.md "Benchmarks" measures it: the
# row run at 2 and at 12 steps, the difference over N * 10, in all and per function (heaviest
# first), so the setup drops out. Wall ratios move 20–40% on a shared machine; these do not.
# usage: tools/bench/lua_instructions.sh BUILD ROW [keel|base [N [TOP]]]
set -eu
usage="usage: lua_instructions.sh BUILD ROW [keel|base [N [TOP]]]"
BUILD=${1:?$usage}
ROW=${2:?$usage}
SIDE=${3:-keel}
N=${4:-5000}
TOP=${5:-25}
case $ROW in update | access | system | columns) ;; *) echo "lua_instructions.sh: $ROW is not a per-frame row" >&2; exit 2 ;; esac
case $SIDE in keel | base) ;; *) echo "$usage" >&2; exit 2 ;; esac
SRC=$(cd "$(dirname "$0")/../.." && pwd)
for tool in valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null || { echo "lua_instructions.sh: $tool is not installed" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for s in 2 12; do
    if ! KEEL_BENCH_ROWS=$ROW KEEL_BENCH_SIDE=$SIDE KEEL_BENCH_STEPS=$s KEEL_BENCH_RUNS=1 \
        valgrind --tool=callgrind --callgrind-out-file="$dir/cg.$s" "$BUILD/keel" "$SRC/tools/bench/bench_lua.lua" \
        "$N" >/dev/null 2>"$dir/err.$s"; then
        cat "$dir/err.$s" >&2
        exit 1
    fi
    callgrind_annotate --threshold=100 "$dir/cg.$s" >"$dir/an.$s"
done
# lines "  43,327,043 (21.94%)  file:function [object]"; the first file is the 2-step run
awk -v per="$((N * 10))" -v top="$TOP" -v what="lua $ROW ($SIDE side, N = $N)" '
    function num(s) { gsub(",", "", s); return s + 0 }
    FNR == 1 { run++ }
    /PROGRAM TOTALS/ { total[run] = num($1); next }
    $1 ~ /^[0-9][0-9,]*$/ && $0 ~ /%\)/ {
        name = $0
        sub(/^[^)]*\) +/, "", name) # the count and its percentage
        sub(/ \[[^]]*\]$/, "", name) # the object
        d[name] += (run == 2 ? 1 : -1) * num($1)
    }
    END {
        printf "%s: %.0f instructions per entity-frame\n", what, (total[2] - total[1]) / per
        for (k in d) if (d[k] / per >= 1 || d[k] / per <= -1) printf "%10.1f  %s\n", d[k] / per, k | "sort -rn | head -n " top
    }' "$dir/an.2" "$dir/an.12"
