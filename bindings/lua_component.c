/* lua_component.c — the Component handle (keel.Component): fields read and written through the registry. */
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__field_set: keel_set that may write readonly fields */

/* ---- field names by address ---- */

/* Names a handle answers before its fields: its methods and properties (see comp_index). */
static const char *const shadowing[] = { "set", "body", "reset", "unpack", "_set", "kind", "slot",
                                         "loaded", "entity", "version", "enabled", "faulted", NULL };

static bool shadowed(const char *name)
{
    for (size_t i = 0; shadowing[i]; i++)
        if (strcmp(shadowing[i], name) == 0) return true;
    return false;
}

void keel__lua_fields_free(keel_lua_ctx *ctx)
{
    for (size_t i = 0; i < ctx->fields_cap; i++) free(ctx->fields[i].names);
    free(ctx->fields);
    ctx->fields = NULL;
    ctx->fields_cap = 0;
}

/* Pushes the registry table that keeps this state's copies of the names compared by address. */
static void push_names(lua_State *L, keel_lua_ctx *ctx)
{
    if (ctx->names_ref == LUA_NOREF) {
        lua_newtable(L);
        ctx->names_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->names_ref);
}

/* Kind k's field table, built (again) when a declaration happened since. NULL: no such kind. */
static const keel_lua_fields *kind_fields(lua_State *L, keel_lua_ctx *ctx, keel_kind_id k)
{
    uint64_t stamp = keel__kind_declarations() + 1;
    if (k < ctx->fields_cap && ctx->fields[k].stamp == stamp) return &ctx->fields[k];
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd) return NULL;
    if (k >= ctx->fields_cap) {
        size_t old = ctx->fields_cap;
        ctx->fields = keel__vec_grow(ctx->fields, &ctx->fields_cap, (size_t)k + 1, sizeof *ctx->fields, 64);
        memset(ctx->fields + old, 0, (ctx->fields_cap - old) * sizeof *ctx->fields);
    }
    keel_lua_fields *kf = &ctx->fields[k];
    free(kf->names);
    memset(kf, 0, sizeof *kf);
    size_t n = kd->field_count;
    void *block = malloc((n ? n : 1) * (sizeof *kf->names + sizeof *kf->index + sizeof *kf->offsets + 1));
    if (!block) return NULL;
    kf->names = block; /* first: a raise below leaves nothing unowned */
    kf->index = (int *)(kf->names + n);
    kf->offsets = (uint32_t *)(kf->index + n);
    kf->types = (unsigned char *)(kf->offsets + n);
    push_names(L, ctx);
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        kf->offsets[i] = (uint32_t)keel_kind_field_offset(k, (int)i);
        kf->types[i] = (unsigned char)kd->fields[i].type;
        if (shadowed(kd->fields[i].key)) continue;
        lua_pushstring(L, kd->fields[i].key); /* interned: every equal short string is this one */
        kf->names[m] = lua_topointer(L, -1);
        kf->index[m++] = (int)i;
        lua_pushboolean(L, 1);
        lua_rawset(L, -3);
    }
    lua_pop(L, 1);
    kf->n = m;
    kf->stamp = stamp;
    return kf;
}

/* The field of kind k the string key at idx names, found by address; -1 when this cannot tell
 * (not a string, a name the handle answers itself, a long string that is not interned). */
int keel__lua_field_of(lua_State *L, keel_lua_ctx *ctx, keel_kind_id k, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING) return -1;
    const keel_lua_fields *kf = kind_fields(L, ctx, k);
    if (!kf) return -1;
    const void *s = lua_topointer(L, idx);
    for (uint32_t i = 0; i < kf->n; i++)
        if (kf->names[i] == s) return kf->index[i];
    return -1;
}

keel_kind_id keel__lua_kind_of(lua_State *L, keel_lua_ctx *ctx, int idx)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (!s) return KEEL_NO_KIND;
    uint64_t stamp = keel__kind_declarations() + 1;
    size_t slot = ((uintptr_t)s >> 4) % 64;
    if (ctx->kind_memo[slot].key == s && ctx->kind_memo[slot].stamp == stamp) return ctx->kind_memo[slot].k;
    keel_kind_id k = strlen(s) == len ? keel_kind_find(s) : KEEL_NO_KIND;
    if (k && len <= 40) { /* a short string: interned, so its address names it while it is kept */
        idx = lua_absindex(L, idx);
        push_names(L, ctx);
        lua_pushvalue(L, idx);
        lua_pushboolean(L, 1);
        lua_rawset(L, -3);
        lua_pop(L, 1);
        ctx->kind_memo[slot].key = s;
        ctx->kind_memo[slot].k = k;
        ctx->kind_memo[slot].stamp = stamp;
    }
    return k;
}

