#!/bin/sh
# tsan_test.sh — the save jobs under ThreadSanitizer: a Debug build with -DKEEL_TSAN=ON (clang,
# -fsanitize=thread) of the same tree into BUILD, kept between runs so a run rebuilds only what
# changed; only libkeel and test_save_async are built (kept short for CI). Any data race the
# worker has with the caller's thread fails the run (halt_on_error). The kill test forks, which
# ThreadSanitizer does not follow well: it runs in the ordinary (ASan) build only.
# Usage: tsan_test.sh SRC BUILD
set -eu
SRC=$1
B=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v clang >/dev/null 2>&1 || fail "clang is needed for ThreadSanitizer"
mkdir -p "$B"
cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DKEEL_TSAN=ON -DKEEL_SANITIZE=OFF \
    -DKEEL_WERROR=ON -DKEEL_TESTS=ON >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; fail "configure with KEEL_TSAN=ON"; }
cmake --build "$B" -j2 --target test_save_async >"$B/build.log" 2>&1 ||
    { grep -E 'error|warning' "$B/build.log" | head -40; fail "build with KEEL_TSAN=ON"; }
# setarch -R: TSan's shadow layout wants no ASLR on recent kernels (high mmap_rnd_bits)
run=""
if setarch "$(uname -m)" -R true 2>/dev/null; then run="setarch $(uname -m) -R"; fi
KEEL_KILL_ROUNDS=0 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" CMOCKA_MESSAGE_OUTPUT=STDOUT \
    $run "$B/tests/test_save_async" || fail "test_save_async under ThreadSanitizer"
echo "tsan: test_save_async passed under ThreadSanitizer"
