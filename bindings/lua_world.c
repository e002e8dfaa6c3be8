/* lua_world.c — the World type (keel.World): its entity handle cache, step and run, dump and
 * save, close, transfer, play and stop, and the module functions keel.world, keel.load, keel.parse
 * (w:spawn: lua_spawn.c; w:lift: lua_lift.c; keel.load and its options: lua_load.c). */
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "lua_internal.h"
#include "keel_stats.h"
#include "lua_job.h"
#include "bind.h" /* keel__utf8_valid */

/* ---- World userdata ---- */

static int world_props(lua_State *L);

/* Copies every pair of the registry table at `key` into the table on top. */
static void copy_into_top(lua_State *L, const void *key)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, key);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -5);
    }
    lua_pop(L, 1);
}

/* The World on top gets its own copy of a handle metatable, holding [1] = the World (lua_internal.h). */
static void handle_mt(lua_State *L, const keel_lua_type *t, int uv)
{
    int world = lua_gettop(L);
    lua_createtable(L, 1, 8); /* [1] in the array part: the handles' checks read it on every call */
    copy_into_top(L, t);
    lua_pushvalue(L, world);
    lua_rawseti(L, -2, 1);
    if (t == &keel__lua_mt_comp) keel__lua_comp_mt_own(L, lua_gettop(L));
    lua_setiuservalue(L, world, uv);
}

static const char world_methods_key = 0; /* registry: the World methods table every World's copy is made from */

/* The World on top gets its own metatable: a copy of the shared one whose __index is the World's
 * own copy of the methods table, so `w:spawn` is a table lookup (no C call); that table's
 * metatable ({ __index = world_props, [1] = the World }) answers the properties (w.name, ...),
 * which need the World itself (a metamethod further down the chain sees only the table). */
static void world_mt(lua_State *L)
{
    int world = lua_gettop(L);
    lua_newtable(L); /* the metatable */
    copy_into_top(L, &keel__lua_mt_world);
    lua_newtable(L); /* the methods */
    copy_into_top(L, &world_methods_key);
    lua_createtable(L, 1, 1); /* the methods' metatable */
    lua_pushcfunction(L, world_props);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, world);
    lua_rawseti(L, -2, 1);
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, world);
}

void keel__lua_push_world(lua_State *L, keel_lua_ctx *ctx, keel_world *w, bool owned)
{
    /* hooks run during a load may already have wrapped this world (borrowed): take that one over */
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->worlds_ref);
    if (lua_rawgetp(L, -1, w) == LUA_TUSERDATA) {
        keel_lua_world *old = lua_touserdata(L, -1);
        old->owned = old->owned || owned;
        lua_remove(L, -2);
        return;
    }
    lua_pop(L, 2);
    keel_lua_world *lw = lua_newuserdatauv(L, sizeof *lw, 5); /* 5: the spawn handles (lua_spawn.c), made on first use */
    memset(lw, 0, sizeof *lw);
    lw->ctx = ctx;
    lw->owned = owned;
    world_mt(L);
    lua_newtable(L); /* entity handle cache: [index + 1] = handle (see keel__lua_push_entity_cached) */
    lua_setiuservalue(L, -2, 1);
    handle_mt(L, &keel__lua_mt_entity, 3);
    handle_mt(L, &keel__lua_mt_comp, 4);
    lw->w = w; /* only now: a memory error above leaves a closed world, never a leak */
    lw->saved_revision = keel_world_revision(w); /* a world that never touched a file: clean as made */
    keel__lua_attach(ctx, w); /* its phases run this state's systems and servers */
    lw->epoch = keel_world_epoch(w);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->worlds_ref);
    lua_pushlightuserdata(L, w);
    lua_pushvalue(L, -3);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    if (!owned && ctx->loading_ref != LUA_NOREF) { /* a load's candidate world: checked after the load */
        lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->loading_ref);
        lua_pushvalue(L, -2);
        lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
        lua_pop(L, 1);
    }
}

void keel__lua_push_world_of(lua_State *L, keel_lua_ctx *ctx, keel_world *w)
{
    keel__lua_push_world(L, ctx, w, false);
}