/* ---- handles ---- */

/* Found live, and its record where it was, since the world's structure last moved. */
static inline bool fast_live(const keel_lua_comp *h)
{
    keel_world *w = h->lw->w;
    return w && h->live && h->live == keel__world_structure(w) + 1;
}

/* h (the block at idx) when it is a handle (its size and the tag only this file's constructors
 * write), else NULL: the one test of a handle's bytes. A light userdata's pointer too: its rawlen
 * is 0. What the caches hold is reachable from a script (getmetatable(c)[2]), and the debug
 * library can dress any userdata in a Component metatable, so neither is trusted without it. */
static inline keel_lua_comp *block_is_handle(lua_State *L, int idx, keel_lua_comp *h)
{
    return h && lua_rawlen(L, idx) == sizeof *h && h->tag == KEEL_LUA_COMP_TAG ? h : NULL;
}

static inline keel_lua_comp *block_at(lua_State *L, int idx)
{
    return block_is_handle(L, idx, lua_touserdata(L, idx));
}

/* The Component at idx, or NULL: its metatable says so and its block is one. */
static keel_lua_comp *comp_test(lua_State *L, int idx)
{
    return block_is_handle(L, idx, keel__lua_testudata(L, idx, &keel__lua_mt_comp));
}

static keel_lua_comp *comp_checkudata(lua_State *L, int idx)
{
    keel_lua_comp *h = comp_test(L, idx);
    if (!h) keel__lua_argerror(L, idx, "%s expected, got %s", keel__lua_mt_comp.name, luaL_typename(L, idx));
    return h;
}

/* Pushes kind k's handle cache of the World at world_idx: [entity index + 1] = the handle of its
 * slot-0 component. The caches hang off the World's Component metatable (key 2), so they live
 * as long as the World and its handles do. */
void keel__lua_comp_cache(lua_State *L, int world_idx, keel_kind_id k)
{
    lua_getiuservalue(L, world_idx, 4);
    if (lua_rawgeti(L, -1, 2) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, 2);
    }
    if (lua_rawgeti(L, -1, (lua_Integer)k) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, (lua_Integer)k);
    }
    lua_replace(L, -3);
    lua_pop(L, 1);
}

/* Drops the cached handles of components that are gone (cached handles are strong references,
 * as the entity cache's: a component's handle, once asked for, lasts while the component does). */
static void comp_sweep(lua_State *L, int world_idx)
{
    keel_lua_world *lw = lua_touserdata(L, world_idx);
    size_t kept = 0;
    lua_getiuservalue(L, world_idx, 4);
    if (lua_rawgeti(L, -1, 2) != LUA_TTABLE) {
        lua_pop(L, 2);
        return;
    }
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -1) != LUA_TTABLE) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            const keel_lua_comp *h = block_at(L, -1);
            lua_pop(L, 1);
            if (h && keel_comp_serial(lw->w, h->c) != h->serial) {
                lua_pushvalue(L, -1);
                lua_pushnil(L);
                lua_rawset(L, -4); /* clearing a present field during lua_next is allowed */
            } else {
                kept++;
            }
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    lw->comp_inserts = 0;
    lw->comp_kept = kept;
}

static keel_lua_comp *new_handle(lua_State *L, int world_idx, keel_lua_world *lw, const keel__comp_info *ci)
{
    keel_lua_comp *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->lw = lw;
    h->c = ci->c;
    h->serial = ci->serial;
    h->live = keel__world_structure(lw->w) + 1;
    h->rec = ci->record;
    h->row = ci->row;
    h->tag = KEEL_LUA_COMP_TAG;
    lua_getiuservalue(L, world_idx, 4); /* the World's Component metatable: it keeps the World alive */
    lua_setmetatable(L, -2);
    return h;
}

