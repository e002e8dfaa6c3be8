#!/bin/sh
# header_examples_test.sh — compiles and runs every example in core/keel.h, so the
# header's examples cannot go stale. An example runs from a line ` * Example:` to the
# end of its comment block; ` * ` is stripped from each line. Three forms:
#   - it defines main(): a whole program;
#   - its first line ends in `)`: a helper (a function) given to every other example;
#   - otherwise: the body of `static int example(void)`, run between keel_init()
#     and keel_shutdown(); non-zero is failure.
# Each is built with `CC -std=c11 -Wall -Werror` plus the build's own flags (the
# sanitizers, when on) against the static library, and run in a fresh directory
# holding a copy of scenes/. Helpers are user code given to every example, so the
# build's -Wmissing-prototypes does not apply to them.
# Usage: header_examples_test.sh SRC LIBKEEL_A CC "FLAGS" [HEADER]
# HEADER: another public header of core/ (keel_net.h) instead of keel.h; keel.h is included too.
set -eu
SRC=$1
LIB=$2
CC=$3
FLAGS=${4:-}
NAME=${5:-keel.h}
HEADER=$SRC/core/$NAME
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ex01.txt, ex02.txt, ...; exNN.line holds the header line of the example's first line.
awk -v dir="$tmp" '
    /^ \* Example:$/ {
        n++; file = sprintf("%s/ex%02d.txt", dir, n); on = 1
        printf "" > file
        printf "%d\n", NR + 1 > sprintf("%s/ex%02d.line", dir, n)
        close(sprintf("%s/ex%02d.line", dir, n))
        next
    }
    on && /\*\// { on = 0; close(file); next }
    on { line = $0; sub(/^ \*( |$)/, "", line); print line > file }
    END { if (on) { print "unterminated example at end of header" > "/dev/stderr"; exit 1 } }
' "$HEADER"
count=$(ls "$tmp"/ex*.txt 2>/dev/null | wc -l)
[ "$count" -gt 0 ] || { echo "FAIL: no examples found in core/$NAME"; exit 1; }

form() { # program | helper | body
    if grep -q 'main(' "$1"; then echo program
    elif grep -v '^[[:space:]]*$' "$1" | head -n 1 | grep -q ')[[:space:]]*$'; then echo helper
    else echo body
    fi
}

prelude=$tmp/prelude.c
printf '#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include "keel.h"\n' >"$prelude"
[ "$NAME" = keel.h ] || printf '#include "%s"\n' "$NAME" >>"$prelude"
for ex in "$tmp"/ex*.txt; do
    if [ "$(form "$ex")" = helper ]; then
        printf '#line %s "%s"\n' "$(cat "${ex%.txt}.line")" "$HEADER" >>"$prelude"
        cat "$ex" >>"$prelude"
    fi
done

LIBS="$(pkg-config --libs yaml-0.1 zlib libenet 2>/dev/null || echo -lyaml -lz -lenet) -lm"
ran=0
failed=0
for ex in "$tmp"/ex*.txt; do
    kind=$(form "$ex")
    at=$(cat "${ex%.txt}.line")
    name=$(basename "$ex" .txt)
    c=$tmp/$name.c
    cp "$prelude" "$c"
    case $kind in
    helper) continue ;;
    program)
        printf '#line %s "%s"\n' "$at" "$HEADER" >>"$c"
        cat "$ex" >>"$c"
        ;;
    body)
        printf 'static int example(void)\n{\n#line %s "%s"\n' "$at" "$HEADER" >>"$c"
        cat "$ex" >>"$c"
        cat >>"$c" <<'EOF'
}

#line 1 "(the wrapper of header_examples_test.sh)"
int main(void)
{
    if (keel_init() != KEEL_OK) return 1;
    int rc = example();
    keel_shutdown();
    return rc;
}
EOF
        ;;
    esac
    # shellcheck disable=SC2086 # FLAGS and LIBS are word lists
    if ! "$CC" -std=c11 -Wall -Werror $FLAGS -Wno-missing-prototypes -I"$SRC/core" -o "$tmp/$name" "$c" "$LIB" $LIBS 2>"$tmp/$name.err"; then
        echo "FAIL: the example at core/$NAME:$at does not compile:"
        cat "$tmp/$name.err"
        failed=$((failed + 1))
        continue
    fi
    run=$tmp/run_$name
    mkdir "$run"
    cp -R "$SRC/scenes" "$run/scenes"
    if ! (cd "$run" && "$tmp/$name" >"$tmp/$name.out" 2>&1); then
        echo "FAIL: the example at core/$NAME:$at failed when run:"
        cat "$tmp/$name.out"
        failed=$((failed + 1))
        continue
    fi
    ran=$((ran + 1))
done
[ "$failed" -eq 0 ] || { echo "header examples: $failed failed"; exit 1; }
echo "header examples: $ran ran ok ($count in core/$NAME)"
