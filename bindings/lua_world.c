/* lua_world.c — the World type (keel.World): handles, spawn, step and run, dump and save,
 * and the module functions keel.world, keel.load, keel.parse. */
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "lua_internal.h"
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
    keel_lua_world *lw = lua_newuserdatauv(L, sizeof *lw, 5); /* 5: the spawn handles (see do_spawn), made on first use */
    memset(lw, 0, sizeof *lw);
    lw->ctx = ctx;
    lw->owned = owned;
    world_mt(L);
    lua_newtable(L); /* entity handle cache: [index + 1] = handle (see keel__lua_push_entity_cached) */
    lua_setiuservalue(L, -2, 1);
    handle_mt(L, &keel__lua_mt_entity, 3);
    handle_mt(L, &keel__lua_mt_comp, 4);
    lw->w = w; /* only now: a memory error above leaves a closed world, never a leak */
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

/* Before a load: collect the worlds hooks wrap. After: close those that are not the result
 * (a failed load's candidate is freed by the core; its handles must go stale, not dangle). */
int keel__lua_begin_load(lua_State *L, keel_lua_ctx *ctx)
{
    int prev = ctx->loading_ref;
    lua_newtable(L);
    ctx->loading_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return prev;
}

void keel__lua_end_load(lua_State *L, keel_lua_ctx *ctx, int prev, keel_world *result)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->loading_ref);
    size_t n = lua_rawlen(L, -1);
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, (lua_Integer)i);
        keel_lua_world *lw = lua_touserdata(L, -1);
        if (lw && lw->w && lw->w != result) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->worlds_ref);
            lua_pushnil(L);
            lua_rawsetp(L, -2, lw->w);
            lua_pop(L, 1);
            lw->w = NULL;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    luaL_unref(L, LUA_REGISTRYINDEX, ctx->loading_ref);
    ctx->loading_ref = prev;
}

void keel__lua_push_world_of(lua_State *L, keel_lua_ctx *ctx, keel_world *w)
{
    keel__lua_push_world(L, ctx, w, false);
}

keel_lua_world *keel__lua_checklw(lua_State *L, int idx)
{
    keel_lua_world *lw = keel__lua_checkudata(L, idx, &keel__lua_mt_world);
    if (!lw->w) keel_lua_raisef(L, KEEL_NOT_FOUND, "the world is closed");
    if (keel_world_epoch(lw->w) != lw->epoch) keel_lua_raisef(L, KEEL_NOT_FOUND, "the world handle is stale");
    return lw;
}

keel_world *keel_lua_checkworld(lua_State *L, int idx)
{
    return keel__lua_checklw(L, idx)->w;
}