void keel__lua_push_comp_fast(lua_State *L, int world_idx, int cache, const keel__comp_info *ci, uint64_t live)
{
    lua_Integer key = (lua_Integer)(uint32_t)ci->c.entity + 1;
    if (ci->c.slot == 0 && lua_rawgeti(L, cache, key) == LUA_TUSERDATA) {
        const keel_lua_world *lw = lua_touserdata(L, world_idx);
        keel_lua_comp *h = block_at(L, -1);
        if (h && h->serial == ci->serial && h->c.entity == ci->c.entity &&
            h->lw == lw) { /* serials are never reused */
            h->live = live;
            h->rec = ci->record;
            h->row = ci->row;
            return;
        }
        lua_pop(L, 1);
    } else if (ci->c.slot == 0) {
        lua_pop(L, 1);
    }
    keel__lua_push_comp_info(L, world_idx, ci->c.slot == 0 ? cache : 0, ci);
}

void keel__lua_push_comp_info(lua_State *L, int world_idx, int cache, const keel__comp_info *ci)
{
    world_idx = lua_absindex(L, world_idx);
    keel_lua_world *lw = lua_touserdata(L, world_idx);
    if (ci->c.slot != 0) { /* slots past 0 are rare: a new handle (== still holds) */
        new_handle(L, world_idx, lw, ci);
        return;
    }
    bool fetched = cache == 0;
    if (fetched) {
        keel__lua_comp_cache(L, world_idx, ci->c.kind);
        cache = lua_gettop(L);
    } else {
        cache = lua_absindex(L, cache);
    }
    lua_Integer key = (lua_Integer)(uint32_t)ci->c.entity + 1;
    if (lua_rawgeti(L, cache, key) == LUA_TUSERDATA) {
        keel_lua_comp *h = block_at(L, -1);
        if (h && h->serial == ci->serial && h->c.entity == ci->c.entity &&
            h->lw == lw) { /* serials are never reused */
            h->live = keel__world_structure(lw->w) + 1;
            h->rec = ci->record;
            h->row = ci->row;
            if (fetched) lua_remove(L, -2);
            return;
        }
    }
    lua_pop(L, 1);
    new_handle(L, world_idx, lw, ci);
    lua_pushvalue(L, -1);
    lua_rawseti(L, cache, key); /* a stale handle there stays stale: its serial is not this one */
    if (++lw->comp_inserts > 4096 && lw->comp_inserts > lw->comp_kept) comp_sweep(L, world_idx);
    if (fetched) lua_remove(L, -2);
}

/* The serial of the unknown entry `key` at c's entity and slot (0: none). */
static uint64_t unknown_serial(keel_world *w, keel_comp c, const char *key)
{
    keel_member m;
    for (size_t i = 0; keel_member_at(w, c.entity, i, &m); i++)
        if (!m.loaded && m.slot == c.slot && strcmp(m.key, key) == 0) return m.serial;
    return 0;
}

void keel__lua_push_comp(lua_State *L, int world_idx, keel_comp c, const char *key)
{
    world_idx = lua_absindex(L, world_idx);
    keel_lua_world *lw = lua_touserdata(L, world_idx);
    keel__comp_info ci;
    if (!key && c.kind && keel__comp_info_get(lw->w, c.entity, c.kind, c.slot, &ci)) {
        new_handle(L, world_idx, lw, &ci);
        return;
    }
    keel_lua_comp *h = lua_newuserdatauv(L, sizeof *h, key ? 1 : 0);
    h->lw = lw;
    h->c = c;
    h->live = 0;
    h->rec = NULL;
    h->row = 0;
    h->tag = KEEL_LUA_COMP_TAG;
    h->serial = key ? unknown_serial(lw->w, c, key) : keel_comp_serial(lw->w, c);
    lua_getiuservalue(L, world_idx, 4); /* the World's Component metatable: it keeps the World alive */
    lua_setmetatable(L, -2);
    if (key) {
        lua_pushstring(L, key);
        lua_setiuservalue(L, -2, 1);
    }
}

/* The key of an unknown component's handle (pushed, then popped; interned in the udata). */
static const char *unknown_key(lua_State *L, int idx)
{
    if (lua_getiuservalue(L, idx, 1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return NULL;
    }
    const char *k = lua_tostring(L, -1);
    lua_pop(L, 1);
    return k;
}

/* Live? An unknown component adopted since the handle was made turns into a loaded one. */
static bool comp_live(lua_State *L, int idx, keel_lua_comp *h, keel_member *um)
{
    keel_world *w = h->lw->w;
    if (!w || keel_world_epoch(w) != h->lw->epoch) return false;
    if (h->c.kind) return keel_comp_serial(w, h->c) == h->serial; /* 0 when gone; serials start at 1 */
    const char *key = unknown_key(L, idx);
    if (!key) return false;
    keel_kind_id k = keel_kind_find(key);
    if (k) {
        keel_comp c = { h->c.entity, k, h->c.slot };
        if (keel_comp_serial(w, c) == h->serial) { /* adopted in place: the same entry */
            h->c = c;
            return true;
        }
    }
    size_t n = keel_member_count(w, h->c.entity);
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (keel_member_at(w, h->c.entity, i, &m) && !m.loaded && m.slot == h->c.slot && m.serial == h->serial &&
            strcmp(m.key, key) == 0) {
            if (um) *um = m;
            return true;
        }
    }
    return false;
}

