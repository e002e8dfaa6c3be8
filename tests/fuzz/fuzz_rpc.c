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

static const char setup[] =
    "local keel = require 'keel'\n"
    "local channel = require 'keel.channel'\n"
    "local json = require 'keel.json'\n"
    "keel.kind{ key = 'fz:k', multiplicity = 'many', max = 4, fields = { { 'v', 'float', min = 0, max = 10 },\n"
    "  { 'e', 'enum', choices = { 'a', 'b' } }, { 't', 'entity' }, { 's', 'string' }, { 'p', 'vec3' } } }\n"
    "return function(text)\n"
    "  local w = keel.world('F')\n"
    "  local a = w:spawn{ name = 'A', components = { 'core:transform', 'fz:k' } }\n"
    "  w:spawn{ name = 'B', parent = a, components = { { 'fz:k', v = 3 } } }\n"
    "  local ch = channel.new(w, { paused = true, save = false, max_frames = 8 })\n"
    "  local out = ch:handle(text)\n"
    "  if out ~= '' then assert(json.decode(out), 'the response is not JSON') end\n"
    "  w:close()\n"
    "end\n";

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
    if (luaL_loadstring(L, setup) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) abort();
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
