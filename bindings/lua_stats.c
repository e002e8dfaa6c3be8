/* lua_stats.c — frame statistics in Lua (keel_stats.h; design/profiler.md): w.profiling,
 * w:stats(), and what system.lua's runner uses to time each Lua system (keel.core.systems.clock,
 * w:_stats_system). */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "lua_internal.h"
#include "keel_stats.h"

static lua_Integer now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (lua_Integer)ts.tv_sec * 1000000000 + (lua_Integer)ts.tv_nsec;
}

/* keel.core.systems.clock() -> nanoseconds (monotonic): a system run's start. */
int keel__lua_stats_clock(lua_State *L)
{
    lua_pushinteger(L, now_ns());
    return 1;
}

/* w:_stats_system(name, t0 [, entities]): one Lua system run from t0 (clock()) to now. */
static int w_stats_system(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return keel__lua_argerror(L, 2, "a system name expected, got %s", luaL_typename(L, 2));
    if (!lua_isinteger(L, 3))
        return keel__lua_argerror(L, 3, "a clock() reading expected, got %s", luaL_typename(L, 3));
    if (!lua_isnoneornil(L, 4) && !lua_isinteger(L, 4))
        return keel__lua_argerror(L, 4, "an entity count expected, got %s", luaL_typename(L, 4));
    const char *name = lua_tostring(L, 2);
    lua_Integer t0 = lua_tointeger(L, 3), n = lua_isinteger(L, 4) ? lua_tointeger(L, 4) : 0;
    lua_Integer dt = now_ns() - t0;
    keel_world_stats_system(lw->w, name, dt > 0 ? (double)dt / 1e6 : 0, n > 0 ? (uint64_t)n : 0);
    return 0;
}

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static const keel_phase step_phases[] = { KEEL_PHASE_START, KEEL_PHASE_FIXED_UPDATE, KEEL_PHASE_UPDATE,
                                          KEEL_PHASE_LATE_UPDATE };

static void push_series(lua_State *L, const double *v, size_t n)
{
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushnumber(L, v ? v[i] : 0);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* w:stats([{ history = false }]) -> { frame, frame_ms, phases, systems, kinds, messages, timers, spawned, destroyed,
 * faults, lua_kb, history, phase_history, profiling }: the last step measured (zeros and empty
 * lists when none was). */
static int w_stats(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    bool history = true; /* w:stats{ history = false }: without the two ring copies (a per-frame reader) */
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TTABLE)
            return keel__lua_argerror(L, 2, "an options table expected, got %s", luaL_typename(L, 2));
        lua_pushnil(L);
        while (lua_next(L, 2)) {
            const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
            if (!k || strcmp(k, "history") != 0)
                return keel__lua_argerror(L, 2, "unknown option '%s'", k ? k : luaL_typename(L, -2));
            if (lua_type(L, -1) != LUA_TBOOLEAN) return keel__lua_argerror(L, 2, "history must be true or false");
            history = lua_toboolean(L, -1);
            lua_pop(L, 1);
        }
    }
    keel_stats s;
    keel_world_stats(lw->w, &s); /* zeroed when none */
    luaL_checkstack(L, 8, NULL);
    lua_createtable(L, 0, 16);
    set_int(L, "frame", (lua_Integer)s.frame);
    set_num(L, "frame_ms", s.frame_ms);
    lua_createtable(L, 4, 0);
    for (int i = 0; i < 4; i++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, keel_phase_name(step_phases[i]));
        lua_setfield(L, -2, "name");
        set_num(L, "ms", s.phase_ms[step_phases[i]]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "phases");
    lua_createtable(L, (int)s.system_count, 0);
    for (size_t i = 0; i < s.system_count; i++) {
        lua_createtable(L, 0, 4);
        lua_pushstring(L, s.systems[i].name);
        lua_setfield(L, -2, "name");
        set_num(L, "ms", s.systems[i].ms);
        set_int(L, "calls", (lua_Integer)s.systems[i].calls);
        set_int(L, "entities", (lua_Integer)s.systems[i].entities);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "systems");
    lua_createtable(L, (int)s.kind_count, 0);
    lua_Integer n = 0;
    for (size_t i = 0; i < s.kind_count; i++) {
        const keel_kind_desc *kd = keel_kind_describe(s.kinds[i].kind);
        if (!kd) continue; /* dropped since */
        lua_createtable(L, 0, 4);
        lua_pushstring(L, kd->key);
        lua_setfield(L, -2, "kind");
        lua_pushstring(L, keel_phase_name(s.kinds[i].phase));
        lua_setfield(L, -2, "phase");
        set_num(L, "ms", s.kinds[i].ms);
        set_int(L, "calls", (lua_Integer)s.kinds[i].calls);
        lua_rawseti(L, -2, ++n);
    }
    lua_setfield(L, -2, "kinds");
    set_int(L, "messages", s.messages);
    set_int(L, "timers", s.timers);
    set_int(L, "spawned", s.spawned);
    set_int(L, "destroyed", s.destroyed);
    set_int(L, "faults", s.faults);
    set_num(L, "lua_kb", (double)lua_gc(L, LUA_GCCOUNT) + (double)lua_gc(L, LUA_GCCOUNTB) / 1024.0);
    if (history) {
        push_series(L, s.history, s.history_count);
        lua_setfield(L, -2, "history");
        lua_createtable(L, 0, 4);
        for (int i = 0; i < 4; i++) {
            push_series(L, s.phase_history[step_phases[i]], s.history_count);
            lua_setfield(L, -2, keel_phase_name(step_phases[i]));
        }
        lua_setfield(L, -2, "phase_history");
    }
    lua_pushboolean(L, keel_world_stats_enabled(lw->w));
    lua_setfield(L, -2, "profiling");
    return 1;
}

int keel__lua_stats_newindex(lua_State *L, keel_lua_world *lw)
{
    if (lua_type(L, 3) != LUA_TBOOLEAN)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w.profiling must be true or false, got %s",
                                luaL_typename(L, 3));
    keel_world_stats_enable(lw->w, lua_toboolean(L, 3));
    return 0;
}

const luaL_Reg keel__lua_stats_world_methods[] = { { "stats", w_stats },
                                                   { "_stats_system", w_stats_system },
                                                   { NULL, NULL } };
