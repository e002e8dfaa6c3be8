-- keel-dev-1.rockspec — `luarocks make` in a clone builds keel with CMake (Release) and installs,
-- into the LuaRocks tree: the module keel.core, the Lua files (keel, keel.kindfiles, ...) and
-- the keel program; the bundled kinds and scenes stay in the rock's own directory.
rockspec_format = "3.0"
package = "keel"
version = "dev-1"
-- keel has no public repository to fetch from: this rockspec is for `luarocks make` run in a
-- clone, which builds the directory it runs in and never reads source.url. "." says just that
-- (`luarocks build` and `luarocks install` of this file are not supported).
source = {
  url = ".",
}
description = {
  summary = "An entity/component engine core in C11 with Lua 5.4 bindings",
  license = "none chosen yet", -- the repository has no licence file; `luarocks lint` wants the field
  detailed = [[
keel owns entities, component kinds, hierarchy, lifecycle phases and persistence
(canonical YAML scenes, cooked binary scenes, save games); its Lua bindings expose all
of it. Needs CMake, libyaml, zlib, libedit, ENet, libmicrohttpd and jansson (Debian:
libyaml-dev zlib1g-dev libedit-dev libenet-dev libmicrohttpd-dev libjansson-dev).]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "luafilesystem", -- keel.kindfiles (Debian: lua-filesystem)
}
build = {
  type = "command",
  -- The rock's directory ($(PREFIX)) gets lua/ (Lua files), lib/ (C modules) and bin/,
  -- which LuaRocks puts in the tree; libkeel itself and the data stay under share/.
  build_command = [[cmake -S . -B build-rock -DCMAKE_BUILD_TYPE=Release -DKEEL_TESTS=OFF ]]
    .. [[-DCMAKE_INSTALL_PREFIX="$(PREFIX)" -DCMAKE_INSTALL_LIBDIR=share/keel/lib ]]
    .. [[-DKEEL_LUA_CDIR=lib -DKEEL_LUA_LDIR=lua && cmake --build build-rock -j 2]],
  install_command = [[cmake --install build-rock]],
}
