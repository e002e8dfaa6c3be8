/* lua_net_off.c — keel.net in a keel built without replication (KEEL_NET=OFF), in place of
 * lua_net.c: keel.net.host and keel.net.connect are there and raise Unsupported, so a script
 * learns why rather than indexing a missing table; keel.kind{}'s client_update is checked as in
 * the other build (lua_kind.c) and never runs, there being no client. */
#include "lua_internal.h"

#include <lauxlib.h>

void keel__lua_net_note_kind(lua_State *L, const char *key)
{
    (void)L;
    (void)key;
}

static int n_off(lua_State *L)
{
    return keel__lua_raisef(L, KEEL_UNSUPPORTED, "%s: this keel was built without replication (KEEL_NET=OFF)",
                           lua_tostring(L, lua_upvalueindex(1)));
}

void keel__lua_open_net(lua_State *L, keel_lua_ctx *ctx)
{
    (void)ctx;
    lua_createtable(L, 0, 2); /* keel.net */
    lua_pushliteral(L, "keel.net.host");
    lua_pushcclosure(L, n_off, 1);
    lua_setfield(L, -2, "host");
    lua_pushliteral(L, "keel.net.connect");
    lua_pushcclosure(L, n_off, 1);
    lua_setfield(L, -2, "connect");
    lua_setfield(L, -2, "net");
}