keel_lua_world *keel__lua_checklw(lua_State *L, int idx)
{
    keel_lua_world *lw = keel__lua_checkudata(L, idx, &keel__lua_mt_world);
    if (!lw->w) keel__lua_raisef(L, KEEL_NOT_FOUND, "the world is closed");
    if (keel_world_epoch(lw->w) != lw->epoch) keel__lua_raisef(L, KEEL_NOT_FOUND, "the world handle is stale");
    return lw;
}

keel_world *keel_lua_checkworld(lua_State *L, int idx)
{
    return keel__lua_checklw(L, idx)->w;
}

static int world_gc(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checkudata(L, 1, &keel__lua_mt_world);
    keel__lua_timer_world_gone(lw);
    if (lw->w) {
        keel_world *w = lw->w;
        lw->w = NULL;
        if (lw->ctx->alive) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, lw->ctx->worlds_ref);
            if (lua_rawgetp(L, -1, w) == LUA_TUSERDATA && lua_touserdata(L, -1) == lw) {
                lua_pushnil(L);
                lua_rawsetp(L, -3, w);
            }
            lua_pop(L, 2);
        }
        if (lw->owned) keel_world_free(w);
    }
    keel__lua_queries_free(lw);
    free(lw->path);
    lw->path = NULL;
    free(lw->gens); /* no handle is made for a closed world */
    lw->gens = NULL;
    lw->gens_cap = 0;
    return 0;
}

static int world_tostring(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checkudata(L, 1, &keel__lua_mt_world);
    if (!lw->w) {
        lua_pushliteral(L, "keel.World (closed)");
        return 1;
    }
    char u[37];
    keel_uuid_format(keel_world_uuid(lw->w), u);
    lua_pushfstring(L, "keel.World \"%s\" %s", keel_world_name(lw->w), u);
    return 1;
}

/* ---- entity cache ---- */

/* The cache is keyed by entity index + 1, not by the handle's 64-bit value: the keys are dense,
 * so the table is an array (grown by doubling, traversed linearly by the GC) instead of a hash
 * part that rehashes every node as it grows. lw->gens holds the generation of each cached
 * handle: a hit is told without touching the handle's memory (a hook call per entity per step
 * looks its entity up here). A reused index gets a new handle. */

/* Drops cached handles of dead entities once the cache has grown past the live count (the
 * slots of entities destroyed for good would keep their handles until the index is reused). */
static void cache_sweep(lua_State *L, keel_lua_world *lw, int cache)
{
    lua_pushnil(L);
    while (lua_next(L, cache)) { /* not 1..#cache: the slots of swept handles are holes */
        const keel_lua_entity *h = lua_touserdata(L, -1);
        lua_pop(L, 1);
        if (h && !keel_alive(lw->w, h->e) && h->e != keel_world_root(lw->w)) {
            if ((uint32_t)h->e < lw->gens_cap) lw->gens[(uint32_t)h->e] = 0;
            lua_pushvalue(L, -1);
            lua_pushnil(L);
            lua_rawset(L, cache); /* clearing a present field during lua_next is allowed */
        }
    }
    lw->cache_inserts = 0;
}

/* Puts the handle on top in the cache as e's (the handle stays on top). */
void keel__lua_cache_put(lua_State *L, keel_lua_world *lw, int cache, keel_entity e)
{
    uint32_t i = (uint32_t)e;
    if (i >= lw->gens_cap) {
        size_t cap = lw->gens_cap ? lw->gens_cap * 2 : 64;
        while (cap <= i) cap *= 2;
        uint32_t *g = realloc(lw->gens, cap * sizeof *g);
        if (!g) luaL_error(L, "out of memory");
        memset(g + lw->gens_cap, 0, (cap - lw->gens_cap) * sizeof *g);
        lw->gens = g;
        lw->gens_cap = cap;
    }
    if (++lw->cache_inserts > 4096 && lw->cache_inserts > 2 * keel_world_entity_count(lw->w))
        cache_sweep(L, lw, cache);
    lua_pushvalue(L, -1);
    lua_rawseti(L, cache, (lua_Integer)i + 1);
    lw->gens[i] = (uint32_t)(e >> 32);
}

