/* lua_value.c — field values between records, keel_values, Lua values and body nodes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__field_store: a new component's body written without a journal */

static const char *choice_name(const keel_field_desc *fd, int64_t i)
{
    return (i >= 0 && (size_t)i < fd->choice_count) ? fd->choices[i] : "";
}

/* .x .y .z .w (and .r .g .b .a) of a vector table: its items 1 to 4; 0 for another key. */
static int vec_slot(lua_State *L, int k)
{
    if (lua_type(L, k) != LUA_TSTRING || lua_rawlen(L, k) != 1) return 0;
    switch (lua_tostring(L, k)[0]) {
    case 'x': case 'r': return 1;
    case 'y': case 'g': return 2;
    case 'z': case 'b': return 3;
    case 'w': case 'a': return 4;
    default: return 0;
    }
}

static int vec_index(lua_State *L)
{
    int i = vec_slot(L, 2);
    if (i) lua_rawgeti(L, 1, i);
    else lua_pushnil(L);
    return 1;
}

static int vec_newindex(lua_State *L)
{
    int i = vec_slot(L, 2);
    lua_settop(L, 3);
    if (i) lua_rawseti(L, 1, i);
    else lua_rawset(L, 1);
    return 0;
}

static const char vec_mt_key = 'v'; /* registry key of the metatable every vector value shares */

static void push_vec(lua_State *L, const double *src, int n)
{
    /* read before the table is made: a __gc finalizer may run at that allocation and free or move
     * the record src points into (a destroy, a remove) */
    double v[4];
    memcpy(v, src, (size_t)n * sizeof *v);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &vec_mt_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 2);
        lua_pushcfunction(L, vec_index);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, vec_newindex);
        lua_setfield(L, -2, "__newindex");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &vec_mt_key);
    }
    lua_setmetatable(L, -2);
}

/* A vector written by names ({ x = 1, y = 2, z = 3 }, colours { r =, g =, b = [, a =] }): its items
 * pushed into a fresh array at the top; false when the table has no such names. */
static bool named_vec(lua_State *L, int idx, int n, bool color)
{
    static const char *const xyzw[] = { "x", "y", "z", "w" }, *const rgba[] = { "r", "g", "b", "a" };
    const char *const *names = color ? rgba : xyzw;
    idx = lua_absindex(L, idx);
    lua_getfield(L, idx, names[0]);
    bool named = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!named) return false;
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_getfield(L, idx, names[i]);
        if (lua_isnil(L, -1) && color && i == 3) { /* alpha defaults to opaque */
            lua_pop(L, 1);
            break;
        }
        lua_rawseti(L, -2, i + 1);
    }
    return true;
}

static void push_uuid_entity(lua_State *L, keel_uuid u, keel_world *w, int world_idx)
{
    keel_entity e = keel_uuid_is_nil(u) || !w ? KEEL_NO_ENTITY : keel_find(w, u);
    if (e == KEEL_NO_ENTITY || world_idx == 0) lua_pushnil(L);
    else keel__lua_push_entity(L, world_idx, e);
}

/* An asset field: its UUID string, nil when none. */
static void push_asset(lua_State *L, keel_uuid u)
{
    if (keel_uuid_is_nil(u)) {
        lua_pushnil(L);
        return;
    }
    char buf[37];
    keel_uuid_format(u, buf);
    lua_pushstring(L, buf);
}

void keel__lua_push_stored(lua_State *L, const keel_field_desc *fd, const void *p, keel_world *w, int world_idx)
{
    switch (fd->type) {
    case KEEL_T_BOOL: lua_pushboolean(L, *(const bool *)p); break;
    case KEEL_T_INT: lua_pushinteger(L, (lua_Integer) * (const int64_t *)p); break;
    case KEEL_T_FLOAT: lua_pushnumber(L, *(const double *)p); break;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
        push_vec(L, (const double *)p, keel_type_width(fd->type));
        break;
    case KEEL_T_ENUM: lua_pushstring(L, choice_name(fd, *(const int64_t *)p)); break;
    case KEEL_T_STRING: {
        const char *s = *(char *const *)p;
        lua_pushstring(L, s ? s : "");
        break;
    }
    case KEEL_T_ASSET: push_asset(L, *(const keel_uuid *)p); break;
    case KEEL_T_ENTITY: push_uuid_entity(L, *(const keel_uuid *)p, w, world_idx); break;
    default: lua_pushnil(L);
    }
}