static keel_lua_comp *check_comp(lua_State *L, int idx, keel_member *um)
{
    keel_lua_comp *h = comp_checkudata(L, idx);
    if (!comp_live(L, idx, h, um)) keel__lua_raisef(L, KEEL_NOT_FOUND, "the component was removed (stale handle)");
    keel__comp_info ci;
    if (h->c.kind && keel__comp_info_get(h->lw->w, h->c.entity, h->c.kind, h->c.slot, &ci)) {
        h->live = keel__world_structure(h->lw->w) + 1; /* found live: trusted until the structure moves */
        h->rec = ci.record;
        h->row = ci.row;
    }
    return h;
}

/* A loaded component, for field access (Unsupported for an unknown one). */
static keel_lua_comp *check_loaded(lua_State *L, int idx)
{
    keel_lua_comp *h = check_comp(L, idx, NULL);
    if (!h->c.kind)
        keel__lua_raisef(L, KEEL_UNSUPPORTED, "%s is not declared: its component cannot be edited", unknown_key(L, idx));
    return h;
}

static int check_field(lua_State *L, keel_lua_comp *h, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a field name expected, got %s", luaL_typename(L, idx));
    int f = keel__lua_has_nul(L, idx) ? -1 : keel_kind_field(h->c.kind, lua_tostring(L, idx));
    if (f < 0)
        keel__lua_raisef(L, KEEL_NOT_FOUND, "%s has no field '%s'%s", keel_kind_describe(h->c.kind)->key,
                        lua_tostring(L, idx), keel__lua_has_nul(L, idx) ? " (the name holds a NUL byte)" : "");
    return f;
}

static void flush(lua_State *L, keel_lua_comp *h)
{
    if (h->lw->ctx->depth == 0) return;
    keel_diags d;
    keel_diags_init(&d);
    keel__lua_check(L, keel__lua_self_flush(L, h->lw->ctx, h->lw->w, h->c, &d), &d, NULL);
}

static void sync(lua_State *L, keel_lua_comp *h)
{
    if (h->lw->ctx->depth > 0) keel__lua_self_sync(L, h->lw->ctx, h->lw->w, h->c);
}