static int world_gc(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checkudata(L, 1, &keel__lua_mt_world);
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
static void cache_put(lua_State *L, keel_lua_world *lw, int cache, keel_entity e)
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

/* Pushes a new handle of e (not cached). */
static keel_lua_entity *entity_handle(lua_State *L, int world_idx, keel_lua_world *lw, keel_entity e)
{
    keel_lua_entity *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->lw = lw;
    h->e = e;
    lua_getiuservalue(L, world_idx, 3); /* the World's Entity metatable: it keeps the World alive */
    lua_setmetatable(L, -2);
    return h;
}

/* The spawn handles: w:spawn's handle of a new entity goes to a small weak-valued table (World
 * user value 5, slot = entity index modulo its size), not the cache. Most are dropped at once
 * (`w:spawn("e"):add(...)`): kept strongly, each would stay for the collector to traverse at
 * every cycle while its entity lives. One that is held stays in its slot and is the one handed
 * out next (then moved to the cache); one that is not is collected, and whoever asks next gets a
 * new one: nobody holds the old one to compare it with. A handle still there when a later spawn
 * takes its slot moves to the cache first, so a held one is never lost. */
#define SPAWN_SLOTS_MAX 4096

/* The slot of entity index i in a table of lw->spawn_cap slots. */
static lua_Integer spawn_slot(const keel_lua_world *lw, uint32_t i)
{
    return (lua_Integer)(i & (uint32_t)(lw->spawn_cap - 1)) + 1;
}

/* Pushes the spawn handles' table, made (or grown, up to SPAWN_SLOTS_MAX) to have a slot of its
 * own for index i when it can. Only ever set within its array part: a key set outside it would
 * have Lua rehash it into a hash part, most of its values being collected. */
static void spawn_table(lua_State *L, int world_idx, keel_lua_world *lw, uint32_t i)
{
    if (lua_getiuservalue(L, world_idx, 5) == LUA_TTABLE && (i < lw->spawn_cap || lw->spawn_cap >= SPAWN_SLOTS_MAX))
        return;
    lua_pop(L, 1);
    size_t cap = lw->spawn_cap ? lw->spawn_cap * 2 : 64;
    while (cap <= i && cap < SPAWN_SLOTS_MAX) cap *= 2;
    lua_createtable(L, (int)cap, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lw->ctx->worlds_ref);
    if (!lua_getmetatable(L, -1)) lua_pushnil(L); /* { __mode = "v" }: the worlds table's, shared */
    lua_remove(L, -2);
    lua_setmetatable(L, -2);
    /* Nothing below allocates. What is there now (a finalizer run by the allocations above may have
     * spawned into this world, and grown the table itself) moves to its slot in the new one. */
    size_t old = lw->spawn_cap;
    if (old >= cap) { /* grown as far meanwhile: that one serves */
        lua_pop(L, 1);
        lua_getiuservalue(L, world_idx, 5);
        return;
    }
    lw->spawn_cap = cap;
    if (lua_getiuservalue(L, world_idx, 5) == LUA_TTABLE) {
        for (size_t k = 1; k <= old; k++) {
            if (lua_rawgeti(L, -1, (lua_Integer)k) == LUA_TUSERDATA) {
                const keel_lua_entity *h = lua_touserdata(L, -1);
                lua_rawseti(L, -3, spawn_slot(lw, (uint32_t)h->e)); /* old slots are distinct mod cap */
            } else {
                lua_pop(L, 1);
            }
        }
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, world_idx, 5);
}

/* Keeps the new handle on top (of entity e, just spawned) in its slot; the one there before,
 * when still held and its entity alive, moves to the cache. */
static void spawn_put(lua_State *L, int world_idx, keel_lua_world *lw, keel_entity e)
{
    spawn_table(L, world_idx, lw, (uint32_t)e);
    lua_Integer slot = spawn_slot(lw, (uint32_t)e);
    if (lua_rawgeti(L, -1, slot) == LUA_TUSERDATA) {
        const keel_lua_entity *h = lua_touserdata(L, -1);
        if (keel_alive(lw->w, h->e) && !keel__lua_gen_cached(lw, h->e)) {
            lua_getiuservalue(L, world_idx, 1);
            lua_insert(L, -2);
            cache_put(L, lw, lua_absindex(L, -2), h->e);
            lua_pop(L, 3);
            /* cache_put allocates: a finalizer may have spawned into this world meanwhile */
            spawn_table(L, world_idx, lw, (uint32_t)e);
            slot = spawn_slot(lw, (uint32_t)e);
            lua_pushnil(L);
        }
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, slot);
    lua_pop(L, 1);
}

/* e's handle kept by w:spawn (spawn_put), pushed; false (nothing pushed) when there is none. */
static bool spawn_take(lua_State *L, int world_idx, const keel_lua_world *lw, keel_entity e)
{
    if (!lw->spawn_cap) return false;
    lua_getiuservalue(L, world_idx, 5);
    if (lua_rawgeti(L, -1, spawn_slot(lw, (uint32_t)e)) == LUA_TUSERDATA) {
        const keel_lua_entity *h = lua_touserdata(L, -1);
        if (h->e == e) { /* not another entity's (or an earlier one's at this index) */
            lua_remove(L, -2);
            return true;
        }
    }
    lua_pop(L, 2);
    return false;
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
    if (!spawn_take(L, world_idx, lw, e)) entity_handle(L, world_idx, lw, e);
    cache_put(L, lw, cache, e);
}

void keel__lua_push_entity(lua_State *L, int world_idx, keel_entity e)
{
    world_idx = lua_absindex(L, world_idx);
    lua_getiuservalue(L, world_idx, 1);
    keel__lua_push_entity_cached(L, world_idx, lua_gettop(L), e);
    lua_remove(L, -2);
}

/* ---- spawn ---- */

static keel_entity opt_parent(lua_State *L, int idx, keel_lua_world *lw)
{
    if (lua_isnoneornil(L, idx)) return KEEL_NO_ENTITY;
    keel_lua_entity *p = keel__lua_checkentity(L, idx);
    if (p->lw != lw) keel_lua_raisef(L, KEEL_NOT_FOUND, "stale handle: the parent belongs to another world");
    return p->e;
}

static void check_keys(lua_State *L, int t, const char *what, const char *const *known);
static const char *const spawn_keys[] = { "name", "parent", "enabled", "components", NULL };

/* True when k is among the first n kinds of ks. */
static bool spec_in(keel_kind_id k, const keel_kind_id *ks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ks[i] == k) return true;
    return false;
}

/* Pushes the body of component item `item` (the i-th of a spawn spec): the item itself
 * ({ "kind", field = value }) or a nested table ({ "kind", { field = value } }, a form
 * people write: taken, never dropped). Returns its index, or 0 with an error in d. */
static int spawn_body(lua_State *L, int item, size_t i, keel_diags *d)
{
    int t = lua_rawgeti(L, item, 2);
    if (t == LUA_TNIL && lua_rawlen(L, item) <= 1) {
        lua_pop(L, 1);
        lua_pushvalue(L, item);
        return lua_gettop(L);
    }
    bool named = false; /* field = value beside a nested body: which one was meant? */
    lua_pushnil(L);
    while (!named && lua_next(L, item)) {
        named = lua_type(L, -2) == LUA_TSTRING;
        lua_pop(L, 1);
    }
    if (named) lua_pop(L, 1);
    if (t != LUA_TTABLE || named || lua_rawlen(L, item) > 2) {
        lua_pop(L, 1);
        KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "components",
                   "components[%zu]: a body is { \"kind\", field = value } or { \"kind\", { field = value } }, "
                   "nothing else",
                   i);
        return 0;
    }
    return lua_gettop(L);
}