void keel__lua_push_value(lua_State *L, const keel_field_desc *fd, const keel_value *v, keel_world *w, int world_idx)
{
    switch (fd->type) {
    case KEEL_T_BOOL: lua_pushboolean(L, v->as.b); break;
    case KEEL_T_INT: lua_pushinteger(L, (lua_Integer)v->as.i); break;
    case KEEL_T_FLOAT: lua_pushnumber(L, v->as.f); break;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
        push_vec(L, v->as.v, keel_type_width(fd->type));
        break;
    case KEEL_T_ENUM: lua_pushstring(L, choice_name(fd, v->as.i)); break;
    case KEEL_T_STRING: lua_pushstring(L, v->as.s ? v->as.s : ""); break;
    case KEEL_T_ASSET:
        if (v->nil) lua_pushnil(L);
        else push_asset(L, v->as.u);
        break;
    case KEEL_T_ENTITY:
        if (v->nil) lua_pushnil(L);
        else push_uuid_entity(L, v->as.u, w, world_idx);
        break;
    default: lua_pushnil(L);
    }
}

static bool to_int(lua_State *L, int idx, int64_t *out)
{
    int isnum = 0;
    lua_Integer i = lua_tointegerx(L, idx, &isnum);
    if (!isnum || lua_type(L, idx) != LUA_TNUMBER) return false;
    *out = (int64_t)i;
    return true;
}


bool keel__lua_to_value(lua_State *L, int idx, const keel_field_desc *fd, keel_world *w,
                        keel_value *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    out->type = fd->type;
    int t = lua_type(L, idx);
    const char *want = keel_type_name(fd->type);
    if (t == LUA_TSTRING && keel__lua_has_nul(L, idx)) { /* every type a string can be: string, enum, asset, entity */
        snprintf(err, errcap, "%s field '%s' holds a NUL byte", want, fd->key);
        return false;
    }
    switch (fd->type) {
    case KEEL_T_BOOL:
        if (t != LUA_TBOOLEAN) goto bad;
        out->as.b = lua_toboolean(L, idx);
        return true;
    case KEEL_T_INT:
        if (!to_int(L, idx, &out->as.i)) goto bad;
        return true;
    case KEEL_T_FLOAT:
        if (t != LUA_TNUMBER) goto bad;
        out->as.f = (double)lua_tonumber(L, idx);
        return true;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: {
        int n = keel_type_width(fd->type);
        if (t != LUA_TTABLE) goto bad;
        if (lua_rawlen(L, idx) == 0 && named_vec(L, idx, n, fd->type == KEEL_T_COLOR)) {
            bool ok = keel__lua_to_value(L, lua_gettop(L), fd, w, out, err, errcap);
            lua_pop(L, 1);
            return ok;
        }
        int len = (int)lua_rawlen(L, idx);
        if (!(len == n || (fd->type == KEEL_T_COLOR && len == 3))) {
            snprintf(err, errcap, "%s '%s' needs %d numbers, got %d", want, fd->key, n, len);
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (i >= len) { out->as.v[i] = 1.0; continue; }
            lua_rawgeti(L, idx, i + 1);
            if (lua_type(L, -1) != LUA_TNUMBER) {
                lua_pop(L, 1);
                snprintf(err, errcap, "%s '%s': item %d is not a number", want, fd->key, i + 1);
                return false;
            }
            out->as.v[i] = (double)lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        return true;
    }
    case KEEL_T_ENUM: {
        if (t != LUA_TSTRING) goto bad;
        const char *s = lua_tostring(L, idx);
        for (size_t i = 0; i < fd->choice_count; i++)
            if (strcmp(fd->choices[i], s) == 0) { out->as.i = (int64_t)i; return true; }
        snprintf(err, errcap, "'%s' is not a choice of '%s'", s, fd->key);
        return false;
    }
    case KEEL_T_STRING:
        if (t != LUA_TSTRING) goto bad;
        out->as.s = lua_tostring(L, idx);
        return true;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY:
        if (t == LUA_TNIL) { out->nil = true; return true; }
        if (t == LUA_TSTRING) {
            if (!keel_uuid_parse(lua_tostring(L, idx), &out->as.u)) {
                snprintf(err, errcap, "'%s' is not a UUID (field '%s')", lua_tostring(L, idx), fd->key);
                return false;
            }
            out->nil = keel_uuid_is_nil(out->as.u);
            return true;
        }
        if (fd->type == KEEL_T_ENTITY) {
            keel_lua_entity *he = keel__lua_toentity(L, idx);
            if (!he) goto bad;
            const char *why = keel__lua_entity_stale(he, w);
            if (why) {
                snprintf(err, errcap, "stale handle: field '%s': the entity %s", fd->key, why);
                return false;
            }
            if (!keel_alive(w, he->e)) {
                snprintf(err, errcap, "field '%s': the scene root is not an entity", fd->key);
                return false;
            }
            out->as.u = keel_entity_uuid(w, he->e);
            return true;
        }
        goto bad;
    default:
        break;
    }
bad:
    snprintf(err, errcap, "field '%s' wants %s, got %s", fd->key, want,
             fd->type == KEEL_T_ENTITY ? luaL_typename(L, idx) : lua_typename(L, t));
    return false;
}

bool keel__lua_same(lua_State *L, int idx, const keel_field_desc *fd, const void *p, keel_world *w)
{
    int t = lua_type(L, idx);
    switch (fd->type) {
    case KEEL_T_BOOL: return t == LUA_TBOOLEAN && lua_toboolean(L, idx) == *(const bool *)p;
    case KEEL_T_INT: {
        int64_t i;
        return to_int(L, idx, &i) && i == *(const int64_t *)p;
    }
    case KEEL_T_FLOAT: return t == LUA_TNUMBER && (double)lua_tonumber(L, idx) == *(const double *)p;
    case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR: {
        int n = keel_type_width(fd->type);
        if (t != LUA_TTABLE || (int)lua_rawlen(L, idx) != n) return false;
        const double *v = p;
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            bool same = lua_type(L, -1) == LUA_TNUMBER && (double)lua_tonumber(L, -1) == v[i];
            lua_pop(L, 1);
            if (!same) return false;
        }
        return true;
    }
    case KEEL_T_ENUM:
        return t == LUA_TSTRING && !keel__lua_has_nul(L, idx) &&
               strcmp(lua_tostring(L, idx), choice_name(fd, *(const int64_t *)p)) == 0;
    case KEEL_T_STRING: {
        const char *s = *(char *const *)p;
        return t == LUA_TSTRING && !keel__lua_has_nul(L, idx) && strcmp(lua_tostring(L, idx), s ? s : "") == 0;
    }
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: {
        keel_value v;
        char err[8];
        keel_uuid u = *(const keel_uuid *)p;
        if (fd->type == KEEL_T_ENTITY && !keel_uuid_is_nil(u) && keel_find(w, u) == KEEL_NO_ENTITY)
            u = (keel_uuid){{0}}; /* a gone target reads as nil */
        if (!keel__lua_to_value(L, idx, fd, w, &v, err, sizeof err)) return false;
        if (v.nil) return keel_uuid_is_nil(u);
        return keel_uuid_equal(v.as.u, u);
    }
    default: return false;
    }
}

