/* lua_spawn.c — w:spawn: a spec's components checked as their adds would be before the entity
 * exists, then added all or nothing; and the spawn handles, the weak table a new entity's handle
 * waits in until someone asks for the entity again. */
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__kind_declarations */

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
            keel__lua_cache_put(L, lw, lua_absindex(L, -2), h->e);
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
bool keel__lua_spawn_take(lua_State *L, int world_idx, const keel_lua_world *lw, keel_entity e)
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

/* ---- spawn ---- */

static keel_entity opt_parent(lua_State *L, int idx, keel_lua_world *lw)
{
    if (lua_isnoneornil(L, idx)) return KEEL_NO_ENTITY;
    return keel__lua_check_entity_of(L, idx, lw->w, "the parent")->e;
}

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
        keel__lua_check_keys(L, 2, "spawn", spawn_keys);
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
        if (i < 0) keel__lua_check_keys(L, 2, "spawn", spawn_keys); /* raises */
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
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: enabled must be a boolean, got %s", luaL_typename(L, 5));
        if (!lua_isnil(L, 3) && lua_type(L, 3) != LUA_TSTRING)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: name must be a string");
        if (!lua_isnil(L, 3) && keel__lua_has_nul(L, 3))
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: a name holds a NUL byte");
        name = lua_isnil(L, 3) ? "" : lua_tostring(L, 3);
        parent = opt_parent(L, 4, lw);
        if (!lua_isnil(L, 6) && lua_type(L, 6) != LUA_TTABLE)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: components must be an array");
    } else if (t2 == LUA_TSTRING) {
        size_t len;
        name = lua_tolstring(L, 2, &len);
        if (strlen(name) != len) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: a name holds a NUL byte");
    } else if (t2 != LUA_TNONE && t2 != LUA_TNIL) {
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "spawn: a name or a spec table expected, got %s", luaL_typename(L, 2));
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
        if (!spawn_precheck(L, 6, lw, &plan, &d)) return keel__lua_raise(L, keel_diags_status(&d), &d);
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
        keel__lua_entity_handle(L, 1, lw, e);
        spawn_put(L, 1, lw, e);
    }
    if (!want_inverse) return 1;
    keel__lua_push_cmd(L, &inv);
    return 2;
}

int keel__lua_w_spawn(lua_State *L) { return do_spawn(L, false); }
int keel__lua_w__spawn(lua_State *L) { return do_spawn(L, true); }
