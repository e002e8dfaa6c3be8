/* lua_replay.c — the world's random generator (w:random), keel.record and keel.replay
 * (design/replay.md); the recording and the replay themselves are core/game/record.c and
 * core/game/replay.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"

void keel__lua_world_writable(lua_State *L, keel_lua_world *lw)
{
    if (lw->w && keel__world_frozen(lw->w))
        keel__lua_raisef(L, KEEL_INVALID_OPERATION, "a replay's world is read-only (rp:branch() gives a live one)");
}

static int64_t check_bound(lua_State *L, int idx)
{
    if (lua_isinteger(L, idx)) return (int64_t)lua_tointeger(L, idx);
    lua_Integer n;
    if (lua_type(L, idx) == LUA_TNUMBER && lua_numbertointeger(floor(lua_tonumber(L, idx)), &n) &&
        (lua_Number)n == lua_tonumber(L, idx))
        return (int64_t)n;
    keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w:random: argument #%d must be an integer, got %s", idx - 1,
                     lua_type(L, idx) == LUA_TNUMBER ? "a fraction" : luaL_typename(L, idx));
    return 0;
}

/* w:random([m [, n]]): math.random's signature, drawn from the world's own generator. */
static int w_random(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    int n = lua_gettop(L);
    if (n == 1) {
        lua_pushnumber(L, (lua_Number)keel_random_unit(lw->w));
        return 1;
    }
    if (n > 3) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w:random: at most two arguments");
    int64_t lo = 1, hi;
    if (n == 2) hi = check_bound(L, 2);
    else {
        lo = check_bound(L, 2);
        hi = check_bound(L, 3);
    }
    keel_diags d;
    keel_diags_init(&d);
    int64_t out = 0;
    keel_status s = keel_random_int(lw->w, lo, hi, &out, &d);
    keel__lua_check(L, s, &d, NULL);
    lua_pushinteger(L, (lua_Integer)out);
    return 1;
}

const luaL_Reg keel__lua_replay_world_methods[] = { { "random", w_random }, { NULL, NULL } };
