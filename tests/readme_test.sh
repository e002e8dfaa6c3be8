#!/bin/sh
# readme_test.sh — runs every ```sh block of the README's tour, in order, in a
# fresh directory with the built keel on PATH, so the tour cannot go stale.
# Blocks sit between <!-- tour --> and <!-- /tour -->; they run in one shell
# (as pasted one after another) under `set -e`.
set -eu
SRC=$1
BIN=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '
    /<!-- tour -->/ { on = 1; next }
    /<!-- \/tour -->/ { on = 0; next }
    on && /^```sh$/ { n++; file = sprintf("%s/block%02d.sh", dir, n); inb = 1; next }
    on && inb && /^```$/ { inb = 0; close(file); next }
    on && inb { print > file }
' dir="$tmp" "$SRC/README.md"
count=$(ls "$tmp"/block*.sh 2>/dev/null | wc -l)
[ "$count" -gt 0 ] || { echo "FAIL: no tour blocks found in README.md"; exit 1; }
# The tour starts at the repository's root: give it the bundled scenes there.
mkdir "$tmp/home"
ln -s "$SRC/scenes" "$tmp/home/scenes"
cd "$tmp/home"
export PATH="$BIN:$PATH"
export HOME="$tmp/home"
# One shell for the whole tour, as a reader pasting block after block.
script=$tmp/tour.sh
for b in "$tmp"/block*.sh; do
    printf 'echo "== %s"\n' "$(basename "$b")" >>"$script"
    cat "$b" >>"$script"
done
if ! sh -e "$script"; then
    echo "FAIL: the README tour failed (the last block announced above)"
    exit 1
fi
echo "readme tour: $count blocks ok"