/* What a spawn's check keeps for the adds: each body is read and checked once. The first
 * SPAWN_KEEP components may keep their checked values (SPAWN_VALS in all) when the add can
 * take them as they are: a kind with no awake hook (which would see the body) nor validate,
 * no string values (borrowed from the spec's tables, which Lua code run by an earlier add could
 * change). The others are read again at their add, as before. */
#define SPAWN_KEEP 16
#define SPAWN_VALS 64
typedef struct spawn_plan {
    size_t used;             /* values kept */
    uint64_t stamp;          /* keel__kind_declarations() at the check: a redeclared kind keeps nothing */
    unsigned long entries;   /* keel__lua_entries after the check */
    keel_kind_id kind[SPAWN_KEEP];
    uint8_t first[SPAWN_KEEP], n[SPAWN_KEEP];
    bool kept[SPAWN_KEEP];
    int fields[SPAWN_VALS];
    keel_value vals[SPAWN_VALS];
} spawn_plan;

/* The kind a component entry names (its key at idx): by the key's address when seen before. */
static keel_kind_id spawn_kind(lua_State *L, keel_lua_ctx *ctx, int idx, const char *key)
{
    keel_kind_id k = keel__lua_kind_of(L, ctx, idx);
    return k ? k : keel_kind_find(key); /* a key with a NUL byte: named up to it, as always */
}

/* The kind key of spawn entry `item` (a key, or a table whose [1] is one: the string stays alive
 * in it), NULL when neither, and in *k its kind (KEEL_NO_KIND when none is declared). A number
 * in [1] is not a key, as a number entry is not: converted, its string would live only on the
 * stack slot popped here. */
static const char *spawn_entry(lua_State *L, keel_lua_ctx *ctx, int item, keel_kind_id *k)
{
    const char *key = NULL;
    *k = KEEL_NO_KIND;
    if (lua_type(L, item) == LUA_TSTRING) {
        key = lua_tostring(L, item);
        *k = spawn_kind(L, ctx, item, key);
    } else if (lua_type(L, item) == LUA_TTABLE) {
        if (lua_rawgeti(L, item, 1) == LUA_TSTRING) {
            key = lua_tostring(L, -1);
            *k = spawn_kind(L, ctx, -1, key);
        }
        lua_pop(L, 1);
    }
    return key;
}

/* Keeps the checked values of body `body` (the i-th component, kind k) in the plan when they may be. */
static bool spawn_keep(lua_State *L, keel_lua_world *lw, spawn_plan *p, size_t i, int body, keel_kind_id k,
                       const keel_kind_desc *kd, keel_diags *d)
{
    size_t room = SPAWN_VALS - p->used, n = 0;
    bool keep = i <= SPAWN_KEEP && !kd->hooks[KEEL_PHASE_AWAKE] && !kd->validate;
    if (!keel__lua_body_collect(L, lw->ctx, body, k, lw->w, d, p->fields + p->used, p->vals + p->used,
                                keep ? room : 0, &n))
        return false;
    if (!keep || n > room) return true;
    for (size_t j = 0; j < n; j++)
        if (p->vals[p->used + j].type == KEEL_T_STRING) return true;
    p->kept[i - 1] = true;
    p->kind[i - 1] = k;
    p->first[i - 1] = (uint8_t)p->used;
    p->n[i - 1] = (uint8_t)n;
    p->used += n;
    return true;
}

/* Checks a spawn spec's components (array at idx) as the adds in order would, before the
 * entity exists: a refused spec then runs no awake/on_destroy and bumps no revision.
 * What only the adds can tell (validate hooks, a raising awake) is still undone after. */
static bool spawn_precheck(lua_State *L, int idx, keel_lua_world *lw, spawn_plan *p, keel_diags *d)
{
    size_t n = lua_rawlen(L, idx);
    keel_kind_id few[16]; /* the usual spec; a longer one borrows a userdata (nothing leaks on a raise) */
    keel_kind_id *ks = n <= 16 ? few : lua_newuserdatauv(L, n * sizeof *ks, 0);
    bool ok = true;
    for (size_t i = 1; ok && i <= n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i);
        int item = lua_gettop(L);
        keel_kind_id k;
        const char *key = spawn_entry(L, lw->ctx, item, &k);
        const keel_kind_desc *kd = k ? keel_kind_describe(k) : NULL;
        if (!key) {
            KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "components", "components[%zu]: a kind key or { \"kind\", field = value } expected", i);
            ok = false;
        } else if (!k) {
            KEEL_ERROR(d, KEEL_NOT_FOUND, "components", "no kind '%s'", key);
            ok = false;
        } else if (kd->flags & KEEL_KIND_ROOT_ONLY) {
            KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s lives only on the scene root", key);
            ok = false;
        } else {
            size_t same = 0;
            for (size_t j = 0; j < i - 1; j++) same += ks[j] == k;
            if (same && kd->multiplicity == KEEL_ONE) {
                KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is already present (multiplicity one)", key);
                ok = false;
            } else if (kd->max && same >= kd->max) {
                KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s allows at most %u components", key, kd->max);
                ok = false;
            }
            for (size_t r = 0; ok && r < kd->requires_count; r++)
                if (!spec_in(keel_kind_find(kd->requires[r]), ks, i - 1)) {
                    KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s requires %s", key, kd->requires[r]);
                    ok = false;
                }
            for (size_t r = 0; ok && r < kd->rejects_count; r++)
                if (spec_in(keel_kind_find(kd->rejects[r]), ks, i - 1)) {
                    KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s rejects %s", key, kd->rejects[r]);
                    ok = false;
                }
            for (size_t j = 0; ok && j < i - 1; j++) {
                const keel_kind_desc *od = keel_kind_describe(ks[j]);
                for (size_t r = 0; ok && r < od->rejects_count; r++)
                    if (strcmp(od->rejects[r], key) == 0) {
                        KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s rejects %s", od->key, key);
                        ok = false;
                    }
            }
            if (ok && lua_type(L, item) == LUA_TTABLE) {
                int body = spawn_body(L, item, i, d);
                ok = body && spawn_keep(L, lw, p, i, body, k, kd, d);
                if (body) lua_pop(L, 1);
            }
            ks[i - 1] = k;
        }
        lua_pop(L, 1);
    }
    if (ks != few) lua_pop(L, 1);
    return ok;
}

