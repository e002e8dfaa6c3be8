/* lua_query.c — w:entities(), w:each(), w:query(), w:count(): iterators over a snapshot held by
 * a to-be-closed userdata (keel.Query). */
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__comp_info_get */

typedef struct liter {
    keel_lua_world *lw;
    size_t n, i;
    keel_entity *ents;
    uint32_t *slots;     /* each: the slot per row */
    keel_kind_id *kinds; /* each: 1 kind; query: nk kinds */
    size_t nk;
    int mode;            /* 0 entities, 1 each, 2 query */
    bool all;            /* each/query: disabled entities and components too */
    /* query: what is known of each row while keel__world_visibility(w) stays `vis` (its value at
     * w:query): KEPT counts, every kind at slot 0, its handles in the caches and stamped live;
     * SKIP does not count; CHECK unknown (found in full). Taken from the kept query when it was
     * found under the same value, and handed back to it when a pass ends under that value. */
    unsigned char *verdict;
    uint64_t vis;
    size_t qslot; /* the kept query: lw->queries[qslot] while its id is qid */
    uint64_t qid;
} liter;

enum { SKIP = 0, KEPT = 1, CHECK = 2 };
#define KEPT_KINDS 8 /* queries over more kinds take the full path every row */

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
    free(it->verdict);
    it->ents = NULL;
    it->slots = NULL;
    it->kinds = NULL;
    it->verdict = NULL;
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

/* The iterator function's upvalues: the keel.Query, the World, its entity handle cache, then
 * (each and query) the handle caches of the kinds it yields, up to UP_CACHES of them: reached
 * in place, nothing fetched per call. */
#define UP_ITER 1
#define UP_WORLD 2
#define UP_ENTS 3
#define UP_CACHES 64

/* Pushes the handle of ci, the k-th kind's. */
static void push_comp(lua_State *L, size_t k, const keel__comp_info *ci, uint64_t live)
{
    if (k < UP_CACHES)
        keel__lua_push_comp_fast(L, lua_upvalueindex(UP_WORLD), lua_upvalueindex(UP_ENTS + 1 + (int)k), ci, live);
    else
        keel__lua_push_comp_info(L, lua_upvalueindex(UP_WORLD), 0, ci);
}

static void verdict_keep(liter *it);

/* Row x's handles straight from the caches (its verdict says they are there, stamped live): the
 * entity's, then each kind's slot-0 one. False, nothing pushed, when a cache let one go (a sweep
 * drops only handles of what is gone, but a script can reach the component caches): the caller
 * takes the full path. Nothing here allocates, so no finalizer runs in between. */
static KEEL_LUA_INLINE bool push_kept(lua_State *L, const liter *it, keel_entity e)
{
    const keel_lua_world *lw = it->lw;
    uint32_t x = (uint32_t)e;
    if (!keel__lua_gen_cached(lw, e)) return false;
    if (lua_rawgeti(L, lua_upvalueindex(UP_ENTS), (lua_Integer)x + 1) != LUA_TUSERDATA) {
        lua_pop(L, 1);
        return false;
    }
    for (size_t k = 0; k < it->nk; k++)
        if (lua_rawgeti(L, lua_upvalueindex(UP_ENTS + 1 + (int)k), (lua_Integer)x + 1) != LUA_TUSERDATA) {
            lua_pop(L, (int)k + 2);
            return false;
        }
    return true;
}

