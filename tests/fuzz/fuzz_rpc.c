/* fuzz_rpc.c — libFuzzer target: any bytes as a JSON-RPC request body through the channel's
 * handler (keel.channel, the one /rpc calls) on a fresh small world; it must answer (never
 * raise), with "" or JSON, and leak nothing. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

int luaopen_keel_core(lua_State *L);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static lua_State *L;

static void open_state(void)
{
    L = luaL_newstate();
    luaL_openlibs(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_keel_core);
    lua_setfield(L, -2, "keel.core");
    lua_pop(L, 1);
    lua_getglobal(L, "package");
    lua_pushstring(L, KEEL_SOURCE_DIR "/lua/?.lua;" KEEL_SOURCE_DIR "/lua/?/init.lua");
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
    if (luaL_loadfile(L, KEEL_SOURCE_DIR "/tests/fuzz/fuzz_rpc.lua") != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) abort();
    lua_setfield(L, LUA_REGISTRYINDEX, "fuzz_rpc");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!L) open_state();
    lua_getfield(L, LUA_REGISTRYINDEX, "fuzz_rpc");
    lua_pushlstring(L, (const char *)data, size);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) abort(); /* the handler answers every input */
    lua_gc(L, LUA_GCCOLLECT);
    return 0;
}
