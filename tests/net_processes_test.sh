#!/bin/sh
# net_processes_test.sh — `keel run --host` and `keel run --connect` as two processes over
# loopback: the client mirrors the demo scene's entities; a client started with kinds that lack
# a synced kind the host has is refused with a reason naming it and mirrors no entity. Bounded
# in time; the host is killed by its PID whatever happens.
# Usage: net_processes_test.sh SRC KEEL
set -u
SRC=$1
KEEL=$2
tmp=$(mktemp -d)
port=$((20000 + $$ % 20000))
# the host (and p1) know a synced kind besides the bundled ones
mkdir "$tmp/extra"
cat >"$tmp/extra/beacon.lua" <<'KIND'
local keel = require "keel"
keel.kind{ key = "test:beacon", sync = { interval = 1 }, fields = { { "level", "int", sync = true } } }
KIND
"$KEEL" run "$SRC/scenes/demo.yaml" --host "$port" --frames 1800 --kinds "$SRC/lua/kinds" --kinds "$tmp/extra" \
    >"$tmp/host.log" 2>&1 &
host=$!
trap 'kill "$host" 2>/dev/null; wait "$host" 2>/dev/null; rm -rf "$tmp"' EXIT
# the host is listening once it says so (at most 10 s)
i=0
until grep -q "hosting on UDP port $port" "$tmp/host.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "FAIL: the host did not start"; cat "$tmp/host.log"; exit 1; }
    sleep 0.1
done
timeout 20 "$KEEL" run --connect "127.0.0.1:$port" --name p1 --frames 150 --kinds "$SRC/lua/kinds" \
    --kinds "$tmp/extra" >"$tmp/client.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: client exited $rc"; cat "$tmp/client.log"; exit 1; }
grep -q "connected to 127.0.0.1:$port as p1" "$tmp/client.log" || { echo "FAIL: no connection"; cat "$tmp/client.log"; exit 1; }
# the demo's entities arrive (the scene has 9; spawners add more)
grep -Eq "^mirror: ([9]|[1-9][0-9]+) entities" "$tmp/client.log" || { echo "FAIL: nothing mirrored"; cat "$tmp/client.log"; exit 1; }
grep -q "^  Player " "$tmp/client.log" || { echo "FAIL: Player not mirrored"; cat "$tmp/client.log"; exit 1; }
sleep 0.5
grep -q "client joined: p1" "$tmp/host.log" || { echo "FAIL: the host did not see p1"; cat "$tmp/host.log"; exit 1; }
# p2 lacks test:beacon: refused before any world state, with the kind named
timeout 20 "$KEEL" run --connect "127.0.0.1:$port" --name p2 --frames 150 --kinds "$SRC/lua/kinds" \
    >"$tmp/p2.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: the client lacking a kind exited $rc"; cat "$tmp/p2.log"; exit 1; }
grep -q "refused: kinds differ from the server's: test:beacon (missing)" "$tmp/p2.log" ||
    { echo "FAIL: no reason naming the missing kind"; cat "$tmp/p2.log"; exit 1; }
if grep -Eq "^mirror: [1-9]" "$tmp/p2.log" || grep -q "^  Player" "$tmp/p2.log"; then
    echo "FAIL: the refused client mirrored entities"; cat "$tmp/p2.log"; exit 1
fi
grep -q "hosting on UDP port $port (every address)" "$tmp/host.log" || { echo "FAIL: the host did not say its address"; cat "$tmp/host.log"; exit 1; }
"$KEEL" run --host 0 --bind 127.0.0.1 --frames 2 >"$tmp/bind.log" 2>&1 &&
    grep -q "hosting on UDP port [0-9]* (on 127.0.0.1 only)" "$tmp/bind.log" ||
    { echo "FAIL: --host --bind"; cat "$tmp/bind.log"; exit 1; }
# a client that never joins (nobody listens there) exits non-zero, saying why
timeout 20 "$KEEL" run --connect "127.0.0.1:$((port + 1))" --name p3 --frames 30 >"$tmp/p3.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: the client that never joined exited $rc"; cat "$tmp/p3.log"; exit 1; }
grep -q "did not join 127.0.0.1:$((port + 1)): could not connect" "$tmp/p3.log" ||
    { echo "FAIL: no reason from the client that never joined"; cat "$tmp/p3.log"; exit 1; }
echo "ok: $(grep -c '^mirror:' "$tmp/client.log") mirror reports; p2 refused: $(grep -o 'refused: .*' "$tmp/p2.log")"
