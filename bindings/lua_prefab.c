/* lua_prefab.c — keel.prefab (a scene file as a template, cached by path) and w:instantiate. */
#include "lua_internal.h"
#include "bind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define KEEL_LUA_PREFAB "keel.Prefab"

static const keel_lua_type mt_prefab = { KEEL_LUA_PREFAB };
static const char cache_key = 0; /* registry[&cache_key] = { [path] = Prefab } */

/* user values: 1 the path, 2 the load's warnings (a diagnostics array) */
typedef struct keel_lua_prefab {
    keel_world *w; /* the template: loaded without awake, never stepped; NULL once collected */
    size_t size;   /* the file's content stamp: its length and a hash of its bytes */
    uint64_t hash;
} keel_lua_prefab;

static keel_lua_prefab *check_prefab(lua_State *L, int idx)
{
    keel_lua_prefab *p = keel__lua_checkudata(L, idx, &mt_prefab);
    if (!p->w) keel__lua_raisef(L, KEEL_NOT_FOUND, "the prefab is closed");
    return p;
}

static int prefab_gc(lua_State *L)
{
    keel_lua_prefab *p = keel__lua_checkudata(L, 1, &mt_prefab);
    keel_world_free(p->w);
    p->w = NULL;
    return 0;
}

static int prefab_tostring(lua_State *L)
{
    keel_lua_prefab *p = keel__lua_checkudata(L, 1, &mt_prefab);
    lua_getiuservalue(L, 1, 1);
    lua_pushfstring(L, "keel.Prefab (%s%s)", lua_tostring(L, -1), p->w ? "" : ", closed");
    return 1;
}

static int prefab_warnings(lua_State *L)
{
    check_prefab(L, 1);
    lua_getiuservalue(L, 1, 2);
    return 1;
}

static int prefab_index(lua_State *L)
{
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1; /* a method */
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "path") == 0) {
        check_prefab(L, 1);
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    return keel__lua_raisef(L, KEEL_NOT_FOUND, "keel.Prefab has no field '%s'", k ? k : luaL_typename(L, 2));
}

/* The file's bytes in a box on the stack (NULL when it cannot be read: the load reports why). */
static const char *read_whole(lua_State *L, const char *path, size_t *len)
{
    void **box = keel__lua_newbox(L);
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 0;
    char *buf = NULL;
    for (;;) {
        KEEL__VEC_RESERVE(buf, *len, cap, 1, 4096);
        *box = buf; /* the box owns it: a Lua error never leaks it */
        size_t got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0) break;
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    return bad ? NULL : buf ? buf : "";
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

/* keel.prefab(path): the cached template while the file's content is the same (its bytes are
 * read and hashed on every call, so an edit within the same second, of the same size, is
 * seen); else the file loaded again as keel.load would, without awake. nil, err on failure. */
static int k_prefab(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "prefab: a path expected, got %s", luaL_typename(L, 1));
    if (keel__lua_has_nul(L, 1))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "prefab: the path holds a NUL byte");
    lua_settop(L, 1);
    const char *path = lua_tostring(L, 1);
    size_t len;
    const char *text = read_whole(L, path, &len); /* 2: its box */
    uint64_t hash = text ? fnv1a(text, len) : 0;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &cache_key) != LUA_TTABLE) { /* 3: the cache */
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &cache_key);
    }
    lua_pushvalue(L, 1);
    if (lua_rawget(L, 3) == LUA_TUSERDATA && text) {
        keel_lua_prefab *old = lua_touserdata(L, -1);
        if (old->w && old->size == len && old->hash == hash) return 1;
    }
    lua_pop(L, 1);
    keel_lua_prefab *p = lua_newuserdatauv(L, sizeof *p, 2); /* 4: closed until the load succeeds */
    memset(p, 0, sizeof *p);
    keel__lua_setmt(L, &mt_prefab);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 4, 1);
    keel_diags d;
    keel_diags_init(&d);
    keel_load_opts o;
    keel_assets *assets = NULL;
    keel_status s = keel__lua_read_opts(L, 5, path, &o, &assets, &d); /* 5 is none: the defaults */
    o.no_awake = true;
    keel_world *w = NULL;
    if (s == KEEL_OK) {
        int prev = keel__lua_begin_load(L, ctx);
        KEEL_LUA_ENTER(L, ctx);
        s = keel_scene_load(path, &o, &w, &d);
        KEEL_LUA_LEAVE();
        keel__lua_end_load(L, ctx, prev, NULL); /* the template is nobody's World */
    }
    keel_assets_free(assets);
    if (s != KEEL_OK || !w) {
        keel_world_free(w);
        return keel__lua_fail(L, &d);
    }
    p->w = w;
    p->size = len;
    p->hash = hash;
    size_t rootc = keel_member_count(w, keel_world_root(w));
    if (rootc)
        keel_diag_add(&d, KEEL_SEV_WARNING, KEEL_UNSUPPORTED, "root", path, 0, 0,
                      "a prefab's scene root components are ignored (%zu component%s)", rootc,
                      rootc == 1 ? "" : "s");
    keel__lua_push_diags(L, &d);
    keel_diags_free(&d);
    lua_setiuservalue(L, 4, 2);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 4);
    lua_rawset(L, 3);
    return 1;
}