/* Adds the components of a spawn spec (array at idx) to e; false with diags on the first failure. */
static bool spawn_components(lua_State *L, int idx, keel_lua_world *lw, keel_entity e, spawn_plan *p, keel_diags *d)
{
    size_t n = lua_rawlen(L, idx);
    bool fresh = true; /* no Lua code and no awake has run since the check: its kept values hold */
    for (size_t i = 1; i <= n; i++) {
        fresh = fresh && p->stamp == keel__kind_declarations() && p->entries == keel__lua_entries;
        if (fresh && i <= SPAWN_KEEP && p->kept[i - 1]) {
            if (keel__lua_add_values(lw->w, e, p->kind[i - 1], p->fields + p->first[i - 1], p->vals + p->first[i - 1],
                                     p->n[i - 1], NULL, d) != KEEL_OK)
                return false;
            continue;
        }
        lua_rawgeti(L, idx, (lua_Integer)i);
        keel_kind_id k;
        const char *key = spawn_entry(L, lw->ctx, lua_gettop(L), &k);
        int body = lua_type(L, -1) == LUA_TTABLE ? lua_gettop(L) : 0;
        if (!key) {
            KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "components", "components[%zu]: a kind key or { \"kind\", field = value } expected", i);
            lua_pop(L, 1);
            return false;
        }
        if (!k) {
            KEEL_ERROR(d, KEEL_NOT_FOUND, "components", "no kind '%s'", key);
            lua_pop(L, 1);
            return false;
        }
        if (body && !(body = spawn_body(L, body, i, d))) { /* prechecked: not reached */
            lua_pop(L, 1);
            return false;
        }
        const keel_kind_desc *kd = keel_kind_describe(k);
        if (kd->hooks[KEEL_PHASE_AWAKE] || kd->validate) fresh = false; /* Lua (or C) code may run in this add */
        keel_status s = keel__lua_add(L, lw->ctx, body ? body : lua_gettop(L) + 1, lw->w, e, k, KEEL_SLOT_AUTO, NULL, NULL, d);
        lua_pop(L, body ? 2 : 1);
        if (s != KEEL_OK) return false;
    }
    return true;
}

/* keel__lua_checklw for the hot path: a World is told by its user value 3 (its Entity metatable,
 * [1] = the World itself; no other userdata has a third user value), cheaper than the metatable's
 * type key. Anything else, closed or stale takes the general check, which raises as it did. */
static keel_lua_world *check_lw_fast(lua_State *L, int idx)
{
    int top = lua_gettop(L);
    keel_lua_world *lw = lua_touserdata(L, idx);
    if (lw && lua_type(L, idx) == LUA_TUSERDATA && lua_getiuservalue(L, idx, 3) == LUA_TTABLE &&
        lua_rawgeti(L, -1, 1) == LUA_TUSERDATA && lua_touserdata(L, -1) == (void *)lw) {
        lua_settop(L, top);
        if (lw->w && keel_world_epoch(lw->w) == lw->epoch) return lw;
    }
    lua_settop(L, top);
    return keel__lua_checklw(L, idx);
}

/* Reads a spawn spec's keys in one pass (name, parent, enabled, components into stack slots
 * 3 to 6; nil when absent); an unknown key or a positional entry raises, as check_keys says.
 * A spec with a metatable is read through it, as lua_getfield would. */
static void spawn_spec_keys(lua_State *L)
{
    lua_settop(L, 6);
    if (lua_getmetatable(L, 2)) {
        lua_pop(L, 1);
        check_keys(L, 2, "spawn", spawn_keys);
        for (int i = 0; spawn_keys[i]; i++) {
            lua_getfield(L, 2, spawn_keys[i]);
            lua_replace(L, 3 + i);
        }
        return;
    }
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        int i = -1;
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -2);
            for (int j = 0; i < 0 && spawn_keys[j]; j++)
                if (strcmp(k, spawn_keys[j]) == 0) i = j;
        }
        if (i < 0) check_keys(L, 2, "spawn", spawn_keys); /* raises */
        lua_replace(L, 3 + i);
    }
}