static keel_node *scalar_num(double f)
{
    char buf[64];
    keel_format_double(f, buf, sizeof buf);
    return keel_node_new_scalar(buf, KEEL_STYLE_PLAIN);
}

static keel_node *value_to_node(const keel_field_desc *fd, const keel_value *v)
{
    return keel__value_node(fd->type, v, fd->type == KEEL_T_ENUM ? choice_name(fd, v->as.i) : NULL, true);
}

/* The field a body table's string key at idx names; -1 with NotFound in d when none does
 * (a key holding a NUL byte names none: cut short, "s\0x" would read as "s"). */
static int body_field(lua_State *L, int idx, keel_kind_id k, keel_diags *d)
{
    const char *key = lua_tostring(L, idx);
    int f = keel__lua_has_nul(L, idx) ? -1 : keel_kind_field(k, key);
    if (f < 0)
        KEEL_ERROR(d, KEEL_NOT_FOUND, key, "%s has no field '%s'%s", keel_kind_describe(k)->key, key,
                   keel__lua_has_nul(L, idx) ? " (the name holds a NUL byte)" : "");
    return f;
}

keel_node *keel__lua_body_to_node(lua_State *L, int idx, keel_kind_id k, keel_world *w, keel_diags *d)
{
    idx = lua_absindex(L, idx);
    keel_node *map = keel_node_new_map();
    if (lua_isnoneornil(L, idx)) return map;
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (lua_type(L, idx) != LUA_TTABLE) {
        KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a body must be a table, got %s", luaL_typename(L, idx));
        keel_node_free(map);
        return NULL;
    }
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING) { /* [1] of a spawn spec entry: the kind key */
            lua_pop(L, 1);
            continue;
        }
        const char *key = lua_tostring(L, -2);
        int f = body_field(L, -2, k, d);
        if (f < 0) {
            lua_pop(L, 1);
            continue;
        }
        keel_value v;
        char err[256];
        if (!keel__lua_to_value(L, -1, &kd->fields[f], w, &v, err, sizeof err)) {
            KEEL_ERROR(d, keel__lua_value_code(err), key, "%s", err);
        } else {
            keel_node_put(map, key, value_to_node(&kd->fields[f], &v));
        }
        lua_pop(L, 1);
    }
    if (d && keel_diags_status(d) != KEEL_OK) {
        keel_node_free(map);
        return NULL;
    }
    return map;
}