/* One kind's part of opts.set, converted before anything is made. */
typedef struct set_kind {
    keel_kind_id k;
    size_t n;
    int *fields;
    keel_value *vals;
} set_kind;

typedef struct set_spec {
    set_kind *kinds;
    size_t n;
} set_spec;

/* The set values land on every top-level copy, staged (keel_instantiate's before_awake). */
static keel_status apply_set(keel_world *s, const keel_entity *tops, size_t n, void *user, keel_diags *d)
{
    const set_spec *sp = user;
    for (size_t t = 0; t < n; t++)
        for (size_t i = 0; i < sp->n; i++) {
            const set_kind *sk = &sp->kinds[i];
            keel_comp c;
            const char *key = keel_kind_describe(sk->k)->key;
            if (!keel_get_comp(s, tops[t], sk->k, KEEL_SLOT_AUTO, &c))
                return KEEL_ERROR(d, KEEL_NOT_FOUND, "set", "instantiate: the prefab's entity '%s' has no %s",
                                  keel_entity_name(s, tops[t]), key);
            keel_status st = keel__field_set_many(s, c, sk->n, sk->fields, sk->vals, false, d);
            if (st) return st;
        }
    return KEEL_OK;
}

/* opts.set at idx into *sp: every kind and field named, every value converted (NotFound for a
 * kind or field that is not there, InvalidArgument for a bad value); the Lua values stay
 * anchored on the stack, the arrays are userdata (a raise leaks nothing). */
