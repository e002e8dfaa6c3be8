/* lua_state.h — a test's own Lua state running keel from the source tree: the standard
 * libraries, keel.core preloaded (the module's sources are linked into the test), and
 * package.path on the tree's lua/ (test_lua_states.c, fuzz/fuzz_rpc.c). */
#ifndef KEEL_TEST_LUA_STATE_H
#define KEEL_TEST_LUA_STATE_H

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua_host.h"

static inline lua_State *keel_test_lua_new(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_keel_core);
    lua_setfield(L, -2, "keel.core");
    lua_pop(L, 1);
    lua_getglobal(L, "package");
    lua_pushstring(L, KEEL_SOURCE_DIR "/lua/?.lua;" KEEL_SOURCE_DIR "/lua/?/init.lua");
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
    return L;
}

#endif
