#!/bin/sh
# net_processes_test.sh — `keel run --host` and `keel run --connect` as two processes over
# loopback: the client mirrors the demo scene's entities. Bounded in time; the host is killed
# by its PID whatever happens.
# Usage: net_processes_test.sh SRC KEEL
set -u
SRC=$1
KEEL=$2
tmp=$(mktemp -d)
port=$((20000 + $$ % 20000))
"$KEEL" run "$SRC/scenes/demo.yaml" --host "$port" --frames 1800 >"$tmp/host.log" 2>&1 &
host=$!
trap 'kill "$host" 2>/dev/null; wait "$host" 2>/dev/null; rm -rf "$tmp"' EXIT
# the host is listening once it says so (at most 10 s)
i=0
until grep -q "hosting on UDP port $port" "$tmp/host.log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "FAIL: the host did not start"; cat "$tmp/host.log"; exit 1; }
    sleep 0.1
done
timeout 20 "$KEEL" run --connect "127.0.0.1:$port" --name p1 --frames 150 >"$tmp/client.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: client exited $rc"; cat "$tmp/client.log"; exit 1; }
grep -q "connected to 127.0.0.1:$port as p1" "$tmp/client.log" || { echo "FAIL: no connection"; cat "$tmp/client.log"; exit 1; }
# the demo's entities arrive (the scene has 9; spawners add more)
grep -Eq "^mirror: ([9]|[1-9][0-9]+) entities" "$tmp/client.log" || { echo "FAIL: nothing mirrored"; cat "$tmp/client.log"; exit 1; }
grep -q "^  Player " "$tmp/client.log" || { echo "FAIL: Player not mirrored"; cat "$tmp/client.log"; exit 1; }
sleep 0.5
grep -q "client joined: p1" "$tmp/host.log" || { echo "FAIL: the host did not see p1"; cat "$tmp/host.log"; exit 1; }
echo "ok: $(grep -c '^mirror:' "$tmp/client.log") mirror reports"