static void read_set(lua_State *L, int idx, keel_world *dst, set_spec *sp)
{
    if (lua_type(L, idx) != LUA_TTABLE)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: set must be a table, got %s",
                        luaL_typename(L, idx));
    size_t nk = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        nk++;
    }
    sp->kinds = lua_newuserdatauv(L, (nk ? nk : 1) * sizeof *sp->kinds, 0);
    sp->n = 0;
    lua_newtable(L); /* anchors */
    int anchors = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: set's keys must be kind keys, got %s",
                            luaL_typename(L, -2));
        const char *key = lua_tostring(L, -2);
        keel_kind_id k = keel_kind_find(key);
        if (!k) keel__lua_raisef(L, KEEL_NOT_FOUND, "instantiate: set: kind '%s' is not declared", key);
        if (lua_type(L, -1) != LUA_TTABLE)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: set['%s'] must be a table of fields, got %s",
                            key, luaL_typename(L, -1));
        const keel_kind_desc *kd = keel_kind_describe(k);
        size_t cap = kd->field_count ? kd->field_count : 1;
        set_kind *sk = &sp->kinds[sp->n++];
        sk->k = k;
        sk->n = 0;
        sk->vals = lua_newuserdatauv(L, cap * (sizeof *sk->vals + sizeof(int)), 0);
        sk->fields = (int *)(sk->vals + cap);
        lua_rawseti(L, anchors, (lua_Integer)lua_rawlen(L, anchors) + 1);
        int ft = lua_gettop(L);
        lua_pushnil(L);
        while (lua_next(L, ft)) {
            const char *fname = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
            int f = fname ? keel_kind_field(k, fname) : -1;
            if (f < 0)
                keel__lua_raisef(L, KEEL_NOT_FOUND, "%s has no field '%s'", key,
                                fname ? fname : luaL_typename(L, -2));
            char err[256];
            if (sk->n == cap || !keel__lua_to_value(L, -1, &kd->fields[f], dst, &sk->vals[sk->n], err, sizeof err))
                keel__lua_raisef(L, sk->n == cap ? KEEL_INVALID_ARGUMENT : keel__lua_value_code(err), "%s",
                                 sk->n == cap ? "set: too many fields" : err);
            sk->fields[sk->n++] = f;
            lua_rawseti(L, anchors, (lua_Integer)lua_rawlen(L, anchors) + 1); /* pops the value, keeps it alive */
        }
        lua_pop(L, 1);
    }
}

static const char *const instantiate_keys[] = { "parent", "name", "set", NULL };

/* w:instantiate(prefab [, { parent, name, set }]): the copy of the prefab's single top-level
 * entity, or an array of the copies when it has several (keel_instantiate). */
