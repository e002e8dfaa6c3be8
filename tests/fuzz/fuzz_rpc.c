/* fuzz_rpc.c — libFuzzer target: any bytes as a JSON-RPC request body through the channel's
 * handler (keel.channel, the one /rpc calls) on a fresh small world; it must answer (never
 * raise), with "" or JSON, and leak nothing. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "../lua_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static lua_State *L;

static void open_state(void)
{
    L = keel_test_lua_new();
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