static int do_spawn(lua_State *L, bool want_inverse)
{
    keel_lua_world *lw = check_lw_fast(L, 1);
    const char *name = "";
    keel_entity parent = KEEL_NO_ENTITY;
    int spec = 0, t2 = lua_type(L, 2);
    if (t2 == LUA_TTABLE) {
        spec = 2;
        spawn_spec_keys(L); /* 3 name, 4 parent, 5 enabled, 6 components */
        if (!lua_isnil(L, 5) && !lua_isboolean(L, 5))
            return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: enabled must be a boolean, got %s", luaL_typename(L, 5));
        if (!lua_isnil(L, 3) && lua_type(L, 3) != LUA_TSTRING)
            return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: name must be a string");
        if (!lua_isnil(L, 3) && keel__lua_has_nul(L, 3))
            return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: a name holds a NUL byte");
        name = lua_isnil(L, 3) ? "" : lua_tostring(L, 3);
        parent = opt_parent(L, 4, lw);
        if (!lua_isnil(L, 6) && lua_type(L, 6) != LUA_TTABLE)
            return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: components must be an array");
    } else if (t2 == LUA_TSTRING) {
        size_t len;
        name = lua_tolstring(L, 2, &len);
        if (strlen(name) != len) return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: a name holds a NUL byte");
    } else if (t2 != LUA_TNONE && t2 != LUA_TNIL) {
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: a name or a spec table expected, got %s", luaL_typename(L, 2));
    }
    keel_diags d;
    keel_diags_init(&d);
    keel_cmd inv;
    if (want_inverse) memset(&inv, 0, sizeof inv); /* else never read */
    keel_entity e = KEEL_NO_ENTITY;
    bool comps = spec && lua_type(L, 6) == LUA_TTABLE;
    spawn_plan plan;
    if (comps) {
        plan.used = 0;
        memset(plan.kept, 0, sizeof plan.kept);
        if (!spawn_precheck(L, 6, lw, &plan, &d)) return keel_lua_raise(L, keel_diags_status(&d), &d);
        plan.stamp = keel__kind_declarations();
    }
    KEEL_LUA_ENTER(L, lw->ctx);
    plan.entries = keel__lua_entries;
    keel_status s = keel_spawn(lw->w, name, parent, NULL, &e, want_inverse ? &inv : NULL, &d);
    if (s == KEEL_OK && spec) {
        if (lua_type(L, 5) == LUA_TBOOLEAN && !lua_toboolean(L, 5)) s = keel_set_enabled(lw->w, e, false, NULL, &d);
        if (s == KEEL_OK && comps && !spawn_components(L, 6, lw, e, &plan, &d))
            s = keel_diags_status(&d) ? keel_diags_status(&d) : KEEL_INVALID_OPERATION;
        if (s != KEEL_OK) keel_destroy(lw->w, e, NULL, NULL); /* all or nothing */
    }
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, want_inverse ? &inv : NULL);
    if (keel__lua_gen_cached(lw, e)) { /* an awake asked for it already */
        lua_getiuservalue(L, 1, 1); /* the handle cache: under the handle, which is returned from the top */
        keel__lua_push_entity_cached(L, 1, lua_gettop(L), e);
    } else {
        entity_handle(L, 1, lw, e);
        spawn_put(L, 1, lw, e);
    }
    if (!want_inverse) return 1;
    keel__lua_push_cmd(L, &inv);
    return 2;
}

static int w_spawn(lua_State *L) { return do_spawn(L, false); }
static int w__spawn(lua_State *L) { return do_spawn(L, true); }

static int w_find(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "find: a UUID or a name expected, got %s", luaL_typename(L, 2));
    if (keel__lua_has_nul(L, 2)) return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "find: a name holds a NUL byte");
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

static keel_status step_once(lua_State *L, keel_lua_world *lw, double dt, keel_diags *d)
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
    keel_status s = keel_step(lw->w, dt, d);
    g_stepping--;
    KEEL_LUA_LEAVE();
    lua_settop(L, 1);
    return s;
}

static double check_dt(lua_State *L, int idx, keel_lua_world *lw)
{
    if (lua_isnoneornil(L, idx)) return keel_world_fixed_dt(lw->w);
    if (lua_type(L, idx) != LUA_TNUMBER)
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "dt must be a number, got %s", luaL_typename(L, idx));
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
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "run: frames must be a non-negative integer");
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
    if (s != KEEL_OK) return keel_lua_raise(L, s, &d);
    keel_diags_free(&d);
    lua_pushlstring(L, text, len);
    free(text);
    *box = NULL;
    return 1;
}

static int w_save(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "save: a path expected, got %s", luaL_typename(L, 2));
    if (keel__lua_has_nul(L, 2))
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "save: the path holds a NUL byte");
    keel__lua_refuse_in_callback(L, lw->w, "w:save");
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_scene_save(lw->w, lua_tostring(L, 2), &d);
    if (s != KEEL_OK) return keel_lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushboolean(L, 1);
    return 1;
}