void keel__lua_push_entity_cached(lua_State *L, int world_idx, int cache, keel_entity e)
{
    keel_lua_world *lw = lua_touserdata(L, world_idx);
    uint32_t i = (uint32_t)e;
    if (keel__lua_gen_cached(lw, e)) {
        if (lua_rawgeti(L, cache, (lua_Integer)i + 1) == LUA_TUSERDATA) return;
        lua_pop(L, 1);
    }
    world_idx = lua_absindex(L, world_idx);
    cache = lua_absindex(L, cache);
    if (!keel__lua_spawn_take(L, world_idx, lw, e)) keel__lua_entity_handle(L, world_idx, lw, e);
    keel__lua_cache_put(L, lw, cache, e);
}

void keel__lua_push_entity(lua_State *L, int world_idx, keel_entity e)
{
    world_idx = lua_absindex(L, world_idx);
    lua_getiuservalue(L, world_idx, 1);
    keel__lua_push_entity_cached(L, world_idx, lua_gettop(L), e);
    lua_remove(L, -2);
}

static int w_find(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "find: a UUID or a name expected, got %s", luaL_typename(L, 2));
    if (keel__lua_has_nul(L, 2)) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "find: a name holds a NUL byte");
    const char *s = lua_tostring(L, 2);
    keel_uuid u;
    keel_entity e = KEEL_NO_ENTITY;
    if (keel_uuid_parse(s, &u)) e = keel_find(lw->w, u);
    if (!e) e = keel_find_name(lw->w, s);
    if (!e) lua_pushnil(L);
    else keel__lua_push_entity(L, 1, e);
    return 1;
}

/* ---- lifecycle ---- */

/* Ctrl-C during w:step/w:run: a host's SIGINT handler calls keel_lua_interrupt
 * while keel_lua_stepping() is true; the frame under way finishes (no callback
 * is blamed for the signal) and the call then raises "interrupted!". */
static volatile sig_atomic_t g_interrupt;
static volatile sig_atomic_t g_stepping;

void keel_lua_interrupt(void) { g_interrupt = 1; }
int keel_lua_stepping(void) { return g_stepping; }

static int raise_if_interrupted(lua_State *L, const keel_lua_world *lw)
{
    if (!g_interrupt) return 0;
    g_interrupt = 0;
    /* how far the world got: a ctrl-c'd script says it without a traceback */
    return luaL_error(L, "interrupted! (after frame %d)", (int)keel_world_frame(lw->w));
}

static keel_status step_fn(void *ud, keel_world *w, keel_diags *d) { return keel_step(w, *(double *)ud, d); }

static keel_status step_once(lua_State *L, keel_lua_world *lw, double dt, keel_diags *d)
{
    return keel__lua_world_run(L, lw, step_fn, &dt, d);
}

keel_status keel__lua_world_run(lua_State *L, keel_lua_world *lw, keel_status (*fn)(void *ud, keel_world *w, keel_diags *d),
                                void *ud, keel_diags *d)
{
    int tag; /* its address marks this frame's slots */
    luaL_checkstack(L, KEEL_LUA_MEMO_KEYS + 24, NULL); /* the slots below and what a hook call pushes */
    lua_settop(L, 1);
    lua_getiuservalue(L, 1, 1);       /* 2: the handle cache */
    lua_settop(L, 5 + KEEL_LUA_MEMO_KEYS); /* 3..: memo slots for the trampolines */
    lua_pushlightuserdata(L, &tag);        /* then the tag */
    KEEL_LUA_ENTER(L, lw->ctx);
    keel__lua_cur.w = lw->w;
    keel__lua_cur.cache_idx = 2;
    keel__lua_cur.memo_idx = 3;
    keel__lua_cur.tag = &tag;
    g_stepping++;
    keel_status s = fn(ud, lw->w, d);
    g_stepping--;
    KEEL_LUA_LEAVE();
    lua_settop(L, 1);
    return s;
}

