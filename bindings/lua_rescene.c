/* lua_rescene.c — the scene file watcher's C side (lua/keel/filewatch.lua; editing.md "Watching
 * the scene file"): w:watch, w:_rebase (a world brought from one scene text to another in
 * place), keel.core._merge / _merge_take (keel merge's own code, on texts) and _hash. */
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "lua_internal.h"

/* A string argument, or an InvalidArgument error object (misuse raises keel's errors). */
static const char *text_arg(lua_State *L, int idx, size_t *len)
{
    if (lua_type(L, idx) != LUA_TSTRING) keel__lua_argerror(L, idx, "a string expected, got %s", luaL_typename(L, idx));
    return lua_tolstring(L, idx, len);
}

/* w:watch([opts]) -> keel.filewatch's watcher */
static int w_watch(lua_State *L)
{
    keel__lua_checklw(L, 1);
    lua_settop(L, 2);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "keel.filewatch");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "watch");
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    return 1;
}

/* The template world of the text a watcher last applied (keel__scene_rebase's cache). */
#define CACHE_MT "keel.RebaseCache"
typedef struct rcache { keel_world *w; } rcache;

static int cache_gc(lua_State *L)
{
    rcache *c = luaL_testudata(L, 1, CACHE_MT);
    if (!c) return 0;
    if (c->w) keel_world_free(c->w);
    c->w = NULL;
    return 0;
}

/* keel.core._rebase_cache() -> an empty cache for w:_rebase */
static int k_rebase_cache(lua_State *L)
{
    rcache *c = lua_newuserdatauv(L, sizeof *c, 0);
    c->w = NULL;
    if (luaL_newmetatable(L, CACHE_MT)) {
        lua_pushcfunction(L, cache_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return 1;
}

/* w:_rebase(from, to [, name [, cache]]) -> the inverse command (nil when nothing differs), changes.
 * With a cache, `from` is the text of the last `to` it was given (the caller sees to that), or the
 * cache is empty. */
static int w_rebase(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    size_t flen, tlen;
    const char *from = text_arg(L, 2, &flen), *to = text_arg(L, 3, &tlen);
    const char *name = lua_isnoneornil(L, 4) ? "scene" : text_arg(L, 4, NULL);
    rcache *cache = lua_isnoneornil(L, 5) ? NULL : luaL_testudata(L, 5, CACHE_MT);
    if (!lua_isnoneornil(L, 5) && !cache) return keel__lua_argerror(L, 5, "a rebase cache expected");
    keel__lua_refuse_in_callback(L, lw->w, "w:_rebase");
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    keel_diags d;
    keel_diags_init(&d);
    size_t changes = 0;
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel__scene_rebase(lw->w, from, flen, to, tlen, name, cache ? &cache->w : NULL, &inv, &changes, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    if (changes) keel__lua_push_cmd(L, &inv);
    else lua_pushnil(L);
    lua_pushinteger(L, (lua_Integer)changes);
    return 2;
}

static void push_text(lua_State *L, char *text, size_t len)
{
    lua_pushlstring(L, text, len);
    free(text);
}

/* keel.core._merge(base, ours, theirs) -> merged text, { { path, base, ours, theirs }, ... } */
static int k_merge(lua_State *L)
{
    const char *texts[3];
    size_t lens[3];
    for (int i = 0; i < 3; i++) texts[i] = text_arg(L, i + 1, &lens[i]);
    const char *const names[3] = { "base", "ours", "theirs" };
    keel_diags d;
    keel_diags_init(&d);
    char *out = NULL;
    size_t len = 0, n = 0;
    keel_status s = keel_merge_scenes(texts, lens, names, NULL, &out, &len, &n, &d);
    keel_node *list = NULL;
    if (s == KEEL_OK && n) s = keel__scene_conflicts(out, len, &list, &d);
    if (s != KEEL_OK) free(out);
    keel__lua_check(L, s, &d, NULL);
    push_text(L, out, len);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; list && i < list->count; i++) {
        const keel_node *e = &list->items[i];
        lua_createtable(L, 0, 4);
        static const char *const keys[] = { "path", "base", "ours", "theirs" };
        for (int k = 0; k < 4; k++) {
            const keel_node *v = e->kind == KEEL_NODE_MAP ? keel_node_get(e, keys[k]) : NULL;
            if (v && !(v->kind == KEEL_NODE_SCALAR && keel_node_is_null(v))) keel__lua_push_node(L, v);
            else lua_pushnil(L);
            lua_setfield(L, -2, keys[k]);
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    keel_node_free(list);
    return 2;
}

/* keel.core._merge_take(text, theirs [, paths]) -> text, remaining */
static int k_merge_take(lua_State *L)
{
    size_t len;
    const char *text = text_arg(L, 1, &len);
    bool theirs = lua_toboolean(L, 2);
    size_t n = lua_istable(L, 3) ? lua_rawlen(L, 3) : 0;
    const char **paths = n ? lua_newuserdatauv(L, n * sizeof *paths, 0) : NULL;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 3, (lua_Integer)i + 1);
        paths[i] = lua_tostring(L, -1);
        if (!paths[i]) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "resolve: paths must be strings");
        lua_pop(L, 1); /* the table keeps the string */
    }
    keel_diags d;
    keel_diags_init(&d);
    char *out = NULL;
    size_t outlen = 0, remaining = 0;
    keel_status s = keel_merge_take(text, len, "merged", theirs, paths, n, &out, &outlen, &remaining, &d);
    keel__lua_check(L, s, &d, NULL);
    push_text(L, out, outlen);
    lua_pushinteger(L, (lua_Integer)remaining);
    return 2;
}

static int k_hash(lua_State *L)
{
    size_t len;
    const char *text = text_arg(L, 1, &len);
    lua_pushinteger(L, (lua_Integer)keel__text_hash(text, len));
    return 1;
}

/* The path a World was loaded from and its revision then: the watcher's file and clean
 * checkpoint until the world knows its own (w.path, w.saved_revision: editing.md "The saved
 * checkpoint"). Kept in a weak-keyed registry table, so a World holds nothing extra. */
static const char loaded_key = 0;

static void loaded_table(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &loaded_key) == LUA_TTABLE) return;
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &loaded_key);
}

