#!/bin/sh
# header_examples_test.sh — compiles and runs every example in the public headers, core/keel.h
# and the optional parts' core/keel_*.h (keel_merge.h, ...), so the headers' examples cannot go
# stale. An example runs from a line ` * Example:` to the end of its comment block; ` * ` is
# stripped from each line. Three forms:
#   - it defines main(): a whole program;
#   - its first line ends in `)`: a helper (a function) given to every other example;
#   - otherwise: the body of `static int example(void)`, run between keel_init()
#     and keel_shutdown(); non-zero is failure.
# Every example sees all the public headers. Each is built with `CC -std=c11 -Wall -Werror`
# plus the build's own flags (the sanitizers, when on) against the static library, and run in
# a fresh directory holding a copy of scenes/. Helpers are user code given to every example,
# so the build's -Wmissing-prototypes does not apply to them. Each keel_*.h must also compile
# included alone (it includes keel.h itself) and have at least one example.
# Usage: header_examples_test.sh SRC LIBKEEL_A CC "FLAGS" [SKIP]
# SKIP: public headers this build leaves out (keel_net.h when KEEL_NET is off), space-separated.
set -eu
SRC=$1
LIB=$2
CC=$3
FLAGS=${4:-}
SKIP=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

HEADERS="$SRC/core/keel.h"
for h in "$SRC"/core/keel_*.h; do
    case " $SKIP " in *" $(basename "$h") "*) continue ;; esac
    [ -e "$h" ] && HEADERS="$HEADERS $h"
done

# exH_NN.txt per header H (1, 2, ...) and example NN; exH_NN.line holds the header line of the
# example's first line, exH_NN.hdr the header's path.
hn=0
for HEADER in $HEADERS; do
    hn=$((hn + 1))
    awk -v dir="$tmp" -v h="$hn" -v hdr="$HEADER" '
        /^ \* Example:$/ {
            n++; base = sprintf("%s/ex%d_%02d", dir, h, n); file = base ".txt"; on = 1
            printf "" > file
            printf "%d\n", NR + 1 > (base ".line"); close(base ".line")
            printf "%s\n", hdr > (base ".hdr"); close(base ".hdr")
            next
        }
        on && /\*\// { on = 0; close(file); next }
        on { line = $0; sub(/^ \*( |$)/, "", line); print line > file }
        END { if (on) { print "unterminated example at end of " hdr > "/dev/stderr"; exit 1 } }
    ' "$HEADER"
    name=core/$(basename "$HEADER")
    ls "$tmp"/ex"$hn"_*.txt >/dev/null 2>&1 || { echo "FAIL: no examples found in $name"; exit 1; }
done
count=$(ls "$tmp"/ex*.txt | wc -l)

form() { # program | helper | body
    if grep -q 'main(' "$1"; then echo program
    elif grep -v '^[[:space:]]*$' "$1" | head -n 1 | grep -q ')[[:space:]]*$'; then echo helper
    else echo body
    fi
}

prelude=$tmp/prelude.c
printf '#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n' >"$prelude"
for HEADER in $HEADERS; do
    printf '#include "%s"\n' "$(basename "$HEADER")" >>"$prelude"
done
for ex in "$tmp"/ex*.txt; do
    if [ "$(form "$ex")" = helper ]; then
        printf '#line %s "%s"\n' "$(cat "${ex%.txt}.line")" "$(cat "${ex%.txt}.hdr")" >>"$prelude"
        cat "$ex" >>"$prelude"
    fi
done

LIBS="$(pkg-config --libs yaml-0.1 zlib libenet 2>/dev/null || echo -lyaml -lz -lenet) -lm"
ran=0
failed=0
for HEADER in $HEADERS; do
    name=core/$(basename "$HEADER")
    printf '#include "%s"\n' "$(basename "$HEADER")" >"$tmp/alone.c"
    # shellcheck disable=SC2086 # FLAGS is a word list
    if ! "$CC" -std=c11 -Wall -Werror $FLAGS -I"$SRC/core" -fsyntax-only "$tmp/alone.c" 2>"$tmp/alone.err"; then
        echo "FAIL: $name does not compile included alone:"
        cat "$tmp/alone.err"
        failed=$((failed + 1))
    fi
done
for ex in "$tmp"/ex*.txt; do
    kind=$(form "$ex")
    at=$(cat "${ex%.txt}.line")
    HEADER=$(cat "${ex%.txt}.hdr")
    where=core/$(basename "$HEADER"):$at
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
        echo "FAIL: the example at $where does not compile:"
        cat "$tmp/$name.err"
        failed=$((failed + 1))
        continue
    fi
    run=$tmp/run_$name
    mkdir "$run"
    cp -R "$SRC/scenes" "$run/scenes"
    if ! (cd "$run" && "$tmp/$name" >"$tmp/$name.out" 2>&1); then
        echo "FAIL: the example at $where failed when run:"
        cat "$tmp/$name.out"
        failed=$((failed + 1))
        continue
    fi
    ran=$((ran + 1))
done
[ "$failed" -eq 0 ] || { echo "header examples: $failed failed"; exit 1; }
echo "header examples: $ran ran ok ($count in $(for h in $HEADERS; do printf 'core/%s ' "$(basename "$h")"; done | sed 's/ $//'))"
