#!/bin/sh
# merge_memory_test.sh — `keel merge` of three scenes of a few MB each (ours renames some
# entities and adds some, theirs moves some and removes some) peaks within 8x the three inputs'
# total size plus 32 MiB resident, measured by getrusage of the child (peak_rss). Under ASan the
# shadow memory and redzones count too, which only makes the bound stricter; its quarantine of
# freed blocks is turned off, as that memory is no longer the program's.
# Usage: merge_memory_test.sh KEEL PEAK_RSS [ENTITIES]
set -u
KEEL=$1
PEAK_RSS=$2
N=${3:-12000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# scene SIDE: N entities in groups of ten (a parent and nine children), each with a transform
scene() {
    awk -v n="$N" -v side="$1" 'BEGIN {
      print "keel: 1"; print "scene:"; print "  uuid: 5ce9e000-0000-4000-8000-000000000000"; print "  name: Big"
      print "root: []"; print "entities:"
      last = n
      if (side == "ours") last = n + n / 100
      for (i = 1; i <= last; i++) {
        if (side == "theirs" && i % 30 == 0 && i % 7 != 0) continue
        printf "- uuid: 5ce9e000-0000-4000-8000-%012x\n", i
        printf "  name: %s%d\n", side == "ours" && i % 7 == 0 ? "Ours" : "E", i
        if (i % 10 != 1) printf "  parent: 5ce9e000-0000-4000-8000-%012x\n", i - (i - 1) % 10
        x = side == "theirs" && i % 5 == 0 ? -i : i
        print "  components:"; print "  - kind: core:transform"; print "    version: 1"; print "    slot: 0"
        print "    body:"; printf "      position: [%d, 0, 0]\n", x
        print "      rotation: [0, 0, 0, 1]"; print "      scale: [1, 1, 1]"
      }
    }' >"$tmp/$1.yaml"
}
for s in base ours theirs; do scene $s; done
bytes=$(cat "$tmp/base.yaml" "$tmp/ours.yaml" "$tmp/theirs.yaml" | wc -c)

ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
export ASAN_OPTIONS
(cd "$tmp" && "$PEAK_RSS" peak "$KEEL" merge base.yaml ours.yaml theirs.yaml -o out.yaml >merge.log 2>&1)
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/merge.log"; fail "keel merge exited $rc"; }
grep -q "name: Ours7$" "$tmp/out.yaml" || fail "ours' rename is not in the merged scene"
grep -q "position: \[-5, 0, 0\]" "$tmp/out.yaml" || fail "theirs' move is not in the merged scene"
grep -q "name: E30$" "$tmp/out.yaml" && fail "theirs' removal is not in the merged scene"

peak_kib=$(cat "$tmp/peak")
limit_kib=$((8 * bytes / 1024 + 32 * 1024))
echo "inputs $((bytes / 1024)) KiB, peak $peak_kib KiB, limit $limit_kib KiB"
[ "$peak_kib" -le "$limit_kib" ] || fail "keel merge peaked at $peak_kib KiB, over 8x its inputs plus 32 MiB"
echo ok