static double check_dt(lua_State *L, int idx, keel_lua_world *lw)
{
    if (lua_isnoneornil(L, idx)) return keel_world_fixed_dt(lw->w);
    if (lua_type(L, idx) != LUA_TNUMBER)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "dt must be a number, got %s", luaL_typename(L, idx));
    return (double)lua_tonumber(L, idx);
}

static int w_step(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    double dt = check_dt(L, 2, lw);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = step_once(L, lw, dt, &d);
    keel__lua_check(L, s, &d, NULL);
    return raise_if_interrupted(L, lw);
}

static int w_run(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    /* Like Lua's own integer arguments, 3e5 counts: a float with an exact integer value. */
    int isint = 0;
    lua_Integer frames = lua_tointegerx(L, 2, &isint);
    if (lua_type(L, 2) != LUA_TNUMBER || !isint || frames < 0)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "run: frames must be a non-negative integer");
    double dt = check_dt(L, 3, lw);
    lua_settop(L, 1);
    for (lua_Integer i = 0; i < frames; i++) {
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = step_once(L, lw, dt, &d);
        keel__lua_check(L, s, &d, NULL);
        raise_if_interrupted(L, lw);
    }
    return 0;
}

static int w_errors(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    size_t n = keel_fault_count(lw->w);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        const keel_fault *f = keel_fault_at(lw->w, i);
        char u[37];
        keel_uuid_format(f->entity, u);
        lua_createtable(L, 0, 5);
        lua_pushstring(L, u);
        lua_setfield(L, -2, "entity");
        lua_pushstring(L, f->kind ? f->kind : "");
        lua_setfield(L, -2, "kind");
        lua_pushinteger(L, (lua_Integer)f->slot);
        lua_setfield(L, -2, "slot");
        lua_pushstring(L, keel_phase_name(f->phase));
        lua_setfield(L, -2, "phase");
        lua_pushstring(L, f->message ? f->message : "");
        lua_setfield(L, -2, "message");
        if (f->timer) {
            lua_pushinteger(L, (lua_Integer)f->timer);
            lua_setfield(L, -2, "timer");
        }
        if (f->system) {
            lua_pushstring(L, f->system);
            lua_setfield(L, -2, "system");
        }
        if (f->where) {
            lua_pushstring(L, f->where);
            lua_setfield(L, -2, "where");
        }
        lua_pushinteger(L, (lua_Integer)f->count);
        lua_setfield(L, -2, "count");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* w:warnings(): the warning diagnostics of the load that made this world ({} otherwise). */
static int w_warnings(lua_State *L)
{
    keel__lua_checklw(L, 1);
    if (lua_getiuservalue(L, 1, 2) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    return 1;
}

/* The text is owned by a box while lua_pushlstring copies it: a memory error there frees it. */
static int w_dump(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel__lua_refuse_in_callback(L, lw->w, "w:dump");
    void **box = keel__lua_newbox(L);
    char *text = NULL;
    size_t len = 0;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_scene_dump(lw->w, &text, &len, &d);
    *box = text; /* nothing raised since the dump */
    if (s != KEEL_OK) return keel__lua_raise(L, s, &d);
    keel_diags_free(&d);
    lua_pushlstring(L, text, len);
    free(text);
    *box = NULL;
    return 1;
}

void keel__lua_world_loaded(lua_State *L, int idx, const char *path)
{
    keel_lua_world *lw = lua_touserdata(L, idx);
    char *p = NULL;
    if (path) {
        size_t n = strlen(path) + 1;
        if (!(p = malloc(n))) luaL_error(L, "out of memory");
        memcpy(p, path, n);
    }
    free(lw->path);
    lw->path = p;
    lw->saved_revision = keel_world_revision(lw->w);
}

static const char *const save_keys[] = { "adopt", NULL };

/* w:save([path [, { adopt }]]): no path saves to w.path and moves the checkpoint there; another
 * path is a copy (w.path and the checkpoint stay) unless adopt is true, which takes both. */
static int w_save(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (!lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save: a path expected, got %s", luaL_typename(L, 2));
    if (!lua_isnoneornil(L, 2) && keel__lua_has_nul(L, 2))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save: the path holds a NUL byte");
    bool adopt = false;
    if (!lua_isnoneornil(L, 3)) {
        if (lua_type(L, 3) != LUA_TTABLE)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save: an options table expected, got %s",
                                   luaL_typename(L, 3));
        keel__lua_check_keys(L, 3, "save", save_keys);
        lua_getfield(L, 3, "adopt");
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TBOOLEAN)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save: adopt must be a boolean, got %s",
                                   luaL_typename(L, -1));
        adopt = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    const char *path = lua_isnoneornil(L, 2) ? lw->path : lua_tostring(L, 2);
    if (!path)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT,
                               "save: this world has no path (w.path is nil): give one, or { adopt = true } to keep it");
    keel__lua_refuse_in_callback(L, lw->w, "w:save");
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_scene_save(lw->w, path, &d);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    bool own = lw->path && strcmp(path, lw->path) == 0; /* saving to its own file is no copy */
    if (adopt && !own) keel__lua_world_loaded(L, 1, path);
    else if (adopt || own) lw->saved_revision = keel_world_revision(lw->w);
    lua_pushboolean(L, 1);
    return 1;
}