void keel__lua_rescene_loaded(lua_State *L, int world, const char *path)
{
    keel_lua_world *lw = keel__lua_testudata(L, world, &keel__lua_mt_world);
    if (!lw || !lw->w) return;
    world = lua_absindex(L, world);
    loaded_table(L);
    lua_pushvalue(L, world);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, path);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, (lua_Integer)keel_world_revision(lw->w));
    lua_setfield(L, -2, "revision");
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* keel.core._loaded(w) -> path, revision (nil when w was not loaded from a file) */
static int k_loaded(lua_State *L)
{
    loaded_table(L);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) != LUA_TTABLE) return 0;
    lua_getfield(L, -1, "path");
    lua_getfield(L, -2, "revision");
    return 2;
}

/* keel.core._stat(path) -> "mtime.ns:size:inode:ctime.ns" (nil when it cannot be stat'ed): what
 * the watcher compares each interval before reading anything. Nanoseconds, not lfs's whole
 * seconds, so a same-size write in the same second is still seen. */
static int k_stat(lua_State *L)
{
    struct stat st;
    if (stat(text_arg(L, 1, NULL), &st) != 0) return 0;
    lua_pushfstring(L, "%I.%I:%I:%I:%I.%I", (lua_Integer)st.st_mtim.tv_sec, (lua_Integer)st.st_mtim.tv_nsec,
                    (lua_Integer)st.st_size, (lua_Integer)st.st_ino, (lua_Integer)st.st_ctim.tv_sec,
                    (lua_Integer)st.st_ctim.tv_nsec);
    return 1;
}

const luaL_Reg keel__lua_rescene_methods[] = { { "watch", w_watch }, { "_rebase", w_rebase }, { NULL, NULL } };

void keel__lua_open_rescene(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        { "_merge", k_merge }, { "_merge_take", k_merge_take }, { "_hash", k_hash }, { "_loaded", k_loaded }, { "_stat", k_stat }, { "_rebase_cache", k_rebase_cache }, { NULL, NULL }
    };
    luaL_setfuncs(L, funcs, 0);
}
