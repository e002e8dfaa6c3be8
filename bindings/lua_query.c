/* lua_query.c — w:entities(), w:each(), w:query(), w:count(): iterators over a snapshot held by
 * a to-be-closed userdata (keel.Query). */
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"

typedef struct liter {
    keel_lua_world *lw;
    size_t n, i;
    keel_entity *ents;
    uint32_t *slots;     /* each: the slot per row */
    keel_kind_id *kinds; /* each: 1 kind; query: nk kinds */
    size_t nk;
    int mode;            /* 0 entities, 1 each, 2 query */
    bool all;            /* each/query: disabled entities and components too */
} liter;

/* Takes a trailing { all = true } off the arguments (gameplay.md: each, query and count skip
 * what is disabled unless asked); returns whether it asked for all. */
static bool take_all(lua_State *L)
{
    int top = lua_gettop(L);
    if (top < 2 || lua_type(L, top) != LUA_TTABLE) return false;
    lua_getfield(L, top, "all");
    bool all = lua_toboolean(L, -1);
    lua_pop(L, 2);
    return all;
}

/* Whether component c counts for each/query/count: enabled, its entity and ancestors too. */
static bool counts(keel_world *w, keel_comp c, bool all)
{
    return all || (keel_comp_enabled(w, c) && keel_entity_active(w, c.entity));
}

static int iter_close(lua_State *L)
{
    liter *it = keel__lua_checkudata(L, 1, &keel__lua_mt_iter);
    free(it->ents);
    free(it->slots);
    free(it->kinds);
    it->ents = NULL;
    it->slots = NULL;
    it->kinds = NULL;
    it->n = it->i = 0;
    return 0;
}

static int iter_tostring(lua_State *L)
{
    liter *it = keel__lua_checkudata(L, 1, &keel__lua_mt_iter);
    if (!it->ents && !it->n) lua_pushliteral(L, "keel.Query (closed)");
    else lua_pushfstring(L, "keel.Query (%d of %d)", (int)it->i, (int)it->n);
    return 1;
}

static int iter_next(lua_State *L)
{
    liter *it = lua_touserdata(L, lua_upvalueindex(1));
    keel_world *w = it->lw->w;
    if (!w) return 0;
    lua_getiuservalue(L, lua_upvalueindex(1), 1);
    int widx = lua_gettop(L);
    while (it->i < it->n) {
        size_t i = it->i++;
        keel_entity e = it->ents[i];
        if (!keel_alive(w, e)) continue;
        if (it->mode == 0) {
            keel__lua_push_entity(L, widx, e);
            return 1;
        }
        if (it->mode == 1) {
            keel_comp c = { e, it->kinds[0], it->slots[i] };
            if (!keel_comp_alive(w, c) || !counts(w, c, it->all)) continue;
            keel__lua_push_entity(L, widx, e);
            keel__lua_push_comp(L, widx, c, NULL);
            return 2;
        }
        bool all = true;
        luaL_checkstack(L, (int)it->nk + 2, "too many kinds");
        keel__lua_push_entity(L, widx, e);
        for (size_t k = 0; k < it->nk && all; k++) {
            keel_comp c;
            if (!keel_get_comp(w, e, it->kinds[k], KEEL_SLOT_AUTO, &c) || !counts(w, c, it->all)) all = false;
            else keel__lua_push_comp(L, widx, c, NULL);
        }
        if (all) return 1 + (int)it->nk;
        lua_settop(L, widx);
    }
    return 0;
}

/* Pushes next, nil, nil, closing value. */
static liter *push_iter(lua_State *L, keel_lua_world *lw, int mode)
{
    liter *it = lua_newuserdatauv(L, sizeof *it, 1);
    memset(it, 0, sizeof *it);
    it->lw = lw;
    it->mode = mode;
    keel__lua_setmt(L, &keel__lua_mt_iter);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    return it;
}

static int finish_iter(lua_State *L)
{
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, iter_next, 1);
    lua_insert(L, -2);
    lua_pushnil(L);
    lua_insert(L, -2);
    lua_pushnil(L);
    lua_insert(L, -2);
    return 4;
}