/* w:_set_revision(n): keel.history's undo and redo put back the revision the world had
 * (design/editing.md: undoing back to the checkpoint makes it clean again). */
/* w:_mark_saved(): the world matches its file now (the file watcher applied the file's content):
 * the checkpoint moves to the current revision, as a save does. */
static int w__mark_saved(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    lw->saved_revision = keel_world_revision(lw->w);
    return 0;
}

static int w__set_revision(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    int isint = 0;
    lua_Integer n = lua_tointegerx(L, 2, &isint);
    if (!isint || n < 0) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "_set_revision: a revision expected");
    keel__world_set_revision(lw->w, (uint64_t)n);
    return 0;
}

/* w:_revision_mark() -> revision, sets: what an observer compares to know the world changed. The
 * revision alone can come back to a value it had (undo restores it, for the saved checkpoint);
 * the pair never does. */
static int w__revision_mark(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    lua_pushinteger(L, (lua_Integer)keel_world_revision(lw->w));
    lua_pushinteger(L, (lua_Integer)keel__world_revision_sets(lw->w));
    return 2;
}

/* w:close() and __close: every component's on_destroy (keel__world_retire), then the world is
 * freed; its handles go stale. Returns true, or nil and the first on_destroy failure with
 * err.count (the world is closed either way). Refused (before anything runs) during its step
 * and inside any of its callbacks: their callers go on using the world. */
static int w_close(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checkudata(L, 1, &keel__lua_mt_world);
    if (lw->w && (keel_world_in_callback(lw->w) || keel__lua_in_callback(lw->ctx, lw->w)))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION,
                               "w:close refuses while a callback transaction is open: a world cannot be closed "
                               "inside its own callbacks");
    if (lw->w && keel_world_in_step(lw->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "a world cannot be closed during its step");
    /* A finalizer may run in the middle of a call into this very world (w:spawn, e:add, ...):
     * freeing it there left that call on a NULL or freed world. It closes when collected. */
    if (lw->w && keel__lua_in_finalizer(L))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION,
                               "w:close refuses inside a __gc finalizer (it may run in the middle of a call into "
                               "the world); the world closes when it is collected");
    if (!lw->w || !lw->owned) { /* closed already, or C's world: C retires it */
        world_gc(L);
        lua_pushboolean(L, 1);
        return 1;
    }
    keel_diags d;
    keel_diags_init(&d);
    keel_jobs_wait(lw->w); /* its pending saves are written first */
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel__world_retire(lw->w, &d);
    KEEL_LUA_LEAVE();
    world_gc(L);
    if (s == KEEL_OK) {
        keel_diags_free(&d);
        lua_pushboolean(L, 1);
        return 1;
    }
    size_t count = d.errors;
    keel__lua_fail(L, &d);
    lua_pushinteger(L, (lua_Integer)count);
    lua_setfield(L, -2, "count");
    return 2;
}

