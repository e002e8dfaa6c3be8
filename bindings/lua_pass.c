/* lua_pass.c — kept passes: the entity list of a state's passes, and per system and world the
 * verdicts of its last pass, reused while the world's pass stamp holds (lua_pass.h). A pass that
 * cannot use them records them as it goes, each verdict taken while the stamp still held. */
#include <stdint.h>

#include "lua_pass.h"

bool keel__lua_list_kept(const keel_lua_ctx *ctx, const keel_world *w)
{
    const keel__pass_stamp *s = &ctx->each_st;
    return ctx->each_kept && ctx->each_frees == ctx->world_frees && s->w == w && s->epoch == keel_world_epoch(w) &&
        s->structure == keel__world_structure(w);
}

void keel__lua_list_keep(keel_lua_ctx *ctx, const keel_world *w, size_t n)
{
    keel__pass_stamp_take(w, &ctx->each_st);
    ctx->each_frees = ctx->world_frees;
    ctx->each_count = n;
    ctx->each_kept = true;
}

/* A userdata of verdicts with room for cap items of nk kinds, on top of the stack. */
static keel__lua_kept *kept_new(lua_State *L, size_t nk, size_t cap)
{
    size_t head = (sizeof(keel__lua_kept) + 15) & ~(size_t)15;
    size_t per = sizeof(keel_entity) + sizeof(uint32_t) + nk * (sizeof(void *) + 2 * sizeof(uint32_t));
    if (cap > (SIZE_MAX - head) / per) luaL_error(L, "out of memory");
    char *p = lua_newuserdatauv(L, head + cap * per, 0);
    keel__lua_kept *k = (keel__lua_kept *)p;
    memset(k, 0, sizeof *k);
    k->nk = nk;
    k->cap = cap;
    p += head; /* 8-byte arrays first, then the 4-byte ones: each aligned */
    k->e = (keel_entity *)p;
    p += cap * sizeof *k->e;
    k->rec = (void **)p;
    p += cap * nk * sizeof *k->rec;
    k->at = (uint32_t *)p;
    p += cap * sizeof *k->at;
    k->row = (uint32_t *)p;
    p += cap * nk * sizeof *k->row;
    k->slot = (uint32_t *)p;
    return k;
}

keel__lua_kept *keel__lua_kept_begin(lua_State *L, keel_lua_ctx *ctx, int cache, int widx, keel_world *w,
                                     size_t nk, size_t count)
{
    cache = lua_absindex(L, cache);
    widx = lua_absindex(L, widx);
    luaL_checkstack(L, 6, "a system's kept pass");
    if (lua_getfield(L, cache, "kept") != LUA_TTABLE) { /* by World, weakly: a closed one's go */
        lua_pop(L, 1);
        lua_createtable(L, 0, 1);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_setfield(L, cache, "kept");
    }
    int tab = lua_gettop(L);
    lua_pushvalue(L, widx);
    keel__lua_kept *k = lua_rawget(L, tab) == LUA_TUSERDATA ? lua_touserdata(L, -1) : NULL;
    if (k && k->nk != nk) k = NULL;
    if (k && k->valid && keel__lua_kept_holds(ctx, k, w)) {
        lua_remove(L, tab);
        return k;
    }
    size_t want = k && k->want ? k->want : (count < 1024 ? count : 1024);
    if (want > count) want = count;
    if (!k || k->cap < want) {
        lua_pop(L, 1);
        k = kept_new(L, nk, want ? want : 1);
        lua_pushvalue(L, widx);
        lua_pushvalue(L, -2);
        lua_rawset(L, tab);
    }
    lua_remove(L, tab);
    k->valid = false;
    k->recording = true;
    k->count = 0;
    k->want = 0;
    keel__pass_stamp_take(w, &k->st);
    k->frees = ctx->world_frees;
    return k;
}