void keel__lua_push_node(lua_State *L, const keel_node *n)
{
    luaL_checkstack(L, 4, "body too deep");
    if (!n) { lua_pushnil(L); return; }
    switch (n->kind) {
    case KEEL_NODE_SEQ:
        lua_createtable(L, (int)n->count, 0);
        for (size_t i = 0; i < n->count; i++) {
            keel__lua_push_node(L, &n->items[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        return;
    case KEEL_NODE_MAP:
        lua_createtable(L, 0, (int)n->count);
        for (size_t i = 0; i < n->count; i++) {
            const keel_node *k = &n->items[2 * i];
            if (k->kind != KEEL_NODE_SCALAR) continue;
            lua_pushlstring(L, k->text, k->len);
            keel__lua_push_node(L, &n->items[2 * i + 1]);
            lua_rawset(L, -3);
        }
        return;
    default: break;
    }
    bool quoted = n->style == KEEL_STYLE_SINGLE || n->style == KEEL_STYLE_DOUBLE ||
                  n->style == KEEL_STYLE_LITERAL || n->style == KEEL_STYLE_FOLDED;
    bool b;
    int64_t i;
    double f;
    if (quoted) lua_pushlstring(L, n->text, n->len);
    else if (keel_node_is_null(n)) lua_pushnil(L);
    else if (keel_node_as_bool(n, &b)) lua_pushboolean(L, b);
    else if (keel_node_as_int(n, &i)) lua_pushinteger(L, (lua_Integer)i);
    else if (keel_node_as_float(n, &f)) lua_pushnumber(L, f);
    else lua_pushlstring(L, n->text, n->len);
}

/* A double-quoted scalar of all of the string's bytes, a NUL included (as libyaml reads "a\0b"),
 * so the body decoder refuses it rather than seeing a string cut short. */
static keel_node *string_node(lua_State *L, int idx)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    keel_node *n = keel_node_new_scalar(s, KEEL_STYLE_DOUBLE);
    if (n->len != len) {
        char *t = malloc(len + 1);
        if (!t) {
            keel_node_free(n);
            luaL_error(L, "not enough memory");
        }
        free(n->text);
        n->text = t;
        memcpy(n->text, s, len + 1);
        n->len = len;
    }
    return n;
}

/* Plain Lua value -> node; NULL for values YAML cannot hold (functions, userdata, too deep). */
keel_node *keel__lua_to_node(lua_State *L, int idx, int depth)
{
    char buf[64];
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return keel_node_new_scalar("null", KEEL_STYLE_PLAIN);
    case LUA_TBOOLEAN: return keel_node_new_scalar(lua_toboolean(L, idx) ? "true" : "false", KEEL_STYLE_PLAIN);
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
            return keel_node_new_scalar(buf, KEEL_STYLE_PLAIN);
        }
        return scalar_num((double)lua_tonumber(L, idx));
    case LUA_TSTRING: return string_node(L, idx);
    case LUA_TTABLE: break;
    default: return NULL;
    }
    if (depth > 32 || !lua_checkstack(L, 4)) return NULL;
    size_t n = lua_rawlen(L, idx);
    if (n > 0) {
        keel_node *s = keel_node_new_seq();
        for (size_t i = 1; i <= n; i++) {
            lua_rawgeti(L, idx, (lua_Integer)i);
            keel_node *item = keel__lua_to_node(L, -1, depth + 1);
            lua_pop(L, 1);
            if (!item) { keel_node_free(s); return NULL; }
            keel_node_push(s, item);
        }
        return s;
    }
    keel_node *m = keel_node_new_map();
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *k;
        if (lua_type(L, -2) == LUA_TSTRING && keel__lua_has_nul(L, -2)) { lua_pop(L, 2); keel_node_free(m); return NULL; }
        if (lua_type(L, -2) == LUA_TSTRING) k = lua_tostring(L, -2);
        else if (lua_type(L, -2) == LUA_TNUMBER) {
            lua_pushvalue(L, -2);
            k = NULL;
            snprintf(buf, sizeof buf, "%s", lua_tostring(L, -1));
            lua_pop(L, 1);
            k = buf;
        } else { lua_pop(L, 2); keel_node_free(m); return NULL; }
        keel_node *v = keel__lua_to_node(L, -1, depth + 1);
        lua_pop(L, 1);
        if (!v) { lua_pop(L, 1); keel_node_free(m); return NULL; }
        keel_node_put(m, k, v);
    }
    return m;
}

