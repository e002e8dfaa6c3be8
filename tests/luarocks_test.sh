#!/bin/sh
# luarocks_test.sh — `luarocks make` of keel-dev-1.rockspec in a copy of the clone, into a
# temporary tree, with a bare environment (no user LuaRocks config, no LUA_PATH). The tree's keel
# program must use the tree's Lua files and data even while the clone is still there; then, the
# copy removed, stock lua5.4, stock busted and the tree's keel program use that tree.
set -eu
SRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/clone" "$tmp/home"
(cd "$SRC" && tar --exclude='./build*' --exclude=./.git --exclude=./tour -cf - .) | tar -C "$tmp/clone" -xf -
tree=$tmp/tree
(cd "$tmp/clone" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$tmp/home" \
    luarocks --lua-version=5.4 make --tree="$tree" --deps-mode=none keel-dev-1.rockspec) \
    >"$tmp/make.log" 2>&1 || { tail -40 "$tmp/make.log"; echo "FAIL: luarocks make"; exit 1; }
[ -x "$tree/bin/keel" ] || { echo "FAIL: the keel program is not in the tree"; exit 1; }
tree=$(cd "$tree" && pwd -P) # as the program resolves its own directory

echo "== the tree's keel loads the tree's Lua files, not the clone's (the clone still there)"
cat >"$tmp/which.lua" <<'LUA'
print(package.searchpath("keel", package.path))
print((debug.getinfo(require("keel.repl").format, "S").source:gsub("^@", "")))
LUA
# no LUA_PATH: the program finds its own files from where it sits
out=$(env -u LUA_PATH -u LUA_PATH_5_4 "$tree/bin/keel" "$tmp/which.lua")
echo "$out"
for f in $out; do
    case "$f" in "$tree/share/lua/5.4/keel/"*) ;; *) echo "FAIL: $f is not the tree's"; exit 1 ;; esac
done
[ "$(echo "$out" | wc -l)" -eq 2 ] || { echo "FAIL: expected two paths"; exit 1; }

echo "== the tree's keel plays the rock's bundled demo, not the clone's (the clone still there)"
"$tree/bin/keel" run --frames 5 >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; exit 1; }
cat "$tmp/run.log"
grep -q "^$tree/lib/luarocks/rocks-5.4/keel/dev-1/share/keel/scenes/demo.yaml: 5 frames, .*, 0 errors$" "$tmp/run.log" \
    || { echo "FAIL: keel run did not play the rock's demo"; exit 1; }
rm -rf "$tmp/clone"

# the tree's paths, as `eval "$(luarocks path)"` sets them (lfs comes from Debian's lua-filesystem)
eval "$(luarocks --lua-version=5.4 --tree="$tree" path)"

echo "== stock lua5.4 requires keel from the tree"
out=$(lua5.4 -e 'local keel = require "keel"; print(package.searchpath("keel", package.path)); print(keel.world("x"))')
echo "$out"
case "$out" in "$tree/"*World*) ;; *) echo "FAIL: keel not from the tree"; exit 1 ;; esac

echo "== stock busted runs a spec against it"
mkdir "$tmp/spec"
cat >"$tmp/spec/rock_spec.lua" <<'LUA'
local keel = require "keel"
describe("keel from a LuaRocks tree", function()
  it("spawns and steps", function()
    local w = keel.world("Rock")
    local e = w:spawn{ name = "P", components = { { "core:transform", position = { 1, 2, 3 } } } }
    w:run(3, 1 / 60)
    assert.are.same({ 1, 2, 3 }, e:get("core:transform").position)
  end)
end)
LUA
(cd "$tmp/spec" && lua5.4 "$(command -v busted)" -o plainTerminal rock_spec.lua)

echo "== the tree's keel program plays its bundled demo"
"$tree/bin/keel" run --frames 30 >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; exit 1; }
cat "$tmp/run.log"
grep -q "demo.yaml: 30 frames, .*, 0 errors$" "$tmp/run.log" || { echo "FAIL: keel run"; exit 1; }
echo "luarocks: ok"
