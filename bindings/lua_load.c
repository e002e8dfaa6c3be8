/* lua_load.c — keel.load and keel.parse: a scene read into a new World, with the options
 * { strict, assets, limits } (every key checked), and the worlds hooks wrap meanwhile closed
 * when they are not the result (keel.prefab's loads use both too). */
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "lua_host.h"

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

int keel_lua_host_call(lua_State *L, int (*fn)(void *ud), void *ud)
{
    lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
    lua_getfield(L, -1, "keel.core");
    bool open = lua_istable(L, -1);
    lua_pop(L, 2);
    if (!open) return fn(ud); /* no kinds of this state can be declared: nothing to run */
    keel_lua_ctx *ctx = keel__lua_state_ctx(L);
    int prev = keel__lua_begin_load(L, ctx);
    KEEL_LUA_ENTER(L, ctx);
    int rc = fn(ud);
    KEEL_LUA_LEAVE();
    keel__lua_end_load(L, ctx, prev, NULL);
    return rc;
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t def)
{
    lua_getfield(L, t, k);
    size_t v = def;
    if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0) v = (size_t)lua_tointeger(L, -1);
    else if (!lua_isnil(L, -1)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "limits.%s must be a non-negative integer", k);
    lua_pop(L, 1);
    return v;
}

/* Raises InvalidArgument for a key of the table at t that is not among `known` (a typo
 * such as `entites` would otherwise load with the default silently). */
void keel__lua_check_keys(lua_State *L, int t, const char *what, const char *const *known)
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
        if (k) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s: unknown key '%s' (it takes %s)", what, k, keys);
        int key_idx = lua_gettop(L) - 2, val_idx = lua_gettop(L) - 1;
        const char *shown = lua_type(L, val_idx) == LUA_TSTRING
            ? lua_pushfstring(L, " \"%s\"", lua_tostring(L, val_idx))
            : "";
        const char *named = strcmp(what, "spawn") == 0 && *shown ? " (a name goes as name = ...)" : "";
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT,
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
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts.assets: the path holds a NUL byte");
        if (lua_type(L, -1) == LUA_TSTRING) given = lua_tostring(L, -1); /* stays on the stack */
        else if (!lua_isnil(L, -1) && !(lua_isboolean(L, -1) && !lua_toboolean(L, -1)))
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts.assets must be a path or false, got %s",
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
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts must be a table, got %s", luaL_typename(L, idx));
    keel__lua_check_keys(L, idx, "opts", opt_keys);
    lua_getfield(L, idx, "strict");
    o->strict = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, idx, "limits");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TTABLE)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "opts.limits must be a table, got %s", luaL_typename(L, -1));
    if (lua_type(L, -1) == LUA_TTABLE) {
        int t = lua_gettop(L);
        keel__lua_check_keys(L, t, "opts.limits", limit_keys);
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
static int finish_load(lua_State *L, keel_lua_ctx *ctx, keel_status s, keel_world *w, keel_diags *d,
                       const char *path)
{
    if (s != KEEL_OK || !w) {
        keel_world_free(w);
        return keel__lua_fail(L, d);
    }
    keel__lua_push_world(L, ctx, w, true);
    keel__lua_world_loaded(L, -1, path);
    keel__lua_push_diags(L, d);
    lua_setiuservalue(L, -2, 2);
    keel_diags_free(d);
    return 1;
}

int keel__lua_k_load(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "load: a path expected, got %s", luaL_typename(L, 1));
    if (keel__lua_has_nul(L, 1))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "load: the path holds a NUL byte");
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
    int n = finish_load(L, ctx, s, w, &d, lua_tostring(L, 1));
    if (s == KEEL_OK) keel__lua_rescene_loaded(L, -1, lua_tostring(L, 1)); /* the watcher's file */
    return n;
}

int keel__lua_k_parse(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "parse: YAML text expected, got %s", luaL_typename(L, 1));
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
    return finish_load(L, ctx, s, w, &d, NULL);
}