/* __close: w:close under its own function value (the methods table holds w_close; a value found
 * in both would be named by the methods table alone in listings that walk them). */
static int world_close(lua_State *L) { return w_close(L); }

/* w:transfer(e, other [, parent]): e's subtree moved into `other` (keel_transfer); returns its
 * handle there. e must be of w and parent of `other` (a handle of another world is stale). */
static int w_transfer(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel_lua_entity *h = keel__lua_check_entity_of(L, 2, lw->w, "the entity");
    keel_lua_world *to = keel__lua_checklw(L, 3);
    keel_entity parent = KEEL_NO_ENTITY;
    if (!lua_isnoneornil(L, 4)) parent = keel__lua_check_entity_of(L, 4, to->w, "the parent")->e;
    if (keel__lua_in_callback(lw->ctx, lw->w) || keel__lua_in_callback(to->ctx, to->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "w:transfer refuses while a callback transaction is open");
    keel_entity out = KEEL_NO_ENTITY;
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel_transfer(lw->w, h->e, to->w, parent, &out, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, NULL);
    keel__lua_push_entity(L, 3, out);
    return 1;
}

/* w:play() / w:stop(): play mode (keel_world_play / keel_world_stop). After stop the World
 * handle itself stays good (its epoch follows the world's); every other handle is stale. */
static int w_play(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "w:play refuses while a callback transaction is open");
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel_world_play(lw->w, &d), &d, NULL);
    return 0;
}

/* w:stop() -> the refusals of what w:keep marked (a list of error objects, empty when all of it
 * was written back). What was written is one entry ("keep play changes") of every keel.history
 * bound to w (keel.history._record, when that module is loaded), and the inverse is w:stop's
 * second result for a caller keeping a history of its own (the channel). */
static int w_stop(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "w:stop refuses while a callback transaction is open");
    if (keel__lua_in_finalizer(L)) /* the call it interrupts may hold the world's records, which stop replaces */
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "w:stop refuses inside a __gc finalizer");
    keel_diags d, refused;
    keel_diags_init(&d);
    keel_diags_init(&refused);
    keel_cmd inverse = { 0 };
    KEEL_LUA_ENTER(L, lw->ctx); /* on_destroy and awake of what only one of the two worlds holds */
    keel_status s = keel__world_stop(lw->w, &inverse, &refused, KEEL_SEV_ERROR, &d);
    KEEL_LUA_LEAVE();
    lw->epoch = keel_world_epoch(lw->w);
    if (s != KEEL_OK) keel_diags_free(&refused);
    keel__lua_check(L, s, &d, &inverse);
    keel__lua_push_diags(L, &refused);
    keel_diags_free(&refused);
    if (inverse.type == KEEL_CMD_NONE) {
        lua_pushnil(L);
        return 2;
    }
    keel__lua_push_cmd(L, &inverse);
    int cmd = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    if (lua_getfield(L, -1, "keel.history") == LUA_TTABLE && lua_getfield(L, -1, "_record") == LUA_TFUNCTION) {
        lua_pushvalue(L, 1);
        lua_pushvalue(L, cmd);
        lua_pushliteral(L, "keep play changes");
        lua_call(L, 3, 0);
    }
    lua_settop(L, cmd);
    return 2;
}

/* w:keep(e [, kind [, slot]]) while playing: e (or its component) carried back at stop;
 * w:_unkeep(...) takes that back (the inspector's Keep toggle). */
static int keep_or_not(lua_State *L, bool on, const char *what)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (!keel_world_playing(lw->w))
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "%s works only while the world is playing (w:play() first)", what);
    keel_lua_entity *h = keel__lua_check_entity_of(L, 2, lw->w, "the entity");
    const char *kind = lua_isnoneornil(L, 3) ? NULL : keel__lua_checkkey(L, 3);
    uint32_t slot = KEEL_SLOT_AUTO;
    if (!lua_isnoneornil(L, 4)) {
        int isint = 0;
        lua_Integer n = lua_tointegerx(L, 4, &isint);
        if (lua_type(L, 4) != LUA_TNUMBER || !isint || n < 0 || n >= (lua_Integer)UINT32_MAX || !kind)
            return keel__lua_argerror(L, 3, "a slot must be a non-negative integer after a kind");
        slot = (uint32_t)n;
    }
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel__world_keep(lw->w, h->e, kind, slot, on, &d), &d, NULL);
    return 0;
}