/* One write; pushes the inverse when asked. */
static int set_field(lua_State *L, keel_lua_comp *h, int f, int vidx, bool want_inverse)
{
    const keel_kind_desc *kd = keel_kind_describe(h->c.kind);
    keel_value v;
    char err[256];
    if (!keel__lua_to_value(L, vidx, &kd->fields[f], h->lw->w, &v, err, sizeof err))
        return keel__lua_raisef(L, keel__lua_value_code(err), "%s", err);
    flush(L, h);
    keel_diags d;
    keel_diags_init(&d);
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    KEEL_LUA_ENTER(L, h->lw->ctx);
    bool internal = !want_inverse && keel__lua_is_self(h->lw->ctx, h->lw->w, h->c);
    keel_status s = keel__field_set(h->lw->w, h->c, f, &v, internal, want_inverse ? &inv : NULL, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    sync(L, h);
    if (!want_inverse) return 0;
    keel__lua_push_cmd(L, &inv);
    return 1;
}

static int c__set(lua_State *L)
{
    keel_lua_comp *h = check_loaded(L, 1);
    return set_field(L, h, check_field(L, h, 2), 3, true);
}

/* c:set{...}: all or nothing. Every key and value is checked and converted first into a snapshot
 * (the Lua values anchored in a table: converted strings borrow them); only the snapshot is
 * written, so a validate hook that changes the argument table changes nothing that is written. */
int keel__lua_comp_set(lua_State *L)
{
    keel_lua_comp *h = check_loaded(L, 1);
    if (lua_type(L, 2) != LUA_TTABLE)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "set: a table of fields expected, got %s", luaL_typename(L, 2));
    lua_settop(L, 2);
    const keel_kind_desc *kd = keel_kind_describe(h->c.kind);
    size_t cap = kd->field_count ? kd->field_count : 1; /* keys are distinct field names: n <= field_count */
    keel_value *vals = lua_newuserdatauv(L, cap * (sizeof *vals + sizeof(int)), 0); /* 3, collected */
    int *fields = (int *)(vals + cap);
    lua_createtable(L, (int)cap, 0); /* 4: the anchors */
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        int f = check_field(L, h, -2);
        char err[256];
        if (n == cap || !keel__lua_to_value(L, -1, &kd->fields[f], h->lw->w, &vals[n], err, sizeof err))
            return keel__lua_raisef(L, n == cap ? KEEL_INVALID_ARGUMENT : keel__lua_value_code(err), "%s",
                                    n == cap ? "set: too many fields" : err);
        fields[n++] = f;
        lua_rawseti(L, 4, (lua_Integer)n); /* pops the value, keeps it alive */
    }
    flush(L, h);
    bool internal = keel__lua_is_self(h->lw->ctx, h->lw->w, h->c);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = KEEL_OK;
    KEEL_LUA_ENTER(L, h->lw->ctx);
    if (!kd->validate) {
        s = keel__field_set_many(h->lw->w, h->c, n, fields, vals, internal, &d); /* checks all, then writes */
    } else {
        /* validated as each lands: a refusal undoes the earlier writes */
        keel_cmd *undo = lua_newuserdatauv(L, cap * sizeof *undo, 0); /* collected, never leaked */
        memset(undo, 0, cap * sizeof *undo);
        size_t done = 0;
        while (s == KEEL_OK && done < n) {
            s = keel__field_set(h->lw->w, h->c, fields[done], &vals[done], internal, &undo[done], &d);
            if (s == KEEL_OK) done++;
        }
        while (s != KEEL_OK && done > 0) keel_cmd_apply(h->lw->w, &undo[--done], NULL, NULL);
        for (size_t i = 0; i < n; i++) keel_cmd_free(&undo[i]);
    }
    KEEL_LUA_LEAVE();
    sync(L, h);
    if (s != KEEL_OK) return keel__lua_raise(L, s, &d);
    keel_diags_free(&d);
    return 0;
}

int keel__lua_comp_body(lua_State *L)
{
    keel_member m;
    keel_lua_comp *h = check_comp(L, 1, &m);
    if (!h->c.kind) {
        keel__lua_push_node(L, m.preserved);
        return 1;
    }
    flush(L, h);
    keel__lua_push_body(L, h->lw->w, h->c, keel__lua_push_handle_world(L, 1));
    return 1;
}

int keel__lua_comp_reset(lua_State *L)
{
    keel_lua_comp *h = check_loaded(L, 1);
    int f = lua_isnoneornil(L, 2) ? -1 : check_field(L, h, 2);
    flush(L, h);
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, h->lw->ctx);
    keel_status s = keel_reset(h->lw->w, h->c, f, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, NULL);
    sync(L, h);
    return 0;
}

/* c:unpack(field): the numbers of a vector field (other fields: the value), no table made. */
int keel__lua_comp_unpack(lua_State *L)
{
    keel_lua_comp *h = check_loaded(L, 1);
    int f = check_field(L, h, 2);
    flush(L, h);
    keel_value v;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_get(h->lw->w, h->c, f, &v, &d);
    keel__lua_check(L, s, &d, NULL);
    const keel_field_desc *fd = &keel_kind_describe(h->c.kind)->fields[f];
    int n = keel_type_width(fd->type);
    if (n > 1) {
        for (int i = 0; i < n; i++) lua_pushnumber(L, v.as.v[i]);
        return n;
    }
    keel__lua_push_value(L, fd, &v, h->lw->w, keel__lua_push_handle_world(L, 1));
    return 1;
}

/* c:_enable(on) -> the inverse command (keel.history's h:enable). */
static int c__enable(lua_State *L)
{
    keel_lua_comp *h = check_comp(L, 1, NULL);
    if (lua_type(L, 2) != LUA_TBOOLEAN)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "enabled must be a boolean, got %s", luaL_typename(L, 2));
    if (!h->c.kind) return keel__lua_raisef(L, KEEL_UNSUPPORTED, "an unknown component cannot be edited");
    keel_diags d;
    keel_diags_init(&d);
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    KEEL_LUA_ENTER(L, h->lw->ctx);
    keel_status s = keel_comp_set_enabled(h->lw->w, h->c, lua_toboolean(L, 2), &inv, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    keel__lua_push_cmd(L, &inv);
    return 1;
}