/* w:close() and __close: frees the world now; its handles go stale. Refused (before anything is
 * freed) during its step and inside any of its callbacks: their callers go on using the world. */
static int w_close(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checkudata(L, 1, &keel__lua_mt_world);
    if (lw->w && (keel_world_in_callback(lw->w) || keel__lua_in_callback(lw->ctx, lw->w)))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION,
                               "w:close refuses while a callback transaction is open: a world cannot be closed "
                               "inside its own callbacks");
    if (lw->w && keel_world_in_step(lw->w))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "a world cannot be closed during its step");
    /* A finalizer may run in the middle of a call into this very world (w:spawn, e:add, ...):
     * freeing it there left that call on a NULL or freed world. It closes when collected. */
    if (lw->w && keel__lua_in_finalizer(L))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION,
                               "w:close refuses inside a __gc finalizer (it may run in the middle of a call into "
                               "the world); the world closes when it is collected");
    return world_gc(L);
}

/* __close: w:close under its own function value (the methods table holds w_close; a value found
 * in both would be named by the methods table alone in listings that walk them). */
static int world_close(lua_State *L) { return w_close(L); }

/* w:transfer(e, other [, parent]): e's subtree moved into `other` (keel_transfer); returns its
 * handle there. e must be of w and parent of `other` (a handle of another world is stale). */
static int w_transfer(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel_lua_entity *h = keel__lua_checkentity(L, 2);
    if (h->lw != lw) return keel_lua_raisef(L, KEEL_NOT_FOUND, "stale handle: the entity belongs to another world");
    keel_lua_world *to = keel__lua_checklw(L, 3);
    keel_entity parent = KEEL_NO_ENTITY;
    if (!lua_isnoneornil(L, 4)) {
        keel_lua_entity *p = keel__lua_checkentity(L, 4);
        if (p->lw != to)
            return keel_lua_raisef(L, KEEL_NOT_FOUND, "stale handle: the parent is not an entity of the destination world");
        parent = p->e;
    }
    if (keel__lua_in_callback(lw->ctx, lw->w) || keel__lua_in_callback(to->ctx, to->w))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "w:transfer refuses while a callback transaction is open");
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
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "w:play refuses while a callback transaction is open");
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel_world_play(lw->w, &d), &d, NULL);
    return 0;
}

static int w_stop(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "w:stop refuses while a callback transaction is open");
    if (keel__lua_in_finalizer(L)) /* the call it interrupts may hold the world's records, which stop replaces */
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "w:stop refuses inside a __gc finalizer");
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel_world_stop(lw->w, &d), &d, NULL);
    lw->epoch = keel_world_epoch(lw->w);
    return 0;
}

/* ---- lifts: w:lift(e) -> keel.Lift with :restore() and :discard() ---- */

static const keel_lua_type lift_type = { "keel.Lift" };

typedef struct llift { keel_lift *l; } llift; /* NULL once restored or discarded; user value 1: the World */

static int w_lift(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel_lua_entity *h = keel__lua_checkentity(L, 2);
    if (h->lw != lw) return keel_lua_raisef(L, KEEL_NOT_FOUND, "stale handle: the entity belongs to another world");
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "w:lift refuses while a callback transaction is open");
    llift *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->l = NULL;
    keel__lua_setmt(L, &lift_type);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel_lift_entity(lw->w, h->e, &u->l, &d), &d, NULL);
    return 1;
}

/* The open lift at idx, its World's ctx in *ctx: NotFound once its world is closed,
 * InvalidOperation once restored or discarded. */
static keel_lift *check_lift(lua_State *L, int idx, keel_lua_world **lw)
{
    llift *u = keel__lua_checkudata(L, idx, &lift_type);
    lua_getiuservalue(L, idx, 1);
    *lw = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (!*lw || !(*lw)->w) keel_lua_raisef(L, KEEL_NOT_FOUND, "the lift's world is closed");
    if (!u->l) keel_lua_raisef(L, KEEL_INVALID_OPERATION, "the lift was already restored or discarded");
    return u->l;
}

static int lift_end(lua_State *L, bool discard)
{
    keel_lua_world *lw;
    keel_lift *l = check_lift(L, 1, &lw);
    if (keel__lua_in_callback(lw->ctx, lw->w))
        return keel_lua_raisef(L, KEEL_INVALID_OPERATION, "%s refuses while a callback transaction is open",
                               discard ? "lift:discard" : "lift:restore");
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = discard ? keel_lift_discard(l, &d) : keel_lift_restore(l, &d);
    KEEL_LUA_LEAVE();
    if (s == KEEL_OK) ((llift *)lua_touserdata(L, 1))->l = NULL;
    keel__lua_check(L, s, &d, NULL);
    return 0;
}

static int lift_restore(lua_State *L) { return lift_end(L, false); }
static int lift_discard(lua_State *L) { return lift_end(L, true); }

static int lift_tostring(lua_State *L)
{
    llift *u = keel__lua_checkudata(L, 1, &lift_type);
    lua_pushstring(L, u->l ? "keel.Lift (open)" : "keel.Lift (closed)");
    return 1;
}