static int w_keep(lua_State *L) { return keep_or_not(L, true, "w:keep"); }
static int w__unkeep(lua_State *L) { return keep_or_not(L, false, "w:_unkeep"); }

static const luaL_Reg world_methods[] = {
    { "spawn", keel__lua_w_spawn }, { "find", w_find }, { "step", w_step }, { "run", w_run },
    { "errors", w_errors }, { "warnings", w_warnings }, { "dump", w_dump }, { "save", w_save }, { "save_async", keel__lua_w_save_async },
    { "close", w_close }, { "transfer", w_transfer }, { "play", w_play }, { "stop", w_stop }, { "keep", w_keep }, { "_unkeep", w__unkeep }, { "lift", keel__lua_w_lift }, { "broadcast", keel__lua_w_broadcast },
    { "_spawn", keel__lua_w__spawn }, { "_set_revision", w__set_revision }, { "_mark_saved", w__mark_saved }, { "_revision_mark", w__revision_mark }, { NULL, NULL }
};

/* w.key past the methods (the __index of the World's methods table, argument 1, whose metatable
 * holds [1] = the World): its properties; nil for anything else, as before. */
static int world_props(lua_State *L)
{
    if (!lua_getmetatable(L, 1) || lua_rawgeti(L, -1, 1) != LUA_TUSERDATA) {
        lua_pushnil(L);
        return 1;
    }
    int wi = lua_gettop(L);
    keel_lua_world *lw = keel__lua_testudata(L, wi, &keel__lua_mt_world);
    const char *k = lw && lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
    if (k && lw->w) {
        if (strcmp(k, "name") == 0) { lua_pushstring(L, keel_world_name(lw->w)); return 1; }
        if (strcmp(k, "uuid") == 0) {
            char u[37];
            keel_uuid_format(keel_world_uuid(lw->w), u);
            lua_pushstring(L, u);
            return 1;
        }
        if (strcmp(k, "revision") == 0) { lua_pushinteger(L, (lua_Integer)keel_world_revision(lw->w)); return 1; }
        if (strcmp(k, "root") == 0) { keel__lua_push_entity(L, wi, keel_world_root(lw->w)); return 1; }
        if (strcmp(k, "playing") == 0) { lua_pushboolean(L, keel_world_playing(lw->w)); return 1; }
        if (strcmp(k, "settings") == 0) { keel__lua_push_settings(L, wi); return 1; }
        if (strcmp(k, "profiling") == 0) { lua_pushboolean(L, keel_world_stats_enabled(lw->w)); return 1; }
        if (strcmp(k, "seed") == 0) { lua_pushinteger(L, (lua_Integer)keel_world_seed(lw->w)); return 1; }
        if (strcmp(k, "saved_revision") == 0) { lua_pushinteger(L, (lua_Integer)lw->saved_revision); return 1; }
        if (strcmp(k, "dirty") == 0) {
            lua_pushboolean(L, keel_world_revision(lw->w) != lw->saved_revision);
            return 1;
        }
        if (strcmp(k, "path") == 0) {
            if (lw->path) lua_pushstring(L, lw->path);
            else lua_pushnil(L);
            return 1;
        }
    }
    lua_pushnil(L);
    return 1;
}