void keel__lua_push_body(lua_State *L, keel_world *w, keel_comp c, int world_idx)
{
    const keel_kind_desc *kd = keel_kind_describe(c.kind);
    const char *rec = keel_record(w, c);
    lua_createtable(L, 0, kd ? (int)kd->field_count : 0);
    if (!kd || !rec) return;
    for (size_t i = 0; i < kd->field_count; i++) {
        keel__lua_push_stored(L, &kd->fields[i], rec + keel_kind_field_offset(c.kind, (int)i), w, world_idx);
        lua_setfield(L, -2, kd->fields[i].key);
    }
}

#define BODY_FAST 16 /* bodies naming up to this many fields are converted once, on the C stack */

/* The exact size check of body table idx, whose values were all checked (keel__lua_body_collect)
 * and whose strings come near the load limit: its values put on kind k's defaults. */
static bool body_fits_exact(lua_State *L, keel_lua_ctx *ctx, int idx, keel_kind_id k, keel_world *w, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    size_t cap = kd->field_count ? kd->field_count : 1, n = 0;
    /* a userdata, not malloc: nothing leaks if Lua raises meanwhile */
    keel_value *vals = lua_newuserdatauv(L, cap * (sizeof *vals + sizeof(int)), 0);
    int *fields = (int *)(vals + cap);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int f = lua_type(L, -2) != LUA_TSTRING ? -1 : ctx ? keel__lua_field_of(L, ctx, k, -2) : -1;
        if (f < 0 && lua_type(L, -2) == LUA_TSTRING) f = keel_kind_field(k, lua_tostring(L, -2));
        char err[8];
        if (f >= 0 && n < cap && keel__lua_to_value(L, -1, &kd->fields[f], w, &vals[n], err, sizeof err) &&
            keel_field_check(k, f, &vals[n], NULL) == KEEL_OK)
            fields[n++] = f;
        lua_pop(L, 1);
    }
    keel_status st = keel__field_body_fits(k, n, fields, vals, d);
    lua_pop(L, 1);
    return st == KEEL_OK;
}

/* Checks every key and value of a body table before anything is written, and that the body a
 * save would write of it fits the load limit (LimitExceeded); with `fields`, also keeps the
 * checked values of up to `cap` of them (*n of them; *n > cap: too many to keep). */
bool keel__lua_body_collect(lua_State *L, keel_lua_ctx *ctx, int idx, keel_kind_id k, keel_world *w, keel_diags *d,
                         int *fields, keel_value *vals, size_t cap, size_t *n)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    bool ok = true;
    size_t got = 0, strings = 0; /* bytes of the string values given */
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            int f = ctx ? keel__lua_field_of(L, ctx, k, -2) : -1; /* by address; else by name */
            int isnum = 0;
            double num = f >= 0 && kd->fields[f].type == KEEL_T_FLOAT ? (double)lua_tonumberx(L, -1, &isnum) : 0;
            if (isnum && lua_type(L, -1) == LUA_TNUMBER && !kd->fields[f].has_min && !kd->fields[f].has_max &&
                isfinite(num)) {
                /* a plain float: nothing more to check (keel_field_check would say the same) */
                if (got < cap) {
                    fields[got] = f;
                    vals[got] = (keel_value){ .type = KEEL_T_FLOAT, .as.f = num };
                }
                got++;
                lua_pop(L, 1);
                continue;
            }
            const char *key = lua_tostring(L, -2);
            if (f < 0) f = body_field(L, -2, k, d);
            keel_value v;
            char err[256];
            if (f < 0) {
                ok = false;
            } else if (!keel__lua_to_value(L, -1, &kd->fields[f], w, &v, err, sizeof err)) {
                KEEL_ERROR(d, keel__lua_value_code(err), key, "%s", err);
                ok = false;
            } else if (keel_field_check(k, f, &v, d) != KEEL_OK) {
                ok = false; /* out of range or not a choice: refused before anything is added */
            } else {
                if (kd->fields[f].type == KEEL_T_STRING && v.as.s) strings += strlen(v.as.s);
                /* strings stay borrowed from the body table, which the caller keeps on its stack */
                if (got < cap) fields[got] = f, vals[got] = v;
                got++;
            }
        }
        lua_pop(L, 1);
    }
    if (ok && !keel__field_body_room(k, strings)) ok = body_fits_exact(L, ctx, idx, k, w, d);
    if (n) *n = got;
    return ok;
}

