#!/bin/sh
# install_test.sh — installs keel into a temporary prefix from a plain release
# build and uses it as an outsider would: stock lua5.4, stock busted, a C
# program built with pkg-config, and the installed keel program.
set -eu
SRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake -S "$SRC" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DKEEL_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX="$prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" -j 2 >"$tmp/build.log" 2>&1 || { tail -50 "$tmp/build.log"; exit 1; }
cmake --install "$tmp/build" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }

cmod=$(find "$prefix" -path '*lua/5.4/keel/core.so' | head -1)
lmod=$(find "$prefix" -path '*lua/5.4/keel/init.lua' | head -1)
pcfile=$(find "$prefix" -name keel.pc | head -1)
[ -n "$cmod" ] || { echo "FAIL: keel/core.so not installed"; exit 1; }
[ -n "$lmod" ] || { echo "FAIL: keel/init.lua not installed"; exit 1; }
[ -n "$pcfile" ] || { echo "FAIL: keel.pc not installed"; exit 1; }
cdir=$(dirname "$(dirname "$cmod")")
ldir=$(dirname "$(dirname "$lmod")")
export LUA_PATH="$ldir/?.lua;$ldir/?/init.lua;;"
export LUA_CPATH="$cdir/?.so;;"

echo "== stock lua5.4 requires keel"
out=$(lua5.4 -e 'local keel = require "keel"; print(keel.world("x"))')
echo "$out"
case "$out" in *World*|*world*) ;; *) echo "FAIL: unexpected output"; exit 1 ;; esac

echo "== stock lua5.4 serves a world (keel.serve) with the installed inspector page"
[ -f "$ldir/keel/inspector/index.html" ] || { echo "FAIL: the inspector page is not installed"; exit 1; }
out=$(lua5.4 -e '
local keel = require "keel"
local srv = assert(keel.serve(keel.world("x"), { port = 0 }))
assert(srv.static, "no static files found")
local f = io.popen("curl -s -o /dev/null -w %{http_code} http://127.0.0.1:" .. srv.port .. "/ &")
for _ = 1, 200 do srv:poll(0.01) end
print(f:read("a"), srv.url)
srv:close()')
echo "$out"
case "$out" in 200*/#token=*) ;; *) echo "FAIL: unexpected output"; exit 1 ;; esac

echo "== stock busted runs a user's spec"
mkdir -p "$tmp/userspec"
cat >"$tmp/userspec/user_spec.lua" <<'LUA'
local keel = require "keel"
describe("a user's own spec", function()
  it("spawns an entity with a transform", function()
    local w = keel.world("UserWorld")
    local e = w:spawn("Player")
    e:add("core:transform", { position = { 1, 2, 3 } })
    assert.are.equal("Player", e.name)
    assert.are.same({ 1, 2, 3 }, e:get("core:transform").position)
  end)
end)
LUA
(cd "$tmp/userspec" && lua5.4 "$(command -v busted)" -o plainTerminal user_spec.lua)

echo "== C program from pkg-config"
export PKG_CONFIG_PATH=$(dirname "$pcfile")
cc -std=c11 -Wall -Werror "$SRC/tools/embed_example.c" $(pkg-config --cflags --libs keel) -o "$tmp/embed_example"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir keel) "$tmp/embed_example" "$tmp/example.yaml"
grep -q "example:health" "$tmp/example.yaml" || { echo "FAIL: saved scene lacks the component"; exit 1; }

echo "== libkeel.so exports keel.h only; core.so only its luaopen"
libso=$(pkg-config --variable=libdir keel)/libkeel.so
internal=$(nm -D --defined-only "$libso" | awk '$3 ~ /^keel__/' | head -5)
[ -z "$internal" ] || { echo "FAIL: libkeel.so exports internals: $internal"; exit 1; }
nm -D --defined-only "$libso" | grep -q ' keel_world_new$' || { echo "FAIL: libkeel.so lacks keel_world_new"; exit 1; }
exports=$(nm -D --defined-only "$cmod" | awk '{ print $3 }')
[ "$exports" = luaopen_keel_core ] || { echo "FAIL: core.so exports more than luaopen_keel_core: $exports"; exit 1; }

echo "== the installed keel program loads the installed Lua files, not the source tree's"
printf 'print(package.searchpath("keel", package.path))\n' >"$tmp/which.lua"
out=$(env -u LUA_PATH -u LUA_PATH_5_4 "$prefix/bin/keel" "$tmp/which.lua")
echo "$out"
[ "$out" = "$(cd "$ldir" && pwd -P)/keel/init.lua" ] || { echo "FAIL: not the installed keel/init.lua"; exit 1; }

echo "== the installed keel program runs the bundled demo"
# 200 frames (3.3 s): the spawners have instantiated the installed scenes/prefabs/drone.yaml
"$prefix/bin/keel" run --frames 200 >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; exit 1; }
cat "$tmp/run.log"
grep -q "^$prefix/share/keel/scenes/demo.yaml: 200 frames, 12 entities, .*, 0 errors$" "$tmp/run.log" || {
    echo "FAIL: the installed keel did not play its installed demo scene"; exit 1; }
echo "== the installed keel new writes a whole project from its installed templates"
(cd "$tmp" && "$prefix/bin/keel" new newgame >/dev/null) || { echo "FAIL: the installed keel new"; exit 1; }
for f in .busted .gitattributes .gitignore README.md kinds/spinner.lua kinds/spin.lua scenes/main.yaml spec/spinner_spec.lua; do
    [ -f "$tmp/newgame/$f" ] || { echo "FAIL: the installed keel new wrote no $f"; exit 1; }
done
echo "== a moved prefix: keel finds its Lua files and data from where it sits"
mv "$prefix" "$tmp/moved"
moved=$(cd "$tmp/moved" && pwd -P)
out=$(env -u LUA_PATH -u LUA_PATH_5_4 "$moved/bin/keel" "$tmp/which.lua")
[ "$out" = "$moved/share/lua/5.4/keel/init.lua" ] || { echo "FAIL: the moved keel loaded $out"; exit 1; }
"$moved/bin/keel" run --frames 5 >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; exit 1; }
grep -q "^$moved/share/keel/scenes/demo.yaml: 5 frames" "$tmp/run.log" || { cat "$tmp/run.log"; echo "FAIL: the moved keel's demo"; exit 1; }
echo "install: ok"