/* The rest of a call of the iterator (iter_next takes a kept row itself). */
static KEEL_LUA_NOINLINE int iter_next_all(lua_State *L, liter *it)
{
    keel_world *w = it->lw->w;
    if (!w) return 0;
    int widx = lua_upvalueindex(UP_WORLD), cache = lua_upvalueindex(UP_ENTS);
    keel__comp_info few[8], *ci = it->nk <= 8 ? few : NULL;
    if (!ci) ci = lua_newuserdatauv(L, it->nk * sizeof *ci, 0); /* collected: nothing leaks on a raise */
    while (it->i < it->n) {
        size_t i = it->i++;
        keel_entity e = it->ents[i];
        if (it->mode != 2 && !keel_alive(w, e)) continue; /* query: keel__comp_info_row asks */
        if (it->mode == 0) {
            keel__lua_push_entity_cached(L, widx, cache, e);
            return 1;
        }
        if (it->mode == 1) {
            if (!keel__comp_info_get(w, e, it->kinds[0], it->slots[i], &ci[0]) ||
                !(it->all || (ci[0].enabled && keel_entity_active(w, e))))
                continue;
            keel__lua_push_entity_cached(L, widx, cache, e);
            push_comp(L, 0, &ci[0], keel__world_structure(w) + 1);
            return 2;
        }
        uint64_t vis = keel__world_visibility(w);
        unsigned char v = it->verdict && vis == it->vis ? it->verdict[i] : CHECK;
        if (v == SKIP) continue;
        if (v == KEPT && push_kept(L, it, e)) return 1 + (int)it->nk;
        if (!keel__comp_info_row(w, e, it->kinds, it->nk, it->all, ci)) {
            if (it->verdict && vis == it->vis) it->verdict[i] = SKIP;
            continue;
        }
        if (it->nk > 8) luaL_checkstack(L, (int)it->nk + 4, "too many kinds");
        keel__lua_push_entity_lw(L, it->lw, widx, cache, e);
        uint64_t live = keel__world_structure(w) + 1;
        bool slot0 = it->nk <= KEPT_KINDS;
        for (size_t k = 0; k < it->nk; k++) {
            push_comp(L, k, &ci[k], live);
            slot0 = slot0 && ci[k].c.slot == 0;
        }
        /* pushing may have allocated, and a finalizer run: the verdict holds only if nothing moved */
        if (it->verdict && vis == it->vis && it->lw->w == w && keel__world_visibility(w) == vis)
            it->verdict[i] = slot0 ? KEPT : CHECK;
        return 1 + (int)it->nk;
    }
    if (it->mode == 2) verdict_keep(it);
    return 0;
}

static int iter_next(lua_State *L)
{
    liter *it = lua_touserdata(L, lua_upvalueindex(UP_ITER));
    const keel_lua_world *lw = it->lw;
    size_t i = it->i;
    /* a query's row whose verdict holds (the same checks as iter_next_all's, in its order) */
    if (lw->w && it->mode == 2 && i < it->n && it->verdict && it->verdict[i] == KEPT &&
        keel__world_visibility(lw->w) == it->vis && push_kept(L, it, it->ents[i])) {
        it->i = i + 1;
        return 1 + (int)it->nk;
    }
    return iter_next_all(L, it);
}

/* Pushes the iterator userdata (user value 1: the World, at 1). */
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

/* The keel.Query on top -> next, nil, nil, the keel.Query (World at 1). */
static int finish_iter(lua_State *L)
{
    liter *it = lua_touserdata(L, -1);
    size_t nc = it->nk < UP_CACHES ? it->nk : UP_CACHES;
    luaL_checkstack(L, 4 + (int)nc, "too many kinds");
    lua_pushvalue(L, -1);
    lua_pushvalue(L, 1);
    lua_getiuservalue(L, 1, 1); /* the entity handle cache */
    for (size_t k = 0; k < nc; k++) keel__lua_comp_cache(L, 1, it->kinds[k]);
    lua_pushcclosure(L, iter_next, UP_ENTS + (int)nc);
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
    if (!k) keel__lua_raisef(L, KEEL_NOT_FOUND, "no kind '%s'", lua_tostring(L, idx));
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
    it->nk = 1;
    for (size_t i = 0; i < n; i++) {
        it->ents[i] = keel_storage_owner(lw->w, k, i);
        it->slots[i] = keel_storage_slot(lw->w, k, i);
    }
    it->n = n;
    return finish_iter(L);
}

/* ---- kept queries: w:query over the same kinds, frame after frame, finds its rows again ---- */

#define KEPT_QUERIES 8

struct keel_lua_qcache {
    keel_query *q;      /* keeps itself current as storage changes (keel_query_update) */
    keel_kind_id *kinds;
    size_t nk;
    uint64_t epoch;     /* play's stop puts other storage back: a query of another epoch is rebuilt */
    unsigned long used; /* lw->query_clock when last used: the least recently used one goes */
    uint64_t id;        /* new whenever the slot is given other kinds or its query is remade */
    /* the verdicts of the last pass that ended (see liter): its rows, `all`, and
     * keel__world_visibility + 1 then (0: none) */
    uint64_t vis;
    bool vis_all;
    size_t vis_n;
    keel_entity *vis_ents;
    unsigned char *verdict;
};

static uint64_t qcache_ids;

void keel__lua_queries_free(keel_lua_world *lw)
{
    for (size_t i = 0; i < lw->query_count; i++) {
        keel_query_free(lw->queries[i].q);
        free(lw->queries[i].kinds);
        free(lw->queries[i].vis_ents);
        free(lw->queries[i].verdict);
    }
    free(lw->queries);
    lw->queries = NULL;
    lw->query_count = 0;
}