bool keel__lua_body_check(lua_State *L, keel_lua_ctx *ctx, int idx, keel_kind_id k, keel_world *w, keel_diags *d)
{
    return keel__lua_body_collect(L, ctx, idx, k, w, d, NULL, NULL, 0, NULL);
}

keel_status keel__lua_add(lua_State *L, keel_lua_ctx *ctx, int body_idx, keel_world *w, keel_entity e, keel_kind_id k,
                          uint32_t slot, keel_comp *out, keel_cmd *inverse, keel_diags *d)
{
    body_idx = lua_absindex(L, body_idx);
    const keel_kind_desc *kd = keel_kind_describe(k);
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = slot;
    if (lua_type(L, body_idx) == LUA_TTABLE && !kd->hooks[KEEL_PHASE_AWAKE]) {
        /* No awake sees the body: add with defaults, then write the fields (no text round trip). */
        int fields[BODY_FAST];
        keel_value vals[BODY_FAST];
        size_t n = 0;
        if (!keel__lua_body_collect(L, ctx, body_idx, k, w, d, fields, vals, BODY_FAST, &n)) return keel_diags_status(d);
        keel_comp c;
        keel_status s = keel_add(w, e, k, &o, &c, inverse, d);
        if (s != KEEL_OK) return s;
        if (n <= BODY_FAST && !kd->validate) {
            /* Values checked above, no validate to ask, and the component is new: a rollback of
             * the add takes it whole, so the writes need no journal (counters as keel_set's). */
            keel__field_store(w, c, n, fields, vals, true);
            if (out) *out = c;
            return KEEL_OK;
        }
        lua_pushnil(L);
        while (s == KEEL_OK && lua_next(L, body_idx)) {
            if (lua_type(L, -2) == LUA_TSTRING) {
                int f = keel_kind_field(k, lua_tostring(L, -2));
                keel_value v;
                char err[8];
                keel__lua_to_value(L, -1, &kd->fields[f], w, &v, err, sizeof err);
                s = keel__field_set(w, c, f, &v, true, NULL, d);
            }
            lua_pop(L, s == KEEL_OK ? 1 : 2);
        }
        if (s != KEEL_OK) {
            keel_remove(w, e, kd->key, c.slot, NULL, NULL);
            if (inverse) keel_cmd_free(inverse);
            return s;
        }
        if (out) *out = c;
        return KEEL_OK;
    }
    if (lua_isnoneornil(L, body_idx)) { /* no body: the empty map keel__lua_body_to_node would make, unallocated */
        keel_node empty = { .kind = KEEL_NODE_MAP, .style = KEEL_STYLE_ANY };
        o.body = &empty;
        return keel_add(w, e, k, &o, out, inverse, d);
    }
    keel_node *body = keel__lua_body_to_node(L, body_idx, k, w, d);
    if (!body) return keel_diags_status(d);
    o.body = body;
    keel_status s = keel_add(w, e, k, &o, out, inverse, d);
    keel_node_free(body);
    return s;
}

keel_status keel__lua_add_values(keel_world *w, keel_entity e, keel_kind_id k, const int *fields, const keel_value *vals,
                                 size_t n, keel_comp *out, keel_diags *d)
{
    keel_comp c;
    keel_status s = keel_add(w, e, k, NULL, &c, NULL, d);
    if (s != KEEL_OK) return s;
    keel__field_store(w, c, n, fields, vals, true); /* new: a rollback of the add takes it whole, no journal */
    if (out) *out = c;
    return KEEL_OK;
}