static void *xcalloc(lua_State *L, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) luaL_error(L, "out of memory");
    return p;
}

static int w_entities(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    liter *it = push_iter(L, lw, 0);
    size_t n = keel_world_entity_count(lw->w);
    it->ents = xcalloc(L, n, sizeof *it->ents);
    for (keel_entity e = keel_next(lw->w, 0); e && it->n < n; e = keel_next(lw->w, e)) it->ents[it->n++] = e;
    return finish_iter(L);
}

static keel_kind_id check_kind(lua_State *L, int idx)
{
    keel_kind_id k = keel_kind_find(keel__lua_checkkey(L, idx));
    if (!k) keel_lua_raisef(L, KEEL_NOT_FOUND, "no kind '%s'", lua_tostring(L, idx));
    return k;
}

static int w_each(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    bool all = take_all(L);
    keel_kind_id k = check_kind(L, 2);
    liter *it = push_iter(L, lw, 1);
    it->all = all;
    size_t n = keel_storage_count(lw->w, k);
    it->ents = xcalloc(L, n, sizeof *it->ents);
    it->slots = xcalloc(L, n, sizeof *it->slots);
    it->kinds = xcalloc(L, 1, sizeof *it->kinds);
    it->kinds[0] = k;
    for (size_t i = 0; i < n; i++) {
        it->ents[i] = keel_storage_owner(lw->w, k, i);
        it->slots[i] = keel_storage_slot(lw->w, k, i);
    }
    it->n = n;
    return finish_iter(L);
}

static int w_query(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    bool all = take_all(L);
    int nk = lua_gettop(L) - 1;
    if (nk < 1) return keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "query: at least one kind expected");
    for (int i = 0; i < nk; i++) check_kind(L, i + 2);
    liter *it = push_iter(L, lw, 2);
    it->all = all;
    it->kinds = xcalloc(L, (size_t)nk, sizeof *it->kinds);
    it->nk = (size_t)nk;
    for (int i = 0; i < nk; i++) it->kinds[i] = keel_kind_find(lua_tostring(L, i + 2));
    keel_query *q = keel_query_new(lw->w, it->kinds, it->nk);
    if (!q) return luaL_error(L, "out of memory");
    size_t n = keel_query_update(q);
    it->ents = calloc(n ? n : 1, sizeof *it->ents);
    if (it->ents)
        for (size_t i = 0; i < n; i++) it->ents[i] = keel_query_entity(q, i);
    keel_query_free(q);
    if (!it->ents) return luaL_error(L, "out of memory");
    it->n = n;
    return finish_iter(L);
}

static int w_count(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_isnoneornil(L, 2)) {
        lua_pushinteger(L, (lua_Integer)keel_world_entity_count(lw->w));
        return 1;
    }
    bool all = take_all(L);
    keel_kind_id k = check_kind(L, 2);
    /* storage holds the root's components too; the root is not an entity here */
    size_t total = keel_storage_count(lw->w, k), n = 0;
    keel_entity root = keel_world_root(lw->w);
    for (size_t i = 0; i < total; i++) {
        keel_entity e = keel_storage_owner(lw->w, k, i);
        if (!e || e == root) continue;
        if (counts(lw->w, (keel_comp){ e, k, keel_storage_slot(lw->w, k, i) }, all)) n++;
    }
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}


const luaL_Reg keel__lua_query_methods[] = {
    { "entities", w_entities }, { "each", w_each }, { "query", w_query }, { "count", w_count }, { NULL, NULL }
};

void keel__lua_open_query(lua_State *L)
{
    static const luaL_Reg iter_mt[] = {
        { "__gc", iter_close }, { "__close", iter_close }, { "__tostring", iter_tostring }, { NULL, NULL }
    };
    keel__lua_newmt(L, &keel__lua_mt_iter);
    luaL_setfuncs(L, iter_mt, 0);
    lua_pop(L, 1);
}