static int w_instantiate(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    keel_lua_prefab *p = check_prefab(L, 2);
    keel_instantiate_opts o = { 0 };
    set_spec sp = { NULL, 0 };
    lua_settop(L, 3);
    if (!lua_isnil(L, 3)) {
        if (lua_type(L, 3) != LUA_TTABLE)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: an options table expected, got %s",
                                   luaL_typename(L, 3));
        lua_pushnil(L);
        while (lua_next(L, 3)) {
            lua_pop(L, 1);
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            size_t i = 0;
            while (k && instantiate_keys[i] && strcmp(instantiate_keys[i], k) != 0) i++;
            if (!k || !instantiate_keys[i])
                return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: unknown key '%s'",
                                       k ? k : luaL_typename(L, -1));
        }
        lua_getfield(L, 3, "parent"); /* 4 */
        if (!lua_isnil(L, 4)) {
            o.parent = keel__lua_check_entity_of(L, 4, lw->w, "the parent")->e;
        }
        lua_getfield(L, 3, "name"); /* 5 */
        if (!lua_isnil(L, 5)) {
            if (lua_type(L, 5) != LUA_TSTRING)
                return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: name must be a string, got %s",
                                       luaL_typename(L, 5));
            if (keel__lua_has_nul(L, 5))
                return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "instantiate: the name holds a NUL byte");
            o.name = lua_tostring(L, 5);
        }
        lua_getfield(L, 3, "set"); /* 6 */
        if (!lua_isnil(L, 6)) {
            read_set(L, 6, lw->w, &sp);
            o.before_awake = apply_set;
            o.user = &sp;
        }
    }
    keel_diags d;
    keel_diags_init(&d);
    keel_entity one = KEEL_NO_ENTITY, *out = &one;
    size_t cap = 1, n = keel_entity_child_count(p->w, keel_world_root(p->w));
    if (n > 1) {
        cap = n;
        out = lua_newuserdatauv(L, n * sizeof *out, 0); /* collected */
    }
    int prev = keel__lua_begin_load(L, lw->ctx);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel_instantiate(lw->w, p->w, &o, out, cap, &n, &d);
    KEEL_LUA_LEAVE();
    keel__lua_end_load(L, lw->ctx, prev, lw->w); /* the staging world, if a hook wrapped it */
    keel__lua_check(L, s, &d, NULL);
    if (n == 1) {
        keel__lua_push_entity(L, 1, out[0]);
        return 1;
    }
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n && i < cap; i++) {
        keel__lua_push_entity(L, 1, out[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* w:paste(text [, parent]) and w:_paste (which also returns the inverse): a fragment (e:dump)
 * read as a template (no awake) and copied in with fresh UUIDs (keel__paste); a fragment that
 * does not load is refused whole with the load's diagnostics. Returns the new top entities. */
static int paste(lua_State *L, bool want_inverse)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "paste: fragment text expected, got %s", luaL_typename(L, 2));
    keel_entity parent = KEEL_NO_ENTITY;
    if (!lua_isnoneornil(L, 3)) parent = keel__lua_check_entity_of(L, 3, lw->w, "the parent")->e;
    lua_settop(L, 3);
    size_t len;
    const char *text = lua_tolstring(L, 2, &len);
    keel_diags d;
    keel_diags_init(&d);
    keel_load_opts o;
    keel_assets *assets = NULL;
    keel_status s = keel__lua_read_opts(L, 4, NULL, &o, &assets, &d); /* 4 is none: the defaults */
    o.no_awake = true;
    keel_world *tmpl = NULL;
    if (s == KEEL_OK) {
        int prev = keel__lua_begin_load(L, lw->ctx);
        KEEL_LUA_ENTER(L, lw->ctx);
        s = keel__scene_parse_fragment(text, len, &o, &tmpl, &d);
        KEEL_LUA_LEAVE();
        keel__lua_end_load(L, lw->ctx, prev, NULL); /* the template is nobody's World */
    }
    keel_assets_free(assets);
    if (s != KEEL_OK || !tmpl) {
        keel_world_free(tmpl);
        if (s == KEEL_OK) s = KEEL_PARSE_ERROR;
        return keel__lua_raise(L, s, &d);
    }
    keel_diags_free(&d);
    keel_diags_init(&d);
    size_t n = keel_entity_child_count(tmpl, keel_world_root(tmpl));
    keel_entity *out = lua_newuserdatauv(L, (n ? n : 1) * sizeof *out, 0); /* 4: collected */
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    int prev = keel__lua_begin_load(L, lw->ctx);
    KEEL_LUA_ENTER(L, lw->ctx);
    s = keel__paste(lw->w, tmpl, parent, out, n, &n, want_inverse ? &inv : NULL, &d);
    KEEL_LUA_LEAVE();
    keel__lua_end_load(L, lw->ctx, prev, lw->w); /* the staging world, if a hook wrapped it */
    keel_world_free(tmpl);
    keel__lua_check(L, s, &d, want_inverse ? &inv : NULL);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        keel__lua_push_entity(L, 1, out[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    if (!want_inverse) return 1;
    keel__lua_push_cmd(L, &inv);
    return 2;
}

static int w_paste(lua_State *L) { return paste(L, false); }
static int w__paste(lua_State *L) { return paste(L, true); }

const luaL_Reg keel__lua_prefab_methods[] = {
    { "instantiate", w_instantiate }, { "paste", w_paste }, { "_paste", w__paste }, { NULL, NULL }
};

void keel__lua_open_prefab(lua_State *L)
{
    lua_pushcclosure(L, k_prefab, 1); /* the ctx upvalue */
    lua_setfield(L, -2, "prefab");
    static const luaL_Reg mt[] = {
        { "__gc", prefab_gc }, { "__close", prefab_gc }, { "__tostring", prefab_tostring }, { NULL, NULL }
    };
    static const luaL_Reg methods[] = { { "warnings", prefab_warnings }, { NULL, NULL } };
    keel__lua_newmt(L, &mt_prefab);
    luaL_setfuncs(L, mt, 0);
    luaL_newlib(L, methods);
    lua_pushcclosure(L, prefab_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}