static const luaL_Reg world_methods[] = {
    { "spawn", w_spawn }, { "find", w_find }, { "step", w_step }, { "run", w_run },
    { "errors", w_errors }, { "warnings", w_warnings }, { "dump", w_dump }, { "save", w_save },
    { "close", w_close }, { "transfer", w_transfer }, { "play", w_play }, { "stop", w_stop }, { "lift", w_lift }, { "broadcast", keel__lua_w_broadcast },
    { "_spawn", w__spawn }, { NULL, NULL }
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
            return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "w.name must be a string, got %s", luaL_typename(L, 3));
        if (keel__lua_has_nul(L, 3)) return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "w.name holds a NUL byte");
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = keel_world_set_name(lw->w, lua_tostring(L, 3), &d);
        keel__lua_check(L, s, &d, NULL);
        return 0;
    }
    if (k && (strcmp(k, "uuid") == 0 || strcmp(k, "root") == 0 || strcmp(k, "revision") == 0))
        return keel_lua_raisef(L, KEEL_UNSUPPORTED, "w.%s is read-only", k);
    return keel_lua_raisef(L, KEEL_NOT_FOUND, "a world has no field '%s'", k ? k : luaL_typename(L, 2));
}

/* ---- module functions: keel.world, keel.load, keel.parse ---- */

static int k_world(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (!lua_isnoneornil(L, 1) && lua_type(L, 1) != LUA_TSTRING)
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "world: a name expected, got %s", luaL_typename(L, 1));
    if (!lua_isnoneornil(L, 1) && keel__lua_has_nul(L, 1))
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "world: a name holds a NUL byte");
    if (!lua_isnoneornil(L, 1) && !keel__utf8_valid(lua_tostring(L, 1)))
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "world: a scene name must be valid UTF-8");
    const char *name = luaL_optstring(L, 1, "");
    size_t len = strlen(name), limit = keel_limits_default().string_length;
    if (len > limit) /* what keel.load would refuse: keel_world_new would make it "" */
        return keel_lua_raisef(L, KEEL_LIMIT_EXCEEDED, "world: a scene name of %zu bytes is longer than the limit (%zu bytes)",
                               len, limit);
    keel_world *w = keel_world_new(name);
    if (!w) return luaL_error(L, "out of memory");
    keel__lua_push_world(L, ctx, w, true);
    return 1;
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t def)
{
    lua_getfield(L, t, k);
    size_t v = def;
    if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0) v = (size_t)lua_tointeger(L, -1);
    else if (!lua_isnil(L, -1)) keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "limits.%s must be a non-negative integer", k);
    lua_pop(L, 1);
    return v;
}

/* Raises InvalidArgument for a key of the table at t that is not among `known` (a typo
 * such as `entites` would otherwise load with the default silently). */
static void check_keys(lua_State *L, int t, const char *what, const char *const *known)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        size_t i = 0;
        while (k && known[i] && strcmp(known[i], k) != 0) i++;
        if (k && known[i]) {
            lua_pop(L, 1);
            continue;
        }
        /* say what is accepted: `w:spawn{ "Bob" }` is a positional entry, not a key named 'number' */
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (size_t j = 0; known[j]; j++) {
            luaL_addstring(&b, j ? ", " : "");
            luaL_addstring(&b, known[j]);
        }
        luaL_pushresult(&b);
        const char *keys = lua_tostring(L, -1);
        if (k) keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s: unknown key '%s' (it takes %s)", what, k, keys);
        int key_idx = lua_gettop(L) - 2, val_idx = lua_gettop(L) - 1;
        const char *shown = lua_type(L, val_idx) == LUA_TSTRING
            ? lua_pushfstring(L, " \"%s\"", lua_tostring(L, val_idx))
            : "";
        const char *named = strcmp(what, "spawn") == 0 && *shown ? " (a name goes as name = ...)" : "";
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT,
                        "%s: positional entry [%s]%s is not accepted%s: it takes the keys %s", what,
                        luaL_tolstring(L, key_idx, NULL), shown, named, keys);
    }
}

static const char *const opt_keys[] = { "strict", "assets", "limits", NULL };
static const char *const limit_keys[] = { "document_size", "entities", "components_per_entity", "body_size",
                                          "string_length", "nesting_depth", "hierarchy_depth", "collection_length", NULL };

static void read_opts_table(lua_State *L, int idx, keel_load_opts *o);

/* Reads opts { strict, assets, limits } at idx; assets loaded into *assets (caller frees).
 * With no opts.assets, a scene file (`scene` non-NULL) uses the manifest beside it, as the
 * keel program does; opts.assets = false uses none. */
keel_status keel__lua_read_opts(lua_State *L, int idx, const char *scene, keel_load_opts *o, keel_assets **assets,
                                keel_diags *d)
{
    *o = keel_load_opts_default();
    *assets = NULL;
    const char *given = NULL;
    bool beside = scene != NULL;
    if (!lua_isnoneornil(L, idx)) {
        read_opts_table(L, idx, o);
        lua_getfield(L, idx, "assets");
        if (lua_type(L, -1) == LUA_TSTRING && keel__lua_has_nul(L, -1))
            keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts.assets: the path holds a NUL byte");
        if (lua_type(L, -1) == LUA_TSTRING) given = lua_tostring(L, -1); /* stays on the stack */
        else if (!lua_isnil(L, -1) && !(lua_isboolean(L, -1) && !lua_toboolean(L, -1)))
            keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts.assets must be a path or false, got %s",
                            luaL_typename(L, -1));
        beside = beside && lua_isnil(L, -1);
    }
    char *path = given ? NULL : beside ? keel_assets_beside(scene) : NULL;
    keel_status s = KEEL_OK;
    if (given || path) {
        s = keel_assets_load(given ? given : path, assets, d);
        o->assets = *assets;
    }
    free(path);
    return s;
}