static const luaL_Reg comp_methods[] = {
    { "set", keel__lua_comp_set }, { "body", keel__lua_comp_body }, { "reset", keel__lua_comp_reset },
    { "unpack", keel__lua_comp_unpack }, { "_set", c__set }, { "_enable", c__enable }, { NULL, NULL }
};

/* A field of h, read or written straight at its record: h is live (checked in full when its
 * world's structure moved since it was last found) and not the self of a running callback (whose
 * self table may hold newer values: the general path flushes it). False: take the general path. */
static bool direct(lua_State *L, keel_lua_comp *h, int f)
{
    keel_lua_ctx *ctx = h->lw->ctx;
    if (f < 0 || (ctx->depth > 0 && h->lw->w && keel__lua_is_self(ctx, h->lw->w, h->c))) return false;
    if (!fast_live(h)) check_comp(L, 1, NULL); /* raises when stale; stamps it live */
    return h->rec != NULL;
}

/* Argument 1 when it is a handle of the World whose metamethod runs (that World's keel_lua_world
 * is upvalue `up`, a light userdata), else NULL: the field accesses' hot path. A handle is told
 * by its block's size and tag, which only this file's constructors write: a script cannot forge
 * userdata bytes, and what the debug library can hand the metamethod (a table, a light or
 * another full userdata, a handle stripped of its metatable, another World's handle) fails a
 * test here and takes the general path's full check. h->lw is then the World whose metamethod
 * runs, alive while it runs (its metatable holds it). */
static inline keel_lua_comp *own_handle(lua_State *L, int up)
{
    keel_lua_comp *h = block_at(L, 1);
    return h && h->lw == lua_touserdata(L, lua_upvalueindex(up)) ? h : NULL;
}

/* The field of h's kind the key at 2 names (by its object's address, as keel__lua_field_of), when
 * h is live and its record at hand (h->rec): -1 when the general path must decide. *kf: the
 * kind's table. A kind never built has n = 0 (kind 0 too); a stale table's names are still
 * anchored, so the addresses are compared before its stamp is. lua_topointer needs no type test
 * first: names[] are live string objects, and no other live object shares an address; a number,
 * boolean or nil gives NULL, and a light userdata or C function holds a C address no keel code
 * takes from a string object. */
static inline int direct_field(lua_State *L, keel_lua_comp *h, const keel_lua_fields **kfp)
{
    const keel_lua_world *lw = h->lw;
    keel_lua_ctx *ctx = lw->ctx;
    keel_kind_id k = h->c.kind;
    if (k >= ctx->fields_cap || !lw->w) return -1;
    const keel_lua_fields *kf = &ctx->fields[k];
    const void *s = lua_topointer(L, 2);
    uint32_t i = 0, n = kf->n;
    const void **names = kf->names;
    while (i < n && names[i] != s) i++;
    if (i == n || kf->stamp != keel__kind_declarations() + 1 || h->live != keel__world_structure(lw->w) + 1 ||
        (ctx->depth > 0 && keel__lua_is_self(ctx, lw->w, h->c)))
        return -1;
    *kfp = kf;
    return kf->index[i];
}

/* Argument 1 as a Component: one comparison when it is a handle of the World whose metatable
 * is upvalue `up` (the World's own __index/__newindex), the full check otherwise. */
static keel_lua_comp *to_comp(lua_State *L, int up)
{
    /* a full userdata only: a table or light userdata can be given any metatable */
    if (lua_type(L, 1) == LUA_TUSERDATA && lua_getmetatable(L, 1)) { /* the upvalue keeps that table alive */
        bool mine = lua_rawequal(L, -1, lua_upvalueindex(up)); /* the metamethod's own table */
        lua_pop(L, 1);
        keel_lua_comp *h = mine ? block_at(L, 1) : NULL;
        if (h) return h;
    }
    return comp_checkudata(L, 1);
}