static int world_newindex(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "name") == 0) {
        if (lua_type(L, 3) != LUA_TSTRING)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w.name must be a string, got %s", luaL_typename(L, 3));
        if (keel__lua_has_nul(L, 3)) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w.name holds a NUL byte");
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = keel_world_set_name(lw->w, lua_tostring(L, 3), &d);
        keel__lua_check(L, s, &d, NULL);
        return 0;
    }
    if (k && strcmp(k, "profiling") == 0) return keel__lua_stats_newindex(L, lw);
    if (k && strcmp(k, "seed") == 0) {
        if (!lua_isinteger(L, 3))
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w.seed must be an integer, got %s", luaL_typename(L, 3));
        keel__lua_world_writable(L, lw);
        keel_world_set_seed(lw->w, (int64_t)lua_tointeger(L, 3));
        return 0;
    }
    if (k && (strcmp(k, "uuid") == 0 || strcmp(k, "root") == 0 || strcmp(k, "revision") == 0 ||
              strcmp(k, "saved_revision") == 0 || strcmp(k, "dirty") == 0 || strcmp(k, "path") == 0 ||
              strcmp(k, "settings") == 0))
        return keel__lua_raisef(L, KEEL_UNSUPPORTED, "w.%s is read-only", k);
    return keel__lua_raisef(L, KEEL_NOT_FOUND, "a world has no field '%s'", k ? k : luaL_typename(L, 2));
}

/* ---- module functions: keel.world, keel.load, keel.parse ---- */

static int k_world(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (!lua_isnoneornil(L, 1) && lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "world: a name expected, got %s", luaL_typename(L, 1));
    if (!lua_isnoneornil(L, 1) && keel__lua_has_nul(L, 1))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "world: a name holds a NUL byte");
    if (!lua_isnoneornil(L, 1) && !keel__utf8_valid(lua_tostring(L, 1)))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "world: a scene name must be valid UTF-8");
    const char *name = luaL_optstring(L, 1, "");
    size_t len = strlen(name), limit = keel_limits_default().string_length;
    if (len > limit) /* what keel.load would refuse: keel_world_new would make it "" */
        return keel__lua_raisef(L, KEEL_LIMIT_EXCEEDED, "world: a scene name of %zu bytes is longer than the limit (%zu bytes)",
                               len, limit);
    keel_world *w = keel_world_new(name);
    if (!w) return luaL_error(L, "out of memory");
    keel__lua_push_world(L, ctx, w, true);
    return 1;
}

static const luaL_Reg module_funcs[] = {
    { "world", k_world }, { "load", keel__lua_k_load }, { "parse", keel__lua_k_parse }, { NULL, NULL }
};

/* Expects [module, ctx] on top; registers the functions and metatables; pops ctx. */
void keel__lua_open_world(lua_State *L)
{
    luaL_setfuncs(L, module_funcs, 1);
    static const luaL_Reg world_mt[] = {
        { "__newindex", world_newindex }, { "__gc", world_gc }, { "__close", world_close },
        { "__tostring", world_tostring }, { NULL, NULL }
    };
    keel__lua_newmt(L, &keel__lua_mt_world);
    luaL_setfuncs(L, world_mt, 0);
    luaL_newlib(L, world_methods);
    luaL_setfuncs(L, keel__lua_query_methods, 0);   /* entities, each, query, count */
    luaL_setfuncs(L, keel__lua_command_methods, 0); /* _apply */
    luaL_setfuncs(L, keel__lua_settings_methods, 0); /* _settings, _set_setting */
    luaL_setfuncs(L, keel__lua_rescene_methods, 0); /* watch, _rebase */
    luaL_setfuncs(L, keel__lua_timer_world_methods, 0); /* after, every */
    luaL_setfuncs(L, keel__lua_prefab_methods, 0);  /* instantiate */
    luaL_setfuncs(L, keel__lua_system_world_methods, 0); /* _atomic, _runnable, _fault_system */
    luaL_setfuncs(L, keel__lua_columns_world_methods, 0); /* _columns */
    luaL_setfuncs(L, keel__lua_transform_world_methods, 0); /* snapshot */
    luaL_setfuncs(L, keel__lua_stats_world_methods, 0); /* stats, _stats_system */
    luaL_setfuncs(L, keel__lua_replay_world_methods, 0); /* random */
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &world_methods_key); /* copied into each World's own (world_mt) */
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    keel__lua_open_query(L);
    keel__lua_open_command(L);
    keel__lua_open_settings(L);
    keel__lua_open_timer(L);
    keel__lua_open_lift(L);
}