/* The checked parts of an opts table other than assets: strict and limits. */
static void read_opts_table(lua_State *L, int idx, keel_load_opts *o)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts must be a table, got %s", luaL_typename(L, idx));
    check_keys(L, idx, "opts", opt_keys);
    lua_getfield(L, idx, "strict");
    o->strict = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, idx, "limits");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TTABLE)
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts.limits must be a table, got %s", luaL_typename(L, -1));
    if (lua_type(L, -1) == LUA_TTABLE) {
        int t = lua_gettop(L);
        check_keys(L, t, "opts.limits", limit_keys);
        keel_limits *l = &o->limits;
        l->document_size = opt_size(L, t, "document_size", l->document_size);
        l->entities = opt_size(L, t, "entities", l->entities);
        l->components_per_entity = opt_size(L, t, "components_per_entity", l->components_per_entity);
        l->body_size = opt_size(L, t, "body_size", l->body_size);
        l->string_length = opt_size(L, t, "string_length", l->string_length);
        l->nesting_depth = opt_size(L, t, "nesting_depth", l->nesting_depth);
        l->hierarchy_depth = opt_size(L, t, "hierarchy_depth", l->hierarchy_depth);
        l->collection_length = opt_size(L, t, "collection_length", l->collection_length);
    }
    lua_pop(L, 1);
}

/* Pushes the world (with its load warnings) or nil, err. */
static int finish_load(lua_State *L, keel_lua_ctx *ctx, keel_status s, keel_world *w, keel_diags *d)
{
    if (s != KEEL_OK || !w) {
        keel_world_free(w);
        return keel_lua_fail(L, d);
    }
    keel__lua_push_world(L, ctx, w, true);
    keel__lua_push_diags(L, d);
    lua_setiuservalue(L, -2, 2);
    keel_diags_free(d);
    return 1;
}

static int k_load(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "load: a path expected, got %s", luaL_typename(L, 1));
    if (keel__lua_has_nul(L, 1))
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "load: the path holds a NUL byte");
    keel_diags d;
    keel_diags_init(&d);
    keel_load_opts o;
    keel_assets *assets;
    keel_status s = keel__lua_read_opts(L, 2, lua_tostring(L, 1), &o, &assets, &d);
    keel_world *w = NULL;
    if (s == KEEL_OK) {
        int prev = keel__lua_begin_load(L, ctx);
        KEEL_LUA_ENTER(L, ctx);
        s = keel_scene_load(lua_tostring(L, 1), &o, &w, &d);
        KEEL_LUA_LEAVE();
        keel__lua_end_load(L, ctx, prev, s == KEEL_OK ? w : NULL);
    }
    keel_assets_free(assets);
    return finish_load(L, ctx, s, w, &d);
}

static int k_parse(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "parse: YAML text expected, got %s", luaL_typename(L, 1));
    size_t len;
    const char *text = lua_tolstring(L, 1, &len);
    keel_diags d;
    keel_diags_init(&d);
    keel_load_opts o;
    keel_assets *assets;
    keel_status s = keel__lua_read_opts(L, 2, NULL, &o, &assets, &d);
    keel_world *w = NULL;
    if (s == KEEL_OK) {
        int prev = keel__lua_begin_load(L, ctx);
        KEEL_LUA_ENTER(L, ctx);
        s = keel_scene_parse(text, len, &o, &w, &d);
        KEEL_LUA_LEAVE();
        keel__lua_end_load(L, ctx, prev, s == KEEL_OK ? w : NULL);
    }
    keel_assets_free(assets);
    return finish_load(L, ctx, s, w, &d);
}

static const luaL_Reg module_funcs[] = {
    { "world", k_world }, { "load", k_load }, { "parse", k_parse }, { NULL, NULL }
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
    luaL_setfuncs(L, keel__lua_timer_world_methods, 0); /* after, every */
    luaL_setfuncs(L, keel__lua_prefab_methods, 0);  /* instantiate */
    luaL_setfuncs(L, keel__lua_system_world_methods, 0); /* _atomic, _runnable, _fault_system */
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &world_methods_key); /* copied into each World's own (world_mt) */
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    keel__lua_open_query(L);
    keel__lua_open_command(L);
    keel__lua_open_timer(L);
    static const luaL_Reg lift_mt[] = { { "__tostring", lift_tostring }, { NULL, NULL } };
    static const luaL_Reg lift_methods[] = { { "restore", lift_restore }, { "discard", lift_discard }, { NULL, NULL } };
    keel__lua_newmt(L, &lift_type);
    luaL_setfuncs(L, lift_mt, 0);
    luaL_newlib(L, lift_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}