/* The general path of c.key (the hot path is comp_index's own: kept apart, so that one stays small). */
static KEEL_LUA_NOINLINE int comp_index_all(lua_State *L)
{
    lua_settop(L, 2);
    keel_lua_comp *h = to_comp(L, 2);
    if (h->c.kind) {
        int f = keel__lua_field_of(L, h->lw->ctx, h->c.kind, 2);
        if (direct(L, h, f)) {
            const keel_lua_fields *kf = &h->lw->ctx->fields[h->c.kind];
            const char *p = (const char *)h->rec + kf->offsets[f];
            if (kf->types[f] == KEEL_T_FLOAT) {
                double x;
                memcpy(&x, p, sizeof x);
                lua_pushnumber(L, x);
            } else {
                const keel_field_desc *fd = &keel_kind_describe(h->c.kind)->fields[f];
                int wi = fd->type == KEEL_T_ENTITY ? keel__lua_push_handle_world(L, 1) : 0;
                keel__lua_push_stored(L, fd, p, h->lw->w, wi);
            }
            return 1;
        }
    }
    const char *k = lua_tostring(L, 2);
    if (!k) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a field name expected, got %s", luaL_typename(L, 2));
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1; /* a method */
    lua_pop(L, 1);
    keel_member m;
    if (strcmp(k, "kind") == 0) {
        check_comp(L, 1, &m);
        lua_pushstring(L, h->c.kind ? keel_kind_describe(h->c.kind)->key : unknown_key(L, 1));
        return 1;
    }
    check_comp(L, 1, &m);
    keel_world *w = h->lw->w;
    if (strcmp(k, "slot") == 0) lua_pushinteger(L, (lua_Integer)h->c.slot);
    else if (strcmp(k, "loaded") == 0) lua_pushboolean(L, h->c.kind != KEEL_NO_KIND);
    else if (strcmp(k, "entity") == 0) {
        keel__lua_push_entity(L, keel__lua_push_handle_world(L, 1), h->c.entity);
    } else if (strcmp(k, "version") == 0) {
        if (h->c.kind) flush(L, h);
        lua_pushinteger(L, (lua_Integer)(h->c.kind ? keel_comp_counter(w, h->c) : 0));
    } else if (strcmp(k, "enabled") == 0) {
        lua_pushboolean(L, h->c.kind ? keel_comp_enabled(w, h->c) : m.enabled);
    } else if (strcmp(k, "faulted") == 0) {
        lua_pushboolean(L, h->c.kind && keel_comp_faulted(w, h->c));
    } else {
        check_loaded(L, 1);
        int f = check_field(L, h, 2);
        flush(L, h);
        keel_value v;
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = keel_get(w, h->c, f, &v, &d);
        keel__lua_check(L, s, &d, NULL);
        keel__lua_push_value(L, &keel_kind_describe(h->c.kind)->fields[f], &v, w, keel__lua_push_handle_world(L, 1));
    }
    return 1;
}

static int comp_index(lua_State *L)
{
    keel_lua_comp *h = own_handle(L, 3);
    const keel_lua_fields *kf;
    int f = h ? direct_field(L, h, &kf) : -1;
    if (f >= 0 && kf->types[f] == KEEL_T_FLOAT) { /* a live handle's float field, read at its record */
        double x;
        memcpy(&x, (const char *)h->rec + kf->offsets[f], sizeof x);
        lua_pushnumber(L, x);
        return 1;
    }
    return comp_index_all(L);
}

/* The general path of c.key = v. */
static KEEL_LUA_NOINLINE int comp_newindex_all(lua_State *L)
{
    lua_settop(L, 3);
    keel_lua_comp *h = to_comp(L, 1);
    if (h->c.kind) {
        int f = keel__lua_field_of(L, h->lw->ctx, h->c.kind, 2);
        if (direct(L, h, f)) {
            const keel_lua_fields *kf = &h->lw->ctx->fields[h->c.kind];
            keel_value v;
            char err[256];
            bool ok;
            if (kf->types[f] == KEEL_T_FLOAT && lua_type(L, 3) == LUA_TNUMBER) {
                v.type = KEEL_T_FLOAT;
                v.nil = false;
                v.as.f = (double)lua_tonumber(L, 3);
                ok = true;
            } else {
                const keel_field_desc *fd = &keel_kind_describe(h->c.kind)->fields[f];
                ok = fd->type != KEEL_T_STRING && keel__lua_to_value(L, 3, fd, h->lw->w, &v, err, sizeof err);
            }
            keel__lua_entries++;
            if (ok && keel__field_set_plain(h->lw->w, h->c, h->rec, h->row, f, &v)) return 0;
            return set_field(L, h, f, 3, false); /* decides, and raises what it refuses */
        }
    }
    h = check_comp(L, 1, NULL);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "enabled") == 0) {
        if (lua_type(L, 3) != LUA_TBOOLEAN)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "enabled must be a boolean, got %s", luaL_typename(L, 3));
        if (!h->c.kind) return keel__lua_raisef(L, KEEL_UNSUPPORTED, "an unknown component cannot be edited");
        keel_diags d;
        keel_diags_init(&d);
        KEEL_LUA_ENTER(L, h->lw->ctx);
        keel_status s = keel_comp_set_enabled(h->lw->w, h->c, lua_toboolean(L, 3), NULL, &d);
        KEEL_LUA_LEAVE();
        keel__lua_check(L, s, &d, NULL);
        return 0;
    }
    if (k && strcmp(k, "faulted") == 0) {
        if (lua_type(L, 3) != LUA_TBOOLEAN || lua_toboolean(L, 3))
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "c.faulted can only be set to false (to run it again)");
        keel_diags d;
        keel_diags_init(&d);
        keel__lua_check(L, keel_comp_clear_fault(h->lw->w, h->c, &d), &d, NULL);
        return 0;
    }
    if (k && (!strcmp(k, "kind") || !strcmp(k, "slot") || !strcmp(k, "entity") || !strcmp(k, "loaded") || !strcmp(k, "version")))
        return keel__lua_raisef(L, KEEL_UNSUPPORTED, "c.%s is read-only", k);
    check_loaded(L, 1);
    return set_field(L, h, check_field(L, h, 2), 3, false);
}

