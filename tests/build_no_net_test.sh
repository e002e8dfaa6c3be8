#!/bin/sh
# build_no_net_test.sh — keel without replication (-DKEEL_NET=OFF) still builds and works: a
# Release build (no sanitizers, the default compiler) of the same tree into BUILD, kept between
# runs so that a run rebuilds only what changed; -Werror; libkeel holds nothing of ENet; its C
# tests pass (only the program and those are built); `keel run --host` and keel.net.host
# refuse, saying why.
# Usage: build_no_net_test.sh SRC BUILD
set -eu
SRC=$1
B=$2
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$B"
cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DKEEL_SANITIZE=OFF -DKEEL_WERROR=ON -DKEEL_TESTS=ON \
    -DKEEL_NET=OFF >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; fail "configure with KEEL_NET=OFF"; }
# the library, the keel program and the C tests (not core.so, the benches or the fuzzers: kept short)
targets=keel
for t in "$SRC"/tests/test_*.c; do
    t=$(basename "$t" .c)
    case $t in test_net | test_lifecycle) ;; *) targets="$targets $t" ;; esac # both need replication
done
# shellcheck disable=SC2086 # targets is a word list
cmake --build "$B" -j2 --target $targets >"$B/build.log" 2>&1 ||
    { grep -E 'error|warning' "$B/build.log" | head -40; fail "build with KEEL_NET=OFF"; }
if nm "$B/libkeel.a" 2>/dev/null | grep -q ' [TU] enet_'; then fail "libkeel.a uses ENet with KEEL_NET=OFF"; fi
[ ! -e "$B/test_net" ] || fail "test_net built with KEEL_NET=OFF"

ctest --test-dir "$B" -R '^test_' -j2 --output-on-failure || fail "C tests with KEEL_NET=OFF"

rc=0
out=$("$B/keel" run --host 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "keel run --host exited $rc, not 2: $out"
echo "$out" | grep -q 'run: --host: this keel was built without replication (KEEL_NET=OFF)' || fail "keel run --host said: $out"
rc=0
out=$("$B/keel" run --connect 127.0.0.1:27761 2>&1) || rc=$?
[ "$rc" -eq 2 ] || fail "keel run --connect exited $rc, not 2: $out"

script=$B/no_net.lua
cat >"$script" <<'LUA'
local keel = require "keel"
local w = keel.world("W")
local ok, err = pcall(keel.net.host, w)
assert(not ok and tostring(err):find("Unsupported", 1, true) and tostring(err):find("KEEL_NET=OFF", 1, true),
       tostring(err))
ok, err = pcall(keel.net.connect, "127.0.0.1", 27761)
assert(not ok and tostring(err):find("keel.net.connect", 1, true), tostring(err))
print("keel.net refuses: " .. tostring(err))
LUA
"$B/keel" "$script" || fail "keel.net without replication"
echo "build_no_net: ok"