static struct keel_lua_qcache *kept_query(lua_State *L, keel_lua_world *lw, const keel_kind_id *kinds, size_t nk)
{
    uint64_t epoch = keel_world_epoch(lw->w);
    struct keel_lua_qcache *slot = NULL;
    for (size_t i = 0; i < lw->query_count; i++) {
        struct keel_lua_qcache *c = &lw->queries[i];
        if (c->nk == nk && memcmp(c->kinds, kinds, nk * sizeof *kinds) == 0) {
            slot = c;
            break;
        }
    }
    if (!slot) {
        if (!lw->queries) lw->queries = calloc(KEPT_QUERIES, sizeof *lw->queries);
        keel_kind_id *copy = lw->queries ? malloc(nk * sizeof *kinds) : NULL;
        if (!copy) luaL_error(L, "out of memory");
        memcpy(copy, kinds, nk * sizeof *kinds);
        if (lw->query_count < KEPT_QUERIES) {
            slot = &lw->queries[lw->query_count++];
        } else {
            slot = &lw->queries[0];
            for (size_t i = 1; i < lw->query_count; i++)
                if (lw->queries[i].used < slot->used) slot = &lw->queries[i];
            keel_query_free(slot->q);
            free(slot->kinds);
            free(slot->vis_ents);
            free(slot->verdict);
        }
        *slot = (struct keel_lua_qcache){ .kinds = copy, .nk = nk, .epoch = epoch, .id = ++qcache_ids };
    }
    if (!slot->q || slot->epoch != epoch) {
        keel_query_free(slot->q);
        slot->q = keel_query_new(lw->w, kinds, nk);
        slot->epoch = epoch;
        slot->id = ++qcache_ids;
        slot->vis = 0;
        if (!slot->q) luaL_error(L, "out of memory");
    }
    slot->used = ++lw->query_clock;
    return slot;
}

/* The iterator's verdicts: the kept query's when found under the same visibility, `all` and
 * rows, else all CHECK (found as the pass goes). None (NULL) when memory is short. */
static void verdict_take(liter *it, struct keel_lua_qcache *slot)
{
    it->vis = keel__world_visibility(it->lw->w);
    it->qslot = (size_t)(slot - it->lw->queries);
    it->qid = slot->id;
    it->verdict = malloc(it->n ? it->n : 1);
    if (!it->verdict) return;
    if (slot->vis == it->vis + 1 && slot->vis_all == it->all && slot->vis_n == it->n && slot->verdict &&
        memcmp(slot->vis_ents, it->ents, it->n * sizeof *it->ents) == 0)
        memcpy(it->verdict, slot->verdict, it->n);
    else memset(it->verdict, CHECK, it->n);
}

/* A pass that ended under the visibility it began with hands its verdicts to its kept query. */
static void verdict_keep(liter *it)
{
    keel_lua_world *lw = it->lw;
    if (!it->verdict || !lw->w || keel__world_visibility(lw->w) != it->vis || it->qslot >= lw->query_count) return;
    struct keel_lua_qcache *slot = &lw->queries[it->qslot];
    if (slot->id != it->qid) return;
    if (slot->vis_n != it->n || !slot->vis_ents || !slot->verdict) {
        free(slot->vis_ents);
        free(slot->verdict);
        slot->vis_ents = malloc((it->n ? it->n : 1) * sizeof *it->ents);
        slot->verdict = malloc(it->n ? it->n : 1);
        slot->vis_n = it->n;
    }
    if (!slot->vis_ents || !slot->verdict) {
        slot->vis = 0;
        return;
    }
    memcpy(slot->vis_ents, it->ents, it->n * sizeof *it->ents);
    memcpy(slot->verdict, it->verdict, it->n);
    slot->vis_all = it->all;
    slot->vis = it->vis + 1;
}

static int w_query(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    bool all = take_all(L);
    int nk = lua_gettop(L) - 1;
    if (nk < 1) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "query: at least one kind expected");
    for (int i = 0; i < nk; i++) check_kind(L, i + 2);
    liter *it = push_iter(L, lw, 2);
    it->all = all;
    it->kinds = xcalloc(L, (size_t)nk, sizeof *it->kinds);
    it->nk = (size_t)nk;
    for (int i = 0; i < nk; i++) it->kinds[i] = keel_kind_find(lua_tostring(L, i + 2));
    struct keel_lua_qcache *slot = kept_query(L, lw, it->kinds, it->nk);
    keel_query *q = slot->q;
    size_t n = keel_query_update(q);
    it->ents = calloc(n ? n : 1, sizeof *it->ents);
    if (!it->ents) return luaL_error(L, "out of memory");
    for (size_t i = 0; i < n; i++) it->ents[i] = keel_query_entity(q, i);
    it->n = n;
    verdict_take(it, slot);
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