static int comp_newindex(lua_State *L)
{
    keel_lua_comp *h = own_handle(L, 2);
    const keel_lua_fields *kf;
    int f = h ? direct_field(L, h, &kf) : -1;
    /* a number into a live handle's float field */
    if (f >= 0 && kf->types[f] == KEEL_T_FLOAT && lua_type(L, 3) == LUA_TNUMBER) {
        keel__lua_entries++;
        if (keel__field_set_float(h->lw->w, h->c, h->rec, h->row, f, (double)lua_tonumber(L, 3))) return 0;
    }
    return comp_newindex_all(L);
}

static int comp_eq(lua_State *L)
{
    keel_lua_comp *a = comp_test(L, 1), *b = comp_test(L, 2);
    bool eq = a && b && a->lw->w == b->lw->w && a->lw->epoch == b->lw->epoch && a->c.entity == b->c.entity &&
              a->c.slot == b->c.slot && a->serial == b->serial;
    if (eq && a->c.kind != b->c.kind) eq = false;
    if (eq && !a->c.kind) {
        const char *ka = unknown_key(L, 1), *kb = unknown_key(L, 2);
        eq = ka && kb && strcmp(ka, kb) == 0;
    }
    lua_pushboolean(L, eq);
    return 1;
}

static int comp_tostring(lua_State *L)
{
    keel_lua_comp *h = comp_checkudata(L, 1);
    if (!comp_live(L, 1, h, NULL)) {
        lua_pushliteral(L, "keel.Component (removed)");
        return 1;
    }
    const char *key = h->c.kind ? keel_kind_describe(h->c.kind)->key : unknown_key(L, 1);
    const char *n = keel_entity_name(h->lw->w, h->c.entity);
    lua_pushfstring(L, "keel.Component %s[%d] of \"%s\"%s", key, (int)h->c.slot, n ? n : "",
                    h->c.kind ? "" : " (not loaded)");
    return 1;
}

void keel__lua_open_component(lua_State *L)
{
    static const luaL_Reg mt[] = {
        { "__newindex", comp_newindex }, { "__eq", comp_eq }, { "__tostring", comp_tostring }, { NULL, NULL }
    };
    keel__lua_newmt(L, &keel__lua_mt_comp);
    luaL_setfuncs(L, mt, 0);
    luaL_newlib(L, comp_methods);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, comp_methods); /* for keel__lua_comp_mt_own */
    lua_pushcclosure(L, comp_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}

void keel__lua_comp_mt_own(lua_State *L, int mt)
{
    mt = lua_absindex(L, mt);
    lua_rawgeti(L, mt, 1); /* the World: its keel_lua_world is what own_handle compares */
    void *lw = lua_touserdata(L, -1);
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, comp_methods);
    lua_pushvalue(L, mt);
    lua_pushlightuserdata(L, lw);
    lua_pushcclosure(L, comp_index, 3);
    lua_setfield(L, mt, "__index");
    lua_pushvalue(L, mt);
    lua_pushlightuserdata(L, lw);
    lua_pushcclosure(L, comp_newindex, 2);
    lua_setfield(L, mt, "__newindex");
}
