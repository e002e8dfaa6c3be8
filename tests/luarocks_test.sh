#!/bin/sh
# luarocks_test.sh — `luarocks make` of keel-dev-1.rockspec in a copy of the clone, into a
# temporary tree; then stock lua5.4, stock busted and the tree's keel program use that tree
# (the copy removed first: nothing may lean on the source).
set -eu
SRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/clone"
(cd "$SRC" && tar --exclude='./build*' --exclude=./.git --exclude=./tour -cf - .) | tar -C "$tmp/clone" -xf -
tree=$tmp/tree
(cd "$tmp/clone" && luarocks --lua-version=5.4 make --tree="$tree" --deps-mode=none keel-dev-1.rockspec) \
    >"$tmp/make.log" 2>&1 || { tail -40 "$tmp/make.log"; echo "FAIL: luarocks make"; exit 1; }
rm -rf "$tmp/clone"
[ -x "$tree/bin/keel" ] || { echo "FAIL: the keel program is not in the tree"; exit 1; }
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
