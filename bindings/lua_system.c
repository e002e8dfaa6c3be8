/* lua_system.c — the C side of systems (lua/keel/system.lua holds their registry and order):
 * the runner called at the end of each step phase, a world-wide callback transaction for one
 * call, the check of what a system's `each` may visit, and the record of a system's failure. */
#include <string.h>

#include "lua_internal.h"
#include "bind.h"

static keel_phase phase_of(const char *name)
{
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++)
        if (strcmp(keel_phase_name((keel_phase)p), name) == 0) return (keel_phase)p;
    return KEEL_PHASE_COUNT_;
}

void keel__lua_run_systems(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_phase phase, double dt)
{
    if (ctx->systems_ref == LUA_NOREF || !lua_checkstack(L, 6)) return;
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->systems_ref);
    keel__lua_push_world_of(L, ctx, w);
    lua_pushstring(L, keel_phase_name(phase));
    lua_pushnumber(L, dt);
    (void)lua_pcall(L, 3, 0, 0); /* each system's failure is caught and recorded inside */
    lua_settop(L, top);
}

/* keel.core._systems_runner(fn): what runs a phase's systems (system.lua's runner). */
static int m_systems_runner(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TFUNCTION) return keel__lua_argerror(L, 1, "a function expected, got %s", luaL_typename(L, 1));
    if (ctx->systems_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, ctx->systems_ref);
    lua_pushvalue(L, 1);
    ctx->systems_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* w:_atomic(fn, ...) -> true | false, err: fn(...) as one callback transaction of w (its writes
 * and structural changes roll back when it raises). */
static int w_atomic(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TFUNCTION) return keel__lua_argerror(L, 2, "a function expected, got %s", luaL_typename(L, 2));
    int nargs = lua_gettop(L) - 2;
    keel__hook_txn t;
    keel__callback_open(lw->w, &t);
    int st = lua_pcall(L, nargs, 0, 0);
    keel_world *w = lw->w; /* still open: close refuses during a step */
    if (w) keel__callback_close(w, &t, st == LUA_OK ? KEEL_OK : KEEL_INVALID_OPERATION);
    if (st == LUA_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* w:_runnable(c): whether component c takes part in this step (as a hook of it would run). */
static int w_runnable(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel_lua_comp *h = keel__lua_testudata(L, 2, &keel__lua_mt_comp);
    if (!h) return keel__lua_argerror(L, 2, "keel.Component expected, got %s", luaL_typename(L, 2));
    lua_pushboolean(L, h->lw == lw && h->c.kind && keel_comp_alive(lw->w, h->c) && keel__comp_runnable(lw->w, h->c));
    return 1;
}

/* w:_fault_system(name, phase, message [, err]): a system's failure, once, in w:errors() (with the
 * position err carries, if any). */
static int w_fault_system(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    for (int i = 2; i <= 4; i++)
        if (lua_type(L, i) != LUA_TSTRING) return keel__lua_argerror(L, i, "a string expected, got %s", luaL_typename(L, i));
    keel_phase p = phase_of(lua_tostring(L, 3));
    char where[256];
    bool has_where = lua_gettop(L) >= 5 && keel__lua_error_where(L, 5, where, sizeof where);
    keel__fault_system(lw->w, (keel_uuid){ { 0 } }, lua_tostring(L, 2),
                       p == KEEL_PHASE_COUNT_ ? KEEL_PHASE_UPDATE : p, lua_tostring(L, 4),
                       has_where ? where : NULL);
    return 0;
}

const luaL_Reg keel__lua_system_world_methods[] = {
    { "_atomic", w_atomic }, { "_runnable", w_runnable }, { "_fault_system", w_fault_system }, { NULL, NULL }
};

void keel__lua_open_system(lua_State *L, keel_lua_ctx *ctx)
{
    lua_pushlightuserdata(L, ctx);
    lua_pushcclosure(L, m_systems_runner, 1);
    lua_setfield(L, -2, "_systems_runner");
}
